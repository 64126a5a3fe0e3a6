"""The makemore demo: data helpers, a few-step smoke run of the CLI, and PyTorch parity."""

import numpy as np
import pytest

import torchic
from torchic import demo


def test_census_names_come_from_the_names_package():
    words = demo.census_names()
    assert len(words) > 5000
    assert len(set(words)) == len(words)
    assert all(w == w.lower() and w.isalpha() for w in words)
    assert "james" in words and "mary" in words


def test_vocab_dataset_and_split():
    words = ["emma", "ava", "bo"]
    stoi, itos = demo.build_vocab(words)
    assert itos[0] == "." and itos[1:] == sorted(set("emmaavabo"))
    X, Y = demo.build_dataset(["emma"], stoi, context=3)
    e, m, a = stoi["e"], stoi["m"], stoi["a"]
    assert X.dtype == np.int32 and Y.dtype == np.int32
    assert X.tolist() == [[0, 0, 0], [0, 0, e], [0, e, m], [e, m, m], [m, m, a]]
    assert Y.tolist() == [e, m, m, a, 0]
    many = [f"w{i}" for i in range(100)]
    tr, va, te = demo.split_words(many, seed=1)
    assert (len(tr), len(va), len(te)) == (80, 10, 10)
    assert sorted(tr + va + te) == sorted(many)
    assert demo.split_words(many, seed=1) == (tr, va, te)


def test_load_words_from_file(tmp_path):
    f = tmp_path / "items.txt"
    f.write_text("anna\n\n  bob \ncarl\n")
    assert demo.load_words(str(f)) == ["anna", "bob", "carl"]
    (tmp_path / "empty.txt").write_text("\n\n")
    with pytest.raises(ValueError, match="no items"):
        demo.load_words(str(tmp_path / "empty.txt"))


def test_cli_smoke_train_checkpoint_plot_and_sample_only(backend, tmp_path, capsys):
    data = tmp_path / "names.txt"
    data.write_text("\n".join(demo.census_names()[:300]))
    out = tmp_path / "out"
    rc = demo.main(["--data", str(data), "--steps", "30", "--backend", backend, "--threads", "2",
                    "--hidden", "32", "--samples", "5", "--out", str(out), "--no-progress"])
    assert rc == 0
    text = capsys.readouterr().out
    assert "final loss: train" in text and "val" in text and "test" in text
    assert "5 samples:" in text
    ckpt = out / "makemore.safetensors"
    assert ckpt.exists()
    assert (out / "makemore-loss.png").exists()
    meta = torchic.checkpoint.metadata(ckpt)
    assert meta["steps"] == "30" and float(meta["val_loss"]) > 0

    rc = demo.main(["--sample-only", str(ckpt), "--backend", backend, "--samples", "7",
                    "--seed", "3"])
    assert rc == 0
    text = capsys.readouterr().out
    assert "loaded" in text and "context 3" in text
    samples = text.split("7 samples:")[1].split()
    assert 1 <= len(samples) <= 7 and all(s.isalpha() for s in samples)


def test_cli_rejects_bad_arguments(backend):
    with pytest.raises(SystemExit):
        demo.main(["--steps", "0"])
    with pytest.raises(SystemExit):
        demo.main(["--no-such-flag"])


def test_training_lowers_the_loss_and_sampling_is_seeded(backend):
    words = demo.census_names()[:500]
    stoi, itos = demo.build_vocab(words)
    X, Y = demo.build_dataset(words, stoi)
    torchic.manual_seed(0)
    model = demo.CharMLP(len(itos), hidden=64)
    before = demo.evaluate(model, X, Y)
    losses = demo.train(model, X, Y, steps=300, progress=False)
    assert losses.shape == (300,) and np.all(np.isfinite(losses))
    after = demo.evaluate(model, X, Y)
    assert after < before - 0.5
    a = demo.sample(model, itos, 6, generator=torchic.Generator(5))
    b = demo.sample(model, itos, 6, generator=torchic.Generator(5))
    assert a == b and len(a) == 6


def test_save_and_load_model(backend, tmp_path):
    words = ["anna", "bob"]
    stoi, itos = demo.build_vocab(words)
    model = demo.CharMLP(len(itos), context=4, emb=3, hidden=7)
    path = tmp_path / "m.safetensors"
    demo.save_model(model, itos, path)
    loaded, itos2 = demo.load_model(path)
    assert itos2 == itos and loaded.context == 4
    x = torchic.tensor([[0, 1, 2, 3]])
    np.testing.assert_array_equal(loaded(x).detach().numpy(), model(x).detach().numpy())
    torchic.save({"other": torchic.ones(1)}, tmp_path / "other.safetensors")
    with pytest.raises(ValueError, match="not a makemore checkpoint"):
        demo.load_model(tmp_path / "other.safetensors")


def test_first_50_steps_match_pytorch(backend):
    """Same initial weights, same minibatches: torchic's losses within 1e-4 relative."""
    torch = pytest.importorskip("torch")
    words = demo.census_names()
    stoi, itos = demo.build_vocab(words)
    X, Y = demo.build_dataset(words, stoi)
    torchic.manual_seed(1234)
    model = demo.CharMLP(len(itos))
    init = {k: v.numpy().copy() for k, v in model.state_dict().items()}
    steps, batch, lr, seed = 50, 32, 0.1, 7

    ours = demo.train(model, X, Y, steps, batch=batch, lr=lr, lr_final=0.01, seed=seed,
                      progress=False)

    # the same model and loop, written for PyTorch
    C = torch.tensor(init["emb.weight"], requires_grad=True)
    W1 = torch.tensor(init["hidden.weight"], requires_grad=True)
    b1 = torch.tensor(init["hidden.bias"], requires_grad=True)
    W2 = torch.tensor(init["out.weight"], requires_grad=True)
    b2 = torch.tensor(init["out.bias"], requires_grad=True)
    params = [C, W1, b1, W2, b2]
    rng = np.random.default_rng(seed)
    theirs = []
    for step in range(steps):
        ix = rng.integers(0, len(X), batch)
        xb, yb = torch.tensor(X[ix]).long(), torch.tensor(Y[ix]).long()
        h = torch.tanh(C[xb].view(batch, -1) @ W1.T + b1)
        loss = torch.nn.functional.cross_entropy(h @ W2.T + b2, yb)
        for p in params:
            p.grad = None
        loss.backward()
        step_lr = lr if step < steps // 2 else 0.01
        with torch.no_grad():
            for p in params:
                p -= step_lr * p.grad
        theirs.append(loss.item())
    np.testing.assert_allclose(ours, theirs, rtol=1e-4)
    final = model.state_dict()
    np.testing.assert_allclose(final["hidden.weight"].numpy(), W1.detach().numpy(),
                               rtol=1e-3, atol=1e-5)
