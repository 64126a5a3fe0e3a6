"""simd matmul's blocking is derived from the CPU it runs on (kernels/src/cpuinfo.rs +
matmul.rs `Blocking::derive`): the library reports what it chose and the caches it read
(`describe_platform()["matmul"]`), the rule is re-derived here from those caches, and
products on both sides of every derived block edge are checked against NumPy float64."""

import os

import numpy as np
import pytest

from torchic.backends.simd import SimdBackend, describe_isa
from torchic.bench.machine import matmul_tuning_text

KEYS = {"isa", "cache_source", "l1d", "l2", "l3", "mr", "nr", "kc", "ncb", "mca",
        "small_bytes", "par_min_macs", "handoff_cycles", "min_part", "part_fma_cycles", "kc_min"}
LANES = {"avx512f": 16, "avx2+fma": 8, "neon": 4, "scalar": 1}


@pytest.fixture(scope="module")
def tuning(simd_ok):
    t = SimdBackend.describe_platform()["matmul"]
    assert t, "the library does not export tk_describe: rebuild it"
    return t


def _fit(v, m, lo, hi):
    return min(max(v // m * m, lo), hi)


def derive(t):
    """kernels/src/matmul.rs Blocking::derive, written again from its doc comment."""
    mr, nr, l1, l2c = t["mr"], t["nr"], t["l1d"], t["l2"]
    way = l1["size"] // l1["ways"]
    free = max(l1["ways"], 2) - 1
    kc = min(max(free * nr // (mr + nr), 1) * way // (nr * 4), free * way // ((mr + nr) * 4))
    kc = _fit(kc, 16, t["kc_min"], 1024)
    l2 = l2c["size"] // l2c["shared_by"]
    ncb = _fit(l2 // 2 // (kc * 4), nr, 2 * nr, 4096 // nr * nr)
    l3 = t["l3"]["size"] if t["l3"] else 8 * l2
    mca = _fit(l3 // 2 // (kc * 4), mr, 8 * mr, 4096 // mr * mr)
    return {"kc": kc, "ncb": ncb, "mca": mca, "small_bytes": l1["size"] // 2,
            "par_min_macs": t["handoff_cycles"] * 2 * (nr // 2),
            "min_part": t["part_fma_cycles"] * 2 * (nr // 2)}


def _sysfs_cache(level, kind):
    base = "/sys/devices/system/cpu/cpu0/cache"
    for entry in sorted(os.listdir(base)) if os.path.isdir(base) else []:
        def read(f, entry=entry):
            with open(f"{base}/{entry}/{f}") as fh:
                return fh.read().strip()
        if read("level") == str(level) and read("type") in kind:
            size = read("size")
            return int(size[:-1]) << {"K": 10, "M": 20}[size[-1]] if size[-1] in "KM" else int(size)
    return None


def test_reported_blocking_is_the_rule_applied_to_the_reported_caches(tuning):
    assert set(tuning) == KEYS
    assert tuning["isa"] == describe_isa()
    assert tuning["nr"] == 2 * LANES[tuning["isa"]]
    assert {k: tuning[k] for k in derive(tuning)} == derive(tuning)
    l1, l2, l3 = tuning["l1d"], tuning["l2"], tuning["l3"]
    assert 4 << 10 <= l1["size"] <= l2["size"] and (l3 is None or l3["size"] >= l2["size"])
    assert tuning["cache_source"].split("+")[0] in ("cpuid", "sysfs", "defaults")
    if tuning["cache_source"] == "sysfs":
        assert l1["size"] == _sysfs_cache(1, ("Data",))
        assert l2["size"] == _sysfs_cache(2, ("Unified", "Data"))
    # the bench header prints the figures that decided it
    text = matmul_tuning_text(tuning)
    for part in (f"KC {tuning['kc']}", f"NCB {tuning['ncb']}", f"MCA {tuning['mca']}",
                 f"tile {tuning['mr']}x{tuning['nr']}", f"parts of >= {tuning['min_part']}"):
        assert part in text


def _check(h, m, k, n, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((1, m, k)).astype(np.float32)
    b = rng.standard_normal((1, k, n)).astype(np.float32)
    got = h.run("matmul", h.empty((1, m, n)), h.put(a), h.put(b))
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.sqrt(k),
                               err_msg=f"{m}x{k} @ {k}x{n}")


def test_products_on_both_sides_of_each_derived_block_edge(h, tuning):
    mr, nr, kc, ncb, mca = (tuning[k] for k in ("mr", "nr", "kc", "ncb", "mca"))
    side = int(np.sqrt(tuning["small_bytes"] / 12))      # 3 side^2 floats: the direct loop's edge
    cases = [(side, side, side), (side + 1, side + 1, side + 1),
             (2 * mr + 1, kc - 1, nr + 3), (2 * mr, kc, 2 * nr), (mr + 1, kc + 1, nr - 1),
             (3 * mr, 2 * kc + 5, 3 * nr + 1),
             (mr + 2, 40, ncb - 1), (2 * mr - 1, 40, ncb + nr + 1), (300, 70, 2 * ncb + 3),
             (mca + mr + 1, 9, 2 * nr + 1)]
    for i, (m, k, n) in enumerate(cases):
        _check(h, m, k, n, seed=i)


def test_products_around_the_thread_split_threshold(h, tuning):
    # rt runs 2 threads: just below the threshold one task, above it a cut along M or N
    per = tuning["par_min_macs"]
    for i, (m, n) in enumerate([(37, 41), (41, 37), (5, 700), (700, 5)]):
        for total in (2 * per - m * n, 2 * per + m * n):
            _check(h, m, max(1, total // (m * n)), n, seed=10 + i)


def test_products_cut_into_column_parts_that_read_a_in_place(h, tuning):
    # rt runs 2 threads: a row-major A and N > 256 cut into parts <= 256 wide, each reading
    # A's rows in place, with an edge part; M not in whole micro-panels: row parts instead
    mr, per = tuning["mr"], tuning["par_min_macs"]
    for i, (m, n) in enumerate([(8 * mr, 700), (8 * mr + 3, 520), (4 * mr, 257)]):
        k = max(64, -(-4 * per // (m * n)))
        _check(h, m, k, n, seed=20 + i)
