"""Adam (Kingma & Ba 2015) and AdamW (Loshchilov & Hutter 2019)."""

import math
from collections.abc import Callable, Iterable
from typing import Any

from ..autograd import no_grad
from ..creation import tensor, zeros_like
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
                scalars = {}
                lr, (beta1, beta2), eps = group["lr"], group["betas"], group["eps"]
                weight_decay, amsgrad = group["weight_decay"], group["amsgrad"]
                for p, g in self._gradients(group):
                    state = self.state.setdefault(p, {})
                    if not state:
                        state["step"] = 0
                        state["exp_avg"] = self._new_state(zeros_like(p))
                        state["exp_avg_sq"] = self._new_state(zeros_like(p))
                        if amsgrad:
                            state["max_exp_avg_sq"] = self._new_state(zeros_like(p))
                    state["step"] += 1
                    t = state["step"]
                    if weight_decay:
                        if self._decoupled:
                            p.mul_(1.0 - lr * weight_decay)
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
                    inv_sqrt_bias2, neg_step_size = scalars.get(t) or scalars.setdefault(
                        t, self._step_scalars(lr, beta1, beta2, t))
                    denom = v.sqrt() * inv_sqrt_bias2 + eps
                    p.add_(exp_avg / denom * neg_step_size)
        return loss


    @staticmethod
    def _step_scalars(lr, beta1, beta2, t):
        """1/sqrt(1 - beta2^t) and -lr/(1 - beta1^t) as 0-d tensors.

        They change every step, so they are uploaded as fresh tensors (freed after
        the step) rather than as cached Python-number constants, which would grow
        the constant cache by two entries per step.
        """
        return (tensor(1.0 / math.sqrt(1.0 - beta2 ** t)), tensor(-lr / (1.0 - beta1 ** t)))


class AdamW(Adam):
    """Adam with decoupled weight decay (default 0.01): p *= 1 - lr * weight_decay."""

    _decoupled = True

    def __init__(self, params: Iterable[Any], lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2, amsgrad: bool = False, *,
                 maximize: bool = False) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize=maximize)
