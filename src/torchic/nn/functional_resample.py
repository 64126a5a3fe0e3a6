"""Resampling and pixel shuffles: torch.nn.functional's spellings. linear / bilinear /
bicubic / trilinear / area are separable, so each is a product by a small (out, in)
interpolation matrix per spatial dim (cached); nearest modes gather along each dim; the
pixel shuffles are a reshape, a permute and one copy."""

import math
from collections.abc import Sequence

import numpy as np

from ..tensor import Tensor
from .functional_pad import _gather_dim, _tuple
from .functional_pool import _adaptive_avg, _avg_matrix, _check_input, _const, _separable

__all__ = ["interpolate", "upsample", "upsample_nearest", "upsample_bilinear", "pixel_shuffle",
           "pixel_unshuffle"]


def _source(dst, n_in, n_out, scale, align_corners, clamp):
    """The fractional source coordinate of each output position (PyTorch's
    area_pixel_compute_source_index)."""
    if align_corners:
        step = (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
        return dst * step
    src = (dst + 0.5) * scale - 0.5
    return np.maximum(src, 0.0) if clamp else src


def _cubic(t, a=-0.75):
    t = np.abs(t)
    return np.where(t <= 1, ((a + 2) * t - (a + 3)) * t * t + 1,
                    np.where(t < 2, ((a * t - 5 * a) * t + 8 * a) * t - 4 * a, 0.0))


def _interp_matrix(mode, n_in, n_out, scale, align_corners):
    m = np.zeros((n_out, n_in))
    dst = np.arange(n_out, dtype=np.float64)
    rows = np.arange(n_out)
    if mode == "linear":
        src = _source(dst, n_in, n_out, scale, align_corners, clamp=True)
        i0 = np.minimum(np.floor(src).astype(np.int64), n_in - 1)
        i1 = np.minimum(i0 + 1, n_in - 1)
        lam = src - i0
        np.add.at(m, (rows, i0), 1.0 - lam)
        np.add.at(m, (rows, i1), lam)
    elif mode == "cubic":
        src = _source(dst, n_in, n_out, scale, align_corners, clamp=False)
        i = np.floor(src).astype(np.int64)
        t = src - i
        for off in (-1, 0, 1, 2):
            np.add.at(m, (rows, np.clip(i + off, 0, n_in - 1)), _cubic(t - off))
    else:
        m = _avg_matrix(n_in, n_out)
    return m


def _nearest_index(n_in, n_out, scale, exact):
    dst = np.arange(n_out, dtype=np.float64)
    src = np.floor((dst + 0.5) * scale) if exact else np.floor(dst * np.float32(scale))
    return np.minimum(src.astype(np.int64), n_in - 1)


_MODES = {"nearest": 0, "nearest-exact": 0, "linear": 1, "bilinear": 2, "bicubic": 2,
          "trilinear": 3, "area": None}


def interpolate(input: Tensor, size: int | Sequence[int] | None = None,
                scale_factor: float | Sequence[float] | None = None, mode: str = "nearest",
                align_corners: bool | None = None, recompute_scale_factor: bool | None = None,
                antialias: bool = False) -> Tensor:
    """Resamples input (N, C, L) or (N, C, H, W) to `size` or by `scale_factor`.

    Args:
        input: `(N, C, L)` or `(N, C, H, W)`.
        size: the output's spatial size (an int or one per spatial dim), or
        scale_factor: the factor (or one per dim) the spatial size is multiplied by.
        antialias: not supported (True raises NotImplementedError).
        mode: "nearest" (PyTorch's floor(dst*scale) rule), "nearest-exact" (pixel centres),
            "linear" (3-d input), "bilinear" / "bicubic" (4-d; bicubic's a = -0.75) or
            "area" (adaptive average pooling).
        align_corners: for the linear modes, map the corner pixels' centres onto each other
            (default False).
        recompute_scale_factor: compute the scale from the output size instead of using
            scale_factor as given.

    Example:
        >>> F.interpolate(torchic.randn(1, 3, 4, 4), scale_factor=2, mode="bilinear").shape
        torchic.Size([1, 3, 8, 8])
    """
    _check_input(input, "interpolate")
    if mode not in _MODES:
        raise NotImplementedError(f"Input Error: got mode {mode!r}; expected one of "
                                  f"{sorted(_MODES)}")
    if antialias:
        raise NotImplementedError("interpolate: antialias=True is not supported in torchic")
    dims = input.ndim - 2
    if dims not in (1, 2, 3):
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported "
                                  f"(got {input.ndim}D) for the modes: nearest | linear | "
                                  f"bilinear | bicubic | trilinear | area | nearest-exact")
    if mode in ("nearest", "nearest-exact", "area"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating "
                             "modes: linear | bilinear | bicubic | trilinear")
    elif (mode == "linear") != (dims == 1) or (mode == "trilinear") != (dims == 3) or \
            (mode in ("bilinear", "bicubic") and dims != 2):
        raise NotImplementedError(f"Got {input.ndim}D input, but {mode} mode needs "
                                  f"{_MODES[mode] + 2}D input")
    align = bool(align_corners)
    sizes = input.shape[2:]
    if (size is None) == (scale_factor is None):
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        out = _tuple(size, dims, "size") if not isinstance(size, (int, np.integer)) else \
            (int(size),) * dims
        scales = [n / o for n, o in zip(sizes, out)]
    else:
        fs = tuple(scale_factor) if isinstance(scale_factor, Sequence) else \
            (scale_factor,) * dims
        if len(fs) != dims:
            raise ValueError(f"scale_factor shape must match input shape. Input is {dims}D, "
                             f"scale_factor size is {len(fs)}")
        out = tuple(int(math.floor(n * f)) for n, f in zip(sizes, fs))
        scales = [n / o for n, o in zip(sizes, out)] if recompute_scale_factor else \
            [1.0 / f for f in fs]
    if any(o <= 0 for o in out):
        raise RuntimeError(f"interpolate: the output size {out} must be positive")
    if mode == "area":
        return _adaptive_avg(input, out, dims, "interpolate")
    if mode.startswith("nearest"):
        x = input
        for i, (n, o, sc) in enumerate(zip(sizes, out, scales)):
            if n != o:
                x = _gather_dim(x, 2 + i, _nearest_index(n, o, sc, mode == "nearest-exact"))
        return x if x is not input else input.clone()
    kind = "cubic" if mode == "bicubic" else "linear"
    mats = [_const(("interp", kind, n, o, sc, align, input._dtype),
                   lambda n=n, o=o, sc=sc: _interp_matrix(kind, n, o, sc, align),
                   dtype=input.dtype) for n, o, sc in zip(sizes, out, scales)]
    return _separable(input, mats)


def upsample(input: Tensor, size: int | Sequence[int] | None = None,
             scale_factor: float | Sequence[float] | None = None, mode: str = "nearest",
             align_corners: bool | None = None) -> Tensor:
    """The deprecated name of interpolate (same arguments).

    Args:
        input: `(N, C, L)` or `(N, C, H, W)`.
        size: the output's spatial size (an int or one per spatial dim), or
        scale_factor: the factor (or one per dim) the spatial size is multiplied by.
        mode: as interpolate's. Default: "nearest".
        align_corners: as interpolate's.

    Example:
        >>> F.upsample(torch.tensor([[[1.0, 2.0]]]), scale_factor=2)
        tensor([[[1., 1., 2., 2.]]])
    """
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input: Tensor, size: int | Sequence[int] | None = None,
                     scale_factor: float | Sequence[float] | None = None) -> Tensor:
    """`interpolate(input, size, scale_factor, mode="nearest")` (deprecated in PyTorch).

    Args:
        input: `(N, C, L)` or `(N, C, H, W)`.
        size: the output's spatial size (an int or one per spatial dim), or
        scale_factor: the factor (or one per dim) the spatial size is multiplied by.

    Example:
        >>> F.upsample_nearest(torch.tensor([[[1.0, 2.0]]]), scale_factor=2)
        tensor([[[1., 1., 2., 2.]]])
    """
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input: Tensor, size: int | Sequence[int] | None = None,
                      scale_factor: float | Sequence[float] | None = None) -> Tensor:
    """`interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)` (deprecated
    in PyTorch).

    Args:
        input: `(N, C, H, W)`.
        size: the output's spatial size (an int or one per spatial dim), or
        scale_factor: the factor (or one per dim) the spatial size is multiplied by.

    Example:
        >>> F.upsample_bilinear(torch.tensor([[[[0.0, 3.0]]]]), size=(1, 4))
        tensor([[[[0., 1., 2., 3.]]]])
    """
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


def _shuffle_args(input, factor, name, what):
    """The factor r as an int, and input's shape as (lead dims, C, H, W), after PyTorch's
    checks of pixel_shuffle / pixel_unshuffle (`name`; `what`: its factor's name)."""
    r = int(factor)
    if input.ndim < 3:
        raise RuntimeError(f"{name} expects input to have at least 3 dimensions, but got "
                           f"input with {input.ndim} dimension(s)")
    if r <= 0:
        raise RuntimeError(f"{name} expects a positive {what}, but got {r}")
    *lead, c, h, w = input.shape
    return r, tuple(lead), c, h, w


def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    """Moves channels into space: `(*, C*r*r, H, W) -> (*, C, H*r, W*r)` (sub-pixel
    convolution's rearrangement).

    Args:
        input: `(*, C*r*r, H, W)`.
        upscale_factor: r.

    Shape:
        - Output: `(*, C, H*r, W*r)`.

    Example:
        >>> F.pixel_shuffle(torch.arange(4.0).reshape(1, 4, 1, 1), 2)
        tensor([[[[0., 1.],
                  [2., 3.]]]])
    """
    r, lead, c, h, w = _shuffle_args(input, upscale_factor, "pixel_shuffle", "upscale_factor")
    if c % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be "
                           f"divisible by the square of upscale_factor, but input.size(-3)={c} "
                           f"is not divisible by {r * r}")
    b = len(lead)
    x = input.reshape(tuple(lead) + (c // (r * r), r, r, h, w))
    x = x.permute(tuple(range(b)) + (b, b + 3, b + 1, b + 4, b + 2))
    return x.reshape(tuple(lead) + (c // (r * r), h * r, w * r))


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    """Moves space into channels: `(*, C, H*r, W*r) -> (*, C*r*r, H, W)`, pixel_shuffle's
    inverse.

    Args:
        input: `(*, C, H*r, W*r)`.
        downscale_factor: r.

    Shape:
        - Output: `(*, C*r*r, H, W)`.

    Example:
        >>> F.pixel_unshuffle(torch.arange(4.0).reshape(1, 1, 2, 2), 2).flatten()
        tensor([0., 1., 2., 3.])
    """
    r, lead, c, h, w = _shuffle_args(input, downscale_factor, "pixel_unshuffle",
                                     "downscale_factor")
    if h % r or w % r:
        raise RuntimeError(f"pixel_unshuffle expects height and width to be divisible by "
                           f"downscale_factor, but got height={h}, width={w} and factor {r}")
    b = len(lead)
    x = input.reshape(tuple(lead) + (c, h // r, r, w // r, r))
    x = x.permute(tuple(range(b)) + (b, b + 2, b + 4, b + 1, b + 3))
    return x.reshape(tuple(lead) + (c * r * r, h // r, w // r))
