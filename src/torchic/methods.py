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
from .autograd import register_hook, register_post_accumulate_grad_hook, run_backward
from .api.conversion import CONVERSION_METHODS, type_
from .api.out import resize_, resize_as_     # out= (issue 41)
from .creation import tensor as _tensor_from_data
from .random_fills import exponential_, normal_, random_, uniform_
from .devices import check_device
from .dtypes import dtype_code
from .formats import check_memory_format
from .functions import Clone
from .promotion import SCALAR_TYPE_NAMES, can_cast_code
from .tensor import Tensor


def _reflected(fn: Callable[..., Tensor]) -> Callable[..., Tensor]:
    def method(self: Tensor, other: Tensor | float) -> Tensor:
        return fn(other, self)
    method.__annotations__["other"] = next(iter(fn.__annotations__.values()))  # fn's 1st
    method.__name__ = f"__r{fn.__name__}__"
    method.__doc__ = f"`other {fn.__name__} self`: the reflected operator of `{fn.__name__}`."
    return method


def _inplace(op: str) -> Callable[..., Tensor]:
    def method(self: Tensor, other: Tensor | float, **kwargs: Any) -> Tensor:
        if kwargs:      # add_ / sub_'s alpha, div_'s rounding_mode
            return _write_result(self, getattr(api, op)(self, other, **kwargs))
        return api.inplace_binary(op, self, other)
    method.__name__ = f"{op}_"
    method.__doc__ = (f"In-place `{op}`: writes `self {op} other` into `self` and returns "
                      f"`self`.\n\nArgs:\n    other (Tensor or number): the second operand, "
                      f"broadcast to `self`'s shape.")
    return method


def _write_result(self: Tensor, result: Tensor) -> Tensor:
    """An in-place op's end: `result` (computed out of place) written into `self`, refused
    as PyTorch refuses it where self's dtype cannot hold it or its shape is not self's."""
    if not can_cast_code(result._dtype, self._dtype):
        raise RuntimeError(f"result type {SCALAR_TYPE_NAMES[result._dtype]} can't be cast to "
                           f"the desired output type {SCALAR_TYPE_NAMES[self._dtype]}")
    if tuple(result.shape) != tuple(self.shape):
        raise RuntimeError(f"output with shape {list(self.shape)} doesn't match the broadcast "
                           f"shape {list(result.shape)}")
    return api.copy_(self, result)


def _inplace_of(fn: Callable[..., Tensor]) -> Callable[..., Tensor]:
    """`x.<op>_(...)`: `fn(x, ...)` written into x (_write_result); one method per function
    (an alias's, `arccos_`, is the same object as `acos_`)."""
    if fn in _INPLACE_MADE:
        return _INPLACE_MADE[fn]

    def method(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        return _write_result(self, fn(self, *args, **kwargs))
    method.__name__ = f"{fn.__name__}_"
    method.__doc__ = f"In-place `{fn.__name__}`: writes `{fn.__name__}(self, ...)` into `self` and returns `self`."
    _INPLACE_MADE[fn] = method
    return method


_INPLACE_MADE: dict = {}


def _polygamma(self: Tensor, n: int) -> Tensor:
    """`torchic.polygamma(n, self)`: the n-th derivative of digamma at `self`."""
    return api.polygamma(n, self)


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
    """`&`, `|`, `^` (and their reflected forms): of bool tensors and Python bools the
    logical ops (a bool tensor); with an integer operand the bitwise ones (api/bitwise.py)."""
    bitwise = getattr(api, f"bitwise_{name}")

    def method(self: Tensor, other: Tensor | bool) -> Tensor:
        for t in (self, other):
            if not (t._dtype == "b8" if isinstance(t, Tensor) else isinstance(t, bool)):
                return bitwise(other, self) if reflected else bitwise(self, other)
        return fn(other, self) if reflected else fn(self, other)
    method.__name__ = f"__{'r' if reflected else ''}{name}__"
    return method


def _dtype_name(x):
    return str(x.dtype) if isinstance(x, Tensor) else type(x).__name__


def _backward(self, gradient: Tensor | None = None, retain_graph: bool | None = None,
              create_graph: bool = False, inputs: Any = None) -> None:
    """Compute the gradient of this tensor with respect to the graph's leaves.

    The gradients are accumulated (summed) into the `.grad` of every leaf that
    requires grad; zero them between steps (`optimizer.zero_grad()`).

    Args:
        gradient (Tensor, optional): the gradient of the final result with respect to
            this tensor, of its shape. May be omitted for a one-element tensor (a loss).
        retain_graph (bool, optional): keep the graph so that `backward` can run through it
            again (default: create_graph).
        create_graph (bool): record the backward pass, so that the gradients (which then
            carry a graph) can be differentiated again.
        inputs (Tensor or sequence of Tensors, optional): accumulate only into these
            tensors' `.grad` (leaves, or non-leaves as with retain_grad).

    Example:
        >>> x = torchic.tensor([1.0, 2.0], requires_grad=True)
        >>> (x * x).sum().backward()
        >>> x.grad
        tensor([2., 4.])
    """
    if inputs is not None:
        inputs = [inputs] if isinstance(inputs, Tensor) else list(inputs)
        if not inputs:
            raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
    run_backward(self, gradient, retain_graph, create_graph, inputs)


def _retains_grad(self) -> bool:
    """Whether this non-leaf keeps its gradient in `.grad` (after `retain_grad()`)."""
    node = self.grad_fn
    return node is not None and node.retained is not None and node.retained() is self


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


def _clone(self: Tensor, *, memory_format: Any = None) -> Tensor:
    """A copy of the values in new storage; gradients flow back to `self`. memory_format=
    is accepted (torchic's copies are row-major whatever it says: the values are the same)."""
    check_memory_format(memory_format, "clone()")
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


def _into_self(fn: Callable) -> Callable:
    """The in-place form of an `input`-first op (addmm_ ...): fn(self, ...) copied into self."""
    def method(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        out = fn(self, *args, **kwargs)
        if out.shape != self.shape:     # PyTorch resizes a 1-element self (deprecated)
            raise RuntimeError(f"{fn.__name__}_: the result's shape {list(out.shape)} is not "
                               f"self's {list(self.shape)} (torchic never resizes a tensor "
                               f"in place: use {fn.__name__}(), which returns a new one)")
        return api.copy_(self, out)
    method.__name__ = fn.__name__ + "_"
    method.__doc__ = f"In-place {fn.__name__}: the result written into `self`; returns `self`."
    return method

# elementwise math: methods, and those of them with an in-place x.<op>_()
_MATH_INPLACE = (
    "ceil", "fix", "floor", "floor_divide", "fmod", "frac", "remainder", "round", "sgn",
    "sign", "true_divide", "trunc", "acosh", "addcdiv", "addcmul", "asinh", "atanh",
    "clamp_max", "clamp_min", "copysign", "cosh", "deg2rad", "erfc", "exp2", "expm1",
    "float_power", "heaviside", "hypot", "ldexp", "lerp", "log1p", "logit", "nan_to_num",
    "rad2deg", "reciprocal", "rsqrt", "sinc", "sinh", "square", "tan", "xlogy", "acos", "arccos",
    "arcsin", "arctan", "arctan2", "asin", "atan", "atan2", "digamma", "erfinv", "lgamma",
    "mvlgamma", "bitwise_and", "bitwise_left_shift", "bitwise_not", "bitwise_or",
    "bitwise_right_shift", "bitwise_xor", "gcd", "lcm", "i0", "nextafter")
_MATH = _MATH_INPLACE + ("positive", "signbit", "fmax", "fmin", "isneginf", "isposinf",
                         "isreal", "logaddexp", "logaddexp2")

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
    "register_hook": register_hook,     # autograd: Tensor.register_hook (autograd/hooks.py)
    "retains_grad": property(_retains_grad),
    "from_data": staticmethod(_from_data),
    "zeros": _static(creation.zeros), "ones": _static(creation.ones),
    "randn": _static(creation.randn), "rand": _static(creation.rand),
    # Python protocols
    "__new__": staticmethod(_new), "__init__": _init,
    "__format__": _format, "__deepcopy__": _deepcopy, "__invert__": _invert,
    "__copy__": _copy, "__reduce_ex__": _reduce_ex, "_host_alias": _host_alias,
    "__iter__": api.shaping.iter_rows,   # eager overhead (issue 45): unbind's views
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
    # products (issue 41: api/products.py); the in-place forms write the result into self
    "mm": api.mm, "bmm": api.bmm, "mv": api.mv, "dot": api.dot, "vdot": api.vdot,
    "inner": api.inner, "outer": api.outer, "ger": api.ger, "kron": api.kron,
    "cross": api.cross, "addmm": api.addmm, "addmv": api.addmv, "baddbmm": api.baddbmm,
    "addbmm": api.addbmm, "addr": api.addr, "addmm_": _into_self(api.addmm),
    "addmv_": _into_self(api.addmv), "baddbmm_": _into_self(api.baddbmm),
    "addbmm_": _into_self(api.addbmm), "addr_": _into_self(api.addr),
    # creation in self's image (issue 41: api/creation_ops.py)
    "new_zeros": api.new_zeros, "new_ones": api.new_ones, "new_full": api.new_full,
    "new_empty": api.new_empty, "new_tensor": api.new_tensor, "equal": api.equal,
    "bernoulli": api.bernoulli, "bernoulli_": api.bernoulli_, "cauchy_": api.cauchy_,
    "geometric_": api.geometric_, "log_normal_": api.log_normal_,
    # elementwise math (api/rounding.py, api/math_ops.py): the functions and their x.<op>_()
    **{name: getattr(api, name) for name in _MATH},
    **{f"{name}_": _inplace_of(getattr(api, name)) for name in _MATH_INPLACE},
    **{f"{name}_": _inplace_of(fn) for name, fn in api.UNARY_OPS.items()
       if name != "relu"},  # exp_, abs_ ... (relu_: nn/functional's)
    "log2_": _inplace_of(api.log2), "log10_": _inplace_of(api.log10),
    "erf_": _inplace_of(api.erf),
    "__mod__": api.remainder, "__rmod__": _reflected(api.remainder),
    "__floordiv__": api.floor_divide, "__rfloordiv__": _reflected(api.floor_divide),
    "__rdiv__": _reflected(api.div), "__div__": api.div,
    "__imod__": _inplace_of(api.remainder), "__ifloordiv__": _inplace_of(api.floor_divide),
    "polygamma": _polygamma, "polygamma_": _inplace_of(_polygamma), "frexp": api.frexp,
    "__lshift__": api.bitwise_left_shift, "__rshift__": api.bitwise_right_shift,
    "__rlshift__": _reflected(api.bitwise_left_shift),
    "__rrshift__": _reflected(api.bitwise_right_shift),
    "__ilshift__": _inplace_of(api.bitwise_left_shift),
    "__irshift__": _inplace_of(api.bitwise_right_shift),
    "__iand__": _inplace_of(api.bitwise_and), "__ior__": _inplace_of(api.bitwise_or),
    "__ixor__": _inplace_of(api.bitwise_xor),
}

# shaping and indexing ops (issue 41): api/view_ops.py, index_ops.py, place_ops.py, joining.py
METHODS.update({
    "narrow": api.narrow, "narrow_copy": api.narrow_copy, "select": api.select,
    "movedim": api.movedim, "moveaxis": api.moveaxis, "swapaxes": api.swapaxes,
    "swapdims": api.swapdims, "diagonal": api.diagonal, "unfold": api.unfold,
    "as_strided": api.as_strided, "unflatten": api.unflatten, "ravel": api.ravel,
    "reshape_as": api.reshape_as, "view_as": api.view_as, "broadcast_to": api.broadcast_to,
    "mT": property(api.matrix_transpose), "sum_to_size": api.sum_to_size,
    "flip": api.flip, "fliplr": api.fliplr, "flipud": api.flipud, "rot90": api.rot90,
    "gather": api.gather, "take_along_dim": api.take_along_dim, "take": api.take,
    "put": api.put, "put_": api.put_, "scatter": api.scatter, "scatter_": api.scatter_,
    "scatter_add": api.scatter_add, "scatter_add_": api.scatter_add_,
    "scatter_reduce": api.scatter_reduce, "scatter_reduce_": api.scatter_reduce_,
    "index_select": api.index_select, "index_add": api.index_add,
    "index_add_": api.index_add_, "index_copy": api.index_copy,
    "index_copy_": api.index_copy_, "index_fill": api.index_fill,
    "index_fill_": api.index_fill_, "index_reduce": api.index_reduce,
    "index_reduce_": api.index_reduce_, "index_put": api.index_put,
    "index_put_": api.index_put_, "diag": api.diag, "diag_embed": api.diag_embed,
    "diagonal_scatter": api.diagonal_scatter, "select_scatter": api.select_scatter,
    "slice_scatter": api.slice_scatter, "as_strided_scatter": api.as_strided_scatter,
    "masked_select": api.masked_select, "masked_scatter": api.masked_scatter,
    "masked_scatter_": api.masked_scatter_, "nonzero": api.nonzero,
    "nonzero_static": api.nonzero_static, "argwhere": api.argwhere,
    "repeat": api.repeat, "tile": api.tile, "repeat_interleave": api.repeat_interleave,
    "split_with_sizes": api.split_with_sizes, "unsafe_split": api.unsafe_split,
    "unsafe_chunk": api.unsafe_chunk, "tensor_split": api.tensor_split,
    "hsplit": api.hsplit, "vsplit": api.vsplit, "dsplit": api.dsplit,
    "tril_": api.tril_, "triu_": api.triu_,
})

# out= (issue 41): resize_ / resize_as_ (api/out.py), which an out of another shape goes through
METHODS.update({"resize_": resize_, "resize_as_": resize_as_})

for _name, _method in METHODS.items():
    setattr(Tensor, _name, _method)
del _name, _method
