"""Tensors larger than one storage binding (windows.py): with a small fake binding limit
(init(max_binding=...)), every primitive on tensors spanning several binding windows, from
the per-op test table (testing.CASES rows with `big` shapes, in every layout: the last
tests), plus what the table does not hold: strided reads and writes, casts, int32, two
batch dims, the lecture MLP's forward and gradients, dropout's and Adam's bits, and the
clear error of an op that cannot be cut. The same code paths serve a real 128 MiB limit."""

import numpy as np
import pytest

import torchic
import torchic.nn.functional as F
from torchic import dispatcher, ops, testing
from torchic.backends.webgpu import windows
from torchic.testing import CASES, checks

WINDOW = 16384          # bytes: 4096 floats a binding; the tensors below span 5 to 60


@pytest.fixture
def big_rt(webgpu_available):
    rt = torchic.init("webgpu", max_binding=WINDOW)
    torchic.manual_seed(0)
    yield rt
    try:
        rt.sync()
    finally:
        torchic.shutdown()


def close(got, want, rtol=1e-5, atol=1e-5):
    np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=rtol, atol=atol)


def spans_windows(t, rt):
    """t lives in an arena larger than one window (bound in windows)."""
    blk = t._storage.block if hasattr(t._storage, "block") else None
    gpu = rt.backend.gpu
    return blk is not None and gpu.big[blk.arena]


def test_options_and_arenas(big_rt):
    gpu = big_rt.backend.gpu
    assert gpu.window == WINDOW and gpu.window <= gpu.max_binding
    assert big_rt.allocator.arena_bytes <= WINDOW
    assert big_rt.backend.max_arena_bytes == gpu.max_buffer // 256 * 256


def test_env_var_sets_the_window(webgpu_available, monkeypatch):
    monkeypatch.setenv("TORCHIC_WEBGPU_MAX_BINDING", "65536")
    try:
        with pytest.raises(ValueError, match="max_binding"):
            torchic.init("webgpu", max_binding=0)
        assert torchic.init("webgpu").backend.gpu.window == 65536
        monkeypatch.setenv("TORCHIC_WEBGPU_MAX_BINDING", "lots")
        with pytest.raises(ValueError, match="TORCHIC_WEBGPU_MAX_BINDING"):
            torchic.init("webgpu")
    finally:
        torchic.shutdown()


def test_elementwise_family(big_rt, rng):
    a = rng.standard_normal((300, 70)).astype(np.float32)        # 84 KB: 6 windows
    b = rng.standard_normal((300, 70)).astype(np.float32)
    row = rng.standard_normal(70).astype(np.float32)
    ta, tb, tr = torchic.tensor(a), torchic.tensor(b), torchic.tensor(row)
    assert spans_windows(ta, big_rt)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    close(ta.numpy(), a64, 0, 0)                                   # write + read
    close(ta.exp().numpy(), np.exp(a64))                           # unary
    close(ta.tanh().numpy(), np.tanh(a64), atol=1e-6)
    close((ta * tb + tr).numpy(), a64 * b64 + row, atol=1e-5)     # binary, broadcast
    close((ta > tb).numpy(), a64 > b64, 0, 0)                      # compare
    close(torchic.where(ta > 0, ta, tb).numpy(), np.where(a64 > 0, a64, b64), 0, 0)
    close(ta.T.contiguous().numpy(), a64.T, 0, 0)                  # copy of a transpose
    close(ta.T.numpy(), a64.T, 0, 0)                               # strided read
    close(ta[:, 1::3].numpy(), a64[:, 1::3], 0, 0)
    close((ta.T * 2.0).numpy(), 2 * a64.T)                         # strided operands
    close(torchic.full((300, 70), 1.5).numpy(), np.full((300, 70), 1.5), 0, 0)   # fill
    close(torchic.zeros(5000).numpy(), np.zeros(5000), 0, 0)
    close((ta * 100).to(torchic.int32).numpy(), np.trunc(a * np.float32(100)), 0, 0)  # cast


def test_strided_write(big_rt, rng):
    a = rng.standard_normal((200, 90)).astype(np.float32)
    t = torchic.zeros(200, 90)
    view = t[:, 10:80:2]                     # not contiguous, spans the whole tensor
    view.copy_(torchic.tensor(a[:, 10:80:2]))
    want = np.zeros((200, 90))
    want[:, 10:80:2] = a[:, 10:80:2]
    close(t.numpy(), want, 0, 0)
    # a host write straight into a strided view of a big tensor
    big_rt.backend.write(dispatcher.View(t._storage.block, 1, (200, 30), (90, 3), "f32"),
                         np.ones((200, 30), np.float32))
    want[:, 1:90:3] = 1
    close(t.numpy(), want, 0, 0)


def test_matmul(big_rt, rng):
    a = rng.standard_normal((600, 30)).astype(np.float32)     # 72 KB
    w = rng.standard_normal((30, 60)).astype(np.float32)      # 7 KB: fits one window
    g = rng.standard_normal((600, 60)).astype(np.float32)     # 144 KB
    ta, tw, tg = torchic.tensor(a), torchic.tensor(w), torchic.tensor(g)
    a64, w64, g64 = (x.astype(np.float64) for x in (a, w, g))
    close((ta @ tw).numpy(), a64 @ w64, 1e-4, 1e-4)            # big A and out: rows of M
    close((ta.T @ tg).numpy(), a64.T @ g64, 1e-4, 1e-3)        # big K: partials added
    close((tg @ tw.T).numpy(), g64 @ w64.T, 1e-4, 1e-4)
    ba = rng.standard_normal((4, 300, 30)).astype(np.float32)  # batched, each batch big
    close((torchic.tensor(ba) @ tw).numpy(), ba.astype(np.float64) @ w64, 1e-4, 1e-4)
    # two batch dims that do not flatten (attention's heads of a (B, T, C) tensor): cut
    # along the batch dims, or along K for one product past a window
    x = rng.standard_normal((3, 200, 64)).astype(np.float32)  # 150 KB
    heads = torchic.tensor(x).view(3, 200, 4, 16).transpose(1, 2)
    h64 = x.astype(np.float64).reshape(3, 200, 4, 16).swapaxes(1, 2)
    close((heads @ heads.transpose(-2, -1)).numpy(), h64 @ h64.swapaxes(-2, -1), 1e-4, 1e-3)
    close((heads.transpose(-2, -1) @ heads).numpy(), h64.swapaxes(-2, -1) @ h64, 1e-4, 1e-3)
    # F.linear's matmul_bias: the product cut as a matmul, then the bias added
    bias = rng.standard_normal(60).astype(np.float32)
    close(F.linear(ta, tw.T, torchic.tensor(bias)).numpy(), a64 @ w64 + bias, 1e-4, 1e-4)


def test_reductions(big_rt, rng):
    a = rng.standard_normal((400, 50)).astype(np.float32)       # 80 KB
    ta = torchic.tensor(a)
    a64 = a.astype(np.float64)
    close(ta.sum().item(), a64.sum(), 1e-5, 1e-3)               # one row of all: partials
    close(ta.sum(0).numpy(), a64.sum(0), 1e-5, 1e-4)            # strided rows
    close(ta.sum(1).numpy(), a64.sum(1), 1e-5, 1e-4)
    close(ta.mean(0, keepdim=True).numpy(), a64.mean(0, keepdims=True), 1e-5, 1e-5)
    close(ta.max().item(), a64.max(), 0, 0)
    close(ta.amin(0).numpy() if hasattr(ta, "amin") else ta.min(0)[0].numpy(), a64.min(0), 0, 0)
    vals, idx = ta.max(0)                                        # argmax of strided rows
    close(vals.numpy(), a64.max(0), 0, 0)
    close(idx.numpy(), a64.argmax(0), 0, 0)
    close(ta.argmax(1).numpy(), a64.argmax(1), 0, 0)
    ti = torchic.tensor(rng.integers(-50, 50, (400, 50)).astype(np.int32))
    close(ti.max().item(), ti.numpy().max(), 0, 0)


def _mlp64(C, W1, b1, W2, b2, X, Y):
    """The lecture MLP's loss and gradients in float64 NumPy."""
    n = len(Y)
    emb = C[X].reshape(n, -1)
    hpre = emb @ W1 + b1
    h = np.tanh(hpre)
    logits = h @ W2 + b2
    z = logits - logits.max(1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(1, keepdims=True))
    loss = -logp[np.arange(n), Y].mean()
    dlogits = np.exp(logp)
    dlogits[np.arange(n), Y] -= 1
    dlogits /= n
    dW2, db2 = h.T @ dlogits, dlogits.sum(0)
    dhpre = (dlogits @ W2.T) * (1 - h ** 2)
    dW1, db1 = emb.T @ dhpre, dhpre.sum(0)
    dC = np.zeros_like(C)
    np.add.at(dC, X.reshape(-1), (dhpre @ W1.T).reshape(-1, C.shape[1]))
    return loss, [dC, dW1, db1, dW2, db2]


def test_lecture_mlp_full_batch_gradients(big_rt, rng):
    """makemore's MLP on a "full dataset" whose hidden layer spans many windows."""
    n, hidden = 900, 100                     # h: 360 KB, 22 windows; W1, W2 fit one
    X = rng.integers(0, 27, (n, 3))
    Y = rng.integers(0, 27, n)
    params64 = [rng.standard_normal((27, 10)), rng.standard_normal((30, hidden)) * 0.3,
                rng.standard_normal(hidden) * 0.1, rng.standard_normal((hidden, 27)) * 0.1,
                np.zeros(27)]
    params = [torchic.tensor(p.astype(np.float32), requires_grad=True) for p in params64]
    C, W1, b1, W2, b2 = params
    emb = C[torchic.tensor(X)]
    h = torch_tanh = (emb.view(-1, 30) @ W1 + b1).tanh()
    assert spans_windows(torch_tanh, big_rt)
    logits = h @ W2 + b2
    loss = F.cross_entropy(logits, torchic.tensor(Y))
    loss.backward()
    want_loss, want_grads = _mlp64(*[p.astype(np.float32).astype(np.float64)
                                     for p in params64], X, Y)
    close(loss.item(), want_loss, 1e-5, 1e-6)
    for p, want in zip(params, want_grads):
        close(p.grad.numpy(), want, 1e-4, 1e-6)


def test_small_tensors_in_a_big_arena(big_rt, rng):
    big = torchic.zeros(20000)               # its own arena of 80 KB
    arena = big._storage.block.arena
    del big
    torchic.sync()
    xs = [torchic.tensor(rng.standard_normal(1000).astype(np.float32)) for _ in range(12)]
    assert any(x._storage.block.arena == arena for x in xs)     # placed in the big arena
    total = xs[0]
    for x in xs[1:]:
        total = total + x
    close(total.numpy(), np.sum([x.numpy().astype(np.float64) for x in xs], axis=0), 1e-5, 1e-5)


def test_an_op_that_cannot_be_cut_names_the_op_and_limit(big_rt, rng):
    a = torchic.tensor(rng.standard_normal((10, 2000)).astype(np.float32))
    b = torchic.tensor(rng.standard_normal((2000, 10)).astype(np.float32))  # B: 80 KB
    c = a @ b           # B too large for a window, and matmul cuts only A's rows / K ...
    close(c.numpy(), a.numpy().astype(np.float64) @ b.numpy(), 1e-4, 1e-3)   # ... K it cuts
    table = torchic.tensor(rng.standard_normal((5000, 2)).astype(np.float32))  # 40 KB table
    out = table[torchic.tensor(np.array([0, 4999, 7]))]
    with pytest.raises(MemoryError, match=rf"gather_rows.*binding \({WINDOW} bytes\)"):
        out.numpy()


def test_dropout_cut_past_a_binding(big_rt, rng):
    # a (301, 71) x spans 6 windows: windows.py cuts dropout as an elementwise op (out and
    # x, the key whole), each part told its first flat index, and must give the bits of
    # the uncut op (the reference), forward and backward; a transposed x too (its parts cut
    # along either axis: out parts that are not contiguous). Odd dims: parts start at odd
    # flat indices, in the middle of a Threefry pair ((3, 4001): contiguous parts too)
    from torchic.testing import np_dropout_mask
    key = torchic.Generator().manual_seed(8).random(2)
    for shape in [(301, 71), (3, 4001)]:
        mask = np_dropout_mask(key, shape, 0.3)
        a = rng.standard_normal(shape).astype(np.float32)
        want = a * mask
        for transposed in (False, True):
            leaf = torchic.tensor(np.ascontiguousarray(a.T) if transposed else a,
                                  requires_grad=True)
            x = leaf.t() if transposed else leaf
            assert spans_windows(leaf, big_rt)
            y = F.dropout(x, 0.3, generator=torchic.Generator().manual_seed(8))
            np.testing.assert_array_equal(y.detach().numpy(), want)
            y.backward(torchic.tensor(a))
            np.testing.assert_array_equal(leaf.grad.numpy(), want.T if transposed else want)


def test_adam_update_cut_into_row_ranges_past_a_binding(big_rt):
    """p, g, m, v larger than a binding are cut along their rows; the (10,) scalars
    are passed whole to every part (the same bits as the NumPy kernel)."""
    from torchic.backends.cpu.numpy_kernels import adam_update
    rng = np.random.default_rng(3)
    p0, g0 = (rng.standard_normal((300, 70)).astype(np.float32) for _ in range(2))
    p = torchic.tensor(p0, requires_grad=True)
    opt = torchic.optim.AdamW([p], lr=0.1, weight_decay=0.5)
    p.grad = torchic.tensor(g0)
    opt.step()
    ref_p, m, v = p0.copy(), np.zeros_like(p0), np.zeros_like(p0)
    s = np.asarray(opt._fused_scalars(opt.param_groups[0], [{"step": 0}])[0], np.float32)
    adam_update(ref_p, (g0, m, v, s), None)
    if big_rt.backend.describe()["adapter_type"] == "CPU":     # lavapipe: IEEE f32, the bits
        np.testing.assert_array_equal(p.detach().numpy(), ref_p)
        np.testing.assert_array_equal(opt.state[p]["exp_avg_sq"].numpy(), v)
    else:   # a GPU's division and sqrt are within WGSL's 2.5 ulp, not correctly rounded
        ulps = 4 * np.finfo(np.float32).eps
        err = np.abs(p.detach().numpy() - ref_p) / (np.abs(ref_p) + 0.1)    # (0.1: the rate)
        assert err.max() <= ulps, err.max()
        np.testing.assert_allclose(opt.state[p]["exp_avg_sq"].numpy(), v, rtol=ulps)


def test_causal_softmax_cut_past_a_binding(big_rt, rng):
    """causal_softmax's (B, T, T) scores past a binding are cut along B, then along the
    query rows, each part's diagonal moved by its first row (ops.py's cut "leading rows"):
    cut as an elementwise op (along the key columns, or without the shift) it was wrong by
    ~1.0; forward and backward (softmax_grad) against float64."""
    from torchic.testing import np_causal_attention, np_log_softmax
    for B in (1, 2):
        q, k, v = (rng.standard_normal((B, 200, 8)).astype(np.float32) for _ in range(3))
        tq, tk, tv = (torchic.tensor(x, requires_grad=True) for x in (q, k, v))
        scores = tq @ tk.transpose(-2, -1)
        assert spans_windows(scores, big_rt)             # (B, 200, 200): 10 windows a batch
        y = F.scaled_dot_product_attention(tq, tk, tv, is_causal=True)
        q64, k64, v64 = (x.astype(np.float64) for x in (q, k, v))
        close(y.detach().numpy(), np_causal_attention(q64, k64, v64), 1e-4, 1e-5)
        y.sum().backward()
        att = np.exp(np_log_softmax(np.where(np.tri(200, 200, 0, bool), q64 @ k64.swapaxes(1, 2)
                                             / np.sqrt(8), -np.inf)))
        close(tv.grad.numpy(), att.swapaxes(1, 2) @ np.ones((B, 200, 8)), 1e-4, 1e-4)


def test_an_op_whose_cut_has_no_rule_is_refused(big_rt, monkeypatch):
    """windows.py cuts an op only by the rule its ops.py row names: an op whose cut has no
    rule is refused with an error naming it, never cut by a default."""
    from torchic.functions.fused import CausalSoftmax
    assert set(windows._RULES) | {ops.CUT_MATMUL_BIAS} == set(ops.CUTS)
    monkeypatch.delitem(windows._RULES, ops.CUT_LEADING_ROWS)
    x = torchic.tensor(np.zeros((1, 200, 200), np.float32))
    with pytest.raises(MemoryError, match="causal_softmax.*no rule to cut it.*leading rows"):
        CausalSoftmax.apply(x, 0).numpy()


# -- every primitive past a binding: the rows of the per-op test table with `big` shapes ----
BIG_CASES = {name: c for name, c in CASES.items() if c.big}


def test_every_primitive_op_has_a_large_tensor_case():
    """Each primitive of ops.py is in the `ops` of a case with `big` shapes, which
    test_case_past_a_binding runs with every one of those ops cut by windows.py."""
    covered = set().union(*(c.ops for c in BIG_CASES.values()))
    assert covered == set(ops.ALL_OPS), \
        f"no large-tensor case: {sorted(set(ops.ALL_OPS) - covered)}"


def _outputs(case, arrays, layout):
    """case.fn on float32 tensors of `arrays` in `layout` (testing.make_input) on the
    current runtime: its output and, when the case checks gradients, its differentiable
    inputs' gradients of sum(out * w)."""
    diff = tuple(range(len(arrays))) if case.grad is True else tuple(case.grad or ())
    ins = [testing.make_input(a, layout, k in diff) for k, a in enumerate(arrays)]
    out = case.fn(*[t for t, _ in ins])
    got = [out.detach().numpy()]
    if diff:
        w = np.cos(np.arange(out.numel())).reshape(tuple(out.shape)).astype(np.float32)
        (out * torchic.tensor(w)).sum().backward()
        got += [ins[k][1].grad.numpy() for k in diff]
    return got


# (case, layout) runs that windows.py refuses, as documented: layer norm's rows of a
# transposed x each span the whole tensor, and a row is never cut
REFUSED = {("layer_norm", "transposed"), ("layer_norm_grad", "transposed")}


@pytest.mark.parametrize("layout", testing.LAYOUTS)
@pytest.mark.parametrize("name", sorted(BIG_CASES))
def test_case_past_a_binding(webgpu_available, monkeypatch, name, layout):
    """A `big` case with a 16 KiB binding, its inputs contiguous, transposed or strided:
    every primitive it claims is cut into parts (windows.run gets it with an operand past
    the binding), its output matches the float64 reference and its gradients the workers
    backend's (the same case, uncut)."""
    case = BIG_CASES[name]
    if layout not in case.layouts:
        pytest.skip(f"{name} runs {case.layouts} only")
    arrays = [a.astype(np.float32).astype(np.float64)
              for a in case.draw(np.random.default_rng(0), case.big)]
    seen, cut, run = set(), set(), windows.run

    def recording(be, op, out, ins, params, depth=0):
        seen.add(op)
        if any(windows.too_big(be.gpu, v) for v in (out, *ins)):
            cut.add(op)         # (windows.run then cuts it, or raises)
        return run(be, op, out, ins, params, depth)
    monkeypatch.setattr(windows, "run", recording)
    torchic.init("webgpu", max_binding=WINDOW)
    try:
        if (name, layout) in REFUSED:
            with pytest.raises(MemoryError, match=rf"'{case.ops[0]}'.*cannot be cut"):
                _outputs(case, arrays, layout)
            return
        got = _outputs(case, arrays, layout)
    finally:
        torchic.shutdown()
    # (another layout may take other primitives: adam's strided parameters its separate ops)
    claimed = set(case.ops) if layout == "contiguous" else set(case.ops) & seen
    assert claimed <= cut, f"{sorted(claimed - cut)} ran whole (nothing to cut)"
    tol = {"atol": 1e-5, "rtol": 1e-4, "grad_atol": 1e-3, "grad_rtol": 1e-3, **case.tol}
    testing.compare(got[0], np.asarray(case.ref(*arrays), np.float64), tol["atol"],
                    tol["rtol"], "out")
    if len(got) > 1:
        torchic.init("workers")
        try:
            want = _outputs(case, arrays, layout)
        finally:
            torchic.shutdown()
        for g, w in zip(got[1:], want[1:]):
            testing.compare(g, w, tol["grad_atol"], tol["grad_rtol"], "grad")


# each big case in every dtype its row lists that webgpu holds (float64 is refused), in its
# stored form past a binding: halves as f32 words, narrow ints / int64 / bool as i32 words
BIG_DTYPES = [(name, code) for name in sorted(BIG_CASES) for code in BIG_CASES[name].dtypes
              if code in dispatcher.backend_class("webgpu").dtypes]


@pytest.mark.parametrize("name, code", BIG_DTYPES)
def test_case_past_a_binding_in_its_dtypes(webgpu_available, monkeypatch, name, code):
    """A `big` case with a 16 KiB binding and inputs of dtype `code` (testing.check_dtype:
    against NumPy in that dtype), some operand past the binding: cut as in float32."""
    case = BIG_CASES[name]
    ints = code not in ("f16", "bf16", "f32", "f64")
    arrays = case.draw(np.random.default_rng(0), case.big, ints=ints)
    cut, run = set(), windows.run

    def recording(be, op, out, ins, params, depth=0):
        if any(windows.too_big(be.gpu, v) for v in (out, *ins)):
            cut.add(op)
        return run(be, op, out, ins, params, depth)
    monkeypatch.setattr(windows, "run", recording)
    torchic.init("webgpu", max_binding=WINDOW)
    try:
        out_code = case.out_dtype(code) if case.out_dtype else None     # (as Case.check_dtype)
        checks.check_dtype(case.fn, case.ref, arrays, code,
                           out_code="b8" if case.family == "compare" else out_code)
    finally:
        torchic.shutdown()
    assert cut, f"{name} in {code}: nothing ran past the binding"
