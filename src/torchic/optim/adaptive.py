"""PyTorch's other first-order optimizers: Adamax, NAdam, RAdam, Adagrad, Adadelta, RMSprop,
Rprop and ASGD, each PyTorch's single-tensor update written with torchic's in-place ops.

They share `PerParameter.step`: for each parameter with a gradient (negated when
maximize=True), make its state on the first step, then `_update(group, p, g, state)`. The
numbers that change from step to step (bias corrections, step sizes) are computed by
`_numbers(group, state)`, which also counts the step, through `host_values`: a compiled step
calls it again at every replay instead of baking the first step's numbers in;
`_decayed` gives them with the gradient after weight decay, `_moments` Adam's two moment
updates, `_fused` the one-pass form of v = b * v + c * g^2 updates. `foreach`,
`capturable`, `differentiable` are PyTorch's implementation choices: accepted, no effect.
"""

import functools
import math
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from .. import api, raw
from ..autograd import no_grad
from ..compile import host_values
from ..api.creation_ops import full_like, zeros_like
from .optimizer import Optimizer, checked_lr


def _check(name: str, value: float, low: float = 0.0, high: float | None = None) -> None:
    """ValueError naming `name` (PyTorch's message) unless low <= value (< high)."""
    if value < low or (high is not None and value >= high):
        raise ValueError(f"Invalid {name} value: {value}")


def _check_adam_like(eps: float, betas: tuple[float, float], weight_decay: float) -> None:
    """PyTorch's argument checks of the Adam family: eps >= 0, betas in [0, 1), decay >= 0."""
    _check("epsilon", eps)
    for i, beta in enumerate(betas):
        _check(f"beta parameter at index {i}", beta, 0.0, 1.0)
    _check("weight_decay", weight_decay)


class PerParameter(Optimizer):
    """An optimizer whose update touches one parameter at a time (the module docstring)."""

    _IMPLEMENTATION = dict(foreach=None, maximize=False, capturable=False,
                           differentiable=False)

    def __init__(self, params: Iterable[Any], defaults: dict[str, Any],
                 **implementation: Any) -> None:
        defaults["lr"] = checked_lr(defaults["lr"])
        super().__init__(params, {**defaults, **implementation})

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        loss = self._closure_loss(closure)
        with no_grad():
            for group in self.param_groups:
                for p, g in self._gradients(group):
                    state = self.state.setdefault(p, {})
                    if not state:
                        state["step"] = 0
                        self._init_state(group, p, state)
                    self._update(group, p, g, state)
        return loss

    def _numbers(self, group: dict[str, Any], state: dict[str, Any]) -> tuple:
        """This step's numbers (counting the step); by default (-lr,)."""
        state["step"] += 1
        return (-group["lr"],)

    def _step_numbers(self, group, p, state):
        """This step's numbers as tensors of p's dtype (re-computed at every replay)."""
        return host_values(functools.partial(self._numbers, group, state), p._dtype)

    def _decayed(self, group, p, g, state):
        """(this step's numbers, the gradient) with the weight decay applied: the coupled
        L2 term added to g, or, where the group has decoupled_weight_decay, p scaled by
        the last of the numbers (1 - lr * weight_decay)."""
        n = self._step_numbers(group, p, state)
        if not group.get("decoupled_weight_decay"):
            return n, _l2(group, p, g)
        if group["weight_decay"]:
            p.mul_(n[-1])
        return n, g

    def _init_state(self, group, p, state):
        raise NotImplementedError

    def _fused(self, group, p, g, state, v, b, c):
        """An update of the form v = b * v + c * g^2, p = p + (g / (sqrt(v) + eps)) * s,
        s = _numbers()[0] (Adagrad, plain RMSprop) as one ops.py adam_update pass instead
        of ~8 ops: beta1 = 0 makes Adam's first moment the gradient itself (in a scratch
        buffer kept outside the state), the bias corrections are 1, the L2 term rides in
        the row. `row()` gives the 10 numbers (and counts the step; host_values re-runs it
        at every compiled replay). Returns False, doing nothing, where adam_update can't
        take the tensors (not contiguous float32/float64 of one shape in separate
        storages)."""
        ts = (p, g, v)
        if not (g.shape == p.shape and p._dtype in ("f32", "f64")
                and all(t._dtype == p._dtype and t.is_contiguous() for t in ts)
                and len({id(t._storage) for t in ts}) == 3):
            return False
        scratch = self.__dict__.setdefault("_first_moment", {})
        m = scratch.get(p)
        if m is None or m.shape != p.shape or m._dtype != p._dtype:
            m = scratch[p] = self._new_state(zeros_like(p))

        def row():
            return (0.0, 1.0, b, c, group["eps"], 1.0, self._numbers(group, state)[0], 1.0,
                    group["weight_decay"], 0.0)

        raw.adam_update(p, g, m, v, host_values(row, p._dtype))
        return True

    def _init_moments(self, p, state):
        """Adam's two moments, zero."""
        state["exp_avg"] = self._new_state(zeros_like(p))
        state["exp_avg_sq"] = self._new_state(zeros_like(p))

    def _update(self, group, p, g, state):
        raise NotImplementedError


def _sign(t):
    return (t > 0).to(t.dtype) - (t < 0).to(t.dtype)


def _l2(group, p, g):
    """g + weight_decay * p (the coupled L2 penalty), or g."""
    wd = group["weight_decay"]
    return g + p * wd if wd else g


def _moments(group, g, state):
    """Adam's moments: m += (g - m) * (1 - beta1), v = beta2 * v + (1 - beta2) * g^2."""
    (beta1, beta2), exp_avg = group["betas"], state["exp_avg"]
    exp_avg.add_((g - exp_avg) * (1.0 - beta1))
    state["exp_avg_sq"].mul_(beta2).add_(g * g * (1.0 - beta2))
    return exp_avg, state["exp_avg_sq"]


class Adamax(PerParameter):
    """Adam with the infinity norm: u = max(beta2 * u, |g| + eps), p -= lr / (1 - beta1^t) * m / u.

    Args: params, lr (2e-3), betas ((0.9, 0.999)), eps (1e-8), weight_decay (0), foreach,
    maximize, differentiable, capturable: PyTorch's.
    """

    def __init__(self, params: Iterable[Any], lr: float = 2e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0, foreach: bool | None = None, *,
                 maximize: bool = False, differentiable: bool = False,
                 capturable: bool = False) -> None:
        _check_adam_like(eps, betas, weight_decay)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay), foreach=foreach,
                         maximize=maximize, differentiable=differentiable,
                         capturable=capturable)

    def _init_state(self, group, p, state):
        state["exp_avg"] = self._new_state(zeros_like(p))
        state["exp_inf"] = self._new_state(zeros_like(p))

    def _numbers(self, group, state):
        state["step"] += 1
        return (-group["lr"] / (1.0 - group["betas"][0] ** state["step"]),)

    def _update(self, group, p, g, state):
        (beta1, beta2), eps = group["betas"], group["eps"]
        (neg_clr,), g = self._decayed(group, p, g, state)
        exp_avg, exp_inf = state["exp_avg"], state["exp_inf"]
        exp_avg.add_((g - exp_avg) * (1.0 - beta1))
        exp_inf.copy_(api.maximum(exp_inf * beta2, g.abs() + eps))
        p.add_(exp_avg / exp_inf * neg_clr)


class NAdam(PerParameter):
    """Adam with Nesterov momentum (Dozat 2016) and PyTorch's momentum decay schedule
    mu_t = beta1 * (1 - 0.5 * 0.96^(t * momentum_decay)).

    Args: params, lr (2e-3), betas, eps (1e-8), weight_decay (0), momentum_decay (4e-3),
    decoupled_weight_decay (False: L2 in the gradient; True: p *= 1 - lr * weight_decay),
    foreach, maximize, capturable, differentiable: PyTorch's.
    """

    def __init__(self, params: Iterable[Any], lr: float = 2e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0, momentum_decay: float = 4e-3,
                 decoupled_weight_decay: bool = False, *, foreach: bool | None = None,
                 maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False) -> None:
        _check_adam_like(eps, betas, weight_decay)
        _check("momentum_decay", momentum_decay)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay,
                                      momentum_decay=momentum_decay,
                                      decoupled_weight_decay=decoupled_weight_decay),
                         foreach=foreach, maximize=maximize, capturable=capturable,
                         differentiable=differentiable)

    _number_state = {"step": int, "mu_product": float}

    def _init_state(self, group, p, state):
        state["mu_product"] = 1.0
        self._init_moments(p, state)

    def _numbers(self, group, state):
        state["step"] += 1
        t, lr = state["step"], group["lr"]
        (beta1, beta2), decay = group["betas"], group["momentum_decay"]
        mu = beta1 * (1.0 - 0.5 * 0.96 ** (t * decay))
        mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((t + 1) * decay))
        # PyTorch keeps the product in a float32 tensor: rounded as it is
        state["mu_product"] = float(np.float32(state["mu_product"]) * np.float32(mu))
        mu_product = state["mu_product"]
        return (1.0 - beta2 ** t, -lr * (1.0 - mu) / (1.0 - mu_product),
                -lr * mu_next / (1.0 - mu_product * mu_next),
                1.0 - lr * group["weight_decay"])

    def _update(self, group, p, g, state):
        n, g = self._decayed(group, p, g, state)
        exp_avg, exp_avg_sq = _moments(group, g, state)
        denom = (exp_avg_sq / n[0]).sqrt() + group["eps"]
        p.add_(g / denom * n[1])
        p.add_(exp_avg / denom * n[2])


class RAdam(PerParameter):
    """Rectified Adam (Liu et al. 2019): Adam's step scaled by the variance rectification
    term once its approximation holds (rho_t > 5), plain momentum SGD before.

    Args: params, lr (1e-3), betas, eps (1e-8), weight_decay (0), decoupled_weight_decay
    (False), foreach, maximize, capturable, differentiable: PyTorch's.
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0, decoupled_weight_decay: bool = False, *,
                 foreach: bool | None = None, maximize: bool = False,
                 capturable: bool = False, differentiable: bool = False) -> None:
        _check_adam_like(eps, betas, weight_decay)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay,
                                      decoupled_weight_decay=decoupled_weight_decay),
                         foreach=foreach, maximize=maximize, capturable=capturable,
                         differentiable=differentiable)

    def _init_state(self, group, p, state):
        self._init_moments(p, state)

    def _numbers(self, group, state):
        """(adaptive factor, plain factor, -lr / bias1, decay): the update is
        -lr / bias1 * m * (adaptive / (sqrt(v) + eps) + plain)."""
        state["step"] += 1
        t, lr = state["step"], group["lr"]
        beta1, beta2 = group["betas"]
        bias1, bias2 = 1.0 - beta1 ** t, 1.0 - beta2 ** t
        rho_inf = 2.0 / (1.0 - beta2) - 1.0
        rho_t = rho_inf - 2.0 * t * (beta2 ** t) / bias2
        if rho_t > 5.0:
            rect = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf /
                             ((rho_inf - 4) * (rho_inf - 2) * rho_t))
            adaptive, plain = rect * math.sqrt(bias2), 0.0
        else:
            adaptive, plain = 0.0, 1.0
        return (adaptive, plain, -lr / bias1, 1.0 - lr * group["weight_decay"])

    def _update(self, group, p, g, state):
        n, g = self._decayed(group, p, g, state)
        exp_avg, exp_avg_sq = _moments(group, g, state)
        factor = n[0] / (exp_avg_sq.sqrt() + group["eps"]) + n[1]
        p.add_(exp_avg * n[2] * factor)


class Adagrad(PerParameter):
    """Adagrad (Duchi et al. 2011): s += g^2, p -= lr / (1 + (t - 1) * lr_decay) * g /
    (sqrt(s) + eps).

    Args: params, lr (1e-2), lr_decay (0), weight_decay (0), initial_accumulator_value (0),
    eps (1e-10), foreach, maximize, differentiable, fused: PyTorch's.
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-2, lr_decay: float = 0.0,
                 weight_decay: float = 0.0, initial_accumulator_value: float = 0.0,
                 eps: float = 1e-10, foreach: bool | None = None, *,
                 maximize: bool = False, differentiable: bool = False,
                 fused: bool | None = None) -> None:
        _check("lr_decay", lr_decay)
        _check("weight_decay", weight_decay)
        _check("initial_accumulator_value", initial_accumulator_value)
        _check("epsilon", eps)
        super().__init__(params, dict(lr=lr, lr_decay=lr_decay, weight_decay=weight_decay,
                                      initial_accumulator_value=initial_accumulator_value,
                                      eps=eps), foreach=foreach, maximize=maximize,
                         differentiable=differentiable, fused=fused)

    def _init_state(self, group, p, state):
        state["sum"] = self._new_state(full_like(p, group["initial_accumulator_value"]))

    def _numbers(self, group, state):
        state["step"] += 1
        return (-group["lr"] / (1.0 + (state["step"] - 1) * group["lr_decay"]),)

    def _update(self, group, p, g, state):
        if self._fused(group, p, g, state, state["sum"], 1.0, 1.0):     # v = v + g^2
            return
        (neg_clr,), g = self._decayed(group, p, g, state)
        state["sum"].add_(g * g)
        p.add_(g / (state["sum"].sqrt() + group["eps"]) * neg_clr)


class Adadelta(PerParameter):
    """Adadelta (Zeiler 2012): running averages of g^2 and of the squared updates.

    Args: params, lr (1.0), rho (0.9), eps (1e-6), weight_decay (0), foreach, capturable,
    maximize, differentiable: PyTorch's.
    """

    def __init__(self, params: Iterable[Any], lr: float = 1.0, rho: float = 0.9,
                 eps: float = 1e-6, weight_decay: float = 0.0,
                 foreach: bool | None = None, *, capturable: bool = False,
                 maximize: bool = False, differentiable: bool = False) -> None:
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        _check("epsilon", eps)
        _check("weight_decay", weight_decay)
        super().__init__(params, dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay),
                         foreach=foreach, capturable=capturable, maximize=maximize,
                         differentiable=differentiable)

    def _init_state(self, group, p, state):
        state["square_avg"] = self._new_state(zeros_like(p))
        state["acc_delta"] = self._new_state(zeros_like(p))

    def _update(self, group, p, g, state):
        rho, eps = group["rho"], group["eps"]
        (neg_lr,), g = self._decayed(group, p, g, state)
        square_avg, acc_delta = state["square_avg"], state["acc_delta"]
        square_avg.mul_(rho).add_(g * g * (1.0 - rho))
        delta = (acc_delta + eps).sqrt() / (square_avg + eps).sqrt() * g
        acc_delta.mul_(rho).add_(delta * delta * (1.0 - rho))
        p.add_(delta * neg_lr)


class RMSprop(PerParameter):
    """RMSprop (Hinton): v = alpha * v + (1 - alpha) * g^2, p -= lr * g / (sqrt(v) + eps),
    with PyTorch's momentum and centered variants.

    Args: params, lr (1e-2), alpha (0.99), eps (1e-8), weight_decay (0), momentum (0),
    centered (False), capturable, foreach, maximize, differentiable: PyTorch's.
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-2, alpha: float = 0.99,
                 eps: float = 1e-8, weight_decay: float = 0.0, momentum: float = 0.0,
                 centered: bool = False, capturable: bool = False,
                 foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False) -> None:
        _check("epsilon", eps)
        _check("momentum", momentum)
        _check("weight_decay", weight_decay)
        _check("alpha", alpha)
        super().__init__(params, dict(lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay,
                                      momentum=momentum, centered=centered),
                         capturable=capturable, foreach=foreach, maximize=maximize,
                         differentiable=differentiable)

    def _init_state(self, group, p, state):
        state["square_avg"] = self._new_state(zeros_like(p))
        if group["momentum"] > 0:
            state["momentum_buffer"] = self._new_state(zeros_like(p))
        if group["centered"]:
            state["grad_avg"] = self._new_state(zeros_like(p))

    def _update(self, group, p, g, state):
        alpha, eps = group["alpha"], group["eps"]
        if not group["centered"] and group["momentum"] <= 0 and self._fused(
                group, p, g, state, state["square_avg"], alpha, 1.0 - alpha):
            return
        (neg_lr,), g = self._decayed(group, p, g, state)
        square_avg = state["square_avg"]
        square_avg.mul_(alpha).add_(g * g * (1.0 - alpha))
        if group["centered"]:
            grad_avg = state["grad_avg"]
            grad_avg.add_((g - grad_avg) * (1.0 - alpha))
            avg = (square_avg - grad_avg * grad_avg).sqrt() + eps
        else:
            avg = square_avg.sqrt() + eps
        if group["momentum"] > 0:
            buf = state["momentum_buffer"]
            buf.mul_(group["momentum"]).add_(g / avg)
            p.add_(buf * neg_lr)
        else:
            p.add_(g / avg * neg_lr)


class Rprop(PerParameter):
    """Resilient backpropagation (Riedmiller & Braun 1993): each weight's own step size
    grows by etas[1] while its gradient keeps its sign and shrinks by etas[0] when it flips
    (that step then skipped), clamped to step_sizes; p -= sign(g) * step_size.

    Args: params, lr (1e-2: the first step size), etas ((0.5, 1.2)), step_sizes
    ((1e-6, 50)), capturable, foreach, maximize, differentiable: PyTorch's.
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-2,
                 etas: tuple[float, float] = (0.5, 1.2),
                 step_sizes: tuple[float, float] = (1e-6, 50), *,
                 capturable: bool = False, foreach: bool | None = None,
                 maximize: bool = False, differentiable: bool = False) -> None:
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        super().__init__(params, dict(lr=lr, etas=tuple(etas), step_sizes=tuple(step_sizes)),
                         capturable=capturable, foreach=foreach, maximize=maximize,
                         differentiable=differentiable)

    def _init_state(self, group, p, state):
        state["prev"] = self._new_state(zeros_like(p))
        state["step_size"] = self._new_state(full_like(p, group["lr"]))

    def _update(self, group, p, g, state):
        (eta_minus, eta_plus), (low, high) = group["etas"], group["step_sizes"]
        self._step_numbers(group, p, state)            # (counts the step)
        prev, step_size = state["prev"], state["step_size"]
        agree = g * prev
        factor = api.where(agree > 0, full_like(p, eta_plus),
                           api.where(agree < 0, full_like(p, eta_minus), full_like(p, 1.0)))
        step_size.copy_(api.clamp(step_size * factor, low, high))
        g = api.where(agree < 0, zeros_like(g), g)
        p.add_(-(_sign(g) * step_size))
        prev.copy_(g)


class ASGD(PerParameter):
    """Averaged SGD (Polyak & Juditsky 1992) with PyTorch's decaying step size
    eta_t = lr / (1 + lambd * lr * t)^alpha; `ax` holds the running average of the weights.

    Args: params, lr (1e-2), lambd (1e-4), alpha (0.75), t0 (1e6), weight_decay (0),
    foreach, maximize, differentiable, capturable: PyTorch's.
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-2, lambd: float = 1e-4,
                 alpha: float = 0.75, t0: float = 1e6, weight_decay: float = 0.0,
                 foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False, capturable: bool = False) -> None:
        _check("weight_decay", weight_decay)
        super().__init__(params, dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0,
                                      weight_decay=weight_decay), foreach=foreach,
                         maximize=maximize, differentiable=differentiable,
                         capturable=capturable)

    _number_state = {"step": int, "eta": float, "mu": float}

    def _init_state(self, group, p, state):
        state["eta"] = float(np.float32(group["lr"]))
        state["mu"] = 1.0
        state["ax"] = self._new_state(zeros_like(p))

    def _numbers(self, group, state):
        """(1 - lambd * eta, -eta, mu) of this step; then eta and mu for the next, rounded
        to float32 as PyTorch's state tensors hold them."""
        state["step"] += 1
        eta, mu, t = state["eta"], state["mu"], state["step"]
        lr, lambd = group["lr"], group["lambd"]
        state["eta"] = float(np.float32(lr / ((1 + lambd * lr * t) ** group["alpha"])))
        state["mu"] = float(np.float32(1.0 / max(1.0, t - group["t0"])))
        return (1.0 - lambd * eta, -eta, mu)

    def _update(self, group, p, g, state):
        mu = state["mu"]
        n, g = self._decayed(group, p, g, state)
        p.mul_(n[0])
        p.add_(g * n[1])
        ax = state["ax"]
        if mu != 1:
            ax.add_((p - ax) * n[2])
        else:
            ax.copy_(p)
