"""Run a fixed set of ops on the simd backend and save the results (used by test_isa_paths.py).

    python tests/simd/probe.py OUT.npz    (honours TORCHIC_SIMD_SCALAR / TORCHIC_SIMD_ISA)
"""

import sys

import numpy as np


def main(path):
    from torchic import dispatcher
    from torchic.backends.simd import describe_isa
    from torchic.dispatcher import View
    from torchic.testing import kernel_cases

    rt = dispatcher.init("simd", threads=2)
    rng = np.random.default_rng(11)

    def put(x, dtype="f32"):
        x = np.ascontiguousarray(x, np.int32 if dtype == "i32" else np.float32)
        v = View(rt.alloc(max(x.nbytes, 4)), 0, x.shape,
                 tuple(s // 4 for s in x.strides), dtype)
        rt.write(v, x)
        return v

    def run(op, shape, *ins, dtype="f32", **params):
        n = int(np.prod(shape))
        out = View(rt.alloc(max(n * 4, 4)), 0, shape,
                   tuple(int(s) for s in np.cumprod((1,) + shape[::-1])[:-1][::-1]), dtype)
        rt.run(op, out, ins, params)
        return rt.read(out)

    x = rng.uniform(-5, 5, (67, 131)).astype(np.float32)
    y = rng.uniform(0.5, 3, (67, 131)).astype(np.float32)
    xt = put(np.ascontiguousarray(x.T))
    xT = View(xt.block, 0, x.shape, (1, 67), "f32")
    vx, vy = put(x), put(y)
    res = {}
    # every elementwise kernel of torchic.testing's table, inputs from its case's domains;
    # the first input transposed (a strided path), the second contiguous
    for op, case in sorted(kernel_cases("unary", "binary", "compare").items()):
        arrays = [a.astype(np.float32) for a in case.draw(rng, [x.shape] * len(case.shapes))]
        first = put(np.ascontiguousarray(arrays[0].T))
        ins = [View(first.block, 0, x.shape, (1, 67), "f32")] + [put(a) for a in arrays[1:]]
        res[op] = run(op, x.shape, *ins)
    res["where"] = run("where", x.shape, vx, vy, xT)
    res["sum"] = run("sum", (67,), xT, naxes=1)
    res["sum_all"] = run("sum", (), vx, naxes=2)
    res["max"] = run("max", (67,), vx, naxes=1)
    res["argmax"] = run("argmax", (67,), xT, dtype="i32")
    res["softmax"] = run("softmax", x.shape, xT)
    res["log_softmax"] = run("log_softmax", x.shape, vx)
    t = put(rng.integers(0, 131, 67), "i32")
    res["cross_entropy"] = run("cross_entropy", (67,), vx, t)
    res["cross_entropy_grad"] = run("cross_entropy_grad", x.shape, xT, t, put(np.ones(67)))
    a = rng.uniform(-1, 1, (2, 100, 70)).astype(np.float32)
    b = rng.uniform(-1, 1, (2, 70, 90)).astype(np.float32)
    res["matmul"] = run("matmul", (2, 100, 90), put(a), put(b))
    res["matmul_ref"] = a.astype(np.float64) @ b.astype(np.float64)
    res["gather"] = run("gather_rows", (5, 131), vx, put(np.int32([3, 0, 66, 3, 1]), "i32"))
    res["isa"] = np.array(describe_isa())
    rt.close()
    np.savez(path, **res)


if __name__ == "__main__":
    main(sys.argv[1])
