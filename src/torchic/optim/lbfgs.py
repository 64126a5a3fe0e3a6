"""L-BFGS (Nocedal 1980; Liu & Nocedal 1989) as PyTorch's ``torch.optim.LBFGS``, and
Adafactor (Shazeer & Stern 2018) as PyTorch's ``torch.optim.Adafactor``.

LBFGS works on the parameters as one flat vector (their gradients concatenated): the
two-loop recursion over the last `history_size` (s, y) pairs gives the direction, and the
step is either `lr` (the first one scaled by 1 / |g|_1) or found by a line search meeting
the strong Wolfe conditions (cubic interpolation, then zoom: Nocedal & Wright, Algorithms
3.5 and 3.6). The scalars of the search (losses, directional derivatives, step sizes) are
read to the host, as PyTorch's are: every step calls the closure several times and
decides on their values, so LBFGS steps are not compiled.
"""

import math
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from .. import api
from ..autograd import enable_grad, no_grad
from ..api.creation_ops import zeros_like
from ..creation import zeros
from ..dtypes import finfo, float64
from ..tensor import Tensor
from .optimizer import Optimizer, checked_lr


def _cubic_minimum(x1, f1, g1, x2, f2, g2, bounds=None):
    """The minimizer of the cubic through (x1, f1, g1) and (x2, f2, g2), clamped to `bounds`
    (default: between x1 and x2); their midpoint when the cubic has no minimum."""
    low, high = bounds if bounds is not None else (min(x1, x2), max(x1, x2))
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1 * d1 - g1 * g2
    if d2_square < 0:
        return (low + high) / 2.0
    d2 = math.sqrt(d2_square)
    if x1 <= x2:
        pos = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
    else:
        pos = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
    return min(max(pos, low), high)


def _dot(a, b):
    return float((a * b).sum().item())


def _strong_wolfe(evaluate, t, d, f, g, gtd, c1=1e-4, c2=0.9, tolerance_change=1e-9,
                  max_ls=25):
    """(loss, flat gradient, step, evaluations) of a step along d meeting the strong Wolfe
    conditions: bracket an acceptable step, then zoom into the bracket."""
    d_norm = float(d.abs().max().item())
    f_new, g_new = evaluate(t)
    evals, gtd_new = 1, _dot(g_new, d)
    t_prev, f_prev, g_prev, gtd_prev = 0.0, f, g, gtd
    done, ls_iter = False, 0
    while ls_iter < max_ls:
        if f_new > f + c1 * t * gtd or (ls_iter > 1 and f_new >= f_prev):
            bracket, bracket_f = [t_prev, t], [f_prev, f_new]
            bracket_g, bracket_gtd = [g_prev, g_new], [gtd_prev, gtd_new]
            break
        if abs(gtd_new) <= -c2 * gtd:
            bracket, bracket_f, bracket_g, done = [t], [f_new], [g_new], True
            break
        if gtd_new >= 0:
            bracket, bracket_f = [t_prev, t], [f_prev, f_new]
            bracket_g, bracket_gtd = [g_prev, g_new], [gtd_prev, gtd_new]
            break
        step = _cubic_minimum(t_prev, f_prev, gtd_prev, t, f_new, gtd_new,
                              bounds=(t + 0.01 * (t - t_prev), t * 10))
        t_prev, f_prev, g_prev, gtd_prev = t, f_new, g_new, gtd_new
        t = step
        f_new, g_new = evaluate(t)
        evals, gtd_new, ls_iter = evals + 1, _dot(g_new, d), ls_iter + 1
    if ls_iter == max_ls:
        bracket, bracket_f, bracket_g = [0.0, t], [f, f_new], [g, g_new]
    insufficient = False
    low, high = (0, 1) if bracket_f[0] <= bracket_f[-1] else (1, 0)
    while not done and ls_iter < max_ls:
        if abs(bracket[1] - bracket[0]) * d_norm < tolerance_change:
            break
        t = _cubic_minimum(bracket[0], bracket_f[0], bracket_gtd[0],
                           bracket[1], bracket_f[1], bracket_gtd[1])
        eps = 0.1 * (max(bracket) - min(bracket))
        if min(max(bracket) - t, t - min(bracket)) < eps:
            if insufficient or t >= max(bracket) or t <= min(bracket):
                t = max(bracket) - eps if abs(t - max(bracket)) < abs(t - min(bracket)) \
                    else min(bracket) + eps
                insufficient = False
            else:
                insufficient = True
        else:
            insufficient = False
        f_new, g_new = evaluate(t)
        evals, gtd_new, ls_iter = evals + 1, _dot(g_new, d), ls_iter + 1
        if f_new > f + c1 * t * gtd or f_new >= bracket_f[low]:
            bracket[high], bracket_f[high] = t, f_new
            bracket_g[high], bracket_gtd[high] = g_new, gtd_new
            low, high = (0, 1) if bracket_f[0] <= bracket_f[1] else (1, 0)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (bracket[high] - bracket[low]) >= 0:
                bracket[high], bracket_f[high] = bracket[low], bracket_f[low]
                bracket_g[high], bracket_gtd[high] = bracket_g[low], bracket_gtd[low]
            bracket[low], bracket_f[low] = t, f_new
            bracket_g[low], bracket_gtd[low] = g_new, gtd_new
    return bracket_f[low], bracket_g[low], bracket[low], evals


class LBFGS(Optimizer):
    """PyTorch's L-BFGS (the module docstring). `step(closure)` needs a closure that
    zeroes the gradients, computes the loss, calls backward and returns the loss.

    Args:
        params: the parameters (one group: LBFGS has no per-group options).
        lr (float): the step size (1).
        max_iter (int): iterations per step (20).
        max_eval (int): closure evaluations per step (max_iter * 5 / 4).
        tolerance_grad (float): stop when max |g| is below it (1e-7).
        tolerance_change (float): stop when the loss or the step changes less (1e-9).
        history_size (int): (s, y) pairs kept (100).
        line_search_fn (str): None (a fixed step) or "strong_wolfe".

    Example:
        >>> import torchic as torch
        >>> x = torch.nn.Parameter(torch.tensor([1.5, -0.5]))
        >>> opt = torch.optim.LBFGS([x], line_search_fn="strong_wolfe")
        >>> def closure():
        ...     opt.zero_grad()
        ...     loss = ((x - 1) ** 2).sum()
        ...     loss.backward()
        ...     return loss
        >>> _ = opt.step(closure)
        >>> [round(v, 4) for v in x.tolist()]
        [1.0, 1.0]
    """

    _number_state = {}          # (n_iter, func_evals: Python ints in PyTorch too)
    _state_like_param = False   # (flat directions over all parameters)

    def __init__(self, params: Iterable[Any], lr: float = 1, max_iter: int = 20,
                 max_eval: int | None = None, tolerance_grad: float = 1e-7,
                 tolerance_change: float = 1e-9, history_size: int = 100,
                 line_search_fn: str | None = None) -> None:
        lr = checked_lr(lr)
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        if line_search_fn not in (None, "strong_wolfe"):
            raise RuntimeError("only 'strong_wolfe' is supported")
        super().__init__(params, dict(lr=lr, max_iter=max_iter, max_eval=max_eval,
                                      tolerance_grad=tolerance_grad,
                                      tolerance_change=tolerance_change,
                                      history_size=history_size,
                                      line_search_fn=line_search_fn))
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]

    def _flat_grad(self):
        return api.cat([(p.grad if p.grad is not None else zeros_like(p)).reshape(-1)
                        for p in self._params])

    def _add_step(self, t, d):
        offset = 0
        for p in self._params:
            n = p.numel()
            p.add_(d[offset:offset + n].reshape(p.shape) * t)
            offset += n

    def _evaluate_at(self, closure, x, d):
        """evaluate(t): the loss and flat gradient at x + t d (the parameters restored)."""
        def evaluate(t):
            self._add_step(t, d)
            with enable_grad():
                loss = float(closure())
            g = self._flat_grad()
            for p, saved in zip(self._params, x):
                p.copy_(saved)
            return loss, g
        return evaluate

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore the state from a `state_dict()`, this optimizer's or PyTorch's (whose
        step size "t" and "prev_loss" may be 0-d tensors: they become the numbers held)."""
        super().load_state_dict(state_dict)
        for state in self.state.values():
            for k in ("t", "prev_loss"):
                if isinstance(state.get(k), Tensor):
                    state[k] = float(state[k].item())

    def step(self, closure: Callable[[], Any] | None = None) -> Any:  # type: ignore[override]
        """One L-BFGS step (up to max_iter iterations); returns the closure's first loss."""
        if closure is None:
            raise RuntimeError("LBFGS.step needs a closure that re-evaluates the model and "
                               "returns the loss")
        group = self.param_groups[0]
        lr, max_iter, max_eval = group["lr"], group["max_iter"], group["max_eval"]
        tol_grad, tol_change = group["tolerance_grad"], group["tolerance_change"]
        history = group["history_size"]
        state = self.state.setdefault(self._params[0], {})
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)
        with enable_grad():
            orig_loss = closure()
        loss = float(orig_loss)
        current_evals = 1
        state["func_evals"] += 1
        with no_grad():
            flat_grad = self._flat_grad()
            if float(flat_grad.abs().max().item()) <= tol_grad:
                return orig_loss
            d, t = state.get("d"), state.get("t")
            old_dirs, old_stps, ro = state.get("old_dirs"), state.get("old_stps"), state.get("ro")
            h_diag, prev_flat_grad = state.get("H_diag"), state.get("prev_flat_grad")
            prev_loss = state.get("prev_loss")
            n_iter = 0
            while n_iter < max_iter:
                n_iter += 1
                state["n_iter"] += 1
                if state["n_iter"] == 1:
                    d, old_dirs, old_stps, ro, h_diag = -flat_grad, [], [], [], 1.0
                else:
                    y = flat_grad - prev_flat_grad
                    s = d * t
                    ys = (y * s).sum()
                    if float(ys.item()) > 1e-10:
                        if len(old_dirs) == history:
                            old_dirs.pop(0)
                            old_stps.pop(0)
                            ro.pop(0)
                        old_dirs.append(y)
                        old_stps.append(s)
                        ro.append(1.0 / ys)
                        h_diag = ys / (y * y).sum()
                    if "al" not in state:       # (scratch kept in the state, as PyTorch)
                        state["al"] = [None] * history
                    al = state["al"]
                    q = -flat_grad
                    for i in range(len(old_dirs) - 1, -1, -1):
                        al[i] = (old_stps[i] * q).sum() * ro[i]
                        q = q - old_dirs[i] * al[i]
                    d = r = q * h_diag
                    for i in range(len(old_dirs)):
                        be_i = (old_dirs[i] * r).sum() * ro[i]
                        r = r + old_stps[i] * (al[i] - be_i)
                    d = r
                prev_flat_grad = flat_grad.clone()
                prev_loss = loss
                if state["n_iter"] == 1:     # (in the gradient's dtype, as PyTorch's tensors)
                    real = np.float64 if flat_grad.dtype == float64 else np.float32
                    inv = real(1.0) / real(flat_grad.abs().sum().item())
                    t = float(real(min(real(1.0), inv)) * real(lr))
                else:
                    t = lr
                gtd = _dot(flat_grad, d)
                if gtd > -tol_change:
                    break
                evals = 0
                if group["line_search_fn"] is not None:
                    x = [p.clone() for p in self._params]
                    loss, flat_grad, t, evals = _strong_wolfe(
                        self._evaluate_at(closure, x, d), t, d, loss, flat_grad, gtd)
                    self._add_step(t, d)
                    opt_cond = float(flat_grad.abs().max().item()) <= tol_grad
                else:
                    self._add_step(t, d)
                    opt_cond = False
                    if n_iter != max_iter:
                        with enable_grad():
                            loss = float(closure())
                        flat_grad = self._flat_grad()
                        opt_cond = float(flat_grad.abs().max().item()) <= tol_grad
                        evals = 1
                current_evals += evals
                state["func_evals"] += evals
                if n_iter == max_iter or current_evals >= max_eval or opt_cond:
                    break
                if float((d * t).abs().max().item()) <= tol_change:
                    break
                if abs(loss - prev_loss) < tol_change:
                    break
            state.update(d=d, t=t, old_dirs=old_dirs, old_stps=old_stps, ro=ro, H_diag=h_diag,
                         prev_flat_grad=prev_flat_grad, prev_loss=prev_loss)
        return orig_loss


class Adafactor(Optimizer):
    """PyTorch's Adafactor: the second moment of a matrix gradient kept as row and column
    means (O(m + n) memory), relative step sizes rho_t = min(lr, 1 / sqrt(t)) scaled by the
    parameter's RMS, updates clipped to RMS d.

    Args: params, lr (1e-2), beta2_decay (-0.8), eps ((None, 1e-3): eps1 None means the
    dtype's machine epsilon), d (1.0), weight_decay (0.0), foreach, maximize: PyTorch's.
    """

    _number_state = {"step": float}
    _state_like_param = False   # (row and column variances of a matrix)

    def __init__(self, params: Iterable[Any], lr: float = 1e-2, beta2_decay: float = -0.8,
                 eps: tuple[float | None, float] = (None, 1e-3), d: float = 1.0,
                 weight_decay: float = 0.0, *, foreach: bool | None = None,
                 maximize: bool = False) -> None:
        if not isinstance(lr, (int, float)) or lr < 0:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if beta2_decay > 0:
            raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if eps[0] is not None and eps[0] < 0:
            raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if eps[1] < 0:
            raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if d < 1.0:
            raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
        if weight_decay < 0:
            raise ValueError(f"weight_decay should be >= 0 but is: {weight_decay}")
        super().__init__(params, dict(lr=lr, beta2_decay=beta2_decay, eps=tuple(eps), d=d,
                                      weight_decay=weight_decay, foreach=foreach,
                                      maximize=maximize))

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        loss = self._closure_loss(closure)
        with no_grad():
            for group in self.param_groups:
                for p, g in self._gradients(group):
                    self._update(group, p, g, self.state.setdefault(p, {}))
        return loss

    def _update(self, group, p, g, state):
        if not state:
            state["step"] = 0.0
            if g.ndim > 1:
                state["row_var"] = self._new_state(zeros(
                    *g.shape[:-1], 1, dtype=g.dtype))
                state["col_var"] = self._new_state(zeros(
                    *g.shape[:-2], 1, g.shape[-1], dtype=g.dtype))
            else:
                state["variance"] = self._new_state(zeros_like(g))
        lr, d, wd = group["lr"], group["d"], group["weight_decay"]
        eps1, eps2 = group["eps"]
        if eps1 is None:
            eps1 = finfo(p.dtype).eps
        state["step"] += 1.0
        t = state["step"]
        one_minus_beta2 = t ** group["beta2_decay"]
        rho = min(lr, 1.0 / t ** 0.5)
        p_rms = float((p * p).sum().sqrt().item()) / p.numel() ** 0.5
        alpha = max(eps2, p_rms) * rho
        if wd:
            p.mul_(1.0 - lr * wd)
        if g.ndim > 1:
            row_var, col_var = state["row_var"], state["col_var"]
            row_mean = (g * g).sum(-1, keepdim=True) / g.shape[-1]
            row_var.add_((row_mean - row_var) * one_minus_beta2)
            col_mean = (g * g).sum(-2, keepdim=True) / g.shape[-2]
            col_var.add_((col_mean - col_var) * one_minus_beta2)
            estimate = (row_var @ col_var) / api.clamp(row_var.mean(-2, keepdim=True),
                                                       min=eps1)
        else:
            variance = state["variance"]
            variance.add_((g * g - variance) * one_minus_beta2)
            estimate = variance
        update = g / api.clamp(estimate, min=eps1 * eps1).sqrt()
        rms = float((update * update).sum().sqrt().item()) / (update.numel() ** 0.5 * d)
        p.add_(update * (-alpha / max(1.0, rms)))
