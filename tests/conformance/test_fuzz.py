"""Differential fuzzing of every op on every backend against NumPy float64.

One hypothesis test per op (``FUZZ_OPS`` below: name -> example function), run on
each backend through the ``backend`` fixture. The elementwise families (unary, binary,
compare) and the reductions over random dims come from the rows of
torchic.testing.CASES (function, reference, domain, kinks, ``dims``); the other
examples fuzz an op's structure (shapes, indices, views) and read their case's call. Every example draws shapes
(0-size and size-1 dims included), broadcasting partners, a layout per input
(contiguous, transposed, sliced with steps and an offset, expanded, or all at
once; see fuzz_support.py) and values, then checks values and gradients
(finite differences of the float64 reference). ``compose`` draws short random
programs over several ops.

Examples per op: 150 on CPU backends, 50 on webgpu (TORCHIC_FUZZ_EXAMPLES
overrides, TORCHIC_FUZZ_LONG=1 runs 10,000 with fresh randomness). The CI
profile is derandomized and database-free, so a failure reproduces exactly.
"""

import warnings

import numpy as np
import pytest
from hypothesis import given, note
from hypothesis import strategies as st

import torchic
from torchic.testing import (CASES, family, np_adam, np_dropout_mask, np_layer_norm,
                             np_log_softmax, np_softmax)
from fuzz_support import (broadcast_partner, check, close, describe, draw_input, draw_mode,
                          draw_rng, draw_shape, fuzz_settings)

FUZZ_OPS = {}


def fuzz(name):
    def deco(fn):
        FUZZ_OPS[name] = fn
        return fn
    return deco


# -- unary (every unary case) --------------------------------------------------------------
def _unary(case):
    def example(data, rng):
        mode = draw_mode(data)
        x = draw_input(data, rng, draw_shape(data), case.domain_of(0), mode)
        note(describe([x]))
        check(case.fn, case.ref, [x], grad=not (case.kinks and mode == "ints"), rng=rng)
    return example


for _c in family("unary"):
    fuzz(_c.name)(_unary(_c))


# -- binary (broadcasting; every binary case) ------------------------------------------------
def _binary(case):
    def example(data, rng):
        mode = draw_mode(data)
        out = draw_shape(data)
        sa = broadcast_partner(data, out, "a.shape")
        sb = broadcast_partner(data, out, "b.shape")
        if data.draw(st.booleans(), label="swap"):
            sa, sb = sb, sa
        a = draw_input(data, rng, sa, case.domain_of(0), mode, label="a")
        b = draw_input(data, rng, sb, case.domain_of(1), mode, label="b")
        note(describe([a, b]))
        check(case.fn, case.ref, [a, b], grad=not (case.kinks and mode == "ints"), rng=rng)
    return example


for _c in family("binary"):
    fuzz(_c.name)(_binary(_c))


@fuzz("pow_integer_exponent")
def _pow_int(data, rng):
    """Negative bases with integral exponents (NumPy's float power): gradient on the base."""
    out = draw_shape(data)
    a = draw_input(data, rng, broadcast_partner(data, out, "a.shape"), "nonzero", label="a")
    b = draw_input(data, rng, broadcast_partner(data, out, "b.shape"), grad=False, label="b",
                   values=lambda r, s: r.integers(-2, 4, s).astype(np.float64))
    note(describe([a, b]))
    check(lambda x, y: x ** y, np.power, [a, b], rng=rng)


SCALAR_OPS = {
    "x+c": (lambda x, c: x + c, lambda x, c: x + c),
    "c+x": (lambda x, c: c + x, lambda x, c: c + x),
    "x-c": (lambda x, c: x - c, lambda x, c: x - c),
    "c-x": (lambda x, c: c - x, lambda x, c: c - x),
    "x*c": (lambda x, c: x * c, lambda x, c: x * c),
    "c*x": (lambda x, c: c * x, lambda x, c: c * x),
    "x/c": (lambda x, c: x / c, lambda x, c: x / c),
    "c/x": (lambda x, c: c / (x * x + 1), lambda x, c: c / (x * x + 1)),
    "x**2": (lambda x, c: x ** 2, lambda x, c: x ** 2),
    "|c|**x": (lambda x, c: abs(c) ** x, lambda x, c: abs(c) ** x),
    "x.max(c)": (lambda x, c: torchic.maximum(x, c), lambda x, c: np.maximum(x, c)),
}


@fuzz("python_scalars")
def _scalars(data, rng):
    op = data.draw(st.sampled_from(sorted(SCALAR_OPS)), label="op")
    c = data.draw(st.sampled_from((0.5, -1.5, 2.0, 3, -2, 0.25)), label="c")
    x = draw_input(data, rng, draw_shape(data), label="x")
    note(f"{op} with c={c}: {describe([x])}")
    tc_fn, np_fn = SCALAR_OPS[op]
    check(lambda t: tc_fn(t, c), lambda a: np_fn(a, np.float64(np.float32(c))), [x], rng=rng)


# -- compare (every comparison case) -----------------------------------------------------------
def _compare(case):
    tc_fn, np_fn = case.fn, case.ref

    def example(data, rng):
        dtype = data.draw(st.sampled_from(("f32", "f32", "i32")), label="dtype")
        out = draw_shape(data)
        sa = broadcast_partner(data, out, "a.shape")
        sb = broadcast_partner(data, out, "b.shape")
        a = draw_input(data, rng, sa, mode="ints", dtype=dtype, label="a")
        b = draw_input(data, rng, sb, mode=draw_mode(data), dtype=dtype, label="b")
        note(describe([a, b]))
        scalar = data.draw(st.sampled_from((None, 0, 1, -2)), label="scalar")
        if scalar is None:
            check(tc_fn, lambda x, y: np_fn(x, y).astype(np.float64), [a, b], grad=False,
                  out_dtype=torchic.bool)
        else:
            check(lambda x: tc_fn(x, scalar), lambda x: np_fn(x, scalar).astype(np.float64),
                  [a], grad=False, out_dtype=torchic.bool)
    return example


for _c in family("compare"):
    fuzz(_c.name)(_compare(_c))


@fuzz("where")
def _where(data, rng):
    out = draw_shape(data)
    cond = draw_input(data, rng, broadcast_partner(data, out, "cond.shape"), grad=False,
                      values=lambda r, s: r.choice([0.0, 1.0, -2.0, 0.5], s), label="cond")
    a = draw_input(data, rng, broadcast_partner(data, out, "a.shape"), label="a")
    b = draw_input(data, rng, broadcast_partner(data, out, "b.shape"), label="b")
    note(describe([cond, a, b]))
    check(CASES["where"].fn, CASES["where"].ref, [cond, a, b], rng=rng)


# -- reductions -----------------------------------------------------------------------------
def _draw_dims(data, ndim):
    """None (all), one dim (maybe negative) or a tuple of dims."""
    if ndim == 0:      # a 0-d tensor takes dim 0 / -1 (and reduces nothing)
        return data.draw(st.sampled_from((None, 0, -1, (0,))), label="dims")
    kind = data.draw(st.sampled_from(("all", "one", "tuple")), label="dims.kind")
    if kind == "all":
        return None
    if kind == "one":
        d = data.draw(st.integers(0, ndim - 1), label="dim")
        return d - ndim if data.draw(st.booleans(), label="dim.negative") else d
    dims = data.draw(st.lists(st.integers(0, ndim - 1), min_size=1, max_size=ndim, unique=True),
                     label="dims")
    return tuple(dims)


def _axes(dims, ndim):
    if dims is None or ndim == 0:
        return tuple(range(ndim))
    return tuple(d % ndim for d in (dims if isinstance(dims, tuple) else (dims,)))


def _reduce(case):
    """A reduction case's `dims` form: (torchic(x, dims, keepdim), numpy(a, axes, keepdims),
    an empty reduction raises)."""
    tc_fn, np_fn, empty_raises = case.dims
    kinks = case.kinks

    def example(data, rng):
        mode = draw_mode(data)
        x = draw_input(data, rng, draw_shape(data), mode=mode)
        nd = len(x.layout.shape)
        dims = _draw_dims(data, nd)
        keepdim = data.draw(st.booleans(), label="keepdim")
        axes = _axes(dims, nd)
        note(f"dims={dims} keepdim={keepdim}: {describe([x])}")
        if empty_raises and any(x.layout.shape[a] == 0 for a in axes):
            with pytest.raises(ValueError, match="empty"):
                tc_fn(x.make()[1], dims, keepdim)
            return
        check(lambda t: tc_fn(t, dims, keepdim), lambda a: np_fn(a, axes, keepdim), [x],
              grad=not (kinks and mode == "ints"), rng=rng)
    return example


for _c in CASES.values():
    if _c.dims:     # fuzzed as the function's name: sum_all -> "sum", amax_last -> "amax"
        assert _c.name.split("_")[0] not in FUZZ_OPS, _c.name
        fuzz(_c.name.split("_")[0])(_reduce(_c))


def _max_min_dim(op):
    def example(data, rng):
        mode = draw_mode(data)
        x = draw_input(data, rng, draw_shape(data, min_dims=1), mode=mode)
        nd = len(x.layout.shape)
        d = data.draw(st.integers(-nd, nd - 1), label="dim")
        keepdim = data.draw(st.booleans(), label="keepdim")
        note(f"dim={d} keepdim={keepdim}: {describe([x])}")
        if x.layout.shape[d] == 0:
            with pytest.raises(ValueError, match="empty"):
                getattr(x.make()[1], op)(dim=d, keepdim=keepdim)
            return
        np_val = np.max if op == "max" else np.min
        np_idx = np.argmax if op == "max" else np.argmin
        check(lambda t: getattr(t, op)(dim=d, keepdim=keepdim).values,
              lambda a: np_val(a, axis=d, keepdims=keepdim), [x], grad=mode != "ints", rng=rng)
        arr32 = x.array().astype(np.float32)
        idx = getattr(x.make()[1], op)(dim=d, keepdim=keepdim).indices
        ref = np_idx(arr32, axis=d)
        ref = np.expand_dims(ref, d) if keepdim else ref
        assert idx.dtype == torchic.int64
        np.testing.assert_array_equal(idx.numpy(), ref, err_msg=f"{op}(dim).indices")
    return example


fuzz("max_dim")(_max_min_dim("max"))
fuzz("min_dim")(_max_min_dim("min"))


def _argmax(op):
    def example(data, rng):
        x = draw_input(data, rng, draw_shape(data), mode=draw_mode(data), grad=False)
        nd = len(x.layout.shape)
        dim = None if nd == 0 or data.draw(st.booleans(), label="flat") else \
            data.draw(st.integers(-nd, nd - 1), label="dim")
        keepdim = dim is not None and data.draw(st.booleans(), label="keepdim")
        note(f"dim={dim} keepdim={keepdim}: {describe([x])}")
        t = x.make()[1]
        fn = getattr(t, op)
        empty = x.layout.shape[dim] == 0 if dim is not None else x.core.size == 0 or \
            0 in x.layout.shape
        if empty:
            with pytest.raises(ValueError, match="empty"):
                fn(dim, keepdim)
            return
        arr32 = x.array().astype(np.float32)   # ties decided on float32 values
        ref = getattr(np, op)(arr32, axis=dim)
        if keepdim:
            ref = np.expand_dims(ref, dim)
        got = fn(dim, keepdim)
        assert got.dtype == torchic.int64
        np.testing.assert_array_equal(got.numpy(), ref)
    return example


fuzz("argmax")(_argmax("argmax"))
fuzz("argmin")(_argmax("argmin"))


def _softmax(name):
    np_fn = np_softmax if name == "softmax" else np_log_softmax

    def example(data, rng):
        x = draw_input(data, rng, draw_shape(data), mode=draw_mode(data))
        nd = max(len(x.layout.shape), 1)            # a 0-d tensor takes dim 0 or -1
        d = data.draw(st.integers(-nd, nd - 1), label="dim")
        scale = data.draw(st.sampled_from((1.0, 1.0, 30.0)), label="scale")   # big logits
        note(f"dim={d} scale={scale}: {describe([x])}")
        check(lambda t: getattr(t * scale, name)(d), lambda a: np_fn(a * scale, d), [x],
              grad=scale == 1.0, rng=rng)
    return example


fuzz("softmax")(_softmax("softmax"))
fuzz("log_softmax")(_softmax("log_softmax"))


@fuzz("layer_norm")
def _layer_norm(data, rng):
    """F.layer_norm over the last 1 or 2 dims, with and without weight and bias (rows of at
    least 4 values: a row of nearly equal values divides by a tiny deviation)."""
    lead = data.draw(st.sampled_from(((), (1,), (3,), (2, 3), (0,))), label="lead")
    norm = data.draw(st.sampled_from(((4,), (7,), (33,), (2, 4), (3, 5))), label="normalized")
    x = draw_input(data, rng, lead + norm, allow_expand=False)   # (expanded: constant rows)
    affine = data.draw(st.booleans(), label="affine")
    params = [draw_input(data, rng, norm, label="weight"),
              draw_input(data, rng, norm, label="bias")] if affine else []
    note(f"normalized_shape={norm} affine={affine}: {describe([x] + params)}")
    check(lambda t, *wb: torchic.nn.functional.layer_norm(t, norm, *wb),
          lambda a, *wb: np_layer_norm(a, *wb, k=len(norm)), [x] + params,
          rng=rng, atol=1e-4, grad_atol=1e-3, grad_rtol=3e-3)


@fuzz("max_pool2d")
def _max_pool2d(data, rng):
    """F.max_pool2d over random windows, strides, padding and dilation (max_pool_index): the
    values and the indices; no gradient check (a window's near-ties defeat finite
    differences; CASES["max_pool2d"] checks the gradient)."""
    from torchic.testing.cases import _np_max_pool2d
    k = data.draw(st.sampled_from(((1, 1), (2, 2), (3, 3), (2, 3))), label="kernel")
    s = data.draw(st.sampled_from(((1, 1), (2, 2), (1, 2))), label="stride")
    d = data.draw(st.sampled_from(((1, 1), (2, 1))), label="dilation")
    p = tuple(data.draw(st.integers(0, kk // 2), label="padding") for kk in k)
    hw = tuple(data.draw(st.integers(dd * (kk - 1) + 1, 9), label="size") for kk, dd in zip(k, d))
    nc = data.draw(st.sampled_from(((1, 1), (2, 3))), label="batch, channels")
    x = draw_input(data, rng, nc + hw, allow_expand=False)
    note(f"kernel={k} stride={s} padding={p} dilation={d}: {describe([x])}")
    check(lambda t: torchic.nn.functional.max_pool2d(t, k, s, p, d),
          lambda a: _np_max_pool2d(a, k, s, p, d), [x], grad=False)
    check(lambda t: torchic.nn.functional.max_pool2d(t, k, s, p, d, return_indices=True)[1],
          lambda a: _np_max_pool2d(a, k, s, p, d, indices=True).astype(np.int64), [x],
          grad=False)


@fuzz("conv2d")
def _conv2d(data, rng):
    """F.conv2d with padding, values and both gradients (the input's through col2im)."""
    from torchic.testing.cases import _np_conv2d
    c, co = data.draw(st.sampled_from(((1, 2), (3, 4), (2, 1))), label="channels")
    k = data.draw(st.sampled_from(((1, 1), (3, 3), (2, 3))), label="kernel")
    pad = data.draw(st.integers(0, min(k) // 2), label="padding")
    hw = tuple(data.draw(st.integers(kk, 7), label="size") for kk in k)
    n = data.draw(st.sampled_from((1, 2)), label="batch")
    x = draw_input(data, rng, (n, c) + hw)
    w = draw_input(data, rng, (co, c) + k, label="weight")
    note(f"padding={pad}: {describe([x, w])}")
    check(lambda t, wt: torchic.nn.functional.conv2d(t, wt, padding=pad),
          lambda a, wa: _np_conv2d(a, wa, pad), [x, w], rng=rng, atol=1e-4,
          grad_atol=1e-3, grad_rtol=3e-3)


@fuzz("lstm_recurrence")
def _lstm_recurrence(data, rng):
    """One LSTM layer-direction's recurrence (nn/lstm_recurrence.py: the recurrent product,
    lstm_cell forward, lstm_cell_grad backward) over random steps, batch and hidden sizes,
    either direction: the hidden states and final cell, and every input's gradient."""
    reverse = data.draw(st.booleans(), label="reverse")
    steps = data.draw(st.integers(1, 4), label="steps")
    n = data.draw(st.sampled_from((1, 2, 3)), label="batch")
    hs = data.draw(st.sampled_from((1, 3, 5, 17)), label="hidden")
    shapes = [(steps, n, 4 * hs), (n, hs), (n, hs), (4 * hs, hs)]
    inputs = [draw_input(data, rng, s, label=name, allow_expand=False)
              for s, name in zip(shapes, ("xp", "h0", "c0", "w_hh"))]
    note(f"reverse={reverse}: {describe(inputs)}")
    case = CASES["lstm_recurrence_reverse" if reverse else "lstm_recurrence"]
    check(case.fn, case.ref, inputs, rng=rng, atol=1e-4, grad_atol=1e-3, grad_rtol=3e-3)


@fuzz("causal_attention")
def _causal_attention(data, rng):
    """F.scaled_dot_product_attention(is_causal=True): PyTorch's top-left causal mask."""
    batch = data.draw(st.sampled_from(((), (1,), (2,), (2, 3))), label="batch")
    tq = data.draw(st.sampled_from((1, 2, 3, 5, 8)), label="queries")
    tk = data.draw(st.sampled_from((tq, tq, tq + 1, tq + 3)), label="keys")
    e = data.draw(st.sampled_from((1, 4, 8)), label="head size")
    q, k, v = (draw_input(data, rng, batch + (t, e), label=n)
               for n, t in (("q", tq), ("k", tk), ("v", tk)))
    note(f"causal attention: {describe([q, k, v])}")
    case = CASES["causal_attention"]
    check(case.fn, case.ref, [q, k, v], rng=rng, atol=1e-4, grad_atol=1e-3)


@fuzz("dropout")
def _dropout(data, rng):
    """F.dropout (the dropout primitive, forward and backward) on any shape and layout:
    input times the threefry mask of its logical (row-major) index, from the generator's key
    (testing.np_dropout_mask, plain Python); its gradient, the same mask times g."""
    x = draw_input(data, rng, draw_shape(data))
    p = data.draw(st.sampled_from((0.1, 0.5, 0.9, 1e-3)), label="p")
    seed = data.draw(st.integers(0, 2 ** 31), label="seed")
    note(f"p={p} seed={seed}: {describe([x])}")
    key = torchic.Generator().manual_seed(seed).random(2)
    check(lambda t: torchic.nn.functional.dropout(
        t, p, generator=torchic.Generator().manual_seed(seed)),
          lambda a: a * np_dropout_mask(key, a.shape, p), [x], rng=rng)


@fuzz("adam")
def _adam(data, rng):
    """Adam / AdamW steps on a parameter and gradient of any shape and layout (contiguous
    ones take the fused adam_update, the others the separate ops) against NumPy float64."""
    shape = draw_shape(data)
    p = draw_input(data, rng, shape, grad=False, allow_expand=False, label="param")
    g = draw_input(data, rng, shape, grad=False, label="grad")
    decoupled = data.draw(st.booleans(), label="AdamW")
    lr = data.draw(st.sampled_from((0.1, 1e-3)), label="lr")
    wd = data.draw(st.sampled_from((0.0, 0.3)), label="weight_decay")
    maximize = data.draw(st.booleans(), label="maximize")
    steps = data.draw(st.integers(1, 3), label="steps")
    note(f"AdamW={decoupled} lr={lr} wd={wd} maximize={maximize} steps={steps}: "
         f"{describe([p, g])}")
    make = torchic.optim.AdamW if decoupled else torchic.optim.Adam

    def step(pt, gt):
        opt = make([pt], lr=lr, weight_decay=wd, maximize=maximize)
        for _ in range(steps):
            pt.grad = gt
            opt.step()
        return pt
    check(step, lambda pa, ga: np_adam(pa, ga, steps, lr, weight_decay=wd, decoupled=decoupled,
                                       maximize=maximize), [p, g], grad=False, rng=rng,
          atol=1e-5, rtol=1e-4)


@fuzz("cross_entropy")
def _cross_entropy(data, rng):
    n = data.draw(st.sampled_from((1, 2, 3, 5, 8, 0)), label="rows")
    c = data.draw(st.integers(1, 6), label="classes")
    logits = draw_input(data, rng, (n, c), allow_expand=True, label="logits")
    scale = data.draw(st.sampled_from((1.0, 1.0, 20.0)), label="scale")
    logits.core = (logits.core * scale).astype(np.float32).astype(np.float64)
    target = draw_input(data, rng, (n,), dtype="i32", grad=False, label="target",
                        values=lambda r, s: r.integers(0, c, s))
    reduction = data.draw(st.sampled_from(("mean", "sum", "none")), label="reduction")
    note(f"reduction={reduction}: {describe([logits, target])}")

    def ref(x, t):
        rows = -np_log_softmax(x, -1)[np.arange(n), t] if n else np.zeros(0)
        return {"mean": rows.mean() if n else np.nan, "sum": rows.sum(), "none": rows}[reduction]
    check(lambda x, t: torchic.cross_entropy(x, t, reduction=reduction), ref, [logits, target],
          rng=rng, atol=1e-4)


@fuzz("mse_loss")
def _mse(data, rng):
    shape = draw_shape(data, min_dims=1, zero_ok=False)
    a = draw_input(data, rng, shape, label="input")
    b = draw_input(data, rng, shape, label="target")
    check(CASES["mse_loss"].fn, CASES["mse_loss"].ref, [a, b], rng=rng)


# -- matmul --------------------------------------------------------------------------------
@fuzz("matmul")
def _matmul(data, rng):
    m, k, n = (data.draw(st.sampled_from((1, 2, 3, 4, 5, 7, 0)), label=s) for s in "mkn")
    batch = draw_shape(data, max_dims=2, label="batch")
    kind_a = data.draw(st.sampled_from(("vector", "matrix", "batched")), label="a.kind")
    kind_b = data.draw(st.sampled_from(("vector", "matrix", "batched")), label="b.kind")
    sa = {"vector": (k,), "matrix": (m, k),
          "batched": broadcast_partner(data, batch, "a.batch") + (m, k)}[kind_a]
    sb = {"vector": (k,), "matrix": (k, n),
          "batched": broadcast_partner(data, batch, "b.batch") + (k, n)}[kind_b]
    a = draw_input(data, rng, sa, label="a")
    b = draw_input(data, rng, sb, label="b")
    note(describe([a, b]))
    check(lambda x, y: x @ y, np.matmul, [a, b], rng=rng, atol=1e-4)


@fuzz("linear")
def _linear(data, rng):
    """F.linear: x (..., k) against a (n, k) weight, with or without a (n,) bias (one
    matmul_bias op, the weight's gradient in its own layout)."""
    k, n = (data.draw(st.sampled_from((1, 2, 3, 5, 7, 0)), label=s) for s in "kn")
    lead = draw_shape(data, min_dims=1, max_dims=3, label="x.lead")
    x = draw_input(data, rng, lead + (k,), label="x")
    w = draw_input(data, rng, (n, k), label="weight")
    ins = [x, w]
    if data.draw(st.booleans(), label="bias"):
        ins.append(draw_input(data, rng, (n,), label="bias"))
    note(describe(ins))
    F = torchic.nn.functional
    check(lambda *t: F.linear(*t), lambda x, w, b=0.0: x @ w.T + b, ins, rng=rng, atol=1e-4)


# -- gather (embedding lookup) and its backward (scatter-add) ---------------------------------
@fuzz("gather_rows")
def _gather(data, rng):
    v = data.draw(st.integers(1, 6), label="rows")
    row = draw_shape(data, max_dims=2, label="row")
    idx_shape = draw_shape(data, max_dims=2, label="idx")
    table = draw_input(data, rng, (v,) + row, label="table")
    idx = draw_input(data, rng, idx_shape, dtype="i32", grad=False, label="idx",
                     values=lambda r, s: r.integers(0, v, s))   # duplicates: scatter-add
    note(describe([table, idx]))
    check(lambda t, i: t[i], lambda t, i: t[i], [table, idx], rng=rng)


@fuzz("gather_points")
def _gather_points(data, rng):
    shape = draw_shape(data, min_dims=2, zero_ok=False, label="table")
    k = data.draw(st.integers(2, len(shape)), label="index tensors")
    n = data.draw(st.integers(0, 5), label="points")
    x = draw_input(data, rng, shape, label="table")
    idxs = [rng.integers(-shape[i], shape[i], n) for i in range(k)]   # negatives allowed
    note(f"indices {idxs}: {describe([x])}")
    check(lambda t: t[tuple(torchic.tensor(i.astype(np.int32)) for i in idxs)],
          lambda a: a[tuple(idxs)], [x], rng=rng)


# -- views and copies ------------------------------------------------------------------------
def _draw_view_step(data, shape):
    """One zero-copy view op valid for `shape`: (description, torchic fn, numpy fn, new shape)."""
    nd = len(shape)
    choices = ["reshape_flat", "unsqueeze", "expand_new"]
    if nd >= 1:
        choices += ["slice", "index", "flatten", "squeeze", "split_last", "expand_ones"]
    if nd >= 2:
        choices += ["transpose", "permute", "T"]
    kind = data.draw(st.sampled_from(choices), label="view")
    if kind == "reshape_flat":
        return "reshape(-1)", lambda t: t.reshape(-1), lambda a: a.reshape(-1)
    if kind == "unsqueeze":
        d = data.draw(st.integers(-nd - 1, nd), label="dim")
        return f"unsqueeze({d})", lambda t: t.unsqueeze(d), lambda a: np.expand_dims(a, d)
    if kind == "expand_new":
        r = data.draw(st.integers(0, 3), label="reps")
        return (f"expand({r}, ...)", lambda t: t.expand((r,) + tuple(t.shape)),
                lambda a: np.broadcast_to(a, (r,) + a.shape))
    if kind == "expand_ones":
        ones = [i for i, s in enumerate(shape) if s == 1]
        if not ones:
            return "contiguous", lambda t: t.contiguous(), lambda a: a
        i = data.draw(st.sampled_from(ones), label="dim")
        r = data.draw(st.integers(0, 3), label="reps")
        new = tuple(r if j == i else s for j, s in enumerate(shape))
        return (f"expand{new}", lambda t: t.expand(*new), lambda a: np.broadcast_to(a, new))
    if kind == "slice":
        d = data.draw(st.integers(0, nd - 1), label="dim")
        start = data.draw(st.integers(-3, 3), label="start")
        stop = data.draw(st.sampled_from((None, -1, 1, 2, 4, 10)), label="stop")
        step = data.draw(st.integers(1, 3), label="step")
        key = (slice(None),) * d + (slice(start, stop, step),)
        return f"[{key}]", lambda t: t[key], lambda a: a[key]
    if kind == "index":
        d = data.draw(st.integers(0, nd - 1), label="dim")
        if shape[d] == 0:
            return "contiguous", lambda t: t.contiguous(), lambda a: a
        i = data.draw(st.integers(-shape[d], shape[d] - 1), label="i")
        key = (slice(None),) * d + (i,)
        if data.draw(st.booleans(), label="none+ellipsis"):
            key = (None, i, Ellipsis) if d == 0 else key
        return f"[{key}]", lambda t: t[key], lambda a: a[key]
    if kind == "flatten":
        s = data.draw(st.integers(0, nd - 1), label="start")
        e = data.draw(st.integers(s, nd - 1), label="end")
        new = shape[:s] + (int(np.prod(shape[s:e + 1])),) + shape[e + 1:]
        return f"flatten({s},{e})", lambda t: t.flatten(s, e), lambda a: a.reshape(new)
    if kind == "squeeze":
        return "squeeze()", lambda t: t.squeeze(), lambda a: a.reshape(
            tuple(x for x in a.shape if x != 1))
    if kind == "split_last":
        last = shape[-1]
        divs = [x for x in (1, 2, 3) if last and last % x == 0] or [1]
        p = data.draw(st.sampled_from(divs), label="parts")
        new = shape[:-1] + (p, last // p if p else 0)
        return f"reshape{new}", lambda t: t.reshape(new), lambda a: a.reshape(new)
    if kind == "transpose":
        d0 = data.draw(st.integers(-nd, nd - 1), label="d0")
        d1 = data.draw(st.integers(-nd, nd - 1), label="d1")
        return (f"transpose({d0},{d1})", lambda t: t.transpose(d0, d1),
                lambda a: np.swapaxes(a, d0, d1))
    if kind == "permute":
        p = tuple(data.draw(st.permutations(range(nd)), label="perm"))
        return f"permute{p}", lambda t: t.permute(*p), lambda a: a.transpose(p)
    return ".T", lambda t: t.T, lambda a: a.T


@fuzz("views")
def _views(data, rng):
    x = draw_input(data, rng, draw_shape(data), label="x")
    steps, shape = [], x.layout.shape
    for _ in range(data.draw(st.integers(1, 4), label="n views")):
        desc, tf, nf = _draw_view_step(data, shape)
        shape = nf(np.zeros(shape)).shape
        steps.append((desc, tf, nf))
    finish = data.draw(st.sampled_from(("none", "contiguous", "clone", "times2")), label="end")
    note(" -> ".join(s[0] for s in steps) + f" -> {finish}: {describe([x])}")

    def tc_fn(t):
        for _, tf, _ in steps:
            t = tf(t)
        return {"none": t, "contiguous": t.contiguous(), "clone": t.clone(),
                "times2": t * 2}[finish]

    def np_fn(a):
        for _, _, nf in steps:
            a = nf(a)
        return a * 2 if finish == "times2" else a
    check(tc_fn, np_fn, [x], rng=rng)


@fuzz("cat_stack")
def _cat(data, rng):
    shape = draw_shape(data, min_dims=1, max_dims=3)
    nd = len(shape)
    d = data.draw(st.integers(-nd, nd - 1), label="dim")
    stack = data.draw(st.booleans(), label="stack")
    count = data.draw(st.integers(1, 3), label="count")
    inputs = []
    for i in range(count):
        s = list(shape)
        if not stack:
            s[d] = data.draw(st.sampled_from((0, 1, 2, 3)), label=f"size{i}")
        inputs.append(draw_input(data, rng, tuple(s), label=f"x{i}"))
    note(f"{'stack' if stack else 'cat'} dim={d}: {describe(inputs)}")
    if stack:
        check(lambda *ts: torchic.stack(list(ts), d), lambda *a: np.stack(a, d), inputs, rng=rng)
    else:
        check(lambda *ts: torchic.cat(list(ts), d), lambda *a: np.concatenate(a, d), inputs,
              rng=rng)


@fuzz("casts")
def _casts(data, rng):
    x = draw_input(data, rng, draw_shape(data), grad=False, label="x",
                   values=lambda r, s: r.uniform(-50, 50, s))
    note(describe([x]))
    check(lambda t: t.long(), lambda a: a.astype(np.float32).astype(np.int64), [x],
          out_dtype=torchic.int64)
    check(lambda t: t.int(), lambda a: a.astype(np.float32).astype(np.int32), [x],
          out_dtype=torchic.int32)
    check(lambda t: t.long().float() * 1.5, lambda a: np.trunc(a.astype(np.float32)) * 1.5, [x])
    check(lambda t: (t.long() == t.long()), lambda a: np.ones(a.shape), [x])


# -- writes: fill, setitem, in-place arithmetic, copy_ ------------------------------------------
@fuzz("fill")
def _fill(data, rng):
    shape = draw_shape(data)
    value = data.draw(st.sampled_from((0.0, 1.0, -2.5, 1e30, 3)), label="value")
    how = data.draw(st.sampled_from(("full", "zeros", "ones", "fill_", "zero_", "full_like")),
                    label="how")
    x = draw_input(data, rng, shape, grad=False, allow_expand=False, label="x")
    note(f"{how} value={value}: {describe([x])}")
    if how in ("fill_", "zero_"):
        buf, v = x.make()
        v.zero_() if how == "zero_" else v.fill_(value)
        expect = x.buffer().astype(np.float32)
        expect[x.layout.slices()] = 0.0 if how == "zero_" else np.float32(value)
        np.testing.assert_array_equal(buf.numpy(), expect)   # padding (NaN) untouched
        return
    t = {"full": lambda: torchic.full(shape, value),
         "zeros": lambda: torchic.zeros(shape), "ones": lambda: torchic.ones(*shape),
         "full_like": lambda: torchic.full_like(x.make()[1], value)}[how]()
    ref = {"full": value, "zeros": 0, "ones": 1, "full_like": value}[how]
    want_dtype = torchic.int64 if how == "full" and isinstance(value, int) else torchic.float32
    assert t.dtype == want_dtype or how == "full_like"
    np.testing.assert_array_equal(t.numpy(), np.full(shape, ref, t.dtype.numpy))


def _draw_key(data, shape):
    key = []
    for i, s in enumerate(shape):
        kind = data.draw(st.sampled_from(("all", "slice", "int")), label=f"key{i}")
        if kind == "int" and s:
            key.append(data.draw(st.integers(-s, s - 1), label=f"int{i}"))
        elif kind == "slice":
            key.append(slice(data.draw(st.integers(0, 2), label=f"start{i}"), None,
                             data.draw(st.integers(1, 3), label=f"step{i}")))
        else:
            key.append(slice(None))
    return tuple(key)


@fuzz("setitem")
def _setitem(data, rng):
    shape = draw_shape(data, min_dims=1)
    x = draw_input(data, rng, shape, grad=False, allow_expand=False, label="x")
    key = _draw_key(data, shape)
    region = np.zeros(shape)[key].shape
    kind = data.draw(st.sampled_from(("scalar", "tensor", "array")), label="value")
    vshape = broadcast_partner(data, region, "value.shape")
    value_in = draw_input(data, rng, vshape, grad=False, label="v")
    note(f"t[{key}] = {kind}: {describe([x, value_in])}")
    buf, v = x.make()
    expect = x.buffer().astype(np.float32)
    view_np = expect[x.layout.slices() + (Ellipsis,)].transpose(np.argsort(x.layout.perm))
    if kind == "scalar":
        val = 1.25
        v[key] = val
        view_np[key] = val
    else:
        vv = value_in.make()[1]
        v[key] = vv if kind == "tensor" else vv.numpy()
        view_np[key] = value_in.array().astype(np.float32)
    np.testing.assert_array_equal(buf.numpy(), expect)


@fuzz("inplace")
def _inplace(data, rng):
    shape = draw_shape(data)
    x = draw_input(data, rng, shape, grad=False, allow_expand=False, label="x")
    op = data.draw(st.sampled_from(("add_", "sub_", "mul_", "div_", "copy_", "+=", "*=")),
                   label="op")
    other = draw_input(data, rng, broadcast_partner(data, shape, "other.shape"), "nonzero",
                       grad=False, label="other")
    note(f"{op}: {describe([x, other])}")
    buf, v = x.make()
    o = other.make()[1]
    expect = x.buffer().astype(np.float32)
    region = expect[x.layout.slices() + (Ellipsis,)].transpose(np.argsort(x.layout.perm))
    ov = other.array().astype(np.float32)
    if op == "+=":
        v += o
        region += ov
    elif op == "*=":
        v *= o
        region *= ov
    elif op == "copy_":
        v.copy_(o)
        region[...] = ov
    else:
        getattr(v, op)(o)
        np_op = {"add_": np.add, "sub_": np.subtract, "mul_": np.multiply, "div_": np.divide}[op]
        np_op(region, ov, out=region)
    close(buf.numpy(), expect.astype(np.float64), 1e-6, 1e-6, "in-place result")



# -- compositions ---------------------------------------------------------------------------
# steps: the unary / binary cases defined on all reals (exp left out: exp of exp overflows),
# plus a few compositions that keep values in range
COMPOSE_UNARY = {c.name: (c.fn, c.ref) for c in family("unary")
                 if c.domain_of(0) == "real" and c.name != "exp"}
COMPOSE_UNARY.update({
    "softplus": (lambda t: (t.exp() + 1).log(), lambda a: np.log(np.exp(a) + 1)),
    "exp_tanh": (lambda t: t.tanh().exp(), lambda a: np.exp(np.tanh(a))),
    "sqrt1p": (lambda t: (t * t + 1).sqrt(), lambda a: np.sqrt(a * a + 1)),
})
COMPOSE_BINARY = {c.name: (c.fn, c.ref) for c in family("binary")
                  if c.domain_of(0) == c.domain_of(1) == "real"}
COMPOSE_BINARY["div"] = (lambda a, b: a / (b * b + 1), lambda a, b: a / (b * b + 1))


def _compose_step(data, shape, n_leaves, rng, leaves):
    """One step of a random program on a value of `shape`."""
    nd = len(shape)
    kinds = ["unary", "binary", "unary", "binary"]
    if nd >= 1:
        kinds += ["reduce", "softmax", "matmul", "view", "slice"]
    kind = data.draw(st.sampled_from(kinds), label="step")
    if kind == "unary":
        name = data.draw(st.sampled_from(sorted(COMPOSE_UNARY)), label="unary")
        tf, nf = COMPOSE_UNARY[name]
        return name, (lambda t, ls: tf(t)), (lambda a, ls: nf(a)), None
    if kind == "binary":
        name = data.draw(st.sampled_from(sorted(COMPOSE_BINARY)), label="binary")
        lshape = broadcast_partner(data, shape, "leaf.shape")
        leaves.append(draw_input(data, rng, lshape, label=f"leaf{len(leaves)}"))
        j = len(leaves) - 1
        tf, nf = COMPOSE_BINARY[name]
        return f"{name}(leaf{j}{lshape})", (lambda t, ls: tf(t, ls[j])), \
            (lambda a, ls: nf(a, ls[j])), j
    if kind == "reduce":
        d = data.draw(st.integers(-nd, nd - 1), label="dim")
        keep = data.draw(st.booleans(), label="keepdim")
        name = data.draw(st.sampled_from(("sum", "mean", "amax")), label="reduce")
        if name == "amax" and shape[d] == 0:
            name = "sum"
        np_name = {"sum": "sum", "mean": "mean", "amax": "max"}[name]
        return (f"{name}({d}, keepdim={keep})", lambda t, ls: getattr(t, name)(d, keepdim=keep),
                lambda a, ls: getattr(a, np_name)(axis=d, keepdims=keep), None)
    if kind == "softmax":
        d = data.draw(st.integers(-nd, nd - 1), label="dim")
        log = data.draw(st.booleans(), label="log")
        return (f"{'log_' if log else ''}softmax({d})",
                lambda t, ls: t.log_softmax(d) if log else t.softmax(d),
                lambda a, ls: np_log_softmax(a, d) if log else np_softmax(a, d), None)
    if kind == "matmul":
        n = data.draw(st.integers(1, 3), label="n")
        leaves.append(draw_input(data, rng, (shape[-1], n), "unit", label=f"w{len(leaves)}"))
        j = len(leaves) - 1
        return f"@ leaf{j}({shape[-1]}, {n})", (lambda t, ls: t @ ls[j]), \
            (lambda a, ls: a @ ls[j]), j
    if kind == "slice":
        d = data.draw(st.integers(0, nd - 1), label="dim")
        step = data.draw(st.integers(1, 2), label="step")
        key = (slice(None),) * d + (slice(None, None, step),)
        return f"[{key}]", (lambda t, ls: t[key]), (lambda a, ls: a[key]), None
    desc, tf, nf = _draw_view_step(data, shape)
    return desc, (lambda t, ls: tf(t)), (lambda a, ls: nf(a)), None


@fuzz("compose")
def _compose(data, rng):
    x = draw_input(data, rng, draw_shape(data, max_dims=3), label="leaf0")
    leaves = [x]
    program, shape = [], x.layout.shape
    for _ in range(data.draw(st.integers(2, 5), label="length")):
        desc, tf, nf, _ = _compose_step(data, shape, len(leaves), rng, leaves)
        probe = [np.zeros(leaf.layout.shape) for leaf in leaves]
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            shape = np.asarray(nf(np.zeros(shape), probe)).shape
        program.append((desc, tf, nf))
    note(" -> ".join(p[0] for p in program) + f"\nleaves: {describe(leaves)}")

    def tc_fn(*ts):
        t = ts[0]
        for _, tf, _ in program:
            t = tf(t, ts)
        return t

    def np_fn(*arrays):
        a = arrays[0]
        for _, _, nf in program:
            a = nf(a, arrays)
        return a
    check(tc_fn, np_fn, leaves, rng=rng, atol=1e-4, grad_atol=2e-4)


# -- the tests ------------------------------------------------------------------------------
def run_fuzz(backend, name):
    example = FUZZ_OPS[name]

    @fuzz_settings(backend)
    @given(data=st.data())
    def run(data):
        rng = draw_rng(data)
        example(data, rng)
    run()
    torchic.sync()


@pytest.mark.parametrize("name", sorted(FUZZ_OPS))
def test_fuzz(backend, name):
    run_fuzz(backend, name)


def test_fuzz_table_covers_every_primitive_op():
    """Every primitive op of ops.py is reached by at least one fuzzed op (recorded)."""
    from torchic import ops
    import coverage_record
    torchic.init("workers")     # which primitives an op issues does not depend on the backend
    covered = set().union(*coverage_record.fuzz_coverage().values())
    integer_only = {name for name, sigs in ops.SIGNATURES.items()   # bitwise, shifts: exact,
                    if not any(c in ("f32", "f64")                   # the int rows of cases.py
                               for ins, out in sigs for c in (*ins, out))}
    missing = [op for op in ops.ALL_OPS if op not in covered | integer_only]
    assert not missing, f"primitive ops no fuzz test reaches: {missing}"
    assert integer_only == {"bitwise_and", "bitwise_or", "bitwise_xor", "shift_left",
                            "shift_right"}

