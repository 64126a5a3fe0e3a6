"""PyTorch's `out=` keyword, written once: `torchic.add(a, b, out=c)` computes `add(a, b)` and
writes it into `c`, which it returns.

`OUT` is THE table: every exported function whose PyTorch counterpart accepts `out=`
(`torchic.<name>`, `torchic.linalg.<name>`, `torchic.nn.functional.<name>`), with how
PyTorch treats out's dtype for it. `with_out` wraps one function; torchic/__init__.py,
linalg.py and nn/functional.py apply it to their exports from this table (the Tensor
methods keep the bare functions: no out= there, as in PyTorch, and no extra call).
tests/unit/test_out_table.py checks the table against torch's own signatures.

What an `out=` call does, as PyTorch does it:
- grad mode on and an argument (out included) requires grad: RuntimeError, nothing computed;
- `out` must be a Tensor (a tuple / list of them for the functions returning several:
  `max(x, 1)`, `sort`, `topk`, `frexp` ...), else TypeError;
- the result is computed as without `out`, then checked against out's dtype (per the
  function's kind below: RuntimeError), written into out's storage in place (views of out
  see it) and `out` returned (the functions returning several: their named tuple of the
  out tensors; those returning a list of tensors, into a list out: None, as PyTorch's);
- an out of another shape is resized first (`Tensor.resize_`), with PyTorch's UserWarning
  when it had elements (an empty out is resized silently);
- out may be one of the inputs (`add(a, b, out=a)`): the result is computed before it is
  written.

The kinds of dtype rule (PyTorch differs by op; each measured against torch 2.13):
- CAST (elementwise math, comparisons, stack / cat ...): the result's dtype
  must be castable to out's (`torch.can_cast`), else "result type Float can't be cast to
  the desired output type Long";
- DTYPE (creation, sum / prod / mean / cumsum ...): out's dtype is the one computed in,
  as if `dtype=out.dtype` were given;
- EXACT (products, indexing, order statistics, norms, rounding ...): out's dtype must be
  the result's ("Expected out tensor to have dtype float, but got double instead"); every
  part of a tuple out is checked so.
KIND_RULES picks the kind from the arguments where PyTorch's rule depends on them (clamp
with number or tensor bounds, diff with n=0).
"""

import functools
import inspect
import warnings
from typing import Any, Callable

from .. import raw
from ..autograd import is_grad_enabled
from ..dispatcher import ITEMSIZE, View, storage_code
from ..dtypes import dtype_code
from ..promotion import SCALAR_TYPE_NAMES, can_cast_code
from ..shape import contiguous_strides, numel
from ..size import Size
from ..tensor import Storage, Tensor

CAST, DTYPE, EXACT = "cast", "dtype", "exact"
_OUT_TYPE = Tensor | tuple[Tensor, ...] | list[Tensor] | None     # out's annotation

# THE table: name (as exported; "linalg." / "nn.functional." for those namespaces) -> kind.
# Found from torch 2.13's signatures (tests/unit/test_out_table.py probes them again).
_CAST_NAMES = (
    "add", "sub", "mul", "div", "pow", "maximum", "minimum", "eq", "ne", "lt", "le", "gt",
    "ge", "log10", "log2", "logical_and", "logical_or", "logical_xor", "logical_not", "erf",
    "var", "std", "max", "min", "stack", "cat", "hstack", "vstack", "row_stack", "dstack", "column_stack",
    "diff", "logsumexp", "cos", "exp", "log", "sigmoid", "sin", "sqrt", "tanh", "outer", "ger",
    "clamp", "clip", "clamp_min", "clamp_max",
    "kron", "addr", "acosh", "addcdiv", "addcmul", "asinh", "atanh", "copysign", "cosh",
    "deg2rad", "erfc", "exp2", "expm1", "float_power", "fmax", "fmin", "fmod", "hypot",
    "ldexp", "lerp", "log1p", "logaddexp", "logaddexp2", "logit", "rad2deg", "reciprocal",
    "remainder", "floor_divide", "rsqrt", "sinc", "sinh", "square", "tan", "xlogy", "acos",
    "arccos", "arcsin", "arctan", "arctan2", "asin", "atan", "atan2", "digamma", "erfinv",
    "lgamma", "mvlgamma", "polygamma", "bitwise_and", "bitwise_left_shift", "bitwise_or",
    "bitwise_right_shift", "bitwise_xor", "gcd", "lcm", "i0", "nextafter", "true_divide",
    "divide", "multiply", "subtract", "nn.functional.normalize",
    "nansum", "nanmean")      # (torch refuses an integer out: "nansum_cpu" has no Long)
_DTYPE_NAMES = (
    "zeros", "ones", "full", "empty", "arange", "linspace", "logspace", "eye", "rand", "randn",
    "randint", "randperm", "rand_like", "randn_like", "randint_like", "sum", "prod", "mean",
    "cumsum", "cumprod")
_EXACT_NAMES = (
    "abs", "neg", "ceil", "floor", "trunc", "frac", "sign", "sgn", "fix", "round",
    "bitwise_not", "signbit", "isneginf", "isposinf", "heaviside", "nan_to_num", "where", "all", "any", "isin", "histc", "histogram",
    "amax", "amin", "argmax", "argmin", "softmax", "log_softmax", "sort",
    "argsort", "msort", "topk", "kthvalue", "mode", "median", "nanmedian", "quantile",
    "nanquantile", "cummax", "cummin", "logcumsumexp", "aminmax", "frexp", "searchsorted",
    "bucketize", "norm", "renorm", "tril", "triu", "diag", "gather", "take_along_dim", "take",
    "index_select", "masked_select", "nonzero", "nonzero_static", "scatter", "scatter_add",
    "scatter_reduce", "index_add", "index_copy", "index_reduce", "slice_scatter",
    "narrow_copy", "diagonal_copy", "as_strided_copy", "unfold_copy", "expand_copy", "view_copy", "permute_copy",
    "transpose_copy", "squeeze_copy", "unsqueeze_copy", "split_with_sizes_copy",
    "unbind_copy", "matmul", "mm", "bmm", "mv", "addmv", "addbmm", "dot", "vdot", "inner", "addmm", "baddbmm",
    "tensordot", "cross", "chain_matmul", "multinomial", "normal", "bernoulli",
    "native_batch_norm",
    "linalg.cross", "linalg.vecdot", "linalg.multi_dot", "linalg.norm", "linalg.matrix_norm",
    "linalg.vector_norm", "nn.functional.avg_pool2d", "nn.functional.gelu",
    "nn.functional.hardshrink", "nn.functional.linear", "nn.functional.logsigmoid",
    "nn.functional.softplus", "nn.functional.softshrink")
_CREATION = ("zeros", "ones", "full", "empty", "arange", "linspace", "logspace", "eye", "rand",
             "randn", "randint", "randperm")
# a list of tensors written into a list out: PyTorch returns None from these
_LIST_OUTS = ("unbind_copy", "split_with_sizes_copy")
OUT = {**{n: CAST for n in _CAST_NAMES}, **{n: DTYPE for n in _DTYPE_NAMES},
       **{n: EXACT for n in _EXACT_NAMES}}


def _bounds_kind(args, kwargs):
    """clamp's bounds: tensors promote (CAST); numbers keep the input's dtype (EXACT)."""
    bounds = (*args[1:], kwargs.get("min"), kwargs.get("max"))
    return CAST if any(isinstance(b, Tensor) for b in bounds) else EXACT


def _diff_kind(args, kwargs):
    """diff with n=0 is a copy of the input, whose out must have its dtype."""
    n = args[1] if len(args) > 1 else kwargs.get("n", 1)
    return EXACT if n == 0 else CAST


# where PyTorch's rule depends on the arguments: the kind, from (args, kwargs)
KIND_RULES = {"clamp": _bounds_kind, "clip": _bounds_kind, "clamp_min": _bounds_kind,
              "clamp_max": _bounds_kind, "diff": _diff_kind}

# the C++ type names PyTorch's exact-dtype message uses (caffe2::TypeMeta's)
_CPP_NAMES = {"b8": "bool", "u8": "unsigned char", "i8": "signed char", "i16": "short int",
              "i32": "int", "i64": "long int", "f16": "c10::Half", "bf16": "c10::BFloat16",
              "f32": "float", "f64": "double"}

RESIZED = ("An output with one or more elements was resized since it had shape {old}, which "
           "does not match the required output shape {new}. This behavior is deprecated, and "
           "in a future PyTorch release outputs will not be resized unless they have zero "
           "elements. You can explicitly reuse an out tensor t by resizing it, inplace, to zero "
           "elements with t.resize_(0).")


def out_variants(namespace: dict, prefix: str = "") -> dict:
    """{name: with_out(fn)} for the functions of `namespace` (a module's globals) that the
    table lists under `prefix` ("", "linalg.", "nn.functional.")."""
    made, by_fn = {}, {}
    for key, kind in OUT.items():
        if not key.startswith(prefix) or "." in key[len(prefix):]:
            continue
        name = key[len(prefix):]
        fn = namespace.get(name)
        if callable(fn):      # an alias (arccos is acos) gets its function's one wrapper
            made[name] = by_fn.get(id(fn)) or by_fn.setdefault(id(fn), with_out(fn, name, kind))
    return made


_OUT_DOC = ("out (Tensor, optional): the output tensor (a tuple of them where several are "
            "returned): the result is written into it (resized if its shape differs) and it "
            "is returned.")


def _documented_out(doc: str) -> str:
    """doc with `out` as the last entry of its Args section (or a paragraph of its own)."""
    if "Args:" not in doc:
        return doc + "\n\n    " + _OUT_DOC + "\n"
    head, rest = doc.split("Args:", 1)
    end = rest.find("\n\n")
    section, tail = (rest, "") if end < 0 else (rest[:end], rest[end:])
    first = next((ln for ln in section.splitlines() if ln.strip()), "        ")
    indent = first[:len(first) - len(first.lstrip())]
    return head + "Args:" + section.rstrip() + "\n" + indent + _OUT_DOC + tail


def with_out(fn: Callable, name: str, kind: str = CAST) -> Callable:
    """`fn` taking PyTorch's keyword `out=` too (module doc); without it, `fn` itself runs."""
    if getattr(fn, "__out_kind__", None) is not None:
        return fn
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        sig = None
    takes_dtype = sig is not None and "dtype" in sig.parameters

    @functools.wraps(fn)
    def call(*args: Any, out: Any = None, **kwargs: Any) -> Any:
        if out is None:
            return fn(*args, **kwargs)
        return _call_into(fn, name, kind, takes_dtype, args, kwargs, out)

    if sig is not None:
        params = [p for p in sig.parameters.values() if p.name != "out"]
        at = next((k for k, p in enumerate(params) if p.kind is p.VAR_KEYWORD), len(params))
        params.insert(at, inspect.Parameter("out", inspect.Parameter.KEYWORD_ONLY,
                                            default=None, annotation=_OUT_TYPE))
        call.__signature__ = sig.replace(parameters=params)   # type: ignore[attr-defined]
    call.__doc__ = _documented_out(fn.__doc__ or "")
    call.__out_kind__ = kind       # type: ignore[attr-defined]
    return call


def _tensors(x):
    if isinstance(x, Tensor):
        yield x
    elif isinstance(x, (list, tuple)):
        for v in x:
            yield from _tensors(v)
    elif isinstance(x, dict):
        for v in x.values():
            yield from _tensors(v)


def _call_into(fn, name, kind, takes_dtype, args, kwargs, out):
    if name in KIND_RULES:
        kind = KIND_RULES[name](args, kwargs)
    if isinstance(out, (list, tuple)):
        outs = list(out)
        bad = next((o for o in outs if not isinstance(o, Tensor)), None)
        if bad is not None or not outs:
            raise TypeError(f"{name}(): argument 'out' must be tuple of Tensors, not "
                            f"{type(bad).__name__ if outs else type(out).__name__}")
    elif isinstance(out, Tensor):
        outs = [out]
    else:
        raise TypeError(f"{name}(): argument 'out' must be Tensor, not {type(out).__name__}")
    if is_grad_enabled() and any(t.requires_grad for t in
                                 (*_tensors(args), *_tensors(kwargs), *outs)):
        raise RuntimeError(f"{name}(): functions with out=... arguments don't support automatic "
                           f"differentiation, but one of the arguments requires grad.")
    if kind == DTYPE and takes_dtype and isinstance(out, Tensor):
        if kwargs.get("dtype") is None:
            kwargs = dict(kwargs, dtype=out.dtype)
        elif name in _CREATION and dtype_code(kwargs["dtype"]) != out._dtype:
            raise RuntimeError(f"dtype {SCALAR_TYPE_NAMES[dtype_code(kwargs['dtype'])]} does "
                               f"not match dtype of out parameter "
                               f"({SCALAR_TYPE_NAMES[out._dtype]})")
    result = fn(*args, **kwargs)
    inputs = [t for t in (*_tensors(args), *_tensors(kwargs))]
    for r, o in zip(result if isinstance(result, (tuple, list)) else (result,), outs):
        if isinstance(r, Tensor):
            _check_partial_overlap(o, r.numel(), inputs)
    if isinstance(result, Tensor):
        if not isinstance(out, Tensor):
            raise TypeError(f"{name}(): argument 'out' must be Tensor, not "
                            f"{type(out).__name__}")
        _check_dtype(result, out, kind)
        write_into(out, result)
        return out
    parts = list(result)
    if isinstance(out, Tensor):
        raise TypeError(f"{name}(): argument 'out' must be tuple of Tensors, not Tensor")
    if len(outs) != len(parts):
        raise TypeError(f"expected tuple of {len(parts)} elements but got {len(outs)}")
    for r, o in zip(parts, outs):
        _check_dtype(r, o, EXACT)
    for r, o in zip(parts, outs):
        write_into(o, r)
    if name in _LIST_OUTS:
        return None
    if type(result) is tuple:
        return tuple(outs)
    return type(result)(*outs)      # the function's named tuple (MaxResult ...)


def _span(t, n=None):
    """The element range [start, stop) of a dense tensor's storage it covers (None: not dense,
    where PyTorch's overlap check says "too hard" and passes)."""
    if not t.is_contiguous():
        return None
    return t._offset, t._offset + (t.numel() if n is None else n)


def _check_partial_overlap(out, n, inputs):
    """PyTorch's refusal of an out sharing memory with an input partly (the same elements
    exactly, `add(a, b, out=a)`, are allowed); `n`: the elements out will hold."""
    mine = _span(out, n)
    if mine is None:
        return
    for t in inputs:
        if t._storage is not out._storage:
            continue
        theirs = _span(t)
        if theirs is not None and theirs != mine and theirs[0] < mine[1] and \
                mine[0] < theirs[1]:
            raise RuntimeError("unsupported operation: some elements of the input tensor and "
                               "the written-to tensor refer to a single memory location. "
                               "Please clone() the tensor before performing the operation.")


def _check_dtype(result, out, kind):
    have, want = result._dtype, out._dtype
    if kind == EXACT:
        if have != want:
            raise RuntimeError(f"Expected out tensor to have dtype {_CPP_NAMES[have]}, but got "
                               f"{_CPP_NAMES[want]} instead")
    elif not can_cast_code(have, want):
        raise RuntimeError(f"result type {SCALAR_TYPE_NAMES[have]} can't be cast to the "
                           f"desired output type {SCALAR_TYPE_NAMES[want]}")


def write_into(out: Tensor, result: Tensor) -> Tensor:
    """Write `result` (cast to out's dtype) into out's storage, resizing out first where
    its shape differs (PyTorch's warning when it had elements); returns out."""
    if any(s == 0 and n > 1 for n, s in zip(out.shape, out._strides)):
        raise RuntimeError("unsupported operation: more than one element of the written-to "
                           "tensor refers to a single memory location. Please clone() the "
                           "tensor before performing the operation.")
    if tuple(out.shape) != tuple(result.shape):
        if out.numel():
            warnings.warn(RESIZED.format(old=list(out.shape), new=list(result.shape)),
                          UserWarning, stacklevel=4)
        resize_(out, tuple(result.shape))
    if result.numel():
        raw.copy_into(out, result)
    out._storage.version += 1
    return out


def _sizes(size):
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    for s in size:
        if isinstance(s, bool) or not isinstance(s, int) and not hasattr(s, "__index__"):
            raise TypeError(f"resize_(): argument 'size' must be tuple of ints, but found "
                            f"element of type {type(s).__name__}")
    shape = tuple(int(s) for s in size)
    if any(s < 0 for s in shape):
        raise RuntimeError(f"Trying to create tensor with negative dimension "
                           f"{min(shape)}: {list(shape)}")
    return shape


def resize_(self: Tensor, *size: Any, memory_format: Any = None) -> Tensor:
    """Resize `self` in place to `size` (PyTorch's `Tensor.resize_`): a new shape gets
    contiguous strides from self's storage offset; the storage grows when it is too small
    (its old elements kept first); elements beyond the old ones are uninitialized. A tensor
    of the same shape is left as it is.

    Args:
        size (int...): the new shape (ints, or one tuple).

    Example:
        >>> t = torchic.tensor([1.0, 2.0, 3.0, 4.0])
        >>> t.resize_(2, 2)
        tensor([[1., 2.],
                [3., 4.]])
    """
    shape = _sizes(size)
    if self.requires_grad:
        raise RuntimeError("cannot resize variables that require grad")
    if shape == tuple(self.shape):
        return self
    st = self._storage
    st.check_usable()
    rt = st.runtime
    item = ITEMSIZE[storage_code(rt.backend, self._dtype)]
    need = self._offset + numel(shape)
    if need * item > st.block.size:
        # a new storage, the old one's elements first (views of the old storage keep it);
        # self's, not a track_tensors scope's (the scope would dispose it under self)
        grown = Storage(rt, rt.alloc(need * item))
        have = st.block.size // item
        if have:
            rt.run("copy", View(grown.block, 0, (have,), (1,), self._dtype),
                   (View(st.block, 0, (have,), (1,), self._dtype),), None)
        self._storage = grown
    self.shape = tuple.__new__(Size, shape)
    self._strides = contiguous_strides(shape)
    self._view = None
    self._bview = None
    return self


def resize_as_(self: Tensor, other: Tensor, memory_format: Any = None) -> Tensor:
    """Resize `self` in place to `other`'s shape (`self.resize_(other.shape)`)."""
    return resize_(self, tuple(other.shape))


__all__ = ["OUT", "CAST", "DTYPE", "EXACT", "out_variants", "with_out", "write_into",
           "resize_", "resize_as_"]
