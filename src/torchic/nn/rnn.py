"""The recurrent layers: RNN (tanh / relu), LSTM (with proj_size), GRU and their cells.

PyTorch's constructors, parameter names (weight_ih_l0, weight_hh_l0_reverse, bias_ih_l1,
weight_hr_l0 ...), shapes, gate order (LSTM: input, forget, cell, output; GRU: reset, update,
new) and init (every parameter ~ U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)), drawn in
PyTorch's order, so a seed gives PyTorch's numbers), so state_dicts load both ways.

Each layer is a composite: the input projections of every time step are one matmul
(`F.linear` over all T * N rows), then a Python loop runs the recurrent step (one matmul and
a few elementwise ops) per time step, differentiable as any other composite. Packed sequences
run the same loop, the batch shrinking (forward) or growing (reverse) as sequences end.
"""

import math
import numbers
import warnings
from typing import Any

from .. import api as _ops, creation, raw
from ..autograd import Function
from ..functions.common import as_strided
from ..grad_mode import is_grad_enabled
from ..tensor import Tensor
from . import functional as F
from . import init
from .module import Module
from .parameter import Parameter
from .utils.rnn import PackedSequence

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


def _lstm_step(xp, state, w_hh, b_hh, w_hr):
    h, c = state
    gates = xp + F.linear(h, w_hh, b_hh)
    hs = c.shape[-1]
    ifo = _ops.sigmoid(gates)
    i, f, o = ifo[:, :hs], ifo[:, hs:2 * hs], ifo[:, 3 * hs:]
    g = _ops.tanh(gates[:, 2 * hs:3 * hs])
    c = f * c + i * g
    h = o * _ops.tanh(c)
    if w_hr is not None:
        h = F.linear(h, w_hr)
    return h, (h, c)


def _gru_step(xp, h, w_hh, b_hh, w_hr):
    gh = F.linear(h, w_hh, b_hh)
    hs = h.shape[-1]
    rz = _ops.sigmoid(xp[:, :2 * hs] + gh[:, :2 * hs])
    r, z = rz[:, :hs], rz[:, hs:]
    n = _ops.tanh(xp[:, 2 * hs:] + r * gh[:, 2 * hs:])
    h = n + z * (h - n)
    return h, h


def _tanh_step(xp, h, w_hh, b_hh, w_hr):
    h = _ops.tanh(xp + F.linear(h, w_hh, b_hh))
    return h, h


def _relu_step(xp, h, w_hh, b_hh, w_hr):
    h = _ops.relu(xp + F.linear(h, w_hh, b_hh))
    return h, h


def _row_range(t, first, count):
    """Rows first..first+count of a contiguous tensor's dim 0, as a view (no op)."""
    inner = t._strides[0]
    return as_strided(t, t._offset + first * inner, (count,) + t.shape[1:], t._strides)


def _row(t, i):
    """Row i of a contiguous tensor's dim 0 (its trailing dims), as a view."""
    return as_strided(t, t._offset + i * t._strides[0], t.shape[1:], t._strides[1:])


def _gate(t, k, hs):
    """Gate block k ((N, H) columns k*H..(k+1)*H) of a contiguous (N, 4H) tensor, a view."""
    return as_strided(t, t._offset + k * hs, (t.shape[0], hs), (t._strides[0], 1))


def _into(op, out, *inputs):
    """op of same-shaped inputs written into `out` (a view of a buffer this node owns)."""
    return raw.run(op, out, tuple(raw.view_of(x) for x in inputs))


class _LSTMRecurrence(Function):
    """The recurrent part of one LSTM layer-direction over a full (unpacked) sequence, as one
    autograd node: xp (T, N, 4H) (the input projection, both biases in), h0 / c0 (N, H),
    w_hh (4H, H) -> Y (T + 2, N, H): the hidden states in time order with the initial one
    beside them (forward: [h0, h_1 .. h_T]; reverse: [h_0 .. h_{T-1}, h0]), then c at the
    end of the sequence.

    Forward and backward are loops of raw ops writing into contiguous rows of buffers the
    node owns (ops.py's contract: outs contiguous), so a step costs no autograd node, stack
    or cat: 8 ops a step forward, 9 backward. The backward computes the activations'
    derivatives for all steps at once before its loop, keeps the gate gradients gate-major
    (T, 4, N, H) so one op writes three gates of a step, and forms the weight gradient as ONE
    product over all T * N rows (dW_hh = dgates^T @ [previous h]) instead of T small ones
    each added into dW_hh. Its backward is not itself differentiable (double backward
    raises)."""

    def forward(self, xp, h0, c0, w_hh, reverse=False):
        steps, n, hs = xp.shape[0], h0.shape[0], h0.shape[1]
        code = xp._dtype
        xp = raw.contiguous(xp)
        ys = raw.new_tensor((steps + 2, n, hs), code)       # hidden states, then c_T
        acts = raw.new_tensor((steps, n, 4 * hs), code)     # sigmoid of every gate
        gs = raw.new_tensor((steps, n, hs), code)           # tanh of the cell gate
        cells = raw.new_tensor((steps + 1, n, hs), code)    # c, the initial one beside them
        tanhs = raw.new_tensor((steps, n, hs), code)
        init = steps if reverse else 0
        raw.copy_into(_row(ys, init), h0)
        raw.copy_into(_row(cells, init), c0)
        h, c = _row(ys, init), _row(cells, init)
        # w_hh^T laid out once: the product per step reads it row-major (a measured 1.5x
        # over reading w_hh through swapped strides at (32, 256) @ (256, 1024))
        w_t = raw.contiguous(as_strided(w_hh, w_hh._offset, (hs, 4 * hs),
                                        (w_hh._strides[1], w_hh._strides[0])))
        order = range(steps - 1, -1, -1) if reverse else range(steps)
        for t in order:
            gates = raw.binary("add", _row(xp, t), raw.matmul(h, w_t))
            a, g = _row(acts, t), _row(gs, t)
            _into("sigmoid", a, gates)
            _into("tanh", g, _gate(gates, 2, hs))
            c_t = _row(cells, t if reverse else t + 1)
            _into("add", c_t, raw.binary("mul", _gate(a, 1, hs), c),
                  raw.binary("mul", _gate(a, 0, hs), g))
            tc = _row(tanhs, t)
            _into("tanh", tc, c_t)
            h = _row(ys, t if reverse else t + 1)
            _into("mul", h, _gate(a, 3, hs), tc)
            c = c_t
        raw.copy_into(_row(ys, steps + 1), c)
        self.reverse = reverse
        self.save(h0, c0, w_hh)
        if self.needs_grad:
            self.keep = (ys, acts, gs, cells, tanhs)
        return ys

    def backward(self, grad):
        if is_grad_enabled():
            raise RuntimeError("double backward through nn.LSTM is not supported in torchic")
        h0, c0, w_hh = self.saved
        ys, acts, gs, cells, tanhs = self.keep
        del self.keep
        steps, n, hs = acts.shape[0], h0.shape[0], h0.shape[1]
        code = acts._dtype
        reverse = self.reverse
        grad = raw.contiguous(grad)
        one = raw.full((1,), 1.0, code)
        rows = steps * n

        def gate_of_all(t, k):     # gate k of every step: (T * N, H), strided
            return as_strided(t, t._offset + k * hs, (rows, hs), (4 * hs, 1))

        # every step's d(gate pre-activation) / d(c) factors, gate-major (4, T, N, H):
        # i: g s_i (1 - s_i), f: c_prev s_f (1 - s_f), g: s_i (1 - g^2), o: tanh(c) s_o (1 - s_o)
        facs = raw.binary("mul", acts, raw.binary("sub", one, acts))
        p = raw.new_tensor((4, rows, hs), code)
        prev_c = _row_range(cells, 1 if reverse else 0, steps).reshape(rows, hs)
        g_all = gs.reshape(rows, hs)
        _into("mul", _row(p, 0), g_all, gate_of_all(facs, 0))
        _into("mul", _row(p, 1), prev_c, gate_of_all(facs, 1))
        _into("mul", _row(p, 2), gate_of_all(acts, 0),
              raw.binary("sub", one, raw.binary("mul", g_all, g_all)))
        _into("mul", _row(p, 3), tanhs.reshape(rows, hs), gate_of_all(facs, 3))
        dtanhs = raw.binary("sub", one, raw.binary("mul", tanhs, tanhs))
        dgm = raw.new_tensor((4, n, hs), code)             # one step's gate gradients
        dxp = raw.new_tensor((steps, n, 4 * hs), code)     # all of them, (T, N, 4H)
        order = range(steps) if reverse else range(steps - 1, -1, -1)
        dh_next, dc_next = None, _row(grad, steps + 1)
        for t in order:
            a = _row(acts, t)
            g_t = _row(grad, t if reverse else t + 1)
            dh = g_t if dh_next is None else raw.binary("add", g_t, dh_next)
            dc = raw.binary("add", raw.binary("mul", raw.binary("mul", dh, _gate(a, 3, hs)),
                                              _row(dtanhs, t)), dc_next)
            p_t = as_strided(p, t * n * hs, (4, n, hs), (rows * hs, hs, 1))
            _into("mul", _row_range(dgm, 0, 3), dc.expand(3, n, hs), _row_range(p_t, 0, 3))
            _into("mul", _row(dgm, 3), dh, _row(p_t, 3))
            dx = _row(dxp, t)                              # (N, 4H) <- (4, N, H)
            raw.copy_into(as_strided(dx, dx._offset, (n, 4, hs), (4 * hs, hs, 1)),
                          as_strided(dgm, 0, (n, 4, hs), (hs, n * hs, 1)))
            dc_next = raw.binary("mul", dc, _gate(a, 1, hs))
            dh_next = raw.matmul(dx, w_hh)
        init = steps if reverse else 0
        dh0 = raw.binary("add", dh_next, _row(grad, init))
        dw = None
        if self.needs_grad[3]:
            prev = _row_range(ys, 1 if reverse else 0, steps)       # h_{t-1} of every step t
            dw = raw.matmul(dxp.reshape(rows, 4 * hs), prev.reshape(rows, hs),
                            transpose_a=True)
        return dxp, dh0, dc_next, dw


_STEPS = {"LSTM": _lstm_step, "GRU": _gru_step, "RNN_TANH": _tanh_step, "RNN_RELU": _relu_step}


def _rows(state, lo, hi):
    if isinstance(state, tuple):
        return tuple(s[lo:hi] for s in state)
    return state[lo:hi]


def _cat_rows(parts):
    if len(parts) == 1:
        return parts[0]
    if isinstance(parts[0], tuple):
        return tuple(_ops.cat([p[k] for p in parts], 0) for k in range(len(parts[0])))
    return _ops.cat(parts, 0)


def _scan(step, xp, sizes, state0, weights, reverse):
    """Run `step` over the packed rows xp (sum(sizes), G): returns (outputs (sum(sizes), H),
    the final state of every sequence (rows in batch order))."""
    w_hh, b_hh, w_hr = weights
    offsets = [0]
    for s in sizes:
        offsets.append(offsets[-1] + s)
    outs = []
    if not reverse:
        state, cur, done = state0, sizes[0], []
        if cur < _batch_of(state0):
            done.append(_rows(state0, cur, _batch_of(state0)))
            state = _rows(state0, 0, cur)
        for t, bs in enumerate(sizes):
            if bs < cur:
                done.append(_rows(state, bs, cur))
                state = _rows(state, 0, bs)
                cur = bs
            out, state = step(xp[offsets[t]:offsets[t + 1]], state, w_hh, b_hh, w_hr)
            outs.append(out)
        final = _cat_rows([state, *reversed(done)])
    else:
        cur = sizes[-1]
        state = _rows(state0, 0, cur)
        for t in range(len(sizes) - 1, -1, -1):
            bs = sizes[t]
            if bs > cur:
                state = _cat_rows([state, _rows(state0, cur, bs)])
                cur = bs
            out, state = step(xp[offsets[t]:offsets[t + 1]], state, w_hh, b_hh, w_hr)
            outs.append(out)
        outs.reverse()
        n = _batch_of(state0)
        final = state if cur == n else _cat_rows([state, _rows(state0, cur, n)])
    return _ops.cat(outs, 0) if len(outs) > 1 else outs[0], final


def _batch_of(state):
    return (state[0] if isinstance(state, tuple) else state).shape[0]


def _permute_rows(t, index):
    """t with its dim-1 rows picked by index (an int64 tensor), or t itself for None."""
    if index is None:
        return t
    return t.transpose(0, 1)[index].transpose(0, 1)


class RNNBase(Module):
    """The shared machinery of RNN, LSTM and GRU (PyTorch's RNNBase): the parameters, their
    init, the argument checks and the layer / direction loop."""

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, proj_size: int = 0, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        num_directions = 2 if bidirectional else 1
        if (not isinstance(dropout, numbers.Number) or isinstance(dropout, bool)
                or not 0 <= dropout <= 1):
            raise ValueError("dropout should be a number in range [0, 1] representing the "
                             "probability of an element being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so "
                          f"non-zero dropout expects num_layers greater than 1, but got "
                          f"dropout={dropout} and num_layers={num_layers}", stacklevel=2)
        if not isinstance(hidden_size, int) or isinstance(hidden_size, bool):
            raise TypeError(f"hidden_size should be of type int, got: "
                            f"{type(hidden_size).__name__}")
        if hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if not isinstance(num_layers, int) or isinstance(num_layers, bool) or num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable "
                             "projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if mode not in _GATES:
            raise ValueError(f"Unrecognized RNN mode: {mode}")
        if proj_size and mode != "LSTM":
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        gate_size = _GATES[mode] * hidden_size
        real_hidden = proj_size if proj_size > 0 else hidden_size
        self._flat_weights_names: list[str] = []
        self._all_weights: list[list[str]] = []
        for layer in range(num_layers):
            for direction in range(num_directions):
                layer_input = input_size if layer == 0 else real_hidden * num_directions
                suffix = "_reverse" if direction == 1 else ""
                shapes = [("weight_ih", (gate_size, layer_input)),
                          ("weight_hh", (gate_size, real_hidden))]
                if bias:
                    shapes += [("bias_ih", (gate_size,)), ("bias_hh", (gate_size,))]
                if proj_size > 0:
                    shapes.append(("weight_hr", (proj_size, hidden_size)))
                names = []
                for base, shape in shapes:
                    name = f"{base}_l{layer}{suffix}"
                    setattr(self, name, Parameter(creation.empty(*shape, dtype=dtype)))
                    names.append(name)
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Draw every parameter again from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))."""
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def flatten_parameters(self) -> None:
        """PyTorch's cuDNN weight compaction: nothing to do in torchic (kept for scripts)."""

    @property
    def _flat_weights(self) -> list[Tensor]:
        return [getattr(self, n) for n in self._flat_weights_names]

    @property
    def all_weights(self) -> list[list[Parameter]]:
        """The parameters of each layer-direction, in PyTorch's order (w_ih, w_hh, b_ih,
        b_hh, w_hr)."""
        return [[getattr(self, n) for n in names] for names in self._all_weights]

    def _layer_weights(self, layer, direction):
        sfx = f"_l{layer}" + ("_reverse" if direction else "")
        get = self.__dict__["_parameters"].get
        return (get("weight_ih" + sfx), get("bias_ih" + sfx),
                (get("weight_hh" + sfx), get("bias_hh" + sfx), get("weight_hr" + sfx)))

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size != 0:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s

    # -- forward ----------------------------------------------------------------------------

    def _check_hidden(self, hx, expected, what="hidden"):
        if tuple(hx.shape) != tuple(expected):
            raise RuntimeError(f"Expected {what} size {tuple(expected)}, got "
                               f"{list(hx.shape)}")

    def _lstm_direction(self, x, w_ih, b_ih, rest, state0, steps, reverse):
        """One LSTM layer-direction over a full sequence through _LSTMRecurrence."""
        w_hh, b_hh, _ = rest
        bias = b_ih if b_hh is None else (b_hh if b_ih is None else b_ih + b_hh)
        xp = F.linear(x, w_ih, bias)
        y = _LSTMRecurrence.apply(xp.reshape(steps, -1, xp.shape[-1]), state0[0], state0[1],
                                  w_hh, reverse=reverse)
        out = (y[:steps] if reverse else y[1:steps + 1]).reshape(-1, y.shape[-1])
        return out, (y[0 if reverse else steps], y[steps + 1])

    def forward(self, input: Tensor | PackedSequence, hx: Any = None) -> Any:
        is_lstm = self.mode == "LSTM"
        d = 2 if self.bidirectional else 1
        real_hidden = self.proj_size if self.proj_size > 0 else self.hidden_size
        packed = isinstance(input, PackedSequence)
        unbatched = False
        if packed:
            data, sizes = input.data, input._sizes()
            batch = sizes[0]
            sorted_indices, unsorted_indices = input.sorted_indices, input.unsorted_indices
            if data.ndim != 2:
                raise ValueError(f"{type(self).__name__}: Expected packed data to be 2D, got "
                                 f"{data.ndim}D tensor instead")
        else:
            if input.ndim not in (2, 3):
                raise ValueError(f"{type(self).__name__}: Expected input to be 2D or 3D, got "
                                 f"{input.ndim}D tensor instead")
            unbatched = input.ndim == 2
            if unbatched:
                input = input.unsqueeze(1)
            elif self.batch_first:
                input = input.transpose(0, 1)
            steps, batch = input.shape[0], input.shape[1]
            sizes = [batch] * steps
            data = input.reshape(steps * batch, input.shape[2])
            sorted_indices = unsorted_indices = None
        if data.shape[-1] != self.input_size:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected "
                               f"{self.input_size}, got {data.shape[-1]}")
        if not data.is_floating_point():
            raise RuntimeError(f"{type(self).__name__}: expected a floating point input, got "
                               f"{data.dtype}")
        h_shape = (self.num_layers * d, batch, real_hidden)
        c_shape = (self.num_layers * d, batch, self.hidden_size)
        if hx is None:
            h0 = creation.zeros(h_shape, dtype=data.dtype)
            c0 = creation.zeros(c_shape, dtype=data.dtype) if is_lstm else None
        else:
            if is_lstm:
                if not isinstance(hx, (tuple, list)) or len(hx) != 2:
                    raise RuntimeError("LSTM expects hx as a tuple (h_0, c_0)")
                h0, c0 = hx
            else:
                h0, c0 = hx, None
            for t in (h0, c0):
                if t is None:
                    continue
                if unbatched and t.ndim != 2:
                    raise RuntimeError(f"For unbatched 2-D input, hx should also be 2-D but "
                                       f"got {t.ndim}-D tensor")
                if not unbatched and not packed and t.ndim != 3:
                    raise RuntimeError(f"For batched 3-D input, hx should also be 3-D but got "
                                       f"{t.ndim}-D tensor")
            if unbatched:
                h0 = h0.unsqueeze(1)
                c0 = c0.unsqueeze(1) if c0 is not None else None
            h0 = _permute_rows(h0, sorted_indices)
            c0 = _permute_rows(c0, sorted_indices) if c0 is not None else None
            self._check_hidden(h0, h_shape)
            if c0 is not None:
                self._check_hidden(c0, c_shape, "cell")
        step = _STEPS[self.mode]
        finals_h, finals_c = [], []
        layer_in = data
        for layer in range(self.num_layers):
            outs = []
            for direction in range(d):
                w_ih, b_ih, rest = self._layer_weights(layer, direction)
                k = layer * d + direction
                state0 = (h0[k], c0[k]) if is_lstm else h0[k]
                if is_lstm and not packed and self.proj_size == 0:
                    out, final = self._lstm_direction(layer_in, w_ih, b_ih, rest, state0,
                                                      steps, direction == 1)
                else:
                    xp = F.linear(layer_in, w_ih, b_ih)
                    out, final = _scan(step, xp, sizes, state0, rest, reverse=direction == 1)
                outs.append(out)
                if is_lstm:
                    finals_h.append(final[0])
                    finals_c.append(final[1])
                else:
                    finals_h.append(final)
            layer_in = outs[0] if d == 1 else _ops.cat(outs, -1)
            if self.dropout > 0 and self.training and layer < self.num_layers - 1:
                layer_in = F.dropout(layer_in, self.dropout, True)
        h_n = _permute_rows(_ops.stack(finals_h, 0), unsorted_indices)
        c_n = _permute_rows(_ops.stack(finals_c, 0), unsorted_indices) if is_lstm else None
        if packed:
            output = PackedSequence(layer_in, input.batch_sizes, sorted_indices,
                                    unsorted_indices)
        else:
            output = layer_in.reshape(steps, batch, layer_in.shape[-1])
            if unbatched:
                output = output.squeeze(1)
                h_n = h_n.squeeze(1)
                c_n = c_n.squeeze(1) if c_n is not None else None
            elif self.batch_first:
                output = output.transpose(0, 1)
        return (output, (h_n, c_n)) if is_lstm else (output, h_n)


class RNN(RNNBase):
    """A multi-layer Elman RNN: h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh)
    (or relu with nonlinearity='relu').

    Args:
        input_size, hidden_size: features of x and h.
        num_layers: stacked layers (default 1). nonlinearity: 'tanh' | 'relu'.
        bias: use b_ih and b_hh (default True). batch_first: (N, L, H_in) input and output.
        dropout: dropout on the outputs of every layer but the last (training only).
        bidirectional: also run each layer over the reversed sequence (outputs concatenated).

    Shape: input (L, N, H_in), (N, L, H_in) with batch_first, (L, H_in) unbatched, or a
    PackedSequence; h_0 (D * num_layers, N, H_out). Returns (output (L, N, D * H_out), h_n).

    Example::

        >>> rnn = nn.RNN(10, 20, 2)
        >>> output, hn = rnn(torchic.randn(5, 3, 10), torchic.randn(2, 3, 20))
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if len(args) > 3:
            self.nonlinearity = args[3]
            args = args[:3] + args[4:]
        else:
            self.nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if self.nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif self.nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(f"Unknown nonlinearity '{self.nonlinearity}'. Select from 'tanh' "
                             f"or 'relu'.")
        super().__init__(mode, *args, **kwargs)


class LSTM(RNNBase):
    """A multi-layer long short-term memory RNN (PyTorch's gates, in the order i, f, g, o):

        i, f, o = sigmoid(.), g = tanh(.) of x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh
        c_t = f * c_{t-1} + i * g;  h_t = o * tanh(c_t)  (then h_t W_hr^T with proj_size > 0)

    Args as RNN's, plus proj_size (default 0: no projection). Returns
    (output, (h_n, c_n)); hx is an optional tuple (h_0, c_0).

    Example::

        >>> lstm = nn.LSTM(10, 20, 2, batch_first=True)
        >>> output, (hn, cn) = lstm(torchic.randn(3, 5, 10))
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__("LSTM", *args, **kwargs)


class GRU(RNNBase):
    """A multi-layer gated recurrent unit RNN (PyTorch's gates r, z, n):

        r, z = sigmoid(x W_i{r,z}^T + b_i{r,z} + h W_h{r,z}^T + b_h{r,z})
        n = tanh(x W_in^T + b_in + r * (h W_hn^T + b_hn));  h_t = (1 - z) * n + z * h_{t-1}

    Args and shapes as RNN's.

    Example::

        >>> gru = nn.GRU(10, 20, 2)
        >>> output, hn = gru(torchic.randn(5, 3, 10))
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)


# -- cells ------------------------------------------------------------------------------------


class RNNCellBase(Module):
    """The parameters of one recurrent step: weight_ih (G, input_size), weight_hh
    (G, hidden_size), bias_ih / bias_hh (G,), all ~ U(-1/sqrt(hidden), 1/sqrt(hidden))."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool, num_chunks: int,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.weight_ih = Parameter(creation.empty(num_chunks * hidden_size, input_size,
                                                  dtype=dtype))
        self.weight_hh = Parameter(creation.empty(num_chunks * hidden_size, hidden_size,
                                                  dtype=dtype))
        if bias:
            self.bias_ih = Parameter(creation.empty(num_chunks * hidden_size, dtype=dtype))
            self.bias_hh = Parameter(creation.empty(num_chunks * hidden_size, dtype=dtype))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Draw every parameter again from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))."""
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        nonlinearity = getattr(self, "nonlinearity", "tanh")
        if nonlinearity != "tanh":
            s += f", nonlinearity={nonlinearity}"
        return s

    def _prepare(self, input, hx, count):
        """(batched input, the states (count of them, zeros when hx is None), unbatched)."""
        name = type(self).__name__
        if input.ndim not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.ndim}D instead")
        if input.shape[-1] != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {input.shape[-1]} "
                               f"expected {self.input_size}")
        unbatched = input.ndim == 1
        if unbatched:
            input = input.unsqueeze(0)
        if hx is None:
            z = creation.zeros(input.shape[0], self.hidden_size, dtype=input.dtype)
            states = [z] * count
        else:
            states = list(hx) if count == 2 else [hx]
            if len(states) != count:
                raise RuntimeError(f"{name} expects hx as a tuple (h_0, c_0)")
            for s in states:
                want = 1 if unbatched else 2
                if s.ndim != want:
                    raise RuntimeError(f"{name}: Expected hidden to be {want}D, got {s.ndim}D "
                                       f"instead")
            states = [s.unsqueeze(0) if unbatched else s for s in states]
            for s in states:
                if tuple(s.shape) != (input.shape[0], self.hidden_size):
                    raise RuntimeError(f"hidden has inconsistent shape: got {list(s.shape)} "
                                       f"expected {[input.shape[0], self.hidden_size]}")
        return input, states, unbatched


class RNNCell(RNNCellBase):
    """One Elman RNN step: h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh) (or relu).

    Shape: input (N, input_size) or (input_size,); hx likewise with hidden_size (zeros when
    omitted). Returns h' of hx's shape.
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 nonlinearity: str = "tanh", device: Any = None, dtype: Any = None) -> None:
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity: {nonlinearity}")
        self.nonlinearity = nonlinearity

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        input, (h,), unbatched = self._prepare(input, hx, 1)
        step = _tanh_step if self.nonlinearity == "tanh" else _relu_step
        h, _ = step(F.linear(input, self.weight_ih, self.bias_ih), h, self.weight_hh,
                    self.bias_hh, None)
        return h.squeeze(0) if unbatched else h


class LSTMCell(RNNCellBase):
    """One LSTM step (gates i, f, g, o as nn.LSTM). Returns (h', c').

    Shape: input (N, input_size) or (input_size,); hx = (h, c) likewise with hidden_size
    (zeros when omitted).
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)

    def forward(self, input: Tensor, hx: tuple[Tensor, Tensor] | None = None
                ) -> tuple[Tensor, Tensor]:
        input, (h, c), unbatched = self._prepare(input, hx, 2)
        _, (h, c) = _lstm_step(F.linear(input, self.weight_ih, self.bias_ih), (h, c),
                               self.weight_hh, self.bias_hh, None)
        return (h.squeeze(0), c.squeeze(0)) if unbatched else (h, c)


class GRUCell(RNNCellBase):
    """One GRU step (gates r, z, n as nn.GRU). Returns h'.

    Shape: input (N, input_size) or (input_size,); hx likewise with hidden_size.
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        input, (h,), unbatched = self._prepare(input, hx, 1)
        h, _ = _gru_step(F.linear(input, self.weight_ih, self.bias_ih), h, self.weight_hh,
                         self.bias_hh, None)
        return h.squeeze(0) if unbatched else h
