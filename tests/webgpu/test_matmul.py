"""matmul edge shapes and layouts against NumPy, for every tile configuration."""

import numpy as np
import pytest

from torchic.backends.webgpu import matmul
from torchic.dispatcher import View


def _operand(heap, x, layout, pad=0):
    """x (B, R, C) laid out 'row' (contiguous), 'col' (transposed) or 'bcast' (batch stride 0)."""
    B, R, C = x.shape
    if layout == "row":
        v = heap.put(np.concatenate([np.zeros(pad, np.float32), x.ravel()]))
        return View(v.block, pad, (B, R, C), (R * C, C, 1), "f32")
    if layout == "col":
        v = heap.put(np.concatenate([np.zeros(pad, np.float32),
                                     np.ascontiguousarray(x.transpose(0, 2, 1)).ravel()]))
        return View(v.block, pad, (B, R, C), (R * C, 1, R), "f32")
    assert layout == "bcast"
    v = heap.put(np.concatenate([np.zeros(pad, np.float32), x[0].ravel()]))
    return View(v.block, pad, (B, R, C), (0, C, 1), "f32")


def _check(rt, heap, B, M, K, N, la="row", lb="row", pad=0, tol=1e-4, bias=False):
    rng = np.random.default_rng(M * 1000 + K * 10 + N)
    a = rng.standard_normal((B, M, K)).astype(np.float32)
    b = rng.standard_normal((B, K, N)).astype(np.float32)
    if la == "bcast":
        a[:] = a[0]
    if lb == "bcast":
        b[:] = b[0]
    out = heap.empty((B, M, N))
    ins = (_operand(heap, a, la, pad), _operand(heap, b, lb, pad))
    rt.run("matmul", out, ins, {})
    want = a.astype(np.float64) @ b.astype(np.float64)
    got = rt.read(out)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * max(1, K) ** 0.5)
    if bias:    # matmul_bias, the bias read with stride 2: the bits of matmul then add
        bvals = rng.standard_normal(N).astype(np.float32)
        bv = heap.put(np.stack([bvals, np.zeros(N, np.float32)], 1).ravel())
        biased = heap.empty((B, M, N))
        rt.run("matmul_bias", biased, ins + (View(bv.block, 0, (N,), (2,), "f32"),), {})
        np.testing.assert_array_equal(rt.read(biased), got + bvals)


@pytest.mark.parametrize("tile", sorted(matmul.CONFIGS))
def test_every_tile_on_edges_and_layouts(rt, heap, monkeypatch, tile):
    monkeypatch.setenv(matmul.ENV_TILE, tile)
    _check(rt, heap, 1, 67, 21, 70, "row", "row", bias=True)    # M, N, K all ragged
    _check(rt, heap, 2, 33, 40, 36, "col", "col", pad=1, bias=True)   # transposed, unaligned
    _check(rt, heap, 1, 16, 32, 132, "row", "col")


@pytest.mark.parametrize("la,lb", [("row", "row"), ("row", "col"), ("col", "row"), ("col", "col"),
                                   ("bcast", "row"), ("row", "bcast")])
def test_auto_tile_layouts(rt, heap, la, lb):
    _check(rt, heap, 3, 9, 12, 20, la, lb)


@pytest.mark.parametrize("shape", [(1, 1, 1, 1), (1, 1, 7, 1), (1, 5, 1, 3), (2, 1, 9, 4),
                                   (1, 3, 5, 2), (1, 129, 3, 1)])
def test_degenerate_shapes(rt, heap, shape):
    _check(rt, heap, *shape)


def test_zero_k_gives_zeros(rt, heap):
    out = heap.put(np.full((1, 3, 4), 7.0))
    a = View(heap.empty((1,)).block, 0, (1, 3, 0), (0, 0, 1), "f32")
    b = View(heap.empty((1,)).block, 0, (1, 0, 4), (0, 4, 1), "f32")
    rt.run("matmul", out, (a, b), {})
    np.testing.assert_array_equal(rt.read(out), np.zeros((1, 3, 4), np.float32))
    bias = heap.put(np.arange(4.0))       # matmul_bias: every row is the bias
    rt.run("matmul_bias", out, (a, b, bias), {})
    rows = np.tile(np.arange(4.0, dtype=np.float32), (1, 3, 1))
    np.testing.assert_array_equal(rt.read(out), rows)


def test_split_k_for_skinny_products(rt, heap):
    # few output tiles, long K: the split-K path (partials + fixed-order sum)
    S, kc = matmul.split_k(1, 8 * 12, 1024, 16)
    assert S > 1 and kc % 16 == 0 and S * kc >= 1024
    _check(rt, heap, 1, 8, 1024, 12, "col", "row", tol=2e-4, bias=True)
    _check(rt, heap, 1, 12, 700, 5, "row", "col", tol=2e-4, bias=True)


def test_split_k_is_deterministic(rt, heap):
    rng = np.random.default_rng(3)
    a = heap.put(rng.standard_normal((1, 4, 2048)))
    b = heap.put(rng.standard_normal((1, 2048, 4)))
    outs = []
    for _ in range(2):
        out = heap.empty((1, 4, 4))
        rt.run("matmul", out, (a, b), {})
        outs.append(rt.read(out))
    np.testing.assert_array_equal(outs[0], outs[1])


def test_tile_choice_follows_problem_size():
    assert matmul.choose_tile(1, 4096, 4096, 4096, 48 << 10) == "128x64x16"
    assert matmul.choose_tile(1, 1024, 1024, 1024, 48 << 10) == "64x64x8"
    assert matmul.choose_tile(1, 32, 27, 200, 48 << 10) == "32x32x16"
    for name, (bm, bn, bk, tm, tn) in matmul.CONFIGS.items():
        t = (bm // tm) * (bn // tn)
        assert (bm * bk // 4) % t == 0 and (bk * bn // 4) % t == 0, name
