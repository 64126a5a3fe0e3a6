"""einsum: Einstein summation planned as views, sums and batched products.

The plan, for operands with labels (one letter per dim, `...` for broadcast dims):

1. Each operand alone: a label repeated within it takes the diagonal (a product with an
   identity mask, then a sum: differentiable with no new primitive); a label that no
   other operand and not the output has is summed out at once.
2. Operands are contracted pairwise, left to right. For a pair, every label is one of:
   batch (in both and needed later), contracted (in both, needed by nothing later), left
   only, right only. Left is permuted to (batch, left, contracted), right to (batch,
   contracted, right), both reshaped to 3-D, multiplied by one matmul, and the result
   reshaped back to (batch..., left..., right...). A size-1 dim facing a larger one is
   expanded (a view): ellipsis dims broadcast, as PyTorch's do.
3. The last operand is permuted into the output's order (its remaining extra labels
   summed first).

Gradients come from the Functions of the ops used (permute, reshape, expand, matmul, mul,
sum); integer operands multiply exactly (functions/matmul.int_matmul).
"""

import string

from ..creation import eye
from ..promotion import promote_types
from ..tensor import Tensor
from .elementwise import mul
from .reductions import sum
from .shaping import expand, matmul, permute, reshape

_LETTERS = string.ascii_letters


def einsum(*args: object) -> Tensor:
    """Sums the product of the operands' elements over the labels the equation leaves out.

    Args:
        equation (str): labels per operand, comma-separated, e.g. ``"ij,jk->ik"``; ``...``
            stands for broadcast dims; without ``->`` the output is the labels seen once,
            in alphabetical order (after the ellipsis dims).
        *operands (Tensor): one tensor per operand term (or one list of them). PyTorch's
            sublist form ``einsum(a, [0, 1], b, [1, 2], [0, 2])`` is accepted too.

    Example::

        >>> a, b = torchic.ones(2, 3), torchic.ones(3, 4)
        >>> torchic.einsum("ij,jk->ik", a, b).shape
        torchic.Size([2, 4])
    """
    if not args:
        raise TypeError("einsum(): expected an equation and operands")
    if isinstance(args[0], str):
        equation, operands = args[0], list(args[1:])
        if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
            operands = list(operands[0])
    else:
        equation, operands = _from_sublists(args)
    for t in operands:
        if not isinstance(t, Tensor):
            raise TypeError(f"einsum(): operands must be Tensors, got {type(t).__name__}")
    terms, output = _parse(equation.replace(" ", ""), operands)
    return _contract(terms, output, operands)


def _from_sublists(args):
    """einsum(op1, sub1, op2, sub2, ..., [out]): the equation those sublists spell."""
    args = list(args)
    out = args.pop() if len(args) % 2 == 1 else None

    def letters(sub):
        s = ""
        for x in sub:
            if x is Ellipsis:
                s += "..."
            elif isinstance(x, int) and 0 <= x < 52:
                s += _LETTERS[x]
            else:
                raise ValueError(f"einsum(): subscript in subscript list is not within the "
                                 f"valid range [0, 52), got {x}")
        return s

    operands = args[0::2]
    eq = ",".join(letters(s) for s in args[1::2])
    if out is not None:
        eq += "->" + letters(out)
    return eq, operands


def _parse(equation, operands):
    """([labels per operand], output labels): each ellipsis replaced by unique labels
    (digits-free characters not in the equation), right-aligned as broadcasting aligns."""
    lhs, arrow, rhs = equation.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(operands):
        raise RuntimeError("einsum(): more operands were provided than specified in the "
                           "equation" if len(operands) > len(terms) else
                           "einsum(): fewer operands were provided than specified in the "
                           "equation")
    for term in terms + ([rhs] if arrow else []):
        bad = set(term.replace("...", "")) - set(_LETTERS)
        if bad or term.count("...") > 1 or "." in term.replace("...", ""):
            raise RuntimeError(f"einsum(): invalid subscript in equation {equation!r}")
    ell = 0
    for term, t in zip(terms, operands):
        n = len(term.replace("...", ""))
        if "..." in term:
            if t.ndim < n:
                raise RuntimeError(f"einsum(): the number of subscripts in the equation "
                                   f"({n}) is more than the number of dimensions ({t.ndim}) "
                                   f"for operand")
            ell = max(ell, t.ndim - n)
        elif t.ndim != n:
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({n}) "
                               f"does not match the number of dimensions ({t.ndim}) for "
                               f"operand {terms.index(term)} and no ellipsis was given")
    spare = [chr(c) for c in range(0x100, 0x100 + ell)]     # labels no equation spells

    def expand_term(term, ndim):
        if "..." not in term:
            return list(term)
        k = ndim - len(term.replace("...", ""))
        head, tail = term.split("...")
        return list(head) + spare[ell - k:] + list(tail)

    labels = [expand_term(term, t.ndim) for term, t in zip(terms, operands)]
    if arrow:
        out = expand_term(rhs, len(rhs.replace("...", "")) + ell) if "..." in rhs else \
            list(rhs)
        seen = {c for ls in labels for c in ls}
        for c in out:
            if c not in seen:
                raise RuntimeError(f"einsum(): output subscript {c} does not appear in the "
                                   f"equation for any input operand")
        if len(set(out)) != len(out):
            raise RuntimeError("einsum(): output subscript appears more than once in the "
                               "output")
    else:
        counts = {}
        for ls in labels:
            for c in ls:
                counts[c] = counts.get(c, 0) + 1
        out = spare + sorted(c for c, n in counts.items() if n == 1 and c not in spare)
    return labels, out


def _sizes(labels, operands):
    """label -> its size (a size-1 dim broadcasts against a larger one)."""
    size = {}
    for ls, t in zip(labels, operands):
        for c, n in zip(ls, t.shape):
            if size.get(c, 1) == 1:
                size[c] = n
            elif n not in (1, size[c]):
                raise RuntimeError(f"einsum(): operands do not broadcast with remapped shapes "
                                   f"(subscript {c!r} has sizes {size[c]} and {n})")
    return size


def _diagonal(t, ls):
    """t with each repeated label taken once (its diagonal), labels deduplicated."""
    while len(set(ls)) != len(ls):
        c = next(c for c in ls if ls.count(c) > 1)
        i = ls.index(c)
        j = ls.index(c, i + 1)
        n = t.shape[i]
        mask_shape = [1] * t.ndim
        mask_shape[i] = mask_shape[j] = n
        mask = reshape(eye(n, dtype=t.dtype), tuple(mask_shape))
        t = sum(mul(t, mask), dim=j, dtype=t.dtype)
        ls = ls[:j] + ls[j + 1:]
    return t, ls


def _contract(labels, output, operands):
    size = _sizes(labels, operands)
    items = []
    for k, (ls, t) in enumerate(zip(labels, operands)):
        t, ls = _diagonal(t, list(ls))
        later = set(output).union(*(set(x) for x in labels[:k] + labels[k + 1:]))
        alone = [i for i, c in enumerate(ls) if c not in later]
        if alone:
            t = sum(t, dim=alone)     # (an integer sum is int64, as PyTorch's)
            ls = [c for c in ls if c in later]
        items.append((t, ls))
    t, ls = items[0]
    for k in range(1, len(items)):
        u, lu = items[k]
        needed = set(output).union(*(set(x) for _, x in items[k + 1:]))
        t, ls = _pair(t, ls, u, lu, needed, size)
    extra = [i for i, c in enumerate(ls) if c not in output]
    if extra:
        t = sum(t, dim=extra)
        ls = [c for c in ls if c in output]
    return permute(t, [ls.index(c) for c in output]) if ls != list(output) else t


def _pair(a, la, b, lb, needed, size):
    """The product of two labelled operands, summed over the labels both have that nothing
    later needs: one (batch, left, k) @ (batch, k, right) matmul."""
    batch = [c for c in la if c in lb and c in needed]
    contracted = [c for c in la if c in lb and c not in needed]
    left = [c for c in la if c not in lb]
    right = [c for c in lb if c not in la]
    a = _broadcast(a, la, size)
    b = _broadcast(b, lb, size)
    if a.dtype != b.dtype:      # (an operand summed alone became int64: promoted, as PyTorch)
        code = promote_types(a.dtype, b.dtype)
        a, b = a.to(code), b.to(code)
    a = permute(a, [la.index(c) for c in batch + left + contracted])
    b = permute(b, [lb.index(c) for c in batch + contracted + right])

    def prod(cs):
        n = 1
        for c in cs:
            n *= size[c]
        return n

    nb, nl, nk, nr = prod(batch), prod(left), prod(contracted), prod(right)
    out = matmul(reshape(a, (nb, nl, nk)), reshape(b, (nb, nk, nr)))
    shape = tuple(size[c] for c in batch + left + right)
    return reshape(out, shape), batch + left + right


def _broadcast(t, ls, size):
    target = tuple(size[c] for c in ls)
    return t if tuple(t.shape) == target else expand(t, target)


__all__ = ["einsum"]
