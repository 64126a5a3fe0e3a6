"""torch.nn.modules's class paths (`torch.nn.modules.loss.CrossEntropyLoss`,
`torch.nn.modules.activation.ReLU`, ...): each submodule re-exports torchic.nn's classes of
that family, so code (and pickles) naming those paths find torchic's. A family with no file
here (conv, pooling, rnn ... as they land) resolves any name through torchic.nn as well."""

import sys
import types

from . import (activation, batchnorm, channelshuffle, container, distance, dropout,  # noqa: F401
               flatten, instancenorm, linear, loss, module, normalization, sparse)

_FAMILIES = ("conv", "pooling", "padding", "rnn", "transformer", "pixelshuffle", "upsampling",
             "fold", "adaptive", "lazy")


class _Family(types.ModuleType):
    """A torch.nn.modules.<family> path whose classes live in torchic.nn (by name)."""

    def __getattr__(self, name):
        nn = sys.modules[__name__.rsplit(".", 1)[0]]
        try:
            return getattr(nn, name)
        except AttributeError:
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}") from None


def __getattr__(name):
    nn = sys.modules[__name__.rsplit(".", 1)[0]]
    if name in _FAMILIES:
        fam = _Family(f"{__name__}.{name}")
        sys.modules[fam.__name__] = fam
        globals()[name] = fam
        return fam
    try:
        return getattr(nn, name)
    except AttributeError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
