"""Convolutions, padding and fold / unfold: torch.nn.functional's spellings.

A convolution is one strided copy and one product (im2col over the project's matmul):
the padded input read as the windows (N, G, C/G, kh, kw, Ho, Wo) through strides alone
(a zero-copy view), copied once into the columns (N, G, C/G*kh*kw, Ho*Wo), and multiplied
by the weight (G, Co/G, C/G*kh*kw). Its backward is the transposed convolution of the
gradient (the input's gradient: the gradient dilated by the stride, padded by
dilation*(k-1) and convolved with the flipped, transposed weight, so again one strided
copy and one product, never a scatter of the columns) and g @ columns^T (the weight's).
A transposed convolution is that same composite, so every gradient is a differentiable
tensor expression. 1-d convolutions are 2-d ones of height 1.
"""

from collections.abc import Sequence

import numpy as np

from .. import api as _ops, raw as _raw
from ..autograd import Function
from ..creation import tensor as _tensor_from_data
from ..functions import as_strided as _as_strided, reshape_raw as _reshape_raw
from ..shape import numel
from ..tensor import Tensor

__all__ = ["conv1d", "conv2d", "conv_transpose1d", "conv_transpose2d", "pad", "unfold", "fold",
           "constant_pad_nd"]


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


class _ConstantPad(Function):
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
    """input padded with `value` (torch.constant_pad_nd); negative pads crop."""
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
        mode: "constant" (filled with `value`, default 0; negative pads crop), "reflect"
            (mirrored without repeating the edge), "replicate" (the edge repeated) or
            "circular" (wrapped around). The non-constant modes pad the last 1, 2 or 3 dims of
            a batched or unbatched input (2-4 dims for 1 or 2 padded dims).

    Example:
        >>> F.pad(torchic.ones(1, 1, 2, 2), (1, 1, 1, 1)).shape
        (1, 1, 4, 4)
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


# ---------------------------------------------------------------------------------------------
# convolution


def _windows(x, k, stride, dilation, groups):
    """The columns of a padded (N, C, H, W) x: (G, C/G*kh*kw, N*Ho*Wr), one strided copy
    (the batch inside the columns: one product per group, and the weight's gradient one
    product over every window of the batch), and (Ho, Wo, Wr).

    A stride-1 convolution takes full-width rows (Wr = W, not Wo): the columns of one (c, ki,
    kj, n) are then one contiguous run of Ho*W input elements instead of Ho runs of Wo (the
    copy's cost is per run: LeNet's 8- and 12-wide rows cost 3-5x more), and the W - Wo extra
    columns are dropped from the product (they hold the next row's first elements; the
    weight's gradient meets them with zeros of g). x is copied into a buffer whose tail
    (kw-1)*dilation zeros the last plane's last windows run into."""
    n, c, h, w = x.shape
    kh, kw = k
    ho = (h - dilation[0] * (kh - 1) - 1) // stride[0] + 1
    wo = (w - dilation[1] * (kw - 1) - 1) // stride[1] + 1
    cg = c // groups
    if stride == (1, 1) and wo < w:
        tail = (kw - 1) * dilation[1]
        size = n * c * h * w
        buf = _raw.new_tensor((size + tail,), x._dtype)
        _raw.fill(_as_strided(buf, size, (tail,), (1,)), 0.0)
        _raw.copy_into(_as_strided(buf, 0, x.shape, (c * h * w, h * w, w, 1)), x)
        view = _as_strided(buf, 0, (groups, cg, kh, kw, n, ho * w),
                           (cg * h * w, h * w, dilation[0] * w, dilation[1], c * h * w, 1))
        wr = w
    else:
        sn, sc, sh, sw = x._strides
        view = _as_strided(x, x._offset, (groups, cg, kh, kw, n, ho, wo),
                           (cg * sc, sc, dilation[0] * sh, dilation[1] * sw, sn,
                            stride[0] * sh, stride[1] * sw))
        wr = wo
    cols = _raw.contiguous(view)
    kk, nl = cg * kh * kw, n * ho * wr
    return _as_strided(cols, 0, (groups, kk, nl), (kk * nl, nl, 1)), (ho, wo, wr)


class _Conv2d(Function):
    """conv2d of an already padded input: columns (one strided copy) times the weight."""

    def forward(self, x, weight, bias, stride, dilation, groups):
        n, c, h, w = x.shape
        co, cg, kh, kw = weight.shape
        cols, (ho, wo, wr) = _windows(x, (kh, kw), stride, dilation, groups)
        wv = _reshape_raw(weight, (groups, co // groups, cg * kh * kw))
        prod = _raw.matmul(wv, cols)                      # (G, Co/G, N*Ho*Wr)
        l_ = ho * wr
        prod = _as_strided(prod, 0, (n, co, ho, wo), (l_, n * l_, wr, 1))   # a permuted view
        out = _raw.contiguous(prod) if bias is None else \
            _raw.binary("add", prod, _reshape_raw(bias, (co, 1, 1)))   # (the add lays it out)
        self.meta = (x.shape, stride, dilation, groups, wr)
        if self.needs_grad and self.needs_grad[1]:
            self.save(weight, cols)
        else:
            self.save(weight)
        return out

    def backward(self, g):
        weight, *cols = self.saved
        (n, c, h, w), stride, dilation, groups, wr = self.meta
        co, cg, kh, kw = weight.shape
        need_x, need_w, need_b = (self.needs_grad + (False,) * 3)[:3]
        gx = gw = gb = None
        if need_x:
            gx = _input_grad(g, weight, (h, w), stride, dilation, groups)
        if need_w:     # one product over every window of the batch: (Co/G, N*L) @ (N*L, K)
            gt = g.permute(1, 0, 2, 3)
            if wr != g.shape[3]:       # zeros against the full-width rows' extra columns
                gt = constant_pad_nd(gt, (0, wr - g.shape[3]))
            gg = gt.reshape((groups, co // groups, n * g.shape[2] * wr))
            gw = _ops.matmul(gg, cols[0].transpose(-1, -2)).reshape(weight.shape)
        if need_b:
            gb = g.sum((0, 2, 3))
        return gx, gw, gb


def _input_grad(g, weight, hw, stride, dilation, groups):
    """conv2d's input gradient (N, C, H, W): the columns' gradient W^T @ g (one product on g
    as it is, never on windows of it), summed back into the image by _Col2Im. g is laid out
    (Co, N, H, W) first, on the input's grid (dilated by the stride, zeros past Ho / Wo), so
    that each (ki, kj) of the sum is one shifted add of whole planes."""
    n, co, ho, wo = g.shape
    h, w = hw
    cin, cg, kh, kw = weight.shape[1] * groups, weight.shape[1], weight.shape[2], weight.shape[3]
    gt = g.permute(1, 0, 2, 3)
    if stride != (1, 1):
        gt = _Dilate.apply(gt, stride=stride)
    gt = constant_pad_nd(gt, (0, w - gt.shape[3], 0, h - gt.shape[2]))      # (Co, N, H, W)
    wt = weight.reshape((groups, co // groups, cg * kh * kw)).transpose(1, 2)
    gcols = _ops.matmul(wt, gt.reshape((groups, co // groups, n * h * w)))   # (G, Cg*K, NHW)
    gx = _Col2Im.apply(gcols, c=cin, k=(kh, kw), dilation=dilation, nhw=(n, h, w))
    return gx.permute(1, 0, 2, 3)


class _Col2Im(Function):
    """Columns (G, C/G*kh*kw, N*H*W) on the input's grid summed into (C, N, H, W): for each
    (ki, kj) one add of all C*N planes, shifted by ki*d*W + kj*d in a flat buffer (what
    leaves a plane there is zeros of g past the valid windows: it adds nothing)."""

    def forward(self, gcols, c, k, dilation, nhw):
        n, h, w = nhw
        kh, kw = k
        size = c * n * h * w
        tail = (kh - 1) * dilation[0] * w + (kw - 1) * dilation[1]
        buf = _raw.new_tensor((size + tail,), gcols._dtype)
        _raw.fill(buf, 0.0)
        kk, p = kh * kw, n * h * w
        self.meta = (c, k, dilation, nhw, gcols.shape)
        src = gcols if gcols.is_contiguous() else _raw.contiguous(gcols)
        for ki in range(kh):
            for kj in range(kw):
                shift = ki * dilation[0] * w + kj * dilation[1]
                region = _as_strided(buf, shift, (c, p), (p, 1))
                part = _as_strided(src, src._offset + (ki * kw + kj) * p, (c, p), (kk * p, 1))
                v = _raw.view_of(region)
                _raw.run("add", region, (v, _raw.view_of(part)))
        return _as_strided(buf, 0, (c, n, h, w), (n * h * w, h * w, w, 1))

    def backward(self, g):
        c, (kh, kw), dilation, (n, h, w), shape = self.meta
        tail = (kh - 1) * dilation[0] * w + (kw - 1) * dilation[1]
        flat = constant_pad_nd(g.reshape((c * n * h * w,)), (0, tail))
        p = n * h * w
        cols = _as_strided(flat, flat._offset, (c, kh, kw, p),
                           (p, dilation[0] * w, dilation[1], 1))
        return (cols.reshape(shape),)


class _Dilate(Function):
    """x with stride-1 zeros between its elements along the last two dims."""

    def forward(self, x, stride):
        n, c, h, w = x.shape
        sh, sw = stride
        out = _raw.new_tensor((n, c, (h - 1) * sh + 1, (w - 1) * sw + 1), x._dtype)
        _raw.fill(out, 0.0)
        s = out._strides
        _raw.copy_into(_as_strided(out, 0, x.shape, (s[0], s[1], s[2] * sh, s[3] * sw)), x)
        self.stride = stride
        return out

    def backward(self, g):
        return (g[:, :, ::self.stride[0], ::self.stride[1]],)


def _flip_transpose(weight, groups):
    """A transposed convolution's weight (Cin, Cout/G, kh, kw) as the weight of the direct
    convolution that computes it: (Cout, Cin/G, kh, kw), flipped in kh and kw."""
    cin, cog, kh, kw = weight.shape
    w = weight.reshape((groups, cin // groups, cog, kh, kw)).transpose(1, 2)
    w = w.reshape((groups * cog, cin // groups, kh, kw))
    if kh > 1:
        w = _gather_dim(w, 2, range(kh - 1, -1, -1))
    if kw > 1:
        w = _gather_dim(w, 3, range(kw - 1, -1, -1))
    return w


def _conv_transpose(x, weight, stride, padding, output_padding, groups, dilation, bias=None):
    """conv_transpose2d as a direct convolution: x dilated by the stride, padded by
    dilation*(k-1) - padding (+ output_padding after), convolved with the flipped weight."""
    kh, kw = weight.shape[2:]
    if stride != (1, 1):
        x = _Dilate.apply(x, stride=stride)
    pads = []
    for i, k in ((1, kw), (0, kh)):
        p = dilation[i] * (k - 1) - padding[i]
        pads += [p, p + output_padding[i]]
    if any(pads):
        x = constant_pad_nd(x, pads, 0.0)
    w = _flip_transpose(weight, groups)
    return _Conv2d.apply(x, w, bias, stride=(1, 1), dilation=dilation, groups=groups)


def _batched(input, dims, op):
    """(input with a batch dim, whether one was added): PyTorch's unbatched inputs."""
    if input.ndim == dims + 1:
        return input.unsqueeze(0), True
    if input.ndim != dims + 2:
        raise RuntimeError(f"{op}: Expected {dims + 1}D (unbatched) or {dims + 2}D (batched) "
                           f"input, but got input of size: {list(input.shape)}")
    return input, False


_PAD_MODES = ("zeros", "reflect", "replicate", "circular")


def _conv(input, weight, bias, stride, padding, dilation, groups, dims, op,
          padding_mode="zeros"):
    _check_float(input, weight, bias, op=op)
    if weight.ndim != dims + 2:
        raise RuntimeError(f"{op}: expected a {dims + 2}-d weight, got {list(weight.shape)}")
    x, unbatched = _batched(input, dims, op)
    stride = _tuple(stride, dims, "stride")
    dilation = _tuple(dilation, dims, "dilation")
    groups = int(groups)
    c, k = x.shape[1], weight.shape[2:]
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(d <= 0 for d in dilation):
        raise RuntimeError("dilation should be greater than zero")
    if c != weight.shape[1] * groups or weight.shape[0] % groups:
        raise RuntimeError(f"Given groups={groups}, weight of size {list(weight.shape)}, "
                           f"expected input{list(x.shape)} to have {weight.shape[1] * groups} "
                           f"channels, but got {c} channels instead")
    if bias is not None and tuple(bias.shape) != (weight.shape[0],):
        raise RuntimeError(f"{op}: bias of shape {list(bias.shape)}, expected "
                           f"[{weight.shape[0]}]")
    if isinstance(padding, str):
        if padding == "valid":
            pads = [(0, 0)] * dims
        elif padding == "same":
            if any(s != 1 for s in stride):
                raise RuntimeError("padding='same' is not supported for strided convolutions")
            pads = []
            for d, kk in zip(dilation, k):
                total = d * (kk - 1)
                pads.append((total // 2, total - total // 2))
        else:
            raise ValueError(f"Invalid padding string '{padding}', should be one of "
                             f"{{'valid', 'same'}}")
    else:
        pads = [(p, p) for p in _tuple(padding, dims, "padding")]
        if any(p < 0 for p, _ in pads):
            raise RuntimeError("negative padding is not supported")
    flat = [v for a, b in reversed(pads) for v in (a, b)]
    if any(flat):
        x = pad(x, flat, mode="constant" if padding_mode == "zeros" else padding_mode)
    if dims == 1:
        x, weight = x.unsqueeze(2), weight.unsqueeze(2)
        stride, dilation = (1,) + stride, (1,) + dilation
    for i, kk in enumerate(weight.shape[2:]):
        if x.shape[2 + i] < dilation[i] * (kk - 1) + 1:
            raise RuntimeError(f"{op}: Calculated padded input size per channel: "
                               f"({' x '.join(str(s) for s in x.shape[2:])}). Kernel size: "
                               f"({' x '.join(str(s) for s in weight.shape[2:])}). Kernel size "
                               f"can't be greater than actual input size")
    out = _Conv2d.apply(x, weight, bias, stride=stride, dilation=dilation, groups=groups)
    if dims == 1:
        out = out.squeeze(2)
    return out.squeeze(0) if unbatched else out


def conv2d(input: Tensor, weight: Tensor, bias: Tensor | None = None,
           stride: int | Sequence[int] = 1, padding: int | Sequence[int] | str = 0,
           dilation: int | Sequence[int] = 1, groups: int = 1) -> Tensor:
    """2-d cross-correlation of input (N, C, H, W) or (C, H, W) with weight
    (Co, C/groups, kh, kw), plus bias (Co,).

    Args:
        stride, padding, dilation: ints or pairs; padding also "valid" (none) or "same"
            (output the size of the input, stride 1; the odd extra pad after).
        groups: C and Co split into groups convolved apart (groups=C: depthwise).

    Shape: output (N, Co, Ho, Wo), Ho = (H + 2*pad - dilation*(kh-1) - 1) // stride + 1.

    Example:
        >>> F.conv2d(torchic.randn(8, 3, 32, 32), torchic.randn(16, 3, 3, 3), padding=1).shape
        (8, 16, 32, 32)
    """
    return _conv(input, weight, bias, stride, padding, dilation, groups, 2, "conv2d")


def conv1d(input: Tensor, weight: Tensor, bias: Tensor | None = None,
           stride: int | Sequence[int] = 1, padding: int | Sequence[int] | str = 0,
           dilation: int | Sequence[int] = 1, groups: int = 1) -> Tensor:
    """1-d cross-correlation of input (N, C, L) or (C, L) with weight (Co, C/groups, k),
    plus bias (Co,); arguments as conv2d's (ints or 1-tuples).

    Example:
        >>> F.conv1d(torchic.randn(4, 2, 10), torchic.randn(3, 2, 3)).shape
        (4, 3, 8)
    """
    return _conv(input, weight, bias, stride, padding, dilation, groups, 1, "conv1d")


def _conv_t(input, weight, bias, stride, padding, output_padding, groups, dilation, dims, op):
    _check_float(input, weight, bias, op=op)
    if weight.ndim != dims + 2:
        raise RuntimeError(f"{op}: expected a {dims + 2}-d weight, got {list(weight.shape)}")
    x, unbatched = _batched(input, dims, op)
    stride = _tuple(stride, dims, "stride")
    padding = _tuple(padding, dims, "padding")
    output_padding = _tuple(output_padding, dims, "output_padding")
    dilation = _tuple(dilation, dims, "dilation")
    groups = int(groups)
    if groups <= 0 or weight.shape[0] % groups:
        raise RuntimeError(f"{op}: groups={groups} must be positive and divide the weight's "
                           f"first dim {weight.shape[0]}")
    if x.shape[1] != weight.shape[0]:
        raise RuntimeError(f"Given transposed=1, weight of size {list(weight.shape)}, expected "
                           f"input{list(x.shape)} to have {weight.shape[0]} channels, but got "
                           f"{x.shape[1]} channels instead")
    if any(s <= 0 for s in stride) or any(d <= 0 for d in dilation) or \
            any(p < 0 for p in padding):
        raise RuntimeError(f"{op}: stride and dilation must be positive, padding non-negative")
    for op_, s, d in zip(output_padding, stride, dilation):
        if op_ < 0 or op_ >= max(s, d):
            raise RuntimeError("output padding must be smaller than either stride or dilation, "
                               f"but got output_padding={output_padding}, stride={stride}, "
                               f"dilation={dilation}")
    cout = weight.shape[1] * groups
    if bias is not None and tuple(bias.shape) != (cout,):
        raise RuntimeError(f"{op}: bias of shape {list(bias.shape)}, expected [{cout}]")
    if dims == 1:
        x, weight = x.unsqueeze(2), weight.unsqueeze(2)
        stride, padding, output_padding, dilation = ((1,) + stride, (0,) + padding,
                                                     (0,) + output_padding, (1,) + dilation)
    for i in range(2):
        size = (x.shape[2 + i] - 1) * stride[i] - 2 * padding[i] + \
            dilation[i] * (weight.shape[2 + i] - 1) + output_padding[i] + 1
        if size <= 0:
            raise RuntimeError(f"{op}: the output size would be {size} (non-positive)")
    out = _conv_transpose(x, weight, stride, padding, output_padding, groups, dilation, bias)
    if dims == 1:
        out = out.squeeze(2)
    return out.squeeze(0) if unbatched else out


def conv_transpose2d(input: Tensor, weight: Tensor, bias: Tensor | None = None,
                     stride: int | Sequence[int] = 1, padding: int | Sequence[int] = 0,
                     output_padding: int | Sequence[int] = 0, groups: int = 1,
                     dilation: int | Sequence[int] = 1) -> Tensor:
    """2-d transposed convolution ("deconvolution"): the gradient of conv2d with respect to
    its input. input (N, Cin, H, W), weight (Cin, Cout/groups, kh, kw), bias (Cout,).

    Shape: Ho = (H-1)*stride - 2*padding + dilation*(kh-1) + output_padding + 1.

    Example:
        >>> F.conv_transpose2d(torchic.randn(1, 4, 5, 5), torchic.randn(4, 2, 3, 3),
        ...                    stride=2).shape
        (1, 2, 11, 11)
    """
    return _conv_t(input, weight, bias, stride, padding, output_padding, groups, dilation, 2,
                   "conv_transpose2d")


def conv_transpose1d(input: Tensor, weight: Tensor, bias: Tensor | None = None,
                     stride: int | Sequence[int] = 1, padding: int | Sequence[int] = 0,
                     output_padding: int | Sequence[int] = 0, groups: int = 1,
                     dilation: int | Sequence[int] = 1) -> Tensor:
    """1-d transposed convolution: input (N, Cin, L), weight (Cin, Cout/groups, k); as
    conv_transpose2d.

    Example:
        >>> F.conv_transpose1d(torchic.randn(1, 4, 5), torchic.randn(4, 2, 3)).shape
        (1, 2, 7)
    """
    return _conv_t(input, weight, bias, stride, padding, output_padding, groups, dilation, 1,
                   "conv_transpose1d")


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


class _Fold(Function):
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
    """The sliding windows of a (N, C, H, W) input as columns (N, C*kh*kw, L) (im2col).

    Example:
        >>> F.unfold(torchic.randn(1, 2, 4, 4), 2).shape
        (1, 8, 9)
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
    """Columns (N, C*kh*kw, L) summed back into an image (N, C, H, W) (col2im; the adjoint
    of unfold: overlapping windows add).

    Example:
        >>> F.fold(torchic.ones(1, 4, 9), (4, 4), 2).shape
        (1, 1, 4, 4)
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
