"""PyTorch's checkpoint format: the zip archive ``torch.save`` writes and ``torch.load`` reads.

The layout (PyTorch's ``_use_new_zipfile_serialization``, format version 3): a zip of stored
(uncompressed) records under one folder, ``<name>/data.pkl`` (a protocol-2 pickle of the
object), ``<name>/data/<key>`` (each storage's little-endian bytes, aligned to 64 bytes in the
file), ``<name>/byteorder`` ("little"), ``<name>/version`` ("3"), ``<name>/.format_version``,
``<name>/.storage_alignment``. In the pickle a tensor is
``torch._utils._rebuild_tensor_v2(storage, offset, size, stride, requires_grad, hooks)`` whose
storage is a persistent id ``('storage', torch.FloatStorage, key, 'cpu', numel)``; a Parameter
wraps that in ``torch._utils._rebuild_parameter``; a dtype is the global ``torch.float32``.
So real ``torch.load(..., weights_only=True)`` reads what we write, and we read what it writes.

Writing: a pure-Python pickler (``pickle._Pickler``) lets us emit the ``torch...`` globals by
name without importing torch (the C pickler insists on importing and comparing them).

Reading is untrusted input, and the reader is ours: ``weights_only=True`` (the default, as in
PyTorch 2.6+) resolves only the allow-listed globals below (PyTorch's list: containers,
tensors, storages, dtypes, ``torch.Size``, ``torch.device``, plus what
``add_safe_globals`` registered); any other global raises ``pickle.UnpicklingError`` naming it
and how to allow it. Every record is checked before it is read: stored, not compressed (a
compressed record could expand without bound), its size against the storage's declared
element count, each tensor's offset / sizes / strides against its storage. Memory stays in
proportion to the file. ``weights_only=False`` unpickles anything (only for files you trust,
as in PyTorch) and maps ``torch.nn.*`` classes onto torchic's.
"""

import collections
import io
import os
import pickle
import struct
import sys
import zipfile
from typing import Any

import numpy as np

from .. import nn, raw
from ..creation import from_numpy_array
from ..devices import device as _device
from ..dispatcher import DTYPES, ITEMSIZE
from ..dtypes import DType, dtype_of, to_float32
from ..nn import Parameter
from ..tensor import Tensor
from .safetensors import CheckpointError, write_file

# PyTorch's legacy storage class names, one per dtype code
STORAGE_OF = {"f32": "FloatStorage", "f64": "DoubleStorage", "f16": "HalfStorage",
              "bf16": "BFloat16Storage", "i64": "LongStorage", "i32": "IntStorage",
              "i16": "ShortStorage", "i8": "CharStorage", "u8": "ByteStorage",
              "b8": "BoolStorage"}
CODE_OF_STORAGE = {v: k for k, v in STORAGE_OF.items()}
_ALIGNMENT = 64
_MAX_NDIM = 64


class _Global:
    """A global written by name (``GLOBAL module name`` in the pickle)."""

    def __init__(self, module: str, name: str):
        self.module, self.name = module, name

    def __call__(self, *args):          # (the pickler wants a reduce's function callable)
        raise TypeError(f"{self.module}.{self.name} is a name in a pickle, not a function")


class _StorageRef:
    """One tensor's bytes, saved as a storage record (its persistent id)."""

    def __init__(self, key: str, code: str, numel: int):
        self.key, self.code, self.numel = key, code, numel


# ---------------------------------------------------------------------------------
# save
# ---------------------------------------------------------------------------------
class _Writer(pickle._Pickler):          # type: ignore[name-defined, misc]
    """Pickles tensors as PyTorch does; records each tensor's bytes in `storages`."""

    dispatch = dict(pickle._Pickler.dispatch)      # type: ignore[attr-defined]

    def __init__(self, file):
        super().__init__(file, protocol=2)
        self.storages: list[tuple[str, bytes]] = []

    def save_named_global(self, obj):
        self.write(pickle.GLOBAL + f"{obj.module}\n{obj.name}\n".encode("utf-8"))
        self.memoize(obj)

    def save_dtype(self, obj):
        self.save_named_global(_Global("torch", obj.name))

    dispatch[_Global] = save_named_global
    dispatch[DType] = save_dtype

    def persistent_id(self, obj):
        if isinstance(obj, _StorageRef):
            return ("storage", _Global("torch", STORAGE_OF[obj.code]), obj.key, "cpu",
                    obj.numel)
        return None

    def reducer_override(self, obj):
        if isinstance(obj, Tensor):
            return self._tensor(obj)
        if isinstance(obj, _device):
            return (_Global("torch", "device"), (str(obj),))
        if isinstance(obj, _Rebuilt):
            return obj.fn, obj.args
        size_cls = getattr(_torchic(), "Size", None)
        if size_cls is not None and type(obj) is size_cls:
            return (_Global("torch", "Size"), (tuple(obj),))
        return NotImplemented

    def _tensor(self, t):
        code = t._dtype
        values = raw.read(t.detach())            # bfloat16: its bits, as uint16
        data = np.ascontiguousarray(values).astype(values.dtype.newbyteorder("<"),
                                                   copy=False).tobytes()
        key = str(len(self.storages))
        self.storages.append((key, data))
        shape = tuple(t.shape)
        strides, acc = [], 1
        for n in reversed(shape):
            strides.append(acc)
            acc *= n
        ref = _StorageRef(key, code, int(np.prod(shape, dtype=np.int64)) if shape else 1)
        tensor = (_Global("torch._utils", "_rebuild_tensor_v2"),
                  (ref, 0, shape, tuple(reversed(strides)), t.requires_grad,
                   collections.OrderedDict()))
        if isinstance(t, Parameter):       # PyTorch's: an inner tensor without grad
            inner = (tensor[0], tensor[1][:4] + (False, collections.OrderedDict()))
            return (_Global("torch._utils", "_rebuild_parameter"),
                    (_Rebuilt(*inner), t.requires_grad, collections.OrderedDict()))
        return tensor


class _Rebuilt:
    """A (callable, args) pair pickled as the call (a Parameter's inner tensor)."""

    def __init__(self, fn, args):
        self.fn, self.args = fn, args


def _torchic():
    """The torchic package (for names other layers add to it, such as torchic.Size)."""
    return sys.modules["torchic"]


def _zip_record(zf: zipfile.ZipFile, name: str, data: bytes, offset_hint: int) -> None:
    """Write one stored record whose data starts on a 64-byte boundary (PyTorch mmaps them)."""
    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_STORED
    header = 30 + len(name.encode("utf-8"))
    pad = -(offset_hint + header + 4) % _ALIGNMENT
    # an extra field "FB" (PyTorch's padding id) of `pad` bytes
    info.extra = b"FB" + pad.to_bytes(2, "little") + b"Z" * pad
    zf.writestr(info, data)


def save(obj: Any, f: Any, pickle_protocol: int = 2) -> None:
    """Write `obj` in PyTorch's zip checkpoint format to `f` (a path or a binary file)."""
    if pickle_protocol != 2:
        if not isinstance(pickle_protocol, int) or not 2 <= pickle_protocol <= 5:
            raise ValueError(f"pickle_protocol must be 2..5, got {pickle_protocol!r}")
    buf = io.BytesIO()
    writer = _Writer(buf)
    writer.dump(obj)
    name = "archive"
    if isinstance(f, (str, os.PathLike)):
        base = os.path.basename(os.fspath(f))
        stem = base.rsplit(".", 1)[0] if "." in base else base
        name = "".join(c for c in stem if c.isalnum() or c in "_-") or "archive"
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as zf:
        def record(rec, data):
            _zip_record(zf, f"{name}/{rec}", data, out.tell())
        record("data.pkl", buf.getvalue())
        record(".format_version", b"1")
        record(".storage_alignment", b"64")
        record("byteorder", b"little")
        for key, data in writer.storages:
            record(f"data/{key}", data)
        record("version", b"3\n")
    write_file(f, out.getvalue())


# ---------------------------------------------------------------------------------
# load
# ---------------------------------------------------------------------------------
def _encode(text, encoding="latin1"):
    """``_codecs.encode``: how a protocol-2 pickle spells bytes."""
    if not isinstance(text, str) or encoding not in ("latin1", "latin-1"):
        raise pickle.UnpicklingError("_codecs.encode with other than (str, 'latin1')")
    return text.encode("latin1")


_USER_SAFE: dict[str, Any] = {}       # add_safe_globals: "module.name" -> object


def add_safe_globals(objects: list) -> None:
    """Allow these classes / functions in ``load(weights_only=True)`` (PyTorch's
    ``torch.serialization.add_safe_globals``): each an object, or an (object, "module.name")
    pair for one pickled under another name."""
    for item in objects:
        obj, name = item if isinstance(item, tuple) else (item, None)
        name = name or f"{obj.__module__}.{obj.__qualname__}"
        _USER_SAFE[name] = obj


def get_safe_globals() -> list:
    """The objects add_safe_globals allowed."""
    return list(_USER_SAFE.values())


def clear_safe_globals() -> None:
    """Forget every add_safe_globals entry."""
    _USER_SAFE.clear()


class safe_globals:
    """``with safe_globals([...]):`` allows these only inside the block."""

    def __init__(self, objects: list):
        self.objects = objects

    def __enter__(self):
        self.saved = dict(_USER_SAFE)
        add_safe_globals(self.objects)

    def __exit__(self, *exc):
        _USER_SAFE.clear()
        _USER_SAFE.update(self.saved)


class _StorageType:
    """What a pickled ``torch.FloatStorage`` global stands for: its dtype code."""

    def __init__(self, code):
        self.code = code


def _size(*args):
    return getattr(_torchic(), "Size", tuple)(*args)


def _allowed_globals() -> dict[str, Any]:
    table: dict[str, Any] = {
        "collections.OrderedDict": collections.OrderedDict,
        "collections.Counter": collections.Counter,
        "torch._utils._rebuild_tensor_v2": _rebuild_tensor_v2,
        "torch._utils._rebuild_tensor": _rebuild_tensor,
        "torch._utils._rebuild_parameter": _rebuild_parameter,
        "torch._utils._rebuild_parameter_with_state": _rebuild_parameter_with_state,
        "torch._tensor._rebuild_from_type_v2": _rebuild_from_type_v2,
        "torch.nn.parameter.Parameter": Parameter,
        "torch.Size": _size,
        "torch.device": _device,
        "_codecs.encode": _encode,
        "builtins.bytearray": bytearray,
        "builtins.set": set,
        "builtins.complex": complex,
    }
    for code, storage in STORAGE_OF.items():
        table[f"torch.{storage}"] = _StorageType(code)
    for code in DTYPES:
        table[f"torch.{dtype_of(code).name}"] = dtype_of(code)
    return table


def _torch_class(module: str, name: str) -> Any:
    """weights_only=False: a ``torch.nn...`` / ``torch.optim...`` class -> torchic's."""
    for space, prefix in ((nn, "torch.nn"), (getattr(_torchic(), "optim", None),
                                             "torch.optim")):
        if space is not None and (module == prefix or module.startswith(prefix + ".")):
            found = getattr(space, name, None)
            if found is not None:
                return found
    raise pickle.UnpicklingError(
        f"the checkpoint needs {module}.{name}, which torchic does not have")


class _Reader(pickle.Unpickler):
    def __init__(self, file, records, weights_only, where):
        super().__init__(file, encoding="utf-8")
        self.records, self.weights_only, self.where = records, weights_only, where
        self.allowed = _allowed_globals()
        self.storages: dict[str, np.ndarray] = {}

    def find_class(self, module, name):
        full = f"{module}.{name}"
        if full in self.allowed:
            return self.allowed[full]
        if full in _USER_SAFE:
            return _USER_SAFE[full]
        if self.weights_only:
            raise pickle.UnpicklingError(
                f"{self.where}: weights_only load refused the global {full!r}: it is not a "
                f"tensor, container, number or string. If you trust this file, load it with "
                f"weights_only=False, or allow the global with "
                f"torchic.serialization.add_safe_globals([{name}])")
        if module == "torch" or module.startswith("torch."):
            return _torch_class(module, name)
        return super().find_class(module, name)

    def persistent_load(self, pid):
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"):
            raise pickle.UnpicklingError(f"{self.where}: unknown persistent id {pid!r:.100}")
        _, storage_type, key, _location, numel = pid
        if not isinstance(storage_type, _StorageType):
            raise CheckpointError(f"{self.where}: storage {key!r} has type "
                                  f"{storage_type!r:.60}, which torchic cannot load "
                                  f"(complex and quantized storages are not supported)")
        if not isinstance(key, str) or not isinstance(numel, int) or numel < 0:
            raise CheckpointError(f"{self.where}: malformed storage id {pid!r:.100}")
        if key not in self.storages:
            self.storages[key] = self._read_storage(key, storage_type.code, numel)
        return (self.storages[key], storage_type.code)

    def _read_storage(self, key, code, numel):
        info = self.records.get(f"data/{key}")
        if info is None:
            raise CheckpointError(f"{self.where}: storage record data/{key} is missing")
        if info.compress_type != zipfile.ZIP_STORED:
            raise CheckpointError(f"{self.where}: record data/{key} is compressed; PyTorch "
                                  f"checkpoints store records uncompressed")
        want = numel * ITEMSIZE[code]
        if info.file_size != want:
            raise CheckpointError(f"{self.where}: storage {key} declares {numel} elements "
                                  f"({want} bytes) but its record holds {info.file_size}")
        data = self.zip.read(info)
        return np.frombuffer(data, dtype=np.dtype(DTYPES[code]).newbyteorder("<"))


def _check_layout(storage_len, offset, size, stride, where):
    if not (isinstance(offset, int) and isinstance(size, (tuple, list))
            and isinstance(stride, (tuple, list)) and len(size) == len(stride)
            and len(size) <= _MAX_NDIM
            and all(isinstance(n, int) and n >= 0 for n in size)
            and all(isinstance(s, int) and s >= 0 for s in stride) and offset >= 0):
        raise CheckpointError(f"{where}: malformed tensor (offset {offset!r:.40}, size "
                              f"{size!r:.80}, stride {stride!r:.80})")
    if any(n == 0 for n in size):
        return
    last = offset + sum((n - 1) * s for n, s in zip(size, stride))
    if last >= storage_len:
        raise CheckpointError(f"{where}: a tensor of size {tuple(size)} and stride "
                              f"{tuple(stride)} at offset {offset} reads past its storage "
                              f"of {storage_len} elements")


_WHERE = ["<checkpoint>"]       # the file being read (for the rebuild functions' errors)


def _rebuild_tensor(storage, storage_offset, size, stride):
    values, code = storage
    _check_layout(len(values), storage_offset, size, stride, _WHERE[0])
    item = values.itemsize
    view = np.lib.stride_tricks.as_strided(
        values[storage_offset:] if len(values) else values, shape=tuple(size),
        strides=tuple(s * item for s in stride), writeable=False)
    host = np.array(view, dtype=values.dtype.newbyteorder("="))
    if code == "bf16":
        host = to_float32(host.view(np.uint16)).reshape(host.shape)
    elif code == "b8":
        host = host != 0
    return from_numpy_array(host, code)


def _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad=False,
                       backward_hooks=None, metadata=None):
    t = _rebuild_tensor(storage, storage_offset, size, stride)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _rebuild_parameter(data, requires_grad, backward_hooks=None):
    return Parameter(data, requires_grad=requires_grad)


def _rebuild_parameter_with_state(data, requires_grad, backward_hooks, state):
    p = _rebuild_parameter(data, requires_grad)
    for k, v in (state or {}).items():
        setattr(p, k, v)
    return p


def _rebuild_from_type_v2(func, new_type, args, state):
    return func(*args)


def is_torch_zip(head: bytes) -> bool:
    """Whether a file's first bytes are a zip archive (PyTorch's format)."""
    return head[:4] == b"PK\x03\x04"


def load(data: bytes, where: str, weights_only: bool) -> Any:
    """The object pickled in a PyTorch zip checkpoint (its bytes)."""
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
        names = zf.namelist()
    except (zipfile.BadZipFile, ValueError, OSError) as e:
        raise CheckpointError(f"{where}: not a readable PyTorch checkpoint (bad zip: {e})") \
            from None
    pkl = [n for n in names if n.endswith("/data.pkl") and n.count("/") == 1] or \
        [n for n in names if n == "data.pkl"]
    if len(pkl) != 1:
        raise CheckpointError(f"{where}: a PyTorch checkpoint holds one <name>/data.pkl; "
                              f"found {len(pkl)}")
    prefix = pkl[0][:-len("data.pkl")]
    records = {n[len(prefix):]: zf.getinfo(n) for n in names if n.startswith(prefix)}
    order = records.get("byteorder")
    if order is not None and zf.read(order) not in (b"little",):
        raise CheckpointError(f"{where}: big-endian checkpoints are not supported")
    info = records["data.pkl"]
    if info.compress_type != zipfile.ZIP_STORED:
        raise CheckpointError(f"{where}: data.pkl is compressed; PyTorch stores it plainly")
    reader = _Reader(io.BytesIO(zf.read(info)), records, weights_only, where)
    reader.zip = zf
    _WHERE[0] = where
    try:
        return reader.load()
    except CheckpointError:
        raise
    except pickle.UnpicklingError as e:
        if str(e).startswith(where):        # (ours: it names the file already)
            raise
        raise pickle.UnpicklingError(f"{where}: malformed pickle in data.pkl: {e}") from None
    except RecursionError:
        raise CheckpointError(f"{where}: the pickle nests too deeply") from None
    except (EOFError, KeyError, IndexError, TypeError, ValueError, AttributeError,
            struct.error) as e:
        raise pickle.UnpicklingError(f"{where}: malformed pickle in data.pkl: "
                                     f"{type(e).__name__}: {e}"[:400]) from None


__all__ = ["save", "load", "add_safe_globals", "get_safe_globals", "clear_safe_globals",
           "safe_globals", "is_torch_zip"]
