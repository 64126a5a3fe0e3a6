"""ULP distance of float32 results from a float64 reference (the simd math tests).

Its own module, not conftest.py: `from conftest import` picks whichever conftest pytest
imported first when several test folders are collected together.
"""

import numpy as np


def ulp_error(got, want64):
    """|got - want| in units of the float32 spacing at want (float32 subnormal spacing floor)."""
    got = np.asarray(got, np.float64)
    np.seterr(all="ignore")
    w32 = want64.astype(np.float32)
    spacing = np.spacing(np.abs(w32)).astype(np.float64)
    spacing = np.maximum(spacing, np.float64(np.finfo(np.float32).smallest_subnormal))
    err = np.abs(got - want64) / spacing
    same = (got == w32) | (np.isnan(got) & np.isnan(want64))
    inf = np.isinf(w32)
    err = np.where(same, 0.0, err)
    err = np.where(inf & ~same, np.inf, err)
    return err
