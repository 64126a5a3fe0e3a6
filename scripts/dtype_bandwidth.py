#!/usr/bin/env python3
"""Elementwise bytes per second of the simd backend per dtype at one output size (issue 40's
"bool / int64 / float64 elementwise at the memory bandwidth float32 reaches"): neg, a copy
and add over the same number of BYTES in every dtype (so each is as far past the caches),
best of 15 calls, one thread, timed to a sync; bytes = input(s) read + output written.

    PYTHONPATH=src python scripts/dtype_bandwidth.py            # 64 MiB an operand
    PYTHONPATH=src python scripts/dtype_bandwidth.py --mib 16
"""

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))
import torchic as tc  # noqa: E402

OPS = {"neg": (lambda x: -x, 2), "copy": (lambda x: x.clone(), 2), "add": (lambda x: x + x, 3)}


def bandwidth(dtype, nbytes, op, moves, repeat=15):
    x = tc.ones(nbytes // tc.empty(0, dtype=dtype).element_size(), dtype=dtype)
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        y = op(x)
        tc.sync()
        best = min(best, time.perf_counter() - t)
        del y
    return moves * nbytes / best / 1e9


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mib", type=int, default=64, help="bytes of one operand, in MiB")
    args = ap.parse_args()
    tc.init("simd", threads=1)
    dtypes = (tc.float32, tc.float64, tc.int64, tc.int32, tc.bool)
    print("| op | " + " | ".join(str(d).split(".")[1] for d in dtypes) + " |")
    print("|---" * (len(dtypes) + 1) + "|")
    for name, (op, moves) in OPS.items():
        cells = []
        for d in dtypes:
            if d == tc.bool and name != "copy":
                cells.append("")       # (no neg / add of bools in PyTorch)
                continue
            cells.append(f"{bandwidth(d, args.mib << 20, op, moves):.1f}")
        print(f"| {name} | " + " | ".join(cells) + " |")
    print(f"(GB/s, {args.mib} MiB an operand, 1 thread, best of 15)")


if __name__ == "__main__":
    main()
