"""Collation (PyTorch's default_collate / default_convert): samples into batches.
"""

import collections.abc
import copy
import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from ... import creation
from ...api import stack
from ...dtypes import float32, int64
from ...tensor import Tensor

_STR_OR_OBJECT = re.compile(r"[SaUO]")      # NumPy dtype kinds default_collate refuses
_COLLATE_ERROR = ("default_collate: batch must contain tensors, numpy arrays, numbers, dicts "
                  "or lists; found {}")


def default_collate(batch: Sequence[Any]) -> Any:
    """PyTorch's default_collate: a list of samples -> one batch, by the first sample's type.

    Tensors are stacked on a new dim 0; NumPy arrays become tensors and are stacked; NumPy
    scalars, ints and floats become a 1-D tensor (int -> int64 as PyTorch; float -> float32,
    where PyTorch makes float64: webgpu holds no float64); strings stay a list; mappings,
    namedtuples and sequences are collated field by field (a tuple of fields gives a list,
    as in PyTorch).
    """
    elem = batch[0]
    if isinstance(elem, Tensor):
        return stack(list(batch), 0)
    if isinstance(elem, np.ndarray):
        if _STR_OR_OBJECT.search(elem.dtype.str) is not None:
            raise TypeError(_COLLATE_ERROR.format(elem.dtype))
        return default_collate([creation.as_tensor(b) for b in batch])
    if isinstance(elem, np.generic) and not isinstance(elem, (np.str_, np.bytes_)):
        if _STR_OR_OBJECT.search(elem.dtype.str) is not None:
            raise TypeError(_COLLATE_ERROR.format(elem.dtype))
        return creation.as_tensor(np.asarray(batch))
    if isinstance(elem, bool):
        return creation.tensor(list(batch))
    if isinstance(elem, int):
        return creation.tensor(list(batch), dtype=int64)
    if isinstance(elem, float):
        return creation.tensor(list(batch), dtype=float32)
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, collections.abc.Mapping):
        fields = {key: default_collate([d[key] for d in batch]) for key in elem}
        if isinstance(elem, collections.abc.MutableMapping):
            out = copy.copy(elem)
            out.update(fields)
            return out
        try:
            return type(elem)(fields)
        except TypeError:
            return fields
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):       # a namedtuple
        return type(elem)(*(default_collate(list(s)) for s in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        it = iter(batch)
        size = len(next(it))
        if not all(len(e) == size for e in it):
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = [list(s) for s in zip(*batch)]
        if isinstance(elem, tuple):
            return [default_collate(s) for s in transposed]
        try:
            if isinstance(elem, collections.abc.MutableSequence):
                out = copy.copy(elem)
                for i, samples in enumerate(transposed):
                    out[i] = default_collate(samples)
                return out
            return type(elem)([default_collate(s) for s in transposed])
        except TypeError:
            return [default_collate(s) for s in transposed]
    raise TypeError(_COLLATE_ERROR.format(type(elem)))


def default_convert(data: Any) -> Any:
    """batch_size=None's collate: NumPy arrays (and those inside containers) -> tensors."""
    if isinstance(data, np.ndarray) or (isinstance(data, np.generic) and
                                        not isinstance(data, (np.str_, np.bytes_))):
        if _STR_OR_OBJECT.search(data.dtype.str) is not None:
            return data
        return creation.as_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        return type(data)({k: default_convert(v) for k, v in data.items()}) \
            if isinstance(data, dict) else {k: default_convert(v) for k, v in data.items()}
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        try:
            return type(data)([default_convert(d) for d in data])
        except TypeError:
            return [default_convert(d) for d in data]
    return data
