"""Checkpoints: ``torchic.save(obj, path)`` / ``torchic.load(path)`` in the safetensors format.

safetensors (https://github.com/huggingface/safetensors) is a plain, safe
format: an 8-byte header length, a JSON header (name -> dtype, shape, byte
range) and the raw little-endian bytes. Any tool that reads it (the
``safetensors`` package for NumPy / PyTorch / JAX, Hugging Face libraries)
can read a torchic checkpoint, and torchic can read theirs.

What can be saved: a dict of name -> Tensor, such as ``model.state_dict()``,
or nested dicts of those (``{"model": model.state_dict(), "step":
torchic.tensor(1000)}``), which are stored flattened with dots
(``model.fc.weight``). float32 tensors are stored as F32, int32 tensors stay
I32. The key order and nesting are recorded in the header metadata
(``torchic.keys``) so that ``load`` gives back the same structure; files
written by other tools load as one flat dict. Anything that is not a tensor
(a Module, a number, a string) is refused with an error that names the key:
store numbers as tensors, and strings in ``metadata=`` (str -> str).

Loading converts what torchic cannot hold: float64 / float16 become float32,
int64 / int16 / int8 / uint8 / bool become int32 (values must fit).
"""

import json
import os
import struct

import numpy as np

from .tensor import Tensor

_KEYS = "torchic.keys"          # JSON list of key paths (lists of str), in save order
_FORMAT = {"format": "torchic"}


class CheckpointError(ValueError):
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
    from .nn import Module
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


def _prepare(obj, metadata):
    entries = []
    _flatten(obj, (), entries)
    arrays = {}
    for path, t in entries:
        name = ".".join(path)
        if name in arrays:
            raise ValueError(f"torchic.save: two entries flatten to the same name {name!r}")
        a = t.detach().numpy()
        arrays[name] = a if a.flags.c_contiguous else a.copy(order="C")   # (keeps 0-d)
    meta = dict(_FORMAT)
    if metadata is not None:
        if not isinstance(metadata, dict):
            raise TypeError("metadata must be a dict of str -> str")
        for k, v in metadata.items():
            if not isinstance(k, str) or not isinstance(v, str):
                raise TypeError(f"metadata must map str -> str, got {k!r}: {v!r}")
            if k.startswith("torchic.") or k == "format":
                raise ValueError(f"metadata key {k!r} is reserved")
        meta.update(metadata)
    meta[_KEYS] = json.dumps([list(path) for path, _ in entries], separators=(",", ":"))
    return arrays, meta


def save(obj, path, metadata=None):
    """Write a dict of tensors (nested dicts allowed) to `path` in the safetensors format.

    path: a file name / os.PathLike (written atomically: a temporary file then a
    rename) or a binary file object. metadata: optional str -> str entries stored in
    the header (read back with ``torchic.checkpoint.metadata(path)``).
    """
    from safetensors.numpy import save as st_save
    arrays, meta = _prepare(obj, metadata)
    data = st_save(arrays, metadata=meta)
    if hasattr(path, "write"):
        path.write(data)
        return
    path = os.fspath(path)
    tmp = f"{path}.tmp{os.getpid()}"
    try:
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


# ---------------------------------------------------------------------------------
# load
# ---------------------------------------------------------------------------------
def _read_header(data, name):
    if len(data) < 8:
        raise CheckpointError(f"{name}: not a safetensors file (only {len(data)} bytes)")
    (n,) = struct.unpack("<Q", data[:8])
    if n > len(data) - 8:
        raise CheckpointError(f"{name}: not a safetensors file (header length {n} exceeds the "
                              f"file size {len(data)})")
    try:
        header = json.loads(bytes(data[8:8 + n]))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CheckpointError(f"{name}: not a safetensors file (bad JSON header: {exc})") \
            from None
    if not isinstance(header, dict):
        raise CheckpointError(f"{name}: not a safetensors file (header is not a JSON object)")
    return header


def _head_of_file(where):
    """The 8-byte length and the JSON header of a file (or what there is of them)."""
    size = os.path.getsize(where)
    with open(where, "rb") as f:
        head = f.read(8)
        if len(head) < 8:
            return head
        (n,) = struct.unpack("<Q", head)
        if n > size - 8:
            raise CheckpointError(f"{where}: not a safetensors file (header length {n} "
                                  f"exceeds the file size {size})")
        return head + f.read(n)


def _to_torchic_array(name, a, where):
    if a.dtype == np.float32 or a.dtype == np.int32:
        return a
    kind = a.dtype.kind
    if kind == "f":
        return a.astype(np.float32)
    if kind in "iub":
        if a.size and kind != "b" and (a.min() < -2**31 or a.max() > 2**31 - 1):
            raise CheckpointError(f"{where}: tensor {name!r} ({a.dtype}) has values that do "
                                  f"not fit in int32")
        return a.astype(np.int32)
    raise CheckpointError(f"{where}: tensor {name!r} has dtype {a.dtype}, which torchic "
                          f"cannot hold (float32 / int32 only)")


def _read_arrays(path):
    """(arrays by name, metadata dict) from a path or a binary file object."""
    if hasattr(path, "read"):
        data = path.read()
        where = getattr(path, "name", "<file object>")
        header = _read_header(data, where)
        from safetensors.numpy import load as st_load
        try:
            arrays = st_load(data)
        except Exception as exc:   # SafetensorError, or TypeError for dtypes NumPy lacks
            raise CheckpointError(f"{where}: cannot read safetensors data: {exc}") from None
        return arrays, header.get("__metadata__") or {}, where
    where = os.fspath(path)
    if not os.path.exists(where):
        raise FileNotFoundError(f"no checkpoint at {where!r}")
    if os.path.isdir(where):
        raise IsADirectoryError(f"{where!r} is a directory, not a checkpoint file")
    _read_header(_head_of_file(where), where)
    from safetensors import safe_open
    try:
        with safe_open(where, framework="np") as f:
            meta = f.metadata() or {}
            arrays = {k: f.get_tensor(k) for k in f.keys()}
    except Exception as exc:   # SafetensorError, or TypeError for dtypes NumPy lacks (bf16)
        raise CheckpointError(f"{where}: cannot read safetensors data: {exc}" + (
            " (bfloat16 is not supported: store float32)" if "bfloat16" in str(exc) else "")
        ) from None
    return arrays, meta, where


def load(path, *, map_location=None, weights_only=None):
    """Read a safetensors file into a dict of name -> Tensor on the current backend.

    Files written by torchic.save come back with their nesting and key order;
    other files come back as one flat dict in the file's key order.
    map_location and weights_only are accepted for PyTorch scripts and ignored
    (tensors always load onto the current backend; safetensors holds only weights).
    """
    from .creation import from_numpy_array
    arrays, meta, where = _read_arrays(path)
    paths = None
    if _KEYS in meta:
        try:
            paths = [tuple(p) for p in json.loads(meta[_KEYS])]
        except (json.JSONDecodeError, TypeError) as exc:
            raise CheckpointError(f"{where}: bad {_KEYS} metadata: {exc}") from None
        if sorted(".".join(p) for p in paths) != sorted(arrays):
            paths = None   # edited by another tool: fall back to flat names
    if paths is None:
        paths = [(k,) for k in arrays]
    out = {}
    for p in paths:
        name = ".".join(p)
        a = _to_torchic_array(name, arrays[name], where)
        t = from_numpy_array(a if a.flags.c_contiguous else a.copy(order="C"), "f32" if a.dtype == np.float32 else "i32")
        node = out
        for part in p[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise CheckpointError(f"{where}: key {name!r} collides with a tensor of the "
                                      f"same prefix")
        node[p[-1]] = t
    return out


def metadata(path):
    """The user metadata (str -> str) stored by save(..., metadata=...)."""
    if hasattr(path, "read"):
        meta = _read_header(path.read(), getattr(path, "name", "<file object>")).get(
            "__metadata__") or {}
    else:
        where = os.fspath(path)
        meta = _read_header(_head_of_file(where), where).get("__metadata__") or {}
    return {k: v for k, v in meta.items() if not k.startswith("torchic.") and k != "format"}

