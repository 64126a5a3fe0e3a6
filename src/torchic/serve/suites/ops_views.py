"""Parity tests: views (reshape, transpose, slicing, expand), indexing, cat / stack."""

import numpy as np

import torchic

from .. import define_test
from ...testing import VIEWS, check
from ._common import TEST_COLUMNS, test_params, unavailable_backends

def views(run, backend, layout):
    run.use_backend(backend)
    for name, fn, ref in run.each(VIEWS):
        run.test(name, lambda: check(fn, ref, [(2, 3, 4)], layout=layout))
    table = np.random.default_rng(0).standard_normal((7, 3))
    idx = np.array([[1, 2, 6], [0, 1, 1]])
    run.test("gather rows", lambda: check(lambda c: c[torchic.tensor(idx)], lambda c: c[idx],
                                          arrays=[table], layout=layout))
    run.test("cat", lambda: check(lambda a, b: torchic.cat([a, b], dim=1),
                                  lambda a, b: np.concatenate([a, b], 1), [(2, 3), (2, 5)],
                                  layout=layout))
    run.test("stack", lambda: check(lambda a, b: torchic.stack([a, b], dim=-1),
                                    lambda a, b: np.stack([a, b], -1), [(2, 3), (2, 3)],
                                    layout=layout))

    def setitem():
        a = torchic.zeros(3, 4)
        a[1] = 5.0
        a[:, 2] = torchic.tensor([1.0, 2.0, 3.0])
        expect = np.zeros((3, 4))
        expect[1] = 5
        expect[:, 2] = [1, 2, 3]
        np.testing.assert_array_equal(a.numpy(), expect)
    run.test("setitem", setitem)


define_test("ops.views", views, test_params(), title="Views, indexing, cat / stack",
            columns=TEST_COLUMNS, disabled={"backend": unavailable_backends},
            description="zero-copy views and indexing: values and gradients against NumPy")
