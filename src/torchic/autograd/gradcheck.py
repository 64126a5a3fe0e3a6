"""torch.autograd.gradcheck / gradgradcheck: analytical gradients against finite differences.

gradcheck compares, for every input that requires grad and every output, the Jacobian
backward gives (one pass per output element, `autograd.grad`) with the central-difference
one, (f(x + eps) - f(x - eps)) / 2 eps per input element: they must agree within
atol + rtol * |numerical|. Use float64 inputs (float32 differences are too coarse at eps
1e-6). gradgradcheck does the same for the gradient itself (create_graph=True): it checks
the second derivatives.
"""

from typing import Any, Callable

import numpy as np

from ..creation import tensor as _tensor
from ..tensor import Tensor
from .api import grad as _grad


class GradcheckError(RuntimeError):
    """What gradcheck raises when the gradients do not match (a RuntimeError)."""


def _outputs(out):
    outs = out if isinstance(out, (tuple, list)) else (out,)
    return [o for o in outs if isinstance(o, Tensor)]


def _numerical(func, inputs, k, eps):
    """d outputs / d inputs[k] by central differences: one array per output,
    (output numel, input numel)."""
    x = inputs[k]
    base = x.detach().numpy().astype(np.float64)
    flat = base.reshape(-1)
    cols = []
    for j in range(flat.size):       # (grad mode as it is: func may differentiate inside)
        vals = []
        for step in (eps, -eps):
            pert = flat.copy()
            pert[j] += step
            args = list(inputs)
            args[k] = _tensor(pert.reshape(base.shape), dtype=x.dtype,
                              requires_grad=x.requires_grad)
            vals.append([o.detach().numpy().astype(np.float64).reshape(-1)
                         for o in _outputs(func(*args))])
        cols.append([(p - m) / (2 * eps) for p, m in zip(*vals)])
    n_out = len(cols[0]) if cols else len(_outputs(func(*inputs)))
    return [np.stack([c[i] for c in cols], axis=1) if cols else None for i in range(n_out)]


def _analytical(func, inputs, k):
    """d outputs / d inputs[k] from backward, one array per output."""
    x = inputs[k]
    outs = _outputs(func(*inputs))
    res = []
    for o in outs:
        jac = np.zeros((o.numel(), x.numel()))
        if o.requires_grad:
            for i in range(o.numel()):
                e = np.zeros(o.numel())
                e[i] = 1.0
                (g,) = _grad([o], [x], [_tensor(e.reshape(o.shape), dtype=o.dtype)],
                             retain_graph=True, allow_unused=True)
                if g is not None:
                    jac[i] = g.detach().numpy().astype(np.float64).reshape(-1)
        res.append(jac)
    return res


def gradcheck(func: Callable, inputs: Any, *, eps: float = 1e-6, atol: float = 1e-5,
              rtol: float = 1e-3, raise_exception: bool = True, nondet_tol: float = 0.0,
              check_undefined_grad: bool = True, check_grad_dtypes: bool = False,
              check_batched_grad: bool = False, check_batched_forward_grad: bool = False,
              check_forward_ad: bool = False, check_backward_ad: bool = True,
              fast_mode: bool = False, masked: bool | None = None) -> bool:
    """Check the gradients backward computes for `func` at `inputs` against finite
    differences (PyTorch's torch.autograd.gradcheck), for every input that requires grad.

    Returns:
        True when they match; otherwise raises GradcheckError (a RuntimeError), or returns
        False with raise_exception=False.

    Example:
        >>> x = torchic.randn(3, dtype=torchic.float64, requires_grad=True)
        >>> torchic.autograd.gradcheck(lambda t: (t.sin() * t).sum(), (x,))
        True
    """
    inputs = tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,)
    if not any(isinstance(x, Tensor) and x.requires_grad for x in inputs):
        raise ValueError("gradcheck expects at least one input tensor to require gradient, "
                         "but none of the them have requires_grad=True.")
    for k, x in enumerate(inputs):
        if not (isinstance(x, Tensor) and x.requires_grad):
            continue
        num = _numerical(func, inputs, k, eps)
        ana = _analytical(func, inputs, k)
        for i, (n, a) in enumerate(zip(num, ana)):
            if n is None:
                continue
            if not np.allclose(a, n, rtol=rtol, atol=atol):
                if not raise_exception:
                    return False
                raise GradcheckError(f"Jacobian mismatch for output {i} with respect to input "
                                     f"{k},\nnumerical:{n}\nanalytical:{a}\n")
    return True


def gradgradcheck(func: Callable, inputs: Any, grad_outputs: Any = None, *,
                  eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
                  gen_non_contig_grad_outputs: bool = False, raise_exception: bool = True,
                  nondet_tol: float = 0.0, check_undefined_grad: bool = True,
                  check_grad_dtypes: bool = False, check_batched_grad: bool = False,
                  check_fwd_over_rev: bool = False, check_rev_over_rev: bool = True,
                  fast_mode: bool = False, masked: bool = False) -> bool:
    """Check second derivatives: gradcheck of (inputs, grad_outputs) -> the gradients of
    `func`'s outputs (contracted with grad_outputs) with respect to its inputs, computed
    with create_graph=True (PyTorch's torch.autograd.gradgradcheck). grad_outputs default to
    fixed random values of the outputs' shapes (float64: seed 0).
    """
    inputs = tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,)
    outs = _outputs(func(*inputs))
    if grad_outputs is None:
        rng = np.random.default_rng(0)
        grad_outputs = tuple(_tensor(rng.standard_normal(o.shape), dtype=o.dtype,
                                     requires_grad=True) for o in outs)
    else:
        grad_outputs = tuple(grad_outputs) if isinstance(grad_outputs, (tuple, list)) \
            else (grad_outputs,)
    n = len(inputs)
    wrt = [k for k, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]

    def first_derivative(*args):
        xs, gs = args[:n], args[n:]
        outs = _outputs(func(*xs))
        live = [(o, g) for o, g in zip(outs, gs) if o.requires_grad]
        grads = _grad([o for o, _ in live], [xs[k] for k in wrt], [g for _, g in live],
                      create_graph=True, allow_unused=True)
        return tuple(g for g in grads if g is not None)

    return gradcheck(first_derivative, inputs + grad_outputs, eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception)
