"""nn.functional and nn.init on every backend, against NumPy float64 references."""

import math

import numpy as np
import pytest

import torchic
import torchic.nn as nn
import torchic.nn.functional as F
from torchic.nn import init


def T(a, requires_grad=False):
    return torchic.tensor(np.asarray(a, dtype=np.float32), requires_grad=requires_grad)


def close(t, ref, rtol=1e-5, atol=1e-6):
    np.testing.assert_allclose(t.numpy(), ref, rtol=rtol, atol=atol)


# ---------------------------------------------------------------------------------------
# functional
# ---------------------------------------------------------------------------------------
def test_one_hot(backend):
    x = torchic.tensor([[0, 3], [2, 1]])
    oh = F.one_hot(x, num_classes=5)
    assert oh.shape == (2, 2, 5) and oh.dtype == torchic.int64     # PyTorch's
    np.testing.assert_array_equal(oh.numpy(), np.eye(5, dtype=np.int64)[x.numpy()])
    f = F.one_hot(x, 5).float()
    assert f.dtype == torchic.float32 and f.sum().item() == 4.0
    assert F.one_hot(torchic.tensor([0, 2])).shape == (2, 3)       # num_classes inferred
    big = F.one_hot(torchic.tensor([1500, 3]), 2000)                # the no-table path
    assert big.shape == (2, 2000) and big.dtype == torchic.int64
    assert big.numpy()[0, 1500] == 1 and big.float().sum(1).tolist() == [1.0, 1.0]


def test_one_hot_errors(backend):
    with pytest.raises(TypeError, match="index tensors"):
        F.one_hot(T([1.0]), 3)
    with pytest.raises(ValueError, match="num_classes"):
        F.one_hot(torchic.tensor([1]), 0)
    with pytest.raises(ValueError, match="non-negative"):
        F.one_hot(torchic.tensor([-1, 2]))
    with pytest.raises((IndexError, RuntimeError), match="out of range|\\[0, 3\\)"):
        F.one_hot(torchic.tensor([0, 3]), 3).numpy()   # kernel bounds check, at the read
    torchic.sync()


def test_one_hot_matmul_is_a_lookup(backend, rng):
    # makemore part 1: xenc @ W picks rows of W
    W = rng.standard_normal((27, 27)).astype(np.float32)
    xs = torchic.tensor([0, 5, 13, 26])
    close(F.one_hot(xs, num_classes=27).float() @ T(W), W[[0, 5, 13, 26]])


def test_cross_entropy_and_log_softmax(backend, rng):
    logits = rng.standard_normal((6, 5)) * 3
    target = np.array([0, 4, 1, 1, 3, 2], dtype=np.int32)
    lse = np.log(np.exp(logits).sum(1))
    per_row = lse - logits[np.arange(6), target]
    lt = T(logits, requires_grad=True)
    loss = F.cross_entropy(lt, torchic.tensor(target))
    assert loss.item() == pytest.approx(per_row.mean(), rel=1e-5)
    loss.backward()
    p = np.exp(logits - lse[:, None])
    p[np.arange(6), target] -= 1
    close(lt.grad, p / 6, rtol=1e-4, atol=1e-6)
    close(F.cross_entropy(T(logits), torchic.tensor(target), reduction="none"), per_row,
          rtol=1e-5, atol=1e-5)
    close(F.log_softmax(T(logits), dim=1), logits - lse[:, None], rtol=1e-5, atol=1e-5)
    close(F.softmax(T(logits), dim=-1), np.exp(logits - lse[:, None]), rtol=1e-5, atol=1e-6)
    # nll_loss(log_softmax) == cross_entropy
    assert F.nll_loss(F.log_softmax(T(logits), 1), torchic.tensor(target)).item() == \
        pytest.approx(per_row.mean(), rel=1e-5)
    # unit class weights change nothing (weights themselves: tests/nn/test_nn_rest.py and
    # the OpInfo / ModuleInfo walks)
    assert F.cross_entropy(T(logits), torchic.tensor(target),
                           weight=T(np.ones(logits.shape[1]))).item() == \
        pytest.approx(per_row.mean(), rel=1e-5)
    with pytest.raises(RuntimeError, match="expected target dtype to be Long"):
        F.cross_entropy(T(logits), T(target))


def test_linear_embedding_dropout_mse(backend, rng):
    x, w, b = rng.standard_normal((4, 3)), rng.standard_normal((2, 3)), rng.standard_normal(2)
    close(F.linear(T(x), T(w), T(b)), x @ w.T + b, rtol=1e-5, atol=1e-5)
    close(F.linear(T(x), T(w)), x @ w.T, rtol=1e-5, atol=1e-5)
    table = rng.standard_normal((5, 2))
    close(F.embedding(torchic.tensor([4, 0, 4]), T(table)), table[[4, 0, 4]])
    assert F.dropout(T(x), 0.5, training=False).tolist() == T(x).tolist()
    a, c = rng.standard_normal(5), rng.standard_normal(5)
    assert F.mse_loss(T(a), T(c)).item() == pytest.approx(((a - c) ** 2).mean(), rel=1e-5)
    close(F.relu(T(x)), np.maximum(x, 0))
    close(F.tanh(T(x)), np.tanh(x))
    close(F.sigmoid(T(x)), 1 / (1 + np.exp(-x)))


def test_layer_norm_and_batch_norm_functional(backend, rng):
    x = rng.standard_normal((5, 4))
    mu, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    close(F.layer_norm(T(x), (4,)), (x - mu) / np.sqrt(var + 1e-5), rtol=1e-4, atol=1e-5)
    rm, rv = torchic.zeros(4), torchic.ones(4)
    y = F.batch_norm(T(x), rm, rv, training=True, momentum=0.5)
    close(y, (x - x.mean(0)) / np.sqrt(x.var(0) + 1e-5), rtol=1e-4, atol=1e-4)
    close(rm, 0.5 * x.mean(0), rtol=1e-5, atol=1e-6)
    close(rv, 0.5 + 0.5 * x.var(0, ddof=1), rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------------------------
# init
# ---------------------------------------------------------------------------------------
def test_calculate_gain():
    assert init.calculate_gain("linear") == 1
    assert init.calculate_gain("tanh") == pytest.approx(5 / 3)
    assert init.calculate_gain("relu") == pytest.approx(math.sqrt(2))
    assert init.calculate_gain("leaky_relu", 0.2) == pytest.approx(math.sqrt(2 / 1.04))
    with pytest.raises(ValueError):
        init.calculate_gain("swish")


def test_same_seed_same_values_as_pytorch(backend):
    t = torchic.empty(4, 5)
    init.uniform_(t, -2, 3, generator=torchic.Generator().manual_seed(9))
    # PyTorch's nn.init.uniform_(torch.empty(4, 5), -2, 3, generator=g) for seed 9
    np.testing.assert_array_equal(t.numpy().ravel()[:6], np.array(
        [1.2789224, -0.48988652, 0.39948213, 1.886868, 2.5898218, 2.655168], np.float32))
    init.normal_(t, generator=torchic.Generator(9))
    np.testing.assert_array_equal(t.numpy(), torchic.randn(4, 5, generator=torchic.Generator(9))
                                  .numpy())
    torchic.manual_seed(5)
    a = init.normal_(torchic.empty(3), mean=1, std=2).numpy()
    torchic.manual_seed(5)
    np.testing.assert_array_equal(a, init.normal_(torchic.empty(3), mean=1, std=2).numpy())


@pytest.mark.parametrize("fn, kwargs, expected_std", [
    (init.kaiming_uniform_, {}, math.sqrt(2) / math.sqrt(200)),     # a=0: leaky_relu gain sqrt 2
    (init.kaiming_uniform_, {"a": math.sqrt(5)}, math.sqrt(1 / 3) / math.sqrt(200)),
    (init.kaiming_uniform_, {"nonlinearity": "relu"}, math.sqrt(2) / math.sqrt(200)),
    (init.kaiming_normal_, {"mode": "fan_out", "nonlinearity": "relu"},
     math.sqrt(2) / math.sqrt(300)),
    (init.xavier_uniform_, {}, math.sqrt(2 / 500)),
    (init.xavier_normal_, {"gain": 2.0}, 2 * math.sqrt(2 / 500)),
])
def test_fan_based_inits(backend, fn, kwargs, expected_std):
    torchic.manual_seed(0)
    w = torchic.empty(300, 200)      # fan_in 200, fan_out 300
    assert fn(w, **kwargs) is w
    a = w.numpy()
    assert a.std() == pytest.approx(expected_std, rel=0.03)
    assert abs(a.mean()) < 0.05 * expected_std * 10
    if "uniform" in fn.__name__:
        assert np.abs(a).max() <= math.sqrt(3) * expected_std * (1 + 1e-6)


def test_init_runs_without_graph_on_parameters(backend):
    p = nn.Parameter(torchic.zeros(3, 2))
    init.ones_(p)
    assert p.tolist() == [[1, 1]] * 3 and p.grad_fn is None and p.requires_grad
    init.constant_(p, 0.5)
    init.zeros_(p[0])            # views are filled in place
    assert p.tolist() == [[0, 0], [0.5, 0.5], [0.5, 0.5]]


def test_init_errors(backend):
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        init.kaiming_uniform_(torchic.empty(5))
    with pytest.raises(ValueError, match="fan_in, fan_out"):
        init.kaiming_normal_(torchic.empty(2, 2), mode="fan_avg")
    with pytest.raises(TypeError, match="floating point"):
        init.uniform_(torchic.zeros(2, dtype=torchic.int32))
    with pytest.raises(TypeError, match="Tensor"):
        init.normal_(np.zeros(2))
