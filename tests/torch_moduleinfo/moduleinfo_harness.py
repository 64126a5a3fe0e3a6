"""Walk PyTorch's ModuleInfo database (module_db) and check torchic.nn against torch.nn,
input by input.

The design, in the order a run goes:

1. **Entries.** Every module_db entry (`nn.BatchNorm1d` ...) is mapped to torchic by its
   class name: `torch.nn.X` -> `torchic.nn.X` (so modules that land later are walked with no
   change here). None: "missing" (reported, not failed). skips.py declares the entries out
   of scope, each with its reason.
2. **dtypes and modes.** float32 and float64 (where the backend holds it and the entry
   supports it), each in train and in eval mode: `module_inputs_func(module_info, "cpu",
   dtype, requires_grad=True, training=mode)`, torch's generators seeded per (entry, dtype,
   mode) first, so every run and backend sees the same inputs. Tensors are converted as the
   OpInfo walk converts them (its `to_torchic`), never re-drawn.
3. **One input.** torch's module is built from the input's constructor arguments (torch's
   generator seeded), cast to the dtype and put in the mode; torchic's module is built from
   the same arguments (converted), cast likewise, and given torch's state through
   `load_state_dict` (strict: the parameter and buffer names must be PyTorch's). The forward
   runs on both (both generators seeded with SEED first); compared: the outputs, every
   floating parameter's gradient and every input's gradient (backward of sum(out_k * w_k),
   w_k a fixed random cotangent, against `torch.autograd.grad`), and the state after the
   forward (BatchNorm's running statistics, num_batches_tracked).
4. **Outcome** per entry on the current backend: pass (every input in every dtype and mode),
   fail (the first differing input, with its description and what differs), skip (skips.py,
   or every input needs what the backend lacks), missing. An input on which torch itself
   raises is not counted.

The torch side of every input (state, outputs, gradients) is computed once per process and
cached, so the coverage script's walk over every backend runs torch once; the baseline test
drops it after each backend's walk (`forget_references`).
"""

import os
import random
import sys
import zlib

import numpy as np
import torch

import torchic
import torchic.nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "torch_opinfo"))
import db_walk  # noqa: E402
import opinfo_harness as oh  # noqa: E402
from module_skips import skip_reason  # noqa: E402

SEED = oh.SEED
DTYPES = ("float32", "float64")
MODES = (True, False)          # training, eval

_DB = None
_REF_CACHE = {}


def forget_references():
    """Drop the cached torch side of every input (db_walk.check_baseline, after a walk)."""
    _REF_CACHE.clear()


def module_db():
    """PyTorch's module_db (loaded once per process; op_db's loader keeps the hypothesis
    profile as it was)."""
    global _DB
    if _DB is None:
        oh.op_db()    # the same import-time care (common_utils' hypothesis profile)
        from torch.testing._internal.common_modules import module_db as db
        _DB = list(db)
    return _DB


def entry_id(info):
    """The entry's name in reports and passing.txt (`nn.BatchNorm1d`)."""
    return info.name


in_webgpu_sample = db_walk.in_sample     # webgpu on lavapipe: 1 entry in 3 unless full


def full_walk():
    """TORCHIC_MODULEINFO=full: every backend runs every entry."""
    return os.environ.get("TORCHIC_MODULEINFO") == "full"


def torchic_class(info):
    """torchic.nn's class of the same name as the entry's torch.nn class, or None."""
    cls = getattr(torchic.nn, info.module_cls.__name__, None)
    return cls if isinstance(cls, type) and issubclass(cls, torchic.nn.Module) else None


# ---------------------------------------------------------------- the torch side

class Reference:
    """torch's side of one module input: the module's state before the forward (numpy),
    the forward's result, its gradients (by parameter name, and per input leaf), the
    cotangents, and the state after."""

    def __init__(self, index, minput, before, value, param_grads, input_grads, cot, after):
        self.index, self.minput = index, minput
        self.before, self.value, self.after = before, value, after
        self.param_grads, self.input_grads, self.cot = param_grads, input_grads, cot


def _state(module):
    return {k: v.detach().clone() for k, v in module.state_dict().items()}


def _inputs(info, tdt, training):
    """module_db's inputs of the entry in torch dtype `tdt` and mode, drawn once per process
    from seeded generators (Python's `random` too), their states put back after."""
    seed = zlib.crc32(f"{entry_id(info)}|{tdt}|{training}".encode())
    py_state = random.getstate()
    random.seed(seed)
    try:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            return list(info.module_inputs_func(info, device="cpu", dtype=tdt,
                                                requires_grad=True, training=training))
    finally:
        random.setstate(py_state)


def _build_torch(info, minput, tdt, training):
    c = minput.constructor_input
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(SEED)
        m = info.module_cls(*c.args, **c.kwargs)
    m.to(tdt)
    m.train(training)
    return m


def _torch_reference(info, minput, index, tdt, training):
    """torch's Reference of one input (None where torch raises)."""
    try:
        m = _build_torch(info, minput, tdt, training)
        before = _state(m)
        f = minput.forward_input
        args, kwargs = oh._clone_args(_Sample(f.args, f.kwargs), keep_grad=True)[1:]
        torch.manual_seed(SEED)
        value = m(*args, **kwargs)
    except Exception:
        return None
    outs = oh._flat(value)
    cot = oh._cotangents(outs, index)
    params = [(n, p) for n, p in m.named_parameters() if p.requires_grad]
    leaves = [t for t in oh._flat([list(args), list(kwargs.values())])
              if isinstance(t, torch.Tensor) and t.requires_grad]
    pairs = [(o, torch.from_numpy(w).to(o.dtype)) for o, w in zip(outs, cot) if w is not None]
    param_grads = input_grads = None
    if pairs and (params or leaves):
        try:
            grads = torch.autograd.grad([o for o, _ in pairs], [p for _, p in params] + leaves,
                                        [w for _, w in pairs], allow_unused=True)
            param_grads = {n: g for (n, _), g in zip(params, grads)}
            input_grads = list(grads[len(params):])
        except Exception:
            cot = None
    else:
        cot = None
    value = tuple(v.detach() if isinstance(v, torch.Tensor) else v for v in value) \
        if isinstance(value, tuple) else (value.detach() if isinstance(value, torch.Tensor)
                                          else value)
    return Reference(index, minput, before, value, param_grads, input_grads, cot, _state(m))


class _Sample:
    """(input, args, kwargs) as oh._clone_args reads them: a forward input's args."""

    def __init__(self, args, kwargs):
        self.input, self.args, self.kwargs = None, args, kwargs


def references(info, tdt, training):
    """[Reference] of the entry's inputs in dtype `tdt` and mode (cached per process)."""
    key = (entry_id(info), str(tdt), training)
    if key not in _REF_CACHE:
        refs = []
        for i, minput in enumerate(_inputs(info, tdt, training)):
            r = _torch_reference(info, minput, i, tdt, training)
            if r is not None:
                refs.append(r)
        _REF_CACHE[key] = refs
    return _REF_CACHE[key]


# ---------------------------------------------------------------- the torchic side

def _run_input(info, cls, ref, dtype, training, holds):
    """Build torchic's module, load torch's state, run the forward and backward, compare;
    raises oh.Unsupported, oh.Mismatch or what torchic raised."""
    conv = oh.Converted(holds)
    c = ref.minput.constructor_input
    cargs = [_ctor_arg(a, conv) for a in c.args]
    ckwargs = {k: _ctor_arg(v, conv) for k, v in c.kwargs.items()}
    torchic.manual_seed(SEED)
    m = cls(*cargs, **ckwargs)
    m.to(getattr(torchic, dtype))
    m.train(training)
    state = {k: oh.to_torchic(v, conv, False) for k, v in ref.before.items()}
    m.load_state_dict(state)
    f = ref.minput.forward_input
    grad = ref.cot is not None
    args = oh.to_torchic(list(f.args), conv, grad)
    kwargs = oh.to_torchic(dict(f.kwargs), conv, grad)
    torchic.manual_seed(SEED)
    got = m(*args, **kwargs)
    atol = oh.ATOL * conv.scale
    oh.compare(got, ref.value, atol, oh.RTOL, holds)
    if grad:
        outs = oh._flat(got)
        loss = None
        for k, w in enumerate(ref.cot):
            if w is None:
                continue
            o = outs[k]
            if not getattr(o, "requires_grad", False):
                raise oh.Mismatch(f"output[{k}] has no gradient (torch's has)")
            term = (o * torchic.tensor(w, dtype=o.dtype)).sum()
            loss = term if loss is None else loss + term
        loss.backward()
        gatol = oh.GRAD_ATOL * conv.scale
        named = dict(m.named_parameters())
        for n, g_ref in ref.param_grads.items():
            g = named[n].grad if n in named else None
            _compare_grad(g, g_ref, gatol, holds, f"grad of parameter {n}")
        tc_leaves = [t for _, t in conv.leaves]
        if len(tc_leaves) != len(ref.input_grads):
            raise RuntimeError("harness: the input's differentiable tensors were not all "
                               "converted")
        for k, (g_ref, leaf) in enumerate(zip(ref.input_grads, tc_leaves)):
            _compare_grad(leaf.grad, g_ref, gatol, holds, f"grad of input {k}")
    after = m.state_dict()
    for k, v in ref.after.items():
        oh.compare(after.get(k), v, atol, oh.RTOL, holds, f"state {k} after the forward")
    torchic.sync()


def _ctor_arg(x, conv):
    """A constructor argument for torchic: a torch function (`activation=F.gelu`, a builtin
    of torch._C._nn) becomes torchic's of the same name (nn.functional's, else torchic's);
    the rest converts as the OpInfo walk's arguments do."""
    if callable(x) and not isinstance(x, (type, torch.Tensor, torch.nn.Module)) and \
            (getattr(x, "__module__", None) or "").startswith("torch"):
        name = getattr(x, "__name__", "")
        found = getattr(torchic.nn.functional, name, None) or getattr(torchic, name, None)
        if found is None:
            raise oh.Unsupported(f"a torch function argument ({name})")
        return found
    return oh.to_torchic(x, conv, False)


def _compare_grad(g, g_ref, atol, holds, what):
    if g_ref is None:
        if g is not None and np.any(g.numpy() != 0):
            raise oh.Mismatch(f"{what}: torch has none, torchic nonzero")
        return
    if g is None:
        raise oh.Mismatch(f"{what}: torchic has none")
    oh.compare(g, g_ref, atol, oh.GRAD_RTOL, holds, what)


def run_entry(info, dtypes=DTYPES, modes=MODES):
    """The entry's outcome on the current backend: a dict with `status` (pass / fail /
    missing / skip), `runs` {"float32 train": status, ...}, `reason` (the first failure or
    the skip's reason), `inputs` (compared) and `dropped` (needing what the backend lacks)."""
    eid = entry_id(info)
    result = {"entry": eid, "runs": {}, "reason": "", "inputs": 0, "dropped": 0}
    why = skip_reason(info)
    if why:
        return dict(result, status="skip", reason=why)
    cls = torchic_class(info)
    if cls is None:
        return dict(result, status="missing")
    holds = oh.held()
    supported = {str(d).replace("torch.", "") for d in info.dtypes}
    for dtype in dtypes:
        if dtype not in supported or dtype not in holds:
            continue
        tdt = getattr(torch, dtype)
        for training in modes:
            col = f"{dtype} {'train' if training else 'eval'}"
            try:
                refs = references(info, tdt, training)
            except Exception as e:            # module_db's input generator itself failed
                result["runs"][col] = "fail"
                result["reason"] = result["reason"] or f"{col}: module_inputs raised {e!r:.200}"
                continue
            status, ran = db_walk.run_refs(
                refs, lambda ref: _run_input(info, cls, ref, dtype, training, holds), result,
                lambda ref: f"{col} {ref.minput.desc or f'input {ref.index}'!r}", oh.Unsupported)
            if status == "pass" and ran == 0:
                status = "skip"
                result["reason"] = result["reason"] or f"{col}: no input ran"
            result["inputs"] += ran
            result["runs"][col] = status
    result["status"] = db_walk.overall(result["runs"])
    return result


def run_all(selected=None):
    """run_entry for every module_db entry (or those whose id is in `selected`), torch on
    one thread."""
    return db_walk.run_all(run_entry, entry_id, module_db(), selected)
