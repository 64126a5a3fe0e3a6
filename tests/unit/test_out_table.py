"""api/out.py's table (OUT) against torch's own signatures: every function torchic exports
(`torchic.*`, `torchic.linalg.*`, `torchic.nn.functional.*`) whose torch counterpart accepts
`out=` accepts it too, and the table names no function torch refuses it for.

torch's answer is read from torch itself: a Python function's signature, else (a builtin)
the message of its argument parser when called with `out=` set to a non-tensor: "argument
'out' must be ..." or an overload list showing "out = None" (accepted), "unexpected keyword
argument 'out'" or an overload list without it (refused); "unrecognized keyword arguments"
(too few arguments to pick an overload) says nothing, and the next arguments are tried.
"""

import inspect

import pytest

torch = pytest.importorskip("torch")

import torchic  # noqa: E402
from torchic.api.out import OUT  # noqa: E402

NAMESPACES = (("", torchic, torch), ("linalg.", torchic.linalg, torch.linalg),
              ("nn.functional.", torchic.nn.functional, torch.nn.functional))


class _Probe:
    pass


def _probe_args():
    t = torch.ones(2, 2)
    i = torch.zeros(2, 2, dtype=torch.long)
    return [(t,), (t, t), (t, t, t), (t, t, t, t), (2,), (2, 2), ((2,), 1.0), (t, 0),
            (t, 0, 0), ([t, t],), ([t, t], 0), (t, 0, i), (t, 0, i, t), (t, 0, i, t, "sum"),
            (t, 1, 0, 2), (t, 0, 0, 2), (t, (2,)), (t, 2.0), (0, t), (t, (2,), (1,))]


def torch_accepts_out(fn):
    """True / False: whether torch's `fn` takes out=; None where its parser never said."""
    try:
        return "out" in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        pass
    for args in _probe_args():
        try:
            fn(*args, out=_Probe())
        except TypeError as e:
            m = str(e)
            if "unexpected keyword argument 'out'" in m or "takes no keyword" in m:
                return False
            if "argument 'out'" in m or "out = None" in m:
                return True
            if "invalid combination" in m and "unrecognized keyword" not in m:
                return False
        except Exception:
            continue
    return None


def _exports():
    """(table key, torchic function, torch function) of every exported function that torch
    has under the same name."""
    for prefix, ours, theirs in NAMESPACES:
        names = getattr(ours, "__all__", None) or [n for n in dir(ours) if not n.startswith("_")]
        for name in names:
            fn, ref = getattr(ours, name, None), getattr(theirs, name, None)
            if callable(fn) and not isinstance(fn, type) and callable(ref) \
                    and not isinstance(ref, type):
                yield prefix + name, fn, ref


def _takes_out(fn):
    try:
        return "out" in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


@pytest.fixture(scope="module")
def torch_side():
    return {key: torch_accepts_out(ref) for key, _, ref in _exports()}


def test_every_export_torch_gives_out_takes_it(torch_side):
    lacking = sorted(key for key, fn, _ in _exports() if torch_side[key] and not _takes_out(fn))
    assert not lacking, f"torch's counterpart takes out=, torchic's does not: {lacking}"


def test_the_table_names_no_function_torch_refuses_out_for(torch_side):
    wrong = sorted(key for key in OUT if torch_side.get(key) is False)
    assert not wrong, f"api/out.py's OUT lists functions torch gives no out=: {wrong}"


def test_the_table_names_exported_functions():
    exported = {key for key, _, _ in _exports()}
    assert not sorted(set(OUT) - exported), sorted(set(OUT) - exported)


def test_out_count_is_reported(torch_side):
    """The figure the report gives: exported functions taking out= (at least the table)."""
    taking = [key for key, fn, _ in _exports() if _takes_out(fn)]
    assert len(taking) >= len(OUT) - 5, (len(taking), len(OUT))
