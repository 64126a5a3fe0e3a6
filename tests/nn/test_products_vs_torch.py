"""Issue 41's products, creation and legacy spellings against the installed PyTorch.

The OpInfo walk (tests/torch_opinfo, passing.txt) checks every sample of the entries; this
file checks what it does not: larger einsum plans, integer products past the chunk size,
the errors PyTorch raises, the legacy spellings (torch.Size, LongTensor(...), Variable,
memory_format=, set_default_device) and the random ops' numbers from one seed.
"""

import numpy as np
import pytest

import torchic
import torchic.nn.functional as TF
from torchic.autograd import Variable
from torchic.functions import matmul as matmul_module

torch = pytest.importorskip("torch")


def _pair(shape, seed, grad=False, dtype=np.float32):
    a = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    return torch.tensor(a, requires_grad=grad), torchic.tensor(a, requires_grad=grad)


def _same(got, want, atol=1e-5, rtol=1e-5):
    np.testing.assert_allclose(got.detach().numpy().astype(np.float64),
                               want.detach().numpy().astype(np.float64), atol=atol, rtol=rtol)


@pytest.mark.parametrize("eq, shapes", [
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("ij,jk,kl->il", [(3, 4), (4, 5), (5, 2)]),
    ("ii->i", [(4, 4)]),
    ("bhqd,bhkd->bhqk", [(2, 3, 4, 5), (2, 3, 6, 5)]),
    ("...ij,...jk", [(2, 1, 3, 4), (5, 4, 2)]),
    ("i,i->", [(7,), (7,)]),
    ("abc,cd,ade->be", [(2, 3, 4), (4, 5), (2, 5, 6)]),
])
def test_einsum_values_and_gradients(backend, eq, shapes):
    pairs = [_pair(s, k, grad=True) for k, s in enumerate(shapes)]
    yt = torch.einsum(eq, *[p[0] for p in pairs])
    yc = torchic.einsum(eq, *[p[1] for p in pairs])
    _same(yc, yt, atol=1e-4)
    w = np.random.default_rng(9).standard_normal(tuple(yt.shape)).astype(np.float32)
    (yt * torch.tensor(w)).sum().backward()
    (yc * torchic.tensor(w)).sum().backward()
    for t, c in pairs:
        _same(c.grad, t.grad, atol=1e-4)


def test_products_values_and_gradients(backend):
    (a, ca), (b, cb), (v, cv) = (_pair((3, 4), 1, True), _pair((4, 5), 2, True),
                                 _pair((4,), 3, True))
    (i, ci) = _pair((3, 5), 4, True)
    cases = [
        (torch.mm(a, b), torchic.mm(ca, cb)),
        (torch.mv(a, v), torchic.mv(ca, cv)),
        (torch.addmm(i, a, b, beta=0.5, alpha=2.0), torchic.addmm(ci, ca, cb, beta=0.5,
                                                                    alpha=2.0)),
        (torch.tensordot(a, b, dims=([1], [0])), torchic.tensordot(ca, cb, dims=([1], [0]))),
        (torch.kron(a, v), torchic.kron(ca, cv)),
        (torch.cdist(a, b.T), torchic.cdist(ca, cb.T)),
        (torch.outer(v, v), ca.new_ones(1) * torchic.outer(cv, cv)),
        (torch.linalg.multi_dot([v, b]), torchic.linalg.multi_dot([cv, cb])),
        (torch.linalg.vecdot(a, a), torchic.linalg.vecdot(ca, ca)),
    ]
    for yt, yc in cases:
        _same(yc, yt, atol=1e-4)
        yt.sum().backward()
        yc.sum().backward()
    for t, c in ((a, ca), (b, cb), (v, cv), (i, ci)):
        _same(c.grad, t.grad, atol=1e-4)


def test_bilinear_against_torch(backend):
    (x1, c1), (x2, c2), (w, cw), (bias, cb) = (
        _pair((2, 3, 4), 1, True), _pair((2, 3, 5), 2, True), _pair((6, 4, 5), 3, True),
        _pair((6,), 4, True))
    yt = torch.nn.functional.bilinear(x1, x2, w, bias)
    yc = TF.bilinear(c1, c2, cw, cb)
    _same(yc, yt, atol=1e-4)
    yt.sum().backward()
    yc.sum().backward()
    for t, c in ((x1, c1), (x2, c2), (w, cw), (bias, cb)):
        _same(c.grad, t.grad, atol=1e-4)


def test_integer_matmul_is_exact_across_chunks(backend, monkeypatch):
    monkeypatch.setattr(matmul_module, "_INT_CHUNK", 7)    # several K chunks
    rng = np.random.default_rng(0)
    a = rng.integers(-1000, 1000, (2, 3, 11))
    b = rng.integers(-1000, 1000, (11, 4))
    got = (torchic.tensor(a) @ torchic.tensor(b)).numpy()
    np.testing.assert_array_equal(got, a @ b)
    assert (torchic.tensor(a, dtype=torchic.int32) @ torchic.tensor(b, dtype=torchic.int32)
            ).dtype == torchic.int32


def test_product_errors_as_torch(backend):
    with pytest.raises(NotImplementedError):
        torchic.ones(2, 2, dtype=torchic.bool) @ torchic.ones(2, 2, dtype=torchic.bool)
    with pytest.raises(RuntimeError, match="cannot be multiplied"):
        torchic.ones(2, 3) @ torchic.ones(2, 3)
    with pytest.raises(RuntimeError, match="same dtype"):
        torchic.ones(2, 3) @ torchic.ones(3, 2, dtype=torchic.int64)
    with pytest.raises(RuntimeError, match="matrix"):
        torchic.mm(torchic.ones(3), torchic.ones(3, 2))
    with pytest.raises(RuntimeError, match="beta must not be a floating point"):
        torchic.addr(torchic.ones(2, 2, dtype=torchic.int64), torchic.ones(2, dtype=torchic.int64),
                     torchic.ones(2, dtype=torchic.int64), beta=0.5)


def test_random_ops_match_torch_from_one_seed(backend):
    shape = (3, 5)
    for fill in (lambda t: t.cauchy_(1.0, 2.0), lambda t: t.log_normal_(0.5, 0.25),
                 lambda t: t.geometric_(0.3)):
        torch.manual_seed(7)
        want = fill(torch.empty(shape))
        torchic.manual_seed(7)
        got = fill(torchic.empty(*shape))
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
    for args, kwargs in (((3, 10), {}), ((10,), {}), ((), {"to": 7})):
        torch.manual_seed(2)
        want = torch.empty(shape).random_(*args, **kwargs)
        torchic.manual_seed(2)
        got = torchic.empty(*shape).random_(*args, **kwargs)
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    p = np.random.default_rng(1).random(shape).astype(np.float32)
    torch.manual_seed(3)
    want = torch.bernoulli(torch.tensor(p))
    torchic.manual_seed(3)
    np.testing.assert_array_equal(torchic.bernoulli(torchic.tensor(p)).numpy(), want.numpy())
    torch.manual_seed(5)
    want = torch.normal(torch.tensor(p), torch.tensor(p + 1))
    torchic.manual_seed(5)
    got = torchic.normal(torchic.tensor(p), torchic.tensor(p + 1))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, atol=1e-6)


def test_integer_ranges_as_torch(backend):
    for args in ((0, 10, 3.5), (1, 5.5), (10, 0, -3.5), (-0.9, 2.1, 2.0)):
        for td, cd in ((torch.int64, torchic.int64), (torch.int32, torchic.int32)):
            np.testing.assert_array_equal(torchic.arange(*args, dtype=cd).numpy(),
                                          torch.arange(*args, dtype=td).numpy())
    for args in ((4.3, -3, 50), (0, 10, 7), (-2.5, 3.7, 4), (0, 10, 1)):
        np.testing.assert_array_equal(torchic.linspace(*args, dtype=torchic.int64).numpy(),
                                      torch.linspace(*args, dtype=torch.int64).numpy())
    np.testing.assert_allclose(torchic.logspace(-1, 2, 7).numpy(),
                               torch.logspace(-1, 2, 7).numpy(), rtol=1e-6)


def test_legacy_spellings(backend):
    x = torchic.ones(2, 3)
    assert isinstance(x.shape, torchic.Size) and isinstance(x.size(), torchic.Size)
    assert x.shape == (2, 3) and x.shape.numel() == 6 and x.shape[1:] == torchic.Size([3])
    assert repr(x.shape) == "torchic.Size([2, 3])"
    assert torchic.LongTensor([1, 2]).dtype == torchic.int64
    assert torchic.FloatTensor(2, 3).shape == (2, 3)
    if backend != "webgpu":     # (webgpu refuses float64, naming it)
        assert torchic.DoubleTensor([1.5]).dtype == torchic.float64
    assert torchic.IntTensor(4).dtype == torchic.int32
    assert torchic.BoolTensor([True, False]).dtype == torchic.bool
    assert torchic.ByteTensor([1, 2]).dtype == torchic.uint8
    assert isinstance(torchic.LongTensor([1]), torchic.LongTensor)
    assert x.type() == "torch.FloatTensor" and x.type("torch.LongTensor").dtype == torchic.int64
    v = Variable(x, requires_grad=True)
    assert v.requires_grad and not x.requires_grad and isinstance(x, Variable)
    torchic.set_default_device("cpu")
    assert str(torchic.get_default_device()) == "cpu"
    with pytest.raises(RuntimeError):
        torchic.set_default_device("cuda")
    assert torchic.is_tensor(x) and torchic.is_floating_point(x)
    assert not torchic.is_floating_point(torchic.ones(2, dtype=torchic.int64))
    assert torchic.numel(x) == 6 == x.numel()
    assert torchic.matmul(input=x, other=x.T).shape == (2, 2)
    for y in (x.clone(memory_format=torchic.preserve_format),
              x.T.contiguous(memory_format=torchic.contiguous_format).T,
              x.float(memory_format=torchic.preserve_format),
              x.to(torchic.float32, memory_format=torchic.preserve_format),
              torchic.zeros_like(x, memory_format=torchic.preserve_format) + 1):
        np.testing.assert_array_equal(y.numpy(), x.numpy())
    with pytest.raises(TypeError):
        x.clone(memory_format="channels_last")
    assert x.new_zeros(3).shape == (3,) and x.new_full((2,), 7).tolist() == [7.0, 7.0]
    assert x.new_tensor([1, 2]).dtype == torchic.float32
    assert torchic.scalar_tensor(3).dtype == torchic.float32
    assert torchic.equal(x, torchic.ones(2, 3)) and not torchic.equal(x, torchic.ones(3, 2))
