"""The Rust unit tests (per-ISA kernel tests, stream and pool, record validation)."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

CRATE = Path(__file__).resolve().parents[2] / "kernels"


def test_cargo_test():
    if shutil.which("cargo") is None:
        if os.environ.get("TORCHIC_REQUIRE_ALL_BACKENDS") == "1":
            pytest.fail("cargo is required (TORCHIC_REQUIRE_ALL_BACKENDS=1) but not installed")
        pytest.skip("cargo not installed")
    # release: the tests run the kernels on millions of elements; the build shares
    # the release profile's artifacts with `pip install`
    proc = subprocess.run(["cargo", "test", "--release", "--lib", "--quiet",
                           "--manifest-path", str(CRATE / "Cargo.toml")],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
