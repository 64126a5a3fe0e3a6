"""torchic.nn: modules, parameters, layer functions and initializers (PyTorch spellings).

    import torchic.nn as nn
    import torchic.nn.functional as F

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(30, 200)
            self.fc2 = nn.Linear(200, 27)

        def forward(self, x):
            return self.fc2(F.tanh(self.fc1(x)))
"""

from . import functional, init, parallel, utils
from .activation import ELU, GELU, LeakyReLU, SiLU
from .layers import (Dropout, Embedding, Flatten, Identity, LayerNorm, Linear, LogSoftmax, ReLU,
                     Sigmoid, Softmax, Tanh)
from .module import Module, ModuleDict, ModuleList, Sequential
from .parameter import Parameter

__all__ = ["Module", "Parameter", "Sequential", "ModuleList", "ModuleDict", "Identity",
           "Linear", "Embedding", "ReLU", "Tanh", "Sigmoid", "Softmax", "LogSoftmax",
           "Flatten", "Dropout", "LayerNorm", "BatchNorm1d", "CrossEntropyLoss", "MSELoss",
           "GELU", "SiLU", "LeakyReLU", "ELU", "functional", "init", "parallel", "utils"]

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
from . import modules  # noqa: E402

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
