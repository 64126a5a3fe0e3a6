"""torchic.linalg: PyTorch's linalg namespace, the parts that need no decomposition
(norms: api/norms.py; the spectral and nuclear norms read singular vectors from the host).

    torchic.linalg.vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None)
"""

from .api.norms import linalg_norm as norm, matrix_norm, vector_norm

__all__ = ["norm", "matrix_norm", "vector_norm"]
