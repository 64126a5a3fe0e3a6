"""Issue 44: tensor reprs read like PyTorch's, character for character (column padding,
notation, summaries, wrapping, suffixes), on every backend."""

import numpy as np
import pytest

import torchic

torch = pytest.importorskip("torch")

CASES = {
    "negatives": [[1.0, -2.0], [30.5, 4.0]],
    "mixed_widths": [1.5, -0.25, 100.0],
    "ints": [[1, -20, 300], [4, 5, 6]],
    "bools": [True, False, True],
    "sci_small_and_large": [1e-8, 1.0, 1e8],
    "sci_ratio": [1e10, 2.0],
    "sci_tiny": [1e-5, 0.5],
    "whole_floats": [1.0, 2.0, -3.0],
    "zeros": [0.0, -0.0],
    "nonfinite": [float("nan"), float("inf"), -float("inf"), 1.0],
    "nonfinite_decimals": [float("nan"), 0.5],
    "scalar_float": 3.5,
    "scalar_int": 7,
    "scalar_bool": True,
    "scalar_negative": -0.125,
    "empty": [],
    "empty_2d": np.zeros((0, 3), np.float32),
    "3d": np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 3 - 2,
    "long_row_wraps": [float(i) / 3 for i in range(40)],
    "long_int_row_wraps": list(range(-30, 30)),
    "summarized_ints": list(range(2000)),
    "summarized_floats": [float(i) / 7 for i in range(1500)],
    "summarized_2d": np.arange(3600, dtype=np.float32).reshape(3, 1200),
    "summarized_rows": np.arange(2000, dtype=np.float32).reshape(1000, 2) / 10,
}
DTYPED = {"float64": ([1.5, -2.25], "float64"), "int32": ([1, -200], "int32"),
          "uint8": ([1, 200], "uint8"), "float64_empty": ([], "float64"),
          "float16": ([0.1, 2.5], "float16")}


@pytest.mark.parametrize("name", sorted(CASES))
def test_repr_matches_torch(backend, name):
    data = CASES[name]
    if backend == "webgpu" and isinstance(data, np.ndarray) and data.dtype == np.float64:
        pytest.skip("webgpu holds no float64")
    want = repr(torch.tensor(data))
    got = repr(torchic.tensor(data))
    assert got == want, f"\ntorch:   {want}\ntorchic: {got}"


@pytest.mark.parametrize("name", sorted(DTYPED))
def test_repr_with_dtype_matches_torch(backend, name):
    data, dt = DTYPED[name]
    if backend == "webgpu" and dt == "float64":
        pytest.skip("webgpu holds no float64")
    want = repr(torch.tensor(data, dtype=getattr(torch, dt))).replace("torch.", "torchic.")
    got = repr(torchic.tensor(data, dtype=getattr(torchic, dt)))
    assert got == want, f"\ntorch:   {want}\ntorchic: {got}"


def test_repr_of_grad_tensors_matches_torch(backend):
    rows = [[0.5, -1.25, 3.0]] * 3
    t, c = torch.tensor(rows, requires_grad=True), torchic.tensor(rows, requires_grad=True)
    assert repr(c) == repr(t)
    assert repr(c * 2) == repr(t * 2)        # (grad_fn=<MulBackward0>: PyTorch's node names)
