"""The matmul tuner's table: per adapter, the fastest tile for each shape class.

Keys: a lower-case substring of the adapter's name (matmul.adapter_key), then
matmul.shape_class(B, M, N, K) (log2 buckets of the output size and of K, "t" for an
output side under 64). A class missing here takes matmul's general ladder. Measured with
`scripts/gpu_bench.py --tune`, which prints the rows to paste here (docs/perf/webgpu.md).
"""

TABLE = {
}
