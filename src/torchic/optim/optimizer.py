"""Optimizer: parameter groups, per-parameter state, zero_grad, state_dict."""

import copy
from collections.abc import Callable, Iterable
from typing import Any

from ..api.creation_ops import tensor
from ..autograd import enable_grad, zero_grads
from ..dtypes import float32
from ..scopes import keep
from ..tensor import Tensor


class _Required:
    def __repr__(self):
        return "<required parameter>"


required = _Required()


def _number_lr(group: dict[str, Any]) -> dict[str, Any]:
    """A one-element tensor lr (PyTorch's "Tensor lr") as the Python number it holds: the
    updates read lr on the host (host_values), so a group keeps a number."""
    lr = group.get("lr")
    if isinstance(lr, Tensor):
        if lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        group["lr"] = float(lr.item())
    return group


def checked_lr(lr: Any) -> Any:
    """`lr` as the optimizers hold it: a number >= 0 (a one-element tensor gives its value),
    or ValueError naming it."""
    lr = _number_lr({"lr": lr})["lr"]
    if lr is required:
        return lr
    if isinstance(lr, bool) or not isinstance(lr, (int, float)) or lr < 0:
        raise ValueError(f"Invalid learning rate: {lr!r}")
    return lr


class Optimizer:
    """Base class: holds ``param_groups`` (dicts with "params" and hyper-parameters) and
    ``state`` (per-parameter dicts such as momentum buffers). Subclasses define step()."""

    def __init__(self, params: Iterable[Any], defaults: dict[str, Any]) -> None:
        self.defaults = _number_lr(defaults)
        self.state = {}        # param -> dict (Tensor hashes by identity)
        self.param_groups = []
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of "
                            "Tensors or dicts, but got a Tensor")
        if isinstance(params, (set, frozenset)):
            raise TypeError("optimizer parameters need to be organized in ordered collections, "
                            "but the ordering of tensors in sets will change between runs; "
                            "use a list instead")
        groups = list(params)
        if not groups:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)

    def add_param_group(self, group: dict[str, Any]) -> None:
        """Add a parameter group: a dict with `"params"` (tensors) and any hyperparameters
        that differ from the optimizer's defaults (e.g. a larger `lr` for a new head)."""
        if not isinstance(group, dict):
            raise TypeError(f"param group must be a dict, got {type(group).__name__}")
        params = group["params"]
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, "
                            "but the ordering of tensors in sets will change between runs; "
                            "use a list instead")
        else:
            params = list(params)
        for p in params:
            if not isinstance(p, Tensor):
                raise TypeError(f"optimizer can only optimize Tensors, but one of the params "
                                f"is {type(p).__name__}")
            if not p.is_leaf:
                raise ValueError("can't optimize a non-leaf Tensor")
            if not p.is_floating_point():
                raise TypeError(f"optimizer can only optimize floating point tensors, got "
                                f"{p.dtype}")
        group = _number_lr(dict(group))
        group["params"] = params
        for name, default in self.defaults.items():
            if default is required and name not in group:
                raise ValueError(f"parameter group didn't specify a value of required "
                                 f"optimization parameter {name}")
            group.setdefault(name, default)
        self._check_hyper(group)
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        if len({id(p) for p in params}) != len(params) or any(id(p) in seen for p in params):
            raise ValueError("some parameters appear more than once (within a group or in "
                             "more than one parameter group)")
        self.param_groups.append(group)

    def _check_hyper(self, group):
        lr = group.get("lr")
        if not isinstance(lr, (int, float)) or isinstance(lr, bool) or lr < 0:
            raise ValueError(f"Invalid learning rate: {lr!r}")

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Drop every parameter's .grad (or zero it in place with set_to_none=False)."""
        zero_grads((p for group in self.param_groups for p in group["params"]), set_to_none)

    @staticmethod
    def _new_state(t):
        """Register `t` as per-parameter state (a momentum buffer, a moment estimate).

        The optimizer owns its state as a module owns its parameters: a state tensor
        created during a step inside ``track_tensors()`` must outlive that scope, or
        the next step would update a disposed tensor.
        """
        return keep(t)

    @staticmethod
    def _gradients(group):
        """(parameter, gradient to descend) of each parameter of the group that has a
        .grad; with maximize=True the gradient is negated (PyTorch's maximize)."""
        for p in group["params"]:
            g = p.grad
            if g is not None:
                yield p, (-g if group.get("maximize") else g)

    def _closure_loss(self, closure):
        if closure is None:
            return None
        with enable_grad():
            return closure()

    # -- state_dict ------------------------------------------------------------------
    # Per-parameter numbers torchic holds as Python numbers (the host computes each step's
    # scalars from them, host_values re-reading them at every compiled replay) where PyTorch
    # holds 0-d float32 tensors: state_dict() gives PyTorch's tensors, load_state_dict()
    # takes either form back to the number (name -> int or float).
    _number_state: dict[str, type] = {"step": int}
    # whether every tensor of a parameter's state has the parameter's shape (checked on load)
    _state_like_param = True

    def state_dict(self) -> dict[str, Any]:
        """{"state": {index: {name: value}}, "param_groups": [{..., "params": [index]}]},
        PyTorch's layout: parameters numbered in order across groups, counters such as
        "step" as 0-d float32 tensors (torch.save / torch.load and PyTorch's own
        optimizers read it). Tensor values are the live state tensors (clone them to keep
        a snapshot)."""
        index, groups = {}, []
        for group in self.param_groups:
            g = {k: copy.deepcopy(v) for k, v in group.items() if k != "params"}
            g["params"] = []
            for p in group["params"]:
                index.setdefault(id(p), len(index))
                g["params"].append(index[id(p)])
            groups.append(g)
        state = {}
        for group in self.param_groups:
            for p in group["params"]:
                if p in self.state:
                    entry = dict(self.state[p])
                    for k in self._number_state:
                        if k in entry and not isinstance(entry[k], Tensor):
                            entry[k] = tensor(float(entry[k]), dtype=float32)
                    state[index[id(p)]] = entry
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore the hyperparameters and per-parameter state from a `state_dict()`, this
        optimizer's or PyTorch's (e.g. read by torchic.load from a torch.save file): the
        parameters are matched by their position in the groups, state tensors are copied
        (floating ones cast to their parameter's dtype, as PyTorch does) and the counters
        ("step", ...) become the numbers they hold."""
        groups = state_dict["param_groups"]
        if len(groups) != len(self.param_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        for mine, theirs in zip(self.param_groups, groups):
            if len(mine["params"]) != len(theirs["params"]):
                raise ValueError("loaded state dict contains a parameter group that doesn't "
                                 "match the size of optimizer's group")
        by_index = {}
        for mine, theirs in zip(self.param_groups, groups):
            for p, i in zip(mine["params"], theirs["params"]):
                by_index[i] = p
            for k, v in theirs.items():
                if k != "params":
                    mine[k] = copy.deepcopy(v)
            _number_lr(mine)
        self.state = {}
        for i, entry in state_dict["state"].items():
            p = by_index[int(i)]
            new = {}
            for k, v in entry.items():
                if k in self._number_state:
                    if isinstance(v, Tensor):
                        if v.numel() != 1:
                            raise ValueError(f"state {k!r} of parameter {i} must hold one "
                                             f"number, got shape {list(v.shape)}")
                        v = v.item()
                    if v is not None:
                        v = self._number_state[k](v)
                elif (self._state_like_param and isinstance(v, Tensor)
                        and v.shape != p.shape):
                    raise ValueError(f"state {k!r} of parameter {i} has shape "
                                     f"{list(v.shape)}, the parameter has {list(p.shape)}")
                else:
                    v = self._copied_state(p, v)
                new[k] = v
            self.state[p] = new

    def _copied_state(self, p, v):
        """A loaded state value as this optimizer's own: tensors copied (floating ones in
        p's dtype), lists and tuples of them copied element by element."""
        if isinstance(v, Tensor):
            v = v.detach()
            if v.is_floating_point() and v.dtype != p.dtype:
                v = v.to(p.dtype)
            return self._new_state(v.clone())
        if isinstance(v, (list, tuple)):
            return type(v)(self._copied_state(p, x) for x in v)
        return v

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Update every parameter from its `.grad` (one optimization step).

        Args:
            closure (callable, optional): re-evaluates the model and returns the loss;
                it is called (with grad enabled) before the update.

        Returns:
            The closure's loss, or None without a closure.
        """
        raise NotImplementedError

    def __repr__(self):
        lines = [type(self).__name__ + " ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            for k in sorted(group):
                if k != "params":
                    lines.append(f"    {k}: {group[k]}")
        lines.append(")")
        return "\n".join(lines)
