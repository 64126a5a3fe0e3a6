"""The documentation: every public callable has a docstring, `torchic.__all__` lists the
public names, the package ships its type hints (py.typed), and the API reference
(pdoc, scripts/build_docs.py) builds without a warning."""

import inspect
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
    public |= {"cuda", "nn", "optim", "utils", "serialization", "accelerator", "amp", "jit",
               "onnx", "linalg", "autograd"}
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


# Public callables still without full type hints (none now). The list only shrinks: a new
# public callable must come with its annotations.
UNANNOTATED: set[str] = set()


def _unannotated(fn):
    """The parameters (and 'return') of `fn` without an annotation (self / cls exempt)."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):      # a builtin without a signature
        return []
    names = [p.name for i, p in enumerate(sig.parameters.values())
             if p.annotation is inspect.Parameter.empty
             and not (i == 0 and p.name in ("self", "cls"))]
    if sig.return_annotation is inspect.Signature.empty:
        names.append("return")
    return names


def _public_callables():
    """(name, function) of torchic.__all__'s functions and the public methods / properties of
    its torchic classes (Tensor's op methods included), each object once."""
    seen = set()
    for name in torchic.__all__:
        obj = getattr(torchic, name)
        if inspect.isclass(obj) and obj.__module__.startswith("torchic"):
            for klass in obj.__mro__:
                if not klass.__module__.startswith("torchic"):
                    continue
                for member, attr in vars(klass).items():
                    if isinstance(attr, (staticmethod, classmethod)):
                        attr = attr.__func__
                    if isinstance(attr, property):
                        attr = attr.fget
                    if member.startswith("_") or not inspect.isroutine(attr):
                        continue
                    if id(attr) not in seen:
                        seen.add(id(attr))
                        yield f"{name}.{member}", attr
        elif inspect.isroutine(obj) and id(obj) not in seen:
            seen.add(id(obj))
            yield name, obj


def test_public_api_is_annotated():
    missing = {name: params for name, fn in _public_callables()
               if (params := _unannotated(fn)) and name not in UNANNOTATED}
    assert missing == {}, f"public callables with parameters / returns not annotated: {missing}"
    annotated = {name for name, fn in _public_callables() if not _unannotated(fn)}
    assert sorted(UNANNOTATED & annotated) == [], "annotated now: remove from UNANNOTATED"


def test_annotations_name_python_types_not_torchic_dtypes():
    # torchic's namespace rebinds bool / int / float to dtypes (PyTorch's spellings): an
    # annotation `-> bool` written in torchic/__init__.py is the dtype torchic.bool
    wrong = {name: p for name, fn in _public_callables()
             for p, a in _annotations(fn).items() if isinstance(a, torchic.DType)}
    assert wrong == {}, f"annotations that are torchic dtypes, not Python types: {wrong}"


def _annotations(fn):
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return {}
    out = {p.name: p.annotation for p in sig.parameters.values()}
    out["return"] = sig.return_annotation
    return out
