"""Every op on every backend against NumPy float64, values and gradients.

The cases are torchic.testing.CASES (one row per op, shared with the other suites):
each runs on every backend and layout; unary cases also on UNARY_SHAPES, binary ones
on BROADCAST_SHAPES and with Python scalars, matmul on MATMUL_SHAPES. Adding an op
means adding its row there; adding a backend means registering it (the `backend`
fixture parametrizes over the registry). The tests below the table tests check
behaviour a row cannot express (dtypes, aliasing, storage sharing, errors).
"""

import numpy as np
import pytest

import torchic
from helpers import check_op
from torchic import dispatcher
from torchic.testing import (BROADCAST_SHAPES, CASES, MATMUL_SHAPES, UNARY_SHAPES, family,
                             np_log_softmax, np_softmax)

CASE_LAYOUTS = [(name, layout) for name, c in CASES.items() for layout in c.layouts]


@pytest.mark.parametrize("name,layout", CASE_LAYOUTS, ids=[f"{n}-{lay}" for n, lay in CASE_LAYOUTS])
def test_case(backend, name, layout):
    CASES[name].check(layout=layout, return_output=True)


CASE_DTYPES = [(name, code) for name, c in CASES.items() for code in c.dtypes]


@pytest.mark.parametrize("name,code", CASE_DTYPES, ids=[f"{n}-{c}" for n, c in CASE_DTYPES])
def test_case_dtype(backend, name, code):
    """Each case in every dtype its row lists, against NumPy in that dtype (Case.dtypes);
    a dtype the backend declares it does not hold is its TypeError, naming the backend."""
    if code not in dispatcher.runtime().backend.dtypes:
        with pytest.raises(TypeError, match=repr(backend)):
            CASES[name].check_dtype(code)
        return
    CASES[name].check_dtype(code)
    if code in ("f64", "i64", "b8"):
        CASES[name].check_dtype(code, layout="strided")


@pytest.mark.parametrize("shape", UNARY_SHAPES, ids=str)
@pytest.mark.parametrize("name", [c.name for c in family("unary")])
def test_unary_shapes(backend, name, shape):
    CASES[name].check(shapes=[shape])


@pytest.mark.parametrize("shapes", BROADCAST_SHAPES, ids=str)
@pytest.mark.parametrize("name", [c.name for c in family("binary")])
def test_binary_broadcast(backend, name, shapes):
    CASES[name].check(shapes=list(shapes))


@pytest.mark.parametrize("name", [c.name for c in family("binary")])
def test_binary_python_scalars(backend, name):
    c = CASES[name]
    rng = np.random.default_rng(0)
    a, b = c.draw(rng, [(2, 3), (2, 3)])
    check_op(lambda x: c.fn(x, 1.5), lambda x: c.ref(x, 1.5), arrays=[a], **c.tol)
    check_op(lambda x: c.fn(1.5, x), lambda x: c.ref(1.5, x), arrays=[b], **c.tol)


@pytest.mark.parametrize("name", [c.name for c in family("compare")])
def test_compare_result_is_bool_without_grad(backend, name):
    out = CASES[name].check(return_output=True)
    assert out.dtype == torchic.bool and not out.requires_grad


def test_compare_int_tensors(backend):
    a = torchic.tensor([1, 2, 3])
    b = torchic.tensor([3, 2, 1])
    assert (a == b).tolist() == [False, True, False]
    assert (a < 3).tolist() == [True, True, False]


def test_reductions_zero_size(backend):
    check_op(lambda a: a.sum(), lambda a: a.sum(), [(0, 3)])
    check_op(lambda a: a.sum(0), lambda a: a.sum(0), [(0, 3)])
    check_op(lambda a: a.sum(1), lambda a: a.sum(1), [(0, 3)])
    check_op(lambda a: a.max(1).values, lambda a: a.max(1), [(0, 3)], grad=False)


def test_argmax(backend):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((4, 6)).astype(np.float32)
    t = torchic.tensor(a)
    assert t.argmax().item() == int(np.argmax(a))
    assert t.argmax(1).tolist() == np.argmax(a, 1).tolist()
    assert t.argmax(dim=0, keepdim=True).shape == (1, 6)
    assert t.T.argmax(axis=-1).tolist() == np.argmax(a.T, -1).tolist()
    assert t.argmin(1).tolist() == np.argmin(a, 1).tolist()
    values, indices = t.max(dim=1)
    np.testing.assert_allclose(values.numpy(), a.max(1))
    assert indices.tolist() == np.argmax(a, 1).tolist()
    assert indices.dtype == torchic.int64 and t.argmax().dtype == torchic.int64


def test_softmax_is_stable(backend):
    big = torchic.tensor([[1000.0, 1001.0, 1002.0], [-1000.0, -1000.0, -1000.0]])
    np.testing.assert_allclose(big.softmax(-1).numpy(), np_softmax(big.numpy().astype(np.float64)),
                               rtol=1e-5)
    assert np.all(np.isfinite(big.log_softmax(-1).numpy()))


def test_cross_entropy_reductions(backend):
    target = np.array([1, 0, 2])
    t = torchic.tensor(target)
    ref_rows = lambda x: -np_log_softmax(x)[np.arange(3), target]  # noqa: E731
    check_op(lambda x: torchic.cross_entropy(x, t, reduction="none"), ref_rows, [(3, 4)])
    check_op(lambda x: torchic.cross_entropy(x, t, reduction="sum"),
             lambda x: ref_rows(x).sum(), [(3, 4)])
    big = torchic.tensor([[1000.0, -1000.0], [0.0, 0.0]])
    loss = torchic.cross_entropy(big, torchic.tensor([1, 0])).item()
    assert np.isclose(loss, (2000 + np.log(2)) / 2, rtol=1e-5)


@pytest.mark.parametrize("shapes", MATMUL_SHAPES, ids=str)
def test_matmul(backend, shapes):
    CASES["matmul"].check(shapes=list(shapes))
    check_op(lambda a, b: a @ b, np.matmul, list(shapes), atol=1e-4)   # the operator spelling


def test_matmul_of_transposed_views(backend):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((5, 3)).astype(np.float32)
    b = rng.standard_normal((4, 5)).astype(np.float32)
    ta, tb = torchic.tensor(a), torchic.tensor(b)
    np.testing.assert_allclose((ta.T @ tb.T).numpy(), a.T @ b.T, atol=1e-5)
    np.testing.assert_allclose((tb @ ta).numpy(), b @ a, atol=1e-5)


def test_views_share_storage(backend):
    a = torchic.arange(12).float().reshape(3, 4)
    t = a.T
    assert t._storage is a._storage and not t.is_contiguous()
    assert a.view(4, 3)._storage is a._storage
    assert a.reshape(2, 6)._storage is a._storage
    assert a[1:, ::2]._storage is a._storage
    assert t.reshape(12)._storage is not a._storage   # impossible as a view: copied
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        t.view(12)


def test_gather_rows_of_int_tensors(backend):
    data = torchic.tensor([[1, 2, 3], [4, 5, 6], [7, 8, 2**30]])
    picked = data[torchic.tensor([2, 0, 2])]
    assert picked.dtype == torchic.int64
    assert picked.tolist() == [[7, 8, 2**30], [1, 2, 3], [7, 8, 2**30]]


def test_inplace_aliasing_and_overlap(backend):
    a = torchic.arange(6).float().reshape(2, 3)
    a += a[0]                          # other shares a's storage: computed via a temporary
    assert a.tolist() == [[0, 2, 4], [3, 5, 7]]
    b = torchic.ones(4)
    b.mul_(torchic.full((4,), 3.0)).add_(b.clone())   # exact aliasing fast path
    assert b.tolist() == [6.0] * 4
    t = torchic.arange(4).float().reshape(2, 2).T     # non-contiguous target
    t.add_(10)
    assert t.tolist() == [[10, 12], [11, 13]]


def test_setitem_and_set(backend):
    a = torchic.zeros(3, 4)
    a[1] = 5.0
    a[:, 2] = torchic.tensor([1.0, 2.0, 3.0])
    a[0, ::2] = torchic.tensor(7.0)
    a.set((2, slice(0, 1)), -1.0)
    expect = np.zeros((3, 4))
    expect[1] = 5
    expect[:, 2] = [1, 2, 3]
    expect[0, ::2] = 7
    expect[2, 0:1] = -1
    np.testing.assert_array_equal(a.numpy(), expect)


def test_inplace_ops(backend):
    a = torchic.tensor([[1.0, 2.0], [3.0, 4.0]])
    a.add_(1).mul_(torchic.tensor([2.0, 3.0])).sub_(1).div_(2)
    np.testing.assert_allclose(a.numpy(), (((np.array([[1, 2], [3, 4.0]]) + 1) * [2, 3]) - 1) / 2)
    a += 1
    a -= torchic.ones(2)
    a *= 2
    a /= 4
    v = a.T                           # in-place through a view writes the parent
    v.zero_()
    assert a.tolist() == [[0, 0], [0, 0]]
    a.fill_(3)
    b = torchic.arange(4).float().reshape(2, 2)
    a.copy_(b.T)
    assert a.tolist() == [[0, 2], [1, 3]]
    a[0].copy_(torchic.tensor(9.0))
    assert a.tolist() == [[9, 9], [1, 3]]


def test_casts_and_creation(backend):
    x = torchic.tensor([[1.7, -2.2]])
    assert x.long().tolist() == [[1, -2]] and x.long().dtype == torchic.int64
    assert x.long().float().tolist() == [[1.0, -2.0]]
    assert torchic.zeros(2, 3).tolist() == [[0.0] * 3] * 2
    assert torchic.ones([2]).tolist() == [1.0, 1.0]
    assert torchic.full((2,), 3.5).tolist() == [3.5, 3.5]
    assert torchic.arange(1, 7, 2).tolist() == [1, 3, 5]
    assert torchic.arange(0.0, 1.0, 0.25).tolist() == [0, 0.25, 0.5, 0.75]
    assert torchic.zeros_like(x).shape == (1, 2)
    assert torchic.ones_like(x).tolist() == [[1, 1]]
    assert torchic.empty(3, 0).shape == (3, 0)
    assert torchic.tensor(3).item() == 3 and torchic.tensor(2.5).item() == 2.5
    assert torchic.Tensor.from_data([1, 2, 3, 4], [2, 2]).tolist() == [[1, 2], [3, 4]]
    assert torchic.tensor(np.arange(6, dtype=np.float32).reshape(2, 3)).dtype == torchic.float32


def test_random_same_on_every_backend(backend):
    # PyTorch's numbers for seed 42 (torch 2.13 CPU; tests/unit/test_torch_rng.py checks
    # many more against torch itself), identical on every backend
    torchic.manual_seed(42)
    a = torchic.randn(3, 4).numpy()
    b = torchic.rand(5).numpy()
    c = torchic.randint(0, 10, (6,)).numpy()
    f32 = lambda *v: np.array(v, dtype=np.float32)
    np.testing.assert_array_equal(a, f32(0.33669037, 0.1288094, 0.23446237, 0.23033303,
                                         -1.1228564, -0.18632829, 2.2082014, -0.63799703,
                                         0.46165723, 0.26735088, 0.53490466,
                                         0.8093572).reshape(3, 4))
    np.testing.assert_array_equal(b, f32(0.10531491, 0.26949483, 0.35881263, 0.19936377,
                                         0.54719156))
    np.testing.assert_array_equal(c, [9, 2, 0, 5, 9, 3])


def test_large_elementwise_split_across_workers(backend, monkeypatch):
    # cut into row ranges across the worker threads on the workers backend
    import torchic.backends.cpu as cpu
    monkeypatch.setattr(cpu, "SPLIT_MIN_ELEMENTS", 1024)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((300, 1000)).astype(np.float32)
    b = rng.standard_normal((1000,)).astype(np.float32)
    ta, tb = torchic.tensor(a), torchic.tensor(b)
    np.testing.assert_allclose((ta * tb + 1).tanh().numpy(), np.tanh(a * b + 1), atol=1e-5)
    np.testing.assert_allclose(ta.sum(1).numpy(), a.astype(np.float64).sum(1), rtol=1e-4,
                               atol=1e-3)
    np.testing.assert_allclose(ta.softmax(-1).numpy(), np_softmax(a.astype(np.float64)),
                               atol=1e-6)
    m = rng.standard_normal((256, 300)).astype(np.float32)
    np.testing.assert_allclose((torchic.tensor(m) @ ta).numpy(), m @ a, rtol=1e-3, atol=1e-3)


# -- the fused transformer ops (functions/fused.py) -----------------------------------------
@pytest.mark.parametrize("diagonal", [-1, 0, 2])
def test_causal_softmax_diagonal_strided_and_empty_rows(backend, diagonal):
    """Rows keeping no column are NaN (softmax of -inf); masked entries (NaN there too) are
    ignored; a strided input that cannot merge its batch dims is read as it is."""
    from torchic.functions import CausalSoftmax
    a = np.random.default_rng(1).uniform(-3, 3, (2, 5, 3, 4)).astype(np.float32)
    a[:, 0, :, 3] = np.nan       # query 0's last key: masked for every diagonal here
    x = torchic.tensor(a).permute(0, 2, 1, 3)          # (2, 3, 5, 4), batch dims strided
    x.requires_grad_()
    y = CausalSoftmax.apply(x, diagonal=diagonal)
    keep = np.tri(5, 4, diagonal, bool)
    with np.errstate(invalid="ignore"):
        ref = np_softmax(np.where(keep, a.transpose(0, 2, 1, 3), -np.inf))
    np.testing.assert_allclose(y.detach().numpy(), ref, atol=1e-6, equal_nan=True)
    if diagonal >= 0:
        w = np.random.default_rng(2).standard_normal(ref.shape).astype(np.float32)
        (y * torchic.tensor(w)).sum().backward()
        expected = ref * (w - (w * ref).sum(-1, keepdims=True))
        np.testing.assert_allclose(x.grad.numpy(), expected, atol=1e-5)


@pytest.mark.parametrize("cols", [8, 300])
def test_layer_norm_and_gelu_match_torch(backend, cols):
    """nn.LayerNorm (weight, bias) and F.gelu against PyTorch, values and gradients."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    x64 = rng.standard_normal((2, 3, cols)) * 3 + 1
    w64, b64 = rng.standard_normal(cols), rng.standard_normal(cols)
    outs = {}
    for lib in (torch, torchic):
        x = lib.tensor(x64.astype(np.float32), requires_grad=True)
        ln = lib.nn.LayerNorm(cols)
        with lib.no_grad():
            ln.weight.copy_(lib.tensor(w64.astype(np.float32)))
            ln.bias.copy_(lib.tensor(b64.astype(np.float32)))
        y = lib.nn.functional.gelu(ln(x), approximate="tanh") + lib.nn.GELU()(x)
        (y * lib.tensor(np.cos(x64).astype(np.float32))).sum().backward()
        outs[lib] = [t.detach().numpy() for t in (y, x.grad, ln.weight.grad, ln.bias.grad)]
    for got, ref in zip(outs[torchic], outs[torch]):
        np.testing.assert_allclose(got, ref, atol=2e-4, rtol=1e-4)


def test_gelu_and_its_gradient_over_the_float32_range(backend):
    """The exact GELU's erfc fit (numpy_kernels.ERFC_Q, one on every backend) against float64
    over [-14, 14] and log-spaced small values: relative error in both tails (where
    x Phi(x) is tiny, down to 1e-30), absolute error of the gradient (it crosses 0)."""
    import math
    from torchic import raw
    x = np.concatenate([np.linspace(-14, 14, 20001), -np.logspace(-6, 1.2, 2001),
                        np.logspace(-6, 1.2, 2001)]).astype(np.float32)
    x64 = x.astype(np.float64)
    phi = 0.5 * np.array([math.erfc(v) for v in -x64 / math.sqrt(2)])
    want = x64 * phi
    want_grad = phi + x64 * np.exp(-0.5 * x64 * x64) / math.sqrt(2 * math.pi)
    xt = torchic.tensor(x)
    got = raw.unary("gelu", xt).numpy().astype(np.float64)
    grad = raw.binary("gelu_grad", xt, torchic.ones(x.shape)).numpy().astype(np.float64)
    tiny = np.abs(want) < 1e-30
    assert np.abs(got[tiny] - want[tiny]).max() < 1e-30
    rel = np.abs(got[~tiny] / want[~tiny] - 1)
    assert rel.max() < 3e-5 and rel[np.abs(x[~tiny]) <= 5].max() < 3e-6, rel.max()
    assert np.abs(grad - want_grad).max() < 1e-6


@pytest.mark.parametrize("is_causal", [True, False])
def test_scaled_dot_product_attention_matches_torch(backend, is_causal):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(4)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in ((2, 3, 6, 4), (2, 3, 6, 4),
                                                                   (2, 3, 6, 5))]
    outs = {}
    for lib in (torch, torchic):
        q, k, v = (lib.tensor(a, requires_grad=True) for a in arrays)
        y = lib.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=is_causal)
        y.pow(2).sum().backward()
        outs[lib] = [t.detach().numpy() for t in (y, q.grad, k.grad, v.grad)]
    for got, ref in zip(outs[torchic], outs[torch]):
        np.testing.assert_allclose(got, ref, atol=1e-4, rtol=1e-4)
    # attn_mask, PyTorch's two kinds: a bool mask keeps keys, a float mask is added
    keep = np.tril(np.ones((6, 6), bool), 1)
    bias = rng.standard_normal((6, 6)).astype(np.float32)
    for mask in (keep, bias):
        want = torch.nn.functional.scaled_dot_product_attention(
            *(torch.tensor(a) for a in arrays), attn_mask=torch.tensor(mask))
        got = torchic.nn.functional.scaled_dot_product_attention(
            *(torchic.tensor(a) for a in arrays), attn_mask=torchic.tensor(mask))
        np.testing.assert_allclose(got.numpy(), want.numpy(), atol=1e-5, rtol=1e-5)
