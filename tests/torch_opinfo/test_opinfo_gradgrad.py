"""Second derivatives against torch over op_db: every entry of the baseline (passing.txt)
whose OpInfo says torch supports gradgrad, on its float32 samples.

For each sample: L = sum_k(out_k * w_k) (w fixed random cotangents), the first gradients
g = grad(L, leaves, create_graph=True), then the Hessian-vector product
grad(sum_j(g_j * v_j), leaves) (v fixed random), by torch and by torchic on the same inputs
and vectors; they must agree (GRAD_ATOL times the inputs' scale, rtol 1e-3: two chained
backward passes in float32). Entries listed in GRADGRAD_FAILING are expected to fail
(strict: one that passes must leave the list).

    TORCHIC_TEST_BACKENDS=workers python -m pytest tests/torch_opinfo/test_opinfo_gradgrad.py -q
    python tests/torch_opinfo/test_opinfo_gradgrad.py        # the survey: each entry's status
"""

import os
import sys

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("expecttest")   # op_db's module imports it

import torch  # noqa: E402

import torchic  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import opinfo_harness as h  # noqa: E402

RTOL = 1e-3
# baseline entries whose second derivatives torchic does not match yet (entry -> why)
GRADGRAD_FAILING = {
    "i0": "its derivative i1 is a series composite whose own derivative is not recorded",
    "nn.functional.normalize": "float32 rounding of the recorded norm's backward (3e-4)",
    "norm:nuc": "the nuclear norm reads singular vectors on the host: no second derivative",
    "linalg.norm": "the spectral / nuclear norms read singular vectors on the host",
    "linalg.norm:subgradients_at_zero": "the p-norm's zero subgradient has no recorded "
                                        "second derivative (NaN)",
    "linalg.matrix_norm": "the spectral / nuclear norms read singular vectors on the host",
}


def _baseline():
    with open(os.path.join(HERE, "passing.txt")) as f:
        return [line.strip() for line in f if line.strip() and not line.startswith("#")]


def _vectors(grads, seed):
    rng = np.random.default_rng(seed + 1000)
    return [None if g is None else rng.standard_normal(tuple(g.shape)).astype(np.float32)
            for g in grads]


def _torch_second(fn, sample, index):
    """(cotangents, v, torch's Hessian-vector products) or None (nothing to check)."""
    try:
        value = h._call(fn, sample.input, sample.args, sample.kwargs)
    except Exception:
        return None
    outs = h._flat(value)
    cot = h._cotangents(outs, index)
    leaves = [t for t in h._flat([sample.input, list(sample.args),
                                  list(sample.kwargs.values())])
              if isinstance(t, torch.Tensor) and t.requires_grad]
    pairs = [(o, torch.from_numpy(w).to(o.dtype)) for o, w in zip(outs, cot) if w is not None]
    if not pairs or not leaves:
        return None
    try:
        grads = torch.autograd.grad([o for o, _ in pairs], leaves, [w for _, w in pairs],
                                    create_graph=True, allow_unused=True)
    except Exception:
        return None
    v = _vectors(grads, index)
    terms = [(g * torch.from_numpy(x)).sum() for g, x in zip(grads, v)
             if g is not None and g.requires_grad]
    if not terms:
        return None
    try:
        second = torch.autograd.grad(sum(terms), leaves, allow_unused=True)
    except Exception:
        return None
    return cot, v, [None if s is None else s.detach() for s in second]


def _torchic_second(tc, sample, cot, v, holds):
    conv = h.Converted(holds)
    inp = h.to_torchic(sample.input, conv)
    args = h.to_torchic(list(sample.args), conv)
    kwargs = h.to_torchic(dict(sample.kwargs), conv)
    outs = h._flat(h._call(tc, inp, args, kwargs))
    leaves = [t for _, t in conv.leaves]
    pairs = [(o, torchic.tensor(w, dtype=o.dtype)) for o, w in zip(outs, cot) if w is not None]
    grads = torchic.autograd.grad([o for o, _ in pairs], leaves, [w for _, w in pairs],
                                  create_graph=True, allow_unused=True)
    terms = [(g * torchic.tensor(x)).sum() for g, x in zip(grads, v)
             if g is not None and g.requires_grad]
    if not terms:
        return conv, [None] * len(leaves)
    total = terms[0]
    for t in terms[1:]:
        total = total + t
    return conv, list(torchic.autograd.grad(total, leaves, allow_unused=True))


def run_entry(op):
    """'pass', 'skip' or a line saying what differs first, on the current backend."""
    if not (op.supports_autograd and op.supports_gradgrad):
        return "skip"
    found = [(k, fn, tc) for k, fn, tc in h.variants(op) if k != "inplace"]
    if not found:
        return "skip"
    _, fn, tc = found[0]
    holds = h.held()
    ran = 0
    for i, sample in enumerate(h._samples(op, torch.float32)):
        ref = _torch_second(fn, sample, i)
        if ref is None:
            continue
        cot, v, want = ref
        try:
            conv, got = _torchic_second(tc, sample, cot, v, holds)
        except h.Unsupported:
            continue
        except Exception as e:
            return f"sample {i}: {type(e).__name__}: {str(e)[:300]}"
        for k, (w, g) in enumerate(zip(want, got)):
            if w is None and g is None:
                continue
            wv = np.zeros(tuple(g.shape)) if w is None else \
                w.numpy(force=True).astype(np.float64)
            gv = np.zeros(wv.shape) if g is None else g.detach().numpy().astype(np.float64)
            tol = h.GRAD_ATOL * conv.scale * conv.scale
            if gv.shape != wv.shape or not np.allclose(gv, wv, rtol=RTOL, atol=tol,
                                                       equal_nan=True):
                err = np.max(np.abs(gv - wv)) if gv.shape == wv.shape else "shape"
                return f"sample {i}: second derivative of input {k} differs (max {err})"
        ran += 1
    torchic.sync()
    return "pass" if ran else "skip"


def _entries():
    listed = set(_baseline())
    return [op for op in h.op_db() if h.entry_id(op) in listed]


def _params():
    # the baseline's ids (test_opinfo checks that each names an op_db entry): op_db loads at
    # the first test, not at collection, which every run of the suite would wait 4 s for
    out = []
    for eid in _baseline():
        reason = GRADGRAD_FAILING.get(eid)
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
        out.append(pytest.param(eid, id=eid, marks=marks))
    return out


@pytest.mark.parametrize("eid", _params())
def test_second_derivatives_match_torch(backend, eid):
    if backend == "webgpu" and not h.in_webgpu_sample(eid) and not h.full_walk():
        pytest.skip("webgpu walks 1 entry in 3 (TORCHIC_OPINFO=full: all)")
    op = next(op for op in h.op_db() if h.entry_id(op) == eid)
    status = run_entry(op)
    assert status in ("pass", "skip"), f"{eid}: {status}"


if __name__ == "__main__":
    for backend in sys.argv[1:] or ["workers"]:
        torchic.init(backend=backend)
        for op in _entries():
            print(backend, h.entry_id(op), run_entry(op))
