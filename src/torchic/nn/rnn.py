"""The recurrent layers: RNN (tanh / relu), LSTM (with proj_size), GRU (rnn_cells.py: their cells).

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

from .. import api as _ops, creation
from ..tensor import Tensor
from . import functional as F
from . import init
from .lstm_recurrence import LSTMRecurrence
from .module import Module
from .parameter import Parameter
from .utils.rnn import PackedSequence

__all__ = ["RNNBase", "RNN", "LSTM", "GRU"]

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
    init, the argument checks and the layer / direction loop. Build the subclasses; this
    base is public for `isinstance` checks and for code that names PyTorch's class.

    Args:
        mode: `"RNN_TANH"`, `"RNN_RELU"`, `"LSTM"` or `"GRU"` (the gate count: 1, 1, 4, 3).
        input_size: the features of each input step.
        hidden_size: the features of the hidden state.
        num_layers: recurrent layers stacked, each reading the one below. Default: 1.
        bias: whether the layers have `bias_ih_l*` / `bias_hh_l*`. Default: True.
        batch_first: input and output as `(N, L, H)` instead of `(L, N, H)`. Default: False.
        dropout: dropout on every layer's output but the last (training only). Default: 0.
        bidirectional: a second direction reading the sequence backwards. Default: False.
        proj_size: LSTM only: project the hidden state to this size (0: none). Default: 0.
        device: accepted for PyTorch's signature (torchic places tensors on its backend).
        dtype: the parameters' dtype (default: the default float dtype).

    Shape:
        - Input: `(L, N, input_size)` (`(N, L, input_size)` with batch_first) or `(L,
          input_size)` unbatched.
        - Output: `(L, N, D * H_out)`, D = 2 if bidirectional else 1, H_out = proj_size or
          hidden_size; the final state `(D * num_layers, N, H_out)`.

    Example:
        >>> rnn = nn.RNNBase("GRU", 4, 8, num_layers=2)
        >>> [name for name, _ in rnn.named_parameters()][:4]
        ['weight_ih_l0', 'weight_hh_l0', 'bias_ih_l0', 'bias_hh_l0']
        >>> rnn.weight_ih_l0.shape
        torchic.Size([24, 4])
    """

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
        y = LSTMRecurrence.apply(xp.reshape(steps, -1, xp.shape[-1]), state0[0], state0[1],
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

    Example:
        >>> rnn = nn.RNN(10, 20, 2)
        >>> output, hn = rnn(torchic.randn(5, 3, 10), torchic.randn(2, 3, 20))
        >>> output.shape, hn.shape
        (torchic.Size([5, 3, 20]), torchic.Size([2, 3, 20]))
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

    Args:
        input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional: as
            RNN's.
        proj_size: h_t projected to this size (default 0: no projection).

    Shape: input as RNN's; hx an optional tuple (h_0, c_0), h_0 (D * num_layers, N, H_out),
    c_0 (D * num_layers, N, H_cell). Returns (output (L, N, D * H_out), (h_n, c_n)); H_out
    is proj_size when it is > 0, else hidden_size.

    Example:
        >>> lstm = nn.LSTM(10, 20, 2, batch_first=True)
        >>> output, (hn, cn) = lstm(torchic.randn(3, 5, 10))
        >>> output.shape, hn.shape, cn.shape
        (torchic.Size([3, 5, 20]), torchic.Size([2, 3, 20]), torchic.Size([2, 3, 20]))
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__("LSTM", *args, **kwargs)


class GRU(RNNBase):
    """A multi-layer gated recurrent unit RNN (PyTorch's gates r, z, n):

        r, z = sigmoid(x W_i{r,z}^T + b_i{r,z} + h W_h{r,z}^T + b_h{r,z})
        n = tanh(x W_in^T + b_in + r * (h W_hn^T + b_hn));  h_t = (1 - z) * n + z * h_{t-1}

    Args:
        input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional: as
            RNN's.

    Shape: as RNN's: input (L, N, H_in) ((N, L, H_in) with batch_first), h_0
    (D * num_layers, N, H_out). Returns (output (L, N, D * H_out), h_n).

    Example:
        >>> gru = nn.GRU(10, 20, 2)
        >>> output, hn = gru(torchic.randn(5, 3, 10))
        >>> output.shape, hn.shape
        (torchic.Size([5, 3, 20]), torchic.Size([2, 3, 20]))
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)
