"""The bench's makemore-style Transformer step (suites.transformer_*, impls.transformer_step):
on every backend, the losses of its first steps are PyTorch's (same weights, same batches,
AdamW), and the first one is the float64 NumPy forward's."""

import numpy as np
import pytest

from torchic.bench import impls, suites

torch = pytest.importorskip("torch")

CFG = dict(suites.transformer_settings(True)[0], examples=256)


def _losses(step, n=4):
    return [step() for _ in range(n)]


def test_transformer_step_matches_pytorch(backend):
    import torchic
    data = suites.transformer_data(CFG)
    got = _losses(impls.transformer_step(
        torchic, [torchic.tensor(w, requires_grad=True) for w in data["weights"]], CFG,
        data["X"], data["Y"], np.random.default_rng(data["seed"]), torchic.tensor))
    want = _losses(impls.transformer_step(
        torch, [torch.tensor(w, requires_grad=True) for w in data["weights"]], CFG,
        data["X"].astype(np.int64), data["Y"].astype(np.int64),
        np.random.default_rng(data["seed"]), torch.from_numpy))
    np.testing.assert_allclose(got, want, rtol=1e-4)
    assert got[0] == pytest.approx(suites.transformer_first_loss(CFG), rel=1e-4)
    assert len(set(got)) == len(got)   # the steps train: each batch's loss differs


def test_transformer_rows_in_the_train_suite():
    quick = [c for c in suites.train_suite({"quick": True, "gpu": False})
             if c.name == "transformer"]
    full = [c for c in suites.train_suite({"quick": False, "gpu": False})
            if c.name == "transformer"]
    assert [c.label for c in quick] == ["L2 C16 T8 b8"]
    assert "L4 C64 T16 b32" in [c.label for c in full]     # makemore's own Transformer size
    assert all(c.metric == "ms/step" and c.expected is not None for c in quick + full)
