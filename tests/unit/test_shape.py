"""Stride and broadcast arithmetic against NumPy."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from torchic import shape as S

dims = st.lists(st.integers(0, 4), min_size=0, max_size=4).map(tuple)


@settings(max_examples=300, deadline=None)
@given(dims, dims)
def test_broadcast_shapes_matches_numpy(a, b):
    try:
        expected = np.broadcast_shapes(a, b)
    except ValueError:
        with pytest.raises(ValueError, match="cannot be broadcast"):
            S.broadcast_shapes(a, b)
        return
    assert S.broadcast_shapes(a, b) == expected
    strides = S.broadcast_strides(a, S.contiguous_strides(a), expected)
    base = np.arange(max(1, int(np.prod(a)))).reshape(a) if 0 not in a else np.zeros(a)
    view = np.lib.stride_tricks.as_strided(base, expected, [s * base.itemsize for s in strides])
    np.testing.assert_array_equal(view, np.broadcast_to(base, expected))


@st.composite
def strided_views(draw):
    shape = draw(st.lists(st.integers(1, 4), min_size=1, max_size=4).map(tuple))
    base = np.arange(int(np.prod(shape))).reshape(shape)
    perm = draw(st.permutations(range(len(shape))))
    view = base.transpose(perm)
    steps = tuple(draw(st.integers(1, 2)) for _ in shape)
    view = view[tuple(slice(None, None, s) for s in steps)]
    return view


@settings(max_examples=300, deadline=None)
@given(strided_views(), st.data())
def test_reshape_strides_matches_numpy(view, data):
    n = view.size
    factors = [d for d in range(1, n + 1) if n % d == 0]
    first = data.draw(st.sampled_from(factors))
    new_shape = (first, n // first)
    strides = tuple(s // view.itemsize for s in view.strides)
    got = S.reshape_strides(view.shape, strides, new_shape)
    try:
        v = view.view()
        v.shape = new_shape   # numpy raises if a copy would be needed
        numpy_can = True
    except AttributeError:
        numpy_can = False
    if got is None:
        assert not numpy_can
        return
    rebuilt = np.lib.stride_tricks.as_strided(view, new_shape, [s * view.itemsize for s in got])
    np.testing.assert_array_equal(rebuilt, view.reshape(new_shape))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(1, 5), min_size=1, max_size=3).map(tuple), st.data())
def test_slice_meta_matches_numpy(shape, data):
    base = np.arange(int(np.prod(shape))).reshape(shape)
    key = []
    for d in shape:
        if data.draw(st.booleans()):
            key.append(None)           # a new axis does not consume a dim
        if data.draw(st.booleans()):
            key.append(data.draw(st.integers(-d, d - 1)))
        else:
            key.append(slice(data.draw(st.integers(-d - 1, d + 1)),
                             data.draw(st.integers(-d - 1, d + 1)), data.draw(st.integers(1, 3))))
    key = tuple(key)
    offset, new_shape, strides = S.slice_meta(0, base.shape, S.contiguous_strides(shape), key)
    expected = base[key]
    assert new_shape == expected.shape
    if expected.size:
        flat = base.ravel()
        got = np.lib.stride_tricks.as_strided(flat[offset:], new_shape,
                                              [s * flat.itemsize for s in strides])
        np.testing.assert_array_equal(got, expected)


def test_errors_name_the_problem():
    with pytest.raises(IndexError, match="dim 2 is out of range for a tensor with 2 dimensions"):
        S.normalize_axis(2, 2)
    with pytest.raises(ValueError, match="invalid for input of size 6"):
        S.infer_shape((4, -1), 6)
    with pytest.raises(IndexError, match="out of bounds for dimension 0 with size 3"):
        S.slice_meta(0, (3,), (1,), (5,))
    with pytest.raises(IndexError, match="too many indices"):
        S.slice_meta(0, (3,), (1,), (0, 0))
    with pytest.raises(ValueError, match="step must be positive"):
        S.slice_meta(0, (3,), (1,), (slice(None, None, -1),))


# -- matmul_layout: the plan of one product, from shapes and strides alone ------------------

def test_matmul_layout_of_a_2d_product_is_a_batch_of_one():
    lay = S.matmul_layout((2, 3), (3, 1), (3, 4), (4, 1))
    assert lay.out_shape == (2, 4) and lay.kernel_shape == (1, 2, 4)
    assert lay.operands == (((1, 2, 3), (0, 3, 1), False), ((1, 3, 4), (0, 4, 1), False))


def test_matmul_layout_broadcasts_a_2d_operand_over_the_batch_without_a_copy():
    lay = S.matmul_layout((5, 2, 3), (6, 3, 1), (3, 4), (4, 1))
    assert lay.out_shape == (5, 2, 4) and lay.kernel_shape == (5, 2, 4)
    assert lay.operands[1] == ((5, 3, 4), (0, 4, 1), False)


def test_matmul_layout_reads_a_transposed_operand_through_swapped_strides():
    a = S.transposed_meta((5, 3, 2), (6, 2, 1))     # (5, 2, 3), a^T of contiguous a
    assert a == ((5, 2, 3), (6, 1, 2))
    lay = S.matmul_layout(*a, (5, 3, 4), (12, 4, 1))
    assert lay.operands[0] == ((5, 2, 3), (6, 1, 2), False)


def test_matmul_layout_keeps_two_batch_dims_that_do_not_flatten():
    # attention's heads: q (B=2, nh=3, T=4, hd=5) viewed from a (B, T, nh * hd) tensor
    q = ((2, 3, 4, 5), (60, 5, 15, 1))
    kt = S.transposed_meta(*q)
    lay = S.matmul_layout(*q, *kt)
    assert lay.kernel_shape == lay.out_shape == (2, 3, 4, 4)
    assert lay.operands == ((q[0], q[1], False), (kt[0], kt[1], False))


def test_matmul_layout_copies_an_operand_whose_three_batch_dims_do_not_flatten():
    # a (2, 3, 2, M, K) operand with its first two batch dims swapped: no one batch stride
    a = ((2, 3, 2, 4, 5), (20, 80, 10 * 24, 5, 1))
    lay = S.matmul_layout(*a, (5, 6), (6, 1))
    assert lay.kernel_shape == (12, 4, 6)
    assert lay.operands[0] == (a[0], a[1], True)       # copied from the full view
    assert lay.operands[1] == ((12, 5, 6), (0, 6, 1), False)
