"""Backends: each subpackage implements dispatcher.Backend and registers itself.

Importing this package (torchic/__init__.py does, right after the dispatcher) registers
the built-in backends; one that cannot load here (simd without its library, webgpu
without wgpu) registers what it can and says why at init.
"""

from . import cpu  # noqa: F401
from . import cuda, cudnn, mps  # noqa: F401  (torch.backends.cuda / .cudnn / .mps shims)
try:
    from . import simd  # noqa: F401
except ImportError:
    pass
try:
    from . import webgpu  # noqa: F401
except ImportError:
    pass
