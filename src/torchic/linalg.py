"""torchic.linalg: PyTorch's torch.linalg, the parts that need no decomposition.

    import torchic as torch
    torch.linalg.vecdot(x, y, dim=-1)
    torch.linalg.vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None)

Products (cross, vecdot, multi_dot: api/products.py, composites over the one matmul) and norms
(norm, vector_norm, matrix_norm: api/norms.py; the spectral and nuclear norms read singular
vectors from the host).
"""

from .api.norms import linalg_norm as norm, matrix_norm, vector_norm
from .api.products import linalg_cross as cross, multi_dot, vecdot

__all__ = ["cross", "vecdot", "multi_dot", "norm", "matrix_norm", "vector_norm"]

# out= (issue 41): PyTorch's out keyword, from api/out.py's table
from .api.out import out_variants as _out_variants  # noqa: E402
globals().update(_out_variants(globals(), "linalg."))
