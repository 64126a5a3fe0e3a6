"""lstm_cell / lstm_cell_grad: one LSTM step's elementwise work (ops.py's rows), one
invocation per (n, j) element of the (N, H) hidden state, its four gates read and written
at columns j, H + j, 2H + j, 3H + j.

Every product that an add or a subtraction consumes goes through `keep` (its bits OR-ed with
a parameter word that is always 0: adam.py's guard), so no shader compiler fuses it into a
multiply-add and each product is rounded as the workers and simd kernels round it. sigmoid
and tanh are elementwise.py's (the unary ops' expressions).

Words (lstm_cell): n (N * H), H, 0 (the keep mask), out base, x base and strides, r base and
strides, a base and strides, s base and strides (3). lstm_cell_grad: n, H, 0, out base, a
base and strides, s base and strides (4), dh base and strides, r base and strides.
"""

from . import elementwise, wgsl
from .wgsl import WG, par

KEEP = "fn keep(x: f32, z: u32) -> f32 { return bitcast<f32>(bitcast<u32>(x) | z); }\n"
SIGMOID = "fn sig(a: T) -> T {{ return {}; }}\n".format(elementwise.UNARY["sigmoid"])


def _operands(specs):
    """{name: (base word, [stride words])} for operands (name, ndim) after words 0..3."""
    at, pos = {}, 4
    for name, nd in specs:
        at[name] = (par(pos), [par(pos + d + 1) for d in range(nd)])
        pos += nd + 1
    return at


def _el(at, name, *index):
    """WGSL element of operand `name` at the index expressions `index`."""
    base, st = at[name]
    return f"{name}[{base} + " + " + ".join(f"({i}) * {s}" for i, s in zip(index, st)) + "]"


def _program(bindings, lines):
    src, count = wgsl.linear_program(bindings, lines)
    head, _, body = src.partition("@compute")
    return head + elementwise.prelude("ttanh", False) + SIGMOID + KEEP + "@compute" + body, count


def _build_cell():
    n, hs, z, ob = par(0), par(1), par(2), par(3)
    at = _operands([("X", 2), ("R", 2), ("A", 2), ("S", 2 + 1)])
    lines = [wgsl.linear_id(), f"if (i >= {n}) {{ return; }}", f"let z = {z};",
             f"let j = i % {hs};", f"let r = i / {hs};"]
    for k, (name, fn) in enumerate((("ai", "sig"), ("af", "sig"), ("ag", "ttanh"),
                                    ("ao", "sig"))):
        col = f"{k}u * {hs} + j"
        lines += [f"let {name} = {fn}({_el(at, 'X', 'r', col)} + {_el(at, 'R', 'r', col)});",
                  f"{_el(at, 'A', 'r', col)} = {name};"]
    lines += [f"let c = keep(af * {_el(at, 'S', 'r', '0u', 'j')}, z) + keep(ai * ag, z);",
              f"{_el(at, 'S', 'r', '1u', 'j')} = c;",
              f"O[{ob} + i] = ao * ttanh(c);"]
    return _program([("O", "f32"), ("X", "f32"), ("R", "f32"), ("A", "f32"), ("S", "f32")],
                    lines)


def _build_grad():
    n, hs, z, ob = par(0), par(1), par(2), par(3)
    at = _operands([("A", 2), ("S", 4), ("D", 2), ("R", 2)])
    lines = [wgsl.linear_id(), f"if (i >= {n}) {{ return; }}", f"let z = {z};",
             f"let j = i % {hs};", f"let r = i / {hs};", f"let o = {ob} + r * 4u * {hs} + j;"]
    lines += [f"let {name} = {_el(at, 'A', 'r', f'{k}u * {hs} + j')};"
              for k, name in enumerate(("ai", "af", "ag", "ao"))]
    lines += [f"let d = {_el(at, 'D', 'r', 'j')} + {_el(at, 'R', 'r', 'j')};",
              f"let t = ttanh({_el(at, 'S', 'r', '1u', '0u', 'j')});",
              f"let dc = keep((d * ao) * (1.0 - keep(t * t, z)), z) + "
              f"{_el(at, 'S', 'r', '1u', '1u', 'j')};",
              "O[o] = dc * (ag * (ai * (1.0 - ai)));",
              f"O[o + {hs}] = dc * ({_el(at, 'S', 'r', '0u', '0u', 'j')} * (af * (1.0 - af)));",
              f"O[o + 2u * {hs}] = dc * (ai * (1.0 - keep(ag * ag, z)));",
              f"O[o + 3u * {hs}] = d * (t * (ao * (1.0 - ao)));",
              f"{_el(at, 'S', 'r', '0u', '1u', 'j')} = dc * af;"]
    return _program([("O", "f32"), ("A", "f32"), ("S", "f32"), ("D", "f32"), ("R", "f32")],
                    lines)


def _encode(be, name, build, out, ins, hs):
    n = out.shape[0] * hs
    if n == 0:
        return
    bufs, words = [], [n, hs, 0]
    for view in (out, *ins):
        buf, base = be.buffers(view)
        bufs.append(buf)
        words += [base, *view.strides] if view is not out else [base]
    prog = be.gpu.program((name,), build)
    be.gpu.dispatch(prog, bufs, words, wgsl.grid(-(-n // WG), be.gpu.max_groups))


def cell(be, out, ins, params):
    """The kernel table's entry: encode lstm_cell (out h (N, H) contiguous)."""
    _encode(be, "lstm_cell", _build_cell, out, ins, out.shape[1])


def cell_grad(be, out, ins, params):
    """The kernel table's entry: encode lstm_cell_grad (out (N, 4H) contiguous)."""
    _encode(be, "lstm_cell_grad", _build_grad, out, ins, out.shape[1] // 4)
