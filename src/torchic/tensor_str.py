"""Tensor reprs laid out as PyTorch's: one column width for every element (right-aligned),
`1.` for whole floats, four decimals or scientific notation chosen over the non-zero finite
values, `...` summaries of tensors over 1,000 elements (3 items at each edge), lines wrapped
at 80 columns, and the suffixes (size=, dtype=, grad_fn=) wrapped the same way.

Pure NumPy: `tensor_repr(array, suffixes)` is what Tensor.__repr__ returns.
"""

import math

import numpy as np

PRECISION = 4
THRESHOLD = 1000
EDGEITEMS = 3
LINEWIDTH = 80


class _Formatter:
    """The one width and notation every element of the tensor is printed with."""

    def __init__(self, a):
        self.floating = a.dtype.kind == "f"
        self.int_mode, self.sci_mode, self.max_width = True, False, 1
        if not self.floating:
            for v in a.reshape(-1).tolist():
                self.max_width = max(self.max_width, len(f"{v}"))
            return
        flat = a.reshape(-1).astype(np.float64)
        vals = flat[np.isfinite(flat) & (flat != 0)]
        if vals.size == 0:
            return
        lo, hi = np.abs(vals).min(), np.abs(vals).max()
        self.int_mode = bool(np.all(vals == np.ceil(vals)))
        if self.int_mode:
            self.sci_mode = hi / lo > 1000.0 or hi > 1.0e8
            texts = ([f"{v:.{PRECISION}e}" for v in vals.tolist()] if self.sci_mode else
                     [f"{v:.0f}." for v in vals.tolist()])
        else:
            self.sci_mode = hi / lo > 1000.0 or hi > 1.0e8 or lo < 1.0e-4
            fmt = "e" if self.sci_mode else "f"
            texts = [f"{v:.{PRECISION}{fmt}}" for v in vals.tolist()]
        self.max_width = max(len(t) for t in texts)

    def format(self, v):
        if not self.floating:
            s = f"{v}"
        elif self.sci_mode:
            s = f"{v:{self.max_width}.{PRECISION}e}"
        elif self.int_mode:
            s = f"{v:.0f}" + ("" if math.isinf(v) or math.isnan(v) else ".")
        else:
            s = f"{v:.{PRECISION}f}"
        return s.rjust(self.max_width)


def _summarized(a):
    """The elements a summarized repr shows (what the width is chosen over)."""
    if a.ndim == 0:
        return a
    if a.ndim == 1:
        return np.concatenate([a[:EDGEITEMS], a[-EDGEITEMS:]]) if len(a) > 2 * EDGEITEMS else a
    rows = list(range(EDGEITEMS)) + list(range(len(a) - EDGEITEMS, len(a))) \
        if len(a) > 2 * EDGEITEMS else range(len(a))
    return np.stack([_summarized(a[i]) for i in rows])


def _values(a):
    return a.astype(np.float64).tolist() if a.dtype.kind == "f" else a.tolist()


def _vector(a, indent, summarize, f):
    per_line = max(1, (LINEWIDTH - indent) // (f.max_width + 2))
    if summarize and len(a) > 2 * EDGEITEMS:
        data = ([f.format(v) for v in _values(a[:EDGEITEMS])] + [" ..."] +
                [f.format(v) for v in _values(a[-EDGEITEMS:])])
    else:
        data = [f.format(v) for v in _values(a)]
    lines = [", ".join(data[i:i + per_line]) for i in range(0, len(data), per_line)]
    return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"


def _nested(a, indent, summarize, f):
    if a.ndim == 0:
        return f.format(_values(a))
    if a.ndim == 1:
        return _vector(a, indent, summarize, f)
    if summarize and len(a) > 2 * EDGEITEMS:
        parts = ([_nested(a[i], indent + 1, summarize, f) for i in range(EDGEITEMS)] + ["..."] +
                 [_nested(a[i], indent + 1, summarize, f)
                  for i in range(len(a) - EDGEITEMS, len(a))])
    else:
        parts = [_nested(a[i], indent + 1, summarize, f) for i in range(len(a))]
    return "[" + ("," + "\n" * (a.ndim - 1) + " " * (indent + 1)).join(parts) + "]"


def tensor_repr(a, suffixes=(), prefix="tensor("):
    """PyTorch's repr of an array `a` with `suffixes` ("dtype=torch.float64", ...)."""
    indent = len(prefix)
    if a.size == 0:
        body = "[]"
    else:
        if a.dtype.kind == "f" and a.dtype.itemsize < 4:
            a = a.astype(np.float32)
        summarize = a.size > THRESHOLD
        body = _nested(a, indent, summarize, _Formatter(_summarized(a) if summarize else a))
    out = [prefix + body]
    last = len(out[0]) - out[0].rfind("\n") + 1
    for s in suffixes:
        if last + len(s) + 2 > LINEWIDTH:
            out.append(",\n" + " " * indent + s)
            last = indent + len(s)
        else:
            out.append(", " + s)
            last += len(s) + 2
    return "".join(out) + ")"
