"""WGSL for a fused elementwise run evaluated where another kernel stores its output.

fuse.epilogues joins a compiled program's elementwise run to the record that produces its
input (a matmul, softmax's gradient), and fuse.Epilogue says how each of the run's
operands finds the element at a product element: strides over the producer's
coordinates (b1, b2, m, n). This module turns that into code for the producer's store:

* `Bound.of` binds the operands to buffers and picks each one's load: "v4" (a vec4 along
  n: a matmul stores 4 columns at a time), "s" (its n-stride is 0: one element for the 4),
  "g" (4 elements an n-stride apart), or "c" (one element: a kernel that stores one);
* `functions` declares the stages (fuse's expressions) as WGSL functions over T, which is
  vec4<f32> (width 4) or f32 (width 1), each value through `opaque` as fuse does, so no
  compiler contracts one stage into the next: the bits stay the separate dispatches';
* `setup` computes each operand's offset for the producer's batch item bz once, and
  `element` the statements that take one stored value (row m, column n) through the stages.

A dropout stage multiplies by dropout's mask at the element's flat index in its output
(dropout.py's bits: word f & 1 of threefry2x32_20(key, (f >> 1, 0))): at width 4 the 4
columns are 2 evaluations, as dropout.py's kernel makes them.

Words, from the producer's first free word w0: B2 (bz = b1 * B2 + b2), M (for producers
that store rows: row = bz * M + m), then per operand its base and strides over (b1, b2,
m, n) (vec4 units for "v4"), per dropout stage its key's base and stride, then opaque's
zero and the stages' extra words.
"""

from . import dropout, elementwise, wgsl
from .wgsl import par

DROPOUT = "dropout"      # the stage expression fuse gives a dropout record

XYZW = "xyzw"


class Bound:
    """A fuse.Epilogue bound to buffers for a producer storing `width` columns at a time."""

    __slots__ = ("stages", "wiring", "modes", "slots", "binding_types", "buffers", "words",
                 "skip", "skip_out", "nops", "width", "key", "key_slots", "key_words",
                 "zero_word")

    @classmethod
    def of(cls, epilogue, buffers, width, w0):
        """None when there is no epilogue, or its words do not fit from word w0 on."""
        if epilogue is None:
            return None
        written = {out for out, _ in epilogue.wiring}
        self = cls()
        self.modes, self.slots, self.binding_types, self.buffers = [], [], [], []
        words = [epilogue.B2, epilogue.M]

        def binding(buf, t):
            slot = next((k for k, (b, bt) in enumerate(zip(self.buffers, self.binding_types))
                         if b is buf and bt == t), None)
            if slot is None:
                slot = len(self.buffers)
                self.buffers.append(buf)
                self.binding_types.append(t)
            return slot
        for j, (v, (s1, s2, sm, sn)) in enumerate(zip(epilogue.views, epilogue.strides)):
            buf, base = buffers(v)
            if width == 1:
                mode, w = "c", [base, s1, s2, sm, sn]
            elif sn == 1 and all(x % 4 == 0 for x in (base, s1, s2, sm)):
                mode, w = "v4", [base // 4, s1 // 4, s2 // 4, sm // 4, 1]
            elif sn == 0 and j in written:
                return None                 # (a broadcast output: not a real stage)
            else:
                mode, w = ("s" if sn == 0 else "g"), [base, s1, s2, sm, sn]
            self.modes.append(mode)
            self.slots.append(binding(buf, "v4" if mode == "v4" else "f32"))
            words += w
        self.key_slots, self.key_words = [], []      # per stage: its key's binding, words
        for key in epilogue.keys:
            if key is None:
                self.key_slots.append(None)
                self.key_words.append(None)
                continue
            buf, base = buffers(key)
            self.key_slots.append(binding(buf, "i32"))
            self.key_words.append(w0 + len(words))
            words += [base, key.strides[0]]
        self.zero_word = w0 + len(words)
        words.append(0)                                   # opaque's zero
        for _, extra in epilogue.stages:
            words.extend(extra)
        if w0 + len(words) > wgsl.PARAM_WORDS:
            return None
        self.words = [w & 0xFFFFFFFF for w in words]
        self.stages, self.wiring = epilogue.stages, epilogue.wiring
        self.skip, self.skip_out = epilogue.skip, epilogue.skip_out
        self.nops, self.width = len(self.modes), width
        self.key = ("epi", tuple(e for e, _ in self.stages),
                    tuple(len(x) for _, x in self.stages), tuple(self.wiring),
                    tuple(self.modes), tuple(self.slots), tuple(self.binding_types),
                    tuple(self.key_slots), self.skip, self.skip_out)
        return self

    def bindings(self):
        """(name, type) of the operand bindings, after the producer's own."""
        return [(f"E{j}", t) for j, t in enumerate(self.binding_types)]


def _word(w0, j, q):
    """Parameter word q (0 base, 1 .. 4 strides over b1, b2, m, n) of operand j."""
    return par(w0 + 2 + 5 * j + q)


def functions(epi, w0):
    """The module-level WGSL: helpers the stages call, T, opaque, stage0, stage1, ..."""
    exprs = [e for e, _ in epi.stages]
    src = wgsl.FLOAT_FNS + elementwise.prelude(" ".join(exprs), epi.width == 4)
    if DROPOUT in exprs:
        src += dropout.threefry_fn()
    src += elementwise.opaque_fn(par(epi.zero_word))
    k = epi.zero_word + 1
    for s, (expr, extra) in enumerate(epi.stages):
        words = [par(k + q) for q in range(len(extra))]
        k += len(extra)
        src += _dropout_stage(s, epi.width, *words) if expr == DROPOUT else \
            elementwise.stage_fn(s, expr, words, len(epi.wiring[s][1]))
    return src


def _dropout_stage(s, width, thr, scale, zero):
    """stage{s}(a, f, k): a times dropout's mask at flat index f (width 4: f .. f + 3, f a
    multiple of 4), key words k. dropout.py's expression: a * bitcast(select(zero, scale,
    word >> 8 >= threshold)), the 0.0 a parameter word so no compiler folds a * 0.0."""
    L = ["let k2 = k.x ^ k.y ^ 0x1BD11BDAu;", "let w0 = threefry(f >> 1u, k.x, k.y, k2);"]
    if width == 4:
        L += ["let w1 = threefry((f >> 1u) + 1u, k.x, k.y, k2);",
              "let w = vec4<u32>(w0.x, w0.y, w1.x, w1.y);"]
    else:
        L += ["let w = select(w0.x, w0.y, (f & 1u) == 1u);"]
    L += [f"return a * bitcast<T>(select(UT({zero}), UT({scale}), (w >> UT(8u)) >= UT({thr})));"]
    return (f"fn stage{s}(a: T, f: u32, k: vec2<u32>) -> T {{\n  " + "\n  ".join(L) + "\n}\n")


def setup(epi, w0, bz):
    """Each operand's offset for batch item `bz` (WGSL), once per invocation."""
    L = [f"let eb1 = ({bz}) / {par(w0)};", f"let eb2 = ({bz}) % {par(w0)};"]
    for j in range(epi.nops):
        base, s1, s2 = (_word(w0, j, q) for q in range(3))
        L.append(f"let eo{j} = {base} + eb1 * {s1} + eb2 * {s2};")
    return L


def rows(w0, row):
    """(bz, m) of a producer's flat row `row` (WGSL expressions): row = bz * M + m."""
    return f"(({row}) / {par(w0 + 1)})", f"(({row}) % {par(w0 + 1)})"


def element(epi, w0, value, m, n):
    """One block of statements taking the stored `value` (a T) at row m, column n (the
    first of 4 at width 4) through the stages, loading and storing the operands there."""
    L = [f"let v = opaque({value});"]
    have = {-1: "v"}

    def index(j):
        sm, sn = _word(w0, j, 3), _word(w0, j, 4)
        if epi.modes[j] == "v4":
            return f"eo{j} + {m} * {sm} + {n} / 4u"
        if epi.modes[j] == "s":
            return f"eo{j} + {m} * {sm}"
        return f"eo{j} + {m} * {sm} + {n} * {sn}"

    def lanes(j, at):
        return [at] + [f"{at} + {c}u * {_word(w0, j, 4)}" for c in (1, 2, 3)]

    def flat(j):      # operand j's element offset from its base (its flat index: contiguous)
        s1, s2, sm, sn = (_word(w0, j, q) for q in (1, 2, 3, 4))
        if epi.modes[j] == "v4":
            return f"(4u * (eb1 * {s1} + eb2 * {s2} + {m} * {sm}) + {n})"
        return f"(eb1 * {s1} + eb2 * {s2} + {m} * {sm} + {n} * {sn})"

    for s, (out, ins) in enumerate(epi.wiring):
        for j in ins:
            if j in have:
                continue
            E, mode = f"E{epi.slots[j]}", epi.modes[j]
            if mode in ("v4", "c"):
                L.append(f"let x{j} = {E}[{index(j)}];")
            elif mode == "s":
                L.append(f"let x{j} = vec4<f32>({E}[{index(j)}]);")
            else:
                loads = ", ".join(f"{E}[{at}]" for at in lanes(j, f"ei{j}"))
                L += [f"let ei{j} = {index(j)};", f"let x{j} = vec4<f32>({loads});"]
            have[j] = f"x{j}"
        args = [have[j] for j in ins]
        if epi.key_slots[s] is not None:      # a dropout: its flat index and its key
            K, at = f"E{epi.key_slots[s]}", epi.key_words[s]
            kb, ks = par(at), par(at + 1)
            args += [flat(out),
                     f"vec2<u32>(bitcast<u32>({K}[{kb}]), bitcast<u32>({K}[{kb} + {ks}]))"]
        L.append(f"let r{s} = opaque(stage{s}({', '.join(args)}));")
        if s not in epi.skip:
            E = f"E{epi.slots[out]}"
            if epi.modes[out] in ("v4", "c"):
                L.append(f"{E}[{index(out)}] = r{s};")
            else:
                L.append(f"let eo{s}_{out} = {index(out)};")
                L += [f"{E}[{at}] = r{s}.{XYZW[c]};"
                      for c, at in enumerate(lanes(out, f"eo{s}_{out}"))]
        have[out] = f"r{s}"
    return "{ " + " ".join(L) + " }"
