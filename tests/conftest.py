"""Shared fixtures: the backend table every backend-parametrized test runs over.

`backend` is parametrized over every registered backend (or the comma list in
TORCHIC_TEST_BACKENDS). An unavailable backend is skipped locally, but with
TORCHIC_REQUIRE_ALL_BACKENDS=1 (set by .ci/run) it fails: in CI a missing
backend is an error, not a skip.
"""

import os

import numpy as np
import pytest

import torchic
from torchic import dispatcher


def _selected_backends():
    wanted = os.environ.get("TORCHIC_TEST_BACKENDS")
    names = dispatcher.backend_names()
    if wanted:
        names = [n.strip() for n in wanted.split(",") if n.strip()]
    return names


BACKENDS = _selected_backends()
REQUIRE_ALL = os.environ.get("TORCHIC_REQUIRE_ALL_BACKENDS") == "1"


@pytest.fixture(scope="session", params=BACKENDS)
def backend_name(request):
    name = request.param
    ok, why = dispatcher.backend_class(name).available()
    if not ok:
        if REQUIRE_ALL:
            pytest.fail(f"backend {name!r} is required (TORCHIC_REQUIRE_ALL_BACKENDS=1) but "
                        f"unavailable: {why}")
        pytest.skip(f"backend {name!r} unavailable: {why}")
    return name


@pytest.fixture
def backend(backend_name):
    """Makes `backend_name` the current runtime (re-initializing only when needed)."""
    rt = dispatcher._runtime
    if rt is None or rt.backend.name != backend_name or rt.closed:
        torchic.init(backend_name)
    torchic.manual_seed(0)
    yield backend_name
    # surface a kernel error left behind by the test
    torchic.sync()


@pytest.fixture
def rng():
    return np.random.default_rng(1234)
