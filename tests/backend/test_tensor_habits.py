"""Tensor habits of PyTorch programs (issue 15): formatting, the Tensor constructor, dtype
spellings, masks and their operators, deepcopy, in-place ops autograd records, and the
original's (the browser seed's) Tensor statics, each on every backend; against PyTorch where
it is installed."""

import copy

import numpy as np
import pytest

import torchic

try:
    import torch
except ImportError:       # the PyTorch comparisons are skipped cleanly
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed")


def test_format_of_0d_tensors_is_the_number(backend):
    loss = torchic.tensor(1.234567)
    assert f"{loss:.4f}" == "1.2346"
    assert f"{torchic.tensor(3)}" == "3" and f"{torchic.tensor(2.5):>6}" == "   2.5"
    assert f"{torchic.ones(2)}" == str(torchic.ones(2))
    with pytest.raises(TypeError, match="unsupported format string"):
        f"{torchic.ones(2):.3f}"


@needs_torch
def test_format_matches_pytorch(backend):
    for value in (1.234567, 3, -0.5):
        for spec in ("", ".4f", ">8", ".2e"):
            assert format(torchic.tensor(value), spec) == format(torch.tensor(value), spec)


def test_tensor_constructor_and_dtype_spellings(backend):
    t = torchic.Tensor([1, 2, 3])
    assert t.dtype == torchic.float32 and t.tolist() == [1.0, 2.0, 3.0]
    assert torchic.Tensor(2, 3).shape == (2, 3) and torchic.Tensor().shape == (0,)
    assert torchic.tensor([True, False]).tolist() == [True, False]
    assert torchic.tensor([True, False]).dtype == torchic.bool
    assert torchic.ones(2).half().dtype == torchic.float16
    with pytest.raises(TypeError):
        torchic.Tensor(2, "a")


def test_masks_and_their_operators(backend):
    x = torchic.tensor([1.0, -2.0, 0.0, 3.0])
    assert (~(x > 0)).tolist() == [False, True, True, False]
    assert ((x > 0) & (x < 2)).tolist() == [True, False, False, False]
    assert ((x > 2) | (x < 0)).tolist() == [False, True, False, True]
    assert ((x > 0) ^ (x > 2)).tolist() == [True, False, False, False]
    assert ((x > 0) & True).dtype == torchic.bool and (False | (x > 0)).dtype == torchic.bool
    assert x.to(torchic.bool).tolist() == x.bool().tolist() == [True, True, False, True]
    assert (~torchic.tensor([0, 5])).tolist() == [-1, -6]
    assert (torchic.tensor([1, 6]) & torchic.tensor([3, 3])).tolist() == [1, 2]   # ints: bitwise
    with pytest.raises(TypeError, match="integer and Boolean"):
        _ = ~x


def test_deepcopy_of_modules_optimizers_and_leaves(backend):
    model = torchic.nn.Sequential(torchic.nn.Linear(3, 4), torchic.nn.Tanh())
    opt = torchic.optim.AdamW(model.parameters(), lr=0.1)
    model(torchic.ones(2, 3)).sum().backward()
    opt.step()
    model2, opt2 = copy.deepcopy((model, opt))
    w, w2 = model[0].weight, model2[0].weight
    assert type(w2) is type(w) and w2.requires_grad and w2 is not w
    np.testing.assert_array_equal(w2.detach().numpy(), w.detach().numpy())
    np.testing.assert_array_equal(w2.grad.numpy(), w.grad.numpy())
    assert opt2.param_groups[0]["params"][0] is w2        # the copy steps the copied model
    opt2.step()
    assert not np.array_equal(w2.detach().numpy(), w.detach().numpy())
    with pytest.raises(RuntimeError, match="graph leaves"):
        copy.deepcopy(w * 2)


def test_seed_statics_set_and_slice(backend):
    t = torchic.Tensor.from_data([1, 2, 3, 4, 5, 6], [2, 3])
    assert t.dtype == torchic.float32 and t.shape == (2, 3)
    assert torchic.Tensor.randn([2, 3], requires_grad=True).requires_grad
    assert torchic.Tensor.zeros([2, 3]).tolist() == [[0.0] * 3] * 2
    z = torchic.zeros(2, 3)
    z.set([1, 2], 5.0)
    assert z.tolist() == [[0.0, 0.0, 0.0], [0.0, 0.0, 5.0]]
    with pytest.raises(IndexError, match=r"one int index \(or slice\) per dimension"):
        z.set([1], 2.0)
    with pytest.raises(ValueError, match="is reversed"):
        z.slice([(2, 1), None])
    with pytest.raises(ValueError, match="one range per dimension"):
        z.slice([(0, 1)])
    assert z.slice([(1, 2), (0, 3, 2)]).tolist() == [[0.0, 5.0]]


def _inplace_programs(lib):
    """(name, program on a fresh leaf w -> a scalar loss): in-place ops PyTorch records."""
    def plus_equals(w):
        h = w * 1.5
        h += 2.0
        h *= w
        return h.sum()

    def slice_assign(w):
        h = w * 2
        h[1:] = 0.0
        return (h * h).sum()

    def logits_rows(w):
        logits = lib.zeros(2, 3)
        logits[0] = w * 2
        logits[1] = w.exp()
        return logits.log_softmax(-1).sum()

    def index_assign(w):
        d = lib.zeros(4, 3)
        d[range(3), lib.tensor([2, 0, 2])] = w
        return (d * lib.arange(12.0).reshape(4, 3)).sum()

    def mask_assign(w):
        h = w * 3
        h[h > 1] = 1.0
        return h.sum()
    return [plus_equals, slice_assign, logits_rows, index_assign, mask_assign]


@needs_torch
@pytest.mark.parametrize("k", range(5))
def test_inplace_ops_in_the_graph_match_pytorch(backend, k):
    w0 = np.array([0.3, -0.7, 0.9], np.float32)
    w = torchic.tensor(w0, requires_grad=True)
    tw = torch.tensor(w0, requires_grad=True)
    loss = _inplace_programs(torchic)[k](w)
    tloss = _inplace_programs(torch)[k](tw)
    loss.backward()
    tloss.backward()
    np.testing.assert_allclose(loss.item(), tloss.item(), rtol=1e-6)
    np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_inplace_on_a_saved_tensor_fails_at_backward_like_pytorch(backend):
    w = torchic.tensor([0.5, 1.0], requires_grad=True)
    h = w.tanh()
    h += 1          # tanh saved its output: PyTorch refuses at backward, and so does torchic
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        h.sum().backward()
