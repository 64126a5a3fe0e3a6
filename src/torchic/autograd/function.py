"""torch.autograd.Function: ops users define with their own forward and backward.

PyTorch's protocol, unchanged::

    class Exp(torchic.autograd.Function):
        @staticmethod
        def forward(ctx, x):                 # or forward(x) + setup_context(ctx, inputs, output)
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            return g * y

    y = Exp.apply(x)

`apply` runs forward under no_grad and, when an input requires grad, records one node: an
instance of `<Name>Backward` (made per Function subclass), which is also the `ctx` forward
and backward see, and the outputs' `grad_fn` (a forward with several outputs gives each
output a small slot node that files its gradient under its index: the engine hands the
node one gradient per output). Its backward calls the user's, under grad mode when the
pass is recorded (create_graph), so a backward written with tensor ops has derivatives of
its own; `once_differentiable` says it has none.

torchic's own ops are `Primitive` subclasses (autograd/engine.py, an instance method
forward). A subclass of Function whose forward is an instance method (not a staticmethod,
which PyTorch requires) is taken for such a Primitive: the name Function was torchic's
internal base before this module existed, and code written against it keeps working.
"""

import functools
import inspect
import traceback
from typing import Any, Callable

from ..creation import zeros
from ..grad_mode import _grad_enabled, _GradMode
from ..tensor import Tensor
from .engine import Primitive
from .grad_sum import _Slot
from .hooks import is_anomaly_enabled

_FLOATS = ("f32", "f64", "f16", "bf16")


class FunctionCtx:
    """What `forward` / `setup_context` and `backward` receive as `ctx`: save tensors with
    `save_for_backward`, say which outputs are in-place modified inputs (`mark_dirty`) or
    carry no gradient (`mark_non_differentiable`), and store any other attribute."""

    def save_for_backward(self, *tensors: Tensor | None) -> None:
        """Keep tensors (inputs, outputs or None) for backward: `ctx.saved_tensors`."""
        for t in tensors:
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(f"save_for_backward can only save variables, but argument "
                                f"{tensors.index(t)} is of type {type(t).__name__}")
        self.to_save = tensors

    def save_for_forward(self, *tensors: Tensor | None) -> None:
        """PyTorch's forward-mode counterpart: kept, as ctx.saved_tensors is (no jvp here)."""
        self.saved_for_forward = tensors

    def mark_dirty(self, *tensors: Tensor) -> None:
        """Declare inputs that forward modified in place (and returns as outputs)."""
        self.dirty_tensors = tensors

    def mark_non_differentiable(self, *tensors: Tensor) -> None:
        """Declare outputs that get no gradient (backward still receives a zero one)."""
        self.non_differentiable = tensors

    def set_materialize_grads(self, value: bool) -> None:
        """Whether backward gets zero tensors (True, the default) or None for outputs that
        received no gradient."""
        self.materialize_grads = bool(value)


class BackwardCFunction(Primitive, FunctionCtx):
    """The node (and ctx) of one call of a custom Function; `_forward_cls` is the Function."""

    _forward_cls = None
    saved = None          # (Primitive's property, shadowed: users may set ctx.saved)
    to_save = None
    dirty_tensors = ()
    non_differentiable = ()
    materialize_grads = True
    needs_input_grad = ()

    @property
    def saved_tensors(self) -> tuple:
        """The tensors save_for_backward kept (checked against in-place changes)."""
        if self._saved is None:
            raise RuntimeError("saved_tensors is only available in backward (or after "
                               "forward when the call was recorded)")
        return Primitive.saved.fget(self)

    def _connected(self, t):
        if self.n_outputs == 1:
            return Primitive._connected(self, t)
        t = t.detach()
        t.requires_grad, t.grad_fn = True, _slot_node(self, self._out_index[id(t._storage)])
        return t

    def name(self) -> str:
        return type(self).__name__

    def backward(self, grad):
        grads = list(grad) if type(grad) is list else [grad]
        if self.materialize_grads:
            grads = [zeros(m[0], dtype=m[1]) if g is None and m is not None else g
                     for g, m in zip(grads, self._out_meta)]
        fn = self._forward_cls
        result = fn.backward(self, *grads)
        if not isinstance(result, tuple):
            result = (result,)
        n = len(self.inputs_meta)
        name = self.name()
        if len(result) > n and all(r is None for r in result[n:]):
            result = result[:n]
        if len(result) != n:
            raise RuntimeError(f"function {name} returned an incorrect number of gradients "
                               f"(expected {n}, got {len(result)})")
        out = []
        for i, (g, meta) in enumerate(zip(result, self.inputs_meta)):
            if meta is None:
                if g is not None:
                    raise RuntimeError(f"function {name} returned a gradient different than "
                                       f"None at position {i + 1}, but the corresponding "
                                       f"forward input was not a Variable")
                out.append(None)
                continue
            if g is None or not self.needs_grad[i]:
                out.append(None)
                continue
            if not isinstance(g, Tensor):
                raise TypeError(f"function {name} returned a {type(g).__name__} as the "
                                f"gradient at position {i + 1}; expected a Tensor or None")
            out.append(_fit(g, meta, name, i))
        return tuple(out)


def _fit(g, meta, name, i):
    """g summed to the input's shape (PyTorch allows a gradient the input broadcasts to)
    and cast to its dtype."""
    shape, dtype = meta
    if g.shape != shape:
        lead = g.ndim - len(shape)
        ok = lead >= 0 and all(d == 1 or d == e for d, e in zip(shape, g.shape[lead:]))
        if not ok:
            raise RuntimeError(f"Function {name} returned an invalid gradient at index {i} - "
                               f"got {list(g.shape)} but expected shape compatible with "
                               f"{list(shape)}")
        axes = tuple(range(lead)) + tuple(lead + k for k, d in enumerate(shape)
                                           if d == 1 and g.shape[lead + k] != 1)
        g = g.sum(dim=axes) if axes else g
        g = g.reshape(shape)
    if g.dtype != dtype:
        g = g.to(dtype)
    return g


class _SlotNode(Primitive):
    """grad_fn of output `i` of a custom Function with several outputs."""

    def backward(self, grad):
        return (_Slot(self.i, grad),)

    def name(self) -> str:
        return self.edges[0].name()


def _slot_node(node, i):
    s = _SlotNode()
    s.i, s.edges, s.needs_grad, s.freed, s.retained, s._saved = i, (node,), (True,), False, \
        None, ()
    return s


class _DelayedError(Primitive):
    """The grad_fn a once_differentiable backward's results get when the pass is recorded:
    differentiating them again raises."""

    def forward(self, out, *grad_inputs):
        return out.detach()

    def backward(self, grad):
        raise RuntimeError("trying to differentiate twice a function that was marked with "
                           "@once_differentiable")


def once_differentiable(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Decorate a custom Function's backward that is not itself differentiable: it runs
    under no_grad, and differentiating its results (create_graph) raises RuntimeError."""

    @functools.wraps(fn)
    def wrapper(ctx, *args):
        with _GradMode(False):
            outputs = fn(ctx, *args)
        if not _grad_enabled.get():
            return outputs
        needing = [a for a in args if isinstance(a, Tensor) and a.requires_grad]
        if not needing:
            return outputs
        wrap = (lambda o: _DelayedError.apply(o, *needing) if isinstance(o, Tensor) else o)
        return tuple(wrap(o) for o in outputs) if isinstance(outputs, tuple) else wrap(outputs)
    return wrapper


def _uses_setup_context(cls):
    return inspect.getattr_static(cls, "setup_context") is not _BASE_SETUP


def _custom_apply(cls, *args, **kwargs):
    """Function.apply: forward under no_grad, the call recorded as one node."""
    uses_setup = _uses_setup_context(cls)
    if kwargs and not uses_setup:
        raise TypeError(f"{cls.__name__}.apply() takes positional arguments only "
                        f"(a forward(ctx, ...) Function); got {sorted(kwargs)}")
    if uses_setup:     # inputs as setup_context sees them: every argument, defaults too
        bound = inspect.signature(cls.forward).bind(*args, **kwargs)
        bound.apply_defaults()
        args, kwargs = bound.args, {}
    node = cls._backward_cls()
    node._saved, node.freed = None, False
    grad_on = _grad_enabled.get()
    needs = tuple(grad_on and isinstance(a, Tensor) and a.requires_grad for a in args)
    node.needs_input_grad = needs
    node.inputs_meta = [(a.shape, a.dtype) if isinstance(a, Tensor) else None for a in args]
    edges = tuple((a.grad_fn if a.grad_fn is not None else a) if need else None
                  for a, need in zip(args, needs))
    with _GradMode(False):
        if uses_setup:
            out = cls.forward(*args)
            cls.setup_context(node, args, out)
        else:
            out = cls.forward(node, *args)
    if not any(needs):
        return out
    return _record(node, args, edges, needs, out)


def _record(node, args, edges, needs, out):
    """Make `node` the grad_fn of forward's differentiable outputs."""
    multi = isinstance(out, tuple)
    outputs = list(out) if multi else [out]
    single = len(outputs) == 1
    node.needs_grad, node.edges, node.freed, node.retained = needs, edges, False, None
    node.n_outputs = 1 if single else len(outputs)
    dirty = {id(t) for t in node.dirty_tensors}
    non_diff = {id(t) for t in node.non_differentiable}
    inputs = {id(a) for a in args if isinstance(a, Tensor)}
    node._out_meta, node._out_index = [], {}
    for k, o in enumerate(outputs):
        if not isinstance(o, Tensor):
            node._out_meta.append(None)
            continue
        node._out_meta.append((o.shape, o.dtype))
        if id(o) in dirty:
            if o.requires_grad and o.grad_fn is None:
                raise RuntimeError("a leaf Variable that requires grad has been used in an "
                                   "in-place operation.")
        elif id(o) in inputs:          # an input returned as it is: an alias gets the node
            o = outputs[k] = o.detach()
        if id(o) in non_diff or o._dtype not in _FLOATS:
            if id(o) in dirty or id(o) in non_diff:
                o.requires_grad = False
            continue
        o.requires_grad = True
        o.grad_fn = node if single else _slot_node(node, k)
        node._out_index[id(o._storage)] = k
    saved = node.to_save or ()
    by_id = {id(o) for o in outputs if isinstance(o, Tensor) and o.grad_fn is not None
             and (o.grad_fn is node or o.grad_fn.edges[0] is node)}    # (outputs of node)
    node._saved_out = tuple(i for i, t in enumerate(saved) if id(t) in by_id)
    node._saved = tuple(t.detach() if id(t) in by_id else t for t in saved)
    node._versions = tuple(t._storage.version if t is not None else None for t in saved)
    node.to_save = None
    if is_anomaly_enabled():
        node._trace = traceback.format_stack()[:-2]
    return tuple(outputs) if multi else outputs[0]


class Function(Primitive):
    """Base class for user-defined differentiable operations (PyTorch's
    torch.autograd.Function): subclass it with static `forward` and `backward`, call it with
    `apply`.

    forward(ctx, *args) (or forward(*args) plus setup_context(ctx, inputs, output)) computes
    the outputs from the inputs (tensors or anything else) with ordinary tensor code, not
    recorded; backward(ctx, *grad_outputs) returns one gradient (or None) per input.

    Example:
        >>> class LegendrePolynomial3(torchic.autograd.Function):
        ...     @staticmethod
        ...     def forward(ctx, input):
        ...         ctx.save_for_backward(input)
        ...         return 0.5 * (5 * input ** 3 - 3 * input)
        ...     @staticmethod
        ...     def backward(ctx, grad_output):
        ...         input, = ctx.saved_tensors
        ...         return grad_output * 1.5 * (5 * input ** 2 - 1)
        >>> y = LegendrePolynomial3.apply(torchic.tensor([0.5], requires_grad=True))
    """

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if isinstance(inspect.getattr_static(cls, "forward"), (staticmethod, classmethod)):
            cls.apply = classmethod(_custom_apply)
            cls._backward_cls = type(cls.__name__ + "Backward", (BackwardCFunction,),
                                     {"_forward_cls": cls, "__module__": cls.__module__})
        else:                 # torchic's internal protocol (the old name of Primitive)
            cls.apply = classmethod(Primitive.apply.__func__)

    @staticmethod
    def forward(*args: Any, **kwargs: Any) -> Any:
        """Compute the outputs (override it)."""
        raise NotImplementedError("You must implement the forward function for custom "
                                  "autograd.Function.")

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: Any) -> Any:
        """Save what backward needs, given forward's inputs and output (override it, or
        take ctx as forward's first argument)."""
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(*args: Any, **kwargs: Any) -> Any:
        """The gradient of each input from the gradient of each output (override it)."""
        raise NotImplementedError("You must implement either the backward or vjp method for "
                                  "your custom autograd.Function to use it with backward "
                                  "mode AD.")

    vjp = backward

    @classmethod
    def apply(cls, *args: Any, **kwargs: Any) -> Any:
        """Run the Function on `args` (a subclass's apply: forward, recorded)."""
        raise RuntimeError("apply() is called on a subclass of Function")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("Legacy autograd function with non-static forward method is "
                           "deprecated. Please use new-style autograd function with static "
                           "forward method. (Example: https://pytorch.org/docs/stable/"
                           "autograd.html#torch.autograd.Function)")


_BASE_SETUP = inspect.getattr_static(Function, "setup_context")
InplaceFunction = Function
