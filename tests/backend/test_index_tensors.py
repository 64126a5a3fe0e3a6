"""Tensors used as indices (issue 39), on every backend: negative entries of an integer index
tensor count from the end (PyTorch's wrap rule, in reading and in assignment, gradients
included) while nn.functional.embedding refuses them as PyTorch does; a float tensor is
refused with PyTorch's IndexError unless it is a mask (dtypes.py: comparisons, ~ / & / | of
masks, bool data). Checked against NumPy, and against PyTorch where it is installed."""

import copy
import pickle

import numpy as np
import pytest

import torchic

try:
    import torch
except ImportError:       # the PyTorch comparisons are skipped cleanly
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed")

X = np.arange(12, dtype=np.float32).reshape(4, 3)
ROWS = [-1, -1, 0, -4, 2]
COLS = [[-1], [0], [-3]]


def _negative_indices(lib):
    """Rows and columns picked with negative entries, a gradient through both, and an
    assignment through them: (values..., x's gradient)."""
    x = lib.tensor(X, requires_grad=True)
    rows = x[lib.tensor(ROWS)]
    cols = x[:, lib.tensor(COLS)]
    (rows.sum() + (cols * 2).sum()).backward()
    y = lib.tensor(X)
    y[lib.tensor([-1, 1])] = lib.tensor([[10.0], [20.0]])
    return rows.detach().numpy(), cols.detach().numpy(), y.numpy(), x.grad.numpy()


def test_negative_index_entries_count_from_the_end(backend):
    rows, cols, y, grad = _negative_indices(torchic)
    np.testing.assert_array_equal(rows, X[ROWS])
    np.testing.assert_array_equal(cols, X[:, COLS])
    want_y = X.copy()
    want_y[[-1, 1]] = [[10.0], [20.0]]
    np.testing.assert_array_equal(y, want_y)
    want_grad = np.zeros_like(X)
    np.add.at(want_grad, np.array(ROWS), 1.0)
    np.add.at(want_grad, (slice(None), np.array(COLS)), 2.0)
    np.testing.assert_array_equal(grad, want_grad)


@needs_torch
def test_negative_index_entries_match_pytorch(backend):
    for got, want in zip(_negative_indices(torchic), _negative_indices(torch)):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("key, bad, size", [
    (lambda lib: lib.tensor([0, -5]), -5, 4),
    (lambda lib: lib.tensor([4]), 4, 4),
    (lambda lib: (slice(None), lib.tensor([-4])), -4, 3),
])
def test_index_entries_out_of_range_are_index_errors(backend, key, bad, size):
    x = torchic.tensor(X)
    with pytest.raises(IndexError, match=rf"index {bad} is out of .*{size}"):
        x[key(torchic)].sum().item()
    with pytest.raises(IndexError, match=rf"index {bad} is out of bounds .* size {size}"):
        x[key(torchic)] = 1.0
    if torch is not None:
        with pytest.raises(IndexError, match=rf"index {bad} is out of bounds .* size {size}"):
            torch.tensor(X)[key(torch)]


def test_embedding_refuses_negative_indices(backend):
    # PyTorch's embedding has no wrap rule ("index out of range in self"); weight[idx] has
    weight = torchic.tensor(X)
    with pytest.raises(IndexError, match="-1"):
        torchic.nn.functional.embedding(torchic.tensor([-1]), weight).sum().item()
    assert torchic.nn.functional.embedding(torchic.tensor([3]), weight).tolist() == [X[3].tolist()]
    if torch is not None:
        with pytest.raises(IndexError, match="index out of range"):
            torch.nn.functional.embedding(torch.tensor([-1]), torch.tensor(X))


FLOAT_KEYS = [
    lambda lib: lib.tensor([0.0, 1.0, 1.0]),             # 0/1 values, but floats
    lambda lib: lib.tensor([0.0, 1.0, 1.0, 0.0]),        # 0/1 values of the mask's length
    lambda lib: lib.tensor(1.0),
    lambda lib: (lib.tensor(X[:, 0]) > 2).float(),       # a mask made float
    lambda lib: (lib.tensor(X[:, 0]) > 2) * 1.0,
]


@pytest.mark.parametrize("key", FLOAT_KEYS)
def test_float_tensors_are_not_indices(backend, key):
    x = torchic.tensor(X)
    message = "tensors used as indices must be long, int, byte or bool tensors"
    with pytest.raises(IndexError, match=message):
        x[key(torchic)]
    with pytest.raises(IndexError, match=message):
        x[key(torchic)] = 0.0
    if torch is not None:
        with pytest.raises(IndexError, match=message):
            torch.tensor(X)[key(torch)]


def _mask_keys(lib):
    x = lib.tensor(X)
    m = x[:, 0] > 2
    return [m, ~m, m & (x[:, 1] < 8), m | (x[:, 1] < 2), m ^ (x[:, 1] < 5), x[:, 0].bool(),
            x[:, 0].to(lib.bool), lib.tensor([True, False, True, False]),
            lib.tensor(np.array([True, False, False, True])), lib.zeros(4, dtype=lib.bool),
            (x > 4)[:, 1], lib.cat([m[:2], m[2:]]), m[lib.tensor([3, 2, 1, 0])],
            m.clone(), m.detach(), m.view(2, 2).reshape(-1), copy.deepcopy(m),
            pickle.loads(pickle.dumps(m))]


def _masked(lib):
    x = lib.tensor(X)
    out = [x[k].numpy() for k in _mask_keys(lib)] + [x[x > 4].numpy()]
    y = lib.tensor(X)
    y[y > 4] = 0.0
    return out + [y.numpy()]


def test_masks_index_as_masks(backend):
    keys = [np.asarray(k.numpy(), bool) for k in _mask_keys(torchic)]
    want = [X[k] for k in keys] + [X[X > 4], np.where(X > 4, 0.0, X)]
    for got, w in zip(_masked(torchic), want, strict=True):
        np.testing.assert_array_equal(got, w)


@needs_torch
def test_masks_index_as_pytorchs_bool_tensors(backend):
    for got, want in zip(_masked(torchic), _masked(torch), strict=True):
        np.testing.assert_array_equal(got, want)


def _zero_d_index(lib):
    """A 0-d integer tensor in a key picks like an int: the result is a view."""
    x = lib.tensor(X)
    v = x[lib.tensor(1)]
    v += 1.0
    x[lib.tensor(-1), lib.tensor(2)] = 50.0
    return x.numpy(), x[:, lib.tensor(0)].numpy()


def test_a_zero_d_index_tensor_picks_a_view(backend):
    x, col = _zero_d_index(torchic)
    want = X.copy()
    want[1] += 1
    want[-1, 2] = 50.0
    np.testing.assert_array_equal(x, want)
    np.testing.assert_array_equal(col, want[:, 0])


@needs_torch
def test_a_zero_d_index_tensor_picks_a_view_as_in_pytorch(backend):
    for got, want in zip(_zero_d_index(torchic), _zero_d_index(torch)):
        np.testing.assert_array_equal(got, want)
