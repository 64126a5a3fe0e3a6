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

Each layer's docstring gives its Args, Shape and an Example; the examples assume
`import torchic as torch` and `import torchic.nn as nn` (the tests run them on every backend,
and through PyTorch, which prints the same).
"""

from . import functional, init, modules, parallel, utils
from .activation import ELU, GELU, LeakyReLU, SiLU
from .layers import (Dropout, Embedding, Flatten, Identity, LayerNorm, Linear, LogSoftmax, ReLU,
                     Sigmoid, Softmax, Tanh)
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
# recurrent layers and attention
from .rnn import GRU, LSTM, RNN, RNNBase
from .rnn_cells import GRUCell, LSTMCell, RNNCell, RNNCellBase
from .attention import MultiheadAttention, multi_head_attention_forward
from .transformer import (Transformer, TransformerDecoder, TransformerDecoderLayer,
                          TransformerEncoder, TransformerEncoderLayer)

# F.multi_head_attention_forward lives in attention.py (which builds on functional.py: importing
# it from there would be a cycle); it joins nn.functional here, where both are loaded
functional.multi_head_attention_forward = multi_head_attention_forward

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
           "ZeroPad1d", "ZeroPad2d",
           # recurrent layers and attention
           "RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell",
           "MultiheadAttention", "Transformer", "TransformerEncoder", "TransformerDecoder",
           "TransformerEncoderLayer", "TransformerDecoderLayer"]

# -- nn-rest (issue 42): activations, losses, norms, misc layers, torch.nn.modules paths -----
from .activation import (CELU, GLU, PReLU, ReLU6, RReLU, SELU, Hardshrink,  # noqa: E402
                         Hardsigmoid, Hardswish, Hardtanh, LogSigmoid, Mish, Softmax2d, Softmin,
                         Softplus, Softshrink, Softsign, Tanhshrink, Threshold)
from .losses import (BCELoss, BCEWithLogitsLoss, CosineEmbeddingLoss,  # noqa: E402
                     CrossEntropyLoss, GaussianNLLLoss, HingeEmbeddingLoss, HuberLoss, KLDivLoss,
                     L1Loss, MarginRankingLoss, MSELoss, MultiLabelMarginLoss,
                     MultiLabelSoftMarginLoss, MultiMarginLoss, NLLLoss, PoissonNLLLoss,
                     SmoothL1Loss, SoftMarginLoss, TripletMarginLoss,
                     TripletMarginWithDistanceLoss, LinearCrossEntropyLoss)
from .misc_layers import (AlphaDropout, Bilinear, ChannelShuffle, CosineSimilarity,  # noqa: E402
                          Dropout1d, Dropout2d, Dropout3d, EmbeddingBag, FeatureAlphaDropout,
                          PairwiseDistance, Unflatten)
from .normalization import (BatchNorm1d, BatchNorm2d, BatchNorm3d, GroupNorm,  # noqa: E402
                            InstanceNorm1d, InstanceNorm2d, InstanceNorm3d, LocalResponseNorm,
                            RMSNorm)

__all__ += ["CELU", "GLU", "PReLU", "ReLU6", "RReLU", "SELU", "Hardshrink", "Hardsigmoid",
            "Hardswish", "Hardtanh", "LogSigmoid", "Mish", "Softmax2d", "Softmin", "Softplus",
            "Softshrink", "Softsign", "Tanhshrink", "Threshold", "BCELoss", "BCEWithLogitsLoss",
            "CosineEmbeddingLoss", "GaussianNLLLoss", "HingeEmbeddingLoss", "HuberLoss",
            "KLDivLoss", "L1Loss", "MarginRankingLoss", "MultiLabelMarginLoss",
            "MultiLabelSoftMarginLoss", "MultiMarginLoss", "NLLLoss", "PoissonNLLLoss",
            "SmoothL1Loss", "SoftMarginLoss", "TripletMarginLoss", "TripletMarginWithDistanceLoss",
            "LinearCrossEntropyLoss",
            "AlphaDropout", "Bilinear", "ChannelShuffle", "CosineSimilarity", "Dropout1d",
            "Dropout2d", "Dropout3d", "EmbeddingBag", "FeatureAlphaDropout", "PairwiseDistance",
            "Unflatten", "BatchNorm2d", "BatchNorm3d", "GroupNorm", "InstanceNorm1d",
            "InstanceNorm2d", "InstanceNorm3d", "LocalResponseNorm", "RMSNorm", "modules"]
# power-average pooling (issue 42 ModuleInfo)
from .lp_pool import LPPool1d, LPPool2d  # noqa: E402
__all__ += ["LPPool1d", "LPPool2d"]
