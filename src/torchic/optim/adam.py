"""Adam (Kingma & Ba 2015) and AdamW (Loshchilov & Hutter 2019)."""

import functools
import math
from collections.abc import Callable, Iterable
from typing import Any

from ..autograd import no_grad
from ..compile import host_values
from ..creation import zeros_like
from .optimizer import Optimizer


class Adam(Optimizer):
    """PyTorch's Adam update at step t, for each parameter p with gradient g:

        g = g + weight_decay * p                 (Adam: L2 penalty in the gradient)
        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g * g
        v_hat = max(v_hat, v) if amsgrad else v
        p = p - lr / (1 - beta1^t) * m / (sqrt(v_hat) / sqrt(1 - beta2^t) + eps)

    AdamW instead decays the weights directly: p = p * (1 - lr * weight_decay),
    then applies the update above without the L2 term.
    """

    _decoupled = False

    def __init__(self, params: Iterable[Any], lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0, amsgrad: bool = False, *,
                 maximize: bool = False) -> None:
        if not isinstance(lr, (int, float)) or lr < 0:
            raise ValueError(f"Invalid learning rate: {lr!r}")
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
                                      maximize=maximize))

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        loss = self._closure_loss(closure)
        with no_grad():
            for group in self.param_groups:
                (beta1, beta2), eps = group["betas"], group["eps"]
                weight_decay, amsgrad = group["weight_decay"], group["amsgrad"]
                for p, g in self._gradients(group):
                    state = self.state.setdefault(p, {})
                    if not state:
                        state["step"] = 0
                        state["exp_avg"] = self._new_state(zeros_like(p))
                        state["exp_avg_sq"] = self._new_state(zeros_like(p))
                        if amsgrad:
                            state["max_exp_avg_sq"] = self._new_state(zeros_like(p))
                    # the step's numbers: host_values re-computes them (and counts the
                    # step) at every replay of a compiled step
                    scalars = host_values(functools.partial(self._step_scalars, group, state))
                    if weight_decay:
                        if self._decoupled:
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
        return loss


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
                 maximize: bool = False) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize=maximize)
