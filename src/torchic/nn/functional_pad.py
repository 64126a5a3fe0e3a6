"""Padding, fold / unfold and the argument helpers the convolutions and pools share:
torch.nn.functional's spellings. Constant padding is a fill and one copy (negative pads crop
first, as views); reflect / replicate / circular pads gather along each padded dim. unfold
gathers the windows' positions (rows of the (H*W, N*C) image); fold is its adjoint, a
scatter-add of the columns."""

from collections.abc import Sequence

import numpy as np

from .. import raw as _raw
from ..autograd import Primitive
from ..creation import tensor as _tensor_from_data
from ..functions import as_strided as _as_strided, reshape_raw as _reshape_raw
from ..shape import numel
from ..tensor import Tensor

__all__ = ["pad", "constant_pad_nd", "unfold", "fold"]


def _tuple(value, n, name):
    """An int or a sequence of n ints as a tuple of n ints (PyTorch's _pair / _single)."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return (int(value),) * n
    if isinstance(value, Sequence) and len(value) == 1 and n > 1:
        return (int(value[0]),) * n
    if isinstance(value, Sequence) and len(value) == n and \
            all(isinstance(v, (int, np.integer)) for v in value):
        return tuple(int(v) for v in value)
    raise TypeError(f"{name} must be an int or a tuple of {n} ints, got {value!r}")


def _check_float(*tensors, op):
    for t in tensors:
        if t is not None and not isinstance(t, Tensor):
            raise TypeError(f"{op}(): argument must be a Tensor, not {type(t).__name__}")
    dt = tensors[0]._dtype
    if dt not in ("f32", "f64", "f16", "bf16"):
        raise RuntimeError(f"\"{op}\" not implemented for '{tensors[0].dtype}' (expects a "
                           f"floating tensor)")
    for t in tensors[1:]:
        if t is not None and t._dtype != dt:
            raise RuntimeError(f"{op}: Input type ({tensors[0].dtype}) and weight / bias type "
                               f"({t.dtype}) should be the same")


# ---------------------------------------------------------------------------------------------
# padding


class _ConstantPad(Primitive):
    """x placed inside a `value`-filled tensor, pads >= 0: [(before, after)] per dim."""

    def forward(self, x, pads, value):
        shape = tuple(n + a + b for n, (a, b) in zip(x.shape, pads))
        out = _raw.new_tensor(shape, x._dtype)
        self.key = tuple(slice(a, a + n) for n, (a, _) in zip(x.shape, pads))
        _raw.fill(out, value)
        offset = sum(a * s for (a, _), s in zip(pads, out._strides))
        _raw.copy_into(_as_strided(out, offset, x.shape, out._strides), x)
        return out

    def backward(self, g):
        return (g[self.key],)


def _pairs(pad_arg, ndim, op="pad"):
    """F.pad's flat (last dim first) pad list as [(before, after)] for each of the ndim dims."""
    pad_arg = [int(p) for p in pad_arg]
    if len(pad_arg) % 2:
        raise RuntimeError(f"{op}: Padding length must be divisible by 2")
    if len(pad_arg) // 2 > ndim:
        raise RuntimeError(f"{op}: Padding length should be less than or equal to two times "
                           f"the input dimension but got padding length {len(pad_arg)} and "
                           f"input of dimension {ndim}")
    pairs = [(0, 0)] * ndim
    for i in range(len(pad_arg) // 2):
        pairs[ndim - 1 - i] = (pad_arg[2 * i], pad_arg[2 * i + 1])
    return pairs


def constant_pad_nd(input: Tensor, pad: Sequence[int], value: float = 0) -> Tensor:
    """`input` padded with `value` (torch.constant_pad_nd); negative pads crop.

    Args:
        input: any shape.
        pad: (before, after) pairs from the last dim backwards.
        value: the fill. Default: 0.

    Example:
        >>> F.constant_pad_nd(torch.tensor([[1.0, 2.0]]), (1, 2), value=-1.0)
        tensor([[-1.,  1.,  2., -1., -1.]])
    """
    pairs = _pairs(pad, input.ndim, "constant_pad_nd")
    for d, (a, b) in enumerate(pairs):
        if input.shape[d] + a + b < 0 or (input.shape[d] + min(a, 0) + min(b, 0)) < 0:
            raise RuntimeError(f"constant_pad_nd: the input size {input.shape[d]} of dim {d} "
                               f"padded by ({a}, {b}) would be negative")
    if any(a < 0 or b < 0 for a, b in pairs):
        key = tuple(slice(-a if a < 0 else 0, n + b if b < 0 else n)
                    for n, (a, b) in zip(input.shape, pairs))
        input = input[key]
        pairs = [(max(a, 0), max(b, 0)) for a, b in pairs]
    if all(a == 0 and b == 0 for a, b in pairs):
        return input.clone() if hasattr(input, "clone") else input + 0
    return _ConstantPad.apply(input, pads=pairs, value=value)


def _index(values):
    return _tensor_from_data(np.asarray(values, dtype=np.int64))


def _gather_dim(x, dim, idx):
    """x indexed along dim by the int list idx (differentiable: advanced indexing)."""
    key = (slice(None),) * dim + (_index(idx),)
    return x[key]


def _mode_index(n, a, b, mode):
    """Source positions along a dim of size n padded by (a, b) in mode reflect / replicate /
    circular (negative pads crop)."""
    pos = np.arange(-a, n + b)
    if mode == "reflect":
        if a >= n or b >= n:
            raise RuntimeError(f"Argument #4: Padding size should be less than the corresponding "
                               f"input dimension, but got: padding ({a}, {b}) at dimension of "
                               f"size {n}")
        period = 2 * (n - 1) if n > 1 else 1
        pos = np.abs(pos) % period if n > 1 else np.zeros_like(pos)
        pos = np.where(pos >= n, period - pos, pos)
    elif mode == "replicate":
        pos = np.clip(pos, 0, n - 1)
    else:     # PyTorch crops the negative pads first, then wraps around what is left
        lo, hi = max(-a, 0), n + min(b, 0)
        a, b, m = max(a, 0), max(b, 0), hi - lo
        if a > m or b > m:
            raise RuntimeError("Padding value causes wrapping around more than once.")
        pos = lo + np.arange(-a, m + b) % m
    return pos


def pad(input: Tensor, pad: Sequence[int], mode: str = "constant",
        value: float | None = None) -> Tensor:
    """Pads input (torch.nn.functional.pad). `pad` lists (before, after) pairs from the last
    dim backwards: (left, right) pads the last dim, (left, right, top, bottom) the last two.

    Args:
        input: the tensor to pad.
        pad: (before, after) sizes, an even number of ints, for up to input.ndim dims.
        value: the fill of mode "constant". Default: 0.
        mode: "constant" (filled with `value`, default 0; negative pads crop), "reflect"
            (mirrored without repeating the edge), "replicate" (the edge repeated) or
            "circular" (wrapped around). The non-constant modes pad the last 1, 2 or 3 dims of
            a batched or unbatched input (2-4 dims for 1 or 2 padded dims).

    Example:
        >>> F.pad(torchic.ones(1, 1, 2, 2), (1, 1, 1, 1)).shape
        torchic.Size([1, 1, 4, 4])
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"pad(): argument 'input' must be Tensor, not {type(input).__name__}")
    if mode == "constant":
        return constant_pad_nd(input, pad, 0 if value is None else value)
    if mode not in ("reflect", "replicate", "circular"):
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if value is not None and value != 0:
        raise RuntimeError(f"Padding mode \"{mode}\" doesn't take in value argument")
    k = len(pad) // 2
    if len(pad) % 2 or k > 3 or input.ndim not in (k + 1, k + 2):
        raise NotImplementedError(f"Only 2D, 3D, 4D, 5D padding with non-constant padding are "
                                  f"supported for now (got a {input.ndim}-d input and "
                                  f"{len(pad)} pad values for mode {mode})")
    pairs = _pairs(pad, input.ndim)
    out = input
    for d in range(input.ndim - k, input.ndim):
        a, b = pairs[d]
        if a or b:
            out = _gather_dim(out, d, _mode_index(out.shape[d], a, b, mode))
    return out


def _batched(input, dims, op):
    """(input with a batch dim, whether one was added): PyTorch's unbatched inputs."""
    if input.ndim == dims + 1:
        return input.unsqueeze(0), True
    if input.ndim != dims + 2:
        raise RuntimeError(f"{op}: Expected {dims + 1}D (unbatched) or {dims + 2}D (batched) "
                           f"input, but got input of size: {list(input.shape)}")
    return input, False


# ---------------------------------------------------------------------------------------------
# fold / unfold


def _fold_index(out_hw, k, dilation, padding, stride):
    """For each column entry (C-major order c, ki, kj, l) of one channel: the flat position
    in the padded (Hp*Wp) image, and the number of windows L."""
    hp, wp = out_hw[0] + 2 * padding[0], out_hw[1] + 2 * padding[1]
    ho = (hp - dilation[0] * (k[0] - 1) - 1) // stride[0] + 1
    wo = (wp - dilation[1] * (k[1] - 1) - 1) // stride[1] + 1
    ki, kj, oi, oj = np.meshgrid(np.arange(k[0]), np.arange(k[1]), np.arange(ho),
                                 np.arange(wo), indexing="ij")
    pos = (oi * stride[0] + ki * dilation[0]) * wp + oj * stride[1] + kj * dilation[1]
    return pos.reshape(-1), ho * wo, (hp, wp)


class _Fold(Primitive):
    """Columns (N, C*kh*kw, L) summed into their windows' places of (N, C, Hp, Wp)."""

    def forward(self, cols, c, idx, hp_wp):
        n, kl = cols.shape[0], idx.shape[0]
        flat = _reshape_raw(_raw.contiguous(cols), (n * c * kl, 1))
        off = np.arange(n * c, dtype=np.int64)[:, None] * (hp_wp[0] * hp_wp[1])
        self.full_idx = _index((off + idx[None, :]).reshape(-1))
        out = _raw.scatter_add_rows(flat, self.full_idx, n * c * hp_wp[0] * hp_wp[1])
        self.cols_shape = cols.shape
        return _reshape_raw(out, (n, c) + tuple(hp_wp))

    def backward(self, g):
        gathered = g.reshape((numel(g.shape), 1))[self.full_idx]
        return (gathered.reshape(self.cols_shape),)


def unfold(input: Tensor, kernel_size: int | Sequence[int], dilation: int | Sequence[int] = 1,
           padding: int | Sequence[int] = 0, stride: int | Sequence[int] = 1) -> Tensor:
    """The sliding (kh, kw) windows of an image batch as columns (im2col): column l holds window
    l's C*kh*kw values.

    Args:
        input: `(N, C, H, W)` or `(C, H, W)`.
        kernel_size: the window: an int or one per spatial dim.
        dilation: the spacing of the window's taps. Default: 1.
        padding: implicit zeros on both sides. Default: 0.
        stride: the windows' step. Default: 1.

    Shape:
        - Output: `(N, C*kh*kw, L)`, L the number of windows.

    Example:
        >>> F.unfold(torch.randn(1, 2, 4, 4), 2).shape
        torchic.Size([1, 8, 9])
        >>> F.unfold(torch.arange(9.0).reshape(1, 1, 3, 3), 2)
        tensor([[[0., 1., 3., 4.],
                 [1., 2., 4., 5.],
                 [3., 4., 6., 7.],
                 [4., 5., 7., 8.]]])
    """
    if not isinstance(input, Tensor):
        raise TypeError("unfold(): argument 'input' must be Tensor")
    x, unbatched = _batched(input, 2, "unfold")
    k, d = _tuple(kernel_size, 2, "kernel_size"), _tuple(dilation, 2, "dilation")
    p, s = _tuple(padding, 2, "padding"), _tuple(stride, 2, "stride")
    if any(v <= 0 for v in k + d + s) or any(v < 0 for v in p):
        raise RuntimeError("unfold: kernel_size, dilation and stride must be positive and "
                           "padding non-negative")
    n, c, h, w = x.shape
    idx, L, (hp, wp) = _fold_index((h, w), k, d, p, s)
    if L <= 0 or (hp - d[0] * (k[0] - 1) - 1) < 0 or (wp - d[1] * (k[1] - 1) - 1) < 0:
        raise RuntimeError(f"unfold: the kernel {k} (dilation {d}) does not fit the padded "
                           f"input ({hp}, {wp})")
    if any(p):
        x = constant_pad_nd(x, (p[1], p[1], p[0], p[0]))
    flat = x.reshape((n * c, hp * wp)).T       # (Hp*Wp, N*C): positions as rows
    cols = flat[_index(idx)]                   # (kh*kw*L, N*C)
    out = cols.reshape((k[0] * k[1], L, n, c)).permute(2, 3, 0, 1).reshape(
        (n, c * k[0] * k[1], L))
    return out.squeeze(0) if unbatched else out


def fold(input: Tensor, output_size: int | Sequence[int], kernel_size: int | Sequence[int],
         dilation: int | Sequence[int] = 1, padding: int | Sequence[int] = 0,
         stride: int | Sequence[int] = 1) -> Tensor:
    """Sums columns back into an image (col2im, the adjoint of unfold: overlapping windows add).

    Args:
        input: `(N, C*kh*kw, L)` or `(C*kh*kw, L)`.
        output_size: the image's (H, W).
        kernel_size: the window: an int or one per spatial dim.
        dilation: as unfold's. Default: 1.
        padding: as unfold's. Default: 0.
        stride: as unfold's. Default: 1.

    Shape:
        - Output: `(N, C, H, W)`.

    Example:
        >>> F.fold(torch.ones(1, 4, 9), (4, 4), 2).shape
        torchic.Size([1, 1, 4, 4])
        >>> F.fold(torch.ones(1, 4, 4), (3, 3), 2, stride=1)
        tensor([[[[1., 2., 1.],
                  [2., 4., 2.],
                  [1., 2., 1.]]]])
    """
    if not isinstance(input, Tensor):
        raise TypeError("fold(): argument 'input' must be Tensor")
    cols, unbatched = _batched(input, 1, "fold")
    size, k = _tuple(output_size, 2, "output_size"), _tuple(kernel_size, 2, "kernel_size")
    d, p, s = _tuple(dilation, 2, "dilation"), _tuple(padding, 2, "padding"), \
        _tuple(stride, 2, "stride")
    if any(v <= 0 for v in k + d + s) or any(v < 0 for v in p):
        raise RuntimeError("fold: kernel_size, dilation and stride must be positive and padding "
                           "non-negative")
    kk = k[0] * k[1]
    if cols.shape[1] % kk:
        raise RuntimeError(f"Expected size of input's dimension 1 to be divisible by the product "
                           f"of kernel_size, but got input.size(1)={cols.shape[1]} and "
                           f"kernel_size={k}")
    idx, L, hp_wp = _fold_index(size, k, d, p, s)
    if L != cols.shape[2]:
        raise RuntimeError(f"Given output_size={size}, kernel_size={k}, dilation={d}, "
                           f"padding={p}, stride={s}, expected size of input's dimension 2 to "
                           f"match the calculated number of sliding blocks {L}, but got "
                           f"input.size(2)={cols.shape[2]}.")
    out = _Fold.apply(cols, c=cols.shape[1] // kk, idx=idx, hp_wp=hp_wp)
    if any(p):
        out = out[:, :, p[0]:p[0] + size[0], p[1]:p[1] + size[1]]
    return out.squeeze(0) if unbatched else out
