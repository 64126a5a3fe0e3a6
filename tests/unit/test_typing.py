"""Types a checker can see: the generated Tensor stub is current, and `mypy --strict` passes
on examples/ and on tests/typing/public_api.py (the public API as a user writes it).

Tensor's op methods are bound at run time from methods.METHODS; src/torchic/_tensor_methods.pyi
declares them for checkers and is generated from that table by scripts/gen_tensor_stub.py,
so it cannot drift: regenerate it after changing the table or an op's signature.
"""

import importlib.util
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PUBLIC_API = os.path.join("tests", "typing", "public_api.py")


@pytest.mark.skipif(sys.version_info < (3, 11), reason="the generator reads @overload "
                    "signatures with typing.get_overloads (Python 3.11+)")
def test_tensor_stub_matches_the_methods_table():
    proc = subprocess.run([sys.executable, os.path.join("scripts", "gen_tensor_stub.py"),
                           "--check"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, (proc.stdout + proc.stderr +
                                  "\nregenerate with: python scripts/gen_tensor_stub.py")


@pytest.mark.skipif(importlib.util.find_spec("mypy") is None,
                    reason="mypy is not installed (pip install -e '.[test]')")
def test_mypy_strict_on_examples_and_the_public_api(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-error-summary",
                           "--cache-dir", str(tmp_path / "mypy-cache"), "examples", PUBLIC_API],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"mypy --strict reports:\n{proc.stdout}{proc.stderr}"


def test_the_typed_public_api_file_runs():
    """Every line the checker accepts there also runs (on workers): the file is real code."""
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "src"))
    proc = subprocess.run([sys.executable, PUBLIC_API], cwd=ROOT, capture_output=True,
                          text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
