"""PyTorch's `out=` keyword (api/out.py) on every backend, against torch: values written into
out and out returned, the resize (and its warning), dtype refusals, the autograd refusal,
tuple outs, an out aliasing an input, views of out seeing the write; Tensor.resize_."""

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import torchic  # noqa: E402

X = np.array([[1.5, -2.0, 3.25], [0.5, 4.0, -1.0]], np.float32)
Y = np.array([[2.0, 1.0, -0.5], [3.0, -1.5, 2.5]], np.float32)


def _pair(a, dtype="float32"):
    return torchic.tensor(a, dtype=getattr(torchic, dtype)), torch.tensor(a, dtype=getattr(
        torch, dtype))


@pytest.mark.parametrize("call", [
    lambda m, x, y, out: m.add(x, y, alpha=2, out=out),
    lambda m, x, y, out: m.mul(x, y, out=out),
    lambda m, x, y, out: m.sin(x, out=out),
    lambda m, x, y, out: m.atan2(x, y, out=out),
    lambda m, x, y, out: m.sum(x, 1, out=out),
    lambda m, x, y, out: m.cumsum(x, 0, out=out),
    lambda m, x, y, out: m.mm(x, y.T, out=out),
    lambda m, x, y, out: m.cat([x, y], out=out),
    lambda m, x, y, out: m.where(x > 0, x, y, out=out),
    lambda m, x, y, out: m.clamp(x, -1.0, 2.0, out=out),
    lambda m, x, y, out: m.linalg.vector_norm(x, dim=1, out=out),
    lambda m, x, y, out: m.nn.functional.normalize(x, out=out),
    lambda m, x, y, out: m.zeros(2, 3, out=out),
    lambda m, x, y, out: m.arange(5, out=out),
], ids=["add", "mul", "sin", "atan2", "sum", "cumsum", "mm", "cat", "where", "clamp",
        "vector_norm", "normalize", "zeros", "arange"])
def test_out_values_and_identity(backend, call):
    x, tx = _pair(X)
    y, ty = _pair(Y)
    ref = call(torch, tx, ty, torch.empty(0))
    out = torchic.empty(0)
    got = call(torchic, x, y, out)
    assert got is out
    assert tuple(out.shape) == tuple(ref.shape) and out.dtype == torchic.float32
    np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-5, atol=1e-5)


def test_resize_warns_when_out_had_elements(backend):
    x, tx = _pair(X)
    out, tout = torchic.ones(4), torch.ones(4)
    with pytest.warns(UserWarning, match="An output with one or more elements was resized"):
        torch.add(tx, 1, out=tout)
    with pytest.warns(UserWarning, match="An output with one or more elements was resized "
                                         r"since it had shape \[4\]"):
        torchic.add(x, 1, out=out)
    assert out.shape == (2, 3)
    np.testing.assert_array_equal(out.numpy(), tout.numpy())
    with warnings.catch_warnings():          # an empty out, or one of the right shape: silent
        warnings.simplefilter("error")
        torchic.add(x, 1, out=torchic.empty(0))
        torchic.add(x, 1, out=out)


def test_out_same_shape_is_written_in_place(backend):
    base = torchic.zeros(2, 4)
    view = base[:, 1:4]                 # out: a strided view; base sees the write
    tbase = torch.zeros(2, 4)
    x, tx = _pair(X)
    assert torchic.mul(x, 2, out=view) is view
    torch.mul(tx, 2, out=tbase[:, 1:4])
    np.testing.assert_array_equal(base.numpy(), tbase.numpy())


def test_out_aliasing_an_input(backend):
    a, ta = _pair(X)
    b, tb = _pair(Y)
    assert torchic.add(a, b, out=a) is a
    torch.add(ta, tb, out=ta)
    np.testing.assert_array_equal(a.numpy(), ta.numpy())
    torchic.mul(a, a, out=a)
    torch.mul(ta, ta, out=ta)
    np.testing.assert_allclose(a.numpy(), ta.numpy(), rtol=1e-6)


def _raises_like(call, *exc_msg):
    """torchic raises what torch raises (class and message) for call(module)."""
    with pytest.raises(Exception) as ref:
        call(torch)
    with pytest.raises(type(ref.value)) as got:
        call(torchic)
    for m in exc_msg:
        assert m in str(ref.value) and m in str(got.value), (str(ref.value), str(got.value))


def test_dtype_refusal(backend):
    int_dtype = "int64"

    def sin_into_int(m):
        x = m.tensor(X)
        return m.sin(x, out=m.empty(0, dtype=getattr(m, int_dtype)))
    _raises_like(sin_into_int, "result type Float can't be cast to the desired output type")

    def mm_into_int(m):
        x = m.tensor(X)
        return m.mm(x, x.T, out=m.empty(0, dtype=getattr(m, int_dtype)))
    _raises_like(mm_into_int, "Expected out tensor to have dtype float, but got")


def test_castable_out_dtype_is_written(backend):
    x = torchic.tensor([1, 2, 3])
    out = torchic.empty(0)                       # int result into a float out: allowed
    torchic.add(x, x, out=out)
    assert out.dtype == torchic.float32 and out.tolist() == [2.0, 4.0, 6.0]
    b = torchic.empty(0, dtype=torchic.int32)    # bool into an int out
    torchic.gt(x, 1, out=b)
    assert b.tolist() == [0, 1, 1]


def test_autograd_refusal(backend):
    msg = ("functions with out=... arguments don't support automatic differentiation, but one "
           "of the arguments requires grad.")
    _raises_like(lambda m: m.sin(m.ones(3, requires_grad=True), out=m.empty(0)), "sin(): " + msg)
    _raises_like(lambda m: m.add(m.ones(3), 1, out=m.ones(3, requires_grad=True)), msg)
    x = torchic.ones(3, requires_grad=True)
    with torchic.no_grad():                      # no grad mode: allowed
        out = torchic.sin(x, out=torchic.empty(0))
    assert not out.requires_grad
    np.testing.assert_allclose(out.numpy(), np.sin(np.ones(3)), rtol=1e-6)


def test_tuple_outs(backend):
    x, tx = _pair(X)
    for name, args in (("max", (1,)), ("sort", (1,)), ("topk", (2,)), ("kthvalue", (2, 1)),
                       ("cummax", (1,)), ("aminmax", ()), ("frexp", ())):
        ref = getattr(torch, name)(tx, *args)
        touts = tuple(torch.empty(0, dtype=r.dtype) for r in ref)
        ref = getattr(torch, name)(tx, *args, out=touts)
        outs = tuple(torchic.empty(0, dtype=getattr(torchic, str(r.dtype)[6:])) for r in ref)
        got = getattr(torchic, name)(x, *args, out=outs)
        assert all(g is o for g, o in zip(got, outs)), name
        for g, r in zip(got, ref):
            np.testing.assert_allclose(g.numpy(), r.numpy(), rtol=1e-6, err_msg=name)
    got = torchic.max(x, 1, out=(torchic.empty(0), torchic.empty(0, dtype=torchic.int64)))
    assert got.values.shape == (2,) and got.indices.tolist() == [2, 1]


def test_out_of_the_wrong_type(backend):
    x = torchic.tensor(X)
    with pytest.raises(TypeError, match="argument 'out' must be Tensor, not int"):
        torchic.add(x, 1, out=3)
    with pytest.raises(TypeError, match="must be tuple of Tensors, not Tensor"):
        torchic.max(x, 1, out=torchic.empty(0))
    with pytest.raises(TypeError, match="expected tuple of 2 elements but got 1"):
        torchic.max(x, 1, out=(torchic.empty(0),))
    with pytest.raises(TypeError):
        torch.add(torch.tensor(X), 1, out="x")
    with pytest.raises(TypeError, match="argument 'out' must be Tensor, not str"):
        torchic.add(x, 1, out="x")


def test_resize_(backend):
    t, tt = _pair(np.arange(6, dtype=np.float32))
    assert t.resize_(2, 3) is t
    tt.resize_(2, 3)
    np.testing.assert_array_equal(t.numpy(), tt.numpy())
    t.resize_(4)
    tt.resize_(4)
    np.testing.assert_array_equal(t.numpy(), tt.numpy())
    t.resize_((3, 3))                        # grows: the old elements come first
    assert t.shape == (3, 3) and t.is_contiguous()
    np.testing.assert_array_equal(t.numpy().ravel()[:6], np.arange(6))
    t.resize_as_(torchic.zeros(2))
    assert t.tolist() == [0.0, 1.0]
    with pytest.raises(RuntimeError, match="cannot resize variables that require grad"):
        torchic.ones(2, requires_grad=True).resize_(3)
    with pytest.raises(RuntimeError, match="negative dimension"):
        t.resize_(-1)


def test_partial_overlap_with_an_input_is_refused(backend):
    def cat_into_input(m):
        x = m.ones(3, 2)
        with warnings.catch_warnings():     # (torch resizes x, warning, before it refuses)
            warnings.simplefilter("ignore")
            return m.cat([x, x], out=x)
    _raises_like(cat_into_input, "refer to a single memory location")

    def shifted(m):
        x = m.arange(6.0)
        return m.add(x[1:5], 1, out=x[0:4])
    _raises_like(shifted, "refer to a single memory location")
    x, tx = torchic.arange(6.0), torch.arange(6.0)     # disjoint parts of one storage: fine
    torchic.add(x[0:3], x[3:6], out=x[3:6])
    torch.add(tx[0:3], tx[3:6], out=tx[3:6])
    assert x.tolist() == tx.tolist()


def test_creation_out_dtype(backend):
    out = torchic.empty(0, dtype=torchic.int64)
    assert torchic.arange(4, out=out) is out and out.dtype == torchic.int64
    assert out.tolist() == [0, 1, 2, 3]
    _raises_like(lambda m: m.zeros(2, dtype=m.float32, out=m.empty(0, dtype=m.int64)),
                 "dtype Float does not match dtype of out parameter (Long)")


def test_an_out_resized_inside_a_scope_outlives_it(backend):
    out = torchic.zeros(1)
    with torchic.track_tensors():
        torchic.add(torchic.ones(4000), 1, out=torchic.empty(0))
        with pytest.warns(UserWarning):
            torchic.add(torchic.ones(4000), 1, out=out)   # grows out's storage in the scope
    assert out.tolist() == [2.0] * 4000
