"""torchic: a small, fast, readable PyTorch-style neural-network library.

    import torchic as torch
    torch.init(backend="workers")          # or "simd", "webgpu"
    x = torch.randn(3, 4, requires_grad=True)
    loss = (x @ x.T).sum()
    loss.backward()
    print(x.grad)

See README.md for the API table and docs/ARCHITECTURE.md for how it works.
"""

import atexit as _atexit
import builtins as _builtins
from typing import TYPE_CHECKING as _TYPE_CHECKING

from . import dispatcher as _dispatcher
from . import backends as _backends  # noqa: F401  (registers the built-in backends)
from .autograd import (enable_grad, inference_mode, is_grad_enabled,
                       is_inference_mode_enabled, no_grad, set_grad_enabled)
from .creation import (Generator, arange, as_tensor, empty, from_dlpack,
                       from_numpy, full, linspace, manual_seed, multinomial, ones,
                       rand, rand_like, randint, randn, randn_like, randperm, tensor,
                       zeros, default_generator)
from .api.creation_ops import empty_like, full_like, ones_like, zeros_like
from .formats import (channels_last, channels_last_3d, contiguous_format, layout,
                      memory_format, preserve_format, strided)
from .creation import eye, get_rng_state, initial_seed, seed, set_rng_state
from .legacy_types import (BFloat16Tensor, BoolTensor, ByteTensor, CharTensor, DoubleTensor,
                           FloatTensor, HalfTensor, IntTensor, LongTensor, ShortTensor)
from .dispatcher import BackendUnavailableError, KernelError, init, shutdown
from .allocator import HeapFullError
from . import api as _api
from .api import *  # noqa: F401,F403  (the op functions: api.__all__)
if _TYPE_CHECKING:   # the unary ops (exp, tanh ...) as a checker sees them (a generated stub)
    from ._tensor_methods import *  # noqa: F403
from .dtypes import (DType, bool_ as _bool_, bfloat16, finfo, float16, float32, float64,
                     get_default_dtype, iinfo, int8, int16, int32, int64,
                     set_default_dtype, uint8)
from .devices import (device, get_default_device, get_num_threads, set_default_device,
                      set_num_threads)
from . import methods as _methods  # noqa: F401  (binds Tensor's op methods)
from .scopes import _iter_tensors, keep, track_tensors
from .tensor import Tensor
from .size import Size
from .checkpoint import load, save
from . import serialization
from .compile import CompileError, compile
from .compile import memory_of_programs as _memory_of_programs
from . import cuda, nn, optim, utils
from . import accelerator, amp, jit, onnx
from .amp import autocast
from .cuda import amp as _cuda_amp  # noqa: F401  (torch.cuda.amp.GradScaler without an import)
from . import linalg     # products (issue 41)
from . import autograd
from .autograd import functional as _functional, graph as _graph  # noqa: F401

__version__ = "0.1.0"

float = float32          # noqa: A001  PyTorch's aliases (dtypes.ALIASES)
double = float64
half = float16
long = int64
int = int32              # noqa: A001
short = int16
bool = _bool_               # noqa: A001


def memory() -> dict:
    """Exact heap figures of the current runtime (bytes, blocks, tensors, recycling).

    ``live_tensors`` counts the tensors holding heap memory, by their storage: every
    storage owns exactly one block, so it is the allocator's exact ``live_blocks``
    (kept under its lock: no garbage-collector scan, nothing added to an op). Views
    share their base's storage and are not counted again. ``compiled_programs`` and
    ``compiled_plan_bytes``: the live programs of torchic.compile and the bytes of their
    block plans for temporaries (counted in ``bytes_in_use`` too; ``release()`` gives
    them back).
    """
    rt = _dispatcher.runtime()
    stats = rt.stats()
    stats["live_tensors"] = stats["live_blocks"]
    stats["compiled_programs"], stats["compiled_plan_bytes"] = \
        _memory_of_programs(rt)
    stats["backend"] = rt.backend.name
    return stats


def sync() -> None:
    """Wait until every queued op has run; raise KernelError if one failed."""
    _dispatcher.runtime().sync()


def dispose(*tensors: object) -> None:
    """Free the storage of the given tensors (nested lists / dicts allowed) now."""
    for each in _iter_tensors(tensors):
        each.dispose()


def get_backend() -> str:
    """The name of the current runtime's backend ("workers", "simd" or "webgpu")."""
    return _dispatcher.current_backend_name()


def backend_names() -> list:
    """The names of the registered backends, any of which `init(backend=...)` accepts
    (whether one runs on this machine is `python -m torchic info`'s to say)."""
    return _dispatcher.backend_names()


def is_tensor(obj: object) -> _builtins.bool:
    """Whether `obj` is a torchic Tensor (a Parameter is one)."""
    return isinstance(obj, Tensor)


def is_floating_point(input: Tensor) -> _builtins.bool:
    """Whether `input`'s dtype is a floating one (float16, bfloat16, float32, float64)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"is_floating_point(): argument 'input' must be Tensor, not "
                        f"{type(input).__name__}")
    return input.is_floating_point()


def numel(t: Tensor) -> _builtins.int:
    """The number of elements of tensor `t`."""
    return t.numel()


# the public names (what the API reference documents, what type checkers see as exported:
# tests/unit/test_docs.py checks that it lists every public name)
__all__ = [
    "Tensor", "DType", "Generator", "device", "BackendUnavailableError", "HeapFullError",
    "KernelError", "float32", "int32", "float", "long", "int64", "int", "float64", "double", "bool",
    "uint8", "int8", "int16", "short", "float16", "half", "bfloat16", "finfo", "iinfo", "init",
    "FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "BoolTensor", "ByteTensor",
    "CharTensor", "ShortTensor", "IntTensor", "LongTensor", "shutdown", "get_backend",
    "backend_names", "memory", "sync", "dispose", "keep", "track_tensors", "tensor", "as_tensor",
    "from_numpy", "from_dlpack", "zeros", "ones", "full", "empty", "zeros_like", "ones_like",
    "full_like", "empty_like", "arange", "linspace", "eye", "rand", "randn", "rand_like",
    "randn_like", "randint", "randperm", "multinomial", "manual_seed", "seed", "initial_seed",
    "get_rng_state", "set_rng_state", "default_generator", "no_grad", "enable_grad",
    "inference_mode", "is_grad_enabled", "is_inference_mode_enabled", "get_default_dtype",
    "set_default_dtype", "get_num_threads", "set_num_threads", "is_tensor", "numel", "save", "load",
    "cuda", "nn", "optim", "utils", "serialization", "compile", "CompileError",
    "accelerator", "amp", "autocast", "jit", "onnx",
    "linalg",     # products (issue 41)
    "memory_format", "layout", "preserve_format", "contiguous_format", "channels_last",
    "channels_last_3d", "strided", "Size", "is_floating_point", "set_default_device",
    "get_default_device",
]
__all__ += _api.__all__     # the op functions
__all__ += ["set_grad_enabled", "autograd"]    # autograd (torchic/autograd/)

# -- nn-rest (issue 42): the aten norm entry points with their saved statistics ---------------
from .nn.native_norms import (native_batch_norm, native_group_norm,  # noqa: E402
                              native_layer_norm)
__all__ += ["native_batch_norm", "native_group_norm", "native_layer_norm"]

# -- keyword spellings (issue 41): PyTorch's aliases multiply / subtract / divide, clone, t ----
from .api.aliases import clone, divide, multiply, subtract, t  # noqa: E402
__all__ += ["clone", "divide", "multiply", "subtract", "t"]

# -- out= (issue 41): PyTorch's out keyword on every export whose torch counterpart has it,
# one wrapper applied from api/out.py's table (the Tensor methods keep the bare functions) ----
from .api.out import out_variants as _out_variants  # noqa: E402
globals().update(_out_variants(globals()))


_atexit.register(shutdown)
