"""Module: the base class of layers and models, plus the containers.

A Module registers what is assigned to its attributes:

* a ``Parameter`` becomes a parameter (``parameters()``, ``state_dict()``),
* a ``Module`` becomes a child (``children()``, names joined with dots),
* ``register_buffer(name, tensor)`` declares non-trainable state that is still
  saved (BatchNorm's running statistics).

Registered objects also live in the instance ``__dict__``, so reading
``self.weight`` in ``forward`` is an ordinary attribute lookup (no
``__getattr__`` indirection on the hot path). ``__setattr__`` and
``__delattr__`` keep the registries and ``__dict__`` in step.

``state_dict()`` maps dotted names to tensors sharing the module's storage;
``load_state_dict()`` checks every key and shape first and then copies the
values in place (so optimizers that hold the parameters keep working), or
changes nothing and raises an error that lists every problem.
"""

from __future__ import annotations

from collections import OrderedDict, namedtuple
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, ParamSpec, Protocol, TypeVar

import numpy as np

from ..autograd import no_grad, zero_grads
from ..api import parse_to as _parse_to
from ..devices import check_device as _check_device
from ..creation import tensor as make_tensor
from ..dtypes import dtype_code, dtype_of
from ..tensor import Tensor
from .hooks import HookMixin, call_with_hooks
from .parameter import Parameter

_IncompatibleKeys = namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])


def _registries(module, name):
    try:
        return module.__dict__["_parameters"], module.__dict__["_buffers"], \
            module.__dict__["_modules"]
    except KeyError:
        raise AttributeError(
            f"cannot assign {name!r} before {type(module).__name__}.__init__ has called "
            f"super().__init__()") from None


def _place(module, name, value, registry):
    """`value` under `name` in the module's `registry` ("_parameters", "_buffers" or
    "_modules"), out of the other two and of the non-persistent buffers."""
    for reg_name, reg in zip(("_parameters", "_buffers", "_modules"),
                             _registries(module, name)):
        if reg_name == registry:
            reg[name] = value
        else:
            reg.pop(name, None)
    module._non_persistent.discard(name)


_FLOAT_CODES = ("f16", "bf16", "f32", "f64")


class _NoParameters:
    """What Module.to checks its device against when the module holds no tensor."""
    device = "cpu"


_P = ParamSpec("_P")
_R = TypeVar("_R", covariant=True)


class _Forward(Protocol[_P, _R]):
    """A module as a type checker calls it: through its forward (Module.__call__)."""

    @property
    def forward(self) -> Callable[_P, _R]: ...


class Module(HookMixin):
    """Base class of every layer and model: subclass it and define ``forward``.

    Modules, Parameters and buffers assigned as attributes in `__init__` (after
    `super().__init__()`) are registered: `parameters()`, `state_dict()`, `train()` /
    `eval()`, `zero_grad()` and `to()` reach them, recursively. Calling the module runs
    `forward` (with its hooks).

    Shape:
        - Whatever `forward` takes and returns.

    Example:
        >>> class TwoLayer(nn.Module):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.fc1 = nn.Linear(4, 8)
        ...         self.fc2 = nn.Linear(8, 2)
        ...     def forward(self, x):
        ...         return self.fc2(torch.relu(self.fc1(x)))
        >>> model = TwoLayer()
        >>> model(torch.ones(3, 4)).shape
        torchic.Size([3, 2])
        >>> [name for name, _ in model.named_parameters()]
        ['fc1.weight', 'fc1.bias', 'fc2.weight', 'fc2.bias']
    """

    training: bool
    _parameters: OrderedDict[str, Parameter | None]
    _buffers: OrderedDict[str, Tensor | None]
    _non_persistent: set[str]
    _modules: OrderedDict[str, Module | None]

    def __init__(self) -> None:
        d = self.__dict__
        d["_parameters"] = OrderedDict()
        d["_buffers"] = OrderedDict()
        d["_non_persistent"] = set()
        d["_modules"] = OrderedDict()
        d["training"] = True

    # -- registration ----------------------------------------------------------------
    def __setattr__(self, name: str, value: Any) -> None:
        if isinstance(value, Parameter):
            _place(self, name, value, "_parameters")
        elif isinstance(value, Module):
            _place(self, name, value, "_modules")
        else:
            d = self.__dict__
            if name in d.get("_parameters", ()):
                if value is not None:
                    raise TypeError(f"cannot assign {type(value).__name__} as parameter "
                                    f"{name!r} (torchic.nn.Parameter or None expected)")
                d["_parameters"][name] = None
            elif name in d.get("_modules", ()):
                if value is not None:
                    raise TypeError(f"cannot assign {type(value).__name__} as child module "
                                    f"{name!r} (torchic.nn.Module or None expected)")
                d["_modules"][name] = None
            elif name in d.get("_buffers", ()):
                if value is not None and not isinstance(value, Tensor):
                    raise TypeError(f"cannot assign {type(value).__name__} as buffer {name!r} "
                                    f"(torchic.Tensor or None expected)")
                d["_buffers"][name] = value
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        d = self.__dict__
        for reg in ("_parameters", "_buffers", "_modules"):
            d.get(reg, {}).pop(name, None)
        d.get("_non_persistent", set()).discard(name)
        object.__delattr__(self, name)

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Add a parameter (or None, a declared-but-absent parameter such as a missing bias)."""
        _check_name(self, name)
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign {type(param).__name__} as parameter {name!r} "
                            f"(torchic.nn.Parameter or None expected)")
        _place(self, name, param, "_parameters")
        object.__setattr__(self, name, param)

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True
                        ) -> None:
        """Add non-trainable state; persistent buffers are part of state_dict()."""
        _check_name(self, name)
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign {type(tensor).__name__} as buffer {name!r} "
                            f"(torchic.Tensor or None expected)")
        _place(self, name, tensor, "_buffers")
        if not persistent:
            self._non_persistent.add(name)
        object.__setattr__(self, name, tensor)

    def add_module(self, name: str, module: Module | None) -> None:
        """Register `module` as a child named `name` (as `setattr(self, name, module)`)."""
        _check_name(self, name)
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a torchic.nn.Module")
        _place(self, name, module, "_modules")
        object.__setattr__(self, name, module)

    register_module = add_module

    def get_submodule(self, target: str) -> Module:
        """The descendant at the dotted path `target` (`""` is this module itself).

        Example:
            >>> nn.Sequential(nn.Linear(2, 2), nn.ReLU()).get_submodule("1")
            ReLU()
        """
        mod = self
        if target == "":
            return mod
        for part in target.split("."):
            child = mod._modules.get(part)
            if child is None:
                raise AttributeError(f"{type(mod).__name__} has no submodule {part!r} "
                                     f"(looking up {target!r})")
            mod = child
        return mod

    def get_parameter(self, target: str) -> Parameter:
        """The parameter at the dotted path `target` (`"0.weight"`); AttributeError when
        there is none."""
        mod_path, _, name = target.rpartition(".")
        mod = self.get_submodule(mod_path)
        if name not in mod._parameters or mod._parameters[name] is None:
            raise AttributeError(f"{mod._get_name()} has no parameter `{name}`")
        return mod._parameters[name]

    def get_buffer(self, target: str) -> Tensor:
        """The buffer at the dotted path `target` (`"bn.running_mean"`); AttributeError
        when there is none."""
        mod_path, _, name = target.rpartition(".")
        mod = self.get_submodule(mod_path)
        if name not in mod._buffers or mod._buffers[name] is None:
            raise AttributeError(f"{mod._get_name()} has no buffer `{name}`")
        return mod._buffers[name]

    # -- calling ------------------------------------------------------------------------
    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """The computation the module performs: define it in every subclass. Call the
        module (`model(x)`), not `forward`, so that its hooks run."""
        raise NotImplementedError(f"{type(self).__name__} must define forward()")

    if TYPE_CHECKING:   # model(x) takes and returns what model.forward does (mypy, pyright)
        @property
        def __call__(self: _Forward[_P, _R]) -> Callable[_P, _R]: ...
    else:
        def __call__(self, *args, **kwargs):
            if self.__dict__.get("_hooks") is None:
                return self.forward(*args, **kwargs)
            return call_with_hooks(self, args, kwargs)

    # -- traversal -------------------------------------------------------------------
    def named_modules(self, memo: set[int] | None = None, prefix: str = "",
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Module]]:
        """`(dotted name, module)` for this module (name `prefix`) and every descendant,
        depth first; a module reached twice is given once unless `remove_duplicate=False`."""
        if memo is None:
            memo = set()
        if remove_duplicate:
            if id(self) in memo:
                return
            memo.add(id(self))
        yield prefix, self
        for name, child in self._modules.items():
            if child is None:
                continue
            yield from child.named_modules(memo, prefix + "." + name if prefix else name,
                                           remove_duplicate)

    def modules(self) -> Iterator[Module]:
        """This module and every descendant (`named_modules` without the names)."""
        for _, m in self.named_modules():
            yield m

    def named_children(self) -> Iterator[tuple[str, Module]]:
        """`(name, module)` for each direct child, in registration order."""
        seen = set()
        for name, child in self._modules.items():
            if child is not None and id(child) not in seen:
                seen.add(id(child))
                yield name, child

    def children(self) -> Iterator[Module]:
        """The direct children, in registration order."""
        for _, child in self.named_children():
            yield child

    def _named_members(self, registry, prefix, recurse, remove_duplicate=True):
        seen = set()
        mods = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) \
            if recurse else [(prefix, self)]
        for mod_prefix, mod in mods:
            for name, value in getattr(mod, registry).items():
                if value is None or (remove_duplicate and id(value) in seen):
                    continue
                seen.add(id(value))
                yield (mod_prefix + "." + name if mod_prefix else name), value

    def named_parameters(self, prefix: str = "", recurse: bool = True,
                         remove_duplicate: bool = True) -> Iterator[tuple[str, Parameter]]:
        """(dotted name, Parameter) pairs; a parameter shared by two modules appears once."""
        yield from self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        """The parameters of this module and (with `recurse`) its descendants, each once:
        what an optimizer takes (`torchic.optim.SGD(model.parameters(), lr=0.1)`)."""
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix: str = "", recurse: bool = True,
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Tensor]]:
        """`(dotted name, buffer)` for the registered buffers (`register_buffer`)."""
        yield from self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        """The registered buffers (non-trainable state such as running statistics)."""
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def apply(self, fn: Callable[[Module], Any]) -> Module:
        """Call fn on every submodule (children first) and then on self; returns self."""
        for child in self.children():
            child.apply(fn)
        fn(self)
        return self

    # -- modes and gradients ---------------------------------------------------------
    def train(self, mode: bool = True) -> Module:
        """Set training mode (`mode=False`: evaluation) on this module and its descendants;
        Dropout and BatchNorm behave differently in each. Returns the module."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be a bool")
        for m in self.modules():
            m.__dict__["training"] = mode
        return self

    def eval(self) -> Module:
        """Set evaluation mode (`train(False)`); returns the module."""
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        """Set `requires_grad` on every parameter (False freezes them); returns the module."""
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Drop (or zero, with set_to_none=False) the .grad of every parameter."""
        zero_grads(self.parameters(), set_to_none)

    # -- pickling (torchic.save(model) / torchic.load(..., weights_only=False)) ------------
    def __setstate__(self, state: dict[str, Any]) -> None:
        """Rebuild from a pickled __dict__: torchic's own, or a torch.nn module's (PyTorch's
        keys: `_parameters` / `_buffers` / `_modules` / `_non_persistent_buffers_set` and its
        hook tables), each parameter, buffer and child also set as an attribute."""
        Module.__init__(self)
        d = self.__dict__
        for key, value in state.items():
            if key == "_non_persistent_buffers_set":
                d["_non_persistent"] = set(value)
            elif key.startswith("_") and key.endswith(("hooks", "hook", "hooks_with_kwargs",
                                                       "hooks_always_called")) \
                    and key not in d:
                continue          # PyTorch's hook tables (empty in a saved model)
            else:
                d[key] = value
        for registry in ("_parameters", "_buffers", "_modules"):
            for name, value in d[registry].items():
                object.__setattr__(self, name, value)

    def to(self, *args: Any, **kwargs: Any) -> Module:
        """PyTorch's model.to(device) / .to(dtype) / .to(device, dtype): returns self.

        A torchic runtime has one device (chosen by torchic.init), so a device moves
        nothing (an unavailable one, "cuda", raises RuntimeError as Tensor.to does). A
        floating dtype converts every floating parameter and buffer in place (`_cast`);
        an integer or bool dtype is refused, as PyTorch refuses it (TypeError).
        """
        probe = next(iter(self.parameters()), None)
        if probe is None:
            probe = next(iter(self.buffers()), _NoParameters)
        code, _ = _parse_to(probe, args, kwargs)
        if code is None:
            return self
        if code not in _FLOAT_CODES:
            raise TypeError(f"nn.Module.to only accepts floating point or complex dtypes, but "
                            f"got desired dtype={dtype_of(code)}")
        return self._cast(code)

    def double(self) -> Module:
        """Every floating parameter and buffer as float64 (in place); returns the module."""
        return self._cast("f64")

    def float(self) -> Module:
        """Every floating parameter and buffer as float32 (in place); returns the module."""
        return self._cast("f32")

    def half(self) -> Module:
        """Every floating parameter and buffer as float16 (in place); returns the module."""
        return self._cast("f16")

    def bfloat16(self) -> Module:
        """Every floating parameter and buffer as bfloat16 (in place); returns the module."""
        return self._cast("bf16")

    def type(self, dst_type: Any) -> Module:
        """Every parameter and buffer as `dst_type` (PyTorch's Module.type); returns the
        module."""
        return self._cast(dtype_code(dst_type), floating_only=False)

    def _cast(self, code: str, floating_only: bool = True) -> Module:
        """PyTorch's Module._apply for a dtype: each (floating) parameter, its .grad and each
        (floating) buffer takes a converted copy of its values as its `.data`, so the
        Parameter objects stay the ones optimizers and hooks hold."""
        with no_grad():
            for t in list(self.parameters()) + list(self.buffers()):
                if floating_only and not t.is_floating_point():
                    continue
                if t._dtype != code:
                    t.data = t.detach().to(code)
                g = t.grad if isinstance(t, Parameter) else None
                if g is not None and g._dtype != code:
                    t.grad = g.to(code)
        return self

    def cpu(self) -> Module:
        """The module itself: torchic's tensors are all on the `cpu` device."""
        return self

    def cuda(self, device: Any = None) -> Module:
        """Refused, as Tensor.cuda(): torchic picks the GPU with the backend (torchic.init)."""
        _check_device("cuda", "Module.cuda(): ")      # always raises

    def num_parameters(self) -> int:
        """Total number of scalar parameters (PyTorch: sum(p.numel() for p in parameters()))."""
        return sum(p.numel() for p in self.parameters())

    # -- state -------------------------------------------------------------------------
    def state_dict(self, destination: dict[str, Any] | None = None, prefix: str = "",
                   keep_vars: bool = False) -> dict[str, Any]:
        """An OrderedDict of dotted names -> tensors (parameters and persistent buffers).

        The tensors share this module's storage (detached unless keep_vars=True):
        save them with torchic.save, or copy them with .clone().
        """
        out = OrderedDict() if destination is None else destination
        # every path to a shared submodule gets its keys, as in PyTorch
        for mod_prefix, mod in self.named_modules(prefix=prefix.rstrip("."),
                                                  remove_duplicate=False):
            pre = mod_prefix + "." if mod_prefix else ""
            for name, p in mod._parameters.items():
                if p is not None:
                    out[pre + name] = p if keep_vars else p.detach()
            for name, b in mod._buffers.items():
                if b is not None and name not in mod._non_persistent:
                    out[pre + name] = b if keep_vars else b.detach()
        return out

    def load_state_dict(self, state_dict: Mapping[str, Any], strict: bool = True,
                        assign: bool = False) -> Any:
        """Copy values into this module's parameters and buffers, in place.

        Every key and shape is checked before anything is copied; on error the
        module is unchanged and the message lists all missing, unexpected and
        mis-shaped keys. strict=False tolerates missing / unexpected keys (they
        are returned) but never a shape mismatch. Values may be torchic tensors or
        anything with ``__array__`` (NumPy arrays, a torch state_dict's tensors); they are
        cast to the target's dtype. Every value is read before
        any is written (a value may be one of this module's own tensors). assign=True
        makes the state dict's tensors the module's own (parameters wrapped as Parameters
        keeping the module's requires_grad) instead of copying into the present ones.
        Returns PyTorch's named tuple `(missing_keys, unexpected_keys)`.
        """
        if not hasattr(state_dict, "items"):
            raise TypeError(f"load_state_dict expects a dict of name -> tensor, got "
                            f"{type(state_dict).__name__}")
        own = self.state_dict(keep_vars=True)
        bad_types = [f"{k!r} ({type(v).__name__})" for k, v in state_dict.items()
                     if not isinstance(v, Tensor) and not hasattr(v, "__array__")]
        if bad_types:
            raise TypeError(f"load_state_dict for {type(self).__name__}: values must be tensors; "
                            f"got non-tensor values for {', '.join(bad_types)}")
        missing = [k for k in own if k not in state_dict]
        unexpected = [k for k in state_dict if k not in own]
        mismatched = []
        for k, target in own.items():
            if k in state_dict:
                v = state_dict[k]
                shape = tuple(v.shape) if hasattr(v, "shape") else np.shape(v)
                if shape != tuple(target.shape):
                    mismatched.append(f"size mismatch for {k}: copying a param with shape "
                                      f"{list(shape)} from checkpoint, the shape in current "
                                      f"model is {list(target.shape)}.")
        errors = []
        if strict and unexpected:
            errors.append("Unexpected key(s) in state_dict: " +
                          ", ".join(f'"{k}"' for k in unexpected) + ".")
        if strict and missing:
            errors.append("Missing key(s) in state_dict: " +
                          ", ".join(f'"{k}"' for k in missing) + ".")
        errors.extend(mismatched)
        staged = [] if mismatched else self._stage_values(own, state_dict, errors)
        if errors:
            raise RuntimeError(f"Error(s) in loading state_dict for {type(self).__name__}:\n\t"
                               + "\n\t".join(errors))
        if assign:
            self._assign_values(own, staged)
            return _IncompatibleKeys(missing, unexpected)
        with no_grad():
            for target, value in staged:
                target.copy_(value)            # same shape, usable, no alias: cannot fail
        return _IncompatibleKeys(missing, unexpected)

    def _assign_values(self, own, staged):
        """load_state_dict(assign=True): each staged value becomes the attribute."""
        names = {id(t): k for k, t in own.items()}
        for target, value in staged:
            path, _, name = names[id(target)].rpartition(".")
            mod = self.get_submodule(path)
            if name in mod._parameters:
                value = value if isinstance(value, Parameter) else \
                    Parameter(value.detach(), requires_grad=target.requires_grad)
                mod.register_parameter(name, value)
            else:
                mod._buffers[name] = value
                object.__setattr__(mod, name, value)

    @staticmethod
    def _stage_values(own, state_dict, errors):
        """[(target, value)] with every value a usable tensor ready to copy; what cannot
        be made one goes to `errors`. Nothing is copied before all of them are ready (a
        failing load leaves the module unchanged), and a value that shares storage with
        a target is cloned first, so that no copy can change a value not yet copied."""
        targets = {id(t._storage) for t in own.values()}
        staged = []
        for k, target in own.items():
            if k not in state_dict:
                continue
            value = state_dict[k]
            try:
                if not isinstance(value, Tensor):    # NumPy, torch, anything with __array__
                    value = make_tensor(value, dtype=target.dtype)
                value._storage.check_usable()
                if id(value._storage) in targets:
                    with no_grad():
                        value = value.clone()
            except (TypeError, ValueError, OverflowError, RuntimeError) as exc:
                errors.append(f'While copying the parameter named "{k}", whose dimensions in '
                              f'the model are {list(target.shape)}, an exception occurred: '
                              f'({exc}).')
                continue
            staged.append((target, value))
        return staged

    # -- printing ------------------------------------------------------------------------
    def extra_repr(self) -> str:
        """The text inside the parentheses of the module's repr (its settings, e.g.
        `in_features=2, out_features=3, bias=True`); override it in a subclass."""
        return ""

    def _get_name(self):
        return type(self).__name__

    def __repr__(self):
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = [f"({name}): " + repr(child).replace("\n", "\n  ")
                       for name, child in self._modules.items()]
        lines = extra_lines + child_lines
        if not lines:
            return self._get_name() + "()"
        if len(extra_lines) == 1 and not child_lines:     # PyTorch's one-liner
            return f"{self._get_name()}({extra_lines[0]})"
        return self._get_name() + "(\n  " + "\n  ".join(lines) + "\n)"



def _check_name(module, name):
    if not isinstance(name, str):
        raise TypeError(f"attribute name should be a string, got {type(name).__name__}")
    if not name or "." in name:
        raise KeyError(f"attribute name {name!r} must be non-empty and contain no '.'")
    if name in module.__dict__ and not any(
            name in module.__dict__.get(r, ()) for r in ("_parameters", "_buffers", "_modules")):
        raise KeyError(f"attribute {name!r} already exists")


# ---------------------------------------------------------------------------------------
# containers
# ---------------------------------------------------------------------------------------
class ModuleList(Module):
    """A list of modules whose parameters are registered (unlike a plain Python list).

    Args:
        modules: an iterable of modules to start with. Default: None (empty).

    Example:
        >>> layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])
        >>> len(layers), len(list(layers.parameters()))
        (3, 6)
    """

    def __init__(self, modules: Iterable[Module] | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Any]:
        return iter(self._modules.values())

    def __getitem__(self, idx: int | slice) -> Any:
        if isinstance(idx, slice):
            return type(self)._from_items(list(self._modules.items())[idx])
        return list(self._modules.values())[_index(idx, len(self))]

    @classmethod
    def _from_items(cls, items):
        return cls([m for _, m in items])

    def __setitem__(self, idx: int, module: Module) -> None:
        self.add_module(str(_index(idx, len(self))), module)

    def append(self, module: Module) -> ModuleList:
        """Add `module` at the end; returns the container."""
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules: Iterable[Module]) -> ModuleList:
        """Add each of `modules` at the end; returns the container."""
        for m in modules:
            self.append(m)
        return self


class Sequential(ModuleList):
    """A container that calls its modules in order: `Sequential(a, b, c)(x) == c(b(a(x)))`.

    The modules are registered under the names "0", "1", ... (or the OrderedDict's keys), so
    their parameters, state_dict entries and train() / eval() follow. Indexing gives a module
    (or a Sequential of a slice); append / extend add modules.

    Args:
        args: modules, or one OrderedDict of named modules.

    Example:
        >>> model = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
        >>> model(torch.ones(4, 2)).shape
        torchic.Size([4, 1])
        >>> [name for name, _ in model.named_parameters()]
        ['0.weight', '0.bias', '2.weight', '2.bias']
    """

    def __init__(self, *args: Module | OrderedDict[str, Module]) -> None:
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for name, m in args[0].items():
                self.add_module(name, m)
        else:
            self.extend(args)

    @classmethod
    def _from_items(cls, items):
        return cls(OrderedDict(items))   # a slice keeps the original names

    def forward(self, x: Any) -> Any:
        for m in self._modules.values():
            x = m(x)
        return x


class ModuleDict(Module):
    """A dict of named modules whose parameters are registered, in insertion order.

    Args:
        modules: a mapping (or iterable of (name, module) pairs) to start with. Default: None
            (empty).

    Example:
        >>> acts = nn.ModuleDict({"relu": nn.ReLU(), "tanh": nn.Tanh()})
        >>> acts["relu"](torch.tensor([-1.0, 2.0]))
        tensor([0., 2.])
        >>> list(acts.keys())
        ['relu', 'tanh']
    """

    def __init__(self, modules: Any = None) -> None:
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> Any:
        return self._modules[key]

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, module)

    def __delitem__(self, key: str) -> None:
        delattr(self, key)

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def __contains__(self, key: object) -> bool:
        return key in self._modules

    def keys(self) -> Any:
        """The names, in insertion order."""
        return self._modules.keys()

    def values(self) -> Any:
        """The modules, in insertion order."""
        return self._modules.values()

    def items(self) -> Any:
        """`(name, module)` pairs, in insertion order."""
        return self._modules.items()

    def update(self, modules: Any) -> None:
        """Add (or replace) modules from a mapping or an iterable of `(name, module)`."""
        items = modules.items() if hasattr(modules, "items") else modules
        for k, m in items:
            self[k] = m


def _index(idx, n):
    idx = int(idx)
    if not -n <= idx < n:
        raise IndexError(f"index {idx} is out of range for a container of {n} modules")
    return idx % n
