"""``torch.nn.modules`` and its submodules (``torch.nn.modules.loss.CrossEntropyLoss``,
``from torch.nn.modules.linear import Linear`` ...): PyTorch's class paths, resolving to
torchic.nn's classes. Each submodule here looks its names up in torchic.nn (`resolve`), so a
layer added to torchic.nn is reachable by its PyTorch path with no table to keep."""

import importlib
import importlib.util
import sys
from typing import Any

_NN = __name__.rsplit(".", 1)[0]        # torchic.nn


def resolve(name: str, path: str) -> Any:
    """torchic.nn's `name` for the module `path` (an AttributeError naming both if none)."""
    nn = sys.modules[_NN]
    if name.startswith("__"):
        raise AttributeError(name)
    try:
        return getattr(nn, name)
    except AttributeError:
        raise AttributeError(f"module {path!r} has no attribute {name!r} (torchic.nn has no "
                             f"{name})") from None


def __getattr__(name: str) -> Any:
    # a submodule (nn.modules.loss) first: attribute access imports it, as an import would
    if not name.startswith("_") and importlib.util.find_spec(f"{__name__}.{name}") is not None:
        return importlib.import_module(f"{__name__}.{name}")
    return resolve(name, __name__)


# the family modules themselves (each a two-line __getattr__), so that `nn.modules.loss.X`
# works without an import of its own, as PyTorch's
from . import (activation, adaptive, batchnorm, channelshuffle, container, conv,  # noqa: E402,F401
               distance, dropout, flatten, fold, instancenorm, linear, loss, module,
               normalization, padding, pixelshuffle, pooling, rnn, sparse, transformer,
               upsampling)
