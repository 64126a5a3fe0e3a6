"""check_op: compare one torchic op (values and gradients) with a NumPy float64 reference.

The inputs are drawn in float64, rounded to float32 (what torchic holds),
and the reference runs on the rounded values in float64. Gradients are the
torchic gradients of sum(f(x) * w) for a random w, compared with central
finite differences of the float64 reference.
"""

import numpy as np

import torchic

LAYOUTS = ("contiguous", "transposed", "strided")


def make_input(array64, layout, requires_grad):
    """A torchic tensor holding array64 (float32) laid out as asked.

    Returns (tensor used as op input, tensor whose .grad to compare).
    """
    a32 = array64.astype(np.float32)
    if layout == "contiguous" or a32.ndim < 2 and layout != "strided":
        t = torchic.tensor(a32, requires_grad=requires_grad)
        return t, t
    if layout == "transposed":
        base = torchic.tensor(np.ascontiguousarray(a32.T), requires_grad=requires_grad)
        view = base.permute(tuple(reversed(range(a32.ndim))))
    elif layout == "strided":
        # every other element along the last axis of a bigger buffer
        big = np.zeros(a32.shape[:-1] + (a32.shape[-1] * 2 + 1,), np.float32) if a32.ndim \
            else np.zeros((3,), np.float32)
        if a32.ndim:
            big[..., 1::2] = a32
            base = torchic.tensor(big, requires_grad=requires_grad)
            view = base[..., 1::2]
        else:
            big[1] = a32
            base = torchic.tensor(big, requires_grad=requires_grad)
            view = base[1]
    else:
        raise ValueError(layout)
    if requires_grad:
        view.retain_grad()
    return view, view


def numeric_grad(fn, arrays, index, w, eps=1e-6):
    x = arrays[index]
    grad = np.zeros_like(x)
    if x.size == 0:
        return grad
    it = np.nditer(x, flags=["multi_index"])
    for _ in it:
        i = it.multi_index
        orig = x[i]
        x[i] = orig + eps
        plus = np.sum(fn(*arrays) * w)
        x[i] = orig - eps
        minus = np.sum(fn(*arrays) * w)
        x[i] = orig
        grad[i] = (plus - minus) / (2 * eps)
    return grad


def check_op(tc_fn, np_fn, shapes=None, arrays=None, grad=True, low=-2.0, high=2.0,
             layout="contiguous", atol=1e-5, rtol=1e-4, grad_atol=1e-3, grad_rtol=1e-3,
             seed=0):
    rng = np.random.default_rng(seed)
    if arrays is None:
        arrays = [rng.uniform(low, high, s) for s in shapes]
    arrays = [np.asarray(a, dtype=np.float64).astype(np.float32).astype(np.float64)
              for a in arrays]
    inputs = [make_input(a, layout, grad) for a in arrays]
    out = tc_fn(*[i[0] for i in inputs])
    ref = np.asarray(np_fn(*[a.copy() for a in arrays]), dtype=np.float64)
    got = out.numpy()
    assert got.shape == ref.shape, f"shape {got.shape} != reference {ref.shape}"
    np.testing.assert_allclose(got, ref, atol=atol, rtol=rtol, err_msg="forward")
    if not grad:
        return out
    w = rng.standard_normal(ref.shape)
    (out * torchic.tensor(w.astype(np.float32))).sum().backward()
    for k, (_, holder) in enumerate(inputs):
        expected = numeric_grad(np_fn, [a.copy() for a in arrays], k, w)
        assert holder.grad is not None, f"input {k} got no gradient"
        np.testing.assert_allclose(holder.grad.numpy(), expected, atol=grad_atol,
                                   rtol=grad_rtol, err_msg=f"gradient of input {k}")
    return out
