"""One LSTM layer-direction's recurrence over a full sequence as one autograd node (nn.LSTM's
path for unpacked inputs without proj_size; rnn.py's step loop serves the others).

The step loop of rnn.py records an autograd node per op per step and, in the backward, adds
one small weight-gradient product per step into dW_hh. Here forward and backward are loops
of raw ops writing into contiguous rows of buffers the node owns, and the weight gradient is
one product over all steps: on bench/lstm.py's LSTM language model (2 layers, hidden 256,
T 64, batch 32) that took the simd step from 1.8x PyTorch CPU's time to about 1x.
"""

from .. import raw
from ..autograd import Primitive
from ..functions.common import as_strided
from ..grad_mode import is_grad_enabled

__all__ = ["LSTMRecurrence"]


def _row_range(t, first, count):
    """Rows first..first+count of a contiguous tensor's dim 0, as a view (no op)."""
    inner = t._strides[0]
    return as_strided(t, t._offset + first * inner, (count,) + t.shape[1:], t._strides)


def _row(t, i):
    """Row i of a contiguous tensor's dim 0 (its trailing dims), as a view."""
    return as_strided(t, t._offset + i * t._strides[0], t.shape[1:], t._strides[1:])


def _gate(t, k, hs):
    """Gate block k ((N, H) columns k*H..(k+1)*H) of a contiguous (N, 4H) tensor, a view."""
    return as_strided(t, t._offset + k * hs, (t.shape[0], hs), (t._strides[0], 1))


def _into(op, out, *inputs):
    """op of same-shaped inputs written into `out` (a view of a buffer this node owns)."""
    return raw.run(op, out, tuple(raw.view_of(x) for x in inputs))


class LSTMRecurrence(Primitive):
    """The recurrent part of one LSTM layer-direction over a full (unpacked) sequence, as one
    autograd node: xp (T, N, 4H) (the input projection, both biases in), h0 / c0 (N, H),
    w_hh (4H, H) -> Y (T + 2, N, H): the hidden states in time order with the initial one
    beside them (forward: [h0, h_1 .. h_T]; reverse: [h_0 .. h_{T-1}, h0]), then c at the
    end of the sequence.

    Forward and backward are loops of raw ops writing into contiguous rows of buffers the
    node owns (ops.py's contract: outs contiguous), so a step costs no autograd node, stack
    or cat: 8 ops a step forward, 9 backward. The backward computes the activations'
    derivatives for all steps at once before its loop, keeps the gate gradients gate-major
    (T, 4, N, H) so one op writes three gates of a step, and forms the weight gradient as ONE
    product over all T * N rows (dW_hh = dgates^T @ [previous h]) instead of T small ones
    each added into dW_hh. Its backward is not itself differentiable (double backward
    raises)."""

    def forward(self, xp, h0, c0, w_hh, reverse=False):
        steps, n, hs = xp.shape[0], h0.shape[0], h0.shape[1]
        code = xp._dtype
        xp = raw.contiguous(xp)
        ys = raw.new_tensor((steps + 2, n, hs), code)       # hidden states, then c_T
        acts = raw.new_tensor((steps, n, 4 * hs), code)     # sigmoid of every gate
        gs = raw.new_tensor((steps, n, hs), code)           # tanh of the cell gate
        cells = raw.new_tensor((steps + 1, n, hs), code)    # c, the initial one beside them
        tanhs = raw.new_tensor((steps, n, hs), code)
        init = steps if reverse else 0
        raw.copy_into(_row(ys, init), h0)
        raw.copy_into(_row(cells, init), c0)
        h, c = _row(ys, init), _row(cells, init)
        # w_hh^T laid out once: the product per step reads it row-major (a measured 1.5x
        # over reading w_hh through swapped strides at (32, 256) @ (256, 1024))
        w_t = raw.contiguous(as_strided(w_hh, w_hh._offset, (hs, 4 * hs),
                                        (w_hh._strides[1], w_hh._strides[0])))
        order = range(steps - 1, -1, -1) if reverse else range(steps)
        for t in order:
            gates = raw.binary("add", _row(xp, t), raw.matmul(h, w_t))
            a, g = _row(acts, t), _row(gs, t)
            _into("sigmoid", a, gates)
            _into("tanh", g, _gate(gates, 2, hs))
            c_t = _row(cells, t if reverse else t + 1)
            _into("add", c_t, raw.binary("mul", _gate(a, 1, hs), c),
                  raw.binary("mul", _gate(a, 0, hs), g))
            tc = _row(tanhs, t)
            _into("tanh", tc, c_t)
            h = _row(ys, t if reverse else t + 1)
            _into("mul", h, _gate(a, 3, hs), tc)
            c = c_t
        raw.copy_into(_row(ys, steps + 1), c)
        self.reverse = reverse
        # (the buffers are saved tensors: freed with the graph, kept by retain_graph=True,
        # and an in-place change of the output is caught at backward)
        self.save(h0, c0, w_hh, ys, acts, gs, cells, tanhs)
        return ys

    def backward(self, grad):
        if is_grad_enabled():
            raise RuntimeError("double backward through nn.LSTM is not supported in torchic")
        h0, c0, w_hh, ys, acts, gs, cells, tanhs = self.saved
        steps, n, hs = acts.shape[0], h0.shape[0], h0.shape[1]
        code = acts._dtype
        reverse = self.reverse
        grad = raw.contiguous(grad)
        one = raw.full((1,), 1.0, code)
        rows = steps * n

        def gate_of_all(t, k):     # gate k of every step: (T * N, H), strided
            return as_strided(t, t._offset + k * hs, (rows, hs), (4 * hs, 1))

        # every step's d(gate pre-activation) / d(c) factors, gate-major (4, T, N, H):
        # i: g s_i (1 - s_i), f: c_prev s_f (1 - s_f), g: s_i (1 - g^2), o: tanh(c) s_o (1 - s_o)
        facs = raw.binary("mul", acts, raw.binary("sub", one, acts))
        p = raw.new_tensor((4, rows, hs), code)
        prev_c = _row_range(cells, 1 if reverse else 0, steps).reshape(rows, hs)
        g_all = gs.reshape(rows, hs)
        _into("mul", _row(p, 0), g_all, gate_of_all(facs, 0))
        _into("mul", _row(p, 1), prev_c, gate_of_all(facs, 1))
        _into("mul", _row(p, 2), gate_of_all(acts, 0),
              raw.binary("sub", one, raw.binary("mul", g_all, g_all)))
        _into("mul", _row(p, 3), tanhs.reshape(rows, hs), gate_of_all(facs, 3))
        dtanhs = raw.binary("sub", one, raw.binary("mul", tanhs, tanhs))
        dgm = raw.new_tensor((4, n, hs), code)             # one step's gate gradients
        dxp = raw.new_tensor((steps, n, 4 * hs), code)     # all of them, (T, N, 4H)
        order = range(steps) if reverse else range(steps - 1, -1, -1)
        dh_next, dc_next = None, _row(grad, steps + 1)
        for t in order:
            a = _row(acts, t)
            g_t = _row(grad, t if reverse else t + 1)
            dh = g_t if dh_next is None else raw.binary("add", g_t, dh_next)
            dc = raw.binary("add", raw.binary("mul", raw.binary("mul", dh, _gate(a, 3, hs)),
                                              _row(dtanhs, t)), dc_next)
            p_t = as_strided(p, t * n * hs, (4, n, hs), (rows * hs, hs, 1))
            _into("mul", _row_range(dgm, 0, 3), dc.expand(3, n, hs), _row_range(p_t, 0, 3))
            _into("mul", _row(dgm, 3), dh, _row(p_t, 3))
            dx = _row(dxp, t)                              # (N, 4H) <- (4, N, H)
            raw.copy_into(as_strided(dx, dx._offset, (n, 4, hs), (4 * hs, hs, 1)),
                          as_strided(dgm, 0, (n, 4, hs), (hs, n * hs, 1)))
            dc_next = raw.binary("mul", dc, _gate(a, 1, hs))
            dh_next = raw.matmul(dx, w_hh)
        init = steps if reverse else 0
        dh0 = raw.binary("add", dh_next, _row(grad, init))
        dw = None
        if self.needs_grad[3]:
            prev = _row_range(ys, 1 if reverse else 0, steps)       # h_{t-1} of every step t
            dw = raw.matmul(dxp.reshape(rows, 4 * hs), prev.reshape(rows, hs),
                            transpose_a=True)
        return dxp, dh0, dc_next, dw
