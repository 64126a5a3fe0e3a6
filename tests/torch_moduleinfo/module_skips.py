"""THE skip table of the ModuleInfo conformance suite: the module_db entries torchic does not
aim at, each with its reason (`SKIPS`, by entry name). An entry torchic simply has not
implemented yet is *not* skipped: it is "missing", and docs/COVERAGE_MODULEINFO.md lists it.
"""

_3D = ("3-d (volumetric) convolution, pooling or padding: torchic's spatial layers are 1-d "
       "and 2-d")
_LAZY = ("a lazy module (shapes inferred at the first call, UninitializedParameter): "
         "torchic's modules are built with their shapes")
_FRACTIONAL = ("fractional max pooling: random pooling regions from PyTorch's own sampler "
               "(no defined value to compare)")

SKIPS = {
    "nn.Conv3d": _3D, "nn.ConvTranspose3d": _3D, "nn.AvgPool3d": _3D, "nn.MaxPool3d": _3D,
    "nn.AdaptiveAvgPool3d": _3D, "nn.AdaptiveMaxPool3d": _3D, "nn.LPPool3d": _3D,
    "nn.ReflectionPad3d": _3D, "nn.ReplicationPad3d": _3D, "nn.ZeroPad3d": _3D,
    "nn.CircularPad3d": _3D, "nn.ConstantPad3d": _3D,
    "nn.LazyConv1d": _LAZY, "nn.LazyConv2d": _LAZY, "nn.LazyConv3d": _LAZY,
    "nn.LazyConvTranspose1d": _LAZY, "nn.LazyConvTranspose2d": _LAZY,
    "nn.LazyConvTranspose3d": _LAZY,
    "nn.FractionalMaxPool2d": _FRACTIONAL, "nn.FractionalMaxPool3d": _FRACTIONAL,
    "nn.CTCLoss": ("connectionist temporal classification: a dynamic-programming loss over "
                   "alignments, out of torchic's scope"),
}


def skip_reason(info):
    """Why module_db entry `info` is skipped, or None."""
    if info.name in SKIPS:
        return SKIPS[info.name]
    if getattr(info, "is_lazy", False):
        return _LAZY
    return None
