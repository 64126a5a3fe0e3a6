"""Stochastic weight averaging (Izmailov et al. 2018) and EMA models, as PyTorch's
``torch.optim.swa_utils``: AveragedModel, SWALR, update_bn, get_ema_avg_fn,
get_ema_multi_avg_fn."""

import copy
import itertools
import math
from collections.abc import Callable, Iterable
from typing import Any

from .. import nn
from ..autograd import no_grad
from ..creation import tensor
from ..tensor import Tensor
from .lr_scheduler import LRScheduler
from .optimizer import Optimizer


def get_ema_avg_fn(decay: float = 0.999) -> Callable[[Tensor, Tensor, Any], Tensor]:
    """The exponential-moving-average rule: decay * averaged + (1 - decay) * current."""
    def ema_update(ema_param: Tensor, current_param: Tensor, num_averaged: Any) -> Tensor:
        return decay * ema_param + (1 - decay) * current_param
    return ema_update


def get_ema_multi_avg_fn(decay: float = 0.999) -> Callable[..., None]:
    """The EMA rule over lists of tensors, in place."""
    def ema_update(ema_params: list[Tensor], current_params: list[Tensor],
                   num_averaged: Any) -> None:
        for e, c in zip(ema_params, current_params):
            e.copy_(e * decay + c * (1 - decay))
    return ema_update


def _swa_average(averaged: Tensor, current: Tensor, num_averaged: Any) -> Tensor:
    return averaged + (current - averaged) / (num_averaged + 1)


class AveragedModel(nn.Module):
    """A copy of `model` whose parameters (and buffers, with use_buffers=True) are the
    running average of the model's at each `update_parameters(model)` call: the equal-weight
    SWA average by default, or `avg_fn` / `multi_avg_fn` (e.g. get_ema_multi_avg_fn(0.999)).

    Example:
        >>> import torchic as torch
        >>> model = torch.nn.Linear(2, 1)
        >>> swa = torch.optim.swa_utils.AveragedModel(model)
        >>> swa.update_parameters(model)
        >>> int(swa.n_averaged)
        1
    """

    def __init__(self, model: nn.Module, device: Any = None,
                 avg_fn: Callable[[Tensor, Tensor, Any], Tensor] | None = None,
                 multi_avg_fn: Callable[..., None] | None = None,
                 use_buffers: bool = False) -> None:
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = copy.deepcopy(model)
        self.register_buffer("n_averaged", tensor(0))
        self.avg_fn, self.multi_avg_fn, self.use_buffers = avg_fn, multi_avg_fn, use_buffers

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self.module(*args, **kwargs)

    def _tensors(self, model: nn.Module) -> list[Tensor]:
        if self.use_buffers:
            return list(itertools.chain(model.parameters(), model.buffers()))
        return list(model.parameters())

    def update_parameters(self, model: nn.Module) -> None:
        """Fold `model`'s current parameters into the average."""
        mine, theirs = self._tensors(self.module), self._tensors(model)
        n = int(self.n_averaged.item())
        with no_grad():
            for a, c in zip(mine, theirs):
                c = c.detach().to(a.dtype)
                if n == 0:
                    a.copy_(c)
                elif self.multi_avg_fn is None:
                    a.copy_((self.avg_fn or _swa_average)(a, c, self.n_averaged))
            if n > 0 and self.multi_avg_fn is not None:
                self.multi_avg_fn(mine, [c.detach().to(a.dtype) for a, c in
                                         zip(mine, theirs)], self.n_averaged)
            if not self.use_buffers:
                for a, c in zip(self.module.buffers(), model.buffers()):
                    a.copy_(c.detach().to(a.dtype))
        self.n_averaged.copy_(self.n_averaged + 1)


def _is_batch_norm(module: nn.Module) -> bool:
    """Whether `module` is a batch norm (BatchNorm1d/2d/3d, SyncBatchNorm: PyTorch's
    _BatchNorm family), by its classes' names (torchic.nn has no shared base for them)."""
    return any(c.__name__ == "_BatchNorm" or c.__name__.startswith(("BatchNorm",
                                                                     "SyncBatchNorm"))
               for c in type(module).__mro__)


def update_bn(loader: Iterable[Any], model: nn.Module, device: Any = None) -> None:
    """Recompute the batch-norm running statistics of `model` with one pass over `loader`
    (its first element when a batch is a list or tuple), as a cumulative average."""
    momenta = {}
    for module in model.modules():
        if _is_batch_norm(module):
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None
    with no_grad():
        for batch in loader:
            model(batch[0] if isinstance(batch, (list, tuple)) else batch)
    for module, momentum in momenta.items():
        module.momentum = momentum
    model.train(was_training)


class SWALR(LRScheduler):
    """Anneal each group's rate to `swa_lr` over `anneal_epochs` (cos or linear), then hold
    it (PyTorch's SWALR)."""

    def __init__(self, optimizer: Optimizer, swa_lr: float | list[float],
                 anneal_epochs: int = 10, anneal_strategy: str = "cos",
                 last_epoch: int = -1) -> None:
        lrs = swa_lr if isinstance(swa_lr, (list, tuple)) else [swa_lr] * len(
            optimizer.param_groups)
        if len(lrs) != len(optimizer.param_groups):
            raise ValueError(f"swa_lr must have the same length as optimizer.param_groups: "
                             f"swa_lr has {len(lrs)}, optimizer.param_groups has "
                             f"{len(optimizer.param_groups)}")
        for lr, group in zip(lrs, optimizer.param_groups):
            group["swa_lr"] = lr
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must by one of 'cos' or 'linear', instead got "
                             f"{anneal_strategy}")
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got "
                             f"{anneal_epochs}")
        self.anneal_strategy, self.anneal_epochs = anneal_strategy, anneal_epochs
        super().__init__(optimizer, last_epoch)

    def _anneal(self, t: float) -> float:
        return (1 - math.cos(math.pi * t)) / 2 if self.anneal_strategy == "cos" else t

    def get_lr(self) -> list[float]:
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_alpha = self._anneal(max(0, min(1, (step - 1) / max(1, self.anneal_epochs))))
        prev = [group["swa_lr"] if prev_alpha == 1 else
                (group["lr"] - prev_alpha * group["swa_lr"]) / (1 - prev_alpha)
                for group in self.optimizer.param_groups]
        alpha = self._anneal(max(0, min(1, step / max(1, self.anneal_epochs))))
        return [group["swa_lr"] * alpha + lr * (1 - alpha)
                for group, lr in zip(self.optimizer.param_groups, prev)]


__all__ = ["AveragedModel", "SWALR", "update_bn", "get_ema_avg_fn", "get_ema_multi_avg_fn"]
