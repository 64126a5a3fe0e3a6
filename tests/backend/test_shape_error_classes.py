"""Issue 44: shape errors are RuntimeError as PyTorch's (so `except RuntimeError` habits catch
them) and stay ValueError (torchic's earlier class), keeping torchic's clearer messages."""

import pytest

import torchic

torch = pytest.importorskip("torch")

CASES = {
    "matmul": (lambda m: m.ones(2, 3) @ m.ones(2, 3), "cannot be multiplied"),
    "broadcast": (lambda m: m.ones(2, 3) + m.ones(4), "cannot be broadcast"),
    "view": (lambda m: m.ones(2, 3).view(4), "is invalid for input of size 6"),
    "reshape_infer": (lambda m: m.ones(2, 3).reshape(4, -1), "is invalid for input of size 6"),
    "expand": (lambda m: m.ones(2, 3).expand(4, 4), "cannot expand shape"),
    "cat": (lambda m: m.cat([m.ones(2, 3), m.ones(2, 4)]), "differ outside dim 0"),
    "mm_batched": (lambda m: m.matmul(m.ones(5, 2, 3), m.ones(5, 4, 3)), "cannot be multiplied"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_shape_errors_are_runtime_errors_like_torch(backend, name):
    fn, text = CASES[name]
    with pytest.raises(RuntimeError):
        fn(torch)
    with pytest.raises(RuntimeError, match=text) as err:
        fn(torchic)
    assert isinstance(err.value, ValueError)
