"""Parity tests: matmul over shapes (batched, broadcast, vectors, empty) and layouts."""

import numpy as np

from .. import define_test
from ...testing import CASES, MATMUL_SHAPES as SHAPES, check
from ._common import TEST_COLUMNS, test_params, unavailable_backends

def matmul(run, backend, layout):
    run.use_backend(backend)
    for a, b in run.each(SHAPES):
        run.test(f"{a} @ {b}", lambda: CASES["matmul"].check(layout=layout, shapes=[a, b]))

    def large():
        rng = np.random.default_rng(0)
        m = rng.standard_normal((64, 96)).astype(np.float32)
        n = rng.standard_normal((96, 80)).astype(np.float32)
        return check(lambda x, y: x @ y, np.matmul, arrays=[m, n], grad=False, layout=layout,
                     atol=1e-3, rtol=1e-4)
    run.test("(64, 96) @ (96, 80)", large)


define_test("ops.matmul", matmul, test_params(), title="Matmul", columns=TEST_COLUMNS,
            disabled={"backend": unavailable_backends},
            description="batched / broadcast / vector matmul and its gradients against NumPy "
                        "float64")
