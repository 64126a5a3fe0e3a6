"""torch.nn.utils.parameters_to_vector / vector_to_parameters: all parameters as one flat
vector, and back."""

from collections.abc import Iterable

from ... import api
from ...autograd import no_grad
from ...tensor import Tensor


def parameters_to_vector(parameters: Iterable[Tensor]) -> Tensor:
    """The parameters flattened and concatenated into one 1-D tensor (differentiable: its
    gradient flows back to each parameter).

    Example:
        >>> v = nn.utils.parameters_to_vector(model.parameters())
    """
    if isinstance(parameters, Tensor):
        raise TypeError(f"expected an iterable of tensors, got {type(parameters).__name__}")
    return api.cat([p.reshape(-1) for p in parameters], 0)


def vector_to_parameters(vec: Tensor, parameters: Iterable[Tensor]) -> None:
    """Copy consecutive slices of the 1-D `vec` into the parameters, in place (their
    shapes, in order); `vec` must have exactly their total number of elements."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    if vec.ndim != 1:
        raise RuntimeError(f"vec must be 1-D, got shape {list(vec.shape)}")
    params = list(parameters)
    total = sum(p.numel() for p in params)
    if total != vec.shape[0]:
        raise RuntimeError(f"vec has {vec.shape[0]} elements, the parameters {total}")
    offset = 0
    with no_grad():
        for p in params:
            n = p.numel()
            p.copy_(vec[offset:offset + n].reshape(p.shape))
            offset += n
