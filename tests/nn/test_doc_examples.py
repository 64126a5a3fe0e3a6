"""Issue 44: the docstring examples run (doctest) on every backend, and the public layers and
the public functions of torchic.nn.functional have PyTorch-grade docstrings (what it computes,
Args naming every parameter, Shape where shapes matter, an Example that runs).

Examples run with `torch` (torchic), `F` (torchic.nn.functional), `nn` and `torchic` defined,
as PyTorch's documentation assumes `import torch` and `import torch.nn.functional as F`, after
the backend fixture's `manual_seed(0)`.
"""

import doctest
import inspect

import pytest

import torchic
import torchic.nn as nn
import torchic.nn.functional as F
from torchic.nn import layers, losses, normalization

# modules whose docstring examples (`>>>`) must pass; add a module here when it gets examples
DOCTESTED = [layers, losses, normalization]
DOCUMENTED_LAYERS = ["Linear", "Embedding", "LayerNorm", "Dropout", "BatchNorm1d",
                     "CrossEntropyLoss", "MSELoss", "ReLU"]
# the public functions of torchic.nn.functional still waiting for their Args / Example (a
# name documented since must leave this list: test_functional_docstrings says so)
F_UNDOCUMENTED: set[str] = set()
# the public layers of torchic.nn still waiting for their Args / Shape / Example (may only
# shrink, as F_UNDOCUMENTED)
NN_UNDOCUMENTED: set[str] = set()
# parameters an Args section need not name: PyTorch's deprecated reduction spellings and
# private ones
UNNAMED_PARAMS = {"size_average", "reduce", "_stacklevel", "_random_samples"}


def _public_functions():
    """torchic.nn.functional's public functions (not the names it imports for its own use)."""
    out = {}
    for name in dir(F):
        obj = getattr(F, name)
        if name.startswith("_") or not inspect.isfunction(obj):
            continue
        module = obj.__module__ or ""
        if module.startswith("torchic.nn") or name in ("relu", "tanh", "sigmoid", "mse_loss",
                                                        "softmin", "bilinear"):
            out[name] = obj
    return out


FUNCTIONS = _public_functions()


def _public_layers():
    """torchic.nn's public Module classes."""
    return {name: obj for name in dir(nn) if not name.startswith("_")
            for obj in [getattr(nn, name)]
            if inspect.isclass(obj) and issubclass(obj, nn.Module)}


LAYERS = _public_layers()


def _examples():
    finder = doctest.DocTestFinder(exclude_empty=True, recurse=False)
    seen = set()
    for module in DOCTESTED:
        for test in doctest.DocTestFinder(exclude_empty=True).find(module, module.__name__):
            if test.examples:
                seen.add(test.name)
                yield test
    for name, fn in FUNCTIONS.items():
        for test in finder.find(fn, f"torchic.nn.functional.{name}"):
            if test.examples and test.name not in seen:
                seen.add(test.name)
                yield test
    for name, cls in LAYERS.items():
        for test in finder.find(cls, f"torchic.nn.{name}"):
            if test.examples and not any(t.endswith(f".{name}") for t in seen):
                seen.add(test.name)
                yield test


TESTS = sorted(_examples(), key=lambda t: t.name)


@pytest.mark.parametrize("test", TESTS, ids=[t.name for t in TESTS])
def test_docstring_example_runs(backend, test):
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    out = []
    test.globs = {"torch": torchic, "torchic": torchic, "F": F, "nn": nn}
    runner.run(test, out=out.append)
    assert runner.failures == 0, "".join(out)


def _check_sections(doc, params, what):
    assert doc and "Example:" in doc and ">>> " in doc, what
    if params:
        assert "Args:" in doc, what
        args = doc.split("Args:", 1)[1].split("\n\n")[0]
        for p in params:   # `name:` or grouped `a, name, b:` at the start of an entry
            assert any(line.strip().startswith(p) or f", {p}" in line.split(":")[0]
                       for line in args.splitlines()), (what, p)


@pytest.mark.parametrize("name", DOCUMENTED_LAYERS)
def test_main_layers_have_args_shape_and_example(name):
    doc = inspect.getdoc(getattr(nn, name))
    for section in ("Shape:", "Example:", ">>> "):
        assert section in doc, (name, section)
    params = [p for p in inspect.signature(getattr(nn, name)).parameters
              if p not in ("self", "weight", "size_average", "reduce") and not p.startswith("_")]
    if params:
        assert "Args:" in doc, name
        for p in params:
            assert f"    {p}:" in doc, (name, p)
    assert any(t.name.endswith(f".{name}") for t in TESTS), name


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_functional_docstrings(name):
    fn = FUNCTIONS[name]
    doc = inspect.getdoc(fn) or ""
    params = [p for p in inspect.signature(fn).parameters if p not in UNNAMED_PARAMS]
    if name in F_UNDOCUMENTED:
        try:
            _check_sections(doc, params, name)
        except AssertionError:
            return
        pytest.fail(f"F.{name} is documented now: take it out of F_UNDOCUMENTED")
    assert doc.split("\n")[0].strip(), name
    _check_sections(doc, params, name)
    assert any(t.name == f"torchic.nn.functional.{name}" or t.name.endswith(f".{name}")
               for t in TESTS), f"F.{name}'s example is not collected"


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_layer_docstrings(name):
    cls = LAYERS[name]
    doc = inspect.getdoc(cls) or ""
    params = [p for p in inspect.signature(cls).parameters
              if p not in UNNAMED_PARAMS | {"args", "kwargs"} and not p.startswith("_")]
    if name in NN_UNDOCUMENTED:
        try:
            _check_sections(doc, params, name)
            assert "Shape:" in doc
        except AssertionError:
            return
        pytest.fail(f"nn.{name} is documented now: take it out of NN_UNDOCUMENTED")
    _check_sections(doc, params, name)
    assert "Shape:" in doc or name in ("Module", "Sequential", "ModuleList", "ModuleDict"), name


def test_examples_exist():
    assert len(TESTS) >= len(DOCUMENTED_LAYERS) + len(FUNCTIONS) - len(F_UNDOCUMENTED)
    assert torchic.nn.Linear.__doc__.count(">>>") >= 2
    assert not F_UNDOCUMENTED - set(FUNCTIONS), F_UNDOCUMENTED - set(FUNCTIONS)


# examples whose text differs from PyTorch's on purpose: a random init (PyTorch's numbers but
# drawn in another order), a repr torchic writes its own way
PRINTS_DIFFER = set()


def test_examples_print_what_pytorch_prints():
    """The same example lines run by PyTorch (torch as `torch`, its functional as `F`, after
    the same seed) print the same text: the documented outputs are PyTorch's."""
    torch = pytest.importorskip("torch")
    import warnings
    failed = []
    for test in TESTS:
        name = test.name.rsplit(".", 1)[-1]
        home = torch.nn.functional if test.name.startswith("torchic.nn.functional.") else \
            torch.nn if test.name.startswith("torchic.nn.") else None
        if home is None or not hasattr(home, name) or name in PRINTS_DIFFER:
            continue
        for ex in test.examples:
            ex.want = ex.want.replace("torchic.Size", "torch.Size")
        test.globs = {"torch": torch, "torchic": torch, "F": torch.nn.functional,
                      "nn": torch.nn}
        torch.manual_seed(0)
        runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS |
                                       doctest.NORMALIZE_WHITESPACE)
        out = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")     # upsample's deprecation
            runner.run(test, out=out.append)
        for ex in test.examples:
            ex.want = ex.want.replace("torch.Size", "torchic.Size")
        if runner.failures:
            failed.append("".join(out))
    assert not failed, "\n".join(failed)
