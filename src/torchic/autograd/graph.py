"""torch.autograd.graph: what programs see of the recorded graph.

A tensor's `grad_fn` is a `Node`: `name()` (``MulBackward0``), `next_functions` (one
``(node, 0)`` per input: the input's grad_fn, an AccumulateGrad holding a leaf, or None),
`metadata` (a dict), `register_prehook(fn(grad_outputs))` and
`register_hook(fn(grad_inputs, grad_outputs))`. (An AccumulateGrad is made afresh each time
next_functions is read: hook a leaf with Tensor.register_hook or
register_post_accumulate_grad_hook instead.)
"""

from typing import NamedTuple

from ..tensor import Tensor
from .engine import AccumulateGrad, Primitive

Node = Primitive


class GradientEdge(NamedTuple):
    """Where a tensor's gradient goes: its grad_fn (or an AccumulateGrad for a leaf) and
    the output number (always 0 in torchic: a node has one output per edge)."""

    node: object
    output_nr: int


def get_gradient_edge(tensor: Tensor) -> GradientEdge:
    """The GradientEdge of `tensor` (which must require grad)."""
    if not tensor.requires_grad:
        raise RuntimeError("It is not possible to get the gradient edge for a Tensor that "
                           "does not require gradients")
    node = tensor.grad_fn if tensor.grad_fn is not None else AccumulateGrad(tensor)
    return GradientEdge(node, 0)
