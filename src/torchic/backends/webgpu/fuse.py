"""Runs of elementwise ops in a recorded program fused into one dispatch (torchic.compile).

A small model's compiled step is launch-bound: each dispatch costs the GPU a launch behind
a barrier (every tensor lives in one buffer, so each dispatch waits for the one before),
and the host its encoding and wgpu-native's command tracking at finish (makemore b32: 33
dispatches, ~130 us of GPU time for ~1 us of arithmetic each; docs/perf/webgpu.md). A
recorded program issues the same ops at every replay, so `plan` looks once, at pack time,
for runs of consecutive f32 elementwise ops over one output shape (an SGD update's
`lr * grad` then `p - that`, tanh's gradient, a bias add then tanh) and `run` issues each
run as one dispatch: every invocation takes its element through the stages in order.

That is the separate dispatches' result when no stage depends on another element of an
earlier stage: a stage may read what an earlier one wrote only through the identical
view (the same element, taken from the register), and may touch no other memory of a
block an earlier stage writes, nor write a block an earlier stage reads except through
the identical view (`_hazard_free`). Each stage's value passes through `opaque` (an XOR
with a parameter word that is 0) so the shader compiler cannot contract one stage's
multiply into the next stage's add: the bits are the eager ones. Every stage stores its
output, except where torchic.compile's frees show that nothing outside the run reads it
before the program frees it (`dead_stores`).

An optimizer step's adam_update records (one per parameter) form runs too, of another
kind: records that touch no element another one writes (`_apart`: their order does not
matter), issued by adam.py's `Tables` as one dispatch (or a few: see there). A record
with an operand on one of the program's slots stays alone (the run's table holds offsets
that a replay's slot move would not patch).
TORCHIC_WEBGPU_FUSE=0 turns fusion off (measurements).
"""

import os

import numpy as np

from ... import ops
from ...shape import is_contiguous
from . import elementwise, wgsl
from .elementwise import MAX_DIMS, SCALAR_ONLY, collapse
from .epilogue import DROPOUT
from .wgsl import WG, par


def enabled():
    return os.environ.get("TORCHIC_WEBGPU_FUSE", "1").strip() != "0"


# the WGSL expression of each op whose row says it fuses as a stage (ops.STAGES); whether
# an op may be a stage is the row's to say, never this table's
EXPRESSIONS = {"fill": "T(bitcast<f32>({p0}))", "copy": "a", "where": elementwise.WHERE,
               **elementwise.UNARY, **elementwise.BINARY, **elementwise.GELU_GRAD,
               **{op: f"select(T(0.0), T(1.0), {e})" for op, e in elementwise.COMPARE_F32.items()}}


# stages with bool operands (masks): a float comparison's bool out, where's bool condition.
# A bool is an i32 word 0 / 1 (wgsl.STORAGE): a stage carries it in its T register as
# those bits (bitcast, never arithmetic), so it is loaded and stored like any f32 word
MASK_EXPRESSIONS = {
    **{(op, ("b8", "f32", "f32")): f"bitcast<T>(select(UT(0u), UT(1u), {e}))"
       for op, e in elementwise.COMPARE_F32.items()},
    ("where", ("f32", "b8", "f32", "f32")): "select(c, b, bitcast<UT>(a) != UT(0u))",
}


def _stage(record):
    """(expr, extra words) of an f32 record whose op fuses as a stage (ops.STAGE), or of a
    mask's (MASK_EXPRESSIONS), else None. (fill's value is its extra word.)"""
    op, out, ins, params = record
    if ops.FUSE.get(op) != ops.STAGE:
        return None
    if out.dtype != "f32" or any(v.dtype != "f32" for v in ins):
        expr = MASK_EXPRESSIONS.get((op, (out.dtype,) + tuple(v.dtype for v in ins)))
        return None if expr is None else (expr, ())
    if "value" in ops.BY_NAME[op].params:
        return EXPRESSIONS[op], (wgsl.f32_bits(params["value"]),)
    return EXPRESSIONS[op], ()


def _key(view):
    return (id(view.block), view.offset, view.shape, view.strides)


def _hazard_free(group, record):
    """Can record join the run `group` (see the module docstring)?"""
    _, out, ins, _ = record
    written = [r[1] for r in group]
    read = [v for r in group for v in r[2]]
    for v in ins:       # reads of earlier stages' outputs: the identical view only
        if any(w.block is v.block and _key(w) != _key(v) for w in written):
            return False
    return not any(v.block is out.block and _key(v) != _key(out) for v in written + read)


MAX_HELD = 4    # records plan may hold back while a run waits for its next stage


def _operands(record):
    """[(view, written?)] of a record's output and inputs (ops.WRITES: updated in place)."""
    op, out, ins, _ = record
    writes = ops.WRITES.get(op, ())
    return [(out, True)] + [(v, k in writes) for k, v in enumerate(ins)]


def _independent(group, record):
    """May `record` run before every record of `group`? (It reads no block one writes and
    writes no block one reads or writes: block granularity.)"""
    written, touched = set(), set()
    for r in group:
        for v, w in _operands(r):
            touched.add(id(v.block))
            if w:
                written.add(id(v.block))
    return not any(id(v.block) in (touched if w else written) for v, w in _operands(record))


def _span(view):
    """[lo, hi) of the elements of view's block it reaches ((0, 0) when it has none)."""
    if 0 in view.shape:
        return 0, 0
    lo = hi = view.offset
    for n, s in zip(view.shape, view.strides):
        lo, hi = lo + min(0, (n - 1) * s), hi + max(0, (n - 1) * s)
    return lo, hi + 1


def _apart(group, record):
    """Can `record` run in one dispatch with `group`, in any order? (No element one writes
    is touched by another: spans within a block.)"""
    mine = [(v.block, _span(v), w) for v, w in _operands(record)]
    blocks = {id(b) for b, _, _ in mine}
    for r in group:
        for u, uw in _operands(r):
            if id(u.block) not in blocks:
                continue
            ulo, uhi = _span(u)
            for b, (lo, hi), w in mine:
                if b is u.block and (w or uw) and lo < uhi and ulo < hi:
                    return False
    return True


def _kind(record, slots):
    """The kind of run a record may be part of: "ew" (an f32 elementwise stage), "adam"
    (an op whose records run apart, ops.APART: adam_update, with no operand on a slot,
    ids in `slots`), else None."""
    op = record[0]
    if ops.FUSE.get(op) == ops.APART:
        return None if any(id(v.block) in slots for v, _ in _operands(record)) else "adam"
    return "ew" if op is not None and _stage(record) is not None else None


def plan(records, slots=frozenset()):
    """The records in runs: [[record, ...]] in order; a run of more than one is fused
    (elementwise stages: `run`; adam_update records: adam.Tables). `slots`: ids of the
    blocks a replay may move (replay.py).

    A record that cannot join the open run but is independent of it is held back (at most
    MAX_HELD): when a later record joins the run, the records held until then run before
    it (nanoGPT's `att * scale`, the mask's `bias == 0`, `masked_fill`: the compare moves
    ahead and the multiply and the fill become one dispatch; the copy of a second
    parameter group's Adam scalars); the others keep their place after it. Held records
    are planned into runs of their own the same way."""
    runs, run, kind, held, moved = [], None, None, [], 0   # moved: held records before `run`
    if not records:
        return runs

    def close():
        runs.extend(plan(held[:moved], slots))
        if run is not None:
            runs.append(run)
        runs.extend(plan(held[moved:], slots))

    for r in records:
        k = _kind(r, slots)
        if k is not None and k == kind and (
                _apart(run, r) if k == "adam" else
                run[0][1].shape == r[1].shape and _hazard_free(run, r)):
            run.append(r)
            moved = len(held)
        elif (run is not None and r[0] is not None and k != "adam" and len(held) < MAX_HELD
              and _independent(run, r)):      # (an update starts a run of its own)
            held.append(r)
        else:
            close()
            held, moved = [], 0
            run, kind = ([r], k) if k is not None else (None, None)
            if k is None:
                runs.append([r])
    close()
    return runs


def dead_stores(runs, records, frees):
    """{run index: the stages of that fused elementwise run whose stores nothing reads}.

    `frees[i]`: ids of the program's temporaries freed right after records[i]
    (torchic.compile). A stage's output is dead when its block is freed (at or after the
    stage) before any record outside the run touches it: later stages of the run read it
    from the register, and nothing else ever reads that allocation (a later record in
    the same block is a new tensor). A gradient's temporaries such as `att * scale`
    before masked_fill are written and read back only inside their run."""
    if not frees:
        return {}
    at = {id(r): i for i, r in enumerate(records)}
    dead = {}
    for k, group in enumerate(runs):
        if len(group) < 2 or (_kind(group[0], ()) != "ew" and group[0][0] not in PRODUCERS):
            continue
        members = {id(r) for r in group}
        for s, r in enumerate(group):
            block = r[1].block
            for j in range(at[id(r)], len(records)):
                other = records[j]
                if j != at[id(r)] and id(other) not in members and any(
                        v.block is block for v in (other[1],) + tuple(other[2])):
                    break           # touched by a record outside the run: kept
                if id(block) in frees[j]:
                    dead.setdefault(k, set()).add(s)
                    break
    return {k: frozenset(v) for k, v in dead.items()}


def fusable(group):
    """Are all of group's records elementwise stages (a run `run` can issue)? (An
    epilogue's run may hold a dropout: issued alone when the epilogue was not applied.)"""
    return all(_stage(r) is not None for r in group)


def run(gpu, group, buffers, skip=frozenset()):
    """Issue a run of elementwise records as one dispatch -> False when the run does not
    fit one program (too many dims or parameter words): issue them one by one then.
    `skip`: the stages whose stores are dead (dead_stores): computed, not written."""
    stages = [_stage(r) for r in group]
    operands, index = [], {}          # distinct views, in first-use order
    wiring = []                        # per stage: (out operand, input operands)
    for _, out, ins, _ in group:
        ids = []
        for v in (out,) + tuple(ins):
            k = _key(v)
            if k not in index:
                index[k] = len(operands)
                operands.append(v)
            ids.append(index[k])
        wiring.append((ids[0], tuple(ids[1:])))
    n = int(np.prod(group[0][1].shape))
    if n == 0:
        return True
    shape, strides = collapse(group[0][1].shape, [v.strides for v in operands])
    if len(shape) > MAX_DIMS:
        return False
    bufs, slots, bases = [], [], []
    for v in operands:
        buf, base = buffers(v)
        if not any(b is buf for b in bufs):
            bufs.append(buf)
        slots.append(next(j for j, b in enumerate(bufs) if b is buf))
        bases.append(base)
    exprs = tuple(e for e, _ in stages)
    contiguous = len(shape) == 1 and all(s[0] == 1 for s in strides)
    if (contiguous and n % 4 == 0 and all(b % 4 == 0 for b in bases)
            and not any(f in e for f in SCALAR_ONLY for e in exprs)):
        scheme, words, count = "v4", [n // 4] + [b // 4 for b in bases], n // 4
    elif contiguous:
        scheme, words, count = "c", [n] + bases, n
    else:
        scheme, words, count = f"s{len(shape)}", [n] + list(shape), n
        for b, s in zip(bases, strides):
            words += [b, *s]
    words.append(0)                                       # opaque's zero
    for _, extra in stages:
        words.extend(extra)
    if len(words) > wgsl.PARAM_WORDS:
        return False
    skip = frozenset(skip)
    key = ("fused", exprs, tuple(wiring), tuple(slots), scheme,
           tuple(len(e) for _, e in stages), skip)
    prog = gpu.program(key, lambda: _build(stages, wiring, slots, len(bufs), scheme,
                                           len(operands), skip))
    gpu.dispatch(prog, bufs, words, wgsl.grid(-(-count // WG), gpu.max_groups))
    return True


def _build(stages, wiring, slots, nbuf, scheme, nops, skip=frozenset()):
    v4 = scheme == "v4"
    src = wgsl.header([(f"B{k}", "v4" if v4 else "f32") for k in range(nbuf)])
    src += wgsl.FLOAT_FNS + elementwise.prelude(" ".join(e for e, _ in stages), v4)
    # parameter words: n, then the operands' bases (and strides), opaque's zero, extras
    pre, idx, k = elementwise.operand_indices(scheme, nops, 1)
    src += elementwise.opaque_fn(par(k))
    k += 1
    for s, (expr, extra) in enumerate(stages):
        src += elementwise.stage_fn(s, expr, [par(k + q) for q in range(len(extra))],
                                    len(wiring[s][1]))
        k += len(extra)
    body = [wgsl.linear_id(), f"let n = {par(0)};", "if (i >= n) { return; }"] + pre
    value = {}                         # operand -> the WGSL name holding its element
    for s, (out, ins) in enumerate(wiring):
        for j in ins:
            if j not in value:
                body.append(f"let x{j} = B{slots[j]}[{idx[j]}];")
                value[j] = f"x{j}"
        body.append(f"let r{s} = opaque(stage{s}({', '.join(value[j] for j in ins)}));")
        if s not in skip:
            body.append(f"B{slots[out]}[{idx[out]}] = r{s};")
        value[out] = f"r{s}"
    src += wgsl.entry() + "  " + "\n  ".join(body) + "\n}\n"
    return src, nbuf


# -- epilogues: a run of elementwise stages applied where its producer stores ---------------
# A compiled GPT step multiplies q @ k^T and then scales and masks it (two more passes over
# a (B, H, T, T) tensor), applies GELU to the first MLP product, GELU's gradient to the
# product dy @ W2^T, the mask's and the scale's backward to softmax_grad's output.
# `epilogues` joins such an elementwise run to the record before it that produces its
# input (a matmul, softmax_grad): that kernel evaluates the stages on each element as it
# stores it (epilogue.py), so the product is not written and read back, and where
# dead_stores finds it dead, not written at all. The stages see each element through the
# producer's coordinates (batch, row, column): `coordinates` maps the run's operands there.

# the records whose kernels take an epilogue (their rows say ops.PRODUCER or ROW_PRODUCER):
# {op: does it store rows (any cut into bz, m)?}
PRODUCERS = {op.name: op.fuse == ops.ROW_PRODUCER for op in ops.OPS
             if op.fuse in (ops.PRODUCER, ops.ROW_PRODUCER)}
MAX_EPILOGUE_OPERANDS = 6


def _dims_of_permutation(view, out):
    """The dims of `view` (over the run's shape) in the order that walks `out` (the
    producer's contiguous output) element by element, when view reaches each element of
    out exactly once; else None. Size-1 dims are left out."""
    n = 1
    for s in out.shape:
        n *= s
    dims = sorted((d for d, size in enumerate(view.shape) if size != 1),
                  key=lambda d: -view.strides[d])
    step = 1
    for d in reversed(dims):
        if view.strides[d] != step:
            return None
        step *= view.shape[d]
    if step != n or view.offset != out.offset or view.block is not out.block:
        return None
    return dims


def _merged(views, group):
    """Each view's one stride over the run dims `group` (walking order), or None when a
    view's strides there do not merge into one."""
    out = []
    for v in views:
        for a, b in zip(group, group[1:]):
            if v.strides[a] != v.strides[b] * v.shape[b]:
                return None
        out.append(v.strides[group[-1]] if group else 0)
    return out


def _size(shape, dims):
    n = 1
    for d in dims:
        n *= shape[d]
    return n


def coordinates(producer_out, value, views, rows=False):
    """(B2, M, per view of `views` its strides over the producer's coordinates (b1, b2, m,
    n)): how each view (over the run's shape) finds the element at a product element,
    whose batch item is bz = b1 * B2 + b2. A matmul's coordinates are its own (batch, M,
    N); a producer of `rows` (a row kernel: flat row r, column n) takes any cut r = bz * M
    + m. None when `value` (the run's view of the product) is not a permutation of the
    product, or a view's strides do not merge within a coordinate (the batch may take two:
    (B, H) heads)."""
    *batch, M, N = producer_out.shape
    nb = 1
    for b in batch:
        nb *= b
    dims = _dims_of_permutation(value, producer_out)
    if dims is None:
        return None
    groups, k = [], 0                 # run dims (in walking order) per coordinate
    for size in ((nb * M, N) if rows else (nb, M, N)):
        group, have = [], 1
        while have < size:
            if k == len(dims):
                return None
            have *= value.shape[dims[k]]
            group.append(dims[k])
            k += 1
        if have != size:
            return None               # a run dim straddles two coordinates
        groups.append(group)
    ns = _merged(views, groups[-1])
    if ns is None:
        return None
    r = groups[0]
    for bgroup, mgroup in ([(r[:c], r[c:]) for c in range(len(r) + 1)] if rows else
                           [tuple(groups[:2])]):
        ms = _merged(views, mgroup)
        if ms is None:
            continue
        for cut in range(len(bgroup), -1, -1):   # the batch: one stride, else cut in two
            b1, b2 = _merged(views, bgroup[:cut]), _merged(views, bgroup[cut:])
            if b1 is not None and b2 is not None:
                return (_size(value.shape, bgroup[cut:]), _size(value.shape, mgroup),
                        [tuple(s) for s in zip(b1, b2, ms, ns)])
    return None


def _rows_alike(strides, rows_view, B2, M):
    """Do strides over (b1, b2, m, n) reach what the (R, C) rows_view reaches at row
    (b1 * B2 + b2) * M + m, column n? (A coordinate that only takes 0 has no say.)"""
    (s1, s2, sm, sn), (R, C), (r, c) = strides, rows_view.shape, rows_view.strides
    return ((R <= B2 * M or s1 == B2 * M * r) and (B2 == 1 or s2 == M * r)
            and (M == 1 or sm == r) and (C == 1 or sn == c))


def _epilogue_stage(record):
    """(expr, extra words) of a record an epilogue can take: an elementwise stage, or an
    epilogue-only stage (ops.EPILOGUE: dropout (x, key)) of a whole output (its flat index
    is the element's offset: `first` 0); else None."""
    op, out, ins, params = record
    if ops.FUSE.get(op) == ops.EPILOGUE:      # (dropout: the one such op, epilogue.DROPOUT)
        if out.dtype != "f32" or ins[0].dtype != "f32" or params.get("first", 0) != 0 or \
                not is_contiguous(out.shape, out.strides):
            return None
        scale = wgsl.f32_bits(params["scale"])
        return DROPOUT, (int(params["threshold"]), scale, 0)    # (0: a dropped element's)
    return _stage(record)


class Epilogue:
    """An elementwise run as its producer's epilogue: the stages (expr, extra words), their
    wiring over operands (-1: the producer's value; else an index into `views`), the
    operand views, the batch split B2, the rows per batch item M (a row kernel's), each
    view's strides over (b1, b2, m, n) (`coordinates`), per stage its dropout key view (or
    None), and the stores skipped (`skip`: stage indices; `skip_out`: the producer's own
    store)."""

    __slots__ = ("stages", "wiring", "views", "keys", "B2", "M", "strides", "skip",
                 "skip_out")

    def __init__(self, stages, wiring, views, keys, coords, skip, skip_out):
        self.stages, self.wiring, self.views, self.keys = stages, wiring, views, keys
        (self.B2, self.M, self.strides), self.skip, self.skip_out = coords, skip, skip_out


def epilogue(run, skip=frozenset()):
    """The Epilogue of run = [producer record, elementwise records...] (`skip`: dead_stores'
    stage indices over the whole run, 0 the producer), else None."""
    producer, stages = run[0], run[1:]
    if not stages or producer[0] not in PRODUCERS:
        return None
    pout = producer[1]
    if pout.dtype != "f32" or not is_contiguous(pout.shape, pout.strides):
        return None
    value, views, index, wiring, keys = None, [], {}, [], []

    def operand(v):
        k = _key(v)
        if k not in index:
            index[k] = len(views)
            views.append(v)
        return index[k]

    for record in stages:
        op, out, ins, _ = record
        if _epilogue_stage(record) is None:
            return None
        keyed = ops.FUSE[op] == ops.EPILOGUE      # (dropout's last input: its key)
        keys.append(ins[-1] if keyed else None)
        ids = []
        for v in (ins[:-1] if keyed else ins):
            if v.block is pout.block and _key(v) not in index:
                if value is not None and _key(v) != _key(value):
                    return None       # another view of the product: not one element each
                value = v
                ids.append(-1)        # the product, from the register
            else:
                ids.append(operand(v))
        # a stage may write the product's block (the recorder reuses a freed block) only
        # through the product's own view: each element then stays with its invocation
        if out.block is pout.block and (value is None or _key(out) != _key(value)):
            return None
        wiring.append((operand(out), tuple(ids)))
    if value is None or len(views) > MAX_EPILOGUE_OPERANDS or \
            any(v.shape != value.shape for v in views):   # (every operand over one shape)
        return None
    rows = PRODUCERS[producer[0]]
    coords = coordinates(pout, value, views, rows)
    if coords is None:
        return None
    # no stage may write a block the producer reads: a matmul's other tiles still read it;
    # a row kernel's invocation reads its own elements of its row before storing there, so
    # a stage may write (a freed block the recorder reused) exactly the elements read there
    B2, M, strides = coords
    for j, _ in wiring:
        v = views[j]
        if any(k is not None and k.block is v.block for k in keys):
            return None               # (a stage writing where a dropout key lies)
        for x in producer[2]:
            if x.block is v.block and not (rows and len(x.shape) == 2 and x.offset == v.offset
                                           and _rows_alike(strides[j], x, B2, M)):
                return None
    skip = frozenset(skip)
    return Epilogue([_epilogue_stage(r) for r in stages], wiring, views, keys, coords,
                    frozenset(s - 1 for s in skip if s > 0), 0 in skip)


def epilogues(runs):
    """runs (plan's) with each elementwise run that can be its producer's epilogue joined
    to it: [producer record, stages...]. Up to MAX_HELD runs planned between the two (the
    mask's `bias == 0`; a Linear's weight-gradient product and bias sum between dy @ W and
    GELU's gradient) move ahead of the producer when independent of it.
    TORCHIC_WEBGPU_EPILOGUES=0 turns this off (measurements)."""
    if os.environ.get("TORCHIC_WEBGPU_EPILOGUES", "1").strip() == "0":
        return runs
    out = []
    for run in runs:
        if all(_epilogue_stage(r) is not None for r in run):
            for back in range(1, min(len(out), MAX_HELD + 1) + 1):
                cand = out[-back]
                if any(_kind(r, ()) == "adam" for r in cand):
                    break
                between = out[len(out) - back + 1:]
                if cand[0][0] in PRODUCERS and _joins(cand, run) and \
                        all(_independent(cand, r) for b in between for r in b):
                    del out[len(out) - back:]
                    out.extend(between)
                    out.append(cand + run)
                    run = None
                    break
        if run is not None:
            out.append(run)
    return out


def _joins(head, run):
    """Can the stages of `run` follow head = [producer, stages...] in one epilogue? (Each
    reads what the earlier ones wrote only element for element: _hazard_free.)"""
    stages = list(head[1:])
    for r in run:
        if stages and not _hazard_free(stages, r):
            return False
        stages.append(r)
    return epilogue(head + run) is not None
