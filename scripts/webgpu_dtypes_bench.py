"""GB/s of elementwise ops per dtype on the webgpu backend (GPU timestamps; docs/perf/webgpu.md,
"dtypes"): add, copy, compare into bool and where on bool over 16M elements of each code."""

import torchic
from torchic.dispatcher import View

rt = torchic.init("webgpu")
be = rt.backend
n = 1 << 24


def view(code):
    blk = rt.alloc(4 * n)
    v = View(blk, 0, (n,), (1,), code)
    rt.run("fill", v, (), {"value": 1})
    return v


for code in ("f32", "i32", "i64", "b8", "f16"):
    a, b, o, m = view(code), view(code), view(code), view("b8")
    ops = {"add": ("add", o, (a, b), 12), "copy": ("copy", o, (a,), 8),
           "lt": ("lt", m, (a, b), 12), "where": ("where", o, (m, a, b), 16)}
    for name, (op, out, ins, bpe) in ops.items():
        if code in ("b8", "f16") and op in ("add", "lt"):
            continue
        rt.sync()
        for _ in range(3):
            rt.run(op, out, ins, {})
        rt.sync()
        ns = min(be.timed(lambda: [rt.run(op, out, ins, {}) for _ in range(20)]) for _ in range(3))
        print(f"{code:4} {name:6} {bpe * n * 20 / ns:7.1f} GB/s")
