"""nn.LSTM's fused recurrence (nn/lstm_recurrence.py: the product and lstm_cell a step,
lstm_cell_grad and the product back) against PyTorch in float32 and float64 (float16 /
bfloat16: computed in float32, as PyTorch's CPU LSTM), forward and backward: outputs, final
states, the gradients of the input, of (h0, c0) and of every parameter, over two layers,
both directions and several steps."""

import numpy as np
import pytest
import torch

import torchic
import torchic.nn as tnn

# dtype -> (torch dtype, rtol, atol)
DTYPES = {"float32": (torch.float32, 2e-4, 2e-5), "float64": (torch.float64, 1e-10, 1e-12),
          "float16": (torch.float16, 2e-2, 2e-2), "bfloat16": (torch.bfloat16, 1e-1, 1e-1)}


def _close(got, want, rtol, atol, what):
    got = got.detach().float().numpy() if got.dtype != torchic.float64 else got.detach().numpy()
    want = want.detach().double().numpy()
    assert got.shape == want.shape, what
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=what)


@pytest.mark.parametrize("name", list(DTYPES))
def test_lstm_forward_backward_matches_torch(backend, name):
    tdt, rtol, atol = DTYPES[name]
    if name == "float64" and backend == "webgpu":
        pytest.skip("webgpu holds no float64")
    half = name in ("float16", "bfloat16")
    torch.manual_seed(0)
    tm = torch.nn.LSTM(5, 6, num_layers=2, bidirectional=True)
    m = tnn.LSTM(5, 6, num_layers=2, bidirectional=True)
    m.load_state_dict({k: torchic.tensor(v.numpy()) for k, v in tm.state_dict().items()})
    m = m.to(getattr(torchic, name))
    # the reference: PyTorch in the dtype (float16 / bfloat16: its values, in float32)
    tm = tm.to(tdt).float() if half else tm.to(tdt)
    x, h0, c0 = (torch.randn(*s).to(tdt) for s in ((7, 3, 5), (4, 3, 6), (4, 3, 6)))
    t_in = [(t.float() if half else t).clone().requires_grad_() for t in (x, h0, c0)]
    i_in = [torchic.tensor(t.float().numpy()).to(getattr(torchic, name)).requires_grad_()
            for t in (x, h0, c0)]
    t_out = tm(t_in[0], (t_in[1], t_in[2]))
    i_out = m(i_in[0], (i_in[1], i_in[2]))
    t_flat, i_flat = [t_out[0], *t_out[1]], [i_out[0], *i_out[1]]
    gen = torch.Generator().manual_seed(1)
    loss = loss_i = 0
    for k, (a, b) in enumerate(zip(t_flat, i_flat)):
        assert b.dtype == getattr(torchic, name), k
        _close(b, a, rtol, atol, f"output {k}")
        w = torch.randn(a.shape, generator=gen)
        loss = loss + (a * w.to(a.dtype)).sum()
        loss_i = loss_i + (b * torchic.tensor(w.numpy()).to(b.dtype)).sum()
    loss.backward()
    loss_i.backward()
    for k, (a, b) in enumerate(zip(t_in, i_in)):
        _close(b.grad, a.grad, rtol, atol, f"input {k} grad")
    for (pname, p), q in zip(tm.named_parameters(), m.parameters()):
        _close(q.grad, p.grad, rtol, atol, f"{pname}.grad")
