"""torchic.nn: modules, parameters, layer functions and initializers (PyTorch spellings).

A model is a `Module` subclass whose layers are attributes and whose `forward` uses them:

```python
import torchic.nn as nn
import torchic.nn.functional as F

class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(30, 200)
        self.fc2 = nn.Linear(200, 27)

    def forward(self, x):
        return self.fc2(F.tanh(self.fc1(x)))
```
"""

from . import functional, init, modules, parallel, utils
from .activation import ELU, GELU, LeakyReLU, SiLU
from .layers import (BatchNorm1d, CrossEntropyLoss, Dropout, Embedding, Flatten, Identity,
                     LayerNorm, Linear, LogSoftmax, MSELoss, ReLU, Sigmoid, Softmax, Tanh)
from .module import Module, ModuleDict, ModuleList, Sequential
from .parameter import Parameter
# convolution, pooling, padding and resampling (issue 42)
from .conv import Conv1d, Conv2d, ConvTranspose1d, ConvTranspose2d, Fold, Unfold
from .pooling import (AdaptiveAvgPool1d, AdaptiveAvgPool2d, AdaptiveMaxPool1d, AdaptiveMaxPool2d,
                      AvgPool1d, AvgPool2d, CircularPad1d, CircularPad2d, ConstantPad1d,
                      ConstantPad2d, MaxPool1d, MaxPool2d, MaxUnpool1d, MaxUnpool2d, PixelShuffle,
                      PixelUnshuffle, ReflectionPad1d, ReflectionPad2d, ReplicationPad1d,
                      ReplicationPad2d, Upsample, UpsamplingBilinear2d, UpsamplingNearest2d,
                      ZeroPad1d, ZeroPad2d)

__all__ = ["Module", "Parameter", "Sequential", "ModuleList", "ModuleDict", "Identity",
           "Linear", "Embedding", "ReLU", "Tanh", "Sigmoid", "Softmax", "LogSoftmax",
           "Flatten", "Dropout", "LayerNorm", "BatchNorm1d", "CrossEntropyLoss", "MSELoss",
           "GELU", "SiLU", "LeakyReLU", "ELU", "functional", "init", "parallel", "utils",
           # convolution, pooling, padding and resampling (issue 42)
           "Conv1d", "Conv2d", "ConvTranspose1d", "ConvTranspose2d", "Fold", "Unfold",
           "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d",
           "AvgPool1d", "AvgPool2d", "CircularPad1d", "CircularPad2d", "ConstantPad1d",
           "ConstantPad2d", "MaxPool1d", "MaxPool2d", "MaxUnpool1d", "MaxUnpool2d", "PixelShuffle",
           "PixelUnshuffle", "ReflectionPad1d", "ReflectionPad2d", "ReplicationPad1d",
           "ReplicationPad2d", "Upsample", "UpsamplingBilinear2d", "UpsamplingNearest2d",
           "ZeroPad1d", "ZeroPad2d"]
