"""Adam (Kingma & Ba 2015) and AdamW (Loshchilov & Hutter 2019)."""

import functools
import math
from collections.abc import Callable, Iterable
from typing import Any

from .. import raw
from ..autograd import no_grad
from ..compile import host_values
from ..api.creation_ops import zeros_like
from .optimizer import Optimizer, checked_lr


class Adam(Optimizer):
    """PyTorch's Adam update at step t, for each parameter p with gradient g:

        g = g + weight_decay * p                 (Adam: L2 penalty in the gradient)
        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g * g
        v_hat = max(v_hat, v) if amsgrad else v
        p = p - lr / (1 - beta1^t) * m / (sqrt(v_hat) / sqrt(1 - beta2^t) + eps)

    AdamW (or decoupled_weight_decay=True) instead decays the weights directly:
    p = p * (1 - lr * weight_decay), then applies the update above without the L2 term.

    Each parameter's whole update is one primitive (ops.py's adam_update: p, m and v
    updated in place in one pass, the step's numbers in a small tensor written each step)
    where p, its grad and its state are contiguous float32 (or float64) tensors of one
    shape; the others (and amsgrad) take the same formulas as separate ops, with the same
    results. `foreach`, `fused`, `capturable` and `differentiable` are PyTorch's
    implementation choices; they are accepted and change nothing here.
    """

    _decoupled = False

    def __init__(self, params: Iterable[Any], lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0, amsgrad: bool = False, *,
                 foreach: bool | None = None, maximize: bool = False,
                 capturable: bool = False, differentiable: bool = False,
                 fused: bool | None = None, decoupled_weight_decay: bool = False) -> None:
        lr = checked_lr(lr)
        if eps < 0:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        if weight_decay < 0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay, amsgrad=amsgrad,
                                      maximize=maximize, foreach=foreach,
                                      capturable=capturable, differentiable=differentiable,
                                      fused=fused,
                                      decoupled_weight_decay=decoupled_weight_decay))
        if fused:       # (PyTorch's checks)
            if differentiable:
                raise RuntimeError("`fused` does not support `differentiable`")
            if foreach:
                raise RuntimeError("`fused` and `foreach` cannot be `True` together.")

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        loss = self._closure_loss(closure)
        with no_grad():
            for group in self.param_groups:
                amsgrad = group["amsgrad"]
                fused = []          # (p, g, state) of the parameters adam_update takes
                for p in group["params"]:
                    g = p.grad
                    if g is None:
                        continue
                    state = self._state_of(p, amsgrad)
                    if not amsgrad and self._fusable(p, g, state):
                        fused.append((p, g, state))
                    else:
                        self._step_unfused(group, p, -g if group["maximize"] else g, state)
                for dtype in sorted({p._dtype for p, _, _ in fused}):
                    of_dtype = [f for f in fused if f[0]._dtype == dtype]
                    # one row of the step's numbers per parameter, in its dtype; host_values
                    # re-computes them (and counts the steps) at every replay of a compiled step
                    rows = host_values(functools.partial(
                        self._fused_scalars, group, [st for _, _, st in of_dtype]), dtype)
                    for (p, g, state), row in zip(of_dtype, rows.unbind(0)):
                        raw.adam_update(p, g, state["exp_avg"], state["exp_avg_sq"], row)
        return loss

    def _state_of(self, p, amsgrad):
        """p's state (made on its first step), its moment estimates checked against p."""
        state = self.state.setdefault(p, {})
        if not state:
            state["step"] = 0
            state["exp_avg"] = self._new_state(zeros_like(p))
            state["exp_avg_sq"] = self._new_state(zeros_like(p))
        if amsgrad and "max_exp_avg_sq" not in state:
            state["max_exp_avg_sq"] = self._new_state(zeros_like(p))
        for name in ("exp_avg", "exp_avg_sq", "max_exp_avg_sq") if amsgrad else \
                ("exp_avg", "exp_avg_sq"):
            if state[name].shape != p.shape:
                raise RuntimeError(f"{type(self).__name__}: state {name!r} has shape "
                                   f"{list(state[name].shape)}, its parameter has "
                                   f"{list(p.shape)}")
        return state

    @staticmethod
    def _fusable(p, g, state):
        """Whether adam_update can take p: p, g and the state contiguous float32 (or all
        float64) tensors of p's shape in four separate storages (else the unfused ops, same
        results)."""
        ts = (p, g, state["exp_avg"], state["exp_avg_sq"])
        return (g.shape == p.shape and p._dtype in ("f32", "f64") and
                all(t._dtype == p._dtype and t.is_contiguous() for t in ts)
                and len({id(t._storage) for t in ts}) == 4)

    def _is_decoupled(self, group):
        return self._decoupled or bool(group.get("decoupled_weight_decay"))

    def _fused_scalars(self, group, states):
        """Count each state's step t; the rows of ops.py's adam_update scalars: beta1,
        1 - beta1, beta2, 1 - beta2, eps, 1/sqrt(1 - beta2^t), -lr/(1 - beta1^t), the decay
        factor (AdamW), the L2 factor (Adam), maximize."""
        lr, (beta1, beta2), eps = group["lr"], group["betas"], group["eps"]
        wd, decoupled = group["weight_decay"], self._is_decoupled(group)
        decay, l2 = (1.0 - lr * wd if wd else 1.0, 0.0) if decoupled else (1.0, wd)
        rows = []
        for state in states:
            state["step"] += 1
            t = state["step"]
            rows.append((beta1, 1.0 - beta1, beta2, 1.0 - beta2, eps,
                         1.0 / math.sqrt(1.0 - beta2 ** t), -lr / (1.0 - beta1 ** t), decay, l2,
                         1.0 if group["maximize"] else 0.0))
        return rows

    def _step_unfused(self, group, p, g, state):
        """The update as separate ops (amsgrad, non-contiguous tensors): the formulas and
        float32 rounding of adam_update."""
        (beta1, beta2), eps = group["betas"], group["eps"]
        weight_decay, amsgrad = group["weight_decay"], group["amsgrad"]
        # the step's numbers: host_values re-computes them (and counts the step) at every
        # replay of a compiled step
        scalars = host_values(functools.partial(self._step_scalars, group, state), p._dtype)
        if weight_decay:
            if self._is_decoupled(group):
                p.mul_(scalars[2])
            else:
                g = g + p * weight_decay
        exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
        exp_avg.mul_(beta1).add_(g * (1.0 - beta1))
        exp_avg_sq.mul_(beta2).add_(g * g * (1.0 - beta2))
        if amsgrad:
            v = state["max_exp_avg_sq"]
            v.copy_(v.maximum(exp_avg_sq))
        else:
            v = exp_avg_sq
        inv_sqrt_bias2, neg_step_size = scalars[0], scalars[1]
        denom = v.sqrt() * inv_sqrt_bias2 + eps
        p.add_(exp_avg / denom * neg_step_size)

    @staticmethod
    def _step_scalars(group, state):
        """Count the step t; 1/sqrt(1 - beta2^t), -lr/(1 - beta1^t) and 1 - lr * weight_decay
        (uploaded as one fresh tensor per parameter: they change every step)."""
        state["step"] += 1
        lr, (beta1, beta2), t = group["lr"], group["betas"], state["step"]
        return (1.0 / math.sqrt(1.0 - beta2 ** t), -lr / (1.0 - beta1 ** t),
                1.0 - lr * group["weight_decay"])


class AdamW(Adam):
    """Adam with decoupled weight decay (default 0.01): p *= 1 - lr * weight_decay."""

    _decoupled = True

    def __init__(self, params: Iterable[Any], lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2, amsgrad: bool = False, *,
                 maximize: bool = False, foreach: bool | None = None,
                 capturable: bool = False, differentiable: bool = False,
                 fused: bool | None = None) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach,
                         maximize=maximize, capturable=capturable,
                         differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)
