"""``torch.accelerator`` under torchic: no accelerator device (the GPU, where there is one, is
used through the webgpu backend: ``torchic.init(backend="webgpu")``)."""

from typing import Any

from . import dispatcher


def is_available() -> bool:
    """False: no accelerator device."""
    return False


def current_accelerator(check_available: bool = False) -> Any:
    """None: no accelerator device."""
    return None


def device_count() -> int:
    """0: no accelerator device."""
    return 0


def synchronize(device: Any = None) -> None:
    """Waits for the queued ops of the current runtime (as torchic.sync)."""
    dispatcher.runtime().sync()
