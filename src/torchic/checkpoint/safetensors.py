"""Checkpoints: ``torchic.save(obj, path)`` / ``torchic.load(path)`` in the safetensors format.

safetensors (https://github.com/huggingface/safetensors) is a plain, safe
format: an 8-byte header length, a JSON header (name -> dtype, shape, byte
range) and the raw little-endian bytes. Any tool that reads it (the
``safetensors`` package for NumPy / PyTorch / JAX, Hugging Face libraries)
can read a torchic checkpoint, and torchic can read theirs.

What can be saved: a dict of name -> Tensor, such as ``model.state_dict()``,
or nested dicts of those (``{"model": model.state_dict(), "step":
torchic.tensor(1000)}``), which are stored flattened with dots
(``model.fc.weight``). Every dtype is stored as itself (F64, F32, F16, BF16, I64, I32,
I16, I8, U8, BOOL), as PyTorch's safetensors stores it. The key order and nesting are recorded in the header metadata
(``torchic.keys``) so that ``load`` gives back the same structure; files
written by other tools load as one flat dict. Anything that is not a tensor
(a Module, a number, a string) is refused with an error that names the key:
store numbers as tensors, and strings in ``metadata=`` (str -> str).

Loading keeps each tensor's dtype; the unsigned types torchic has no dtype for become the
smallest signed one holding them (U16 -> int32, U32 / U64 -> int64: values must fit).
A file is untrusted input: anything malformed raises CheckpointError (see the
reader's header comment below).
"""

import io
import json
import math
import os
import struct
import sys
from typing import Any

import numpy as np

from .. import raw
from ..creation import from_numpy_array
from ..dispatcher import DTYPES
from ..dtypes import to_float32
from ..nn import Module
from ..tensor import Tensor

_KEYS = "torchic.keys"          # JSON list of key paths (lists of str), in save order
_FORMAT = {"format": "torchic"}


class CheckpointError(ValueError, RuntimeError):
    """The file is not a safetensors checkpoint torchic can read (the message says why)."""


# ---------------------------------------------------------------------------------
# save
# ---------------------------------------------------------------------------------
def _flatten(obj, path, out):
    if isinstance(obj, Tensor):
        if not path:
            raise TypeError("torchic.save takes a dict of name -> tensor (e.g. "
                            "model.state_dict()), not a bare tensor: use {'name': t}")
        out.append((path, obj))
        return
    if isinstance(obj, dict):
        for key, value in obj.items():
            if not isinstance(key, str):
                raise TypeError(f"torchic.save: keys must be strings, got {key!r} "
                                f"({type(key).__name__}) at {_where(path)}")
            if not key:
                raise ValueError(f"torchic.save: empty key at {_where(path)}")
            _flatten(value, path + (key,), out)
        return
    what = type(obj).__name__
    hint = ""
    if isinstance(obj, Module):
        hint = ": save its weights with torchic.save(model.state_dict(), path)"
    elif isinstance(obj, (int, float, bool, np.number)):
        hint = ": store numbers as tensors (torchic.tensor(value))"
    elif isinstance(obj, str):
        hint = ": store strings with torchic.save(..., metadata={key: value})"
    elif isinstance(obj, np.ndarray):
        hint = ": convert it with torchic.tensor(array)"
    if not path:
        raise TypeError(f"torchic.save takes a dict of name -> tensor, got {what}{hint}")
    raise TypeError(f"torchic.save: the value at {'.'.join(path)!r} is a {what}, not a "
                    f"tensor; only tensors (in dicts) can be saved in safetensors{hint}")


def _where(path):
    return repr(".".join(path)) if path else "the top level"


def _check_utf8(s, what):
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(f"torchic.save: the {what} {s!r} is not valid Unicode (lone "
                         f"surrogate); the header is UTF-8") from None


def _prepare(obj, metadata):
    entries = []
    _flatten(obj, (), entries)
    arrays = {}
    for path, t in entries:
        name = ".".join(path)
        if name in arrays:
            raise ValueError(f"torchic.save: two entries flatten to the same name {name!r}")
        if name == "__metadata__":
            raise ValueError("torchic.save: the name '__metadata__' is reserved by the "
                             "safetensors header; rename that entry")
        _check_utf8(name, "key")
        a = raw.read(t.detach())                 # the host array (bfloat16: its bits)
        arrays[name] = (_SAFETENSORS_DTYPE[t._dtype], np.ascontiguousarray(a) if a.ndim
                        else a.copy())
    meta = dict(_FORMAT)
    if metadata is not None:
        if not isinstance(metadata, dict):
            raise TypeError("metadata must be a dict of str -> str")
        for k, v in metadata.items():
            if not isinstance(k, str) or not isinstance(v, str):
                raise TypeError(f"metadata must map str -> str, got {k!r}: {v!r}")
            if k.startswith("torchic.") or k == "format":
                raise ValueError(f"metadata key {k!r} is reserved")
            _check_utf8(k, "metadata key")
            _check_utf8(v, "metadata value")
        meta.update(metadata)
    meta[_KEYS] = json.dumps([list(path) for path, _ in entries], separators=(",", ":"))
    return arrays, meta


def save(obj: Any, path: str | os.PathLike, metadata: dict[str, str] | None = None) -> None:
    """Write a dict of tensors (nested dicts allowed) to `path` in the safetensors format.

    path: a file name / os.PathLike (written atomically: a temporary file then a
    rename) or a binary file object. metadata: optional str -> str entries stored in
    the header (read back with ``torchic.checkpoint.metadata(path)``).
    """
    arrays, meta = _prepare(obj, metadata)
    write_file(path, _serialize(arrays, meta))


def write_file(f: Any, data: bytes) -> None:
    """`data` into binary file object `f`, or into the file named `f` atomically (a
    temporary file, then a rename: a failed save never leaves half a checkpoint)."""
    if hasattr(f, "write"):
        f.write(data)
        return
    path = os.fspath(f)
    tmp = f"{path}.tmp{os.getpid()}"
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


# each code's safetensors dtype (PyTorch's safetensors names)
_SAFETENSORS_DTYPE = {"b8": "BOOL", "u8": "U8", "i8": "I8", "i16": "I16", "i32": "I32",
                      "i64": "I64", "f16": "F16", "bf16": "BF16", "f32": "F32", "f64": "F64"}


def _serialize(arrays, meta):
    """The safetensors bytes: an 8-byte little-endian header length, the JSON header
    (name -> dtype, shape, data_offsets; __metadata__) padded with spaces to a multiple of
    8, then each array's little-endian bytes in order."""
    header, chunks, offset = {"__metadata__": meta}, [], 0
    for name, (dtype, a) in arrays.items():
        raw_bytes = a.astype(a.dtype.newbyteorder("<"), copy=False).tobytes()
        header[name] = {"dtype": dtype, "shape": list(a.shape),
                        "data_offsets": [offset, offset + len(raw_bytes)]}
        chunks.append(raw_bytes)
        offset += len(raw_bytes)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(chunks)


# ---------------------------------------------------------------------------------
# load
# ---------------------------------------------------------------------------------
# A checkpoint is untrusted input. The reader below is ours (not the safetensors
# package's) so that every check is explicit and every failure is a CheckpointError
# naming the file: the header length is compared with the file size and a maximum
# before anything is read, the JSON is parsed with duplicate-key detection (json
# keeps the last silently) and its depth failure converted, and each entry's dtype,
# shape and byte range is checked, the ranges tiling the data section exactly as the
# format requires. Memory stays proportional to the file: no size declared by the
# header is allocated before it is checked against the bytes actually there.
_MAX_HEADER = 100_000_000   # bytes: the safetensors reference reader's limit too
_MAX_NDIM = 64 if int(np.__version__.split(".")[0]) >= 2 else 32   # NumPy's limit

# safetensors dtype -> (item size, how the bytes are read)
_DTYPES = {
    "F64": (8, "<f8"), "F32": (4, "<f4"), "F16": (2, "<f2"), "BF16": (2, "<u2"),
    "I64": (8, "<i8"), "I32": (4, "<i4"), "I16": (2, "<i2"), "I8": (1, "i1"),
    "U64": (8, "<u8"), "U32": (4, "<u4"), "U16": (2, "<u2"), "U8": (1, "u1"),
    "BOOL": (1, "u1"),
}


class _DuplicateKey(Exception):
    pass


def _unique_pairs(pairs):
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen = set()
        for k, _ in pairs:
            if k in seen:
                raise _DuplicateKey(k)
            seen.add(k)
    return obj


def _parse_json(text, where, what):
    try:
        if isinstance(text, bytes):
            text = text.decode("utf-8")
        return json.loads(text, object_pairs_hook=_unique_pairs)
    except _DuplicateKey as exc:
        raise CheckpointError(f"{where}: the {what} has the key {exc.args[0]!r} twice "
                              f"(one of the two would be dropped)") from None
    except RecursionError:
        raise CheckpointError(f"{where}: the {what} is nested too deeply") from None
    except (UnicodeDecodeError, ValueError) as exc:   # JSONDecodeError, 4300+ digit ints
        raise CheckpointError(f"{where}: not a safetensors file (bad JSON {what}: {exc})") \
            from None


def _is_int(x):
    return isinstance(x, int) and not isinstance(x, bool)


def _check_entry(name, info, data_len, where):
    """(dtype, shape, begin, end) of one header entry, every field checked."""
    def bad(why):
        return CheckpointError(f"{where}: tensor {name!r}: {why}")
    if not isinstance(info, dict):
        raise bad("its header entry is not a JSON object")
    for field in ("dtype", "shape", "data_offsets"):
        if field not in info:
            raise bad(f"its header entry has no {field!r}")
    dtype, shape, offsets = info["dtype"], info["shape"], info["data_offsets"]
    if not isinstance(dtype, str):
        raise bad(f"dtype {dtype!r} is not a string")
    if dtype not in _DTYPES:
        raise bad(f"dtype {dtype!r} cannot be read by torchic (float64/32/16, bfloat16, "
                  f"integers and bool are)")
    if not isinstance(shape, list) or not all(_is_int(d) and d >= 0 for d in shape):
        raise bad(f"shape {shape!r} is not a list of non-negative integers")
    if len(shape) > _MAX_NDIM:
        raise bad(f"{len(shape)} dimensions (at most {_MAX_NDIM})")
    if not (isinstance(offsets, list) and len(offsets) == 2 and all(map(_is_int, offsets))):
        raise bad(f"data_offsets {offsets!r} is not a list of two integers")
    begin, end = offsets
    if not 0 <= begin <= end <= data_len:
        raise bad(f"data_offsets {offsets} are outside the data section ({data_len} bytes)")
    span = 8        # NumPy needs the product of the dims (an empty tensor's too) to fit
    for d in shape:
        span *= max(d, 1)
        if span > sys.maxsize:
            raise bad(f"shape {shape} is too large")
    nbytes = math.prod(shape) * _DTYPES[dtype][0]
    if nbytes != end - begin:
        raise bad(f"shape {shape} of {dtype} does not fill its {end - begin} bytes")
    return dtype, tuple(shape), begin, end


def _read_header(f, size, where):
    """(entries [(name, dtype, shape, begin, end)] in header order, metadata, data start)."""
    if size < 8:
        raise CheckpointError(f"{where}: not a safetensors file (only {size} bytes)")
    (n,) = struct.unpack("<Q", f.read(8))
    if n > size - 8:
        raise CheckpointError(f"{where}: not a safetensors file (header length {n} exceeds the "
                              f"file size {size})")
    if n > _MAX_HEADER:
        raise CheckpointError(f"{where}: header length {n} is over the {_MAX_HEADER}-byte "
                              f"maximum")
    raw = f.read(n)
    if len(raw) != n:
        raise CheckpointError(f"{where}: the file ended inside its header")
    header = _parse_json(raw, where, "header")
    if not isinstance(header, dict):
        raise CheckpointError(f"{where}: not a safetensors file (header is not a JSON object)")
    meta = header.pop("__metadata__", None)
    if meta is None:
        meta = {}
    if not isinstance(meta, dict) or not all(isinstance(v, str) for v in meta.values()):
        raise CheckpointError(f"{where}: __metadata__ must map strings to strings")
    data_len = size - 8 - n
    entries = [(name,) + _check_entry(name, info, data_len, where)
               for name, info in header.items()]
    pos = 0   # the byte ranges must tile the data section: no overlap, no hole
    for name, _, _, begin, end in sorted(entries, key=lambda e: (e[3], e[4])):
        if begin != pos:
            raise CheckpointError(f"{where}: tensor {name!r} starts at byte {begin} of the "
                                  f"data section, expected {pos} (" +
                                  ("overlapping tensors)" if begin < pos else "a gap)"))
        pos = end
    if pos != data_len:
        raise CheckpointError(f"{where}: the data section has {data_len - pos} bytes after "
                              f"the last tensor")
    return entries, meta, 8 + n


# a file's dtype -> the code torchic loads it as (the unsigned types it has no dtype for:
# the smallest signed code holding them)
_CODE_OF = {"BOOL": "b8", "U8": "u8", "I8": "i8", "I16": "i16", "I32": "i32", "I64": "i64",
            "F16": "f16", "BF16": "bf16", "F32": "f32", "F64": "f64", "U16": "i32",
            "U32": "i64", "U64": "i64"}


def _to_torchic_array(name, dtype, raw_bytes, shape, where):
    """(an owned C-contiguous array of the entry's values, the code to load it as); bfloat16
    values as float32 (exact: from_numpy_array rounds them back to the same bits)."""
    a = np.frombuffer(raw_bytes, dtype=_DTYPES[dtype][1]).reshape(shape)
    code = _CODE_OF[dtype]
    if dtype == "BF16":                    # the upper half of a float32
        return to_float32(a).reshape(shape), code
    if dtype == "BOOL":
        return a != 0, code
    if dtype == "U64" and a.size and a.max() > 2 ** 63 - 1:
        raise CheckpointError(f"{where}: tensor {name!r} ({a.dtype}) has values that do "
                              f"not fit in int64")
    return a.astype(DTYPES[code]), code


class _Source:
    """The bytes of a path or of a binary file object, with their size and a name."""

    def __init__(self, path):
        if hasattr(path, "read"):
            data = path.read()
            if not isinstance(data, (bytes, bytearray)):
                raise TypeError(f"torchic.load needs a binary file object, got one whose "
                                f"read() returns {type(data).__name__}")
            self.where = str(getattr(path, "name", "<file object>"))
            self.file, self.size = io.BytesIO(data), len(data)
            return
        where = os.fspath(path)
        if not os.path.exists(where):
            raise FileNotFoundError(f"no checkpoint at {where!r}")
        if os.path.isdir(where):
            raise IsADirectoryError(f"{where!r} is a directory, not a checkpoint file")
        self.where = where
        self.file = open(where, "rb")
        self.size = os.fstat(self.file.fileno()).st_size

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.file.close()


def _read_arrays(path):
    """([(name, (array, code))] in header order, metadata dict, file name)."""
    with _Source(path) as src:
        entries, meta, start = _read_header(src.file, src.size, src.where)
        arrays = []
        for name, dtype, shape, begin, end in entries:
            src.file.seek(start + begin)
            raw = src.file.read(end - begin)
            if len(raw) != end - begin:
                raise CheckpointError(f"{src.where}: the file ended inside tensor {name!r}")
            arrays.append((name, _to_torchic_array(name, dtype, raw, shape, src.where)))
    return arrays, meta, src.where


def _key_paths(meta, names, where):
    """The nesting recorded by torchic.save, or None for a flat dict.

    None also when the recorded paths no longer name exactly the file's tensors
    (the file was edited by another tool): the tensors then load flat.
    """
    if _KEYS not in meta:
        return None
    paths = _parse_json(meta[_KEYS], where, f"{_KEYS} metadata")
    if not isinstance(paths, list) or not all(
            isinstance(p, list) and p and all(isinstance(k, str) for k in p) for p in paths):
        raise CheckpointError(f"{where}: bad {_KEYS} metadata (not a list of key paths)")
    paths = [tuple(p) for p in paths]
    joined = [".".join(p) for p in paths]
    if len(set(joined)) != len(joined) or set(joined) != set(names):
        return None
    return paths


def load(path: str | os.PathLike, *, map_location: Any = None,
         weights_only: bool | None = None) -> dict[str, Any]:
    """Read a safetensors file into a dict of name -> Tensor on the current backend.

    Files written by torchic.save come back with their nesting and key order;
    other files come back as one flat dict in the file's key order.
    map_location and weights_only are accepted for PyTorch scripts and ignored
    (tensors always load onto the current backend; safetensors holds only weights).
    A file that is not a valid safetensors file raises CheckpointError.
    """
    arrays, meta, where = _read_arrays(path)
    paths = _key_paths(meta, [name for name, _ in arrays], where)
    by_name = dict(arrays)
    if paths is None:
        paths = [(name,) for name, _ in arrays]
    # the whole nesting is checked before any tensor is uploaded
    out, leaves = {}, []
    for p in paths:
        node = out
        for i, part in enumerate(p[:-1]):
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise CheckpointError(f"{where}: key {'.'.join(p)!r} is below "
                                      f"{'.'.join(p[:i + 1])!r}, which is a tensor")
        if p[-1] in node:
            raise CheckpointError(f"{where}: key {'.'.join(p)!r} is a tensor and also holds "
                                  f"other keys")
        node[p[-1]] = None
        leaves.append((node, p[-1], ".".join(p)))
    for node, key, name in leaves:
        a, code = by_name.pop(name)
        node[key] = from_numpy_array(a, code)
    return out


def metadata(path: str | os.PathLike) -> dict[str, str]:
    """The user metadata (str -> str) stored by save(..., metadata=...)."""
    with _Source(path) as src:
        _, meta, _ = _read_header(src.file, src.size, src.where)
    return {k: v for k, v in meta.items() if not k.startswith("torchic.") and k != "format"}
