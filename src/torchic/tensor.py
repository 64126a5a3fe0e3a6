"""The Tensor handle: storage block + (offset, shape, strides) + autograd fields.

A Tensor never holds data on the calling thread. Its values live in a block
of the backend's heap, owned by a refcounted ``Storage``; views share the
Storage (and so keep it alive). The block goes back to the allocator the
moment the last Tensor using the Storage dies, or at ``dispose()``.

This module is the class and its fields only. Its op methods (``x + y``, ``x.sum()``,
``x.numpy()``, ``x.backward()``...) are the op functions of the layers above, bound
onto the class by one table in methods.py.
"""

import asyncio
import threading
import weakref
from typing import TYPE_CHECKING, Any, overload

import numpy as np

from . import dispatcher, known
from .devices import CPU, device as _Device
from .dispatcher import FLOAT_CODES, INT_CODES
from .dtypes import DType, default_float, dtype_of
from .shape import is_contiguous, normalize_axis, numel
from .size import Size
from .tensor_str import tensor_repr

# C++ type names PyTorch's messages use
_C_NAMES = {"b8": "bool", "u8": "unsigned char", "i8": "signed char", "i16": "short",
            "i32": "int", "i64": "long", "f16": "c10::Half", "bf16": "c10::BFloat16",
            "f32": "float", "f64": "double"}


if TYPE_CHECKING:   # the op methods methods.py binds, as a checker sees them (a generated stub)
    from ._tensor_methods import TensorMethods as _Methods
else:
    _Methods = object


class Storage:
    """One heap block of one runtime. Freed when the last reference dies or on dispose."""

    __slots__ = ("runtime", "block", "version", "__weakref__")
    pending = None      # HostScalar's (dtype code, value) not yet in memory; never for a block

    def __init__(self, runtime, block):
        self.runtime = runtime
        self.block = block
        block.known = None     # (known.py: a recycled block starts with nothing known and
        block.shared = False   # no NumPy alias: an alias holds the storage it was made of)
        self.version = 0   # bumped by every in-place write (autograd checks it)

    def __del__(self):
        # A Ctrl-C can land here (the block then stays with the dead storage; CPython
        # reports the KeyboardInterrupt as "ignored"), or inside __init__ before `block`
        # is set (the new block is never recorded): a leak of one block either way, but
        # nothing is freed twice or raises.
        try:
            block = self.block
        except AttributeError:     # the storage was never finished
            return
        if block is not None:
            self.block = None
            block.known = None
            self.runtime.free(block)

    def dispose(self):
        block = self.block
        if block is not None:
            self.block = None
            block.known = None
            self.runtime.free(block)

    @property
    def disposed(self):
        """Whether the block was given back (dispose(), a scope, the last reference)."""
        return self.block is None

    def check_usable(self):
        # (the runtime first: a HostScalar of a closed runtime has no block either)
        if self.runtime is not dispatcher._runtime:
            raise RuntimeError(dispatcher.closed_message(
                self.runtime.backend.name, getattr(self.runtime, "closed_by", "torchic.init()")))
        if self.block is None:
            raise RuntimeError("this tensor has been disposed (by dispose() or a "
                               "track_tensors scope); it can no longer be used")


_MATERIALIZE = threading.Lock()


class HostScalar:
    """The storage of a 0-d integer result whose value is known on the host (known.py: `i + 8`
    of a known index): no block and no kernel until something needs its memory.

    A program uses most such results only as ints (slice bounds, `int(i)`); the first
    access of `block` (an op reading it, a write into it, a host alias) allocates the block
    and issues the write of the value, under a lock, so two threads get one block, and the
    write is issued before the op that asked for the block. A recorder's call
    (torchic.compile) materializes through the real entry points: the block is the caller's
    state, not one of the program's temporaries, and the value is constant.

    The block, once made, is held by a plain Storage (`held`) whose finalizer frees it; so a
    HostScalar has no finalizer of its own: most are born and die as a slice bound, and a
    finalizer would be a Python call at every death. It has Storage's fields and methods."""

    __slots__ = ("runtime", "version", "pending", "held", "__weakref__")

    def __init__(self, runtime, code, value):
        self.runtime = runtime
        self.version = 0
        self.pending = (code, value)    # (dtype code, Python int) until materialized
        self.held = None                # the Storage of its block, once made

    @property
    def block(self):
        held = self.held
        if held is not None:
            return held.block
        return None if self.pending is None else self._materialize()

    @property
    def disposed(self):
        held = self.held
        return self.pending is None and (held is None or held.block is None)

    check_usable = Storage.check_usable

    def _materialize(self):
        with _MATERIALIZE:
            held, pending, rt = self.held, self.pending, self.runtime
            if held is not None:
                return held.block      # (another thread's)
            if pending is None or rt is not dispatcher._runtime:
                return None            # (disposed, or a closed runtime's)
            code, value = pending
            rec = rt.recorder
            alloc, write = (rt.alloc, rt.write) if rec is None else \
                (rec.real["alloc"], rec.real["write"])
            held = Storage(rt, alloc(dispatcher.ITEMSIZE[dispatcher.storage_code(rt.backend,
                                                                                  code)]))
            block = held.block
            write(dispatcher.View(block, 0, (), (), code),
                  np.array(value, dtype=dispatcher.DTYPES[code]))
            block.known = (code, 0, [value])
            self.held = held
            self.pending = None
            return block

    def dispose(self):
        self.pending = None
        if self.held is not None:
            self.held.dispose()


def make(storage, offset, shape, strides, dtype, requires_grad=False, view=None, cls=None):
    """THE constructor: every tensor is made here (Tensor(data) calls creation, which calls
    this); `cls` a subclass (nn.Parameter), None for Tensor. `view` is the dispatcher View of
    exactly these fields, when the caller has it already. (A module function, not a
    classmethod: a classmethod call costs CPython 3.11 ~20% more, and a step makes hundreds.)"""
    t = object.__new__(cls or Tensor)
    t._storage = storage
    t._offset = offset
    t.shape = shape if shape.__class__ is Size else tuple.__new__(Size, shape)
    t._strides = strides
    t._dtype = dtype
    t.requires_grad = requires_grad
    t._grad = None
    t.grad_fn = None
    t._view = view
    t._bview = None     # the last broadcast view made of it (a bias is broadcast every step)
    t._view_base = None     # a view's base (functions/views.py's mark_view)
    t._views = None         # a base's grad-mode views, weakly (ditto)
    return t


class Tensor(_Methods):
    """A multi-dimensional array of one dtype's values (docs/DTYPES.md: bool, integers, float16
    / bfloat16 / float32 / float64) that can record gradients (floating ones).

    Make tensors with the creation functions (`torchic.tensor`, `torchic.zeros`,
    `torchic.randn` ...) or `torchic.Tensor(data)`. Ops run on the current backend's
    queue and return at once; reading values (`numpy()`, `item()`, `print`) waits.

    Attributes:
        shape (tuple of int): the size of each dim (`size()` returns it too).
        requires_grad (bool): whether ops on this tensor are recorded for `backward()`.
        grad_fn: the graph node that made this tensor (None for a leaf).

    Example:
        >>> x = torchic.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        >>> y = (x @ x).sum()
        >>> y.backward()
        >>> x.grad
        tensor([[7., 11.],
                [9., 13.]])
    """

    __slots__ = ("_storage", "_offset", "shape", "_strides", "_dtype", "requires_grad",
                 "_grad", "grad_fn", "_view", "_bview", "_view_base", "_views",
                 "__weakref__")

    __array_priority__ = 1000  # numpy scalars defer to our reflected operators

    # the public fields (__slots__), as a type checker sees them
    shape: tuple[int, ...]
    requires_grad: bool
    grad_fn: Any       # the autograd node (an autograd.Primitive) that made it; None: a leaf

    # the public fields (__slots__), as a type checker sees them
    shape: tuple[int, ...]
    requires_grad: bool
    grad_fn: Any       # the autograd node (an autograd.Primitive) that made it; None: a leaf

    # Tensor(data) / Tensor(2, 3) are methods.py's __new__ (they need creation, a layer above)

    @classmethod
    def _make(cls, storage, offset, shape, strides, dtype, requires_grad=False, view=None):
        """make(...) of this class (nn.Parameter's constructor)."""
        return make(storage, offset, shape, strides, dtype, requires_grad, view, cls)

    # -- metadata ----------------------------------------------------------------
    @property
    def dtype(self) -> DType:
        """The element type: `torchic.float32`, `torchic.int64`, `torchic.bool`, ..."""
        return dtype_of(self._dtype)

    def is_floating_point(self) -> bool:
        """Whether the dtype is a floating one (float16, bfloat16, float32, float64)."""
        return self._dtype in FLOAT_CODES

    def is_signed(self) -> bool:
        """Whether the dtype is signed (all but bool and uint8)."""
        return self.dtype.is_signed

    def element_size(self) -> int:
        """Bytes per element of the dtype (PyTorch's; the backend may store it wider)."""
        return self.dtype.itemsize

    @property
    def itemsize(self) -> int:
        """Bytes per element of the dtype (`element_size()`)."""
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        """numel() * itemsize, as PyTorch's."""
        return self.numel() * self.dtype.itemsize

    @property
    def ndim(self) -> int:
        """The number of dims (`len(shape)`)."""
        return len(self.shape)

    def dim(self) -> int:
        """The number of dims (`ndim`)."""
        return len(self.shape)

    @overload
    def size(self, dim: None = None) -> tuple[int, ...]: ...
    @overload
    def size(self, dim: int) -> int: ...
    def size(self, dim: int | None = None) -> tuple[int, ...] | int:
        """The shape (a tuple), or the size of dim `dim` (negative dims count from the end).

        Example:
            >>> torchic.zeros(2, 3).size(-1)
            3
        """
        if dim is None:
            return self.shape
        return self.shape[normalize_axis(dim, self.ndim)]

    def numel(self) -> int:
        """The number of elements (the product of the shape)."""
        return numel(self.shape)

    nelement = numel

    @overload
    def stride(self, dim: None = None) -> tuple[int, ...]: ...
    @overload
    def stride(self, dim: int) -> int: ...
    def stride(self, dim: int | None = None) -> tuple[int, ...] | int:
        """The strides in elements (a tuple), or the stride of dim `dim`."""
        if dim is None:
            return self._strides
        return self._strides[normalize_axis(dim, self.ndim)]

    def storage_offset(self) -> int:
        """The offset of the first element in the storage, in elements."""
        return self._offset

    def is_contiguous(self) -> bool:
        """Whether the elements are laid out in row-major order without gaps."""
        return is_contiguous(self.shape, self._strides)

    @property
    def is_leaf(self) -> bool:
        """Whether the tensor was made by the user rather than by a recorded op (leaves
        receive `.grad` in `backward()`)."""
        return self.grad_fn is None

    @property
    def device(self) -> _Device:
        """`torchic.device("cpu")` on every backend (the backend, not the device, says
        where ops run: `torchic.init(backend=...)`)."""
        # torchic.device("cpu") on every backend, as a CPU-only PyTorch (devices.py says why)
        return CPU

    is_cuda = False

    @property
    def is_disposed(self) -> bool:
        """Whether the storage was freed (by `dispose()` or a `track_tensors` scope)."""
        return self._storage.disposed

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    # -- autograd ------------------------------------------------------------------
    @property
    def _version(self) -> int:
        """The number of in-place writes into this tensor's storage (PyTorch's version
        counter, shared by every view of it; autograd checks saved tensors against it)."""
        return self._storage.version

    @property
    def grad(self) -> "Tensor | None":
        """The gradient accumulated by `backward()` (None until then); assignable with a
        tensor of the same shape and dtype, or None."""
        return self._grad

    @grad.setter
    def grad(self, value):
        # PyTorch's checks and messages: a Tensor or None, of this tensor's shape and dtype
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(f"assigned grad expected to be a Tensor or None but got grad "
                                f"of type {type(value).__name__}")
            if value._dtype != self._dtype:
                raise RuntimeError(f"attempting to assign a gradient with dtype "
                                   f"'{_C_NAMES[value._dtype]}' to a tensor with grad_dtype "
                                   f"'{_C_NAMES[self._dtype].capitalize()}'. The gradient must "
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

    def requires_grad_(self, requires_grad: bool = True) -> "Tensor":
        """Set `requires_grad` in place (floating leaves only) and return the tensor.

        Example:
            >>> w = torchic.randn(3, 2).requires_grad_()
        """
        if requires_grad and self._dtype not in FLOAT_CODES:
            raise RuntimeError("only Tensors of floating point dtype can require gradients")
        if not self.is_leaf and not requires_grad:
            raise RuntimeError("you can only change requires_grad of leaf tensors")
        self.requires_grad = requires_grad
        return self

    def retain_grad(self) -> "Tensor":
        """Keep this non-leaf tensor's gradient in its `.grad` during `backward()`."""
        if self.grad_fn is not None:
            self.grad_fn.retained = weakref.ref(self)
        return self

    def detach(self) -> "Tensor":
        """The same storage, cut from the graph (no gradient flows through it)."""
        t = make(self._storage, self._offset, self.shape, self._strides, self._dtype)
        t._view = self._view   # the same memory: share the (immutable) kernel view
        return t

    @property
    def data(self) -> "Tensor":
        """The tensor detached from the graph (`detach()`); assigning a tensor replaces this
        tensor's storage and shape (PyTorch's `p.data = t`)."""
        return self.detach()

    @data.setter
    def data(self, other):
        if not isinstance(other, Tensor):
            raise TypeError(f"data must be a Tensor, got {type(other).__name__}")
        self._storage = other._storage
        self._offset = other._offset
        self.shape = other.shape    # (a Size)
        self._strides = other._strides
        self._dtype = other._dtype
        self._view = other._view
        self._bview = None

    def dispose(self) -> None:
        """Free this tensor's storage now (every view of it becomes unusable)."""
        self._storage.dispose()

    # -- reads ---------------------------------------------------------------------
    def __array__(self, dtype=None, copy=None):
        if copy is False:   # np.asarray(t, copy=False): the heap's memory itself, or refused
            a = self._host_alias() if self._dtype != "bf16" else self.numpy()   # (bf16 refused)
            if a is None:
                raise ValueError(f"the {self._storage.runtime.backend.name!r} backend's heap "
                                 f"is not host memory: a NumPy array of it needs a copy")
        else:
            a = self.numpy()        # refused for a tensor that requires grad, as in PyTorch
        return a if dtype is None else a.astype(dtype)

    # _read(): the values as a NumPy array (bf16 as float32), also of a tensor that requires
    # grad (numpy() refuses that one, PyTorch's rule; item, tolist and printing read it):
    # raw.values, bound by methods.py (raw is above this module)

    def item(self) -> int | float:
        """The value of a one-element tensor as a Python number (waits for the queued ops).

        Example:
            >>> torchic.tensor([2.5]).item()
            2.5
        """
        if self.shape and numel(self.shape) != 1:
            raise ValueError(f"item() needs a tensor with one element, got shape "
                             f"{list(self.shape)}")
        if self._dtype in INT_CODES:     # (known.py: no sync when its value is known)
            v = known.value(self)
            return v if v is not None else known.read_one(self)
        return self._read().item()     # (NumPy's item() of any one-element array)

    def tolist(self) -> list:
        """The values as nested Python lists (a number for a 0-d tensor)."""
        return self._read().tolist()

    async def item_async(self) -> int | float:
        """`await t.item_async()`: `item()` without blocking the event loop."""
        return await asyncio.get_running_loop().run_in_executor(None, self.item)

    async def numpy_async(self) -> np.ndarray:
        """`await t.numpy_async()`: `numpy()` without blocking the event loop."""
        return await asyncio.get_running_loop().run_in_executor(None, self.numpy)

    async def tolist_async(self) -> list:
        """`await t.tolist_async()`: `tolist()` without blocking the event loop."""
        return await asyncio.get_running_loop().run_in_executor(None, self.tolist)

    def __float__(self):
        return float(self.item())

    def __int__(self):
        return int(self.item())

    def __index__(self):
        if self._dtype not in INT_CODES or (self.shape and numel(self.shape) != 1):
            raise TypeError("only a one-element integer tensor can be used as an index")
        v = known.value(self)     # (known.py: no sync when its value is known)
        return v if v is not None else known.read_one(self)

    def __bool__(self):
        if self.numel() != 1:
            raise RuntimeError(f"the truth value of a tensor with {self.numel()} elements is "
                               f"ambiguous")
        return bool(self.item())

    def __repr__(self):
        if self._storage.block is None:
            return "tensor(<disposed>)"
        a = self._read()
        extras = []
        if a.size == 0 and a.ndim != 1:      # PyTorch: the shape unless it is (0,)
            extras.append(f"size={tuple(self.shape)}")
        if self._dtype not in ("i64", "b8", default_float()):     # PyTorch omits these
            extras.append(f"dtype={self.dtype}")
        if self.grad_fn is not None:
            extras.append(f"grad_fn=<{self.grad_fn.name()}>")
        elif self.requires_grad:
            extras.append("requires_grad=True")
        return tensor_repr(a, extras)

    def __hash__(self):
        return id(self)

    # __iter__ (unbind's views), pickle / copy.copy / copy.deepcopy (__reduce_ex__, __copy__, __deepcopy__) and DLPack
    # are methods.py's: they make tensors through creation, a layer above this one

