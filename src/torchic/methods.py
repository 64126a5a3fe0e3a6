"""Tensor's op methods, bound from one table.

tensor.py defines the class and its fields; every method that computes (``x + y``,
``x.sum(1)``, ``x[i]``, ``x.numpy()``, ``x.backward()``) is one of the op functions
of the layers above, bound here once they are all loaded. Where the method takes the
function's arguments as they are, the table holds the function itself (one Python call
less per op); the few that reorder or fix arguments are written out below, each with
its docstring (the API reference is generated from them). Their annotations are evaluated
at once (no `from __future__ import annotations`): pdoc would resolve a string `bool` in
Tensor's namespace, where `bool` is the method `Tensor.bool`.
"""

from typing import Any, Callable, Sequence, SupportsIndex

import numpy as np

from . import api, creation, raw
from .autograd import register_post_accumulate_grad_hook, run_backward
from .api.conversion import CONVERSION_METHODS, type_
from .creation import tensor as _tensor_from_data
from .random_fills import exponential_, normal_, random_, uniform_
from .devices import check_device
from .dtypes import dtype_code
from .functions import Clone
from .tensor import Tensor


def _reflected(fn: Callable[..., Tensor]) -> Callable[..., Tensor]:
    def method(self: Tensor, other: Tensor | float) -> Tensor:
        return fn(other, self)
    method.__annotations__["other"] = next(iter(fn.__annotations__.values()))  # fn's 1st
    method.__name__ = f"__r{fn.__name__}__"
    method.__doc__ = f"`other {fn.__name__} self`: the reflected operator of `{fn.__name__}`."
    return method


def _inplace(op: str) -> Callable[..., Tensor]:
    def method(self: Tensor, other: Tensor | float) -> Tensor:
        return api.inplace_binary(op, self, other)
    method.__name__ = f"{op}_"
    method.__doc__ = (f"In-place `{op}`: writes `self {op} other` into `self` and returns "
                      f"`self`.\n\nArgs:\n    other (Tensor or number): the second operand, "
                      f"broadcast to `self`'s shape.")
    return method


def _cuda(self, device):
    """Tensor.cuda(): refused with THE device check's message (torchic has no CUDA device)."""
    check_device("cuda", "cuda(): ")       # always raises


def _slice(self: Tensor, ranges: Sequence[Any]) -> Tensor:
    """The original's slice: one range per dim, each (start, stop[, step]), an int or None."""
    if not isinstance(ranges, (list, tuple)) or len(ranges) != self.ndim:
        got = len(ranges) if isinstance(ranges, (list, tuple)) else type(ranges).__name__
        raise ValueError(f"slice() takes one range per dimension: {self.ndim} for shape "
                         f"{list(self.shape)}, got {got}")
    key = []
    for dim, r in enumerate(ranges):
        if r is None or isinstance(r, (int, slice)):
            key.append(slice(None) if r is None else r)
            continue
        start, stop = r[0], r[1]
        if start is not None and stop is not None and start > stop:
            raise ValueError(f"slice() range ({start}, {stop}) of dim {dim} is reversed: start "
                             f"must not exceed stop")
        key.append(slice(*r))
    return api.getitem(self, tuple(key))


def _set(self: Tensor, indices: Sequence[int | slice], value: Any) -> Tensor:
    """The original's set: the element (or region) at n-dimensional `indices`, one int (or
    slice) per dim."""
    if not isinstance(indices, (list, tuple)) or len(indices) != self.ndim or not all(
            isinstance(i, (int, slice)) and not isinstance(i, bool) for i in indices):
        raise IndexError(f"set() takes one int index (or slice) per dimension ({self.ndim} for "
                         f"shape {list(self.shape)}), got {indices!r}")
    return api.setitem(self, tuple(indices), value)


def _new(cls: type, *args: Any, device: Any = None, dtype: Any = None,
         requires_grad: bool = False) -> Tensor:
    """torch.Tensor(data) (float32 data), torch.Tensor(2, 3) (uninitialized), torch.Tensor()."""
    if cls is not Tensor:                   # a subclass (Parameter) makes itself
        return object.__new__(cls)
    check_device(device, "Tensor(): ")
    if dtype is not None and dtype_code(dtype) != "f32":
        raise TypeError("torch.Tensor(...) makes float32 tensors; use torchic.tensor(data, "
                        "dtype=...) for another dtype")
    if all(isinstance(a, int) and not isinstance(a, bool) for a in args):
        t = creation.empty(*args) if args else creation.empty(0)
    elif len(args) == 1:
        t = _tensor_from_data(args[0], dtype="f32")
    else:
        raise TypeError(f"torch.Tensor() takes sizes (ints) or one sequence of data, got "
                        f"{[type(a).__name__ for a in args]}")
    return t.requires_grad_(True) if requires_grad else t


def _format(self: Tensor, spec: str) -> str:
    """f"{loss:.4f}" formats a 0-d tensor's number (PyTorch's rule); f"{t}" is str(t)."""
    if self.ndim == 0:
        return format(self.item(), spec)
    if spec:
        raise TypeError(f"unsupported format string {spec!r} passed to Tensor.__format__ (only "
                        f"0-d tensors format as numbers; use .tolist() or .item())")
    return str(self)


def _deepcopy(self: Tensor, memo: dict[int, Any]) -> Tensor:
    """copy.deepcopy of a leaf (so modules and optimizers deep-copy): values, requires_grad,
    .grad and the subclass (Parameter) are copied; PyTorch refuses non-leaves too."""
    if not self.is_leaf:
        raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) support "
                           "the deepcopy protocol")
    new = raw.copy_into(raw.new_tensor(self.shape, self._dtype), self)
    if type(self) is not Tensor:
        new = type(self)(new, requires_grad=self.requires_grad)
    elif self.requires_grad:
        new.requires_grad_(True)
    if self._grad is not None:
        new._grad = _deepcopy(self._grad, memo)
    memo[id(self)] = new
    return new


def _copy(self: Tensor) -> Tensor:
    """copy.copy: a new tensor sharing this one's storage, as PyTorch's does (a leaf keeping
    requires_grad and the subclass; .grad is not copied)."""
    new = self.detach()
    if type(self) is not Tensor:
        return type(self)(new, requires_grad=self.requires_grad)
    new.requires_grad = self.requires_grad
    return new


def _rebuild_tensor(cls, values, dtype, requires_grad):
    """pickle's constructor of a tensor (see _reduce_ex): made on the current runtime."""
    t = _tensor_from_data(values, dtype=dtype)
    if cls is not Tensor:
        return cls(t, requires_grad=requires_grad)
    return t.requires_grad_(True) if requires_grad else t


def _reduce_ex(self: Tensor, protocol: SupportsIndex) -> tuple[Any, ...]:
    """pickle carries the values (a view: its own elements, contiguous), the dtype, the shape
    and requires_grad, as PyTorch's pickle does (a non-leaf comes back a leaf, .grad is
    dropped); unpickling allocates on the current runtime. Two views of one storage come
    back as two separate tensors."""
    return _rebuild_tensor, (type(self), self.detach()._read(),     # (bf16: float32 values)
                             self._dtype, self.requires_grad)


# -- DLPack and NumPy aliasing --------------------------------------------------------
# On the CPU backends the heap is host memory, so export is zero-copy: a NumPy array over
# the tensor's memory (strides included) whose base is a _HostMemory holding the Storage
# (its block is never recycled while the array, or a DLPack consumer of it, lives) and
# the arena; NumPy builds the DLPack capsule from that array. The webgpu heap is GPU
# memory: export copies the values to the host (__dlpack_device__ says CPU either way).
class _HostMemory:
    __slots__ = ("__array_interface__", "storage", "memory")

    def __init__(self, memory, storage):
        self.__array_interface__ = memory.__array_interface__
        self.memory = memory
        self.storage = storage


def _host_alias(self: Tensor) -> np.ndarray | None:
    """A NumPy array aliasing this tensor's memory once every queued op has run (a sync), or
    None when the heap is not host memory. Ops issued later are not waited for, and
    dispose() / a track_tensors scope still free the block: do not use the array after."""
    st = self._storage
    memory = st.runtime.backend.host_array(raw.view_of(self))
    if memory is None:
        return None
    st.runtime.sync()
    return np.asarray(_HostMemory(memory, st))


def _dlpack(self: Tensor, *, stream: Any = None, max_version: tuple[int, int] | None = None,
            dl_device: Any = None, copy: bool | None = None) -> Any:
    """The DLPack capsule of this tensor (np.from_dlpack(t), torch.from_dlpack(t)): zero-copy
    on the CPU backends (after a sync), a copy on webgpu. Refused, as in PyTorch, for a
    tensor that requires grad."""
    if self.requires_grad:
        raise RuntimeError("Can't export tensors that require gradient, use tensor.detach()")
    if self._dtype == "bf16":       # exported through NumPy, which has no bfloat16
        raise BufferError("bfloat16 tensors have no DLPack export in torchic (NumPy has no "
                          "bfloat16): export t.float() instead")
    a = None if copy else _host_alias(self)
    if a is None:
        if copy is False:
            raise BufferError(f"the {self._storage.runtime.backend.name!r} backend's heap is "
                              f"not host memory: exporting it needs a copy (copy=False given)")
        a = self.numpy()
    kwargs = {k: v for k, v in (("max_version", max_version), ("dl_device", dl_device))
              if v is not None}
    return a.__dlpack__(stream=stream, **kwargs)


def _dlpack_device(self: Tensor) -> tuple[int, int]:
    """(1, 0): DLPack's kDLCPU, device 0 (torchic's device is the CPU on every backend)."""
    return (1, 0)


def _invert(self: Tensor) -> Tensor:
    """`~x`: logical not of a bool tensor, bitwise not (`-x - 1`) of an integer one; a
    float tensor is refused (TypeError), as in PyTorch."""
    if self._dtype == "b8":
        return api.logical_not(self)
    if self.is_floating_point():
        raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type "
                        "tensors")
    return -self - 1


def _bool_op(name: str, fn: Callable[..., Tensor], reflected: bool = False
             ) -> Callable[..., Tensor]:
    """`&`, `|`, `^` (and their reflected forms) of bool tensors and Python bools: the
    logical ops (a bool tensor). Integer operands are refused: torchic has no bitwise
    integer kernels."""
    def method(self: Tensor, other: Tensor | bool) -> Tensor:
        for t in (self, other):
            if not (t._dtype == "b8" if isinstance(t, Tensor) else isinstance(t, bool)):
                raise TypeError(f"bitwise {name} is supported in torchic for bool tensors "
                                f"(and Python bools) only, got {_dtype_name(t)}")
        return fn(other, self) if reflected else fn(self, other)
    method.__name__ = f"__{'r' if reflected else ''}{name}__"
    return method


def _dtype_name(x):
    return str(x.dtype) if isinstance(x, Tensor) else type(x).__name__


def _backward(self, gradient: Tensor | None = None, retain_graph: bool = False) -> None:
    """Compute the gradient of this tensor with respect to the graph's leaves.

    The gradients are accumulated (summed) into the `.grad` of every leaf that
    requires grad; zero them between steps (`optimizer.zero_grad()`).

    Args:
        gradient (Tensor, optional): the gradient of the final result with respect to
            this tensor, of its shape. May be omitted for a one-element tensor (a loss).
        retain_graph (bool): keep the graph so that `backward` can run through it again.

    Example:
        >>> x = torchic.tensor([1.0, 2.0], requires_grad=True)
        >>> (x * x).sum().backward()
        >>> x.grad
        tensor([2., 4.])
    """
    run_backward(self, gradient, retain_graph)


def _from_data(data: Any, shape: int | Sequence[int] | None = None, dtype: Any = "f32",
               requires_grad: bool = False) -> Tensor:
    """The original's fromData: float32 (whatever the data) unless dtype says otherwise;
    `shape` reshapes flat data."""
    return _tensor_from_data(data, dtype=dtype, requires_grad=requires_grad, shape=shape)


def _static(make):
    """Tensor.zeros(shape) / Tensor.randn(shape, requires_grad=...): the original's statics."""
    def static(*shape: int | Sequence[int], **kw: Any) -> Tensor:
        return make(*shape, **kw)
    static.__name__ = make.__name__
    static.__doc__ = f"`Tensor.{make.__name__}(*size, ...)` is `torchic.{make.__name__}`."
    return staticmethod(static)


# the methods that reorder or fix the op functions' arguments

def _pos(self: Tensor) -> Tensor:
    """`+x`: the tensor itself."""
    return self


def _where(self: Tensor, cond: Tensor, other: Tensor | float) -> Tensor:
    """`self` where `cond` is true (nonzero), else `other`: `torchic.where(cond, self, other)`."""
    return api.where(cond, self, other)


def _expand_as(self: Tensor, other: Tensor) -> Tensor:
    """`self` broadcast (a view, no copy) to `other`'s shape: `self.expand(other.shape)`."""
    return api.expand(self, other.shape)


def _clone(self: Tensor) -> Tensor:
    """A copy of the values in new storage; gradients flow back to `self`."""
    return Clone.apply(self)


def _cpu(self: Tensor) -> Tensor:
    """The tensor itself: every torchic tensor is on the `cpu` device (any backend)."""
    return self


def _cuda_method(self: Tensor, device: Any = None, non_blocking: bool = False) -> Tensor:
    """Refused: torchic has no CUDA device (raises PyTorch's error for an absent device;
    pick a faster backend with `torchic.init(backend=...)` instead)."""
    return _cuda(self, device)


def _zero(self: Tensor) -> Tensor:
    """Fill `self` with zeros, in place; returns `self`."""
    return api.fill_(self, 0.0)


def _transpose_all(self: Tensor) -> Tensor:
    """The tensor with its dims reversed (a view): `x.T` of a matrix is its transpose."""
    return api.permute(self, tuple(reversed(range(self.ndim))))


def _init(self: Tensor, *args: Any, **kwargs: Any) -> None:
    """`torch.Tensor(data)` / `torch.Tensor(2, 3)`: made by `__new__`."""


METHODS = {
    # arithmetic and comparisons
    "__add__": api.add, "__sub__": api.sub, "__mul__": api.mul, "__truediv__": api.div,
    "__pow__": api.pow, "__matmul__": api.matmul, "__neg__": api.neg, "__abs__": api.abs,
    "__radd__": _reflected(api.add), "__rsub__": _reflected(api.sub),
    "__rmul__": _reflected(api.mul), "__rtruediv__": _reflected(api.div),
    "__rpow__": _reflected(api.pow), "__rmatmul__": _reflected(api.matmul),
    "__pos__": _pos,
    "__eq__": api.eq, "__ne__": api.ne, "__lt__": api.lt, "__le__": api.le,
    "__gt__": api.gt, "__ge__": api.ge,
    "add": api.add, "sub": api.sub, "mul": api.mul, "div": api.div, "pow": api.pow,
    "matmul": api.matmul, "maximum": api.maximum, "minimum": api.minimum,
    "eq": api.eq, "ne": api.ne, "lt": api.lt, "le": api.le, "gt": api.gt, "ge": api.ge,
    **api.UNARY_OPS, "log10": api.log10, "log2": api.log2,      # exp, log, relu, ...
    "where": _where,
    # reductions
    "sum": api.sum, "mean": api.mean, "var": api.var, "std": api.std, "max": api.max,
    "min": api.min, "amax": api.amax, "amin": api.amin, "argmax": api.argmax,
    "argmin": api.argmin, "softmax": api.softmax, "log_softmax": api.log_softmax,
    "all": api.all, "any": api.any, "isclose": api.isclose, "allclose": api.allclose,
    "cumsum": api.cumsum, "prod": api.prod, "histc": api.histc,
    # reductions, scans, order statistics (sync points), norms
    "cumprod": api.cumprod, "cummax": api.cummax, "cummin": api.cummin,
    "logcumsumexp": api.logcumsumexp, "nansum": api.nansum, "nanmean": api.nanmean,
    "count_nonzero": api.count_nonzero, "aminmax": api.aminmax, "logsumexp": api.logsumexp,
    "trace": api.trace, "diff": api.diff, "cov": api.cov, "corrcoef": api.corrcoef,
    "median": api.median, "nanmedian": api.nanmedian, "mode": api.mode,
    "kthvalue": api.kthvalue, "quantile": api.quantile, "nanquantile": api.nanquantile,
    "msort": api.msort, "unique": api.unique, "unique_consecutive": api.unique_consecutive,
    "bincount": api.bincount, "norm": api.norm, "dist": api.dist, "renorm": api.renorm,
    "take_along_dim": api.take_along_dim, "histogram": api.histogram,
    # ordering (sync points: see api/ordering.py), masks, clamps, pieces (api/extra_ops.py)
    "sort": api.sort, "argsort": api.argsort, "topk": api.topk,
    "tril": api.tril, "triu": api.triu, "masked_fill": api.masked_fill,
    "masked_fill_": api.masked_fill_, "clamp": api.clamp, "clip": api.clip,
    "clamp_": api.clamp_, "clip_": api.clip_, "erf": api.erf,
    "split": api.split, "chunk": api.chunk, "roll": api.roll,
    # shapes, views, indexing
    "reshape": api.reshape, "view": api.view, "permute": api.permute,
    "transpose": api.transpose, "t": api.transpose,
    "T": property(_transpose_all), "expand": api.expand, "expand_as": _expand_as,
    "squeeze": api.squeeze, "unsqueeze": api.unsqueeze, "flatten": api.flatten,
    "contiguous": api.contiguous, "clone": _clone, "unbind": api.unbind,
    "__getitem__": api.getitem, "__setitem__": api.setitem, "slice": _slice,
    "set": _set,
    # dtypes and devices
    "to": api.to, "type_as": api.type_as, "cpu": _cpu, "cuda": _cuda_method,
    **CONVERSION_METHODS, "type": type_,   # float, double, half, bool, long ... (conversion.py)
    # in place
    "__iadd__": _inplace("add"), "__isub__": _inplace("sub"), "__imul__": _inplace("mul"),
    "__itruediv__": _inplace("div"), "add_": _inplace("add"), "sub_": _inplace("sub"),
    "mul_": _inplace("mul"), "div_": _inplace("div"),
    "zero_": _zero, "fill_": api.fill_, "copy_": api.copy_,
    "normal_": normal_, "uniform_": uniform_, "exponential_": exponential_,
    "random_": random_,     # PyTorch's generator's numbers (creation.py)
    # reads and autograd
    "numpy": raw.numpy, "to_array": raw.numpy, "_read": raw.values, "backward": _backward,
    "register_post_accumulate_grad_hook": register_post_accumulate_grad_hook,
    "from_data": staticmethod(_from_data),
    "zeros": _static(creation.zeros), "ones": _static(creation.ones),
    "randn": _static(creation.randn), "rand": _static(creation.rand),
    # Python protocols
    "__new__": staticmethod(_new), "__init__": _init,
    "__format__": _format, "__deepcopy__": _deepcopy, "__invert__": _invert,
    "__copy__": _copy, "__reduce_ex__": _reduce_ex, "_host_alias": _host_alias,
    "__dlpack__": _dlpack, "__dlpack_device__": _dlpack_device,
    "__and__": _bool_op("and", api.logical_and),
    "__rand__": _bool_op("and", api.logical_and, reflected=True),
    "__or__": _bool_op("or", api.logical_or),
    "__ror__": _bool_op("or", api.logical_or, reflected=True),
    "__xor__": _bool_op("xor", api.logical_xor),
    "__rxor__": _bool_op("xor", api.logical_xor, reflected=True),
    "logical_and": api.logical_and, "logical_or": api.logical_or,
    "logical_xor": api.logical_xor, "logical_not": api.logical_not,
    "isnan": api.isnan, "isinf": api.isinf, "isfinite": api.isfinite, "isin": api.isin,
}

for _name, _method in METHODS.items():
    setattr(Tensor, _name, _method)
del _name, _method
