"""Property test: random shapes and layouts (0-size dims, transposed, sliced with steps,
broadcast stride 0, offsets) thrown at every kernel, compared with NumPy float64.
The elementwise kernels' references and domains are torchic.testing's kernel cases."""

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from torchic import ops
from torchic.dispatcher import View
from torchic.testing import kernel_cases

SETTINGS = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@st.composite
def layouts(draw, ndim, allow_broadcast=True):
    perm = draw(st.permutations(list(range(ndim))))
    steps = draw(st.lists(st.integers(1, 3), min_size=ndim, max_size=ndim))
    bcast = draw(st.lists(st.booleans(), min_size=ndim, max_size=ndim)) if allow_broadcast \
        else [False] * ndim
    offset = draw(st.integers(0, 5))
    return perm, steps, bcast, offset


def place(h, x, layout, dtype="f32"):
    """A view with the values of x (logical shape x.shape) in the given physical layout.

    Broadcast dims are made constant in x first; returns (view, the values it holds).
    """
    perm, steps, bcast, offset = layout
    shape = x.shape
    for d in range(x.ndim):
        if bcast[d] and shape[d] > 0:
            x = np.broadcast_to(np.take(x, [0], axis=d), shape)
    phys = [d for d in perm if not bcast[d]]
    phys_shape = [shape[d] * steps[d] for d in phys]
    strides = [0] * x.ndim
    acc = 1
    for d, n in zip(reversed(phys), reversed(phys_shape)):
        strides[d] = acc * steps[d]
        acc *= max(n, 1)
    npdt = np.int32 if dtype == "i32" else np.float32
    buf = np.full(offset + acc + 1, -77, npdt)
    view_np = np.lib.stride_tricks.as_strided(buf[offset:], shape, [s * 4 for s in strides])
    if x.size:
        view_np[...] = x
    base = h.empty(buf.shape, dtype)
    h.rt.write(base, buf)
    return View(base.block, offset, tuple(shape), tuple(strides), dtype), np.array(x, dtype=npdt)


shapes = st.lists(st.integers(0, 9), min_size=0, max_size=4).map(tuple)


def values(rng, shape, low=-3, high=3):
    return rng.uniform(low, high, shape).astype(np.float32)


def close(got, want, rtol=3e-6, atol=2e-6):
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


UNARY = kernel_cases("unary")
BINARY = kernel_cases("binary", "compare")


def case_values(case, rng, shape):
    """float32 inputs of the case's shape from its domains."""
    return [a.astype(np.float32) for a in case.draw(rng, [shape] * len(case.shapes))]


@SETTINGS
@given(data=st.data(), shape=shapes, op=st.sampled_from(sorted(UNARY) + ["copy"]))
def test_unary_and_copy(h, data, shape, op):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**31)))
    x = values(rng, shape) if op == "copy" else case_values(UNARY[op], rng, shape)[0]
    v, xv = place(h, x, data.draw(layouts(len(shape))))
    got = h.run(op, h.empty(shape), v)
    want = xv if op == "copy" else UNARY[op].ref(xv.astype(np.float64))
    close(got, want)


@SETTINGS
@given(data=st.data(), shape=shapes, op=st.sampled_from(sorted(BINARY)))
def test_binary_and_compare(h, data, shape, op):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**31)))
    a, b = case_values(BINARY[op], rng, shape)
    va, av = place(h, a, data.draw(layouts(len(shape))))
    vb, bv = place(h, b, data.draw(layouts(len(shape))))
    got = h.run(op, h.empty(shape), va, vb)
    want = BINARY[op].ref(av.astype(np.float64), bv.astype(np.float64))
    close(got, np.asarray(want, np.float64), rtol=2e-5)


@SETTINGS
@given(data=st.data(), shape=shapes)
def test_where_and_fill(h, data, shape):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**31)))
    c = np.round(rng.uniform(0, 1, shape)).astype(np.float32)
    a, b = values(rng, shape), values(rng, shape)
    (vc, cv), (va, av), (vb, bv) = (place(h, x, data.draw(layouts(len(shape)))) for x in (c, a, b))
    np.testing.assert_array_equal(h.run("where", h.empty(shape), vc, va, vb), np.where(cv != 0, av, bv))
    # fill a strided (non-broadcast) out, then read the whole buffer back
    out, _ = place(h, np.zeros(shape, np.float32), data.draw(layouts(len(shape), False)))
    h.rt.run("fill", out, (), {"value": 1.25})
    np.testing.assert_array_equal(h.rt.read(out), np.full(shape, 1.25, np.float32))


@SETTINGS
@given(data=st.data(), shape=shapes, op=st.sampled_from(ops.REDUCE))
def test_reduce(h, data, shape, op):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**31)))
    naxes = data.draw(st.integers(0, len(shape)))
    v, xv = place(h, values(rng, shape), data.draw(layouts(len(shape))))
    axes = tuple(range(len(shape) - naxes, len(shape)))
    fn = getattr(np, op)      # np.sum / np.max / np.min
    init = {"sum": {}, "max": {"initial": -np.inf}, "min": {"initial": np.inf}}[op]
    want = fn(xv.astype(np.float64), axis=axes, **init)
    got = h.run(op, h.empty(np.shape(want)), v, naxes=naxes)
    close(got, want, atol=1e-5)


@SETTINGS
@given(data=st.data(), shape=st.lists(st.integers(0, 9), min_size=1, max_size=4).map(tuple))
def test_argmax(h, data, shape):
    shape = shape[:-1] + (max(shape[-1], 1),)
    rng = np.random.default_rng(data.draw(st.integers(0, 2**31)))
    x = np.round(values(rng, shape))  # many ties
    v, xv = place(h, x, data.draw(layouts(len(shape))))
    np.testing.assert_array_equal(h.run("argmax", h.empty(shape[:-1], "i32"), v), np.argmax(xv, -1))


@SETTINGS
@given(data=st.data(), rows=st.integers(0, 9), cols=st.integers(1, 40))
def test_softmax_family(h, data, rows, cols):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**31)))
    v, xv = place(h, values(rng, (rows, cols), -10, 10), data.draw(layouts(2)))
    x64 = xv.astype(np.float64)
    m = x64.max(1, keepdims=True) if rows else np.zeros((0, 1))
    lse = m + np.log(np.exp(x64 - m).sum(1, keepdims=True))
    close(h.run("softmax", h.empty((rows, cols)), v), np.exp(x64 - lse), rtol=1e-5)
    close(h.run("log_softmax", h.empty((rows, cols)), v), x64 - lse, rtol=1e-5, atol=1e-5)
    t = rng.integers(0, cols, rows).astype(np.int32)
    vt, tv = place(h, t, data.draw(layouts(1, False)), "i32")
    g = values(rng, (rows,))
    vg, gv = place(h, g, data.draw(layouts(1)))
    r = np.arange(rows)
    close(h.run("cross_entropy", h.empty((rows,)), v, vt), lse[:, 0] - x64[r, tv], rtol=1e-5, atol=1e-5)
    want = np.exp(x64 - lse)
    want[r, tv] -= 1
    close(h.run("cross_entropy_grad", h.empty((rows, cols)), v, vt, vg), want * gv[:, None], rtol=1e-5)


@SETTINGS
@given(data=st.data(), b=st.integers(0, 3), m=st.integers(0, 40), k=st.integers(0, 40),
       n=st.integers(0, 40))
def test_matmul(h, data, b, m, k, n):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**31)))
    va, av = place(h, values(rng, (b, m, k)), data.draw(layouts(3)))
    vb, bv = place(h, values(rng, (b, k, n)), data.draw(layouts(3)))
    got = h.run("matmul", h.empty((b, m, n)), va, vb)
    close(got, av.astype(np.float64) @ bv.astype(np.float64), rtol=1e-5, atol=1e-4)


@SETTINGS
@given(data=st.data(), v_rows=st.integers(1, 12), r=st.integers(0, 20), d=st.integers(0, 40))
def test_gather_scatter(h, data, v_rows, r, d):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**31)))
    vt, tv = place(h, values(rng, (v_rows, d)), data.draw(layouts(2)))
    vi, iv = place(h, rng.integers(0, v_rows, r).astype(np.int32), data.draw(layouts(1)), "i32")
    np.testing.assert_array_equal(h.run("gather_rows", h.empty((r, d)), vt, vi), tv[iv])
    vs, sv = place(h, values(rng, (r, d)), data.draw(layouts(2)))
    out = h.empty((v_rows, d))
    h.rt.run("fill", out, (), {"value": 0.0})
    want = np.zeros((v_rows, d))
    np.add.at(want, iv, sv.astype(np.float64))
    close(h.run("scatter_add_rows", out, vs, vi), want, atol=1e-5)
