"""PyTorch's dtype semantics on every backend, against torch: float ops on integers and
bools give the default float dtype (float64 after set_default_dtype), neg / abs / relu keep
integers; comparisons, isnan / isinf / isfinite and logical ops give bool tensors; bool and
uint8 tensors index as masks, integer tensors as indices, a float tensor is refused; sum of
bool is int64, mean of ints is refused, argmax is int64; where takes a bool condition.
webgpu holds no float64: the float64 checks are its TypeError there."""

import numpy as np
import pytest

import torchic

torch = pytest.importorskip("torch")

INTS = [[3, -1, 0], [2, 5, -4]]


def _same(ours, theirs):
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    np.testing.assert_allclose(ours.numpy().astype(np.float64),
                               theirs.numpy().astype(np.float64), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("dtype", ["int64", "int32", "int16", "uint8", "bool"])
@pytest.mark.parametrize("op", ["exp", "sigmoid", "tanh", "sin", "sqrt", "neg", "abs", "relu"])
def test_unary_ops_of_integers_and_bools(backend, dtype, op):
    values = np.abs(INTS) if dtype == "uint8" else INTS
    x, t = torchic.tensor(values, dtype=getattr(torchic, dtype)), \
        torch.tensor(values, dtype=getattr(torch, dtype))
    try:
        want = getattr(t, op)()
    except (RuntimeError, NotImplementedError, TypeError) as exc:
        with pytest.raises(type(exc)):
            getattr(x, op)()
        return
    _same(getattr(x, op)(), want)


def test_the_default_float_dtype_follows_set_default_dtype(backend):
    x = torchic.tensor(INTS)
    assert (x.exp().dtype, (x / 2).dtype, (x * 0.5).dtype) == (torchic.float32,) * 3
    if backend == "webgpu":
        with pytest.raises(TypeError, match="webgpu"):
            torchic.tensor([1.0]).double()
        return
    torchic.set_default_dtype(torchic.float64)
    try:
        assert (x.exp().dtype, (x / 2).dtype, (x * 0.5).dtype) == (torchic.float64,) * 3
        assert torchic.tensor([0.1]).dtype == torchic.float64
    finally:
        torchic.set_default_dtype(torchic.float32)
    third = torchic.Tensor([1.0]).double() / 3
    assert third.dtype == torchic.float64 and third.item() == 1 / 3      # 0.3333333333333333


@pytest.mark.parametrize("dtype", ["float32", "int64", "int32", "uint8", "bool"])
def test_bool_results(backend, dtype):
    values = [[1.0, 0.0, 2.0], [0.0, 3.0, 1.0]] if dtype != "bool" else [[1, 0, 1], [0, 1, 1]]
    x = torchic.tensor(values, dtype=getattr(torchic, dtype))
    t = torch.tensor(values, dtype=getattr(torch, dtype))
    for fn in (lambda m, a: a == 1, lambda m, a: a > 0, lambda m, a: m.isnan(a),
               lambda m, a: m.isinf(a), lambda m, a: m.isfinite(a),
               lambda m, a: m.logical_not(a), lambda m, a: m.logical_and(a, a[0]),
               lambda m, a: m.logical_or(a, a[1]), lambda m, a: m.logical_xor(a, a[0]),
               lambda m, a: (a > 0) & (a < 3), lambda m, a: ~(a > 0) | (a == 2),
               lambda m, a: (a > 0) ^ True, lambda m, a: (a != 0).all(1),
               lambda m, a: (a != 0).any()):
        ours, theirs = fn(torchic, x), fn(torch, t)
        assert ours.dtype == torchic.bool
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    if dtype == "bool":                                 # torch's isin refuses bools
        with pytest.raises(RuntimeError, match="isin"):
            torchic.isin(x, x)
    else:
        np.testing.assert_array_equal(
            torchic.isin(x, torchic.tensor([1, 3], dtype=x.dtype)).numpy(),
            torch.isin(t, torch.tensor([1, 3], dtype=t.dtype)).numpy())


@pytest.mark.filterwarnings("ignore:indexing with dtype torch.uint8")   # (torch's deprecation)
def test_indexing_by_masks_and_integer_tensors(backend):
    x = torchic.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    t = torch.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    for key in ([True, False, True], [2, 0]):
        for dtype in (("bool", "uint8") if isinstance(key[0], bool) else ("int64", "int32")):
            k_ours = torchic.tensor(key, dtype=getattr(torchic, dtype))
            k_theirs = torch.tensor(key, dtype=getattr(torch, dtype))
            np.testing.assert_array_equal(x[k_ours].numpy(), t[k_theirs].numpy())
    np.testing.assert_array_equal(x[x > 2].numpy(), t[t > 2].numpy())
    with pytest.raises(IndexError, match="long, int, byte or bool"):
        x[torchic.tensor([0.0, 1.0, 1.0])]          # the silent mask, refused
    with pytest.raises(IndexError):
        t[torch.tensor([0.0, 1.0, 1.0])]


def test_reductions_dtypes(backend):
    b = torchic.tensor([[True, False, True], [True, True, False]])
    assert b.sum().dtype == torchic.int64 and b.sum().item() == 4
    assert b.sum(1).tolist() == [2, 2] and b.cumsum(1).dtype == torchic.int64
    assert b.prod(1).tolist() == [0, 0] and b.prod().dtype == torchic.int64
    f = torchic.tensor([[1.5, -2.0, 4.0], [0.5, 3.0, 2.0]], requires_grad=True)
    tf = torch.tensor([[1.5, -2.0, 4.0], [0.5, 3.0, 2.0]], requires_grad=True)
    f.prod(1).sum().backward()
    tf.prod(1).sum().backward()
    _same(f.prod(0, keepdim=True).detach(), tf.prod(0, keepdim=True).detach())
    _same(f.grad, tf.grad)
    i = torchic.tensor([[1, 2], [3, 4]], dtype=torchic.int32)
    assert i.sum().dtype == torchic.int64 and i.sum(dtype=torchic.int32).dtype == torchic.int32
    assert i.sum(0, dtype=torchic.float32).tolist() == [4.0, 6.0]
    with pytest.raises(RuntimeError, match="mean"):
        i.mean()
    with pytest.raises(RuntimeError, match="mean"):
        torch.tensor([1, 2]).mean()
    assert i.mean(dtype=torchic.float32).item() == 2.5
    assert i.argmax().dtype == torchic.int64 and i.float().argmax(1).tolist() == [1, 1]
    assert torchic.tensor([1.0, 5.0]).max(0).indices.dtype == torchic.int64
    assert torchic.tensor([2.0, 1.0]).sort().indices.dtype == torchic.int64


def test_where_and_masked_fill_take_bool_masks(backend):
    x = torchic.tensor([1.0, -2.0, 3.0])
    assert torchic.where(x > 0, x, 0).tolist() == [1.0, 0.0, 3.0]
    assert torchic.where(x > 0, 1, 0).dtype == torchic.int64           # two Python ints
    assert torchic.where(x > 0, x, torchic.tensor([0, 0, 0])).dtype == torchic.float32
    with pytest.raises(RuntimeError, match="boolean"):
        torchic.where(torchic.tensor([1.0, 0.0, 1.0]), x, 0.0)
    with pytest.raises(RuntimeError, match="boolean"):
        torch.where(torch.tensor([1.0, 0.0, 1.0]), torch.tensor([1.0, -2.0, 3.0]), 0.0)
    with pytest.raises(RuntimeError, match="boolean masks"):
        x.masked_fill(torchic.tensor([1.0, 0.0, 0.0]), 9.0)
    assert x.masked_fill(x < 0, 9.0).tolist() == [1.0, 9.0, 3.0]
