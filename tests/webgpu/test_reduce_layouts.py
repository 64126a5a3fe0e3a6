"""The webgpu reduce layouts (backends/webgpu/reduce.py): each shape below is chosen to take
one layout, checked by the pipeline it compiles, and every layout against NumPy float64
for sum / amax / amin, int32 sums, NaN and strided (transposed) inputs."""

import numpy as np
import pytest

import torchic

# (shape, dims, layout the reduction takes)
CASES = [
    ((300, 20), 1, "t"),                  # short contiguous rows: one invocation a row
    ((40, 700), 1, "w"),                  # contiguous rows: a workgroup a row
    ((3000, 257), 1, "r"),                # many contiguous rows: 8 a workgroup, 32 lanes each
    ((40, 7, 60, 8), (1, 3), "r"),        # ... two reduced dims apart, the inner one contiguous
    ((3, 70000), 1, "w-split"),           # few long rows: two passes
    ((50, 3000), 0, "columns"),           # 3000 rows 1 apart, 50 elements 3000 apart: one pass
    ((3000, 70), 0, "columns"),           # a bias gradient's shape: chunked, two passes
    ((6, 40, 129), (0, 1), "columns"),    # two reduced dims, two passes
    ((2, 500, 3, 40), (1, 3), "w"),       # the kept dims are not the innermost: a row a workgroup
]


def _layouts(gpu):
    return {k[2] + ("-split" if k[2] == "w" and k[5] is True else "")
            for k in gpu.pipelines if k[0] == "reduce"}


@pytest.mark.parametrize("shape,dims,layout", CASES, ids=lambda c: str(c))
def test_each_layout_matches_numpy(rt, shape, dims, layout):
    rng = np.random.default_rng(len(shape) * 1000 + shape[-1])
    a = rng.standard_normal(shape).astype(np.float32)
    t = torchic.tensor(a)
    ref = a.astype(np.float64)
    np.testing.assert_allclose(t.sum(dim=dims).numpy(), ref.sum(axis=dims), rtol=1e-4,
                               atol=1e-3)
    np.testing.assert_array_equal(t.amax(dim=dims).numpy(), a.max(axis=dims))
    np.testing.assert_array_equal(t.amin(dim=dims).numpy(), a.min(axis=dims))
    ints = rng.integers(-1000, 1000, shape).astype(np.int32)
    np.testing.assert_array_equal(torchic.tensor(ints).sum(dim=dims).numpy(),
                                  ints.sum(axis=dims))
    assert layout in _layouts(rt.backend.gpu)


def test_columns_layout_propagates_nan_and_reads_transposed_views(rt):
    a = np.random.default_rng(1).standard_normal((900, 70)).astype(np.float32)
    a[333, 5] = np.nan
    t = torchic.tensor(a)
    got = t.amax(0).numpy()
    assert np.isnan(got[5]) and not np.isnan(np.delete(got, 5)).any()
    np.testing.assert_array_equal(np.delete(got, 5), np.delete(a.max(0), 5))
    # the transpose's last axis is the columns case too: (70, 900) strides (1, 70)
    b = np.nan_to_num(a)
    np.testing.assert_allclose(torchic.tensor(b).T.sum(-1).numpy(),
                               b.T.astype(np.float64).sum(-1), rtol=1e-4, atol=1e-3)
    assert "columns" in _layouts(rt.backend.gpu)


def test_bias_gradient_takes_the_columns_layout(rt):
    x = torchic.tensor(np.ones((512, 96), np.float32), requires_grad=True)
    b = torchic.zeros(96, requires_grad=True)
    ((x + b) * 2.0).sum().backward()
    np.testing.assert_array_equal(b.grad.numpy(), np.full(96, 1024.0, np.float32))
    assert "columns" in _layouts(rt.backend.gpu)
