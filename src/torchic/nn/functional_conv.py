"""Convolutions: torch.nn.functional's spellings (padding and fold / unfold: functional_pad).

A convolution is one strided copy and one product (im2col over the project's matmul): the
padded input read as windows through strides (a zero-copy view), copied once into columns
(G, C/G*kh*kw, N*Ho*Wr) (stride 1: full-width rows, one run per window row set), multiplied
by the weight (G, Co/G, C/G*kh*kw). The input's gradient is W^T @ g summed back into the
image by kh*kw shifted whole-plane adds (_Col2Im); the weight's one product over every
window of the batch. A transposed convolution is a direct one of the dilated, padded input
with the flipped weight. Every gradient is recorded when the backward pass is
(create_graph): the input's is W^T @ g and _Col2Im (whose gradient, _Im2Col, has _Col2Im's
as its own), the weight's a convolution of x by g (_weight_grad: its x term too), so
derivatives of every order match PyTorch's. 1-d convolutions are 2-d ones of height 1.
Design and figures: docs/perf/conv.md.
"""

from collections.abc import Sequence

from .. import api as _ops, raw as _raw
from ..autograd import Primitive, create_graph_on
from ..functions import as_strided as _as_strided, reshape_raw as _reshape_raw
from ..functions.matmul import int_matmul as _int_matmul
from ..ops import SIGNATURES as _SIGNATURES
from ..tensor import Tensor
from .functional_pad import (_batched, _check_float, _gather_dim, _tuple,  # noqa: F401
                             constant_pad_nd, fold, pad, unfold)

__all__ = ["conv1d", "conv2d", "conv_transpose1d", "conv_transpose2d"]


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


class _Conv2d(Primitive):
    """conv2d of an already padded input: columns (one strided copy) times the weight."""

    def forward(self, x, weight, bias, stride, dilation, groups):
        n, c, h, w = x.shape
        co, cg, kh, kw = weight.shape
        cols, (ho, wo, wr) = _windows(x, (kh, kw), stride, dilation, groups)
        wv = _reshape_raw(weight, (groups, co // groups, cg * kh * kw))
        prod = _raw.matmul(wv, cols) if x._dtype not in _CONV_INTS else \
            _int_matmul(wv, cols)                         # (G, Co/G, N*Ho*Wr)
        l_ = ho * wr
        prod = _as_strided(prod, 0, (n, co, ho, wo), (l_, n * l_, wr, 1))   # a permuted view
        out = _raw.contiguous(prod) if bias is None else \
            _raw.binary("add", prod, _reshape_raw(bias, (co, 1, 1)))   # (the add lays it out)
        self.meta = (x.shape, stride, dilation, groups, wr)
        if self.needs_grad and self.needs_grad[1]:
            # x itself only for a recorded backward's weight gradient (its input term)
            self.save(weight, cols, x if self.needs_grad[0] else None)
        else:
            self.save(weight)
        return out

    def backward(self, g):
        weight, *cols = self.saved
        (n, c, h, w), stride, dilation, groups, wr = self.meta
        co, cg, kh, kw = weight.shape
        need_x, need_w, need_b = (self.needs_grad + (False,) * 3)[:3]
        gx = gw = gb = None
        gg = None
        if need_w or (need_x and stride == (1, 1)):
            # g as (Co, N, Ho, Wr), zeros against the full-width rows' extra columns: the
            # weight gradient's operand, and (stride 1: Wr = W) the input gradient's too
            gt = g.permute(1, 0, 2, 3)
            if wr != g.shape[3]:
                gt = constant_pad_nd(gt, (0, wr - g.shape[3]))
            gg = gt.reshape((groups, co // groups, n * g.shape[2] * wr))
        if need_x:
            gx = _input_grad(g, weight, (h, w), stride, dilation, groups,
                             gg if stride == (1, 1) else None)
        if need_w and need_x and create_graph_on():
            # recorded, its x term included: a convolution of x by g (second derivatives)
            gw = _weight_grad(cols[1], g, weight.shape, stride, dilation, groups)
        elif need_w:   # one product over every window of the batch: (Co/G, N*L) @ (N*L, K)
            gw = _ops.matmul(gg, cols[0].transpose(-1, -2)).reshape(weight.shape)
        if need_b:
            gb = g.sum((0, 2, 3))
        return gx, gw, gb


def _weight_grad(x, g, kshape, stride, dilation, groups):
    """conv2d's weight gradient (Co, C/G, kh, kw) as a convolution of x by g, recorded in
    both (create_graph): gw[o, c, ki, kj] = sum over n, i, j of g[n, o, i, j] *
    x[n, c, ki*d + i*s, kj*d + j*s], i.e. x with its batch as channels, (C/G, G*N, H, W),
    convolved (stride d, dilation s, G groups) by g as filters, (Co, N, Ho, Wo). Its own
    backward is _Conv2d's again: derivatives of every order."""
    n, c, h, w = x.shape
    co, cg, kh, kw = kshape
    ho, wo = g.shape[2:]
    hn = dilation[0] * (kh - 1) + stride[0] * (ho - 1) + 1    # the rows the windows reach
    wn = dilation[1] * (kw - 1) + stride[1] * (wo - 1) + 1
    if (hn, wn) != (h, w):
        x = x[:, :, :hn, :wn]
    xt = x.reshape((n, groups, cg, hn, wn)).permute(2, 1, 0, 3, 4).reshape(
        (cg, groups * n, hn, wn))
    out = _Conv2d.apply(xt, g.permute(1, 0, 2, 3), None, stride=dilation, dilation=stride,
                        groups=groups)                           # (C/G, Co, kh, kw)
    return out.permute(1, 0, 2, 3)


def _input_grad(g, weight, hw, stride, dilation, groups, gg=None):
    """conv2d's input gradient (N, C, H, W): the columns' gradient W^T @ g (one product on g
    as it is, never on windows of it), summed back into the image by _Col2Im. A stride-1
    convolution's g comes laid out as the weight gradient's (Co, N*Ho*W) rows (`gg`: output
    rows of the input's full width, zeros past Wo); a strided one's is laid out (Co, N, H, W)
    here, on the input's grid (dilated by the stride, zeros past Ho / Wo). Either way each
    (ki, kj) of the sum is a shift along an image's flat (H*W) rows."""
    n, co, ho, wo = g.shape
    h, w = hw
    cin, cg, kh, kw = weight.shape[1] * groups, weight.shape[1], weight.shape[2], weight.shape[3]
    if gg is None:
        gt = g.permute(1, 0, 2, 3)
        if stride != (1, 1):
            gt = _Dilate.apply(gt, stride=stride)
        gt = constant_pad_nd(gt, (0, w - gt.shape[3], 0, h - gt.shape[2]))      # (Co, N, H, W)
        gg, la = gt.reshape((groups, co // groups, n * h * w)), h * w
    else:
        la = ho * w
    wt = weight.reshape((groups, co // groups, cg * kh * kw)).transpose(1, 2)
    gcols = _ops.matmul(wt, gg)                                 # (G, Cg*K, N*La)
    gx = _Col2Im.apply(gcols, c=cin, k=(kh, kw), dilation=dilation, nhw=(n, h, w), la=la)
    return gx.permute(1, 0, 2, 3)


_COL2IM_INS = {ins for ins, _ in _SIGNATURES["col2im"]}
_COL2IM_MAX_TERMS = 4096     # larger kernels: the shifted adds (one invocation of webgpu's
                             # sums a whole kernel's terms)


class _Col2Im(Primitive):
    """Columns (G, C/G*kh*kw, N*La) summed into the image (C, N, H, W): for each (ki, kj), an
    image's La-long row of columns added at the shift ki*d*W + kj*d of its flat (H*W) plane
    (what would leave the plane is zeros of g past the valid windows: dropped). One col2im op
    where its row takes the dtype (float32 / float64), else one add per (ki, kj)."""

    def forward(self, gcols, c, k, dilation, nhw, la):
        n, h, w = nhw
        kh, kw = k
        kk, hw = kh * kw, h * w
        self.meta = (c, k, dilation, nhw, la, gcols.shape)
        src = gcols if gcols.is_contiguous() else _raw.contiguous(gcols)
        # (c, n, ki, kj, j') of the (G, Cg*K, N*La) columns
        cols = _as_strided(src, src._offset, (c, n, kh, kw, la),
                           (kk * n * la, la, kw * n * la, n * la, 1))
        out = _raw.new_tensor((c, n, hw), src._dtype)
        steps = (dilation[0] * w, dilation[1])
        if (src._dtype,) in _COL2IM_INS and kk <= _COL2IM_MAX_TERMS:
            _raw.run("col2im", out, (_raw.view_of(cols),),
                     {"row_step": steps[0], "col_step": steps[1]})
        else:
            _raw.fill(out, 0.0)
            for ki in range(kh):
                for kj in range(kw):
                    shift = ki * steps[0] + kj * steps[1]
                    end = min(hw, shift + la)
                    if shift >= end:
                        continue
                    region = _as_strided(out, shift, (c, n, end - shift), (n * hw, hw, 1))
                    part = _as_strided(cols, cols._offset + ki * kw * n * la + kj * n * la,
                                       (c, n, end - shift), (kk * n * la, la, 1))
                    _raw.run("add", region, (_raw.view_of(region), _raw.view_of(part)))
        return _as_strided(out, 0, (c, n, h, w), (n * hw, hw, w, 1))

    def backward(self, g):
        if create_graph_on():
            return (_Im2Col.apply(g, meta=self.meta),)
        return (_im2col(g, self.meta),)


def _im2col(g, meta):
    """_Col2Im's gradient: the image g (C, N, H, W) read as its columns (G, C/G*kh*kw,
    N*La), one strided copy."""
    c, (kh, kw), dilation, (n, h, w), la, shape = meta
    hw = h * w
    reach = (kh - 1) * dilation[0] * w + (kw - 1) * dilation[1] + la
    flat = g.reshape((c, n, hw))
    if reach > hw:
        flat = constant_pad_nd(flat, (0, reach - hw))
    sc, sn, sj = flat._strides
    cols = _as_strided(flat, flat._offset, (c, kh, kw, n, la),
                       (sc, dilation[0] * w * sj, dilation[1] * sj, sn, sj))
    return cols.reshape(shape)


class _Im2Col(Primitive):
    """_Col2Im's gradient, recorded (create_graph): its own gradient is _Col2Im's."""

    def forward(self, g, meta):
        self.meta = meta
        return _raw.contiguous(_im2col(g, meta))

    def backward(self, g):
        c, k, dilation, nhw, la, _ = self.meta
        return (_Col2Im.apply(g, c=c, k=k, dilation=dilation, nhw=nhw, la=la),)


class _Dilate(Primitive):
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

_PAD_MODES = ("zeros", "reflect", "replicate", "circular")


# the integer dtypes PyTorch CPU convolves (exactly, wrapping): every one for a direct
# convolution, int64 alone for a transposed one
_CONV_INTS = ("i8", "u8", "i16", "i32", "i64")


def _conv_input(input, weight, bias, dims, op, ints=_CONV_INTS):
    """A convolution's checks (float or `ints` tensors of one dtype, a (dims + 2)-d weight)
    and its input as a batch: (x, whether the input was unbatched)."""
    if isinstance(input, Tensor) and input._dtype in _CONV_INTS:
        if input._dtype not in ints:
            raise NotImplementedError(f"\"{op}\" not implemented for '{input.dtype}'")
        for t in (weight, bias):
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(f"{op}(): argument must be a Tensor, not {type(t).__name__}")
            if t is not None and t._dtype != input._dtype:
                raise RuntimeError(f"{op}: Input type ({input.dtype}) and weight / bias type "
                                   f"({t.dtype}) should be the same")
    else:
        _check_float(input, weight, bias, op=op)
    if weight.ndim != dims + 2:
        raise RuntimeError(f"{op}: expected a {dims + 2}-d weight, got {list(weight.shape)}")
    return _batched(input, dims, op)


def _conv(input, weight, bias, stride, padding, dilation, groups, dims, op,
          padding_mode="zeros"):
    x, unbatched = _conv_input(input, weight, bias, dims, op)
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
    if x._dtype in _CONV_INTS and x._dtype != "i64" and any(d > 1 for d in dilation):
        raise NotImplementedError(f"\"{op}\" with dilation > 1 not implemented for "
                                  f"'{x.dtype}' (PyTorch's slow_conv_dilated: int64 alone)")
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
    """2-d cross-correlation (PyTorch's convolution) of an image batch with filters:
    `out[n, o] = bias[o] + sum_c weight[o, c] * input[n, c]` over each (kh, kw) window.

    Args:
        input: `(N, C, H, W)` or unbatched `(C, H, W)`.
        weight: the filters, `(Co, C / groups, kh, kw)`.
        bias: `(Co,)` or None.
        stride, padding, dilation: ints or (h, w) pairs; padding also "valid" (none) or
            "same" (output the size of the input, stride 1; the odd extra pad after).
        groups: C and Co split into groups convolved apart (groups=C: depthwise).

    Shape:
        - Output: `(N, Co, Ho, Wo)`, `Ho = (H + 2*pad - dilation*(kh-1) - 1) // stride + 1`
          (Wo alike).

    Example:
        >>> F.conv2d(torchic.randn(8, 3, 32, 32), torchic.randn(16, 3, 3, 3), padding=1).shape
        torchic.Size([8, 16, 32, 32])
    """
    return _conv(input, weight, bias, stride, padding, dilation, groups, 2, "conv2d")


def conv1d(input: Tensor, weight: Tensor, bias: Tensor | None = None,
           stride: int | Sequence[int] = 1, padding: int | Sequence[int] | str = 0,
           dilation: int | Sequence[int] = 1, groups: int = 1) -> Tensor:
    """1-d cross-correlation (PyTorch's convolution) of a batch of sequences with filters:
    `out[n, o] = bias[o] + sum_c weight[o, c] * input[n, c]` over each window.

    Args:
        input: `(N, C, L)` or `(C, L)`.
        weight: the filters, `(Co, C / groups, k)`.
        bias: `(Co,)` or None.
        stride, padding, dilation: ints or 1-tuples; padding also "valid" or "same" (as
            conv2d's).
        groups: C and Co split into groups convolved apart.

    Shape:
        - Output: `(N, Co, Lo)`, `Lo = (L + 2*padding - dilation*(k-1) - 1) // stride + 1`.

    Example:
        >>> F.conv1d(torch.tensor([[[1.0, 2.0, 3.0, 4.0]]]), torch.tensor([[[1.0, 0.0, -1.0]]]))
        tensor([[[-2., -2.]]])
        >>> F.conv1d(torch.randn(4, 2, 10), torch.randn(3, 2, 3)).shape
        torchic.Size([4, 3, 8])
    """
    return _conv(input, weight, bias, stride, padding, dilation, groups, 1, "conv1d")


def _conv_t(input, weight, bias, stride, padding, output_padding, groups, dilation, dims, op):
    x, unbatched = _conv_input(input, weight, bias, dims, op, ints=("i64",))
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
    """2-d transposed convolution ("deconvolution"): the gradient of conv2d with respect to its
    input.

    Args:
        input: `(N, Cin, H, W)` or `(Cin, H, W)`.
        weight: `(Cin, Cout / groups, kh, kw)`.
        bias: `(Cout,)` or None.
        stride: an int or (h, w). Default: 1.
        padding: removed from both sides of the output. Default: 0.
        output_padding: added to one side of the output (< stride or dilation). Default: 0.
        groups: Default: 1.
        dilation: Default: 1.

    Shape:
        - Output: `(N, Cout, Ho, Wo)`, `Ho = (H-1)*stride - 2*padding + dilation*(kh-1) +
          output_padding + 1` (Wo alike).

    Example:
        >>> F.conv_transpose2d(torch.randn(1, 4, 5, 5), torch.randn(4, 2, 3, 3), stride=2).shape
        torchic.Size([1, 2, 11, 11])
    """
    return _conv_t(input, weight, bias, stride, padding, output_padding, groups, dilation, 2,
                   "conv_transpose2d")


def conv_transpose1d(input: Tensor, weight: Tensor, bias: Tensor | None = None,
                     stride: int | Sequence[int] = 1, padding: int | Sequence[int] = 0,
                     output_padding: int | Sequence[int] = 0, groups: int = 1,
                     dilation: int | Sequence[int] = 1) -> Tensor:
    """1-d transposed convolution ("deconvolution"): the gradient of conv1d with respect to its
    input (as conv_transpose2d).

    Args:
        input: `(N, Cin, L)` or `(Cin, L)`.
        weight: `(Cin, Cout / groups, k)`.
        bias: `(Cout,)` or None.
        stride: Default: 1.
        padding: removed from both ends of the output. Default: 0.
        output_padding: added to one end of the output (< stride or dilation). Default: 0.
        groups: Default: 1.
        dilation: Default: 1.

    Shape:
        - Output: `(N, Cout, Lo)`, `Lo = (L-1)*stride - 2*padding + dilation*(k-1) +
          output_padding + 1`.

    Example:
        >>> F.conv_transpose1d(torch.tensor([[[1.0, 2.0]]]), torch.tensor([[[1.0, 1.0, 1.0]]]))
        tensor([[[1., 3., 3., 2.]]])
        >>> F.conv_transpose1d(torch.randn(1, 4, 5), torch.randn(4, 2, 3)).shape
        torchic.Size([1, 2, 7])
    """
    return _conv_t(input, weight, bias, stride, padding, output_padding, groups, dilation, 1,
                   "conv_transpose1d")
