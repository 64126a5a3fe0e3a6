"""matmul: every tile with the vec4 load modes (v4: along the output's dims, t4: along K for
B / along M for A, transposed in registers), the unchecked compile, and the tuner's table."""

from types import SimpleNamespace

import numpy as np
import pytest

from torchic.backends.webgpu import matmul, matmul_table
from torchic.dispatcher import View


def _operand(heap, x, layout, pad):
    """x (B, R, C) as 'row' (contiguous), 'col' (each matrix transposed in memory) or
    'bcol' (one transposed matrix broadcast over the batch: batch stride 0)."""
    B, R, C = x.shape
    if layout == "bcol":
        x = x[:1]
    mem = np.ascontiguousarray(x.transpose(0, 2, 1) if layout != "row" else x)
    v = heap.put(np.concatenate([np.zeros(pad, np.float32), mem.ravel()]))
    strides = {"row": (R * C, C, 1), "col": (R * C, 1, R), "bcol": (0, 1, R)}[layout]
    return View(v.block, pad, (B, R, C), strides, "f32")


def _check(rt, heap, B, M, K, N, la, lb, pad=0, tol=1e-4):
    """Run one matmul against NumPy float64; -> the (A mode, B mode) of the program it used."""
    rng = np.random.default_rng(M * 1000 + K * 10 + N)
    a = rng.standard_normal((B, M, K)).astype(np.float32)
    b = rng.standard_normal((B, K, N)).astype(np.float32)
    if la == "bcol":
        a[:] = a[0]
    if lb == "bcol":
        b[:] = b[0]
    out = heap.empty((B, M, N))
    gpu = rt.backend.gpu
    before = set(gpu.pipelines)
    rt.run("matmul", out, (_operand(heap, a, la, pad), _operand(heap, b, lb, pad)), {})
    got = rt.read(out)
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * max(1, K) ** 0.5)
    keys = [k for k in gpu.pipelines if k[0] == "matmul" and k not in before]
    return {k[2:4] for k in keys}


@pytest.mark.parametrize("tile", sorted(matmul.CONFIGS))
def test_every_tile_with_vec4_load_modes(rt, heap, monkeypatch, tile):
    monkeypatch.setenv(matmul.ENV_TILE, tile)
    # both operands K-major in memory, M, N and K ragged against every tile
    assert _check(rt, heap, 1, 68, 20, 70, "col", "col") == {("t4", "t4")}
    # no edges at all (every tile divides 128 x 128 x 32)
    assert _check(rt, heap, 1, 128, 32, 128, "col", "col") == {("t4", "t4")}
    # batched, at an aligned offset: A transposed with B row-major, and the reverse
    assert _check(rt, heap, 2, 64, 32, 36, "col", "row", pad=4) == {("t4", "v4")}
    assert _check(rt, heap, 2, 36, 24, 64, "row", "col", pad=4) == {("v4", "t4")}


def test_vec4_modes_are_chosen_only_when_aligned(rt, heap, monkeypatch):
    monkeypatch.setenv(matmul.ENV_TILE, "64x64x8")
    assert _check(rt, heap, 1, 12, 8, 16, "col", "col") == {("t4", "t4")}
    # an offset of 1 element: scalar loads for both
    modes = _check(rt, heap, 1, 12, 8, 16, "col", "col", pad=1)
    assert modes and not {m for pair in modes for m in pair} & {"t4", "v4"}
    # M (for A) / K (for B) not a multiple of 4: no t4
    assert _check(rt, heap, 1, 10, 8, 16, "col", "row") == {("sm", "v4")}
    assert _check(rt, heap, 1, 12, 6, 16, "row", "col") == {("sk", "sk")}


def test_broadcast_transposed_operands(rt, heap):
    assert _check(rt, heap, 3, 20, 12, 24, "bcol", "row") == {("t4", "v4")}
    assert _check(rt, heap, 3, 20, 12, 24, "row", "bcol") == {("v4", "t4")}


def test_a_transposed_b_is_copied_row_major_where_the_product_pays_for_it(rt, heap, monkeypatch):
    # B^T against >= RELAYOUT_MIN rows of A in all (a weight against a batch of rows): a
    # tiled transpose into scratch, then v4 loads; ragged edges, an offset, a batch, and a
    # B broadcast over the batch (copied once)
    many = matmul.RELAYOUT_MIN
    assert _check(rt, heap, 1, many, 20, 36, "row", "col") == {("v4", "v4")}
    assert ("matmul-relayout",) in rt.backend.gpu.pipelines
    assert _check(rt, heap, 2, many + 6, 36, 44, "row", "col", pad=4) == {("v4", "v4")}
    # (each case with other edges than those before it: _check sees newly compiled programs)
    assert _check(rt, heap, 4, many // 4, 16, 24, "row", "bcol") == {("v4", "v4")}
    # fewer rows: the t4 loads as before; and the switch for benchmarks
    assert _check(rt, heap, 4, many // 8, 12, 24, "row", "col") == {("v4", "t4")}
    monkeypatch.setenv(matmul.ENV_RELAYOUT, "0")
    assert _check(rt, heap, 1, many, 16, 36, "row", "col") == {("v4", "t4")}


@pytest.mark.parametrize("B,B2,R,C", [(1, 1, 64, 64), (1, 1, 68, 132), (6, 3, 20, 72),
                                       (2, 1, 4, 200), (1, 1, 260, 8), (1, 1, 7, 33)])
def test_relayout_copies_unit_stride_columns_row_major(rt, heap, B, B2, R, C):
    # the copy's tiles against ragged edges, two batch strides and an offset: element (b, r,
    # c) of a source laid out (B / B2, B2, C, R) lands at row-major (b, r, c)
    rng = np.random.default_rng(R * C + B)
    x = rng.standard_normal((B // B2, B2, C, R)).astype(np.float32)
    v = heap.put(np.concatenate([np.zeros(8, np.float32), x.ravel()]))
    gpu = rt.backend.gpu
    buf, base = rt.backend.buffers(View(v.block, 8, (1,), (1,), "f32"))
    scratch = matmul._row_major(gpu, "test-relayout", buf, base, B, B2, R, C,
                                B2 * C * R, C * R, R)
    got = np.frombuffer(gpu.read(scratch, 0, B * R * C * 4), np.float32)
    want = x.reshape(B, C, R).transpose(0, 2, 1)
    np.testing.assert_array_equal(got.reshape(B, R, C), want)


def test_split_k_with_transposed_vec4_operands(rt, heap):
    # few output tiles, long K: partial products per K range, then the fixed-order sum
    assert matmul.split_k(1, 8 * 12, 1024, 16)[0] > 1
    assert _check(rt, heap, 1, 8, 1024, 12, "col", "col", tol=2e-4) == {("t4", "t4")}
    assert ("matmul-splitsum",) in rt.backend.gpu.pipelines


def test_unchecked_compile_matches_the_checked_one(rt, heap, monkeypatch):
    # the same WGSL without wgpu's bounds checks (the default) and with them (CHECKS=1): same bits
    rng = np.random.default_rng(5)
    a = heap.put(rng.standard_normal((2, 33, 20)))
    b = _operand(heap, rng.standard_normal((2, 20, 18)).astype(np.float32), "col", 0)
    outs = []
    for checks in ("0", "1"):
        monkeypatch.setenv(matmul.ENV_CHECKS, checks)
        out = heap.empty((2, 33, 18))
        rt.run("matmul", out, (a, b), {})
        outs.append(rt.read(out))
    np.testing.assert_array_equal(outs[0], outs[1])
    keys = [k for k in rt.backend.gpu.pipelines if k[0] == "matmul"]
    assert any(k[-1] == "checked" for k in keys) and any(k[-1] != "checked" for k in keys)


def test_shape_classes():
    assert matmul.shape_class(1, 4096, 4096, 4096) == "o24k12"
    assert matmul.shape_class(1, 2048, 2048, 2048) == "o22k11"
    assert matmul.shape_class(384, 256, 256, 64) == "o25k6"
    assert matmul.shape_class(384, 256, 64, 256) == "o23k8"
    assert matmul.shape_class(1, 8, 12, 1024) == "o12k10t"
    assert matmul.shape_class(1, 1, 1, 1) == "o12k4t"


def test_tuned_table_picks_first_and_ladder_is_the_general_path(monkeypatch):
    big = 48 << 10
    table = {"o24k12": "128x128x16-8x16", "o20k10": "64x64x16-8x8"}
    assert matmul.choose_tile(1, 4096, 4096, 4096, big, table) == "128x128x16-8x16"
    assert matmul.choose_tile(1, 1024, 1024, 1024, big, table) == "64x64x16-8x8"
    # a class the table lacks, or a tile over the adapter's workgroup memory: the ladder
    assert matmul.choose_tile(1, 2048, 2048, 2048, big, table) == "128x64x16"
    assert matmul.smem_bytes("128x128x16-8x16") > 16 << 10
    assert matmul.choose_tile(1, 4096, 4096, 4096, 16 << 10, table) == "64x64x8"
    # the environment variable wins over both
    monkeypatch.setenv(matmul.ENV_TILE, "32x32x16")
    assert matmul.choose_tile(1, 4096, 4096, 4096, big, table) == "32x32x16"


def test_committed_table_names_known_tiles():
    for adapter, rows in matmul_table.TABLE.items():
        assert adapter == matmul.adapter_key({"device": adapter})
        for cls, row in rows.items():
            tile, target = row if isinstance(row, tuple) else (row, None)
            assert tile in matmul.CONFIGS, (adapter, cls, tile)
            assert target is None or (isinstance(target, int) and target >= 0), (cls, row)


def test_a_table_row_with_its_own_split_target(monkeypatch):
    big = 48 << 10
    table = {"o22k11": ("128x128x16-8x16", 0), "o24k12": "128x128x16-8x16"}
    assert matmul.choose_tile_and_split(1, 2048, 2048, 2048, big, table) == \
        ("128x128x16-8x16", 0)
    assert matmul.choose_tile(1, 2048, 2048, 2048, big, table) == "128x128x16-8x16"
    assert matmul.choose_tile_and_split(1, 4096, 4096, 4096, big, table) == \
        ("128x128x16-8x16", None)
    # 256 workgroups of K 2048: the default target splits K in 2, the row's 0 never does
    assert matmul.split_k(256, 2048 * 2048, 2048, 16) == (2, 1024)
    assert matmul.split_k(256, 2048 * 2048, 2048, 16, 0) == (1, 2048)
    # the environment variable (benchmarks) wins over the row's target
    monkeypatch.setenv(matmul.ENV_SPLIT, "528")
    assert matmul.split_k(256, 2048 * 2048, 2048, 16, 0) == (2, 1024)


def test_adapter_key_and_table_lookup(rt):
    assert matmul.adapter_key({"device": "NVIDIA  H200"}) == "nvidia h200"
    gpu = rt.backend.gpu
    key = matmul.adapter_key(gpu.adapter_info)
    want = next((t for name, t in matmul_table.TABLE.items() if name in key), {})
    assert matmul.tuned_table(gpu) == want


def test_every_config_divides_its_loads():
    for name, (bm, bn, bk, tm, tn) in matmul.CONFIGS.items():
        t = (bm // tm) * (bn // tn)
        assert t <= 256 and tn % 4 == 0 and bk % 4 == 0, name
        assert (bm * bk // 4) % t == 0 and (bk * bn // 4) % t == 0, name


@pytest.mark.parametrize("tile", ["64x64x16-8x8-km", "64x64x16-8x8-km-p",
                                  "64x64x16-8x8-km-p-sb", "64x128x16-sb",
                                  "128x128x16-8x16-km-p-sb"])
def test_km_tiles_split_k_broadcast_and_scalar_modes(rt, heap, monkeypatch, tile):
    # A's slice stored transposed (km): each A load mode (v4 4x4 blocks, t4 direct, sm / sk
    # scalar) against NumPy float64, with a broadcast operand, an offset and split-K
    monkeypatch.setenv(matmul.ENV_TILE, tile)
    assert _check(rt, heap, 3, 20, 12, 24, "bcol", "row") == {("t4", "v4")}
    assert _check(rt, heap, 3, 24, 12, 20, "row", "bcol", pad=4) == {("v4", "t4")}
    assert _check(rt, heap, 1, 10, 8, 16, "col", "row") == {("sm", "v4")}
    assert _check(rt, heap, 1, 12, 6, 16, "row", "col") == {("sk", "sk")}
    assert _check(rt, heap, 1, 8, 1024, 12, "col", "col", tol=2e-4) == {("t4", "t4")}


def test_single_buffer_tiles_hold_one_slice_in_workgroup_memory():
    for name in ("64x64x16-8x8-km-p", "128x64x16-km-p"):
        assert matmul.smem_bytes(name + "-sb") * 2 == matmul.smem_bytes(name)
        src, _ = matmul._build(matmul.CONFIGS[name], "t4", "v4", "v4", False, False, False,
                               True, True, single=True)
        bm, bn, bk = matmul.CONFIGS[name][:3]
        assert f"As: array<vec4<f32>, {bm * bk // 4}>" in src
        assert f"Bs: array<vec4<f32>, {bk * bn // 4}>" in src
        # the store into the one buffer waits for every read of the slice before it
        assert src.count("workgroupBarrier()") == 3


def test_table_key_with_modes_is_looked_up_before_the_class():
    big = 48 << 10
    assert matmul.table_key(384, 256, 64, 256, "t4v4") == "o23k8/t4v4"
    table = {"o23k8/t4v4": "128x64x16-km", "o23k8": "128x64x16"}
    assert matmul.choose_tile(384, 256, 64, 256, big, table, "t4v4") == "128x64x16-km"
    assert matmul.choose_tile(384, 256, 64, 256, big, table, "v4v4") == "128x64x16"
    assert matmul.choose_tile(384, 256, 64, 256, big, table) == "128x64x16"
    assert matmul.a_km("128x64x16-km") and matmul.a_km("128x64x16-km-p")
    assert not matmul.a_km("128x64x16")


def test_slice_relations_of_the_load_modes():
    # the workgroup layouts As[m][k/4] (km: As[k][m/4]) and Bs[k][n/4] against each mode:
    # a vec4 load along the stored vec4 ("same"), along the other dim (4x4 blocks, "cross"),
    # or scalar loads
    m, n = matmul.Dim("m", 64, "sm", False, "M", "m0"), matmul.Dim("n", 64, "sn", False, "N")
    k = matmul.Dim("k", 16, "sk", False, "K")
    a, a_km, b = (m, k), (k, m), (k, n)
    want = {("A", a, "v4"): "same", ("A", a, "t4"): "cross", ("A", a_km, "v4"): "cross",
            ("A", a_km, "t4"): "same", ("B", b, "v4"): "same", ("B", b, "t4"): "cross",
            ("A", a, "sk"): "scalar", ("B", b, "sn"): "scalar"}
    for (name, (outer, inner), mode), relation in want.items():
        s = matmul.Slice(name, outer, inner, mode, 128)
        assert s.relation == relation, (name, outer.letter, mode)
        # 4x4 blocks: a quarter as many loads an invocation, each of four vec4s
        assert s.loads == (64 * 16 // 4 // 128 if relation != "cross" else 1)
        assert s.k is k and s.free is (inner if outer is k else outer)


def test_a_copied_transposed_for_km_tiles(rt, heap, monkeypatch):
    # an A unit-stride along K against >= RELAYOUT_A_MIN columns in all, where the tile for
    # the copied layout is a km tile (the table's, here the forced one), is copied
    # transposed, then loaded t4 (direct into As[k][m/4]); ragged edges, an offset, a batch
    monkeypatch.setenv(matmul.ENV_TILE, "64x64x16-8x8-km-p")
    many = matmul.RELAYOUT_A_MIN
    assert _check(rt, heap, 1, 20, 36, many, "row", "row") == {("t4", "v4")}
    assert _check(rt, heap, 2, 36, 44, many + 4, "row", "row", pad=4) == {("t4", "v4")}
    # fewer columns, or the switch off: no copy
    assert _check(rt, heap, 1, 20, 36, 64, "row", "row") == {("v4", "v4")}
    monkeypatch.setenv(matmul.ENV_RELAYOUT_A, "0")
    assert _check(rt, heap, 1, 24, 36, many + 4, "row", "row") == {("v4", "v4")}
    # a tile that keeps A as As[m][k/4]: no copy
    monkeypatch.setenv(matmul.ENV_RELAYOUT_A, "auto")
    monkeypatch.setenv(matmul.ENV_TILE, "64x64x16-8x8")
    assert _check(rt, heap, 1, 28, 36, many, "row", "row") == {("v4", "v4")}


def test_the_adapters_tile_for_load_modes_comes_between_class_rows():
    # "*/" + modes: the tile for those load modes in a class the table lacks; a class row
    # with the modes still wins, and problems with other modes still take the class row
    big = 48 << 10
    table = {"o23k8/t4v4": "128x64x16-km", "*/t4v4": "64x64x16-8x8-km-p", "o23k8": "128x64x16",
             "o22k11": "64x128x16"}
    assert matmul.choose_tile(384, 256, 64, 256, big, table, "t4v4") == "128x64x16-km"
    assert matmul.choose_tile(1, 2048, 2048, 2048, big, table, "t4v4") == "64x64x16-8x8-km-p"
    assert matmul.choose_tile(1, 2048, 2048, 2048, big, table, "v4v4") == "64x128x16"
    assert matmul.choose_tile(1, 4096, 4096, 4096, big, table, "v4v4") == "128x64x16"


def test_h200_rows_take_a_km_tile_for_a_transposed_a():
    # (the H200's table: A^T against a row-major B takes a km tile in every class, so a
    # row-major A against many columns is copied transposed there)
    table, big = matmul_table.TABLE["nvidia h200"], 48 << 10
    for B, M, N, K in ((1, 2048, 2048, 4096), (1, 4096, 2048, 2048), (1, 3000, 700, 900),
                       (1, 4096, 4096, 4096), (1, 2048, 2048, 2048)):
        assert matmul.a_km(matmul.choose_tile(B, M, N, K, big, table, "t4v4")), (M, N, K)


def test_an_h100_takes_the_h200s_rows_until_tuned():
    def gpu(name):
        return SimpleNamespace(adapter_info={"device": name, "description": ""})
    h200 = matmul.tuned_table(gpu("NVIDIA H200"))
    assert h200 and matmul.tuned_table(gpu("NVIDIA H100 80GB HBM3")) is h200
    # an H100 of another SM count (PCIe: 114) keeps the ladder
    assert matmul.tuned_table(gpu("NVIDIA H100 PCIe")) == {}
