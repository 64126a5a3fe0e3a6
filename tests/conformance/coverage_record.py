"""Which primitive ops (ops.ALL_OPS) a piece of test code reaches, recorded, not guessed.

``recording()`` wraps the current runtime's ``run`` (every primitive op, host
fill and copy included, goes through it) and collects op names.
``fuzz_coverage()`` runs a few examples of every fuzzed op under it, and the
pytest plugin (``-p coverage_record`` with TORCHIC_RECORD_OPS=out.json) does the
same for whole test files. scripts/gen_coverage.py builds docs/COVERAGE.md
from these.
"""

import contextlib
import json
import os

from torchic import dispatcher


@contextlib.contextmanager
def recording():
    seen = set()
    original = dispatcher.Runtime.__init__

    def wrap(rt):
        inner = rt.run

        def run(op, out, inputs, params, _inner=inner):
            seen.add(op)
            return _inner(op, out, inputs, params)
        return rt.rebind(run=run)

    def init(self, *a, **k):
        original(self, *a, **k)
        wrap(self)

    dispatcher.Runtime.__init__ = init
    rt = dispatcher._runtime
    saved = wrap(rt) if rt is not None else None
    try:
        yield seen
    finally:
        dispatcher.Runtime.__init__ = original
        if rt is not None:
            rt.restore(saved)


def fuzz_coverage(examples=12):
    """{fuzzed op name: primitive ops reached} from a few derandomized examples each."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    import test_fuzz
    from fuzz_support import draw_rng

    def runner(example):
        @settings(settings.get_profile("torchic-ci"), max_examples=examples)
        @given(data=st.data())
        def run(data):
            example(data, draw_rng(data))
        return run

    out = {}
    for name, example in sorted(test_fuzz.FUZZ_OPS.items()):
        with recording() as seen:
            runner(example)()
        out[name] = seen
    return out


# -- pytest plugin: record per test file -----------------------------------------------------
_per_file = {}
_ctx = None
_seen = None


def pytest_sessionstart(session):
    global _ctx, _seen
    if os.environ.get("TORCHIC_RECORD_OPS"):
        _ctx = recording()
        _seen = _ctx.__enter__()


def pytest_runtest_logfinish(nodeid, location):
    if _seen is not None:
        path = nodeid.split("::", 1)[0]
        _per_file.setdefault(path, set()).update(_seen)
        _seen.clear()


def pytest_sessionfinish(session, exitstatus):
    path = os.environ.get("TORCHIC_RECORD_OPS")
    if path and _ctx is not None:
        _ctx.__exit__(None, None, None)
        with open(path, "w") as f:
            json.dump({k: sorted(v) for k, v in _per_file.items()}, f, indent=1)
