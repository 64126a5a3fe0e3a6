"""Tensor's op methods, bound from one table.

tensor.py defines the class and its fields; every method that computes (``x + y``,
``x.sum(1)``, ``x[i]``, ``x.numpy()``, ``x.backward()``) is one of the op functions
of the layers above, bound here once they are all loaded. Where the method takes the
function's arguments as they are, the table holds the function itself (one Python call
less per op); the few that reorder or fix arguments are written out below.
"""

from . import api, raw
from .autograd import run_backward
from .creation import tensor as _tensor_from_data
from .creation import exponential_, normal_, random_, uniform_
from .devices import check_device
from .functions import Clone
from .tensor import Tensor


def _reflected(fn):
    def method(self, other):
        return fn(other, self)
    method.__name__ = f"__r{fn.__name__}__"
    return method


def _inplace(op):
    def method(self, other):
        return api.inplace_binary(op, self, other)
    method.__name__ = f"{op}_"
    return method


def _cuda(self, device):
    """Tensor.cuda(): refused with THE device check's message (torchic has no CUDA device)."""
    check_device("cuda", "cuda(): ")       # always raises


def _slice(self, ranges):
    """The original's slice: one (start, stop[, step]) range, int or None per leading dim."""
    key = []
    for r in ranges:
        if r is None or isinstance(r, (int, slice)):
            key.append(slice(None) if r is None else r)
        else:
            key.append(slice(*r))
    return api.getitem(self, tuple(key))


def _backward(self, gradient=None, retain_graph=False):
    run_backward(self, gradient, retain_graph)


def _from_data(data, shape=None, dtype=None, requires_grad=False):
    """A tensor from nested lists, a NumPy array or a scalar; `shape` reshapes flat data."""
    return _tensor_from_data(data, dtype=dtype, requires_grad=requires_grad, shape=shape)


METHODS = {
    # arithmetic and comparisons
    "__add__": api.add, "__sub__": api.sub, "__mul__": api.mul, "__truediv__": api.div,
    "__pow__": api.pow, "__matmul__": api.matmul, "__neg__": api.neg, "__abs__": api.abs,
    "__radd__": _reflected(api.add), "__rsub__": _reflected(api.sub),
    "__rmul__": _reflected(api.mul), "__rtruediv__": _reflected(api.div),
    "__rpow__": _reflected(api.pow), "__rmatmul__": _reflected(api.matmul),
    "__pos__": lambda self: self,
    "__eq__": api.eq, "__ne__": api.ne, "__lt__": api.lt, "__le__": api.le,
    "__gt__": api.gt, "__ge__": api.ge,
    "add": api.add, "sub": api.sub, "mul": api.mul, "div": api.div, "pow": api.pow,
    "matmul": api.matmul, "maximum": api.maximum, "minimum": api.minimum,
    "eq": api.eq, "ne": api.ne, "lt": api.lt, "le": api.le, "gt": api.gt, "ge": api.ge,
    **api.UNARY_OPS, "log10": api.log10, "log2": api.log2,      # exp, log, relu, ...
    "where": lambda self, cond, other: api.where(cond, self, other),
    # reductions
    "sum": api.sum, "mean": api.mean, "var": api.var, "std": api.std, "max": api.max,
    "min": api.min, "amax": api.amax, "amin": api.amin, "argmax": api.argmax,
    "argmin": api.argmin, "softmax": api.softmax, "log_softmax": api.log_softmax,
    "all": api.all, "any": api.any, "isclose": api.isclose, "allclose": api.allclose,
    "cumsum": api.cumsum, "histc": api.histc,
    # ordering (sync points: see api/ordering.py), masks, clamps, pieces (api/extra_ops.py)
    "sort": api.sort, "argsort": api.argsort, "topk": api.topk,
    "tril": api.tril, "triu": api.triu, "masked_fill": api.masked_fill,
    "masked_fill_": api.masked_fill_, "clamp": api.clamp, "clip": api.clip,
    "clamp_": api.clamp_, "clip_": api.clip_, "erf": api.erf,
    "split": api.split, "chunk": api.chunk, "roll": api.roll,
    # shapes, views, indexing
    "reshape": api.reshape, "view": api.view, "permute": api.permute,
    "transpose": api.transpose, "t": api.transpose,
    "T": property(lambda self: api.permute(self, tuple(reversed(range(self.ndim))))),
    "expand": api.expand, "expand_as": lambda self, other: api.expand(self, other.shape),
    "squeeze": api.squeeze, "unsqueeze": api.unsqueeze, "flatten": api.flatten,
    "contiguous": api.contiguous, "clone": lambda self: Clone.apply(self), "unbind": api.unbind,
    "__getitem__": api.getitem, "__setitem__": api.setitem, "slice": _slice,
    "set": api.setitem,
    # dtypes and devices
    "to": api.to, "type_as": api.type_as, "cpu": lambda self: self,
    "cuda": lambda self, device=None, non_blocking=False: _cuda(self, device),
    "float": lambda self: api.to_dtype(self, "f32"),
    "long": lambda self: api.to_dtype(self, "i32"),
    "int": lambda self: api.to_dtype(self, "i32"),
    # in place
    "__iadd__": _inplace("add"), "__isub__": _inplace("sub"), "__imul__": _inplace("mul"),
    "__itruediv__": _inplace("div"), "add_": _inplace("add"), "sub_": _inplace("sub"),
    "mul_": _inplace("mul"), "div_": _inplace("div"),
    "zero_": lambda self: api.fill_(self, 0.0), "fill_": api.fill_, "copy_": api.copy_,
    "normal_": normal_, "uniform_": uniform_, "exponential_": exponential_,
    "random_": random_,     # PyTorch's generator's numbers (creation.py)
    # reads and autograd
    "numpy": raw.read, "to_array": raw.read, "backward": _backward,
    "from_data": staticmethod(_from_data),
}

for _name, _method in METHODS.items():
    setattr(Tensor, _name, _method)
del _name, _method
