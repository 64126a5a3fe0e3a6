"""Parity tests: unary, binary (with broadcasting), comparison and where, every backend."""

import numpy as np

import torchic

from .. import define_test
from ...testing import BINARY, BROADCAST_SHAPES, COMPARE, UNARY, check
from ._common import TEST_COLUMNS, test_params, unavailable_backends

BROADCAST = BROADCAST_SHAPES[:4]


def unary(run, backend, layout):
    run.use_backend(backend)
    cases = [(f"{name} {shape}", fn, ref, shape, opts) for name, fn, ref, opts in UNARY
             for shape in ((3, 5), (2, 3, 4))]
    for case, fn, ref, shape, opts in run.each(cases):
        run.test(case, lambda: check(fn, ref, [shape], layout=layout, **opts))


def binary(run, backend, layout):
    run.use_backend(backend)
    cases = [(f"{name} {a}x{b}", fn, ref, [a, b], opts) for name, fn, ref, opts in BINARY
             for a, b in BROADCAST]
    cases += [(f"{name} scalar", lambda x, fn=fn: fn(x, 1.5), lambda x, ref=ref: ref(x, 1.5),
               [(2, 3)], opts) for name, fn, ref, opts in BINARY]
    for case, fn, ref, shapes, opts in run.each(cases):
        run.test(case, lambda: check(fn, ref, shapes, layout=layout, **opts))


def compare(run, backend, layout):
    run.use_backend(backend)
    rng = np.random.default_rng(0)
    a = rng.integers(-2, 3, (4, 5)).astype(np.float64)   # many ties
    b = rng.integers(-2, 3, (5,)).astype(np.float64)
    for name, fn, ref in run.each(COMPARE):
        run.test(name, lambda: check(fn, lambda x, y: ref(x, y).astype(np.float64),
                                     arrays=[a, b], grad=False, layout=layout))
    cond = (rng.uniform(size=(3, 4)) > 0.5).astype(np.float32)
    run.test("where", lambda: check(lambda x, y: torchic.where(torchic.tensor(cond), x, y),
                                    lambda x, y: np.where(cond != 0, x, y), [(3, 4), (4,)],
                                    layout=layout))


for _name, _fn, _title in (("ops.unary", unary, "Unary ops"),
                           ("ops.binary", binary, "Binary ops and broadcasting"),
                           ("ops.compare", compare, "Comparisons and where")):
    define_test(_name, _fn, test_params(), title=_title, columns=TEST_COLUMNS,
                description="values and gradients against NumPy float64 (finite differences)",
                disabled={"backend": unavailable_backends})
