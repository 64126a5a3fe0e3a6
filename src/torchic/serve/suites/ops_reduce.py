"""Parity tests: reductions, softmax, losses and argmax, every backend."""

import numpy as np

import torchic

from .. import define_test
from ...testing import REDUCTIONS, check, np_cross_entropy, np_softmax
from ._common import TEST_COLUMNS, test_params, unavailable_backends

TARGET = np.array([0, 3, 2, 4, 4, 1])


def reductions(run, backend, layout):
    run.use_backend(backend)
    for name, fn, ref in run.each(REDUCTIONS):
        run.test(name, lambda: check(fn, ref, [(3, 4, 5)], layout=layout))
    t = torchic.tensor(TARGET)
    run.test("cross_entropy", lambda: check(lambda x: torchic.cross_entropy(x, t),
                                            lambda x: np_cross_entropy(x, TARGET), [(6, 5)],
                                            layout=layout, low=-4, high=4))
    run.test("mse_loss", lambda: check(torchic.mse_loss, lambda a, b: ((a - b) ** 2).mean(),
                                       [(4, 3), (4, 3)], layout=layout))
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
