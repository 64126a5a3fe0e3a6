"""``torch.nn.modules.distance``: PyTorch's class path, resolving to torchic.nn's classes."""

from typing import Any

from . import resolve


def __getattr__(name: str) -> Any:
    return resolve(name, __name__)
