"""The `out=` variant of an op_db entry (op_db's `supports_out`), checked against torch on the
entry's first sample of one dtype column (the walk's first that ran: CI time stays small).

Both sides run under no_grad (out= refuses autograd, which tests/backend/test_out_keyword.py
checks) with an empty out of the result's dtype (a tuple of them for a tuple result):
- torchic's values and dtypes must be torch's, and what it returns must be `out` itself
  (each returned tensor the out tensor given for it);
- dtype rules (api/out.py's kinds): for a float32 result, an int64 out and (where the
  backend holds it) a float64 one: torchic refuses it (RuntimeError) exactly where torch
  does, and writes torch's values where torch writes it.
Only the entry's function variant is checked, where torchic resolves it as a function of
its own (an op_db lambda does not pass `out` through).
"""

import torch

import torchic


def _outs(ref, lib, name_of):
    """An empty out of `lib` (torch or torchic) per tensor of torch's result `ref`, of the
    dtype named name_of(its torch dtype)."""
    if isinstance(ref, torch.Tensor):
        return lib.empty(0, dtype=getattr(lib, name_of(ref.dtype)))
    return tuple(lib.empty(0, dtype=getattr(lib, name_of(r.dtype))) for r in ref)


def check_out(op, tc_fn, ref, holds, h):
    """Raise h.Mismatch (or any error) where torchic's out= differs from torch's on the
    Reference `ref` (h: the harness module); None when there is nothing to check."""
    s = ref.sample
    if not isinstance(ref.value, (torch.Tensor, tuple, list)) or \
            not all(isinstance(r, torch.Tensor) for r in h._flat(ref.value)):
        return None
    s_input, s_args, s_kwargs = h._clone_args(s)
    t_out = _outs(ref.value, torch, lambda d: str(d).replace("torch.", ""))
    try:
        with torch.no_grad():
            got_t = h._call(lambda *a, **k: op.op(*a, **k, out=t_out), s_input, s_args,
                            s_kwargs)
    except Exception:
        return None          # torch itself refuses this sample's out=
    want = [h._expected_dtype(r.dtype, holds) for r in h._flat(ref.value)]
    if None in want:
        return None          # a result dtype the backend does not hold
    conv = h.Converted(holds)
    inp = h.to_torchic(s_input, conv, grad=False)
    args = h.to_torchic(list(s_args), conv, grad=False)
    kwargs = h.to_torchic(dict(s_kwargs), conv, grad=False)
    it = iter(want)
    o = _outs(ref.value, torchic, lambda d: next(it))
    with torchic.no_grad():
        got = h._call(lambda *a, **k: tc_fn(*a, **k, out=o), inp, args, kwargs)
    if got_t is None:            # a list out (unbind_copy ...): torch returns None
        if got is not None:
            raise h.Mismatch(f"out=: torch returns None, torchic {type(got).__name__}")
        got_t, got = t_out, o
    if isinstance(o, torchic.Tensor):
        if got is not o:
            raise h.Mismatch("out=: the result returned is not `out`")
    elif len(got) != len(o) or any(g is not x for g, x in zip(got, o)):
        raise h.Mismatch("out=: the tensors returned are not the out tensors")
    h.compare(o, got_t if isinstance(got_t, torch.Tensor) else tuple(got_t),
              h.ATOL * conv.scale, h.RTOL, holds, "out=")
    _check_refusal(op, tc_fn, ref, holds, h)
    return True


def _check_refusal(op, tc_fn, ref, holds, h):
    """An out of another dtype for a float32 result (int64; float64 where the backend holds
    it): torchic refuses it (RuntimeError) exactly where torch does, and where torch writes
    it, torchic writes the same values."""
    if not isinstance(ref.value, torch.Tensor) or ref.value.dtype != torch.float32:
        return
    for name in ("int64", "float64"):
        if name not in holds:
            continue
        s_input, s_args, s_kwargs = h._clone_args(ref.sample)
        t_out = torch.empty(0, dtype=getattr(torch, name))
        try:
            with torch.no_grad():
                h._call(lambda *a, **k: op.op(*a, **k, out=t_out), s_input, s_args, s_kwargs)
            refused = False
        except RuntimeError:
            refused = True
        except Exception:
            continue
        conv = h.Converted(holds)
        inp = h.to_torchic(s_input, conv, grad=False)
        args = h.to_torchic(list(s_args), conv, grad=False)
        kwargs = h.to_torchic(dict(s_kwargs), conv, grad=False)
        o = torchic.empty(0, dtype=getattr(torchic, name))
        try:
            with torchic.no_grad():
                h._call(lambda *a, **k: tc_fn(*a, **k, out=o), inp, args, kwargs)
        except RuntimeError as e:
            if refused:
                continue
            raise h.Mismatch(f"out=: torch writes a float32 result into a {name} out, "
                             f"torchic refuses it: {str(e)[:120]}") from e
        if refused:
            raise h.Mismatch(f"out=: torch refuses a {name} out for a float32 result "
                             f"(RuntimeError), torchic does not")
        if tuple(o.shape) != tuple(t_out.shape) or o.dtype.name != name:
            raise h.Mismatch(f"out= ({name}): shape {tuple(o.shape)} {o.dtype}, torch "
                             f"{tuple(t_out.shape)} {t_out.dtype}")
        # a float32 result cast to out's dtype: compared at float32's tolerance
        h._close(o.numpy(), t_out.numpy(), h.ATOL * conv.scale, h.RTOL, f"out= ({name})")
