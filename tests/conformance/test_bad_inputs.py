"""Bad inputs on every backend: the right exception, a message naming the problem, no crash,
no hang, and a runtime that still works afterwards.

The catalogue is bad_cases.py. Every backend runs the whole catalogue in one
child process (see _batch.py: per-case reports, a watchdog per case, crashes
and hangs recorded per case and the child restarted after them); each case
is then its own test here.
"""

import os
import re

import pytest

import bad_cases
from _batch import run_batch

CASE_TIMEOUT = float(os.environ.get("TORCHIC_CASE_TIMEOUT", "30"))
_results = {}


def batch(backend_name):
    if backend_name not in _results:
        _results[backend_name] = run_batch(bad_cases.__file__, backend_name,
                                           len(bad_cases.CASES), case_timeout=CASE_TIMEOUT)
    return _results[backend_name]


def test_catalogue_is_large_and_covers_every_group():
    assert len(bad_cases.CASES) >= 40
    names = [c.name for c in bad_cases.CASES]
    assert len(set(names)) == len(names), "duplicate case names"
    groups = {c.group for c in bad_cases.CASES}
    assert {"shapes", "axes", "indices", "dtypes", "non-finite", "zero-size", "heap",
            "lifetime", "autograd", "backends"} <= groups


@pytest.mark.parametrize("index", range(len(bad_cases.CASES)),
                         ids=[c.name for c in bad_cases.CASES])
def test_bad_input(backend_name, index):
    case = bad_cases.CASES[index]
    results, _ = batch(backend_name)
    res = results.get(index)
    assert res is not None, f"{case.name}: no result (the child died before reaching it)"
    assert "hang" not in res, f"{case.name}: HANG (no result within {res['hang']} s)"
    assert "crash" not in res, f"{case.name}: CRASH ({res['crash']}):\n{res['stderr']}"
    assert res["raised"], f"{case.name}: no exception raised (expected {case.exc.__name__})"
    assert case.exc.__name__ in res["mro"], (
        f"{case.name}: raised {res['type']}: {res['msg']}\nexpected {case.exc.__name__}\n"
        f"{res.get('tb', '')}")
    assert re.search(case.match, res["msg"], re.I | re.S), (
        f"{case.name}: message does not name the problem.\n  message: {res['msg']}\n"
        f"  expected to match: {case.match}")
    assert res["pending"] is None, f"{case.name}: left an error queued: {res['pending']}"
    assert res["sane"], f"{case.name}: runtime broken afterwards: {res['sane_why']}"


def test_catalogue_child_exits_cleanly(backend_name):
    _, exits = batch(backend_name)
    assert exits and all(e == "exit status 0" for e in exits), exits
