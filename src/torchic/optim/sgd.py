"""Stochastic gradient descent with momentum, dampening, Nesterov and weight decay."""

from collections.abc import Callable, Iterable
from typing import Any

from ..autograd import no_grad
from ..compile import host_values
from .optimizer import Optimizer, checked_lr


class SGD(Optimizer):
    """PyTorch's SGD update, for each parameter p with gradient g:

        g = g + weight_decay * p                       (if weight_decay)
        b = g                                          (first step, if momentum)
        b = momentum * b + (1 - dampening) * g         (later steps)
        g = g + momentum * b   if nesterov   else  b   (if momentum)
        p = p - lr * g                                 (maximize: p + lr * g)
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-3, momentum: float = 0.0,
                 dampening: float = 0.0, weight_decay: float = 0.0, nesterov: bool = False,
                 *, maximize: bool = False) -> None:
        lr = checked_lr(lr)
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening,
                                      weight_decay=weight_decay, nesterov=nesterov,
                                      maximize=maximize))

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        loss = self._closure_loss(closure)
        with no_grad():
            for group in self.param_groups:
                momentum, dampening = group["momentum"], group["dampening"]
                weight_decay, nesterov = group["weight_decay"], group["nesterov"]
                for p, g in self._gradients(group):
                    if weight_decay:
                        g = g + p * weight_decay
                    if momentum:
                        state = self.state.setdefault(p, {})
                        buf = state.get("momentum_buffer")
                        if buf is None:
                            buf = state["momentum_buffer"] = self._new_state(g.clone())
                        else:
                            buf.mul_(momentum)
                            buf.add_(g if dampening == 0 else g * (1.0 - dampening))
                        g = g + buf * momentum if nesterov else buf
                    # -lr read again at every replay of a compiled step (a scheduler changes it)
                    p.add_(g * host_values(lambda group=group: -group["lr"], p._dtype))
        return loss
