"""Where should the workers backend start cutting an op across worker threads?

Times (a * b).tanh() at several sizes with threads=1 and threads=2; run it with
TORCHIC_SPLIT_MIN=<n> to compare thresholds:

    TORCHIC_SPLIT_MIN=1000000000 python scripts/measure_split_threshold.py   # never split
    TORCHIC_SPLIT_MIN=16384 python scripts/measure_split_threshold.py
"""
import time

import numpy as np

import torchic

res = {}
for thr in (1, 2):
    torchic.init("workers", threads=thr)
    for n in (4096, 16384, 65536, 262144, 1048576):
        a = torchic.randn(n // 256, 256); b = torchic.randn(n // 256, 256)
        for _ in range(5): (a * b).tanh()
        torchic.sync()
        ts = []
        for _ in range(30):
            t0 = time.perf_counter()
            for _ in range(10): c = (a * b).tanh()
            torchic.sync(); ts.append((time.perf_counter() - t0) / 20)
        res[(thr, n)] = np.median(ts) * 1e6
for n in (4096, 16384, 65536, 262144, 1048576):
    print(f"{n:8d} elements: 1 thread {res[(1,n)]:8.1f} us/op   2 threads {res[(2,n)]:8.1f} us/op")
