"""The recurrent cells: RNNCell, LSTMCell, GRUCell, one step of nn.RNN / LSTM / GRU each (the
same step functions as rnn.py's layers), PyTorch's parameter names, shapes and init."""

import math
from typing import Any

from .. import creation
from ..tensor import Tensor
from . import functional as F
from . import init
from .module import Module
from .parameter import Parameter
from .rnn import _gru_step, _lstm_step, _relu_step, _tanh_step

__all__ = ["RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]


class RNNCellBase(Module):
    """The parameters of one recurrent step (PyTorch's RNNCellBase, the base of RNNCell,
    LSTMCell and GRUCell): weight_ih (G, input_size), weight_hh (G, hidden_size), bias_ih /
    bias_hh (G,), G = num_chunks * hidden_size, all ~ U(-1/sqrt(hidden), 1/sqrt(hidden)).

    Args:
        input_size: the features of the input.
        hidden_size: the features of the hidden state.
        bias: whether the cell has bias_ih and bias_hh.
        num_chunks: the gates stacked in each weight (RNNCell 1, GRUCell 3, LSTMCell 4).
        device: accepted for PyTorch's signature (torchic places tensors on its backend).
        dtype: the parameters' dtype (default: the default float dtype).

    Shape:
        - weight_ih: `(num_chunks * hidden_size, input_size)`; weight_hh:
          `(num_chunks * hidden_size, hidden_size)`.

    Example:
        >>> cell = nn.RNNCellBase(3, 5, bias=True, num_chunks=4)
        >>> cell.weight_ih.shape, cell.weight_hh.shape
        (torchic.Size([20, 3]), torchic.Size([20, 5]))
    """

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

    Args:
        input_size: the input's features.
        hidden_size: the hidden state's features.
        bias: if False, no learnable biases. Default: True.
        nonlinearity: "tanh" (default) or "relu".
        device: accepted for PyTorch's signature (the backend decides where tensors live).
        dtype: the parameters' dtype. Default: the default float dtype.

    Shape:
        - Input: `(N, input_size)` or `(input_size,)`.
        - Hidden state: `(N, hidden_size)` or `(hidden_size,)` (zeros when omitted).
        - Output: h', the hidden state's shape.

    Attributes:
        weight_ih, weight_hh: `(hidden_size, input_size)`, `(hidden_size, hidden_size)`.
        bias_ih, bias_hh: `(hidden_size,)`; all ~ U(-1/sqrt(hidden_size), +) as PyTorch's.

    Example:
        >>> cell = nn.RNNCell(10, 20)
        >>> cell(torch.randn(3, 10)).shape
        torchic.Size([3, 20])
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

    Args:
        input_size: the input's features.
        hidden_size: the hidden state's features.
        bias: if False, no learnable biases. Default: True.
        device: accepted for PyTorch's signature (the backend decides where tensors live).
        dtype: the parameters' dtype. Default: the default float dtype.

    Shape:
        - Input: `(N, input_size)` or `(input_size,)`.
        - hx: `(h, c)`, each `(N, hidden_size)` or `(hidden_size,)` (zeros when omitted).
        - Output: `(h', c')`, hx's shapes.

    Attributes:
        weight_ih, weight_hh: `(4 * hidden_size, input_size)`, `(4 * hidden_size,
            hidden_size)` (gates i, f, g, o).
        bias_ih, bias_hh: `(4 * hidden_size,)`.

    Example:
        >>> cell = nn.LSTMCell(10, 20)
        >>> h, c = cell(torch.randn(3, 10))
        >>> h.shape, c.shape
        (torchic.Size([3, 20]), torchic.Size([3, 20]))
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

    Args:
        input_size: the input's features.
        hidden_size: the hidden state's features.
        bias: if False, no learnable biases. Default: True.
        device: accepted for PyTorch's signature (the backend decides where tensors live).
        dtype: the parameters' dtype. Default: the default float dtype.

    Shape:
        - Input: `(N, input_size)` or `(input_size,)`.
        - Hidden state: `(N, hidden_size)` or `(hidden_size,)` (zeros when omitted).
        - Output: h', the hidden state's shape.

    Attributes:
        weight_ih, weight_hh: `(3 * hidden_size, input_size)`, `(3 * hidden_size,
            hidden_size)` (gates r, z, n).
        bias_ih, bias_hh: `(3 * hidden_size,)`.

    Example:
        >>> cell = nn.GRUCell(10, 20)
        >>> cell(torch.randn(3, 10), torch.zeros(3, 20)).shape
        torchic.Size([3, 20])
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        input, (h,), unbatched = self._prepare(input, hx, 1)
        h, _ = _gru_step(F.linear(input, self.weight_ih, self.bias_ih), h, self.weight_hh,
                         self.bias_hh, None)
        return h.squeeze(0) if unbatched else h
