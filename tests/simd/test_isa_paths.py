"""Every instruction-set path gives the same results: the probe runs in a subprocess per
path (TORCHIC_SIMD_SCALAR=1 forces scalar; TORCHIC_SIMD_ISA picks avx2 / avx512f)."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from torchic.testing import kernel_cases

PROBE = Path(__file__).with_name("probe.py")
# results that involve no rounding: equal on every path (the rest within 2e-5)
EXACT = ("argmax", "gather", "neg", "relu", "abs", "where", "maximum", "minimum")
COMPARE = kernel_cases("compare")


def run_probe(tmp_path, name, **env):
    out = tmp_path / f"{name}.npz"
    full = {k: v for k, v in os.environ.items() if not k.startswith("TORCHIC_SIMD_")}
    full.update(env)
    subprocess.run([sys.executable, str(PROBE), str(out)], check=True, env=full, timeout=120)
    return dict(np.load(out))


def test_scalar_path_matches_simd_path(simd_ok, tmp_path):
    from torchic.backends.simd import describe_isa
    best = run_probe(tmp_path, "best")
    assert str(best["isa"]) == describe_isa()
    paths = {"scalar": run_probe(tmp_path, "scalar", TORCHIC_SIMD_SCALAR="1")}
    assert str(paths["scalar"]["isa"]) == "scalar"
    if describe_isa() == "avx512f":
        paths["avx2+fma"] = run_probe(tmp_path, "avx2", TORCHIC_SIMD_ISA="avx2")
        assert str(paths["avx2+fma"]["isa"]) == "avx2+fma"
    for name, res in paths.items():
        for key, want in best.items():
            if key == "isa":
                continue
            got = res[key]
            if key in EXACT or key in COMPARE:
                np.testing.assert_array_equal(got, want, err_msg=f"{name}: {key}")
            else:
                np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5, err_msg=f"{name}: {key}")
        np.testing.assert_allclose(res["matmul"], res["matmul_ref"], rtol=1e-5, atol=1e-4)


def test_every_primitive_op_is_a_rust_kernel(simd_ok):
    from torchic import ops
    from torchic.backends.simd import KERNEL_TABLE, SimdBackend, describe_isa, native
    names = native.load().op_names()
    assert len(names) == len(set(names)) and set(names) == set(ops.ALL_OPS)
    assert set(KERNEL_TABLE) == set(ops.ALL_OPS)
    for name, code in KERNEL_TABLE.items():      # codes are the library's, found by name
        assert names[code] == name
    assert describe_isa() in ("avx512f", "avx2+fma", "neon", "scalar")
    assert SimdBackend.available() == (True, "")


class _FakeLib:
    path = "fake.so"

    def __init__(self, names):
        self.names = names

    def op_names(self):
        return self.names

    def op_fuses(self, code):    # (as the rows say: the library's check passes)
        from torchic import ops
        fuse = ops.FUSE[self.names[code]]
        return 1 if fuse == ops.STAGE else 2 if fuse == ops.APART else 0

    def op_writes(self, code):   # (as the rows say)
        from torchic import ops
        return sum(1 << k for k in ops.BY_NAME[self.names[code]].writes)


def test_library_op_codes_are_looked_up_by_name(monkeypatch):
    """The Python side asks the library for its op names: a library listing the same ops
    in another order gets the right codes; one missing or adding an op is refused."""
    from torchic import ops
    from torchic.backends import simd
    monkeypatch.setattr(simd, "KERNEL_TABLE", dict.fromkeys(ops.ALL_OPS))
    shuffled = list(reversed(ops.ALL_OPS))
    assert simd._check_table(_FakeLib(shuffled)) == ""
    assert all(shuffled[simd.KERNEL_TABLE[n]] == n for n in ops.ALL_OPS)
    why = simd._check_table(_FakeLib([n for n in ops.ALL_OPS if n != "exp"] + ["sinh"]))
    assert "missing ['exp']" in why and "unknown ['sinh']" in why and "rebuild" in why
    assert "listed twice ['add']" in simd._check_table(_FakeLib(list(ops.ALL_OPS) + ["add"]))
