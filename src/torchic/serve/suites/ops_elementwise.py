"""Parity tests: unary, binary (with broadcasting), comparison and where, every backend."""

import numpy as np

from .. import define_test
from ...testing import BROADCAST_SHAPES, CASES, check, family
from ._common import TEST_COLUMNS, test_params, unavailable_backends

BROADCAST = BROADCAST_SHAPES[:4]


def unary(run, backend, layout):
    run.use_backend(backend)
    cases = [(f"{c.name} {shape}", c, shape) for c in family("unary")
             for shape in ((3, 5), (2, 3, 4))]
    for case, c, shape in run.each(cases):
        run.test(case, lambda: c.check(layout=layout, shapes=[shape]))


def binary(run, backend, layout):
    run.use_backend(backend)
    cases = [(f"{c.name} {a}x{b}", c, [a, b]) for c in family("binary") for a, b in BROADCAST]
    cases += [(f"{c.name} scalar", c, None) for c in family("binary")]
    for case, c, shapes in run.each(cases):
        if shapes:
            run.test(case, lambda: c.check(layout=layout, shapes=shapes))
        else:
            x = c.draw(np.random.default_rng(0), [(2, 3)])
            run.test(case, lambda: check(lambda t: c.fn(t, 1.5), lambda a: c.ref(a, 1.5),
                                         arrays=x, layout=layout, **c.tol))


def compare(run, backend, layout):
    run.use_backend(backend)
    for c in run.each(family("compare") + [CASES["where"]]):
        run.test(c.name, lambda: c.check(layout=layout))


for _name, _fn, _title in (("ops.unary", unary, "Unary ops"),
                           ("ops.binary", binary, "Binary ops and broadcasting"),
                           ("ops.compare", compare, "Comparisons and where")):
    define_test(_name, _fn, test_params(), title=_title, columns=TEST_COLUMNS,
                description="values and gradients against NumPy float64 (finite differences)",
                disabled={"backend": unavailable_backends})
