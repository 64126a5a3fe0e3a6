"""A makemore MLP script written for PyTorch runs with `import torchic as torch`.

SCRIPT below is the character-level MLP from Karpathy's makemore lectures, as
people write it for PyTorch. It runs under PyTorch itself (checked when torch is
installed) and under torchic with only the two import lines changed.
"""

import subprocess
import sys

import numpy as np
import pytest

import torchic
from torchic import demo

TORCHIC_IMPORTS = "import torchic as torch\nimport torchic.nn.functional as F\n"
TORCH_IMPORTS = "import torch\nimport torch.nn.functional as F\n"

SCRIPT = '''
chars = sorted(list(set(''.join(words))))
stoi = {s: i + 1 for i, s in enumerate(chars)}
stoi['.'] = 0
itos = {i: s for s, i in stoi.items()}
vocab_size = len(itos)
block_size = 3

def build_dataset(words):
    X, Y = [], []
    for w in words:
        context = [0] * block_size
        for ch in w + '.':
            ix = stoi[ch]
            X.append(context)
            Y.append(ix)
            context = context[1:] + [ix]
    X = torch.tensor(X)
    Y = torch.tensor(Y)
    return X, Y

n1 = int(0.9 * len(words))
Xtr, Ytr = build_dataset(words[:n1])
Xdev, Ydev = build_dataset(words[n1:])
assert Xtr.shape[1] == block_size and Xtr.dim() == 2 and Ytr.size(0) == Xtr.size(0)
assert Xtr.numel() == Xtr.shape[0] * 3

g = torch.Generator().manual_seed(2147483647)
C = torch.randn((vocab_size, 10), generator=g)
W1 = torch.randn((30, 200), generator=g) * 0.2
b1 = torch.randn(200, generator=g) * 0.01
W2 = torch.randn((200, vocab_size), generator=g) * 0.01
b2 = torch.randn(vocab_size, generator=g) * 0
parameters = [C, W1, b1, W2, b2]
out['n_params'] = sum(p.nelement() for p in parameters)
for p in parameters:
    p.requires_grad = True

lossi = []
for i in range(steps):
    ix = torch.randint(0, Xtr.shape[0], (32,), generator=g)
    Xb, Yb = Xtr[ix], Ytr[ix]
    emb = C[Xb]
    h = torch.tanh(emb.view(-1, 30) @ W1 + b1)
    logits = h @ W2 + b2
    loss = F.cross_entropy(logits, Yb)
    for p in parameters:
        p.grad = None
    loss.backward()
    lr = 0.1 if i < steps // 2 else 0.01
    for p in parameters:
        p.data += -lr * p.grad
    lossi.append(loss.log10().item())
out['lossi'] = lossi

@torch.no_grad()
def split_loss(X, Y):
    emb = C[X]
    h = torch.tanh(emb.view(emb.shape[0], -1) @ W1 + b1)
    logits = h @ W2 + b2
    return F.cross_entropy(logits, Y).item()

out['train'] = split_loss(Xtr, Ytr)
out['dev'] = split_loss(Xdev, Ydev)

# the counting / one-hot spellings of the earlier lectures
with torch.no_grad():
    xenc = F.one_hot(Xtr[:, 2], num_classes=vocab_size).float()
    assert xenc.shape == (Xtr.shape[0], vocab_size) and xenc.dtype == torch.float32
    Wb = torch.randn((vocab_size, vocab_size), generator=g)
    counts = (xenc @ Wb).exp()
    probs = counts / counts.sum(1, keepdims=True)
    out['row_sum'] = probs[0].sum().item()
    out['targets'] = Ytr[:5].tolist()
    out['long'] = str(Xtr.long().dtype)
    out['float'] = str(Xtr.float().dtype)

g = torch.Generator().manual_seed(2147483647 + 10)
samples = []
for _ in range(10):
    name = []
    context = [0] * block_size
    while True:
        emb = C[torch.tensor([context])]
        h = torch.tanh(emb.view(1, -1) @ W1 + b1)
        logits = h @ W2 + b2
        probs = F.softmax(logits, dim=1)
        ix = torch.multinomial(probs, num_samples=1, replacement=True, generator=g).item()
        context = context[1:] + [ix]
        if ix == 0:
            break
        name.append(itos[ix])
    samples.append(''.join(name))
out['samples'] = samples
'''



def run_script(imports, steps=200, script=SCRIPT):
    words = demo.census_names()[:2000]
    np.random.default_rng(0).shuffle(words)
    out = {}
    exec(compile(imports + script, "makemore_pytorch_script", "exec"),
         {"words": words, "steps": steps, "out": out})
    return out


def check_results(out):
    assert out["n_params"] == 27 * 10 + 30 * 200 + 200 + 200 * 27 + 27
    assert len(out["lossi"]) == 200
    assert np.mean(out["lossi"][-20:]) < np.mean(out["lossi"][:5]) - 0.05
    assert 1.5 < out["train"] < 3.0 and 1.5 < out["dev"] < 3.2
    assert out["row_sum"] == pytest.approx(1.0, abs=1e-5)
    assert all(isinstance(t, int) for t in out["targets"])
    assert len(out["samples"]) == 10 and all(s.isalpha() or s == "" for s in out["samples"])


def test_the_script_is_valid_pytorch():
    pytest.importorskip("torch")
    check_results(run_script(TORCH_IMPORTS))


def test_pytorch_script_runs_unchanged_with_torchic(backend):
    out = run_script(TORCHIC_IMPORTS)
    check_results(out)
    assert out["long"] == "torchic.int64" and out["float"] == "torchic.float32"


def test_pytorch_script_with_host_side_batch_gather(backend):
    """The same script with the minibatch gathered on the host (as a DataLoader would)."""
    script = SCRIPT.replace("Xb, Yb = Xtr[ix], Ytr[ix]",
                            "Xb = torch.tensor(Xtr.numpy()[ix.numpy()])\n"
                            "    Yb = torch.tensor(Ytr.numpy()[ix.numpy()])")
    assert script != SCRIPT
    out = run_script(TORCHIC_IMPORTS, script=script)
    check_results(out)
    assert out["long"] == "torchic.int64" and out["float"] == "torchic.float32"


def test_int_tensor_row_gather(backend):
    X = torchic.tensor([[1, 2], [3, 4], [5, 6]])
    rows = X[torchic.tensor([2, 0])]
    assert rows.dtype == torchic.int64
    assert rows.tolist() == [[5, 6], [1, 2]]


def test_nn_and_optim_reachable_as_attributes():
    code = ("import torchic as torch\n"
            "m = torch.nn.Linear(2, 3)\n"
            "opt = torch.optim.SGD(m.parameters(), lr=0.1)\n"
            "print(type(m).__name__, type(opt).__name__)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["Linear", "SGD"]


def test_common_tensor_spellings(backend):
    import torchic.nn.functional as F
    x = torchic.randn(4, 6, generator=torchic.Generator().manual_seed(1))
    assert x.shape == (4, 6) and x.size() == (4, 6) and x.size(1) == 6
    assert x.dim() == 2 and x.numel() == 24 and x.nelement() == 24
    assert x.view(-1, 3).shape == (8, 3) and x.view(-1).shape == (24,)
    assert isinstance(x.sum().item(), float) and isinstance(x.tolist(), list)
    idx = torchic.randint(0, 27, (32,), generator=torchic.Generator().manual_seed(2))
    assert idx.dtype == torchic.long and idx.shape == (32,)
    assert idx.float().dtype == torchic.float32 and idx.float().long().dtype == torchic.int64
    w = torchic.randn(3, requires_grad=True)
    (w * w).sum().backward()
    assert w.grad is not None
    w.data += -0.1 * w.grad
    w.grad = None
    assert w.is_leaf and w.requires_grad
    with torchic.no_grad():
        y = w * 2
    assert not y.requires_grad
    assert F.one_hot(torchic.tensor([1, 0]), num_classes=3).float().tolist() == [[0, 1, 0],
                                                                               [1, 0, 0]]
    p = torchic.tensor([0.0, 1.0, 0.0])
    g = torchic.Generator().manual_seed(0)
    assert torchic.multinomial(p, num_samples=1, replacement=True, generator=g).item() == 1
    assert torchic.tanh(torchic.tensor([0.0])).item() == 0.0
    assert torchic.exp(torchic.tensor([0.0])).item() == 1.0
    assert torchic.log(torchic.tensor([1.0])).item() == 0.0
    assert torchic.softmax(torchic.tensor([[1.0, 1.0]]), dim=1).tolist() == [[0.5, 0.5]]
    assert F.cross_entropy(torchic.tensor([[0.0, 0.0]]), torchic.tensor([1])).item() == \
        pytest.approx(np.log(2))
