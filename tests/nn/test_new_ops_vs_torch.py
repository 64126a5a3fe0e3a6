"""Issue 15's ops against the installed PyTorch: values, gradients, return types, errors.

Each test runs the same call on torch and on torchic (every backend) and compares. The
float64 parity of each op is in torchic.testing.CASES (tests/backend/test_ops.py); this
file checks what a NumPy reference cannot: PyTorch's argument spellings, defaults, named
tuples, gradients at ties and bounds, and exception classes.
"""

import math

import numpy as np
import pytest

import torchic
import torchic.nn as tnn
import torchic.nn.functional as TF

torch = pytest.importorskip("torch")
F = torch.nn.functional


def _pair(array, grad=False):
    """(torch tensor, torchic tensor) holding the same float32 data."""
    a = np.asarray(array, np.float32)
    return (torch.tensor(a, requires_grad=grad), torchic.tensor(a, requires_grad=grad))


def _same(got, want, atol=1e-6, rtol=1e-5):
    want = want.detach().numpy() if hasattr(want, "detach") else np.asarray(want)
    got = got.detach().numpy() if hasattr(got, "numpy") else np.asarray(got)
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), atol=atol,
                               rtol=rtol, equal_nan=True)


def _grads_match(fn_torch, fn_torchic, data, atol=1e-6, rtol=1e-5, weights=None):
    """Values and d(sum(f * w))/dx of both libraries on the same data."""
    t, c = _pair(data, grad=True)
    yt, yc = fn_torch(t), fn_torchic(c)
    _same(yc, yt, atol, rtol)
    w = np.random.default_rng(0).standard_normal(tuple(yt.shape)).astype(np.float32)
    (yt * torch.tensor(w)).sum().backward()
    (yc * torchic.tensor(w)).sum().backward()
    _same(c.grad, t.grad, atol, rtol)


RNG = np.random.default_rng(15)
X = RNG.standard_normal((3, 5)).astype(np.float32)


# -- erf / activations ----------------------------------------------------------------------
def test_erf_within_2e7_of_math_erf(backend):
    x = np.concatenate([np.linspace(-6, 6, 60001), np.geomspace(1e-30, 1e30, 2001),
                        -np.geomspace(1e-30, 1e30, 2001), [0.0, -0.0, 1.0, -1.0, 0.99999994,
                                                           1.0000001, 10.0]]).astype(np.float32)
    got = torchic.erf(torchic.tensor(x)).numpy().astype(np.float64)
    want = np.array([math.erf(v) for v in x.astype(np.float64)])
    err = np.abs(got - want)
    assert err.max() <= 2e-7, f"erf({x[err.argmax()]!r}) off by {err.max():.3g}"
    assert np.isnan(torchic.erf(torchic.tensor([float("nan")])).item())
    assert torchic.erf(torchic.tensor([float("inf"), -float("inf")])).tolist() == [1.0, -1.0]
    _grads_match(torch.erf, torchic.erf, np.linspace(-4, 4, 41))


@pytest.mark.parametrize("name", ["gelu", "gelu_tanh", "silu", "leaky_relu", "elu"])
def test_activation_functions_match_torch(backend, name):
    calls = {"gelu": (F.gelu, TF.gelu),
             "gelu_tanh": (lambda a: F.gelu(a, approximate="tanh"),
                           lambda a: TF.gelu(a, approximate="tanh")),
             "silu": (F.silu, TF.silu),
             "leaky_relu": (lambda a: F.leaky_relu(a, 0.1), lambda a: TF.leaky_relu(a, 0.1)),
             "elu": (lambda a: F.elu(a, alpha=0.7), lambda a: TF.elu(a, alpha=0.7))}
    ft, fc = calls[name]
    data = np.concatenate([np.linspace(-8, 8, 33), [0.0, 1e-3, -1e-3, 30.0, -30.0]])
    # gelu_tanh's gradient holds x * (1 - tanh^2): tanh's absolute error bound (1e-6, the
    # tanh row of testing.CASES) times |x| <= 8 near saturation
    _grads_match(ft, fc, data, atol=1e-5 if name == "gelu_tanh" else 2e-6)


def test_activation_modules_match_torch(backend):
    t, c = _pair(X)
    for mt, mc in [(torch.nn.GELU(), tnn.GELU()), (torch.nn.GELU("tanh"), tnn.GELU("tanh")),
                   (torch.nn.SiLU(), tnn.SiLU()), (torch.nn.LeakyReLU(0.2), tnn.LeakyReLU(0.2)),
                   (torch.nn.ELU(), tnn.ELU())]:
        _same(mc(c), mt(t), atol=1e-6)
        assert repr(mc) == repr(mt)
    with pytest.raises(RuntimeError, match="approximate argument"):
        F.gelu(t, approximate="exact")
    with pytest.raises(RuntimeError, match="approximate argument"):
        TF.gelu(c, approximate="exact")


def test_inplace_activation(backend):
    c = torchic.tensor(X.copy())
    assert TF.leaky_relu(c, 0.5, inplace=True) is c
    _same(c, F.leaky_relu(torch.tensor(X), 0.5))


# -- the GPT lecture's attention -------------------------------------------------------------
def _attention(lib, x, wq, wk, n_head):
    B, T, C = x.shape
    tril = lib.tril(lib.ones(T, T))
    q = (x @ wq).view(B, T, n_head, C // n_head).transpose(1, 2)
    k = (x @ wk).view(B, T, n_head, C // n_head).transpose(1, 2)
    att = q @ k.transpose(-2, -1) * (1.0 / math.sqrt(k.size(-1)))
    att = att.masked_fill(tril[:T, :T] == 0, float("-inf"))
    return att.softmax(dim=-1)


def test_causal_attention_mask_matches_torch(backend):
    T = 5
    tril_t, tril_c = torch.tril(torch.ones(T, T)), torchic.tril(torchic.ones(T, T))
    wei_t = torch.zeros((T, T)).masked_fill(tril_t == 0, float("-inf"))
    wei_c = torchic.zeros((T, T)).masked_fill(tril_c == 0, float("-inf"))
    _same(TF.softmax(wei_c, dim=-1), F.softmax(wei_t, dim=-1))
    x = RNG.standard_normal((2, T, 4)).astype(np.float32)
    wq, wk = (RNG.standard_normal((4, 4)).astype(np.float32) for _ in range(2))
    xt, xc = _pair(x, grad=True)
    at = _attention(torch, xt, torch.tensor(wq), torch.tensor(wk), 2)
    ac = _attention(torchic, xc, torchic.tensor(wq), torchic.tensor(wk), 2)
    _same(ac, at, atol=1e-6)
    for dim in (1, 2):     # softmax over other dims of the 4-D tensor too
        _same(torchic.tensor(at.detach().numpy()).softmax(dim), at.detach().softmax(dim))
    (at * at).sum().backward()
    (ac * ac).sum().backward()
    _same(xc.grad, xt.grad, atol=1e-5)


def test_masked_fill_forms(backend):
    t, c = _pair(X)
    mask = (RNG.random((5,)) > 0.5).astype(np.float32)
    want = t.masked_fill(torch.tensor(mask).bool(), 2.5)
    bool_mask = torchic.tensor(mask.astype(bool))
    _same(c.masked_fill(bool_mask, 2.5), want)
    _same(c.masked_fill(bool_mask, torchic.tensor(2.5)), want)   # 0-d value
    for lib, x, m in ((torch, t, torch.tensor(mask)), (torchic, c, torchic.tensor(mask))):
        with pytest.raises(RuntimeError, match="only supports boolean masks"):
            x.masked_fill(m, 2.5)                                # a float mask: refused
    c2 = torchic.tensor(X.copy())
    assert c2.masked_fill_(bool_mask, 2.5) is c2
    _same(c2, want)
    for lib, x, m in ((torch, t, torch.tensor(mask).bool()), (torchic, c, bool_mask)):
        with pytest.raises(RuntimeError, match="0-dimensional value tensor"):
            x.masked_fill(m, lib.ones(2))
    _grads_match(lambda a: a.masked_fill(torch.tensor(mask).bool(), 0.0),
                 lambda a: a.masked_fill(torchic.tensor(mask.astype(bool)), 0.0), X)


def test_tril_triu_match_torch(backend):
    x = RNG.standard_normal((2, 4, 6)).astype(np.float32)
    for k in (-2, 0, 1, 7):
        _grads_match(lambda a: torch.tril(a, k), lambda a: torchic.tril(a, k), x)
        _grads_match(lambda a: a.triu(diagonal=k), lambda a: a.triu(diagonal=k), x)
    for lib in (torch, torchic):
        with pytest.raises(RuntimeError, match="at least 2 dimensions"):
            lib.tril(lib.ones(3))


# -- ordering ----------------------------------------------------------------------------------
def test_sort_argsort_topk_match_torch(backend):
    x = RNG.standard_normal((4, 6)).astype(np.float32)
    t, c = _pair(x)
    for kw in ({}, {"dim": 0}, {"descending": True}, {"dim": 0, "descending": True}):
        vt, it = torch.sort(t, **kw)
        out = torchic.sort(c, **kw)
        _same(out.values, vt)
        assert out.indices.tolist() == it.tolist() and out[1].dtype == torchic.int64
        assert c.argsort(**kw).tolist() == t.argsort(**kw).tolist()
    for kw in ({}, {"dim": 0}, {"largest": False}, {"k": 1, "dim": -1, "largest": False}):
        args = {"k": 3, **kw}
        vt, it = torch.topk(t, **args)
        values, indices = c.topk(**args)
        _same(values, vt)
        assert indices.tolist() == it.tolist()
    _grads_match(lambda a: a.topk(2, dim=1).values, lambda a: a.topk(2, dim=1).values, x)
    _grads_match(lambda a: a.sort(0, descending=True)[0], lambda a: a.sort(0, True)[0], x)
    with pytest.raises(RuntimeError, match="selected index k out of range"):
        t.topk(7)
    with pytest.raises(RuntimeError, match="selected index k out of range"):
        c.topk(7)
    with pytest.raises(IndexError):
        t.sort(dim=2)
    with pytest.raises(IndexError):
        c.sort(dim=2)


def test_sort_stable_ties_and_nan(backend):
    x = np.array([[2.0, 1.0, 2.0, float("nan"), 1.0, -float("inf"), 2.0]], np.float32)
    t, c = _pair(x)
    for descending in (False, True):
        vt, it = torch.sort(t, descending=descending, stable=True)
        vc, ic = torchic.sort(c, descending=descending, stable=True)
        _same(vc, vt)
        assert ic.tolist() == it.tolist()
    vt, it = torch.sort(torch.tensor(3.0))                     # 0-d
    vc, ic = torchic.sort(torchic.tensor(3.0))
    assert vc.shape == () and vc.item() == 3.0 and ic.item() == it.item() == 0


def test_cumsum_matches_torch(backend):
    x = RNG.standard_normal((3, 9, 2)).astype(np.float32)
    for dim in (0, 1, -1):
        _grads_match(lambda a: torch.cumsum(a, dim), lambda a: torchic.cumsum(a, dim), x,
                     atol=1e-5)
    ints = torchic.tensor([[1, 2, 3], [4, 5, 6]])
    assert ints.cumsum(1).tolist() == [[1, 3, 6], [4, 9, 15]]
    assert ints.cumsum(1).dtype == torchic.int64


def test_roll_split_chunk_match_torch(backend):
    x = RNG.standard_normal((4, 5)).astype(np.float32)
    t, c = _pair(x)
    for args in ((1,), (-3,), (2, 0), (-1, 1), ((1, 2), (0, 1)), (7, 1)):
        _grads_match(lambda a: torch.roll(a, *args), lambda a: torchic.roll(a, *args), x)
    for args in ((2,), (2, 1), ([1, 3], 0), ([2, 0, 3], -1), (5, 1)):
        pt, pc = torch.split(t, *args), c.split(*args)
        assert len(pt) == len(pc)
        for a, b in zip(pc, pt):
            _same(a, b)
    for args in ((2,), (3, 1), (4, -1), (10, 0)):
        pt, pc = t.chunk(*args), torchic.chunk(c, *args)
        assert [tuple(p.shape) for p in pc] == [tuple(p.shape) for p in pt]
    _grads_match(lambda a: torch.cat(a.chunk(2, 1)[::-1], 1),
                 lambda a: torchic.cat(a.chunk(2, 1)[::-1], 1), x)
    for lib, a in ((torch, t), (torchic, c)):
        with pytest.raises(RuntimeError, match="split_with_sizes expects split_sizes to sum"):
            a.split([1, 2])
        with pytest.raises(RuntimeError, match="chunk expects `chunks` to be greater than 0"):
            a.chunk(0)
        with pytest.raises(RuntimeError, match="shifts and dimensions must align"):
            lib.roll(a, (1, 2), (0,))


# -- clamp, all / any, isclose -------------------------------------------------------------
def test_clamp_matches_torch(backend):
    x = np.array([[-2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0, float("nan")]], np.float32)
    for kw in ({"min": -1.0, "max": 1.0}, {"min": 0.0}, {"max": 0.5}, {"min": 1.0, "max": -1.0}):
        # the gradient at the bounds (x == min, x == max) is 1, as in PyTorch (at a NaN
        # input torchic passes the gradient through, PyTorch gives 0: not compared)
        _same(torchic.clamp(torchic.tensor(x), **kw), torch.clamp(torch.tensor(x), **kw))
        _grads_match(lambda a: torch.clamp(a, **kw), lambda a: torchic.clamp(a, **kw), x[:, :7])
        _grads_match(lambda a: a.clip(**kw), lambda a: a.clip(**kw), x[:, :7])
    lo, hi = _pair(RNG.uniform(-1, 0, (1, 8))), _pair(RNG.uniform(0, 1, (8,)))
    lt, lc = (torch.tensor(lo[0].numpy(), requires_grad=True),
              torchic.tensor(lo[1].numpy(), requires_grad=True))
    yt = torch.clamp(torch.tensor(x), lt, hi[0])
    yc = torchic.clamp(torchic.tensor(x), lc, hi[1])
    _same(yc, yt)
    yt.nansum().backward()
    yc.where(yc == yc, 0.0).sum().backward()
    _same(lc.grad, lt.grad)
    c = torchic.tensor(x.copy())
    assert c.clamp_(-1, 1) is c
    _same(c, torch.tensor(x).clamp(-1, 1))
    assert torchic.tensor([1, 5, 9]).clamp(2, 6).tolist() == [2, 5, 6]
    for lib in (torch, torchic):
        with pytest.raises(RuntimeError, match="At least one of 'min' or 'max'"):
            lib.clamp(lib.ones(2))


def test_all_any_isclose_match_torch(backend):
    x = np.array([[0.0, 1.0, 2.0], [3.0, float("nan"), 4.0], [0.0, 0.0, 0.0]], np.float32)
    t, c = _pair(x)
    for kw in ({}, {"dim": 1}, {"dim": 0, "keepdim": True}):
        _same(c.all(**kw), t.all(**kw).float())
        _same(torchic.any(c, **kw), torch.any(t, **kw).float())
    assert bool(torchic.tensor([1, 2]).all()) and not bool(torchic.zeros(3).any())
    a = np.array([1.0, 1.0, float("inf"), float("inf"), float("nan"), 1e-9, 100.0], np.float32)
    b = np.array([1.0, 1.0 + 1e-6, float("inf"), 1e38, float("nan"), 0.0, 100.1], np.float32)
    for kw in ({}, {"equal_nan": True}, {"rtol": 1e-2}, {"atol": 1e-5, "rtol": 0.0}):
        _same(torchic.isclose(torchic.tensor(a), torchic.tensor(b), **kw),
              torch.isclose(torch.tensor(a), torch.tensor(b), **kw).float())
        assert torchic.allclose(torchic.tensor(a), torchic.tensor(b), **kw) == \
            torch.allclose(torch.tensor(a), torch.tensor(b), **kw)
    assert torchic.tensor(X).allclose(torchic.tensor(X + 1e-7)) is True


def test_histc_histogram_match_torch(backend):
    x = RNG.standard_normal(200).astype(np.float32)
    t, c = _pair(x)
    for kw in ({}, {"bins": 7}, {"bins": 4, "min": -1, "max": 1}, {"bins": 3, "min": 5, "max": 6}):
        _same(torchic.histc(c, **kw), torch.histc(t, **kw))
    _same(torchic.tensor([1.0, 1.0, 1.0]).histc(4), torch.tensor([1.0, 1.0, 1.0]).histc(4))
    for kw in ({"bins": 5}, {"bins": 4, "range": (-1.0, 2.0)}, {"bins": 6, "density": True}):
        ht, et = torch.histogram(t, **kw)
        out = torchic.histogram(c, **kw)
        _same(out.hist if hasattr(out, "hist") else out[0], ht, atol=1e-6)
        _same(out[1], et, atol=1e-6)


def test_var_std_spellings_match_torch(backend):
    t, c = _pair(X)
    for args, kw in [((), {}), ((1,), {}), ((1, True), {}), ((1, False, True), {}), ((False,), {}),
                     ((), {"correction": 0}), ((0,), {"correction": 2, "keepdim": True}),
                     ((1,), {"unbiased": False})]:
        _same(c.var(*args, **kw), t.var(*args, **kw))
        _same(torchic.std(c, *args, **kw), torch.std(t, *args, **kw))


# -- cross_entropy ---------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(6, 5), (2, 5, 3), (2, 4, 3, 2), (5,)], ids=str)
@pytest.mark.parametrize("kw", [{}, {"ignore_index": 1}, {"label_smoothing": 0.1},
                                {"reduction": "sum", "ignore_index": 0},
                                {"reduction": "none", "label_smoothing": 0.3}], ids=str)
def test_cross_entropy_matches_torch(backend, shape, kw):
    x = RNG.standard_normal(shape).astype(np.float32)
    classes = shape[0] if len(shape) == 1 else shape[1]
    tshape = () if len(shape) == 1 else (shape[0],) + shape[2:]
    target = RNG.integers(0, classes, tshape)
    if target.ndim:
        target.flat[0] = -100              # the default ignore_index
        if "ignore_index" in kw:
            target.flat[0] = kw["ignore_index"]
    tt, tc = torch.tensor(target), torchic.tensor(target)
    _grads_match(lambda a: F.cross_entropy(a, tt, **kw), lambda a: TF.cross_entropy(a, tc, **kw),
                 x, atol=1e-5)


def test_cross_entropy_probability_targets_and_all_ignored(backend):
    x = RNG.standard_normal((4, 3)).astype(np.float32)
    p = RNG.dirichlet(np.ones(3), 4).astype(np.float32)
    for kw in ({}, {"label_smoothing": 0.2}, {"reduction": "none"}):
        _grads_match(lambda a: F.cross_entropy(a, torch.tensor(p), **kw),
                     lambda a: TF.cross_entropy(a, torchic.tensor(p), **kw), x)
    ignored = np.full(4, -100)          # every target ignored: nan, and a zero gradient
    xt, xc = _pair(x, grad=True)
    lt = F.cross_entropy(xt, torch.tensor(ignored))
    lc = TF.cross_entropy(xc, torchic.tensor(ignored))
    assert math.isnan(lt.item()) and math.isnan(lc.item())
    lt.backward()
    lc.backward()
    _same(xc.grad, xt.grad)



@pytest.mark.parametrize("kw", [{"ignore_index": -1}, {"ignore_index": -1, "reduction": "sum"},
                                {"reduction": "none"}, {"label_smoothing": 0.2},
                                {"ignore_index": -1, "label_smoothing": 0.1, "reduction": "none"}],
                         ids=str)
def test_cross_entropy_loss_module_takes_torchs_arguments(backend, kw):
    x = RNG.standard_normal((6, 4)).astype(np.float32)
    ignored = kw.get("ignore_index", -100)
    target = np.array([0, ignored, 3, 1, 2, ignored])
    lt, lc = torch.nn.CrossEntropyLoss(**kw), tnn.CrossEntropyLoss(**kw)
    assert (lc.ignore_index, lc.reduction, lc.label_smoothing, lc.weight) == \
        (lt.ignore_index, lt.reduction, lt.label_smoothing, lt.weight)
    tt, tc = torch.tensor(target), torchic.tensor(target)
    _grads_match(lambda a: lt(a, tt), lambda a: lc(a, tc), x, atol=1e-5)
    w = np.array([0.5, 1.0, 2.0, 3.0], np.float32)      # class weights, as PyTorch's
    lt, lc = torch.nn.CrossEntropyLoss(weight=torch.tensor(w), **kw), \
        tnn.CrossEntropyLoss(weight=torchic.tensor(w), **kw)
    _grads_match(lambda a: lt(a, tt), lambda a: lc(a, tc), x, atol=1e-5)


# -- gradient clipping --------------------------------------------------------------------
def _two_models():
    mt = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Tanh(), torch.nn.Linear(3, 2))
    mc = torchic.nn.Sequential(torchic.nn.Linear(4, 3), torchic.nn.Tanh(),
                               torchic.nn.Linear(3, 2))
    for pt, pc in zip(mt.parameters(), mc.parameters()):
        with torchic.no_grad():
            pc.copy_(torchic.tensor(pt.detach().numpy()))
    x = RNG.standard_normal((5, 4)).astype(np.float32)
    (mt(torch.tensor(x)) ** 2).sum().backward()
    (mc(torchic.tensor(x)) ** 2).sum().backward()
    return mt, mc


@pytest.mark.parametrize("norm_type", [2.0, 1, float("inf")])
@pytest.mark.parametrize("max_norm", [0.05, 1e6])
def test_clip_grad_norm_matches_torch(backend, norm_type, max_norm):
    mt, mc = _two_models()
    nt = torch.nn.utils.clip_grad_norm_(mt.parameters(), max_norm, norm_type=norm_type)
    nc = torchic.nn.utils.clip_grad_norm_(mc.parameters(), max_norm, norm_type=norm_type)
    assert isinstance(nc, torchic.Tensor) and nc.shape == ()
    _same(nc, nt, atol=1e-5)
    for pt, pc in zip(mt.parameters(), mc.parameters()):
        _same(pc.grad, pt.grad, atol=1e-6)


def test_clip_grad_value_and_nonfinite(backend):
    mt, mc = _two_models()
    assert torch.nn.utils.clip_grad_value_(mt.parameters(), 0.1) is None
    assert torchic.nn.utils.clip_grad_value_(mc.parameters(), 0.1) is None
    for pt, pc in zip(mt.parameters(), mc.parameters()):
        _same(pc.grad, pt.grad)
    p = torchic.nn.Parameter(torchic.ones(3))
    p.grad = torchic.tensor([1.0, float("inf"), 0.0])
    with pytest.raises(RuntimeError, match="non-finite"):
        torchic.nn.utils.clip_grad_norm_(p, 1.0, error_if_nonfinite=True)
    q = torch.nn.Parameter(torch.ones(3))
    q.grad = torch.tensor([1.0, float("inf"), 0.0])
    with pytest.raises(RuntimeError, match="non-finite"):
        torch.nn.utils.clip_grad_norm_(q, 1.0, error_if_nonfinite=True)
    assert torchic.nn.utils.clip_grad_norm_([], 1.0).item() == 0.0
