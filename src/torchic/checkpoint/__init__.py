"""``torchic.save`` / ``torchic.load``: PyTorch's checkpoint files, and safetensors.

Two formats, one pair of functions:

* PyTorch's zip format (``torch_format.py``), the default: any object graph of tensors
  (every dtype), dicts (OrderedDict too), lists, tuples, numbers, strings, None, NumPy arrays
  and, for files loaded with ``weights_only=False``, modules and other picklable objects.
  Real ``torch.load`` reads these files and ``torchic.load`` reads PyTorch's.
* safetensors (``safetensors.py``): for a path ending in ``.safetensors``, a ``metadata=``
  argument, or ``save_safetensors`` / ``load_safetensors``: a dict (nested dicts allowed) of
  tensors only.

``load`` tells the formats apart by the file's first bytes. A file is untrusted input:
``weights_only=True`` (the default, as in PyTorch 2.6+) unpickles only tensors, containers,
numbers and strings; anything malformed raises ``CheckpointError`` (a RuntimeError and a
ValueError) or ``pickle.UnpicklingError``, naming the file and the problem.
"""

import io
import os
import pickle
from typing import Any

from . import safetensors as _st
from . import torch_format as _tf
from .safetensors import CheckpointError, metadata
from .torch_format import add_safe_globals, clear_safe_globals, get_safe_globals, safe_globals

# the first pickle of a pre-1.6 torch.save file: this magic number, a long of 10 bytes
_LEGACY_MAGIC = (0x1950A86A20F9469CFC6C).to_bytes(10, "little")

save_safetensors = _st.save
load_safetensors = _st.load


def _is_safetensors_path(f: Any) -> bool:
    return isinstance(f, (str, os.PathLike)) and os.fspath(f).endswith(".safetensors")


def save(obj: Any, f: Any, pickle_protocol: int = 2, _use_new_zipfile_serialization: bool = True,
         *, metadata: dict[str, str] | None = None) -> None:
    """Save `obj` to `f`, as ``torch.save``.

    Args:
        obj: what to save: tensors, dicts, lists, tuples, numbers, strings, None, NumPy
            arrays, modules and other picklable objects (a model's ``state_dict()``, an
            optimizer's, nanoGPT's ``{'model': ..., 'optimizer': ..., 'iter_num': ...}``).
        f: a path (written atomically: a temporary file, then a rename) or a binary file
            object. A path ending in ``.safetensors`` (or any ``metadata=``) writes the
            safetensors format instead, which holds dicts of tensors only.
        pickle_protocol: accepted as PyTorch's; the file is written with protocol 2.
        metadata: safetensors only: str -> str entries stored in its header.

    Example:
        >>> import torchic as torch
        >>> torch.save({"w": torch.ones(2), "step": 3}, "/tmp/ckpt.pt")
        >>> torch.load("/tmp/ckpt.pt")["step"]
        3
    """
    if metadata is not None or _is_safetensors_path(f):
        _st.save(obj, f, metadata=metadata)
        return
    if not _use_new_zipfile_serialization:
        raise NotImplementedError("torchic writes PyTorch's zip format only "
                                  "(_use_new_zipfile_serialization=True)")
    _tf.save(obj, f, pickle_protocol)


def _read_all(f: Any) -> tuple[bytes, str]:
    if hasattr(f, "read"):
        data = f.read()
        if not isinstance(data, (bytes, bytearray)):
            raise TypeError(f"torchic.load needs a binary file object, got one whose read() "
                            f"returns {type(data).__name__}")
        return bytes(data), str(getattr(f, "name", "<file object>"))
    where = os.fspath(f)
    if not os.path.exists(where):
        raise FileNotFoundError(f"no checkpoint at {where!r}")
    if os.path.isdir(where):
        raise IsADirectoryError(f"{where!r} is a directory, not a checkpoint file")
    with open(where, "rb") as fh:
        return fh.read(), where


def load(f: Any, map_location: Any = None, pickle_module: Any = None, *,
         weights_only: bool | None = None, mmap: bool | None = None,
         **pickle_load_args: Any) -> Any:
    """Load what ``save`` (or PyTorch's ``torch.save``) wrote, as ``torch.load``.

    Args:
        f: a path or a binary file object.
        map_location: accepted for PyTorch scripts ("cpu", a device, a dict or a function):
            tensors always load onto the current backend.
        weights_only: True (the default, as in PyTorch 2.6+): only tensors, containers,
            numbers, strings and the globals ``torchic.serialization.add_safe_globals``
            allowed; anything else raises ``pickle.UnpicklingError`` naming it. False
            unpickles any object (modules, NumPy arrays): only for files you trust.
        mmap: accepted (the file is read into memory).

    Returns:
        The saved object; a safetensors file gives its dict of tensors.
    """
    if pickle_module is not None and pickle_module is not pickle:
        raise ValueError("torchic.load reads with its own unpickler; pickle_module is not "
                         "supported")
    data, where = _read_all(f)
    if _tf.is_torch_zip(data):
        return _tf.load(data, where, weights_only is not False)
    if data[:4] == b"\x80\x02\x8a\x0a" and data[4:14] == _LEGACY_MAGIC:
        raise CheckpointError(f"{where}: a legacy (pre-1.6, non-zip) PyTorch checkpoint; "
                              f"re-save it with a recent torch.save to load it in torchic")
    source = io.BytesIO(data)
    source.name = where                  # (the reader's errors name the file)
    return _st.load(source, map_location=map_location)


__all__ = ["save", "load", "save_safetensors", "load_safetensors", "metadata",
           "CheckpointError", "add_safe_globals", "get_safe_globals", "clear_safe_globals",
           "safe_globals"]
