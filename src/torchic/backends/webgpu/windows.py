"""Tensors larger than one storage binding.

WebGPU binds at most ``max_storage_buffer_binding_size`` bytes of a buffer (128 MiB on
lavapipe and many GPUs), while a buffer may be larger (``max_buffer_size``). So a heap
arena may be larger than a binding (the allocator gives a tensor larger than the usual
arena an arena of its own, up to the largest buffer), and an operand in such a *big*
arena is bound through a *window*: a range of at most ``GPU.window`` bytes that holds
all of the view's elements, starting on a 256-byte boundary (kernels then index from
the window's start). Windows sit on a grid (multiples of window / 2, then finer) so the
same few windows, and their bind groups, serve many views.

An op with an operand too large for any window is cut into several ops over row ranges
(``run``), each of whose operands fits, by the rule its row in ops.py names (``cut``;
``_RULES`` holds one rule per cut, and an op whose cut has none is refused, never cut by
a guess): elementwise ops along any axis (all operands share the output's shape; dropout
likewise, its key whole and each part told its first flat index), matmul over batches,
then rows of A and out; gather / scatter over index rows (scatter's pieces add to out one
after the other, a fixed order); reductions over kept rows, then over the reduced axis
(partial results combined into out in order by the row's ``combine``); the row-wise ops
over rows (causal_softmax over its leading axes, each part's diagonal moved by its first
row; layer_norm_grad's (2, R, C) out along axis 1: its kernel binds the two planes apart,
so each plane, not the pair, has to fit a window). A matmul operand that no cut makes fit
(a strided or transposed B) is copied contiguous first. What no rule can cut (a gather
table, one row larger than a window) raises ``TooLargeError`` naming the op and the limit.

Ops on arenas that all fit a binding take none of this: one flag (``GPU.any_big``) is
all the per-op path tests.
"""

from ... import ops
from ...dispatcher import View
from ...shape import numel
from . import elementwise, matmul, norm
from .gpu import RawView

GRID_MIN = 256      # bytes: the finest window grid (and every window's alignment)


class TooLargeError(MemoryError):
    """An operand that no window holds, of an op that cannot be cut any further."""


def span(view):
    """(first, last + 1) element offsets of the view from its block's start."""
    lo = hi = view.offset
    for n, s in zip(view.shape, view.strides):
        if n == 0:
            return view.offset, view.offset
        if s >= 0:
            hi += (n - 1) * s
        else:
            lo += (n - 1) * s
    return lo, hi + 1


def limit(gpu, view):
    """Elements one view may span to be sure of a window (4 bytes an element, or 2: a
    native float16 view's, GPU.item)."""
    return (gpu.window - GRID_MIN) // gpu.item[view.dtype]


def too_big(gpu, view):
    blk = view.block
    if blk.arena is None or not gpu.big[blk.arena]:
        return False
    lo, hi = span(view)
    return hi - lo > limit(gpu, view)


def buffers(gpu, view):
    """(Window, element base within it) of a view in a big arena."""
    blk = view.block
    lo, hi = span(view)
    item = gpu.item[view.dtype]
    lo_b, hi_b = blk.offset + lo * item, blk.offset + hi * item
    size = gpu.arena_sizes[blk.arena]
    step = gpu.window // 2
    while True:
        start = lo_b // step * step
        if hi_b <= start + gpu.window or step <= GRID_MIN:
            break
        step //= 2
    if hi_b > start + gpu.window:
        raise TooLargeError(f"an operand of {hi_b - lo_b} bytes is larger than the adapter's "
                            f"largest storage binding ({gpu.window} bytes)")
    win = gpu.window_buffer(blk.arena, start, min(gpu.window, size - start))
    return win, (blk.offset - start) // item + view.offset


# -- cutting ops into row ranges -----------------------------------------------------------
def narrow(view, axis, start, length):
    shape = list(view.shape)
    shape[axis] = length
    return View(view.block, view.offset + start * view.strides[axis], tuple(shape),
                view.strides, view.dtype)


def _rows_per_part(gpu, views, cuts, n):
    """Rows of the cut axis per part so that every cut view fits a window (at least 1). A
    view one row of which spans more than a window (a transposed operand: the parts' own
    plans cut it along another axis) leaves the rows to the others, or 1 when they would
    take all n."""
    rows, wide = n, False
    for k, axis in cuts:
        v = views[k]
        room = limit(gpu, v)
        s = abs(v.strides[axis])
        if s == 0:
            continue
        one = narrow(v, axis, 0, 1)
        lo, hi = span(one)
        if hi - lo > room:
            wide = True
        else:
            rows = min(rows, (room - (hi - lo)) // s + 1)
    return 1 if wide and rows >= n else max(1, rows)


def _along(views, axes, ks):
    """One "cut" rule per axis d of `axes`, slicing the views `ks` together (their axis d)."""
    return [("cut", views[0].shape[d], [(k, d) for k in ks], None) for d in axes]


def _kept(out, d):
    """May out be cut along axis d and stay contiguous? (Every axis before d has size 1.)"""
    return all(n == 1 for n in out.shape[:d])


def _matmul(views, params, combine):
    """out (B, M, N) = a (B, M, K) @ b (B, K, N): over batches, rows of a and out, then K."""
    out = views[0]
    if len(out.shape) == 4:     # (B1, B2, ...): along either batch dim, or along K
        rules = [("cut", out.shape[0], [(0, 0), (1, 0), (2, 0)], None)]
        if out.shape[0] == 1:
            rules.append(("cut", out.shape[1], [(0, 1), (1, 1), (2, 1)], None))
            if out.shape[1] == 1:     # one product: its rows (out stays contiguous)
                rules.append(("cut", out.shape[2], [(0, 2), (1, 2)], None))
        return rules + [("reduce", views[1].shape[3], [(1, 3), (2, 2)], "add")]
    rules = [("cut", out.shape[0], [(0, 0), (1, 0), (2, 0)], None)]
    if out.shape[0] == 1:   # (out stays contiguous)
        rules.append(("cut", out.shape[1], [(0, 1), (1, 1)], None))
    return rules + [("reduce", views[1].shape[2], [(1, 2), (2, 1)], "add")]


def _reduce(views, params, combine):
    """Over kept rows (out stays contiguous), then over a reduced axis: partials combined
    into out in order (`combine`: the op row's)."""
    out, a = views
    kept = len(a.shape) - params["naxes"]
    return ([("cut", out.shape[d], [(0, d), (1, d)], None) for d in range(kept) if _kept(out, d)]
            + [("reduce", a.shape[d], [(1, d)], combine) for d in range(kept, len(a.shape))])


def _argmax(views, params, combine):
    """Over kept rows; rows spread wider than a window: copied together first."""
    out, a = views
    kept = [d for d in range(len(a.shape) - 1) if _kept(out, d)]
    return ([("cut", out.shape[d], [(0, d), (1, d)], None) for d in kept]
            + [("compact", out.shape[d], [(0, d), (1, d)], None) for d in kept])


# ops.py's cuts (each op row's `cut`) -> (views, params, combine) -> the op's rules. An op
# whose cut has no entry here is refused (TooLargeError), never cut by a guess.
_RULES = {
    ops.CUT_ELEMENTWISE: lambda v, p, c: _along(v, range(len(v[0].shape)), range(len(v))),
    ops.CUT_FLAT: lambda v, p, c: _along(v, range(len(v[0].shape)), (0, 1)),
    ops.CUT_LEADING_ROWS: lambda v, p, c: _along(
        v, [d for d in range(len(v[0].shape) - 1) if _kept(v[0], d)], range(len(v))),
    ops.CUT_ROWS: lambda v, p, c: _along(v, (0,), range(len(v))),
    ops.CUT_ROWS_WEIGHTS: lambda v, p, c: _along(
        v, (0,), [k for k, x in enumerate(v) if len(x.shape) == 2]),
    ops.CUT_ROWS_BUT_LAST: lambda v, p, c: _along(v, (0,), range(len(v) - 1)),
    ops.CUT_MATMUL: _matmul,
    ops.CUT_GATHER: lambda v, p, c: [("cut", v[0].shape[0], [(0, 0), (2, 0)], None)],
    ops.CUT_SCATTER: lambda v, p, c: [("cut", v[2].shape[0], [(1, 0), (2, 0)], None)],
    ops.CUT_REDUCE: _reduce,
    ops.CUT_ARGMAX: _argmax,
}
# (CUT_MATMUL_BIAS has no rule of its own: `run` issues it as a matmul, then an add)
# the backend's host transfers through windows: one operand, cut as an elementwise op
TRANSFERS = {"write": ops.CUT_ELEMENTWISE, "read": ops.CUT_ELEMENTWISE}


def cut_of(op):
    """The op row's cut (ops.py), or a host transfer's; None for an unknown name."""
    row = ops.BY_NAME.get(op)
    return row.cut if row is not None else TRANSFERS.get(op)


def _rules(op, views, params):
    """The ways op can be cut, best first: (kind, n, [(view index, axis)], combine), from
    its row's cut (_RULES).

    "cut" slices those views along those axes together into ranges of n rows, each run
    as an op of its own; "reduce" does so along a reduced (summed) axis: the first part
    writes out, each later one a scratch partial then added (combine) into out;
    "compact" runs each part on a contiguous copy of its input."""
    rule = _RULES.get(cut_of(op))
    if rule is None:
        raise TooLargeError(f"op {op!r} has an operand larger than the adapter's largest "
                            f"storage binding, and windows.py has no rule to cut it (its "
                            f"row in ops.py says cut {cut_of(op)!r})")
    row = ops.BY_NAME.get(op)
    return rule(views, params, row.combine if row is not None else "")


def _part_params(op, params, axis, start, out, part):
    """A part's params: a flat-indexed op's first flat index (params["first"]; out is
    contiguous, so an element's offset from out's start is its flat index), a leading-rows
    op's diagonal moved by the part's first row (a cut along axis -2)."""
    cut = cut_of(op)
    if cut == ops.CUT_FLAT:
        return {**params, "first": params.get("first", 0) + part.offset - out.offset}
    if cut == ops.CUT_LEADING_ROWS and axis == len(out.shape) - 2:
        return {**params, "diagonal": params["diagonal"] + start}
    return params


def plan(gpu, op, views, params):
    """None when every operand fits a window, else (kind, combine, parts): parts is a list
    of (sub-views, (axis, start, rows)), the axis being view 0's (or None)."""
    big = [k for k, v in enumerate(views) if too_big(gpu, v)]
    if not big:
        return None
    best, best_score = None, None
    for kind, n, cuts, combine in _rules(op, views, params):
        if n <= 1 or not set(big) & {k for k, _ in cuts}:
            continue
        if kind == "reduce" and 0 in big:   # (its partials, out's size, need out to fit)
            continue
        if kind == "compact":   # rows of view 1 by their number of elements
            per_row = numel(views[1].shape) // n
            if per_row > limit(gpu, views[1]):
                continue
            rows = max(1, min(n, limit(gpu, views[1]) // max(1, per_row)))
        else:
            rows = _rows_per_part(gpu, views, cuts, n)
            if rows >= n:       # (cuts no operand that is too big: no progress)
                continue
        axis0 = next((axis for k, axis in cuts if k == 0), None)
        subs = []
        for r0 in range(0, n, rows):
            sub = list(views)
            for k, axis in cuts:
                sub[k] = narrow(views[k], axis, r0, min(rows, n - r0))
            subs.append((tuple(sub), (axis0, r0, min(rows, n - r0))))
        # the rule leaving the fewest operands too big in its (largest) first part, then
        # the fewest parts; those left are cut again by the parts' own plans
        left = 0 if kind == "compact" else sum(too_big(gpu, v) for v in subs[0][0])
        score = (left, len(subs))
        if best is None or score < best_score:
            best, best_score = (kind, combine, subs), score
    if best:
        return best
    v = views[big[0]]
    lo, hi = span(v)
    raise TooLargeError(f"op {op!r}: an operand of shape {list(v.shape)} spans "
                        f"{gpu.item[v.dtype] * (hi - lo)} "
                        f"bytes, more than the adapter's largest storage binding "
                        f"({gpu.window} bytes), and this op cannot be cut so that it fits")


def _run_planes(be, op, out, ins, params, depth):
    """layer_norm_grad into a (2, R, C) out: planned as two (R, C) outs, the kernel's
    bindings, each part then run as a (2, rows, C) out whose planes keep out's stride."""
    p = plan(be.gpu, op, norm.planes(out) + tuple(ins), params)
    if p is None:
        be.kernels[op](be, out, ins, params)
        return
    for sub, _ in p[2]:     # (kind "cut": the only rule of the row-wise ops)
        d = sub[0]
        part = View(out.block, d.offset, (2,) + d.shape, out.strides[:1] + d.strides, out.dtype)
        run(be, op, part, sub[2:], params, depth + 1)


def run(be, op, out, ins, params, depth=0):
    """Run op, cut into several ops whose operands each fit a window (see plan)."""
    gpu = be.gpu
    cut = cut_of(op)
    if cut == ops.CUT_ROWS_WEIGHTS and len(out.shape) == 3:
        _run_planes(be, op, out, ins, params, depth)
        return
    if cut == ops.CUT_MATMUL_BIAS:     # (cut as the matmul, then the bias added, as an add)
        run(be, "matmul", out, ins[:2], params, depth + 1)
        run(be, "add", out, (out, matmul.bias_rows(ins[2], out.shape)), None, depth + 1)
        return
    try:
        p = plan(gpu, op, (out,) + tuple(ins), params)
    except TooLargeError:
        wide = [v for v in ins if too_big(gpu, v)]
        if cut != ops.CUT_MATMUL or any(numel(v.shape) > limit(gpu, v) for v in wide):
            raise
        # an operand spread wider than a window (a strided B, which no rule cuts: two
        # batch dims, or a transposed B whose rows each span more than a window) whose
        # elements fit one: its contiguous copy (a scratch buffer, bound whole) instead
        ins = list(ins)
        for k, v in enumerate(ins):
            if too_big(gpu, v):
                tmp = RawView(gpu.scratch_buffer(f"window-matmul-{depth}-{k}",
                                                 max(4, 4 * numel(v.shape))), 0, v.shape, v.dtype)
                run(be, "copy", tmp, (v,), None, depth + 1)
                ins[k] = tmp
        p = plan(gpu, op, (out,) + tuple(ins), params)
    if p is None:
        be.kernels[op](be, out, ins, params)
        return
    kind, combine, subs = p
    for i, (sub, (axis, start, _)) in enumerate(subs):
        if kind == "compact":   # a contiguous copy of the input part, then the op on it
            a = sub[1]
            tmp = RawView(gpu.scratch_buffer(f"window-compact-{depth}",
                                             max(4, 4 * numel(a.shape))), 0, a.shape, a.dtype)
            run(be, "copy", tmp, (a,), None, depth + 1)
            run(be, op, sub[0], (tmp,) + tuple(sub[2:]), params, depth + 1)
            continue
        if kind == "cut" or i == 0:
            run(be, op, sub[0], sub[1:], _part_params(op, params, axis, start, out, sub[0]),
                depth + 1)
            continue
        o = sub[0]          # a later part of a reduced axis: a partial, added into out
        tmp = RawView(gpu.scratch_buffer(f"window-partial-{depth}", max(4, 4 * numel(o.shape))),
                      0, o.shape, o.dtype)
        run(be, op, tmp, sub[1:], params, depth + 1)
        elementwise.binary(gpu, combine, o, (o, tmp), buffers=be.buffers)
