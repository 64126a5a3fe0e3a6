"""The Tensor handle: storage block + (offset, shape, strides) + autograd fields.

A Tensor never holds data on the calling thread. Its values live in a block
of the backend's heap, owned by a refcounted ``Storage``; views share the
Storage (and so keep it alive). The block goes back to the allocator the
moment the last Tensor using the Storage dies, or at ``dispose()``.

Methods are thin: they parse PyTorch-style arguments and call the op
functions in functions.py, which record autograd nodes.
"""

import asyncio
import gc
import sys

import numpy as np

from . import dispatcher
from .shape import is_contiguous, numel


class DType:
    __slots__ = ("name", "code", "numpy", "is_floating_point")

    def __init__(self, name, code):
        self.name = name
        self.code = code
        self.numpy = dispatcher.DTYPES[code]
        self.is_floating_point = code == "f32"

    def __repr__(self):
        return f"torchic.{self.name}"


float32 = DType("float32", "f32")
int32 = DType("int32", "i32")
_DTYPE_OF_CODE = {"f32": float32, "i32": int32}
_DTYPE_NAMES = {"f32": "f32", "float32": "f32", "float": "f32",
                "i32": "i32", "int32": "i32", "int64": "i32", "long": "i32", "int": "i32"}


def dtype_code(dtype, default="f32"):
    """THE dtype parser (creation functions, .to(), casts, nn.functional): a torchic dtype,
    a name ("float32", "float", "long", ...), a Python type or a NumPy dtype -> "f32" / "i32".

    Floating types map to float32 and integer types to int32 (the two dtypes torchic
    holds); anything else is a TypeError naming it.
    """
    if dtype is None:
        return default
    if isinstance(dtype, DType):
        return dtype.code
    if isinstance(dtype, str):
        code = _DTYPE_NAMES.get(dtype)
        if code is not None:
            return code
    elif dtype is float:
        return "f32"
    elif dtype is int:
        return "i32"
    try:
        kind = np.dtype(dtype).kind
    except (TypeError, ValueError):
        kind = None
    if kind == "f":
        return "f32"
    if kind is not None and kind in "iu":
        return "i32"
    raise TypeError(f"unsupported dtype {dtype!r}: torchic tensors are float32 (values) or "
                    f"int32 (indices)")


def _is_dtype(x):
    try:
        dtype_code(x)
    except TypeError:
        return False
    return x is not None


# devices PyTorch scripts name that a torchic runtime does not have (refused by .to)
_OTHER_DEVICES = ("cuda", "mps", "xpu", "xla", "hip", "meta", "vulkan", "ipu", "hpu", "mtia",
                  "privateuseone", "opengl", "opencl", "mkldnn", "ideep", "ve", "fpga", "maia",
                  "lazy")


def _check_device(t, device):
    """.to(device): "cpu" and the tensor's own device (t.device) move nothing; anything else
    is refused, because a runtime has exactly one device (chosen by torchic.init)."""
    if device is None:
        return
    if not isinstance(device, str):
        if isinstance(device, int) and not isinstance(device, bool):
            raise RuntimeError(f"to({device}): a device index names a CUDA device; torchic "
                               f"runs on one device, chosen by torchic.init (this tensor is "
                               f"on {t.device!r})")
        raise TypeError(f"to() expects a device string, a dtype or a tensor, got "
                        f"{type(device).__name__}")
    base, _, index = device.partition(":")
    if device == t.device or (base == "cpu" and (not index or index.isdigit())):
        return
    if base in _OTHER_DEVICES or base in dispatcher.backend_names():
        raise RuntimeError(
            f"to({device!r}): device {device!r} is not available: a torchic runtime has one "
            f"device, chosen by torchic.init(backend) (this tensor is on {t.device!r}); use "
            f".to('cpu') or drop the .to() call")
    try:
        np.dtype(device)
    except TypeError:
        pass
    else:
        dtype_code(device)      # a NumPy dtype torchic does not hold: "unsupported dtype ..."
    raise RuntimeError(f"to({device!r}): expected a device ('cpu' or {t.device!r}) or a dtype "
                       f"(torchic.float32, torchic.int32, 'float32', 'long', ...), "
                       f"got {device!r}")


def _parse_to(t, args, kwargs):
    """PyTorch's .to() overloads -> (dtype code or None, copy); raises before anything runs.

    to(dtype, non_blocking=False, copy=False), to(device=None, dtype=None, non_blocking=False,
    copy=False), to(other, non_blocking=False, copy=False).
    """
    unknown = sorted(set(kwargs) - {"device", "dtype", "non_blocking", "copy"})
    if unknown:
        raise TypeError(f"to() got an unexpected keyword argument {unknown[0]!r}")
    args = list(args)
    device, dtype = kwargs.get("device"), kwargs.get("dtype")
    if args:
        first = args[0]
        if isinstance(first, Tensor):
            dtype = first._dtype
            args.pop(0)
        elif _is_dtype(first) and not (isinstance(first, str) and first == t.device):
            dtype = args.pop(0)
        elif not isinstance(first, bool):
            device = args.pop(0)
            if args and _is_dtype(args[0]) and not isinstance(args[0], bool):
                dtype = args.pop(0)
    if len(args) > 2 or not all(isinstance(a, bool) for a in args):
        raise TypeError(f"to() received an invalid combination of arguments: "
                        f"{', '.join(type(a).__name__ for a in args)} after the device / dtype "
                        f"(expected non_blocking and copy flags)")
    flags = dict(zip(("non_blocking", "copy"), args))
    for name in ("non_blocking", "copy"):
        if name in kwargs:
            flags[name] = kwargs[name]
    _check_device(t, device)
    code = None if dtype is None else dtype_code(dtype)
    return code, bool(flags.get("copy", False))


class Storage:
    """One heap block of one runtime. Freed when the last reference dies or on dispose."""

    __slots__ = ("runtime", "block", "version", "__weakref__")

    def __init__(self, runtime, block):
        self.runtime = runtime
        self.block = block
        self.version = 0   # bumped by every in-place write (autograd checks it)

    def __del__(self):
        # A Ctrl-C can land here, or between raw.new_tensor's field assignments: then
        # the block stays with the dead storage (a leak of one block; CPython reports
        # the KeyboardInterrupt as "ignored"), but nothing is freed twice or raises.
        try:
            block = self.block
        except AttributeError:     # the storage was never finished
            return
        if block is not None:
            self.block = None
            self.runtime.free(block)

    def dispose(self):
        block = self.block
        if block is not None:
            self.block = None
            self.runtime.free(block)

    def check_usable(self):
        if self.block is None:
            raise RuntimeError("this tensor has been disposed (by dispose() or a "
                               "track_tensors scope); it can no longer be used")
        if self.runtime is not dispatcher._runtime:
            if getattr(self.runtime, "closed_by", None) == "torchic.shutdown()":
                raise RuntimeError(
                    f"this tensor belongs to a runtime (backend "
                    f"{self.runtime.backend.name!r}) that was closed by torchic.shutdown(); "
                    f"tensors do not outlive their runtime: create it again (e.g. from "
                    f".numpy() taken before shutdown)")
            raise RuntimeError(
                f"this tensor belongs to a previous runtime (backend "
                f"{self.runtime.backend.name!r}) that was replaced by torchic.init(); "
                f"tensors cannot cross runtimes: create it again (e.g. from .numpy() taken "
                f"before init)")


class Tensor:
    __slots__ = ("_storage", "_offset", "shape", "_strides", "_dtype", "requires_grad",
                 "_grad", "grad_fn", "_view", "_bview", "__weakref__")

    __array_priority__ = 1000  # numpy scalars defer to our reflected operators

    def __init__(self, *args, **kwargs):
        raise TypeError("create tensors with torchic.tensor(...), torchic.zeros(...), "
                        "Tensor.from_data(...) and friends")

    @classmethod
    def _make(cls, storage, offset, shape, strides, dtype, requires_grad=False):
        t = object.__new__(cls)
        t._storage = storage
        t._offset = offset
        t.shape = shape
        t._strides = strides
        t._dtype = dtype
        t.requires_grad = requires_grad
        t._grad = None
        t.grad_fn = None
        t._view = None
        t._bview = None     # the last broadcast view made of it (a bias is broadcast every step)
        return t

    @staticmethod
    def from_data(data, shape=None, dtype=None, requires_grad=False):
        """A tensor from nested lists, a NumPy array or a scalar; `shape` reshapes flat data."""
        from .creation import tensor
        return tensor(data, dtype=dtype, requires_grad=requires_grad, shape=shape)

    # -- metadata ----------------------------------------------------------------
    @property
    def dtype(self):
        return _DTYPE_OF_CODE[self._dtype]

    def is_floating_point(self):
        return self._dtype == "f32"

    @property
    def ndim(self):
        return len(self.shape)

    def dim(self):
        return len(self.shape)

    def size(self, dim=None):
        if dim is None:
            return self.shape
        from .shape import normalize_axis
        return self.shape[normalize_axis(dim, self.ndim)]

    def numel(self):
        return numel(self.shape)

    nelement = numel

    def stride(self, dim=None):
        if dim is None:
            return self._strides
        from .shape import normalize_axis
        return self._strides[normalize_axis(dim, self.ndim)]

    def storage_offset(self):
        return self._offset

    def is_contiguous(self):
        return is_contiguous(self.shape, self._strides)

    @property
    def is_leaf(self):
        return self.grad_fn is None

    @property
    def device(self):
        return self._storage.runtime.backend.name

    @property
    def is_disposed(self):
        return self._storage.block is None

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    # -- autograd ------------------------------------------------------------------
    @property
    def grad(self):
        return self._grad

    @grad.setter
    def grad(self, value):
        # PyTorch's checks and messages: a Tensor or None, of this tensor's shape and dtype
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(f"assigned grad expected to be a Tensor or None but got grad "
                                f"of type {type(value).__name__}")
            if value._dtype != self._dtype:
                names = {"f32": "float", "i32": "int"}   # PyTorch's spelling of the message
                raise RuntimeError(f"attempting to assign a gradient with dtype "
                                   f"'{names[value._dtype]}' to a tensor with grad_dtype "
                                   f"'{names[self._dtype].capitalize()}'. The gradient must "
                                   f"match the tensor's grad_dtype (defaults to the tensor's "
                                   f"dtype)")
            if value.shape != self.shape:
                raise RuntimeError(f"attempting to assign a gradient of size "
                                   f"'{list(value.shape)}' to a tensor of size "
                                   f"'{list(self.shape)}'. Please ensure that the gradient and "
                                   f"the tensor are the same size")
            value._storage.check_usable()
        self._grad = value

    @grad.deleter
    def grad(self):
        self._grad = None

    def backward(self, gradient=None, retain_graph=False):
        from .autograd import run_backward
        run_backward(self, gradient, retain_graph)

    def requires_grad_(self, requires_grad=True):
        if requires_grad and self._dtype != "f32":
            raise TypeError("only float32 tensors can require gradients")
        if not self.is_leaf and not requires_grad:
            raise RuntimeError("you can only change requires_grad of leaf tensors")
        self.requires_grad = requires_grad
        return self

    def retain_grad(self):
        import weakref
        if self.grad_fn is not None:
            self.grad_fn.retained = weakref.ref(self)
        return self

    def detach(self):
        """The same storage, cut from the graph (no gradient flows through it)."""
        t = Tensor._make(self._storage, self._offset, self.shape, self._strides, self._dtype)
        t._view = self._view   # the same memory: share the (immutable) kernel view
        return t

    @property
    def data(self):
        return self.detach()

    @data.setter
    def data(self, other):
        if not isinstance(other, Tensor):
            raise TypeError(f"data must be a Tensor, got {type(other).__name__}")
        self._storage = other._storage
        self._offset = other._offset
        self.shape = other.shape
        self._strides = other._strides
        self._dtype = other._dtype
        self._view = other._view
        self._bview = None

    def dispose(self):
        """Free this tensor's storage now (every view of it becomes unusable)."""
        self._storage.dispose()

    # -- reads ---------------------------------------------------------------------
    def numpy(self):
        return _raw.read(self)

    to_array = numpy

    def __array__(self, dtype=None, copy=None):
        a = self.numpy()
        return a if dtype is None else a.astype(dtype)

    def item(self):
        if self.numel() != 1:
            raise ValueError(f"item() needs a tensor with one element, got shape "
                             f"{list(self.shape)}")
        return self.numpy().reshape(()).item()

    def tolist(self):
        return self.numpy().tolist()

    async def item_async(self):
        return await asyncio.get_running_loop().run_in_executor(None, self.item)

    async def numpy_async(self):
        return await asyncio.get_running_loop().run_in_executor(None, self.numpy)

    async def tolist_async(self):
        return await asyncio.get_running_loop().run_in_executor(None, self.tolist)

    def __float__(self):
        return float(self.item())

    def __int__(self):
        return int(self.item())

    def __index__(self):
        if self._dtype != "i32" or self.numel() != 1:
            raise TypeError("only a one-element integer tensor can be used as an index")
        return int(self.item())

    def __bool__(self):
        if self.numel() != 1:
            raise RuntimeError(f"the truth value of a tensor with {self.numel()} elements is "
                               f"ambiguous")
        return bool(self.item())

    def __repr__(self):
        if self._storage.block is None:
            return "tensor(<disposed>)"
        a = self.numpy()
        body = np.array2string(a, separator=", ", prefix="tensor(", threshold=1000,
                               edgeitems=3, formatter=_repr_formatter(a))
        extras = []
        if a.size == 0:
            extras.append(f"size={tuple(self.shape)}")
        if self._dtype == "i32":
            extras.append("dtype=torchic.int32")
        if self.grad_fn is not None:
            extras.append(f"grad_fn=<{self.grad_fn.name}>")
        elif self.requires_grad:
            extras.append("requires_grad=True")
        return "tensor(" + body + "".join(", " + e for e in extras) + ")"

    def __hash__(self):
        return id(self)

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self.shape[0]))

    def __setstate__(self, state):
        raise TypeError("tensors are not picklable; use torchic.save")

    def __reduce__(self):
        raise TypeError("tensors are not picklable; use torchic.save")

    # -- ops (thin wrappers over functions.py; the hottest ones, +, -, *, /, unary
    # minus and the elementwise functions, are the op functions themselves: see the
    # end of this module) -----------------------------------------------------------
    def __radd__(self, other): return _F.add(other, self)
    def __rsub__(self, other): return _F.sub(other, self)
    def __rmul__(self, other): return _F.mul(other, self)
    def __rtruediv__(self, other): return _F.div(other, self)
    def __pow__(self, other): return _F.pow(self, other)
    def __rpow__(self, other): return _F.pow(other, self)
    def __rmatmul__(self, other): return _F.matmul(other, self)
    def __pos__(self): return self
    def __abs__(self): return _F.abs(self)
    def __eq__(self, other): return _F.eq(self, other)
    def __ne__(self, other): return _F.ne(self, other)
    def __lt__(self, other): return _F.lt(self, other)
    def __le__(self, other): return _F.le(self, other)
    def __gt__(self, other): return _F.gt(self, other)
    def __ge__(self, other): return _F.ge(self, other)
    def __getitem__(self, key): return _F.getitem(self, key)
    def __setitem__(self, key, value): _F.setitem(self, key, value)

    def __iadd__(self, other): return _F.inplace_binary("add", self, other)
    def __isub__(self, other): return _F.inplace_binary("sub", self, other)
    def __imul__(self, other): return _F.inplace_binary("mul", self, other)
    def __itruediv__(self, other): return _F.inplace_binary("div", self, other)

    def pow(self, other): return _F.pow(self, other)
    def maximum(self, other): return _F.maximum(self, other)
    def minimum(self, other): return _F.minimum(self, other)
    def eq(self, other): return _F.eq(self, other)
    def ne(self, other): return _F.ne(self, other)
    def lt(self, other): return _F.lt(self, other)
    def le(self, other): return _F.le(self, other)
    def gt(self, other): return _F.gt(self, other)
    def ge(self, other): return _F.ge(self, other)
    def log10(self): return _F.log10(self)
    def log2(self): return _F.log2(self)
    def abs(self): return _F.abs(self)
    def where(self, cond, other): return _F.where(cond, self, other)

    def sum(self, dim=None, keepdim=False, **kw): return _F.sum(self, dim, keepdim, **kw)
    def mean(self, dim=None, keepdim=False, **kw): return _F.mean(self, dim, keepdim, **kw)
    def var(self, dim=None, keepdim=False, **kw): return _F.var(self, dim, keepdim, **kw)
    def std(self, dim=None, keepdim=False, **kw): return _F.std(self, dim, keepdim, **kw)
    def max(self, dim=None, keepdim=False, **kw): return _F.max(self, dim, keepdim, **kw)
    def min(self, dim=None, keepdim=False, **kw): return _F.min(self, dim, keepdim, **kw)
    def amax(self, dim=None, keepdim=False): return _F.amax(self, dim, keepdim)
    def amin(self, dim=None, keepdim=False): return _F.amin(self, dim, keepdim)
    def argmax(self, dim=None, keepdim=False, *, axis=None): return _F.argmax(self, dim, keepdim, axis=axis)
    def argmin(self, dim=None, keepdim=False, *, axis=None): return _F.argmin(self, dim, keepdim, axis=axis)
    def softmax(self, dim=None, *, axis=None): return _F.softmax(self, dim, axis=axis)
    def log_softmax(self, dim=None, *, axis=None): return _F.log_softmax(self, dim, axis=axis)

    def reshape(self, *shape): return _F.reshape(self, *shape)
    def view(self, *shape): return _F.view(self, *shape)
    def permute(self, *dims): return _F.permute(self, *dims)
    def transpose(self, dim0=None, dim1=None): return _F.transpose(self, dim0, dim1)
    def t(self): return _F.transpose(self)
    @property
    def T(self): return _F.permute(self, tuple(reversed(range(self.ndim))))
    def expand(self, *shape): return _F.expand(self, *shape)
    def expand_as(self, other): return _F.expand(self, other.shape)
    def squeeze(self, dim=None): return _F.squeeze(self, dim)
    def unsqueeze(self, dim): return _F.unsqueeze(self, dim)
    def flatten(self, start_dim=0, end_dim=-1): return _F.flatten(self, start_dim, end_dim)
    def contiguous(self): return _F.contiguous(self)
    def clone(self): return _F.Clone.apply(self)
    def slice(self, ranges):
        """The original's slice: one (start, stop[, step]) range, int or None per leading dim."""
        key = []
        for r in ranges:
            if r is None or isinstance(r, (int, slice)):
                key.append(slice(None) if r is None else r)
            else:
                key.append(slice(*r))
        return _F.getitem(self, tuple(key))
    def set(self, indices, value):
        """The original's set: self[indices] = value, returning self."""
        return _F.setitem(self, indices, value)

    def float(self): return _F.to_dtype(self, "f32")
    def long(self): return _F.to_dtype(self, "i32")
    def int(self): return _F.to_dtype(self, "i32")
    def to(self, *args, **kwargs):
        """PyTorch's .to(dtype) / .to(device) / .to(device, dtype) / .to(other) / copy=True.

        A torchic runtime has one device, chosen by torchic.init: "cpu" and this tensor's
        device are accepted and move nothing; any other device, and any unknown dtype, is
        refused before anything is queued."""
        code, copy = _parse_to(self, args, kwargs)
        out = self if code is None else _F.to_dtype(self, code)
        return out.clone() if copy and out is self else out
    def unbind(self, dim=0): return _F.unbind(self, dim)
    def type_as(self, other): return _F.to_dtype(self, other._dtype)

    def add_(self, other): return _F.inplace_binary("add", self, other)
    def sub_(self, other): return _F.inplace_binary("sub", self, other)
    def mul_(self, other): return _F.inplace_binary("mul", self, other)
    def div_(self, other): return _F.inplace_binary("div", self, other)
    def zero_(self): return _F.fill_(self, 0.0)
    def fill_(self, value): return _F.fill_(self, value)
    def copy_(self, src): return _F.copy_(self, src)


def _repr_formatter(a):
    """PyTorch's look: `1.` for whole numbers, four decimals otherwise."""
    if a.dtype != np.float32:
        return None
    finite = a[np.isfinite(a)]
    if finite.size and np.all(finite == np.round(finite)) and np.abs(finite).max() < 1e8:
        return {"float": lambda v: f"{v:.0f}." if np.isfinite(v) else str(v)}
    if finite.size and (np.abs(finite).max() >= 1e8 or
                        np.abs(finite[finite != 0]).min(initial=1) < 1e-4):
        return {"float": lambda v: f"{v:.4e}"}
    return {"float": lambda v: f"{v:.4f}" if np.isfinite(v) else str(v)}


def _accumulate_grad(leaf, grad, private=False):
    """leaf.grad += grad (shapes already match).

    The first gradient is stored as it is when `private` says nobody else can see it
    and its storage belongs to it alone (no view, no other leaf shares it); otherwise
    it is copied, because backward may hand one tensor to several inputs (add) or
    hand out views, and users update .grad in place.
    """
    from . import raw
    if grad.shape != leaf.shape:
        grad = grad.reshape(leaf.shape)
    if leaf._grad is None:
        if private and grad.is_contiguous() and sys.getrefcount(grad._storage) == 2:
            leaf._grad = grad.detach()     # 2: the grad tensor's own reference + the call's
        else:
            leaf._grad = raw.copy_into(raw.new_tensor(leaf.shape), grad)
    else:
        leaf._grad = raw.binary("add", leaf._grad, grad)


def dtype_of(code):
    return _DTYPE_OF_CODE[code]


def live_tensor_count():
    """Tensors alive now (found by the garbage collector: a diagnostic, not a hot path;
    a counter in __del__ would cost every tensor a Python call when it dies)."""
    return sum(1 for o in gc.get_objects() if isinstance(o, Tensor))




from . import functions as _F  # noqa: E402  (methods above call into it at run time)
from . import raw as _raw  # noqa: E402

# One Python call less per op: these methods *are* the op functions (same arguments).
for _name, _fn in {"__add__": _F.add, "__sub__": _F.sub, "__mul__": _F.mul,
                   "__truediv__": _F.div, "__neg__": _F.neg, "add": _F.add, "sub": _F.sub,
                   "mul": _F.mul, "div": _F.div, "neg": _F.neg, "exp": _F.exp, "log": _F.log,
                   "relu": _F.relu, "tanh": _F.tanh, "sigmoid": _F.sigmoid,
                   "sqrt": _F.sqrt, "__matmul__": _F.matmul, "matmul": _F.matmul}.items():
    setattr(Tensor, _name, _fn)
del _name, _fn
