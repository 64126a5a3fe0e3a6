"""`.numpy()` of a tensor that requires grad is refused, as in PyTorch (issue 39): the copy
it used to make silently dropped the tensor from the graph. The reads PyTorch allows on such
a tensor (item, tolist, printing, detach().numpy()) still work, on every backend."""

import pickle

import numpy as np
import pytest

import torchic

MESSAGE = (r"Can't call numpy\(\) on Tensor that requires grad. Use tensor.detach\(\).numpy\(\) "
           r"instead.")


def test_numpy_of_a_tensor_that_requires_grad_is_refused(backend):
    leaf = torchic.tensor([1.0, 2.0], requires_grad=True)
    y = leaf * 3                      # a non-leaf requires grad too
    for t in (leaf, y, torchic.nn.Linear(2, 2).weight):
        with pytest.raises(RuntimeError, match=MESSAGE):
            t.numpy()
        with pytest.raises(RuntimeError, match=MESSAGE):
            t.to_array()
        with pytest.raises(RuntimeError, match=MESSAGE):
            np.asarray(t)


def test_the_reads_pytorch_allows_still_work(backend):
    leaf = torchic.tensor([1.0, 2.0], requires_grad=True)
    y = leaf * 3
    np.testing.assert_array_equal(y.detach().numpy(), [3.0, 6.0])
    assert y.tolist() == [3.0, 6.0] and y.sum().item() == 9.0
    assert "requires_grad=True" in repr(leaf) and "grad_fn" in repr(y)
    with torchic.no_grad():
        np.testing.assert_array_equal((leaf * 2).numpy(), [2.0, 4.0])
    u = pickle.loads(pickle.dumps(leaf))
    assert u.requires_grad and u.detach().numpy().tolist() == [1.0, 2.0]
    y.sum().backward()
    np.testing.assert_array_equal(leaf.grad.numpy(), [3.0, 3.0])    # .grad: no grad of its own


def test_pytorch_refuses_the_same(backend):
    torch = pytest.importorskip("torch")
    with pytest.raises(RuntimeError, match=MESSAGE):
        torch.ones(2, requires_grad=True).numpy()
