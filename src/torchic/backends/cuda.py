"""``torch.backends.cuda`` under torchic: no CUDA. The flags scripts set
(``torch.backends.cuda.matmul.allow_tf32 = True``, the scaled-dot-product-attention kernel
switches) are plain settable attributes that change nothing: torchic's float32 matmuls are
float32 on every backend, and its attention is one implementation."""

import contextlib
from typing import Any, Iterator


class _MatmulFlags:
    """``torch.backends.cuda.matmul``: allow_tf32 and the reduced-precision switches."""

    def __init__(self) -> None:
        self.allow_tf32 = False
        self.allow_fp16_reduced_precision_reduction = True
        self.allow_bf16_reduced_precision_reduction = True
        self.fp32_precision = "ieee"


matmul = _MatmulFlags()
_SDP = {"flash": True, "mem_efficient": True, "math": True, "cudnn": True}


def is_built() -> bool:
    """False: torchic has no CUDA build."""
    return False


def enable_flash_sdp(enabled: bool) -> None:
    """Recorded, no effect."""
    _SDP["flash"] = bool(enabled)


def enable_mem_efficient_sdp(enabled: bool) -> None:
    """Recorded, no effect."""
    _SDP["mem_efficient"] = bool(enabled)


def enable_math_sdp(enabled: bool) -> None:
    """Recorded, no effect."""
    _SDP["math"] = bool(enabled)


def enable_cudnn_sdp(enabled: bool) -> None:
    """Recorded, no effect."""
    _SDP["cudnn"] = bool(enabled)


def flash_sdp_enabled() -> bool:
    return _SDP["flash"]


def mem_efficient_sdp_enabled() -> bool:
    return _SDP["mem_efficient"]


def math_sdp_enabled() -> bool:
    return _SDP["math"]


def cudnn_sdp_enabled() -> bool:
    return _SDP["cudnn"]


@contextlib.contextmanager
def sdp_kernel(enable_flash: bool = True, enable_math: bool = True,
               enable_mem_efficient: bool = True, enable_cudnn: bool = True) -> Iterator[None]:
    """The (deprecated) kernel-choice block: records the switches inside it, no effect."""
    saved = dict(_SDP)
    _SDP.update(flash=enable_flash, math=enable_math, mem_efficient=enable_mem_efficient,
                cudnn=enable_cudnn)
    try:
        yield
    finally:
        _SDP.clear()
        _SDP.update(saved)


def preferred_linalg_library(backend: Any = None) -> Any:
    """Accepted, no effect."""
    return backend
