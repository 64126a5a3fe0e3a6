"""torch.nn.modules.activation: the activation modules (torchic.nn's classes)."""

from ..activation import (ELU, GELU, LeakyReLU, SiLU, CELU, GLU, PReLU, ReLU6, RReLU, SELU, Hardshrink, Hardsigmoid, Hardswish, Hardtanh, LogSigmoid, Mish, Softmax2d, Softmin, Softplus, Softshrink, Softsign, Tanhshrink, Threshold)  # noqa: F401
from ..layers import LogSoftmax, ReLU, Sigmoid, Softmax, Tanh  # noqa: F401
