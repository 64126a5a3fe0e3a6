"""The dropout primitive (x times a Threefry-2x32-20 mask, the mask never stored) on every
backend, forward and backward. Element i's mask uses word i & 1 of the evaluation at counter
(i >> 1, 0): one evaluation serves two elements.

The reference is testing.threefry2x32, plain Python integers, checked here against the
published known answers; the workers kernel's vectorised NumPy version is checked against
it, and every backend's masks (dropout of ones) against both, bit for bit (so the backends
agree with each other: also checked directly). The backward is the same op on the gradient
with the same key: its masks are checked the same way. The CASES rows "dropout" /
"dropout_3d_high_p" cover values and gradients on every layout (tests/backend/test_ops.py).
"""

import math
import os

import numpy as np
import pytest

import torchic
import torchic.nn.functional as F
from torchic import dispatcher, raw
from torchic.backends.cpu.numpy_kernels import threefry2x32_words
from torchic.testing import np_dropout_mask, threefry2x32

M = 0xFFFFFFFF


def test_threefry_reference_known_answers():
    # Random123's known-answer vectors for threefry2x32_20
    assert threefry2x32((0, 0), (0, 0)) == (0x6b200159, 0x99ba4efe)
    assert threefry2x32((M, M), (M, M)) == (0x1cb996fc, 0xbb002be7)
    assert threefry2x32((0x13198a2e, 0x03707344), (0x243f6a88, 0x85a308d3)) == (0xc4923a9c,
                                                                                 0x483df7a0)


def test_numpy_threefry_known_answers():
    # the same vectors through the workers kernel's vectorised NumPy version (both words,
    # and so the final key injection of both)
    for key, ctr, want in [((0, 0), (0, 0), (0x6b200159, 0x99ba4efe)),
                           ((M, M), (M, M), (0x1cb996fc, 0xbb002be7)),
                           ((0x13198a2e, 0x03707344), (0x243f6a88, 0x85a308d3),
                            (0xc4923a9c, 0x483df7a0))]:
        w0, w1 = threefry2x32_words(*key, np.uint32([ctr[0]]), np.uint32([ctr[1]]))
        assert (int(w0[0]), int(w1[0])) == want


def test_numpy_threefry_matches_the_reference():
    rng = np.random.default_rng(3)
    counters = np.concatenate([np.uint32([0, 1, 2, 255, 256, M - 1, M]),
                               rng.integers(0, 2 ** 32, 200, dtype=np.uint32)])
    for key in [(0, 0), (M, M), (0x13198a2e, 0x03707344), (12345, 0x80000000)]:
        w0, w1 = threefry2x32_words(*key, counters)
        assert w0.dtype == w1.dtype == np.uint32
        assert list(zip(w0.tolist(), w1.tolist())) == [threefry2x32(key, (int(c), 0))
                                                       for c in counters]


def test_mask_uses_both_words_of_each_evaluation():
    # element i: word i & 1 of threefry2x32(key, (i >> 1, 0)) (p = 0.5: the word's top bit)
    key = (0x9E3779B9, 77)
    want = [threefry2x32(key, (i >> 1, 0))[i & 1] >> 31 for i in range(9)]
    got = np_dropout_mask(key, (9,), 0.5)
    assert (got != 0).astype(int).tolist() == want


def _key(seed):
    return torchic.Generator().manual_seed(seed).random(2)


def _mask(seed, shape, p):
    return F.dropout(torchic.ones(shape), p, generator=torchic.Generator().manual_seed(seed))


def _numpy_mask(seed, n, p):
    k0, k1 = (int(w) for w in _key(seed))
    w0, w1 = threefry2x32_words(k0, k1, np.arange((n + 1) // 2, dtype=np.uint32))
    words = np.stack([w0, w1], axis=1).reshape(-1)[:n]
    return np.where(words >> 8 >= math.ceil(p * 2 ** 24), np.float32(1 / (1 - p)),
                    np.float32(0))


@pytest.mark.parametrize("shape", [(), (1,), (2,), (7,), (3, 5), (2, 3, 17)])
@pytest.mark.parametrize("p", [0.2, 0.5, 1e-7, 1 - 1e-7])
def test_mask_is_the_reference_bit_for_bit(backend, shape, p):
    got = _mask(4, shape, p).numpy()
    assert got.dtype == np.float32 and got.shape == shape
    np.testing.assert_array_equal(got, np_dropout_mask(_key(4), shape, p))


def test_large_mask_matches_numpy_and_keeps_a_binomial_fraction(backend):
    # crosses the simd pool's chunks, many webgpu workgroups and the workers' passes
    p, shape = 0.2, (1031, 1024)
    got = _mask(9, shape, p).numpy().reshape(-1)
    np.testing.assert_array_equal(got, _numpy_mask(9, got.size, p))
    n = got.size
    q = 1 - math.ceil(p * 2 ** 24) / 2 ** 24         # the exact keep probability
    kept = int(np.count_nonzero(got))
    assert abs(kept - n * q) < 6 * math.sqrt(n * q * (1 - q))
    assert set(np.unique(got).tolist()) == {0.0, float(np.float32(1 / (1 - p)))}


def test_strided_x_with_odd_rows_across_threads(backend, rng):
    # a transposed x: out's rows (of 257) are walked one run each, every other one starting
    # at an odd flat index, in the middle of a pair; over several simd threads / workgroups
    x = rng.standard_normal((257, 301)).astype(np.float32)
    y = F.dropout(torchic.tensor(x).t(), 0.3, generator=torchic.Generator().manual_seed(12))
    mask = _numpy_mask(12, x.size, 0.3).reshape(301, 257)
    np.testing.assert_array_equal(y.numpy(), x.T * mask)


def test_masks_are_bit_identical_across_backends():
    wanted = os.environ.get("TORCHIC_TEST_BACKENDS")      # (as conftest.py's backend list)
    names = [n.strip() for n in wanted.split(",") if n.strip()] if wanted else \
        dispatcher.backend_names()
    names = [n for n in names if dispatcher.backend_class(n).available()[0]]
    before = dispatcher._runtime
    masks = {}
    try:
        for name in names:
            torchic.init(name)
            torchic.manual_seed(21)
            masks[name] = []
            for p in (0.1, 0.5, 0.7):       # the forward's mask, and the backward's
                x = torchic.ones(37, 41, requires_grad=True)
                y = F.dropout(x, p)
                y.backward(torchic.ones(41, 37).t())
                masks[name] += [y.detach().numpy(), x.grad.numpy()]
    finally:
        if before is not None and not before.closed:
            torchic.init(before.backend.name)
    first = masks[names[0]]
    for name in names[1:]:
        for a, b in zip(first, masks[name]):
            np.testing.assert_array_equal(a, b, err_msg=f"{names[0]} vs {name}")


def test_seeds_keys_and_calls(backend):
    a, b = _mask(1, (64, 64), 0.5).numpy(), _mask(1, (64, 64), 0.5).numpy()
    np.testing.assert_array_equal(a, b)                       # a seed gives its mask again
    c = _mask(2, (64, 64), 0.5).numpy()
    assert np.mean(a != c) > 0.4                              # another key: another mask
    torchic.manual_seed(5)
    x = torchic.ones(64, 64)
    first, second = F.dropout(x, 0.5).numpy(), F.dropout(x, 0.5).numpy()
    assert np.mean(first != second) > 0.4                     # each call draws a new key
    torchic.manual_seed(5)
    np.testing.assert_array_equal(F.dropout(x, 0.5).numpy(), first)
    # the default generator gave the key: two raw draws of the seeded stream
    np.testing.assert_array_equal(first, np_dropout_mask(_key(5), (64, 64), 0.5))


def test_dropout_is_input_times_mask_with_its_gradient(backend, rng):
    x = rng.standard_normal((5, 9)).astype(np.float32)
    xt = torchic.tensor(x, requires_grad=True)
    y = F.dropout(xt, 0.4, generator=torchic.Generator().manual_seed(3))
    mask = np_dropout_mask(_key(3), (5, 9), 0.4)
    np.testing.assert_array_equal(y.detach().numpy(), x * mask)
    y.backward(torchic.ones(5, 9) * 2.0)
    np.testing.assert_array_equal(xt.grad.numpy(), 2.0 * mask)
    # a transposed input: the mask follows the logical (row-major) index, not memory
    yt = F.dropout(torchic.tensor(x).t(), 0.4, generator=torchic.Generator().manual_seed(3))
    np.testing.assert_array_equal(yt.numpy(), x.T * np_dropout_mask(_key(3), (9, 5), 0.4))


def test_backward_is_dropout_of_the_grad_with_the_same_key_no_mask_saved(backend, rng):
    """The node saves only the (2,) key; a strided / broadcast gradient gets the mask of its
    flat index, the bits of g * mask (NaN / inf gradients too: dropped ones give NaN)."""
    from torchic.functions import Dropout
    x = torchic.tensor(rng.standard_normal((4, 6)).astype(np.float32), requires_grad=True)
    y = F.dropout(x, 0.5, generator=torchic.Generator().manual_seed(8))
    assert isinstance(y.grad_fn, Dropout)
    assert [t.shape for t in y.grad_fn.saved] == [(2,)]
    mask = np_dropout_mask(_key(8), (4, 6), 0.5)
    g = rng.standard_normal((6, 4)).astype(np.float32)
    g[0, :2] = [np.nan, np.inf]
    y.backward(torchic.tensor(g).t())                 # a transposed gradient
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(x.grad.numpy(), g.T * mask)
    x.grad = None
    F.dropout(x, 0.5, generator=torchic.Generator().manual_seed(8)).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), mask)     # (a broadcast ones gradient)


def test_raw_dropout_of_ones_is_the_bare_mask(backend):
    key = torchic.tensor(np.array(_key(6), np.uint32).view(np.int32))
    got = raw.dropout(torchic.ones(3, 11), key, 0.25).numpy()
    np.testing.assert_array_equal(got, np_dropout_mask(_key(6), (3, 11), 0.25))
    # a broadcast (stride 0) x and a non-contiguous key view
    key2 = torchic.tensor(np.repeat(np.array(_key(6), np.uint32).view(np.int32), 2))[::2]
    ones = torchic.ones(1, 1).expand(3, 11)
    np.testing.assert_array_equal(raw.dropout(ones, key2, 0.25).numpy(), got)


def test_errors(backend):
    key, x = torchic.tensor([1, 2], dtype=torchic.int32), torchic.ones(3)
    with pytest.raises(ValueError, match="p must be in"):
        raw.dropout(x, key, 0.0)
    with pytest.raises(TypeError, match="int32 tensor of shape"):
        raw.dropout(x, torchic.tensor([1.0, 2.0]), 0.5)
    with pytest.raises(TypeError, match="int32 tensor of shape"):
        raw.dropout(x, torchic.tensor([1, 2, 3], dtype=torchic.int32), 0.5)
    with pytest.raises(TypeError, match="int32 tensor of shape"):
        raw.dropout(x, torchic.tensor([1, 2]), 0.5)             # int64
    with pytest.raises(TypeError, match="float32"):
        raw.dropout(torchic.tensor([1, 2, 3]), key, 0.5)
    with pytest.raises(ValueError, match="at most 2\\^32 - 1"):
        raw.dropout(torchic.ones(1, 1).expand(2 ** 16, 2 ** 16), key, 0.5)
    # refused before the key is drawn: the generator has not moved
    g = torchic.Generator().manual_seed(5)
    state = g.get_state()
    with pytest.raises(ValueError, match="at most 2\\^32 - 1"):
        F.dropout(torchic.ones(1, 1).expand(2 ** 16, 2 ** 16), 0.5, generator=g)
    assert (g.get_state() == state).all()
    with pytest.raises(ValueError, match="between 0 and 1"):
        F.dropout(torchic.ones(3), 1.5)
    with pytest.raises(TypeError, match="torchic.Generator"):
        F.dropout(torchic.ones(3), 0.5, generator=7)
    assert F.dropout(torchic.ones(0, 3), 0.5).shape == (0, 3)      # an empty mask
