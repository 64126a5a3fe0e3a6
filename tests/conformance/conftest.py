"""tests/conformance: differential fuzzing, bad inputs, faults, memory, NaN/inf, coverage.

The hypothesis profiles ("torchic-ci": derandomized, no example database, no deadline;
"torchic-long": TORCHIC_FUZZ_LONG=1, 10,000 examples per op) are registered in
fuzz_support.py, which the fuzz tests import; they are applied per test (not loaded
globally), so the rest of the suite keeps its own hypothesis settings.
Open backend bugs (known_bugs.py) are marked xfail(strict=False) here.
"""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))

from known_bugs import KNOWN_BUGS  # noqa: E402


def pytest_collection_modifyitems(config, items):
    for item in items:
        key = item.nodeid.split("tests/conformance/", 1)[-1]
        reason = KNOWN_BUGS.get(key)
        if reason:
            item.add_marker(pytest.mark.xfail(strict=False, reason=reason))
