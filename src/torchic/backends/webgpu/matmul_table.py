"""The matmul tuner's table: per adapter, the fastest tile for each shape class.

A row is a tile name, or (tile, split-K workgroup target) where the tile was measured best
with its own target (0: never split; matmul.split_k). Keys: a lower-case substring of the
adapter's name (matmul.adapter_key), then matmul.shape_class(B, M, N, K) (log2 buckets of the output size and of K, "t" for an
output side under 64), with "/" and the operands' load modes (matmul.table_key) when the
row holds for those modes only; "*/" + modes is the adapter's tile for those modes in a
class the table lacks. A class missing here takes matmul's general ladder. Measured with
`scripts/gpu_bench.py --tune`, which prints the rows to paste here (docs/perf/webgpu.md).
"""

TABLE = {
    # NVIDIA H200 (Vulkan), wgpu 0.32, 2026-12-01: scripts/gpu_bench.py --tune
    'nvidia h200': {
        # 2-D weight gradients x^T @ dy over K = 16384 (C 384; the GPT step's qkv and proj
        # Linear layers): 2026-12-02 the ladder's 32x32x16 made 11.4 / 14.1 TFLOPS,
        # 128x128x16 / 128x64x16 (split-K) 28.1 / 29.3; 2026-12-03 km-p (torch 47.2 / 46.0):
        'o19k14/t4v4': '128x128x16-8x16-km-p-sb',  # (C,BT)^@(BT,3C): 29.5 -> 42.4 -> 45.4
        'o18k14/t4v4': '64x64x16-8x8-km-p-sb',  # (C,BT)^@(BT,C): 29.2 -> 39.5; -sb 39.0 -> 40.2
        # 2026-12-02, A^T (t4) against row-major B: km tiles (A's slice stored transposed,
        # pipelined), TFLOPS before -> after (torch): gpu_bench.py --a-transposed --tiles ...
        'o23k8/t4v4': '64x64x16-8x8-km-p-sb',  # att p^T@dy: 28.2 -> 41.0 (36.3); -sb 43.1
        'o20k14/t4v4': '128x128x16-8x16-km-p-sb',  # mlp x^T@dy: 27.2 -> 38.5 -> 45.1 (48.6)
        'o25k8/t4v4': '64x128x16-km-p',  # gpt dW qkv (B,C,T)^@(B,T,3C): 31.5 -> 43.5 (44.5)
        'o26k8/t4v4': '64x128x16-km-p',  # gpt dW fc / fc2: 31.9 -> 44.1 / 44.0 (46.3)
        'o24k8/t4v4': '64x128x16-km-p',  # gpt dW proj (B,C,T)^@(B,T,C): 28.3 -> 38.6 (38.3)
        # row-major A copied transposed for these (matmul.RELAYOUT_A_MIN), copy included:
        'o24k12/t4v4': '128x128x16-8x16-km-p-sb',  # sq 4096: 41.3 -> 45.4 -> 48.3 (50.9)
        # sq 2048: 38.7 -> 41.0 (50.3); 2026-12-06 on the H100, one run (torch 50.29):
        # 128x64x16-km-p 43.75 (split in 2 by the default target), 128x128x16-8x16-km-p-sb
        # split in 2 42.58, unsplit (256 workgroups of K 2048: one wave) 46.10 (0.92)
        'o22k11/t4v4': ('128x128x16-8x16-km-p-sb', 0),
        'o25k9/t4v4': '64x64x16-8x8-km-p-sb',  # mlp x@W (BT,C)@(C,4C): 39.8 -> 41.9 (45.3); -sb 43.6
        # (with the split-K floor rounding, a later run: 1024^3 30.5 -> 32.7 (38.1))
        'o20k10/t4v4': '128x64x16-km-p',  # sq 1024
        'o20k10': '64x64x16-8x8',  # sq 1024
        'o20k14': '128x128x16',  # mlp x^T@dy (C,BT)^@(BT,4C)
        'o22k11': '64x128x16',  # sq 2048
        'o23k11': '64x128x16',  # mlp dy@W^T (BT,4C)@(4C,C)^
        'o23k8': '128x64x16',  # att p@v (BH,T,T)@(BH,T,hd)
        'o24k12': '64x128x16',  # sq 4096
        'o25k6': '64x128x8',  # att q@k^T (BH,T,hd)@(BH,hd,T)^
        # 2026-12-04 (third session), one slice buffer ("-sb": 3 workgroups an SM, not 2), in
        # one run against the rows above (gpu_bench.py --tiles ..., docs/perf/webgpu.md
        # "Occupancy, replay chunks, read naps"):
        'o25k6/v4t4': '64x128x16-sb',  # att q@k^T: 26.7 -> 28.1
        'o25k9': '64x128x16',  # mlp x@W (BT,C)@(C,4C)
        # 2026-12-05 (second session), in one run (scratch harness, the library's kernels;
        # TFLOPS before -> after, torch in brackets): 8x16 accumulators an invocation, one
        # slice buffer (128 invocations, 16 KiB: 2 an SM)
        #   sq 4096 46.62 -> 48.33 (50.29), its A^T 47.64 -> 49.26 (50.81);
        #   mlp x^T@dy 44.10 -> 45.07 (48.59), gpt dW qkv (C,BT)^@(BT,3C) 42.38 -> 45.39
        #   (47.06) (the last step of rows o24k12/t4v4, o20k14/t4v4, o19k14/t4v4 above);
        'o22k12/t4v4': '128x128x16-8x16-km-p-sb',  # 2048x2048 K 4096 A^T: 32.8 -> 47.26 (50.81)
        'o23k11/t4v4': '128x128x16-8x16-km-p-sb',  # 4096x2048 K 2048 A^T: 31.5 -> 48.68 (51.75)
        # A^T in a class without a row took the ladder's 128x64x16 (no km), as the two rows
        # above did before; 128x64x16-km-p made 46.1 / 46.0 on them
        '*/t4v4': '128x64x16-km-p',
    },
}

# The H100 SXM ("NVIDIA H100 80GB HBM3") has the H200's SMs: 132 of them, the same
# workgroup memory and registers an SM, with less memory bandwidth (3.35 TB/s against 4.8).
# Until `scripts/gpu_bench.py --tune` measures its own rows, it takes the H200's: better
# founded than the ladder, which lost 30% on the H200's A^T rows (above).
TABLE['nvidia h100 80gb hbm3'] = TABLE['nvidia h200']
