"""Pooling and max_unpool: torch.nn.functional's spellings (resampling: functional_resample).

Max pooling searches each window in place (max_pool_index: the first maximum, or the last
NaN, as PyTorch's) and scatters the gradient to those winners; dtypes without that row
(ints, huge windows) copy the windows out and take the same winner by a composite (float16 /
bfloat16 pool as float32: exact). Average pooling is a one-channel convolution
with a ones kernel divided by each window's count; adaptive average pooling is separable: a
product by a small (out, in) averaging matrix per spatial dim (as functional_resample's
interpolations); adaptive max pooling gathers padded windows from an index table.
"""

import math
from collections.abc import Sequence

import numpy as np

from .. import raw as _raw, scopes
from ..autograd import Primitive, create_graph_on, no_grad
from ..creation import tensor as _tensor_from_data
from ..dispatcher import INT_LIMITS, runtime, storage_code
from ..api import maximum as _ops_maximum, where as _where
from ..functions import as_strided as _as_strided
from ..functions.views import GatherRows as _GatherRows, ScatterAddRows as _ScatterAddRows
from ..ops import SIGNATURES as _SIGNATURES
from ..tensor import Tensor
from .functional_conv import _Conv2d
from .functional_pad import _batched, _tuple, constant_pad_nd

__all__ = ["max_pool1d", "max_pool2d", "avg_pool1d", "avg_pool2d", "adaptive_avg_pool1d",
           "adaptive_avg_pool2d", "adaptive_max_pool1d", "adaptive_max_pool2d", "max_unpool1d",
           "max_unpool2d"]

_CACHE: dict = {}


def _const(key, build, dtype=None):
    """A tensor built from the NumPy array build() gives, cached per runtime and key (index
    tables and interpolation matrices repeat every step); never disposed by a scope."""
    rt = runtime()
    full = (key, dtype)
    t = _CACHE.get(full)
    if t is None or t._storage.runtime is not rt or t._storage.block is None:
        if len(_CACHE) >= 256:
            _CACHE.clear()
        with scopes.untracked():   # a cache: never disposed by a scope
            arr = build()
            t = _tensor_from_data(arr) if dtype is None else _tensor_from_data(arr, dtype=dtype)
        _CACHE[full] = t
    return t


_INTS = ("i8", "u8", "i16", "i32", "i64")
_INT_MIN = {code: INT_LIMITS[code][0] for code in _INTS}


def _check_input(input, op, ints=False):
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(input).__name__}")
    if input._dtype not in ("f32", "f64", "f16", "bf16") + (_INTS if ints else ()):
        raise RuntimeError(f"\"{op}\" not implemented for '{input.dtype}'")


def _out_size(n, k, s, p, d, ceil_mode):
    eff = d * (k - 1) + 1
    if ceil_mode:
        o = -(-(n + 2 * p - eff) // s) + 1
        if (o - 1) * s >= n + p:
            o -= 1
    else:
        o = (n + 2 * p - eff) // s + 1
    return o


def _pool_args(input, kernel_size, stride, padding, dilation, ceil_mode, dims, op, ints=False):
    _check_input(input, op, ints)
    x, unbatched = _batched(input, dims, op)
    k = _tuple(kernel_size, dims, "kernel_size")
    s = k if stride is None or (isinstance(stride, Sequence) and not len(stride)) else \
        _tuple(stride, dims, "stride")
    p, d = _tuple(padding, dims, "padding"), _tuple(dilation, dims, "dilation")
    if any(v <= 0 for v in k + s + d):
        raise RuntimeError(f"{op}: kernel_size, stride and dilation must be greater than zero")
    for kk, pp, dd in zip(k, p, d):
        if pp < 0 or 2 * pp > dd * (kk - 1) + 1:
            raise RuntimeError(f"{op}: pad should be at most half of effective kernel size, "
                               f"but got pad={pp}, kernel_size={kk} and dilation={dd}")
    sizes = x.shape[2:]
    o = tuple(_out_size(n, kk, ss, pp, dd, ceil_mode) for n, kk, ss, pp, dd in
              zip(sizes, k, s, p, d))
    if any(v <= 0 for v in o):
        raise RuntimeError(f"{op}: Given input size: ({'x'.join(map(str, x.shape[1:]))}). "
                           f"Calculated output size: ({'x'.join(map(str, (x.shape[1],) + o))})."
                           f" Output size is too small")
    if dims == 1:
        x = x.unsqueeze(2)
        k, s, p, d, o = (1,) + k, (1,) + s, (0,) + p, (1,) + d, (1,) + o
    return x, unbatched, k, s, p, d, o


def _half(pool, input, *args):
    """A float16 / bfloat16 max pool as float32's (exact: a selection), its values cast
    back: float32's path has the max_pool_index and scatter_add_rows rows they lack."""
    out = pool(input.float(), *args)
    if isinstance(out, tuple):
        return out[0].to(input.dtype), out[1]
    return out.to(input.dtype)


def _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, dims,
              op):
    if isinstance(input, Tensor) and input._dtype in ("f16", "bf16"):
        return _half(_max_pool, input, kernel_size, stride, padding, dilation, ceil_mode,
                     return_indices, dims, op)
    x, unbatched, k, s, p, d, o = _pool_args(input, kernel_size, stride, padding, dilation,
                                             ceil_mode, dims, op, ints=True)
    n, c, h, w = x.shape
    # (the backend's own minimum: webgpu holds int64 in 32-bit words)
    low = -math.inf if x.is_floating_point() else \
        _INT_MIN[storage_code(runtime().backend, x._dtype)]
    # pad with -inf so that windows past the edge (padding, ceil_mode) never win
    extra = [(oo - 1) * ss + dd * (kk - 1) + 1 - size - pp
             for oo, ss, dd, kk, size, pp in zip(o, s, d, k, (h, w), p)]
    xp = x
    if any(p) or any(e != p_ for e, p_ in zip(extra, p)):
        xp = constant_pad_nd(x, (p[1], extra[1], p[0], extra[0]), low)
    hp, wp = xp.shape[2:]
    kk = k[0] * k[1]
    geo = (n, c, h, w, k, s, p, d, o, hp, wp)
    # windows apart (stride >= the dilated kernel) on a backend whose scatter of single
    # elements is slow (webgpu's took seconds for a LeNet batch): the gradient placed by a
    # where, not scattered; elsewhere the scatter is faster than that where over
    # (..., kh, kw) runs (docs in the class)
    apart = all(ss >= dd * (kk_ - 1) + 1 for ss, dd, kk_ in zip(s, d, k)) and \
        xp.is_floating_point() and runtime().backend.slow_scatter
    # the max_pool_index primitive where its row takes the dtype (float32 / float64) and the
    # window is small: each window searched in place, no copy of the windows
    searched = (xp._dtype,) in _INDEX_INS and kk <= _INDEX_MAX_WINDOW
    pos = None
    if searched or apart:
        xp = xp.contiguous()
    if searched:
        with no_grad():
            plane_pos = _window_max(xp, k, s, d, o)                # offsets in each plane
    else:
        with no_grad():
            sn, sc, sh, sw = xp._strides
            win = _raw.contiguous(_as_strided(xp, xp._offset, (n, c, o[0], o[1], k[0], k[1]),
                                              (sn, sc, s[0] * sh, s[1] * sw, d[0] * sh,
                                               d[1] * sw)))
            arg = _window_arg(_as_strided(win, 0, (n, c, o[0], o[1], kk),
                                          win._strides[:4] + (1,)))
            koff = _const(("koff", geo), lambda: (np.arange(k[0])[:, None] * d[0] * wp +
                                                 np.arange(k[1])[None, :] * d[1]).reshape(-1))
            base = _const(("base", geo), lambda: (
                np.arange(n * c)[:, None, None] * (hp * wp) +
                (np.arange(o[0])[:, None] * s[0] * wp + np.arange(o[1])[None, :] * s[1])[None]
            ).reshape(n, c, o[0], o[1]))
            pos = koff[arg] + base                        # flat positions in xp
            plane = _const(("plane", geo), lambda: (np.arange(n * c) * (hp * wp)).reshape(
                n, c, 1, 1))
            plane_pos = pos - plane
    if apart:
        out = _MaxPoolApart.apply(xp, plane_pos, k=k, s=s, d=d)
    elif searched:
        out = _MaxPool.apply(xp, plane_pos, k=k, s=s, d=d)
    else:
        out = xp.reshape(-1)[pos]
    if dims == 1:
        out = out.squeeze(2)
    out = out.squeeze(0) if unbatched else out
    if not return_indices:
        return out
    with no_grad():    # PyTorch's indices: the flat position in the input's own plane
        if (hp, wp) == (h, w) and not any(p):     # (a pad may also crop: the table's shift)
            idx = plane_pos
        else:
            table = _const(("unpad", geo), lambda: (
                (np.arange(hp)[:, None] - p[0]) * w + np.arange(wp)[None, :] - p[1]
            ).reshape(-1))
            idx = table[plane_pos]
        if dims == 1:
            idx = idx.squeeze(2)
        idx = idx.squeeze(0) if unbatched else idx
    return out, idx


def _window_arg(win):
    """Each window's maximum along win's last dim by PyTorch's max pooling rule (int64): the
    last NaN where a window holds one, else the first maximum (argmax's first NaN is not
    it). The composite of the dtypes max_pool_index has no row for (float16, ints)."""
    arg = win.argmax(-1)
    if not win.is_floating_point():
        return arg
    kk = win.shape[-1]
    last = _where(win.isnan(), _const(("karange", kk), lambda: np.arange(kk)), -1).amax(-1)
    return _where(last >= 0, last, arg)


_INDEX_INS = {ins for ins, _ in _SIGNATURES["max_pool_index"]}
_INDEX_MAX_WINDOW = 4096      # larger windows: the copy and argmax (one kernel invocation
                              # of webgpu's reads a whole window)


def _window_max(xp, k, s, d, o):
    """The first maximum of each window of a contiguous padded (N, C, Hp, Wp) xp, as its
    element offset in its plane (int64 (N, C, Ho, Wo)): one max_pool_index op on the
    windows read in place."""
    n, c, hp, wp = xp.shape
    win = _as_strided(xp, xp._offset, (n, c, o[0], o[1], k[0], k[1]),
                      (c * hp * wp, hp * wp, s[0] * wp, s[1], d[0] * wp, d[1]))
    out = _raw.new_tensor((n, c, o[0], o[1]), "i64")
    return _raw.run("max_pool_index", out, (_raw.view_of(win),))


class _MaxPool(Primitive):
    """Max pooling of a contiguous padded xp (N, C, Hp, Wp) given each window's maximum as
    its offset in its plane (max_pool_index's): the values are one max reduction over the
    windows read in place; the gradient is scattered to those maxima (the first maximum, or
    the last NaN, as PyTorch's)."""

    def forward(self, xp, plane_pos, k, s, d):
        n, c, hp, wp = xp.shape
        self.pos, self.shape = plane_pos, xp.shape
        ho, wo = plane_pos.shape[2:]
        win = _as_strided(xp, xp._offset, (n, c, ho, wo, k[0], k[1]),
                          (c * hp * wp, hp * wp, s[0] * wp, s[1], d[0] * wp, d[1]))
        return _raw.reduce("max", win, (4, 5))

    def backward(self, g):
        n, c, hp, wp = self.shape
        base = _const(("planes", n, c, hp * wp), lambda: (
            np.arange(n * c) * (hp * wp)).reshape(n, c, 1, 1))
        with no_grad():
            pos = self.pos + base                                  # flat positions in xp
        table = (n * c * hp * wp, 1)
        # (recorded: g as rows of one element, the shape its gather-back gradient comes in)
        gx = _ScatterAddRows.apply(g.unsqueeze(-1), pos, table) if create_graph_on() else \
            _GatherRows.scatter(g, pos, table)
        return gx.reshape(self.shape), None


class _MaxPoolApart(_MaxPool):
    """Max pooling whose windows do not overlap (stride >= the dilated kernel: LeNet's, VGG's
    2x2 / 2): _MaxPool's values, and a gradient that goes to each window's maximum (the
    offset `plane_pos` names: the first maximum, or the last NaN) by one where over the
    windows (the offset against a table of each window element's) and one strided copy
    into zeros of x, no scatter (webgpu's scatter of single elements took seconds for a
    LeNet batch)."""

    def forward(self, xp, plane_pos, k, s, d):
        self.geo = (xp.shape, k, s, d)
        return super().forward(xp, plane_pos, k, s, d)

    def backward(self, g):
        if create_graph_on():          # (the where's result is copied unrecorded)
            return super().backward(g)
        (n, c, hp, wp), k, s, d = self.geo
        ho, wo = g.shape[2:]
        grid = _const(("apart", ho, wo, wp, k, s, d), lambda: (
            (np.arange(ho) * s[0] * wp)[:, None, None, None] +
            (np.arange(wo) * s[1])[None, :, None, None] +
            (np.arange(k[0]) * d[0] * wp)[:, None] + np.arange(k[1]) * d[1]))
        gw = _where(self.pos.reshape((n, c, ho, wo, 1, 1)) == grid,
                    g.reshape((n, c, ho, wo, 1, 1)), 0.0)         # (N, C, Ho, Wo, kh, kw)
        buf = _raw.new_tensor((n, c, hp, wp), g._dtype)
        if (ho * s[0], wo * s[1]) != (hp, wp) or k != s or d != (1, 1):
            _raw.fill(buf, 0.0)
        _raw.copy_into(_as_strided(buf, 0, (n, c, ho, wo, k[0], k[1]),
                                   (c * hp * wp, hp * wp, s[0] * wp, s[1], d[0] * wp, d[1])),
                       gw)
        return (buf,)


def max_pool2d(input: Tensor, kernel_size: int | Sequence[int],
               stride: int | Sequence[int] | None = None, padding: int | Sequence[int] = 0,
               dilation: int | Sequence[int] = 1, ceil_mode: bool = False,
               return_indices: bool = False):
    """2-d max pooling: the maximum of each (kh, kw) window of each channel.

    Args:
        input: `(N, C, H, W)` or `(C, H, W)`.
        kernel_size: the window, an int or (kh, kw).
        dilation: the spacing of the window's taps. Default: 1.
        stride: the window's step. Default: kernel_size.
        padding: implicit -inf on both sides (at most half the kernel).
        ceil_mode: round the output size up (windows may overhang the right edge, never
            start past it).
        return_indices: also return each maximum's flat index in its (H, W) plane (for
            max_unpool2d).

    Shape:
        - Output: `(N, C, Ho, Wo)`,
          `Ho = (H + 2*padding - dilation*(kh-1) - 1) // stride + 1` (Wo alike).

    Example:
        >>> F.max_pool2d(torchic.randn(1, 1, 4, 4), 2).shape
        torchic.Size([1, 1, 2, 2])
    """
    return _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices,
                     2, "max_pool2d")


def max_pool1d(input: Tensor, kernel_size: int | Sequence[int],
               stride: int | Sequence[int] | None = None, padding: int | Sequence[int] = 0,
               dilation: int | Sequence[int] = 1, ceil_mode: bool = False,
               return_indices: bool = False):
    """1-d max pooling: the maximum of each window of each channel (arguments as max_pool2d's).

    Args:
        input: `(N, C, L)` or `(C, L)`.
        kernel_size: the window: an int or one per spatial dim.
        stride: the window's step. Default: kernel_size.
        padding: implicit -inf on both sides (at most half the kernel). Default: 0.
        dilation: the spacing of the window's taps. Default: 1.
        ceil_mode: round the output size up. Default: False.
        return_indices: also return each maximum's flat index in its plane (for max_unpool).

    Shape:
        - Output: `(N, C, Lo)`, `Lo = (L + 2*padding - dilation*(k-1) - 1) // stride + 1`.

    Example:
        >>> F.max_pool1d(torch.tensor([[[1.0, 5.0, 3.0, 4.0, 2.0, 6.0]]]), 2)
        tensor([[[5., 4., 6.]]])
    """
    return _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices,
                     1, "max_pool1d")


def _avg_pool(input, kernel_size, stride, padding, ceil_mode, count_include_pad,
              divisor_override, dims, op):
    x, unbatched, k, s, p, _, o = _pool_args(input, kernel_size, stride, padding, 1, ceil_mode,
                                             dims, op)
    if divisor_override is not None and int(divisor_override) == 0:
        raise RuntimeError("divisor must be not zero")
    n, c, h, w = x.shape
    extra = [(oo - 1) * ss + kk - size - pp for oo, ss, kk, size, pp in zip(o, s, k, (h, w), p)]
    xp = x.reshape((n * c, 1, h, w))
    if any(p) or any(extra):
        xp = constant_pad_nd(xp, (p[1], extra[1], p[0], extra[0]), 0.0)
    ones = _const(("ones", k, x._dtype), lambda: np.ones((1, 1) + k), dtype=x.dtype)
    out = _Conv2d.apply(xp, ones, None, stride=s, dilation=(1, 1), groups=1)
    out = out.reshape((n, c, o[0], o[1]))
    if divisor_override is not None:
        out = out / float(divisor_override)
    else:
        def divisors():
            counts = []
            for oo, ss, kk, size, pp in zip(o, s, k, (h, w), p):
                start = np.arange(oo) * ss - pp
                end = np.minimum(start + kk, size + pp)
                if not count_include_pad:
                    start, end = np.maximum(start, 0), np.minimum(end, size)
                counts.append(end - start)
            return np.outer(counts[0], counts[1])
        div = _const(("div", k, s, p, o, h, w, bool(count_include_pad), x._dtype), divisors,
                     dtype=x.dtype)
        out = out / div
    if dims == 1:
        out = out.squeeze(2)
    return out.squeeze(0) if unbatched else out


def avg_pool2d(input: Tensor, kernel_size: int | Sequence[int],
               stride: int | Sequence[int] | None = None, padding: int | Sequence[int] = 0,
               ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: int | None = None) -> Tensor:
    """2-d average pooling: the mean of each (kh, kw) window of each channel.

    Args:
        input: `(N, C, H, W)` or `(C, H, W)`.
        kernel_size: the window, an int or (kh, kw).
        stride: the window's step. Default: kernel_size.
        padding: implicit zeros on both sides (at most half the kernel).
        ceil_mode: round the output size up.
        count_include_pad: count the padding zeros in the mean's divisor. Default: True.
        divisor_override: divide every window's sum by this instead.

    Shape:
        - Output: `(N, C, Ho, Wo)`, `Ho = (H + 2*padding - kh) // stride + 1` (Wo alike).

    Example:
        >>> F.avg_pool2d(torchic.ones(1, 1, 4, 4), 2).shape
        torchic.Size([1, 1, 2, 2])
    """
    return _avg_pool(input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override, 2, "avg_pool2d")


def avg_pool1d(input: Tensor, kernel_size: int | Sequence[int],
               stride: int | Sequence[int] | None = None, padding: int | Sequence[int] = 0,
               ceil_mode: bool = False, count_include_pad: bool = True) -> Tensor:
    """1-d average pooling: the mean of each window of each channel (arguments as avg_pool2d's).

    Args:
        input: `(N, C, L)` or `(C, L)`.
        kernel_size: the window: an int or one per spatial dim.
        stride: the window's step. Default: kernel_size.
        padding: implicit padding on both sides (at most half the kernel). Default: 0.
        ceil_mode: round the output size up. Default: False.
        count_include_pad: count the padding zeros in the mean's divisor. Default: True.

    Shape:
        - Output: `(N, C, Lo)`, `Lo = (L + 2*padding - kernel_size) // stride + 1`.

    Example:
        >>> F.avg_pool1d(torch.tensor([[[1.0, 2.0, 3.0, 4.0, 5.0, 7.0]]]), 2)
        tensor([[[1.5000, 3.5000, 6.0000]]])
    """
    return _avg_pool(input, kernel_size, stride, padding, ceil_mode, count_include_pad, None,
                     1, "avg_pool1d")


def _adaptive_bounds(n, o):
    start = (np.arange(o) * n) // o
    end = -((-(np.arange(1, o + 1) * n)) // o)
    return start, end


def _avg_matrix(n, o):
    m = np.zeros((o, n))
    for i, (a, b) in enumerate(zip(*_adaptive_bounds(n, o))):
        m[i, a:b] = 1.0 / (b - a)
    return m


def _output_size(output_size, sizes, dims, op):
    if isinstance(output_size, (int, np.integer)) or output_size is None:
        output_size = (output_size,) * dims
    output_size = tuple(output_size)
    if len(output_size) != dims:
        raise ValueError(f"{op}: output_size must be {dims} ints, got {output_size}")
    out = tuple(n if v is None else int(v) for v, n in zip(output_size, sizes))
    if any(v < 0 for v in out):
        raise RuntimeError(f"{op}: output_size must be non-negative, got {out}")
    return out


def _separable(x, mats):
    """x (..., n1, ..., nk) times one matrix (out, in) per trailing dim, the last dim first."""
    k = len(mats)
    for i in range(k - 1, -1, -1):
        m = mats[i]
        if i == k - 1:
            x = x @ m.T
            continue
        shape = x.shape
        d = len(shape) - k + i
        rest = 1
        for size in shape[d + 1:]:
            rest *= size
        x = (m @ x.reshape(shape[:d] + (shape[d], rest))).reshape(
            shape[:d] + (m.shape[0],) + shape[d + 1:])
    return x


def _adaptive_avg(input, output_size, dims, op):
    _check_input(input, op)
    x, unbatched = _batched(input, dims, op)
    o = _output_size(output_size, x.shape[2:], dims, op)
    mats = [_const(("avg", nn, oo, x._dtype), lambda nn=nn, oo=oo: _avg_matrix(nn, oo),
                   dtype=x.dtype) for nn, oo in zip(x.shape[2:], o)]
    out = _separable(x, mats)
    return out.squeeze(0) if unbatched else out


def adaptive_avg_pool2d(input: Tensor, output_size: int | Sequence[int | None]) -> Tensor:
    """2-d adaptive average pooling: the mean over adaptive windows so that the output is `(N,
    C, *output_size)` (window i of n inputs spans `[floor(i*n/o), ceil((i+1)*n/o))`).

    Args:
        input: `(N, C, H, W)` or `(C, H, W)`.
        output_size: the output's size (h, w): an int, or one per dim (None keeps the input
            size).

    Shape:
        - Output: `(N, C, h, w)`.

    Example:
        >>> F.adaptive_avg_pool2d(torch.randn(2, 3, 7, 5), 1).shape
        torchic.Size([2, 3, 1, 1])
        >>> F.adaptive_avg_pool2d(torch.arange(16.0).reshape(1, 4, 4), 2)
        tensor([[[ 2.5000,  4.5000],
                 [10.5000, 12.5000]]])
    """
    return _adaptive_avg(input, output_size, 2, "adaptive_avg_pool2d")


def adaptive_avg_pool1d(input: Tensor, output_size: int | Sequence[int]) -> Tensor:
    """1-d adaptive average pooling: the mean over adaptive windows so that the output has
    `output_size` columns (as adaptive_avg_pool2d).

    Args:
        input: `(N, C, L)` or `(C, L)`.
        output_size: the output's length: an int, or a 1-tuple.

    Shape:
        - Output: `(N, C, output_size)`.

    Example:
        >>> F.adaptive_avg_pool1d(torch.tensor([[[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]]]), 3)
        tensor([[[1.5000, 3.5000, 5.5000]]])
    """
    return _adaptive_avg(input, output_size, 1, "adaptive_avg_pool1d")


def _adaptive_max(input, output_size, return_indices, dims, op):
    if isinstance(input, Tensor) and input._dtype in ("f16", "bf16"):
        return _half(_adaptive_max, input, output_size, return_indices, dims, op)
    _check_input(input, op)
    x, unbatched = _batched(input, dims, op)
    if dims == 1:
        x = x.unsqueeze(2)
    n, c, h, w = x.shape
    o = _output_size(output_size, (h, w)[2 - dims:], dims, op)
    if dims == 1:
        o = (1,) + o
    if any(v == 0 for v in o) or h * w == 0:
        raise RuntimeError(f"{op}: input and output sizes must be non-empty")
    (hs, he), (ws, we) = _adaptive_bounds(h, o[0]), _adaptive_bounds(w, o[1])
    kmax = int((he - hs).max() * (we - ws).max())

    def table():     # (oh*ow, kmax) flat positions, h*w (a -inf slot) past a window's end
        t = np.full((o[0], o[1], kmax), h * w, dtype=np.int64)
        for i in range(o[0]):
            for j in range(o[1]):
                cells = (np.arange(hs[i], he[i])[:, None] * w +
                         np.arange(ws[j], we[j])[None, :]).reshape(-1)
                t[i, j, :cells.size] = cells
        return t.reshape(-1)
    geo = (h, w, o)
    tab = _const(("amax", geo), table)
    xe = constant_pad_nd(x.reshape((n * c, h * w)), (0, 1), -math.inf)     # (NC, HW+1)
    with no_grad():
        win = xe[:, tab].reshape((n * c, o[0] * o[1], kmax))
        lw = o[0] * o[1]
        if (win._dtype,) in _INDEX_INS and kmax <= _INDEX_MAX_WINDOW:
            # max_pool_index over the gathered windows as (NC, 1, 1, L, 1, kmax) (PyTorch's
            # rule: the last NaN): each maximum's offset l * kmax + k in its row of windows
            if not win.is_contiguous():
                win = _raw.contiguous(win)
            view = _as_strided(win, win._offset, (n * c, 1, 1, lw, 1, kmax),
                               (lw * kmax, 0, 0, kmax, 0, 1))
            at = _raw.run("max_pool_index", _raw.new_tensor((n * c, 1, 1, lw), "i64"),
                          (_raw.view_of(view),)).reshape((n * c, lw))
            pos = tab[at]                                                 # (NC, L) in h*w
        else:
            lidx = _const(("aml", geo), lambda: (np.arange(lw) * kmax)[None, :])
            pos = tab[_window_arg(win) + lidx]                            # (NC, L) in h*w
        plane = _const(("amp", n * c, h * w), lambda: (np.arange(n * c) * (h * w + 1))[:, None])
    out = xe.reshape(-1)[pos + plane].reshape((n, c) + o)
    if dims == 1:
        out = out.squeeze(2)
    out = out.squeeze(0) if unbatched else out
    if not return_indices:
        return out
    idx = pos.reshape((n, c) + o)
    if dims == 1:
        idx = idx.squeeze(2)
    return out, (idx.squeeze(0) if unbatched else idx)


def adaptive_max_pool2d(input: Tensor, output_size: int | Sequence[int | None],
                        return_indices: bool = False):
    """2-d adaptive max pooling: the maximum over adaptive windows (as adaptive_avg_pool2d's).

    Args:
        input: `(N, C, H, W)` or `(C, H, W)`.
        output_size: the output's size (h, w): an int, or one per dim (None keeps the input
            size).
        return_indices: also return each maximum's flat index in its plane (for max_unpool).

    Shape:
        - Output: `(N, C, h, w)`.

    Example:
        >>> F.adaptive_max_pool2d(torch.arange(16.0).reshape(1, 4, 4), 2)
        tensor([[[ 5.,  7.],
                 [13., 15.]]])
    """
    return _adaptive_max(input, output_size, return_indices, 2, "adaptive_max_pool2d")


def adaptive_max_pool1d(input: Tensor, output_size: int | Sequence[int],
                        return_indices: bool = False):
    """1-d adaptive max pooling: the maximum over adaptive windows (as adaptive_avg_pool1d's).

    Args:
        input: `(N, C, L)` or `(C, L)`.
        output_size: the output's length: an int, or a 1-tuple.
        return_indices: also return each maximum's flat index in its plane (for max_unpool).

    Shape:
        - Output: `(N, C, output_size)`.

    Example:
        >>> F.adaptive_max_pool1d(torch.tensor([[[1.0, 5.0, 3.0, 4.0, 2.0, 6.0]]]), 3)
        tensor([[[5., 4., 6.]]])
    """
    return _adaptive_max(input, output_size, return_indices, 1, "adaptive_max_pool1d")


class _ScatterPlanes(Primitive):
    """src (M,) values added at the flat positions idx of zeros of `size` (divided by `count`,
    each position's number of writers, when given: max_unpool's write; each src value's
    gradient is g at its position)."""

    def forward(self, src, idx, size, count=None):
        self.idx = idx
        flat = _raw.contiguous(src).reshape((src.numel(), 1)) if not src.is_contiguous() else \
            _as_strided(src, src._offset, (src.numel(), 1), (1, 1))
        out = _as_strided(_raw.scatter_add_rows(flat, idx, size), 0, (size,), (1,))
        return out if count is None else _raw.binary("div", out, count)

    def backward(self, g):
        return (g[self.idx], None)


def _max_unpool(input, indices, kernel_size, stride, padding, output_size, dims, op):
    _check_input(input, op)
    x, unbatched = _batched(input, dims, op)
    if not isinstance(indices, Tensor) or indices._dtype != "i64":
        raise RuntimeError(f"{op}: expected indices to be an int64 Tensor")
    if tuple(indices.shape) != tuple(input.shape):
        raise RuntimeError(f"{op}: Expected shape of indices to be same as that of the input "
                           f"tensor ({list(input.shape)}) but got {list(indices.shape)}")
    k = _tuple(kernel_size, dims, "kernel_size")
    s = k if stride is None else _tuple(stride, dims, "stride")
    p = _tuple(padding, dims, "padding")
    sizes = x.shape[2:]
    default = tuple((n - 1) * ss - 2 * pp + kk for n, ss, pp, kk in zip(sizes, s, p, k))
    if output_size is None:
        out = default
    else:
        out = tuple(int(v) for v in output_size)[-dims:]
        for o, dflt, ss in zip(out, default, s):
            if not dflt - ss < o < dflt + ss:
                raise ValueError(f"invalid output_size {tuple(output_size)} (dim should be "
                                 f"between {tuple(dd - ss for dd in default)} and "
                                 f"{tuple(dd + ss for dd in default)})")
    n, c = x.shape[:2]
    plane = int(np.prod(out))
    with no_grad():
        idx = indices if not unbatched else indices.unsqueeze(0)
        offs = _const(("unpool", n, c, plane), lambda: (np.arange(n * c) * plane).reshape(
            (n, c) + (1,) * dims))
        flat_idx = (idx + offs).reshape(-1)
    with no_grad():   # an index met twice (overlapping windows: the same maximum) is written once
        ones = _ScatterPlanes.apply(x.reshape(-1) * 0 + 1, flat_idx, size=n * c * plane)
        count = _ops_maximum(ones, 1.0)
    res = _ScatterPlanes.apply(x.reshape(-1), flat_idx, size=n * c * plane, count=count)
    res = res.reshape((n, c) + out)
    return res.squeeze(0) if unbatched else res


def max_unpool2d(input: Tensor, indices: Tensor, kernel_size: int | Sequence[int],
                 stride: int | Sequence[int] | None = None, padding: int | Sequence[int] = 0,
                 output_size: Sequence[int] | None = None) -> Tensor:
    """max_pool2d's partial inverse: each value put back at its index (from return_indices=True)
    in zeros of the pooled input's size.

    Args:
        input: `(N, C, Ho, Wo)` or `(C, Ho, Wo)`: max_pool2d's values.
        indices: max_pool2d's indices, the input's shape.
        kernel_size: the window: an int or one per spatial dim.
        stride: the window's step. Default: kernel_size.
        padding: implicit padding on both sides (at most half the kernel). Default: 0.
        output_size: the (H, W) to restore, when the pooling rounded it down.

    Example:
        >>> y, i = F.max_pool2d(torch.randn(1, 1, 4, 4), 2, return_indices=True)
        >>> F.max_unpool2d(y, i, 2).shape
        torchic.Size([1, 1, 4, 4])
    """
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 2,
                       "max_unpool2d")


def max_unpool1d(input: Tensor, indices: Tensor, kernel_size: int | Sequence[int],
                 stride: int | Sequence[int] | None = None, padding: int | Sequence[int] = 0,
                 output_size: Sequence[int] | None = None) -> Tensor:
    """max_pool1d's partial inverse: each value put back at its index (from return_indices=True)
    in zeros of the pooled input's length.

    Args:
        input: `(N, C, Lo)` or `(C, Lo)`: max_pool1d's values.
        indices: max_pool1d's indices, the input's shape.
        kernel_size: the window: an int or one per spatial dim.
        stride: the window's step. Default: kernel_size.
        padding: implicit padding on both sides (at most half the kernel). Default: 0.
        output_size: the length to restore, when the pooling rounded it down.

    Example:
        >>> y, i = F.max_pool1d(torch.tensor([[[1.0, 5.0, 3.0, 4.0]]]), 2, return_indices=True)
        >>> F.max_unpool1d(y, i, 2)
        tensor([[[0., 5., 0., 4.]]])
    """
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 1,
                       "max_unpool1d")
