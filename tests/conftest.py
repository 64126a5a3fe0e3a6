"""Shared fixtures: the backend table every backend-parametrized test runs over.

`backend` is parametrized over every registered backend (or the comma list in
TORCHIC_TEST_BACKENDS). An unavailable backend is skipped locally, but with
TORCHIC_REQUIRE_ALL_BACKENDS=1 (set by .ci/run) it fails: in CI a missing
backend is an error, not a skip.
"""

import os
import sys

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


@pytest.fixture(scope="session", autouse=True)
def _cpu_only_torch_seeding():
    """PyTorch's torch.manual_seed seeds every device's generator: on a machine without CUDA
    it queues CUDA's seeding for a lazy init and formats the caller's whole stack to do so
    (0.1-0.7 ms a call, deeper under pytest). The database walks seed before every sample
    and every call: that was ~40% of the OpInfo walk's time. Where torch has no CUDA, the
    CPU generator is all manual_seed changes, so the tests seed it alone (same state, same
    return value). torchic's own manual_seed is untouched."""
    torch = sys.modules.get("torch")        # imported by the collected test modules, if any
    if torch is None or not hasattr(torch, "default_generator") or torch.cuda.is_available():
        yield
        return
    original = torch.manual_seed

    def manual_seed(seed):
        return torch.default_generator.manual_seed(int(seed))
    torch.manual_seed = manual_seed
    try:
        yield
    finally:
        torch.manual_seed = original
