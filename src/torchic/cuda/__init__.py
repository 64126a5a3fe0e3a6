"""torch.cuda under torchic: no CUDA device, so PyTorch's device-selection idiom picks "cpu".

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

torchic runs ops on the GPU through its webgpu backend (torchic.init(backend="webgpu")),
not through a device string. The seeding and cache calls scripts make unconditionally are
accepted and do nothing (torchic.manual_seed seeds torchic's one generator); synchronize()
waits for the queued ops of the current runtime, whatever its backend.
"""

from .. import dispatcher


def is_available() -> bool:
    """False: torchic has no CUDA device (`"cuda" if is_available() else "cpu"` is "cpu")."""
    return False


def device_count() -> int:
    """0: no CUDA device."""
    return 0


def is_initialized() -> bool:
    """False: there is no CUDA state to initialize."""
    return False


def is_bf16_supported(including_emulation=True) -> bool:
    """False: torchic computes in float32."""
    return False


def _seed(seed):
    if isinstance(seed, bool) or not isinstance(seed, int):
        try:
            seed = int(seed)        # PyTorch's int(seed)
        except (TypeError, ValueError):
            raise TypeError(f"manual_seed expects an int, got {type(seed).__name__}") from None
    return seed


def manual_seed(seed: int) -> None:
    """No CUDA generator to seed: accepted and ignored (torchic.manual_seed seeds torchic)."""
    _seed(seed)


def manual_seed_all(seed: int) -> None:
    """No CUDA generators to seed: accepted and ignored, as `manual_seed`."""
    _seed(seed)


def synchronize(device: object = None) -> None:
    """torchic.sync(): wait until every queued op has run (raises KernelError if one failed)."""
    dispatcher.runtime().sync()


def empty_cache() -> None:
    """Nothing cached on a CUDA device: a no-op."""


def current_device() -> int:
    """Raises RuntimeError: there is no current CUDA device."""
    raise RuntimeError("torchic.cuda.current_device(): there is no CUDA device; torchic picks "
                       "where ops run with the backend (torchic.init(backend=\"webgpu\") runs "
                       "them on the GPU), and torch.cuda.is_available() is False")


def set_device(device: object) -> None:
    """Accepted and ignored: torchic has one device per backend (the script's
    `torch.cuda.set_device(local_rank)` line passes; where ops run is torchic.init's backend)."""


def get_device_name(device: object = None) -> str:
    """Raises RuntimeError: there is no CUDA device to name."""
    raise RuntimeError("torchic.cuda.get_device_name(): there is no CUDA device "
                       "(torch.cuda.is_available() is False)")
