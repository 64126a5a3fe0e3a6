"""nn.RNN / LSTM / GRU, their cells and nn.utils.rnn against PyTorch on every backend: outputs,
final states, input gradients, every parameter's gradient, and state_dicts loaded both ways."""

import numpy as np
import pytest
import torch

import torchic
import torchic.nn as tnn
from torchic.nn.utils import rnn as trnn

RTOL, ATOL = 2e-4, 2e-5


def tt(x):
    return torchic.tensor(x.detach().numpy())


def close(got, want, what):
    got = got.detach().numpy() if hasattr(got, "detach") else np.asarray(got)
    want = want.detach().numpy()
    assert got.shape == want.shape, (what, got.shape, want.shape)
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL, err_msg=what)


def pair(cls, *args, **kwargs):
    """A torch module and the torchic one with its state_dict."""
    torch.manual_seed(0)
    tm = getattr(torch.nn, cls)(*args, **kwargs)
    m = getattr(tnn, cls)(*args, **kwargs)
    assert list(m.state_dict()) == list(tm.state_dict())
    for (k, a), b in zip(tm.state_dict().items(), m.state_dict().values()):
        assert tuple(a.shape) == tuple(b.shape), k
    m.load_state_dict({k: tt(v) for k, v in tm.state_dict().items()})
    return tm, m


def flat(out):
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in flat(o)]
    if isinstance(out, (torch.nn.utils.rnn.PackedSequence, trnn.PackedSequence)):
        return [out.data]
    return [out]


def run_both(tm, m, inputs, **kw):
    """Forward both, compare every output, backward a random projection of them, compare
    the input and parameter gradients."""
    t_in = [x.clone().requires_grad_() if x.is_floating_point() else x for x in inputs]
    i_in = [tt(x).requires_grad_() if x.is_floating_point() else tt(x) for x in inputs]
    outs, outs_i = flat(tm(*t_in, **kw)), flat(m(*i_in, **kw))
    assert len(outs) == len(outs_i)
    gen = torch.Generator().manual_seed(1)
    loss, loss_i = 0, 0
    for k, (a, b) in enumerate(zip(outs, outs_i)):
        close(b, a, f"output {k}")
        w = torch.randn(a.shape, generator=gen)
        loss, loss_i = loss + (a * w).sum(), loss_i + (b * tt(w)).sum()
    loss.backward()
    loss_i.backward()
    for k, (a, b) in enumerate(zip(t_in, i_in)):
        if a.is_floating_point():
            close(b.grad, a.grad, f"input {k} grad")
    for (name, p), q in zip(tm.named_parameters(), m.parameters()):
        close(q.grad, p.grad, f"{name}.grad")


MODULES = [
    ("LSTM", dict(num_layers=2, bidirectional=True)),
    ("LSTM", dict(batch_first=True, bias=False)),
    ("LSTM", dict(num_layers=2, proj_size=3)),
    ("GRU", dict(num_layers=2, batch_first=True)),
    ("GRU", dict(bidirectional=True, bias=False)),
    ("RNN", dict(nonlinearity="relu", bidirectional=True)),
    ("RNN", dict(num_layers=2)),
]


@pytest.mark.parametrize("cls,kw", MODULES, ids=[f"{c}-{'-'.join(k)}" for c, k in MODULES])
def test_recurrent_matches_torch(backend, cls, kw):
    tm, m = pair(cls, 5, 6, **kw)
    x = torch.randn(3, 4, 5)
    run_both(tm, m, [x])
    d = 2 if kw.get("bidirectional") else 1
    n = d * kw.get("num_layers", 1)
    h = torch.randn(n, 3 if kw.get("batch_first") else 4, kw.get("proj_size") or 6)
    if cls == "LSTM":
        c = torch.randn(n, h.shape[1], 6)
        t_out = tm(x, (h, c))
        i_out = m(tt(x), (tt(h), tt(c)))
        for a, b in zip(flat(t_out), flat(i_out)):
            close(b, a, "with (h0, c0)")
    else:
        run_both(tm, m, [x, h])


@pytest.mark.parametrize("cls", ["LSTM", "GRU", "RNN"])
def test_unbatched_and_state_dict_back_to_torch(backend, cls):
    torch.manual_seed(3)
    m = getattr(tnn, cls)(4, 5, num_layers=2, bidirectional=True)
    tm = getattr(torch.nn, cls)(4, 5, num_layers=2, bidirectional=True)
    tm.load_state_dict({k: torch.tensor(v.numpy()) for k, v in m.state_dict().items()})
    x = torch.randn(6, 4)                 # unbatched (L, H_in)
    t_out, i_out = flat(tm(x)), flat(m(tt(x)))
    for a, b in zip(t_out, i_out):
        close(b, a, "unbatched")
    assert tuple(i_out[0].shape) == (6, 10)


@pytest.mark.parametrize("cls", ["LSTM", "GRU"])
@pytest.mark.parametrize("enforce_sorted", [True, False])
def test_packed_sequence(backend, cls, enforce_sorted):
    tm, m = pair(cls, 3, 4, num_layers=2, bidirectional=True)
    lengths = [5, 3, 2] if enforce_sorted else [2, 5, 3]
    x = torch.randn(3, 5, 3, requires_grad=True)
    xi = tt(x).requires_grad_()
    tp = torch.nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True,
                                                 enforce_sorted=enforce_sorted)
    ip = trnn.pack_padded_sequence(xi, lengths, batch_first=True,
                                   enforce_sorted=enforce_sorted)
    close(ip.data, tp.data, "packed data")
    assert ip.batch_sizes.tolist() == tp.batch_sizes.tolist()
    t_out, t_h = tm(tp)
    i_out, i_h = m(ip)
    t_pad, t_len = torch.nn.utils.rnn.pad_packed_sequence(t_out, batch_first=True,
                                                          total_length=6)
    i_pad, i_len = trnn.pad_packed_sequence(i_out, batch_first=True, total_length=6)
    close(i_pad, t_pad, "padded output")
    assert i_len.tolist() == t_len.tolist()
    t_hs, i_hs = flat(t_h), flat(i_h)
    for a, b in zip(t_hs, i_hs):
        close(b, a, "final state")
    w = torch.randn(t_pad.shape)
    ((t_pad * w).sum() + sum(h.sum() for h in t_hs)).backward()
    ((i_pad * tt(w)).sum() + sum(h.sum() for h in i_hs)).backward()
    close(xi.grad, x.grad, "input grad")
    for (name, p), q in zip(tm.named_parameters(), m.parameters()):
        close(q.grad, p.grad, f"{name}.grad")


def test_pad_and_pack_sequence(backend):
    seqs = [torch.randn(n, 2) for n in (4, 1, 3)]
    for bf in (False, True):
        for side in ("right", "left"):
            close(trnn.pad_sequence([tt(s) for s in seqs], batch_first=bf, padding_value=-1.0,
                                    padding_side=side),
                  torch.nn.utils.rnn.pad_sequence(seqs, batch_first=bf, padding_value=-1.0,
                                                  padding_side=side), f"pad {bf} {side}")
    tp = torch.nn.utils.rnn.pack_sequence(seqs, enforce_sorted=False)
    ip = trnn.pack_sequence([tt(s) for s in seqs], enforce_sorted=False)
    close(ip.data, tp.data, "pack_sequence")
    assert ip.sorted_indices.tolist() == tp.sorted_indices.tolist()
    assert ip.unsorted_indices.tolist() == tp.unsorted_indices.tolist()
    for a, b in zip(torch.nn.utils.rnn.unpack_sequence(tp), trnn.unpack_sequence(ip)):
        close(b, a, "unpack_sequence")
    with pytest.raises(RuntimeError, match="sorted in decreasing order"):
        trnn.pack_sequence([tt(s) for s in seqs])


@pytest.mark.parametrize("cls", ["RNNCell", "LSTMCell", "GRUCell"])
def test_cells(backend, cls):
    tm, m = pair(cls, 3, 4)
    x, h = torch.randn(2, 3), torch.randn(2, 4)
    run_both(tm, m, [x])
    if cls == "LSTMCell":
        out, out_i = tm(x, (h, h * 2)), m(tt(x), (tt(h), tt(h * 2)))
    else:
        out, out_i = tm(x, h), m(tt(x), tt(h))
    for a, b in zip(flat(out), flat(out_i)):
        close(b, a, "with hx")
    for a, b in zip(flat(tm(x[0])), flat(m(tt(x[0])))):      # unbatched
        close(b, a, "unbatched")


def test_errors(backend):
    lstm = tnn.LSTM(3, 4)
    with pytest.raises(RuntimeError, match="input_size"):
        lstm(torchic.randn(2, 1, 5))
    with pytest.raises(ValueError, match="2D or 3D"):
        lstm(torchic.randn(2, 1, 1, 3))
    with pytest.raises(RuntimeError, match="Expected hidden size"):
        lstm(torchic.randn(2, 1, 3), (torchic.zeros(1, 2, 4), torchic.zeros(1, 2, 4)))
    with pytest.raises(ValueError, match="proj_size"):
        tnn.GRU(3, 4, proj_size=2)
    with pytest.raises(ValueError, match="smaller than hidden_size"):
        tnn.LSTM(3, 4, proj_size=4)
    with pytest.warns(UserWarning, match="num_layers greater than 1"):
        tnn.LSTM(3, 4, dropout=0.5)
    lstm.flatten_parameters()      # a no-op, kept for scripts


def test_dropout_between_layers(backend):
    torchic.manual_seed(0)
    m = tnn.LSTM(3, 8, num_layers=2, dropout=0.5)
    x = torchic.randn(4, 2, 3)
    a, b = m(x)[0].detach().numpy(), m(x)[0].detach().numpy()
    assert not np.allclose(a, b)             # fresh masks each call in training mode
    m.eval()
    np.testing.assert_array_equal(m(x)[0].detach().numpy(), m(x)[0].detach().numpy())


def test_lstm_retain_graph(backend):
    tm, m = pair("LSTM", 3, 4)
    x = torch.randn(5, 2, 3)
    o, _ = tm(x)
    oi, _ = m(tt(x))
    for _ in range(2):          # the second backward adds the same gradients again
        o.sum().backward(retain_graph=True)
        oi.sum().backward(retain_graph=True)
    close(m.weight_hh_l0.grad, tm.weight_hh_l0.grad, "weight_hh_l0.grad after two backwards")
