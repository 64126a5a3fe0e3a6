"""The documentation: every public callable has a docstring, `torchic.__all__` lists the
public names, the package ships its type hints (py.typed), and the API reference
(pdoc, scripts/build_docs.py) builds without a warning."""

import pathlib
import subprocess
import sys
import types

import pytest

import torchic

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _run(script, *args):
    return subprocess.run([sys.executable, str(ROOT / "scripts" / script), *args],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)


def test_every_public_callable_has_a_docstring():
    run = _run("check_docstrings.py")
    assert run.returncode == 0, f"public callables without a docstring:\n{run.stdout}"
    assert run.stdout == ""


def test_dunder_all_lists_every_public_name():
    # pdoc documents what a package re-exports only through __all__, and type checkers
    # treat an import in a py.typed package as private unless __all__ names it
    public = {n for n in dir(torchic) if not n.startswith("_")
              and not isinstance(getattr(torchic, n), types.ModuleType)}
    public |= {"cuda", "nn", "optim", "utils"}
    assert len(torchic.__all__) == len(set(torchic.__all__)), "a name is listed twice"
    assert sorted(public - set(torchic.__all__)) == [], "public names missing from __all__"
    assert sorted(set(torchic.__all__) - public) == [], "__all__ names that do not exist"


def test_package_ships_its_type_hints():
    assert (ROOT / "src" / "torchic" / "py.typed").is_file()
    assert '"torchic" = ["py.typed"]' in (ROOT / "pyproject.toml").read_text()


def test_api_reference_builds_without_warnings():
    pytest.importorskip("pdoc", reason="pdoc is not installed (pip install -e '.[docs]')")
    run = _run("build_docs.py", "--check")
    assert run.returncode == 0 and run.stderr == "", f"pdoc warned:\n{run.stderr}"
