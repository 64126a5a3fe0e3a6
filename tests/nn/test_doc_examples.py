"""Issue 44: the docstring examples run (doctest) on every backend, and the main public layers
have PyTorch-grade docstrings (Args / Shape / Example)."""

import doctest
import inspect

import pytest

import torchic
import torchic.nn as nn
from torchic.nn import layers, losses, normalization

# modules whose docstring examples (`>>>`) must pass; add a module here when it gets examples
DOCTESTED = [layers, losses, normalization]
DOCUMENTED_LAYERS = ["Linear", "Embedding", "LayerNorm", "Dropout", "BatchNorm1d",
                     "CrossEntropyLoss", "MSELoss", "ReLU"]


def _examples():
    finder = doctest.DocTestFinder(exclude_empty=True)
    for module in DOCTESTED:
        for test in finder.find(module, module.__name__, globs={}):
            if test.examples:
                yield test


TESTS = sorted(_examples(), key=lambda t: t.name)


@pytest.mark.parametrize("test", TESTS, ids=[t.name for t in TESTS])
def test_docstring_example_runs(backend, test):
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    out = []
    test.globs = {}
    runner.run(test, out=out.append)
    assert runner.failures == 0, "".join(out)


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


def test_examples_exist():
    assert len(TESTS) >= len(DOCUMENTED_LAYERS)
    assert torchic.nn.Linear.__doc__.count(">>>") >= 2
