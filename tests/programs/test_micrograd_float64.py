"""micrograd_float64.py (karpathy/micrograd's test_engine style: float64, 1e-6 against
torch) run with PyTorch and with torchic standing in for torch (shim.py) on every backend:
every value and gradient within 1e-6 relative, the dtypes float64. webgpu holds no float64
(WGSL has none): there the program's first .double() is the TypeError naming the backend."""

import importlib.util
import itertools
import math
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

from shim import torchic_as_torch  # noqa: E402

torch = pytest.importorskip("torch")
_count = itertools.count()


def _run():
    """main() of a fresh copy of the program (its `import torch` binds whatever is in
    sys.modules now)."""
    path = os.path.join(HERE, "micrograd_float64.py")
    spec = importlib.util.spec_from_file_location(f"_micrograd_{next(_count)}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.main()


def test_micrograd_float64_matches_torch(backend):
    want = _run()
    if backend == "webgpu":
        with torchic_as_torch(), pytest.raises(TypeError, match="webgpu"):
            _run()
        return
    with torchic_as_torch():
        got = _run()
    assert got.keys() == want.keys()
    for key, value in want.items():
        if isinstance(value, str):
            assert got[key] == value, key
        else:
            assert math.isclose(got[key], value, rel_tol=1e-6, abs_tol=1e-12), \
                (key, got[key], value)
    assert got["third"] == 1 / 3          # 0.3333333333333333: float64 division
