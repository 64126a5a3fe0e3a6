"""torch.autograd's entry points: `backward` and `grad` (over engine.run)."""

from typing import Sequence

from ..creation import zeros
from ..tensor import Tensor
from .engine import run as _run

_TensorOrTensors = Tensor | Sequence[Tensor]


def _tensors(x, what):
    if isinstance(x, Tensor):
        return [x]
    if isinstance(x, (list, tuple)):
        for t in x:
            if not isinstance(t, Tensor):
                raise TypeError(f"{what} must be Tensors, got {type(t).__name__}")
        return list(x)
    raise TypeError(f"{what} must be a Tensor or a sequence of Tensors, got "
                    f"{type(x).__name__}")


def _gradients(grad_tensors, n):
    if grad_tensors is None:
        return [None] * n
    grads = [grad_tensors] if isinstance(grad_tensors, Tensor) else list(grad_tensors)
    if len(grads) != n:
        raise RuntimeError(f"Mismatch in length: {n} outputs but {len(grads)} grad_outputs")
    return grads


def backward(tensors: _TensorOrTensors, grad_tensors: _TensorOrTensors | None = None,
             retain_graph: bool | None = None, create_graph: bool = False,
             inputs: _TensorOrTensors | None = None) -> None:
    """Accumulate the gradients of `tensors` into the leaves' `.grad` (PyTorch's
    torch.autograd.backward): the sum over tensors of d tensor / d leaf, each seeded with
    its grad_tensors entry (None: ones, for a one-element tensor).

    Args:
        tensors: the tensors to differentiate.
        grad_tensors: the gradient of each (a Tensor, or None where it has one element).
        retain_graph: keep the graph for another pass (default: create_graph).
        create_graph: record the pass, so the gradients can be differentiated again.
        inputs: accumulate only into these tensors' .grad (leaves or not).

    Example:
        >>> x = torchic.tensor([1.0, 2.0], requires_grad=True)
        >>> torchic.autograd.backward([(x * x).sum()])
        >>> x.grad
        tensor([2., 4.])
    """
    tensors = _tensors(tensors, "tensors")
    targets = None if inputs is None else _tensors(inputs, "inputs")
    if targets is not None and not targets:
        raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
    _run(tensors, _gradients(grad_tensors, len(tensors)), retain_graph, create_graph, targets)


def grad(outputs: _TensorOrTensors, inputs: _TensorOrTensors,
         grad_outputs: _TensorOrTensors | None = None, retain_graph: bool | None = None,
         create_graph: bool = False, only_inputs: bool = True, allow_unused: bool | None = None,
         is_grads_batched: bool = False, materialize_grads: bool = False) -> tuple:
    """The gradients of `outputs` with respect to `inputs`, returned (PyTorch's
    torch.autograd.grad); no `.grad` is touched.

    Args:
        outputs: the tensors to differentiate.
        inputs: the tensors to differentiate with respect to (leaves or not).
        grad_outputs: the gradient of each output (None: ones, for one-element outputs).
        retain_graph: keep the graph for another pass (default: create_graph).
        create_graph: record the pass, so the gradients can be differentiated again
            (gradient penalties, Hessian-vector products).
        allow_unused: return None (or zeros, with materialize_grads) for an input the
            outputs do not depend on, instead of raising.
        materialize_grads: zeros instead of None for unused inputs.
        is_grads_batched: each grad_outputs tensor carries a leading batch dim; the result
            has it too (one backward pass per batch element: rows of a Jacobian).

    Returns:
        a tuple with one gradient per input.

    Example:
        >>> x = torchic.tensor(3.0, requires_grad=True)
        >>> (g,) = torchic.autograd.grad(x ** 3, x, create_graph=True)
        >>> torchic.autograd.grad(g, x)       # d2/dx2 x^3 = 6x
        (tensor(18.),)
    """
    if is_grads_batched:
        return _batched(outputs, inputs, grad_outputs, retain_graph, create_graph,
                        allow_unused, materialize_grads)
    if allow_unused is None:
        allow_unused = materialize_grads
    elif materialize_grads and not allow_unused:
        raise ValueError("Expected allow_unused to be True or not passed when "
                         "materialize_grads=True, but got: allow_unused=False.")
    outs = _tensors(outputs, "outputs")
    ins = _tensors(inputs, "inputs")
    found = _run(outs, _gradients(grad_outputs, len(outs)), retain_graph, create_graph, ins,
                 capture=True)
    result = []
    for x, g in zip(ins, found):
        if g is None:
            if not allow_unused:
                raise RuntimeError("One of the differentiated Tensors appears to not have been "
                                   "used in the graph. Set allow_unused=True if this is the "
                                   "desired behavior.")
            if materialize_grads:
                g = zeros(x.shape, dtype=x.dtype)
        elif g.shape != x.shape:
            g = g.reshape(x.shape)
        result.append(g)
    return tuple(result)


def _batched(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused,
             materialize_grads):
    """grad(is_grads_batched=True): each grad_outputs tensor has a leading batch dim; one
    pass per batch element (PyTorch vmaps them), results stacked along a new first dim."""
    outs = _tensors(outputs, "outputs")
    ins = _tensors(inputs, "inputs")
    gos = _tensors(grad_outputs, "grad_outputs") if grad_outputs is not None else []
    if len(gos) != len(outs):
        raise RuntimeError("grad(is_grads_batched=True) needs a grad_outputs tensor per output")
    n = gos[0].shape[0] if gos and gos[0].ndim else 0
    if any(g.ndim == 0 or g.shape[0] != n for g in gos):
        raise RuntimeError("grad(is_grads_batched=True): every grad_outputs tensor needs the "
                           "same leading batch dimension")
    per = [grad(outs, ins, [g[b] for g in gos], retain_graph=True if b < n - 1 else
                retain_graph, create_graph=create_graph, allow_unused=allow_unused,
                materialize_grads=materialize_grads) for b in range(n)]
    result = []
    for k, x in enumerate(ins):
        if not per or per[0][k] is None:
            result.append(None)
            continue
        out = zeros((n,) + tuple(x.shape), dtype=x.dtype)
        for b in range(n):
            out[b] = per[b][k]
        result.append(out)
    return tuple(result)
