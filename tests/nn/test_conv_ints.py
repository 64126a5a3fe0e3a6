"""Integer convolutions, exact in their dtype as PyTorch CPU's (conv1d / conv2d of every
integer dtype, dilated ones and the transposed ones of int64 alone), on every backend."""

import numpy as np
import pytest

import torchic
import torchic.nn.functional as TF

torch = pytest.importorskip("torch")
F = torch.nn.functional


@pytest.mark.parametrize("dtype", ["int64", "int32", "int16", "int8", "uint8"])
def test_int_conv_is_exact_like_torch(backend, dtype):
    rng = np.random.default_rng(0)
    lo = 0 if dtype == "uint8" else -4
    x, w, b = (rng.integers(lo, 5, s) for s in ((2, 4, 7, 6), (6, 2, 3, 2), (6,)))
    td, cd = getattr(torch, dtype), getattr(torchic, dtype)
    kw = dict(stride=(2, 1), padding=1, groups=2)
    if dtype == "int64":
        kw["dilation"] = (1, 2)
    else:
        with pytest.raises(NotImplementedError, match="dilation"):
            TF.conv2d(torchic.tensor(x, dtype=cd), torchic.tensor(w, dtype=cd), dilation=2)
    want = F.conv2d(torch.tensor(x, dtype=td), torch.tensor(w, dtype=td),
                    torch.tensor(b, dtype=td), **kw)
    got = TF.conv2d(torchic.tensor(x, dtype=cd), torchic.tensor(w, dtype=cd),
                    torchic.tensor(b, dtype=cd), **kw)
    assert got.dtype == cd
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    want = F.conv1d(torch.tensor(x[:, :, 0], dtype=td), torch.tensor(w[:, :, 0], dtype=td),
                    stride=2, groups=2)
    got = TF.conv1d(torchic.tensor(x[:, :, 0], dtype=cd), torchic.tensor(w[:, :, 0], dtype=cd),
                    stride=2, groups=2)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_int_conv_transpose_int64_only(backend):
    rng = np.random.default_rng(1)
    x, w = rng.integers(-4, 5, (2, 4, 3, 5)), rng.integers(-4, 5, (4, 3, 3, 2))
    want = F.conv_transpose2d(torch.tensor(x), torch.tensor(w), stride=2, padding=1,
                              output_padding=1)
    got = TF.conv_transpose2d(torchic.tensor(x), torchic.tensor(w), stride=2, padding=1,
                              output_padding=1)
    assert got.dtype == torchic.int64
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    with pytest.raises(NotImplementedError, match="conv_transpose2d"):
        TF.conv_transpose2d(torchic.tensor(x, dtype=torchic.int32),
                            torchic.tensor(w, dtype=torchic.int32))
    with pytest.raises(RuntimeError, match="should be the same"):
        TF.conv2d(torchic.tensor(x), torchic.tensor(w).float())
    with pytest.raises(RuntimeError, match="not implemented for 'torchic.bool'"):
        TF.conv2d(torchic.tensor(x > 0), torchic.tensor(w > 0))
