"""Parity tests: reductions, softmax, losses and argmax, every backend."""

import numpy as np

import torchic

from .. import define_test
from ...testing import CASES, check, family, np_softmax
from ._common import TEST_COLUMNS, test_params, unavailable_backends


def reductions(run, backend, layout):
    run.use_backend(backend)
    for c in run.each(family("reduce") + [CASES["cross_entropy"], CASES["mse_loss"]]):
        run.test(c.name, lambda: c.check(layout=layout))
    run.test("softmax stable", lambda: check(
        lambda a: a.softmax(-1), np_softmax,
        arrays=[np.array([[1000.0, 1001.0, 1002.0], [-1000.0, -1000.0, -1000.0]])],
        grad=False, layout=layout))

    def argmax():
        a = np.random.default_rng(0).standard_normal((4, 6)).astype(np.float32)
        ta = torchic.tensor(a)
        assert ta.argmax().item() == int(np.argmax(a)), "argmax()"
        assert ta.argmax(1).tolist() == np.argmax(a, 1).tolist(), "argmax(1)"
        assert ta.argmin(1).tolist() == np.argmin(a, 1).tolist(), "argmin(1)"
    run.test("argmax / argmin", argmax)


define_test("ops.reduce", reductions, test_params(), title="Reductions, softmax and losses",
            columns=TEST_COLUMNS, disabled={"backend": unavailable_backends},
            description="values and gradients against NumPy float64 (finite differences)")
