"""Reduction op functions: PyTorch's dim / axis / keepdim(s) spellings, empty-input rules."""

import builtins
import operator
from collections.abc import Sequence
from typing import overload

from .. import raw
from ..creation import arange
from ..dtypes import dtype_code
from ..promotion import SCALAR_TYPE_NAMES, is_floating
from ..functions import (CrossEntropy, LogSoftmax, MaxMin, MaxMinDim, Softmax, Sum,
                         as_strided, constant, keepdim_shape, require_float, reshape_raw)
from ..shape import normalize_axes, normalize_axis, numel, permute_meta
from ..tensor import Tensor
from .elementwise import cast_to, maximum, minimum


def _keep(keepdim, keepdims):
    """PyTorch's keepdim, with NumPy's spelling keepdims accepted too."""
    return keepdim if keepdims is None else keepdims


def _pick_axis(dim, axis, name="dim"):
    if dim is not None and axis is not None:
        raise TypeError("give either dim= or axis=, not both")
    return dim if dim is not None else axis


def accumulate_dtype(a, dtype=None):
    """The dtype a sum (cumsum ...) of `a` accumulates and returns: `dtype` when given,
    else int64 for bool and integer inputs, the input's own for floats (PyTorch's)."""
    if dtype is not None:
        return dtype_code(dtype)
    return a._dtype if is_floating(a._dtype) else "i64"


def sum(input: Tensor, dim: int | Sequence[int] | None = None, keepdim: bool = False, *,
        dtype: object = None, axis: int | Sequence[int] | None = None,
        keepdims: bool | None = None) -> Tensor:
    """The sum of the elements over `dim` (every element by default).

    Args:
        input (Tensor): the input.
        dim (int or tuple of int, optional): the dim(s) to reduce (negative counts from
            the end); None reduces every dim. `axis` is accepted as NumPy's spelling.
        keepdim (bool): keep each reduced dim with size 1 (`keepdims` is accepted too).

        dtype (optional): the dtype to accumulate and return in (the input is cast first).

    Returns:
        Tensor: the sums: int64 for bool and integer inputs, the input's dtype for floats.

    Example:
        >>> x = torchic.tensor([[1.0, 2.0], [3.0, 4.0]])
        >>> x.sum(), x.sum(dim=0), x.sum(1, keepdim=True).shape
        (tensor(10.), tensor([4., 6.]), (2, 1))
    """
    a = input
    keepdim = _keep(keepdim, keepdims)
    axes = normalize_axes(_pick_axis(dim, axis), a.ndim)
    return Sum.apply(cast_to(a, accumulate_dtype(a, dtype)), axes=axes, keepdim=keepdim)


def mean(input: Tensor, dim: int | Sequence[int] | None = None, keepdim: bool = False, *,
         dtype: object = None, axis: int | Sequence[int] | None = None,
         keepdims: bool | None = None) -> Tensor:
    """The mean of the elements over `dim` (floating inputs, or `dtype=` a floating dtype
    to compute in; nan over an empty dim).

    Args:
        input (Tensor): the input.
        dim (int or tuple of int, optional): the dim(s) to reduce (negative counts from
            the end); None reduces every dim. `axis` is accepted as NumPy's spelling.
        keepdim (bool): keep each reduced dim with size 1 (`keepdims` is accepted too).
    """
    a = input
    keepdim = _keep(keepdim, keepdims)
    code = a._dtype if dtype is None else dtype_code(dtype)
    if not is_floating(code):
        raise RuntimeError(f"mean(): could not infer output dtype. "
                           f"{'Input' if dtype is None else 'Optional'} dtype must be either "
                           f"a floating point or complex dtype. Got: {SCALAR_TYPE_NAMES[code]}")
    a = cast_to(a, code)
    axes = normalize_axes(_pick_axis(dim, axis), a.ndim)
    count = numel(a.shape[i] for i in axes)
    s = Sum.apply(a, axes=axes, keepdim=keepdim)
    return s * (1.0 / count) if count else s * float("nan")


def var(input: Tensor, dim: int | Sequence[int] | None = None, unbiased: bool | None = None,
        keepdim: bool = False, *, axis: int | Sequence[int] | None = None,
        correction: float | None = None, keepdims: bool | None = None) -> Tensor:
    """PyTorch's var: positional (dim, unbiased, keepdim), var(x, unbiased) too, or
    correction= (the ddof). Divides by max(0, count - correction): 0 / 0 is nan, x / 0 inf."""
    a = input
    if isinstance(dim, bool):            # var(x, False): the (input, unbiased) overload
        dim, unbiased = None, dim
    if unbiased is not None and correction is not None:
        raise RuntimeError("var: cannot give both unbiased and correction")
    keepdim = _keep(keepdim, keepdims)
    axes = normalize_axes(_pick_axis(dim, axis), a.ndim)
    count = numel(a.shape[i] for i in axes)
    ddof = (0 if unbiased is False else 1) if correction is None else correction
    centered = a - mean(a, axes, keepdim=True)
    return sum(centered * centered, axes, keepdim=keepdim) * (1.0 / (count - ddof)
                                                              if count - ddof > 0
                                                              else float("inf"))


def _max_min(a, dim, keepdim, axis, op):
    d = _pick_axis(dim, axis)
    if d is None:
        if a.numel() == 0:
            raise ValueError(f"{op}() of an empty tensor: the operation has no identity")
        return MaxMin.apply(a, axes=tuple(range(a.ndim)), keepdim=False, op=op)
    if isinstance(d, int):
        ax = normalize_axis(d, a.ndim)
        if a.ndim and a.shape[ax] == 0:
            raise ValueError(f"{op}(dim={d}) over an empty dimension of shape {list(a.shape)}")
        indices = (argmax if op == "max" else argmin)(
            cast_to(a.detach(), "i64") if a._dtype == "b8" else a, ax, keepdim=keepdim)
        if not a.ndim or not is_floating(a._dtype):   # (ints: no gradient to route by indices)
            axes = (ax,) if a.ndim else ()
            return MaxResult(MaxMin.apply(a, axes=axes, keepdim=keepdim, op=op), indices)
        values = MaxMinDim.apply(a, indices, axis=ax, keepdim=keepdim, op=op)
        return MaxResult(values, indices)
    axes = _nonempty_axes(a, normalize_axes(d, a.ndim), op)
    return MaxMin.apply(a, axes=axes, keepdim=keepdim, op=op)


class MaxResult(tuple):
    """(values, indices) of max/min over one dim, like PyTorch's named tuple."""

    def __new__(cls, values, indices):
        return super().__new__(cls, (values, indices))

    @property
    def values(self):
        return self[0]

    @property
    def indices(self):
        return self[1]


def std(input: Tensor, dim: int | Sequence[int] | None = None, unbiased: bool | None = None,
        keepdim: bool = False, *, axis: int | Sequence[int] | None = None,
        correction: float | None = None, keepdims: bool | None = None) -> Tensor:
    """The standard deviation over `dim`: `var(...).sqrt()` (see `var` for the arguments;
    unbiased, dividing by count - 1, by default)."""
    a = input
    return var(a, dim, unbiased, keepdim, axis=axis, correction=correction,
               keepdims=keepdims).sqrt()


# max / min as a checker sees them: a tensor (all, or elementwise with a tensor), or the
# (values, indices) pair over a dim
@overload
def max(input: Tensor, dim: None = None, keepdim: bool = False, *, axis: None = None,
        keepdims: bool | None = None) -> Tensor: ...
@overload
def max(input: Tensor, dim: Tensor) -> Tensor: ...
@overload
def max(input: Tensor, *, other: Tensor) -> Tensor: ...
@overload
def max(input: Tensor, dim: int, keepdim: bool = False, *, keepdims: bool | None = None
        ) -> MaxResult: ...
@overload
def max(input: Tensor, *, axis: int, keepdim: bool = False, keepdims: bool | None = None
        ) -> MaxResult: ...
def max(input: Tensor, dim: int | Tensor | None = None, keepdim: bool = False, *,
        axis: int | None = None, keepdims: bool | None = None,
        other: Tensor | None = None) -> Tensor | MaxResult:
    """The largest element, or `(values, indices)` over one dim, or the elementwise maximum.

    `max(a)` is a 0-d tensor; `max(a, dim)` returns a named tuple `(values, indices)`
    (the indices int64); `max(a, other)` with a tensor `other` is `maximum(a, other)`.

    Args:
        input (Tensor): the input.
        dim (int or Tensor, optional): the dim to reduce (`axis` too), or a tensor to
            compare with.
        keepdim (bool): keep the reduced dim with size 1 (`keepdims` too).

    Example:
        >>> values, indices = torchic.tensor([[1.0, 5.0], [7.0, 2.0]]).max(dim=1)
        >>> values, indices
        (tensor([5., 7.]), tensor([1, 0]))
    """
    a = input
    keepdim = _keep(keepdim, keepdims)
    if isinstance(dim, Tensor):
        return maximum(a, dim)
    if other is not None:          # PyTorch's max(input, other=...)
        return maximum(a, other)
    return _max_min(a, dim, keepdim, axis, "max")


@overload
def min(input: Tensor, dim: None = None, keepdim: bool = False, *, axis: None = None,
        keepdims: bool | None = None) -> Tensor: ...
@overload
def min(input: Tensor, dim: Tensor) -> Tensor: ...
@overload
def min(input: Tensor, *, other: Tensor) -> Tensor: ...
@overload
def min(input: Tensor, dim: int, keepdim: bool = False, *, keepdims: bool | None = None
        ) -> MaxResult: ...
@overload
def min(input: Tensor, *, axis: int, keepdim: bool = False, keepdims: bool | None = None
        ) -> MaxResult: ...
def min(input: Tensor, dim: int | Tensor | None = None, keepdim: bool = False, *,
        axis: int | None = None, keepdims: bool | None = None,
        other: Tensor | None = None) -> Tensor | MaxResult:
    """The smallest element, or `(values, indices)` over one dim, or the elementwise
    minimum: the mirror of `max` (see it for the arguments)."""
    a = input
    keepdim = _keep(keepdim, keepdims)
    if isinstance(dim, Tensor):
        return minimum(a, dim)
    if other is not None:          # PyTorch's min(input, other=...)
        return minimum(a, other)
    return _max_min(a, dim, keepdim, axis, "min")


def _nonempty_axes(a, axes, op):
    """max / min over a 0-size dim has no identity: raise (as PyTorch does) instead of -inf."""
    if builtins.any(a.shape[i] == 0 for i in axes):
        raise ValueError(f"{op}(): cannot reduce over an empty dimension (dims {list(axes)} of "
                         f"shape {list(a.shape)}): the operation has no identity")
    return axes


def amax(input: Tensor, dim: int | Sequence[int] | None = None, keepdim: bool = False) -> Tensor:
    """The largest element over `dim` (several dims allowed; no indices). Ties share the
    gradient evenly, as in PyTorch.

    Args:
        input (Tensor): the input.
        dim (int or tuple of int, optional): the dims to reduce; None reduces every dim.
        keepdim (bool): keep each reduced dim with size 1.
    """
    a = input
    return MaxMin.apply(a, axes=_nonempty_axes(a, normalize_axes(dim, a.ndim), "amax"),
                        keepdim=keepdim, op="max")


def amin(input: Tensor, dim: int | Sequence[int] | None = None, keepdim: bool = False) -> Tensor:
    """The smallest element over `dim`: the mirror of `amax`."""
    a = input
    return MaxMin.apply(a, axes=_nonempty_axes(a, normalize_axes(dim, a.ndim), "amin"),
                        keepdim=keepdim, op="min")


def argmax(input: Tensor, dim: int | None = None, keepdim: bool = False, *,
           axis: int | None = None) -> Tensor:
    """The index of the largest element (int64): over the flattened tensor, or along `dim`;
    the first one on ties (NaN counts as the largest, as in PyTorch).

    Args:
        input (Tensor): the input (any dtype but bool; integers compared as integers).
        dim (int, optional): the dim to reduce (`axis` too); None uses the flattened tensor.
        keepdim (bool): keep the reduced dim with size 1.

    Example:
        >>> torchic.tensor([[1.0, 5.0], [7.0, 2.0]]).argmax(dim=1)
        tensor([1, 0])
    """
    a = input
    return _arg_extreme(a, _pick_axis(dim, axis), keepdim, "max")


def argmin(input: Tensor, dim: int | None = None, keepdim: bool = False, *,
           axis: int | None = None) -> Tensor:
    """The index of the smallest element (int64): the mirror of `argmax`."""
    a = input
    return _arg_extreme(a, _pick_axis(dim, axis), keepdim, "min")


def _arg_extreme(a, d, keepdim, op):
    """argmax / argmin over dim d (None: the flattened tensor), as int64 indices: floats
    through the argmax primitive (argmin of -a), integers in integers (negating would wrap
    the minimum): the first position whose value equals the amax / amin."""
    if a._dtype == "b8":
        raise NotImplementedError(f"\"arg{op}_cpu\" not implemented for 'Bool'")
    if d is None:
        if a.numel() == 0:
            raise ValueError(f"arg{op}() of an empty tensor")
        return _arg_extreme(reshape_raw(a, (a.numel(),)), 0, False, op)
    ax = normalize_axis(d, a.ndim)
    if a.ndim == 0:
        return raw.full((), 0, "i64")
    n = a.shape[ax]
    if n == 0:
        raise ValueError(f"arg{op}(dim={d}) over an empty dimension of shape {list(a.shape)}")
    a = a.detach()
    if not is_floating(a._dtype):
        extreme = (amax if op == "max" else amin)(a, ax, keepdim=True)
        positions = reshape_raw(arange(n), tuple(n if i == ax else 1 for i in range(a.ndim)))
        first = raw.where(raw.binary("eq", a, extreme), positions, constant(n, "i64"))
        return amin(first, ax, keepdim=keepdim)
    if a._dtype in ("f16", "bf16"):
        a = raw.cast(a, "f32")
    if op == "min":
        a = raw.unary("neg", a)
    perm = [i for i in range(a.ndim) if i != ax] + [ax]
    moved = as_strided(a, a._offset, *permute_meta(a.shape, a._strides, perm)[:2])
    out = raw.new_tensor(moved.shape[:-1], "i64")
    raw.run("argmax", out, (raw.view_of(moved),))
    if keepdim:
        out = reshape_raw(out, keepdim_shape(a.shape, (ax,)))
    return out


def softmax(input: Tensor, dim: int | None = None, dtype: object = None, *,
            axis: int | None = None) -> Tensor:
    """`exp(a) / exp(a).sum(dim, keepdim=True)`, computed stably (the max subtracted).

    Args:
        input (Tensor): the input (a floating dtype).
        dim (int, optional): the dim the probabilities sum to 1 over (`axis` too); the
            last dim when omitted.
        dtype (optional): the dtype to cast the input to first (and to return).
    """
    a = input
    if dtype is not None:
        a = cast_to(a, dtype_code(dtype))
    d = _pick_axis(dim, axis)
    if d is None:
        d = -1
    return Softmax.apply(a, axis=normalize_axis(d, a.ndim))


def log_softmax(input: Tensor, dim: int | None = None, dtype: object = None, *,
                axis: int | None = None) -> Tensor:
    """`log(softmax(a, dim))`, computed stably (the log-sum-exp subtracted): the input of
    `nll_loss`. Arguments as `softmax`."""
    a = input
    if dtype is not None:
        a = cast_to(a, dtype_code(dtype))
    d = _pick_axis(dim, axis)
    if d is None:
        d = -1
    return LogSoftmax.apply(a, axis=normalize_axis(d, a.ndim))


def cross_entropy(logits: Tensor, target: Tensor, reduction: str = "mean",
                  ignore_index: int = -100) -> Tensor:
    """Mean negative log-likelihood of integer class targets under softmax(logits).

    Targets equal to ignore_index add 0 and are not counted by the mean (PyTorch's
    default -100); any other target outside [0, C) is an error. One fused op."""
    if not isinstance(logits, Tensor) or not isinstance(target, Tensor):
        raise TypeError("cross_entropy(logits, target) takes two tensors")
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"reduction must be 'mean', 'sum' or 'none', got {reduction!r}")
    ignore_index = _ignore_index(ignore_index)
    require_float(logits, op="cross_entropy logits")
    if logits._dtype in ("f16", "bf16"):        # computed in float32, rounded back
        loss = cross_entropy(cast_to(logits, "f32"), target, reduction, ignore_index)
        return cast_to(loss, logits._dtype)
    if target._dtype not in ("i32", "i64"):
        raise TypeError(f"cross_entropy target must hold integer class indices "
                        f"(an int tensor, e.g. .long()), got a {target.dtype} tensor")
    if logits.ndim == 1 and target.ndim == 0:
        logits, target = logits.reshape((1, logits.shape[0])), reshape_raw(target, (1,))
    if logits.ndim != 2 or target.ndim != 1 or target.shape[0] != logits.shape[0]:
        raise ValueError(f"cross_entropy expects logits (N, C) and target (N,), got "
                         f"{list(logits.shape)} and {list(target.shape)}")
    if logits.shape[1] == 0:
        raise ValueError("cross_entropy needs at least one class (logits have 0 columns)")
    if not logits.is_contiguous():
        logits = logits.contiguous()
    return CrossEntropy.apply(logits, raw.contiguous(target), reduction=reduction,
                              ignore_index=ignore_index)


def _ignore_index(value):
    """PyTorch's int64 ignore_index (TypeError for a float, as its argument parser)."""
    if type(value) is not int:
        if isinstance(value, bool) or not hasattr(value, "__index__"):
            raise TypeError(f"cross_entropy_loss(): argument 'ignore_index' must be int, not "
                            f"{type(value).__name__}")
        value = operator.index(value)
    if not -2 ** 63 <= value < 2 ** 63:
        raise RuntimeError("Overflow when unpacking long")
    return value


def mse_loss(input: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
    """The mean squared error `(input - target) ** 2`, reduced.

    Args:
        input: the predictions, any shape.
        target: the targets (broadcast to `input`).
        reduction: `"mean"` (default), `"sum"` or `"none"` (the unreduced losses).

    Shape:
        - Input: `(*)`. Target: the input's shape. Output: a scalar, or the input's shape
          with `reduction="none"`.

    Example:
        >>> F.mse_loss(torch.tensor([1.0, 2.0, 3.0]), torch.tensor([1.0, 4.0, 3.0]))
        tensor(1.3333)
    """
    diff = input - target
    sq = diff * diff
    if reduction == "mean":
        return mean(sq)
    if reduction == "sum":
        return sum(sq)
    if reduction == "none":
        return sq
    raise ValueError(f"reduction must be 'mean', 'sum' or 'none', got {reduction!r}")
