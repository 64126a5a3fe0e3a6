"""Parity tests: views (reshape, transpose, slicing, expand), indexing, cat / stack."""

import numpy as np

import torchic

from .. import define_test
from ...testing import family
from ._common import TEST_COLUMNS, test_params, unavailable_backends

def views(run, backend, layout):
    run.use_backend(backend)
    for c in run.each(family("view")):       # views, indexing (gather), cat / stack
        run.test(c.name, lambda: c.check(layout=layout))

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
