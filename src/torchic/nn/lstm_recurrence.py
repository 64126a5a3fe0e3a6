"""One LSTM layer-direction's recurrence over a full sequence as one autograd node (nn.LSTM's
path for unpacked inputs without proj_size; rnn.py's step loop serves the others).

The step loop of rnn.py records an autograd node per op per step and, in the backward, adds
one small weight-gradient product per step into dW_hh. Here a step is two ops each way: the
recurrent product and one fused cell op (ops.py's lstm_cell forward, lstm_cell_grad
backward), writing into rows of buffers the node owns, and the weight gradient is one
product over all steps. On bench/lstm.py's LSTM language model (2 layers, hidden 256, T 64,
batch 32) the per-op loop took the simd step from 1.8x PyTorch CPU's time to about 1x; the
fused cell ops cut its records from 17 a step to 4 (docs/perf/conv.md, LSTM).
"""

from .. import raw
from ..autograd import Primitive
from ..functions.common import as_strided
from ..grad_mode import is_grad_enabled
from ..ops import COMPUTE_AS

__all__ = ["LSTMRecurrence"]


def _row(t, i):
    """Row i of a contiguous tensor's dim 0 (its trailing dims), as a view."""
    return as_strided(t, t._offset + i * t._strides[0], t.shape[1:], t._strides[1:])


def _plane(state, k, j):
    """Boundary k's cell (j = 0) or its gradient (j = 1), (N, H), of the (N, T + 1, 2, H)
    state buffer, as a view."""
    st = state._strides
    return as_strided(state, k * st[1] + j * st[2], (state.shape[0], state.shape[3]),
                      (st[0], 1))


def _cells(state, k, with_grads):
    """Boundaries k and k + 1 of the state buffer: their cells (N, 2, H) (c_prev, c), or
    with_grads the cells and their gradients (N, 2, 2, H)."""
    n, _, _, hs = state.shape
    st = state._strides
    if with_grads:
        return as_strided(state, k * st[1], (n, 2, 2, hs), st)
    return as_strided(state, k * st[1], (n, 2, hs), (st[0], st[1], 1))


class LSTMRecurrence(Primitive):
    """The recurrent part of one LSTM layer-direction over a full (unpacked) sequence, as one
    autograd node: xp (T, N, 4H) (the input projection, both biases in), h0 / c0 (N, H),
    w_hh (4H, H) -> Y (T + 2, N, H): the hidden states in time order with the initial one
    beside them (forward: [h0, h_1 .. h_T]; reverse: [h_0 .. h_{T-1}, h0]), then c at the
    end of the sequence.

    A step is the product h_prev @ W_hh^T and one lstm_cell op, which writes the gates'
    activations (saved, (T, N, 4H)), the new cell and h into rows of buffers the node owns
    (ops.py's contract: outs contiguous), so a step costs no autograd node, stack or cat.
    The cells live in a state buffer (N, T + 1, 2, H) in the order the steps run: boundary
    k holds the cell after k steps and, in the backward, its gradient, so that one step's
    (c_prev, dc_prev, c, dc) is one view (N, 2, 2, H) of it. The backward is lstm_cell_grad
    (gate gradients into row t of dxp (T, N, 4H), dc_prev in place) and the product
    dgates @ W_hh, and forms the weight gradient as ONE product over all T * N rows
    (dW_hh = dgates^T @ [previous h]). float16 / bfloat16 run in float32 (as raw computes
    them). Under create_graph=True the backward recomputes the recurrence from the inputs
    with recorded ops and differentiates that (second derivatives)."""

    def forward(self, xp, h0, c0, w_hh, reverse=False):
        inputs = (xp, h0, c0, w_hh)     # (create_graph's backward recomputes from them)
        code = xp._dtype
        wide = COMPUTE_AS.get(code, code)
        if wide != code:        # float16 / bfloat16: computed in float32, rounded back
            xp, h0, c0, w_hh = (raw.cast(t, wide) for t in (xp, h0, c0, w_hh))
        steps, n, hs = xp.shape[0], h0.shape[0], h0.shape[1]
        xp = raw.contiguous(xp)     # (rows each within a row of memory: webgpu cuts rows)
        ys = raw.new_tensor((steps + 2, n, hs), wide)       # hidden states, then c_T
        acts = raw.new_tensor((steps, n, 4 * hs), wide)     # the gates' activations
        state = raw.new_tensor((n, steps + 1, 2, hs), wide)     # cells (and their grads)
        init = steps if reverse else 0
        raw.copy_into(_row(ys, init), h0)
        raw.copy_into(_plane(state, 0, 0), c0)
        h = _row(ys, init)
        # w_hh^T laid out once: the product per step reads it row-major (a measured 1.5x
        # over reading w_hh through swapped strides at (32, 256) @ (256, 1024))
        w_t = raw.contiguous(as_strided(w_hh, w_hh._offset, (hs, 4 * hs),
                                        (w_hh._strides[1], w_hh._strides[0])))
        order = range(steps - 1, -1, -1) if reverse else range(steps)
        for k, t in enumerate(order):
            r = raw.matmul(h, w_t)
            h = _row(ys, t if reverse else t + 1)
            raw.run("lstm_cell", h, tuple(raw.view_of(v) for v in (
                _row(xp, t), r, _row(acts, t), _cells(state, k, False))))
        raw.copy_into(_row(ys, steps + 1), _plane(state, steps, 0))
        self.reverse, self.code = reverse, code
        # (the buffers and the inputs are saved tensors: freed with the graph, kept by
        # retain_graph=True, and an in-place change of the output or an input is caught at
        # backward)
        self.save(h0, w_hh, ys, acts, state, *inputs)
        return ys if wide == code else raw.cast(ys, code)

    def backward(self, grad):
        if is_grad_enabled():       # create_graph: a differentiable backward
            return self._recorded_backward(grad)
        h0, w_hh, ys, acts, state = self.saved[:5]
        steps, n, hs = acts.shape[0], h0.shape[0], h0.shape[1]
        code, wide, reverse = self.code, acts._dtype, self.reverse
        grad = raw.contiguous(grad if grad._dtype == wide else raw.cast(grad, wide))
        dxp = raw.new_tensor((steps, n, 4 * hs), wide)     # the gate gradients, (T, N, 4H)
        # dc of the last boundary: the gradient of c_T (the output's last row)
        raw.copy_into(_plane(state, steps, 1), _row(grad, steps + 1))
        r = raw.full((n, hs), 0.0, wide)         # dh through the next step's product
        order = range(steps - 1, -1, -1) if reverse else range(steps)
        for k in range(steps - 1, -1, -1):
            t = order[k]
            dx = _row(dxp, t)
            raw.run("lstm_cell_grad", dx, tuple(raw.view_of(v) for v in (
                _row(acts, t), _cells(state, k, True), _row(grad, t if reverse else t + 1),
                r)))
            r = raw.matmul(dx, w_hh)
        dh0 = raw.binary("add", r, _row(grad, steps if reverse else 0))
        dc0 = raw.contiguous(_plane(state, 0, 1))
        dw = None
        if self.needs_grad[3]:
            prev = as_strided(ys, (1 if reverse else 0) * n * hs, (steps * n, hs), (hs, 1))
            dw = raw.matmul(dxp.reshape(steps * n, 4 * hs), prev, transpose_a=True)
        grads = (dxp, dh0, dc0, dw)
        if wide != code:
            grads = tuple(None if g is None else raw.cast(g, code) for g in grads)
        return grads

    def _recorded_backward(self, grad):
        """The gradients as recorded ops (create_graph=True: second derivatives): the
        recurrence recomputed from the inputs with differentiable ops (rnn.py's LSTM step
        as composites), then differentiated by the engine."""
        from .. import api
        from ..autograd import grad as autograd_grad
        inputs = self.saved[5:]
        xp, h0, c0, w_hh = inputs
        hs = h0.shape[1]
        h, c, hidden = h0, c0, [None] * xp.shape[0]
        order = range(xp.shape[0] - 1, -1, -1) if self.reverse else range(xp.shape[0])
        for t in order:
            z = xp[t] + api.matmul(h, w_hh.t())
            i, f, o = (api.sigmoid(z[:, k * hs:(k + 1) * hs]) for k in (0, 1, 3))
            c = f * c + i * api.tanh(z[:, 2 * hs:3 * hs])
            h = hidden[t] = o * api.tanh(c)
        rows = hidden + [h0] if self.reverse else [h0] + hidden
        ys = api.stack(rows + [c], 0)
        wanted = [k for k, need in enumerate(self.needs_grad) if need]
        got = autograd_grad(ys, [inputs[k] for k in wanted], grad, create_graph=True,
                            allow_unused=True)
        grads = [None] * 4
        for k, g in zip(wanted, got):
            grads[k] = g
        return tuple(grads)
