"""The bench's GPT (torchic/bench/gpt.py, issue 17) against PyTorch: the same model source
run by both libraries from the same NumPy weights and batches, AdamW with nanoGPT's
parameter groups and learning-rate schedule, gradients clipped at norm 1, dropout 0.2.

Dropout masks: PyTorch's CPU mask is not a fixed function of the seed (Intel CPUs with MKL
draw it from an MCG31 stream seeded by one mt19937 draw, other CPUs compare mt19937 doubles
with 1 - p) and torchic draws float32 uniforms, so the loss-match test swaps every
nn.Dropout of both models for one that multiplies by masks from a shared NumPy stream
(gpt.matched_losses).
torchic's own dropout is covered by the compiled-vs-eager test below (same seed, same masks).
"""

import numpy as np
import pytest

from torchic.bench import gpt, suites

torch = pytest.importorskip("torch")

# small enough for lavapipe: 2 layers, 2 heads, embedding 32, context 16, batch 4; the
# learning rate warms up over 10 steps (not 100), so the 50 steps see the warm-up, the
# decay and the changing rate in a compiled step
CFG = dict(gpt.SMALL, n_embd=32, block=16, batch=4, warmup_iters=10)
STEPS = 50


@pytest.fixture(scope="module")
def text():
    return gpt.encode(gpt.names_text())


def test_gpt_losses_match_pytorch(backend, text):
    import torchic
    data, vocab = text
    got, got_eval = gpt.matched_losses(torchic, CFG, data, vocab, STEPS)
    want, want_eval = gpt.matched_losses(torch, CFG, data, vocab, STEPS)
    np.testing.assert_allclose(got, want, rtol=1e-3)
    np.testing.assert_allclose([got_eval["train"], got_eval["val"]],
                               [want_eval["train"], want_eval["val"]], rtol=1e-3)
    assert want[-1] < want[0] - 0.3     # it trains: the check is not on a flat curve


def test_gpt_model_is_the_same_module_tree(text):
    import torchic
    _, vocab = text
    a, b = gpt.build(torchic, CFG, vocab), gpt.build(torch, CFG, vocab)
    shapes = lambda m: [(n, tuple(p.shape)) for n, p in m.named_parameters()]  # noqa: E731
    assert shapes(a) == shapes(b)
    assert a.wte.weight is a.lm_head.weight      # tied, as in nanoGPT


def test_gpt_compiled_step_is_the_eager_step(backend, text):
    """torchic.compile of the training step (what gpu_bench times) with torchic's own
    dropout: the same seed gives the eager losses (the replays run at the warm-up's new
    learning rate each step, as the eager steps do)."""
    import torchic
    data, vocab = text
    runs = []
    for compile in (None, torchic.compile):
        torchic.manual_seed(3)
        step = gpt.training_step(torchic, CFG, data, vocab, compile=compile)
        runs.append([step() for _ in range(5)])
    np.testing.assert_allclose(runs[1], runs[0], rtol=1e-6)
    assert len(set(runs[0])) == 5


def test_learning_rate_schedule_is_nanogpts():
    cfg = dict(gpt.FULL)
    assert gpt.learning_rate(cfg, 0) == pytest.approx(1e-3 / 101)
    assert gpt.learning_rate(cfg, 99) == pytest.approx(1e-3 * 100 / 101)
    assert gpt.learning_rate(cfg, 100) == pytest.approx(1e-3)          # the top of the cosine
    assert gpt.learning_rate(cfg, 2550) == pytest.approx((1e-3 + 1e-4) / 2)   # half-way down
    assert gpt.learning_rate(cfg, 5000) == pytest.approx(1e-4)
    assert gpt.learning_rate(cfg, 9000) == 1e-4


def test_gpt_rows_in_the_bench():
    quick = [c for c in suites.train_suite({"quick": True, "gpu": False}) if c.name == "gpt"]
    full = [c for c in suites.train_suite({"quick": False, "gpu": True}) if c.name == "gpt"]
    assert [c.label for c in quick] == [gpt.label(gpt.SMALL)]
    assert gpt.label(gpt.FULL) in [c.label for c in full]
    compiled = [c for c in suites.compile_suite({"quick": False, "gpu": True}) if c.name == "gpt"]
    assert gpt.label(gpt.FULL) in [c.label for c in compiled]
