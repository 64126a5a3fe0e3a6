"""torch.autograd.functional: derivatives of a whole function (jacobian, hessian, vjp, jvp,
hvp, vhp), built on `autograd.grad`.

Each takes `func` and `inputs` (a Tensor or a tuple of Tensors); the inputs are detached
copies that require grad (with create_graph, inputs that require grad stay connected), so
the results can themselves be differentiated when `create_graph=True`. Reverse mode only:
a Jacobian costs one backward pass per output element, and jvp / hvp use the double-vjp
trick (the vjp is linear in its vector, so its own vjp is the jvp).
"""

from typing import Any, Callable

import numpy as np

from ..api import stack
from ..creation import tensor as _tensor, zeros
from ..tensor import Tensor
from .api import grad as _grad


def _as_tuple(x, what, fn_name):
    if isinstance(x, Tensor):
        return False, (x,)
    if isinstance(x, (tuple, list)) and all(isinstance(t, Tensor) for t in x):
        return True, tuple(x)
    raise TypeError(f"The {what} given to {fn_name} must be either a Tensor or a tuple of "
                    f"Tensors but the given {what} has type {type(x).__name__}.")


def _prepare(inputs, create_graph):
    return tuple(x.reshape(x.shape) if create_graph and x.requires_grad
                 else x.detach().requires_grad_(x.is_floating_point()) for x in inputs)


def _finish(x, create_graph):
    if isinstance(x, tuple):
        return tuple(_finish(t, create_graph) for t in x)
    return x if create_graph or x is None else x.detach()


def _call(func, inputs, fn_name):
    out = func(*inputs)
    return _as_tuple(out, "outputs of the user-provided function", fn_name)


def _inputs_and_v(inputs, v, fn_name):
    """(whether inputs was a tuple, the inputs as one, v's tensors) of a product with the
    inputs' vector v: v None only where the input is one single-element tensor."""
    tup_in, inputs = _as_tuple(inputs, "inputs", fn_name)
    if v is None:
        if len(inputs) != 1 or inputs[0].numel() != 1:
            raise RuntimeError("The vector v can only be None if the input to the "
                               "user-provided function is a single Tensor with a single "
                               "element.")
        return tup_in, inputs, (None,)
    return tup_in, inputs, _as_tuple(v, "v", fn_name)[1]


def _grads(outputs, inputs, grad_outputs, create_graph, strict, fn_name):
    """d outputs / d inputs contracted with grad_outputs: zeros for unused inputs
    (strict: RuntimeError)."""
    live = [(o, g) for o, g in zip(outputs, grad_outputs) if o.requires_grad]
    found = [None] * len(inputs)
    if live:
        found = list(_grad([o for o, _ in live], inputs, [g for _, g in live],
                           retain_graph=True, create_graph=create_graph, allow_unused=True))
    out = []
    for i, (x, g) in enumerate(zip(inputs, found)):
        if g is None:
            if strict:
                raise RuntimeError(f"The output of the user-provided function is independent "
                                   f"of input {i}. This is not allowed in strict mode.")
            g = zeros(x.shape, dtype=x.dtype)
        out.append(g)
    return tuple(out)


def vjp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple:
    """The vector-Jacobian product v^T J of `func` at `inputs`.

    Returns:
        (func(inputs), vjp): vjp has the inputs' structure.

    Example:
        >>> out, g = torchic.autograd.functional.vjp(lambda x: x ** 2, x, torchic.ones(3))
    """
    tup_in, inputs = _as_tuple(inputs, "inputs", "vjp")
    inputs = _prepare(inputs, create_graph)
    tup_out, outputs = _call(func, inputs, "vjp")
    if v is None:
        if len(outputs) != 1 or outputs[0].numel() != 1:
            raise RuntimeError("The vector v can only be None if the user-provided function "
                               "returns a single Tensor with a single element.")
        vs = (None,)
    else:
        _, vs = _as_tuple(v, "v", "vjp")
        if len(vs) != len(outputs):
            raise RuntimeError(f"v has {len(vs)} tensors but the function returned "
                               f"{len(outputs)}")
    res = _grads(outputs, inputs, vs, create_graph, strict, "vjp")
    outputs = _finish(outputs, create_graph)
    return (outputs if tup_out else outputs[0]), _finish(res if tup_in else res[0], create_graph)


def jvp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple:
    """The Jacobian-vector product J v of `func` at `inputs` (the double-vjp trick).

    Returns:
        (func(inputs), jvp): jvp has the outputs' structure.
    """
    tup_in, inputs, vs = _inputs_and_v(inputs, v, "jvp")
    inputs = _prepare(inputs, create_graph)
    tup_out, outputs = _call(func, inputs, "jvp")
    us = tuple(zeros(o.shape, dtype=o.dtype).requires_grad_(True) for o in outputs)
    g = _grads(outputs, inputs, us, True, strict, "jvp")
    live = [(t, w) for t, w in zip(g, vs) if t.requires_grad]
    res = [None] * len(us)
    if live:
        res = _grad([t for t, _ in live], us, [w for _, w in live], retain_graph=True,
                    create_graph=create_graph, allow_unused=True)
    res = tuple(zeros(o.shape, dtype=o.dtype) if r is None else r for o, r in zip(outputs, res))
    outputs = _finish(outputs, create_graph)
    return (outputs if tup_out else outputs[0]), _finish(res if tup_out else res[0],
                                                         create_graph)


def _one_hot(shape, j, dtype):
    e = np.zeros(int(np.prod(shape, dtype=np.int64)), dtype=np.float64)
    e[j] = 1.0
    return _tensor(e.reshape(shape), dtype=dtype)


def jacobian(func: Callable, inputs: Any, create_graph: bool = False, strict: bool = False,
             vectorize: bool = False, strategy: str = "reverse-mode") -> Any:
    """The Jacobian of `func` at `inputs`: for output i and input j, a tensor of shape
    outputs[i].shape + inputs[j].shape (a tensor, a tuple, or a tuple of tuples, as the
    structures of func's outputs and of inputs say).

    Example:
        >>> torchic.autograd.functional.jacobian(lambda x: x ** 2, torchic.tensor([1., 2.]))
        tensor([[2., 0.],
                [0., 4.]])
    """
    if strategy not in ("reverse-mode", "forward-mode"):
        raise ValueError('Expected strategy to be either "forward-mode" or "reverse-mode".')
    tup_in, inputs = _as_tuple(inputs, "inputs", "jacobian")
    inputs = _prepare(inputs, create_graph)
    tup_out, outputs = _call(func, inputs, "jacobian")
    rows = []
    for o in outputs:
        per_input = [[] for _ in inputs]
        for j in range(o.numel()):
            for k, g in enumerate(_grads((o,), inputs, (_one_hot(o.shape, j, o.dtype),),
                                         create_graph, strict, "jacobian")):
                per_input[k].append(g)
        jac = []
        for x, gs in zip(inputs, per_input):
            if gs:
                jac.append(stack(gs).reshape(o.shape + x.shape))
            else:
                jac.append(zeros(o.shape + x.shape, dtype=x.dtype))
        rows.append(tuple(_finish(t, create_graph) for t in jac))
    if tup_out:
        return tuple(r if tup_in else r[0] for r in rows)
    return rows[0] if tup_in else rows[0][0]


def hessian(func: Callable, inputs: Any, create_graph: bool = False, strict: bool = False,
            vectorize: bool = False, outer_jacobian_strategy: str = "reverse-mode") -> Any:
    """The Hessian of the scalar function `func` at `inputs`: inputs[i].shape +
    inputs[j].shape blocks (a tensor for one input, a tuple of tuples for several).

    Example:
        >>> torchic.autograd.functional.hessian(lambda x: (x ** 3).sum(), torchic.tensor([1., 2.]))
        tensor([[ 6.,  0.],
                [ 0., 12.]])
    """
    tup_in, inputs = _as_tuple(inputs, "inputs", "hessian")

    def gradient(*xs):
        _, out = _call(func, xs, "hessian")
        if len(out) != 1 or out[0].numel() != 1:
            raise RuntimeError("The Tensor returned by the function given to hessian should "
                               "contain a single element")
        return _grads((out[0].reshape(()),), xs, (None,), True, strict, "hessian")

    res = jacobian(gradient, inputs, create_graph=create_graph, strict=strict)
    return res if tup_in else res[0][0] if isinstance(res[0], tuple) else res[0]


def vhp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple:
    """v^T H for the scalar function `func` at `inputs`: (func(inputs), vhp)."""
    tup_in, inputs, vs = _inputs_and_v(inputs, v, "vhp")
    inputs = _prepare(inputs, create_graph)
    _, outputs = _call(func, inputs, "vhp")
    if len(outputs) != 1 or outputs[0].numel() != 1:
        raise RuntimeError("The function given in vhp should return a single element Tensor")
    g = _grads(outputs, inputs, (None,), True, strict, "vhp")
    res = _grads(g, inputs, vs, create_graph, strict, "vhp")
    return _finish(outputs[0], create_graph), _finish(res if tup_in else res[0], create_graph)


def hvp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple:
    """H v for the scalar function `func` at `inputs`: (func(inputs), hvp). The Hessian
    of a twice continuously differentiable function is symmetric, so H v = (v^T H)^T."""
    return vhp(func, inputs, v, create_graph, strict)
