"""Gradient clipping, computed on the device: no read unless error_if_nonfinite asks for one.

clip_grad_norm_ scales every gradient by min(1, max_norm / (total_norm + 1e-6)) as PyTorch
does (a multiply by a device scalar, so no host sync), and returns total_norm, the norm of
all the gradients taken together as one vector.
"""

import math
from collections.abc import Iterable

from ... import api
from ...autograd import no_grad
from ...creation import tensor as _tensor
from ...tensor import Tensor


def _grads(parameters):
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    return [p.grad for p in parameters if p.grad is not None]


def get_total_norm(tensors: Tensor | Iterable[Tensor], norm_type: float = 2.0,
                   error_if_nonfinite: bool = False, foreach: bool | None = None) -> Tensor:
    """The norm_type-norm of the tensors taken together as one vector (a 0-d tensor)."""
    if isinstance(tensors, Tensor):
        tensors = [tensors]
    tensors = list(tensors)
    norm_type = float(norm_type)
    if not tensors:
        return _tensor(0.0)
    with no_grad():
        if math.isinf(norm_type):
            pick = api.amax if norm_type > 0 else api.amin
            norms = [pick(api.abs(g)) if g.numel() else _tensor(0.0 if norm_type > 0 else
                                                               float("inf")) for g in tensors]
            total = pick(api.stack(norms))
        elif norm_type == 2.0:
            total = api.stack([(g * g).sum() for g in tensors]).sum().sqrt()
        else:
            powered = [(api.abs(g) ** norm_type).sum() for g in tensors]
            total = api.stack(powered).sum() ** (1.0 / norm_type)
    if error_if_nonfinite:
        value = total.item()          # the one read: a sync point
        if math.isnan(value) or math.isinf(value):
            raise RuntimeError(
                f"The total norm of order {norm_type} for gradients from `parameters` is "
                f"non-finite, so it cannot be clipped. To disable this error and scale the "
                f"gradients by the non-finite norm anyway, set `error_if_nonfinite=False`")
    return total


def clip_grad_norm_(parameters: Tensor | Iterable[Tensor], max_norm: float,
                    norm_type: float = 2.0, error_if_nonfinite: bool = False,
                    foreach: bool | None = None) -> Tensor:
    """Scale the parameters' gradients in place so that their total norm is at most
    max_norm; returns the total norm before clipping (a 0-d tensor)."""
    grads = _grads(parameters)
    if not grads:
        return _tensor(0.0)
    total = get_total_norm(grads, norm_type, error_if_nonfinite)
    with no_grad():
        coef = api.clamp(float(max_norm) / (total + 1e-6), max=1.0)
        for g in grads:
            g.mul_(coef)
    return total


def clip_grad_value_(parameters: Tensor | Iterable[Tensor], clip_value: float,
                     foreach: bool | None = None) -> None:
    """Clamp every gradient in place to [-clip_value, clip_value]."""
    clip_value = float(clip_value)
    with no_grad():
        for g in _grads(parameters):
            api.clamp_(g, -clip_value, clip_value)
