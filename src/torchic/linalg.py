"""torchic.linalg: PyTorch's torch.linalg products (cross, vecdot, multi_dot).

    import torchic as torch
    torch.linalg.vecdot(x, y, dim=-1)

Composites over the one matmul primitive and the elementwise ops (api/products.py).
"""

from .api.products import linalg_cross as cross, multi_dot, vecdot

__all__ = ["cross", "vecdot", "multi_dot"]
