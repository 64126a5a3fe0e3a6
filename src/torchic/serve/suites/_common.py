"""Parameter choices shared by the built-in suites (callables: evaluated when listing)."""

import os

from ..context import backend_available
from ...testing import LAYOUTS

TEST_COLUMNS = ["backend", "layout", "case", "status", "max_err", "grad_err", "ms", "message"]


def backends():
    """Every registered torchic backend (available or not: an unavailable one is greyed out)."""
    from torchic import dispatcher
    return dispatcher.backend_names()


def unavailable_backends():
    """{backend: why} for the backends that cannot run on this machine."""
    out = {}
    for name in backends():
        ok, why = backend_available(name)
        if not ok:
            out[name] = why or "unavailable"
    return out


def cores():
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def thread_choices():
    """1, 2, 4, ... and the core count."""
    n, out, p = cores(), [1], 2
    while p < n:
        out.append(p)
        p *= 2
    if n not in out:
        out.append(n)
    return out


def test_params(layouts=True):
    params = {"backend": backends}
    if layouts:
        params["layout"] = list(LAYOUTS)
    return params
