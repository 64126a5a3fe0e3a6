"""Parity tests: gradients through composite graphs (an MLP, shared inputs, broadcasting)."""

import numpy as np

import torchic

from .. import define_test
from ...testing import check, np_cross_entropy
from ._common import TEST_COLUMNS, test_params, unavailable_backends

TARGET = np.array([1, 0, 2, 2])


def _mlp(x, w1, b1, w2):
    return (x @ w1 + b1).tanh() @ w2


def _np_mlp(x, w1, b1, w2):
    return np.tanh(x @ w1 + b1) @ w2


CASES = [
    ("x * x + x (shared input)", lambda a: a * a + a, lambda a: a * a + a, [(3, 4)]),
    ("broadcast bias", lambda a, b: (a + b).relu().sum(0), lambda a, b: np.maximum(a + b, 0).sum(0),
     [(5, 3), (3,)]),
    ("mlp forward", _mlp, _np_mlp, [(4, 3), (3, 6), (6,), (6, 2)]),
    ("mlp + cross_entropy",
     lambda x, w1, b1, w2: torchic.cross_entropy(_mlp(x, w1, b1, w2), torchic.tensor(TARGET)),
     lambda x, w1, b1, w2: np_cross_entropy(_np_mlp(x, w1, b1, w2), TARGET),
     [(4, 3), (3, 6), (6,), (6, 3)]),
    ("softmax * log", lambda a: a.softmax(-1) * a.exp().log(),
     lambda a: np.exp(a) / np.exp(a).sum(-1, keepdims=True) * a, [(2, 5)]),
]


def autograd(run, backend):
    run.use_backend(backend)
    for name, fn, ref, shapes in run.each(CASES):
        run.test(name, lambda: check(fn, ref, shapes))

    def no_grad():
        x = torchic.ones(2, requires_grad=True)
        with torchic.no_grad():
            y = x * 2
        assert not y.requires_grad, "a result under no_grad requires grad"
    run.test("no_grad", no_grad)

    def accumulate():
        x = torchic.tensor([1.0, 2.0], requires_grad=True)
        (x * 3).sum().backward()
        (x * x).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), [3 + 2, 3 + 4])
    run.test("grad accumulates", accumulate)


define_test("autograd", autograd, test_params(layouts=False), title="Autograd",
            columns=[c for c in TEST_COLUMNS if c != "layout"],
            disabled={"backend": unavailable_backends},
            description="gradients of composite graphs against finite differences of NumPy "
                        "float64")
