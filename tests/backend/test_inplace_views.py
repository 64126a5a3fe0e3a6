"""In-place ops on non-leaf tensors and on views of them (issue 39), on every backend: the
values, the gradients and the version counters PyTorch gives, and PyTorch's errors where
PyTorch raises. Each program is written once for either library (`lib`); the gradients are
checked against PyTorch where it is installed and against a float64 NumPy formula."""

import numpy as np
import pytest

import torchic

try:
    import torch
except ImportError:       # the PyTorch comparisons are skipped cleanly
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed")

N, C = 4, 5
W0 = np.linspace(-1.2, 1.3, N * C, dtype=np.float32).reshape(N, C)
K = np.cos(np.arange(N * C, dtype=np.float32)).reshape(N, C)
Y = [1, 0, 4, 4]


def _softmax(x):
    e = np.exp(x - x.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


# -- programs: (w (N, C) leaf, c (2, C) leaf, lib) -> a tensor whose sum is the loss ----------
def cross_entropy_backward(w, c, lib):
    """backprop ninja's exercise 2 (an indexed update, then an in-place divide), with a
    gradient through it (softmax saves its output: the update goes to a product of it)."""
    logits = w * 1
    dlogits = lib.nn.functional.softmax(logits, 1) * 1.0
    dlogits[range(N), lib.tensor(Y)] -= 1
    dlogits /= N
    return dlogits * lib.tensor(K)


def cross_entropy_backward_ref(w, c):
    p = _softmax(w)
    value = p.copy()
    value[range(N), Y] -= 1
    kn = K / N
    return value / N * K, p * (kn - (p * kn).sum(1, keepdims=True)), np.zeros_like(c)


def row_updates(w, c, lib):
    """e[0] -= 1 and e[1] *= c[0] on a non-leaf: views of it modified in place."""
    e = w * 2
    e[0] -= 1
    e[1] *= c[0]
    return e * e


def row_updates_ref(w, c):
    e = 2 * w
    e[0] -= 1
    e[1] *= c[0]
    gw = 2 * e * 2
    gw[1] = 2 * e[1] * 2 * c[0]
    gc = np.zeros_like(c)
    gc[0] = 2 * e[1] * 2 * w[1]
    return e * e, gw, gc


def overlapping_views(w, c, lib):
    """A view modified with a factor that requires grad; another view of the same base made
    before the update sees the new values and their graph."""
    b = w * 1
    v1, v2 = b[0:2], b[1:3]
    v1 *= c
    return lib.cat([b * lib.tensor(K), v2 * 3])


def overlapping_views_ref(w, c):
    b = w.copy()
    b[0:2] *= c
    m = K.copy()
    m[1:3] += 3
    gw = m.copy()
    gw[0:2] *= c
    gc = w[0:2] * m[0:2]
    return np.concatenate([b * K, b[1:3] * 3]), gw, gc


def base_updated_after_view(w, c, lib):
    """The base changed in place: its older view reads through the base's new graph."""
    b = w * 1
    v = b[:, 1:3].t()
    b *= 3
    b[2:] += c
    return v * v


def base_updated_after_view_ref(w, c):
    b = 3 * w
    b[2:] += c
    v = b[:, 1:3].T
    gw = np.zeros_like(w)
    gw[:, 1:3] = (2 * v).T * 3
    gc = np.zeros_like(c)
    gc[:, 1:3] = (2 * v).T[2:]
    return v * v, gw, gc


def buffer_filled_through_views(w, c, lib):
    """A plain zeros buffer filled through a view with values that require grad; another
    view of it, made before, carries the gradient (PyTorch regenerates its grad_fn)."""
    buf = lib.zeros(N, C)
    first, second = buf[0:2], buf[1:3]
    first.add_(w[0:2] * c)
    return second * lib.tensor(K[0:2])


def buffer_filled_through_views_ref(w, c):
    buf = np.zeros((N, C), np.float32)
    buf[0:2] += w[0:2] * c
    gw = np.zeros_like(w)
    gw[1] = K[0] * c[1]
    gc = np.zeros_like(c)
    gc[1] = K[0] * w[1]
    return buf[1:3] * K[0:2], gw, gc


def view_of_a_view(w, c, lib):
    """An in-place op through a view of a view (transposed, sliced, unsqueezed)."""
    b = w * 1
    v = b.t()[1:3].unsqueeze(0)
    v.mul_(c[:, :N])
    v.sub_(1.0)
    return b * b


def view_of_a_view_ref(w, c):
    b = w.copy()
    b[:, 1:3] = b[:, 1:3] * c[:, :N].T - 1
    f = np.ones_like(w)
    f[:, 1:3] = c[:, :N].T
    gc = np.zeros_like(c)
    gc[:, :N] = (2 * b[:, 1:3] * w[:, 1:3]).T
    return b * b, 2 * b * f, gc


PROGRAMS = [cross_entropy_backward, row_updates, overlapping_views, base_updated_after_view,
            buffer_filled_through_views, view_of_a_view]
REFS = {p: globals()[p.__name__ + "_ref"] for p in PROGRAMS}
C0 = np.linspace(0.5, 1.7, 2 * C, dtype=np.float32).reshape(2, C)


def _run(lib, program):
    w = lib.tensor(W0, requires_grad=True)
    c = lib.tensor(C0, requires_grad=True)
    out = program(w, c, lib)
    out.sum().backward()
    grad = [np.zeros(t.shape, np.float32) if t.grad is None else t.grad.numpy() for t in (w, c)]
    return out.detach().numpy(), grad[0], grad[1]


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.__name__)
def test_inplace_values_and_gradients_match_numpy(backend, program):
    got = _run(torchic, program)
    want = REFS[program](W0.astype(np.float64), C0.astype(np.float64))
    for g, x in zip(got, want):
        np.testing.assert_allclose(g, x, rtol=1e-5, atol=1e-5)


@needs_torch
@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.__name__)
def test_inplace_values_and_gradients_match_pytorch(backend, program):
    for g, x in zip(_run(torchic, program), _run(torch, program)):
        np.testing.assert_allclose(g, x, rtol=1e-5, atol=1e-6)


def _lecture_cell(lib):
    """backprop ninja, exercise 2, verbatim: the cross-entropy gradient written by hand
    (dlogits from the graph's softmax, updated in place), against autograd's."""
    F = lib.nn.functional
    logits = lib.tensor(W0, requires_grad=True) * 1
    logits.retain_grad()
    Yb = lib.tensor(Y)
    n = N
    F.cross_entropy(logits, Yb).backward()
    dlogits = F.softmax(logits, 1)
    dlogits[range(n), Yb] -= 1
    dlogits /= n
    return dlogits, logits.grad


def test_backprop_ninja_cross_entropy_cell(backend):
    dlogits, grad = _lecture_cell(torchic)
    want = _softmax(W0.astype(np.float64))
    want[range(N), Y] -= 1
    np.testing.assert_allclose(dlogits.detach().numpy(), want / N, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(dlogits.detach().numpy(), grad.numpy(), rtol=1e-5, atol=1e-6)
    assert dlogits.requires_grad and dlogits._version == 2
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        dlogits.sum().backward()      # softmax saved its output, which was overwritten


@needs_torch
def test_backprop_ninja_cross_entropy_cell_matches_pytorch(backend):
    (d, _), (td, _) = _lecture_cell(torchic), _lecture_cell(torch)
    np.testing.assert_allclose(d.detach().numpy(), td.detach().numpy(), rtol=1e-5, atol=1e-6)
    assert d._version == td._version
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        td.sum().backward()


def _versions(lib):
    w = lib.tensor(W0, requires_grad=True)
    b = w * 1
    v = b[0]
    seen = [b._version, v._version]
    v += 1
    seen += [b._version, v._version]
    b[1] -= 2                   # a read, an in-place sub on it, a write back: 2
    seen.append(b._version)
    b /= 3
    seen += [b._version, v._version]
    return seen


def test_version_counters_count_inplace_writes(backend):
    assert _versions(torchic) == [0, 0, 1, 1, 3, 4, 4]


@needs_torch
def test_version_counters_match_pytorch(backend):
    assert _versions(torchic) == _versions(torch)


def test_inplace_errors_are_pytorchs(backend):
    w = torchic.tensor(W0, requires_grad=True)
    with pytest.raises(RuntimeError, match="^a leaf Variable that requires grad is being used"):
        w.add_(1)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad"):
        w[0].add_(1)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad"):
        w[0] -= 1
    b = w * 1
    with torchic.no_grad():
        v = b[0:2]
    with pytest.raises(RuntimeError, match="view was created in no_grad mode"):
        v.mul_(2)
    buf = torchic.zeros(3)
    with torchic.no_grad():
        part = buf[0:2]
    with pytest.raises(RuntimeError, match="view was created in no_grad mode"):
        part.add_(w[0, 0:2])
    with torchic.no_grad():        # inside no_grad nothing is recorded: allowed
        part.add_(w[0, 0:2])
        w[0] -= 1
    buf = torchic.zeros(3)
    with torchic.no_grad():
        part = buf[0:2]
    buf[2:].add_(w[0, 0:1])        # the base joins the graph after its no_grad view was made
    with pytest.raises(RuntimeError, match="view was created in no_grad mode"):
        part.mul_(2)


def test_modifying_a_saved_tensor_fails_at_backward(backend):
    w = torchic.tensor(W0, requires_grad=True)
    b = w * 1
    h = b * b                      # saves b
    b[0] += 1                      # through a view: b's storage is at a new version
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        h.sum().backward()
    e = w.exp()                    # exp saves its output
    e[1:] *= 2
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        e.sum().backward()


@needs_torch
def test_modifying_a_saved_tensor_fails_in_pytorch_too(backend):
    for lib in (torch, torchic):
        w = lib.tensor(W0, requires_grad=True)
        e = w.exp()
        e[1:] *= 2
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            e.sum().backward()


def test_retain_grad_follows_the_tensor_through_an_inplace_op(backend):
    w = torchic.tensor(W0, requires_grad=True)
    b = w * 1
    b.retain_grad()
    b[0] *= 2
    (b * 3).sum().backward()
    np.testing.assert_allclose(b.grad.numpy(), np.full((N, C), 3.0))
    want = np.full((N, C), 3.0)
    want[0] = 6.0
    np.testing.assert_allclose(w.grad.numpy(), want)


def _overwrites(lib):
    """fill_ and copy_ of constants into a non-leaf keep it in the graph (its old values get
    zeros); fill_ with a 0-d tensor that requires grad sends it the sum of the gradient."""
    w = lib.tensor(W0, requires_grad=True)
    s = lib.tensor(2.0, requires_grad=True)
    b = w * 2
    b.fill_(1.0)
    c = w * 3
    c.copy_(lib.zeros(N, C))
    d = w * 1
    d[1:3].fill_(s)
    (b.sum() + (c + w).sum() + (d * d).sum()).backward()
    return [b.requires_grad, c.requires_grad, w.grad.numpy(), s.grad.numpy()]


def test_overwriting_inplace_ops_keep_the_tensor_in_the_graph(backend):
    b_grad, c_grad, w_grad, s_grad = _overwrites(torchic)
    assert b_grad and c_grad
    want = 1 + 2 * W0
    want[1:3] = 1.0
    np.testing.assert_allclose(w_grad, want, rtol=1e-6)
    np.testing.assert_allclose(s_grad, 2 * 2.0 * 2 * C, rtol=1e-6)


@needs_torch
def test_overwriting_inplace_ops_match_pytorch(backend):
    for got, want in zip(_overwrites(torchic), _overwrites(torch)):
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_arithmetic_in_place_into_an_expanded_tensor_is_refused(backend):
    e = torchic.zeros(3).expand(2, 3)
    for op in (lambda: e.add_(1.0), lambda: e.mul_(2.0), lambda: e.fill_(1.0)):
        with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
            op()
    if torch is not None:
        with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
            torch.zeros(3).expand(2, 3).add_(1.0)


# -- random programs: views of views of a non-leaf, each updated in place ---------------------
VIEWS = [
    ("rows", lambda t: t[1:3] if t.ndim and t.shape[0] >= 3 else None),
    ("step", lambda t: t[..., ::2] if t.ndim else None),
    ("t", lambda t: t.t() if t.ndim == 2 else None),
    ("row", lambda t: t[0] if t.ndim >= 2 else None),
    ("flat", lambda t: t.view(-1) if t.is_contiguous() else None),
    ("unsqueeze", lambda t: t.unsqueeze(0) if t.ndim < 3 else None),
    ("transpose", lambda t: t.transpose(0, -1) if t.ndim >= 2 else None),
]
OPS = ["add", "sub", "mul", "div", "fill", "copy", "setitem"]


def _random_program(lib, seed):
    """A non-leaf (or a zeros buffer) and views of it (made from it and from each other) in
    a pool; four times a view is made, then a pool member is updated in place (by an operand
    that requires grad or a constant); the loss weighs every pool member. Returns the loss,
    every leaf's gradient and every pool member's values."""
    rng = np.random.default_rng(seed)
    w = lib.tensor(rng.uniform(0.5, 1.5, (4, 6)).astype(np.float32), requires_grad=True)
    leaves, pool = [w], [w * 1.5 if seed % 3 else lib.zeros(4, 6)]    # a non-leaf or a buffer
    for _ in range(4):
        made = [m for m in (f(pool[rng.integers(len(pool))]) for _, f in VIEWS)
                if m is not None]
        pool.append(made[rng.integers(len(made))])
        t = pool[rng.integers(len(pool))]
        op = OPS[rng.integers(len(OPS))]
        u = lib.tensor(rng.uniform(0.5, 1.5, t.shape).astype(np.float32), requires_grad=True)
        leaves.append(u)
        # PyTorch regenerates a view's grad_fn when it is read; an in-place op on a view not
        # read since its base joined the graph is refused as a "leaf" (torchic regenerates
        # them at once: it behaves as PyTorch does after the read)
        t.grad_fn  # noqa: B018
        if op in ("add", "sub", "mul", "div"):
            getattr(t, op + "_")(u if rng.integers(2) else 1.25)
        elif op == "fill":
            t.fill_(0.75)
        elif op == "copy":
            t.copy_(u * 2)
        elif t.ndim:
            t[0] = u[0] * 3
    loss = w.sum() + sum((p * float(i + 1)).sum() for i, p in enumerate(pool))
    loss.backward()
    grads = [np.zeros(x.shape, np.float32) if x.grad is None else x.grad.numpy() for x in leaves]
    return [loss.item()] + grads + [p.detach().numpy() for p in pool]


def test_random_inplace_programs_on_views_match_pytorch(backend):
    if torch is None:
        pytest.skip("torch is not installed")
    for seed in range(24):
        got, want = _random_program(torchic, seed), _random_program(torch, seed)
        for i, (g, x) in enumerate(zip(got, want, strict=True)):
            np.testing.assert_allclose(g, x, rtol=1e-5, atol=1e-5,
                                       err_msg=f"seed {seed}, result {i}")
