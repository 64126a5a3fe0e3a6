"""Walk PyTorch's OpInfo database (op_db) and check torchic against torch, sample by sample.

The design, in the order a run goes:

1. **Entries.** Every op_db entry (`name` + `variant_test_name`, written `name:variant`) is
   mapped to torchic: its function (`torchic.<name>`, `torchic.nn.functional.<x>` for
   `nn.functional.x`, `torchic.linalg.<x>` ..., `Tensor.<name>` for a dunder or a method-only
   entry), its method (`Tensor.<method>`) and in-place variant (`Tensor.<name>_`), each tested
   where both torch and torchic have it. A variant op_db writes as a lambda
   (`lambda x: x.T`, `wrapper_set_seed(torch.normal, ...)`) is run as that same lambda with
   its global `torch` bound to torchic. No variant resolved: "missing" (reported, not failed).
   skips.py declares the entries out of scope.
2. **dtypes.** The columns are float32, float64, int32, int64 and bool (DTYPES), each on
   the backends that hold it (`Backend.dtypes`): the entry's op_db samples in that dtype,
   given to torchic in the same dtype, and torchic's results must have torch's dtype.
   Where a backend does not hold a dtype, a tensor in it is read in its FALLBACK (int64 as
   int32 where the values fit, float64 as float32; then only the result's kind is
   checked), and the int32 column takes op_db's int64 samples for an entry with no int32;
   a sample needing any other dtype the backend lacks (complex; bool, float16, uint8,
   `dtype=torch.half` ... where not held) is left out and counted in `dropped`.
3. **Samples are torch's**, never re-drawn: `op.sample_inputs("cpu", dtype,
   requires_grad=...)` (torch's and Python's generators seeded per entry first: the
   same samples in every run) converted with `torchic.tensor(t.detach().numpy())`, keeping
   requires_grad. A contiguous torch tensor that starts inside its storage (`base[5:15]`: the
   samples of as_strided's partial views) becomes torchic's view of a copy of that whole
   storage (`torchic.as_strided`), so an op reading around it sees the same elements; a
   non-contiguous one would be rebuilt contiguous (same values) and counted in the
   result's `noncontiguous`; in torch 2.13 `sample_inputs` gives none (the non-contiguous
   ones are in op_db's `reference_inputs`, which this walk does not run), so the count is 0.
4. **Compare.** Values: float32 with `atol = ATOL * scale` (scale: the largest |value| of
   the sample's float inputs, at least 1) and `rtol = RTOL` (torch.testing's float32 figures,
   see ATOL), NaN where torch has NaN, infinities of the same sign; integers and bools
   exactly; dtypes by kind (float32 where torch's is floating, int32 where integer);
   shapes exactly; Python scalars likewise. Gradients (float32, where op_db says the entry
   has them): backward of sum(out_k * w_k) over the outputs, w_k a fixed random cotangent,
   against `torch.autograd.grad` of the same sum (GRAD_ATOL, GRAD_RTOL), through the
   function variant (the method where torchic has no function; the other variants' values
   are compared).
5. **Random ops** (normal, bernoulli, rand_like, dropout ...): torchic's generator is
   PyTorch's CPU generator bit for bit, so both are seeded with the same `manual_seed`
   before every call and compared value for value like any op.
6. **Outcome** per (entry, dtype) on the current backend: pass (every sample of every
   resolved variant), fail (a sample differs, or torchic raises where torch does not: the
   first such message is kept), skip (every sample needs a dtype torchic lacks). A sample on
   which torch itself raises is not counted. The entry's outcome on a backend: missing, skip,
   fail if any dtype fails, else pass.
7. **out=** (op_db's `supports_out`): the function variant's `out=` on the first sample of
   the first dtype column that passed (out_check.py): values, `result is out`, and an integer
   out refused where torch refuses it; `result["out"]` says pass / fail / None (unchecked).
   A sample whose result the backend cannot hold (skips.HELD_RULE: float64 on webgpu) is
   left out like one needing a lacking dtype.

The torch side of every sample (converted inputs, torch's values and gradients) is computed
once per process and cached, so the coverage script's walk over every backend runs torch once;
the baseline test drops it after each backend's walk (`forget_references`: it would slow every
later scan of the test session's heap).
"""

import dis
import gc
import os
import random
import sys
import types
import zlib

import numpy as np
import torch

import db_walk
import torchic
import out_check
from skips import GRAD_SKIPS, HELD_RULE, HELD_REFUSALS, skip_reason

SEED = 1234                  # the manual_seed both generators get before every call
# the dtype columns walked, each on the backends that hold it (the half and narrow dtypes
# are not walked: where a backend holds them, a sample's tensors and results in them are
# compared all the same)
DTYPES = ("float32", "float64", "int32", "int64", "bool")
# float32 tolerances. Values: torch.testing's float32 atol 1e-5 (times the sample's largest
# input magnitude: sums and products of inputs up to 9 cancel to that scale) and 4 x its rtol
# 1.3e-6 (webgpu's pow is 1.4e-6 off on lavapipe). Gradients: rtol 1e-4 (a backward chains
# several float32 ops; pow's exponent gradient x^y log x differs by 4e-5 between the two)
ATOL, RTOL = 1e-5, 5.2e-6
GRAD_ATOL, GRAD_RTOL = 1e-5, 1e-4
# the other float dtypes: torch.testing's (atol, rtol) for them
OTHER_TOLERANCES = {"float64": (1e-7, 1e-7), "float16": (1e-5, 1e-3), "bfloat16": (1e-5, 1.6e-2)}

_OP_DB = None
_REF_CACHE = {}
_SAMPLE_CACHE = {}


def op_db():
    """PyTorch's op_db (loading it takes seconds: once per process)."""
    global _OP_DB
    if _OP_DB is None:
        # its import loads a hypothesis profile of PyTorch's (common_utils): the session's
        # default settings are put back after it, for the hypothesis tests that follow
        try:
            import hypothesis
        except ImportError:
            hypothesis = None
        if hypothesis is not None:
            hypothesis.settings.register_profile("torchic-before-op_db",
                                                 parent=hypothesis.settings.default)
        from torch.testing._internal.common_methods_invocations import op_db as db
        if hypothesis is not None:
            hypothesis.settings.load_profile("torchic-before-op_db")
        from torch.testing._internal import common_utils
        from torch.testing._internal.opinfo import core
        common_utils.extract_test_fn = core.extract_test_fn = _test_fn_of_the_stack
        _OP_DB = list(db)
        # op_db and torch are ~300k objects that live as long as the process: moved out of
        # the collector's generations, so that no later scan walks them (each full
        # collection, and torchic.compile's gc.get_referrers at every recording: a test
        # session's compile tests took 3x as long). Whatever else lives now is frozen too;
        # a frozen object is still freed when its last reference goes.
        gc.collect()
        gc.freeze()
    return _OP_DB


def forget_references():
    """Drop the cached torch side of every sample (db_walk.check_baseline, after a walk)."""
    _REF_CACHE.clear()
    _SAMPLE_CACHE.clear()


def _test_fn_of_the_stack():
    """torch's common_utils.extract_test_fn (the unittest test method on the stack, else
    None: always None here) with the same frames and answer, less inspect.stack(), which
    reads every frame's source file and module: each sample_inputs call makes two, about
    0.1 s under pytest's deep stack (450 of the 560 s the workers walk took)."""
    import unittest
    try:
        frame = sys._getframe(1)
        while frame is not None:
            self_val = frame.f_locals.get("self")
            if isinstance(self_val, unittest.TestCase):
                *_, cls_name, test_name = self_val.id().rsplit(".", 2)
                if cls_name == type(self_val).__name__ and test_name.startswith("test"):
                    return getattr(self_val, test_name).__func__
            frame = frame.f_back
    except Exception:
        pass
    return None


def entry_id(op):
    """The entry's name in reports and passing.txt: `name` or `name:variant`."""
    return op.name + (f":{op.variant_test_name}" if op.variant_test_name else "")


in_webgpu_sample = db_walk.in_sample     # webgpu on lavapipe: 1 entry in 3 unless full


def full_walk():
    """TORCHIC_OPINFO=full: every backend runs every entry."""
    return os.environ.get("TORCHIC_OPINFO") == "full"


# ---------------------------------------------------------------- 1. mapping to torchic

class Unsupported(Exception):
    """A sample needs something torchic does not hold (a dtype, a sparse layout ...)."""


def _is_op(obj):
    return callable(obj) and not isinstance(obj, (types.ModuleType, type, torchic.DType))


def _resolve_path(name):
    """torchic's object at dotted `name` (`nn.functional.relu`), or None."""
    obj = torchic
    for part in name.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def _tensor_attr(name):
    return name if name and hasattr(torchic.Tensor, name) else None


def _seeded(fn, *args, **kwargs):
    """op_db's wrapper_set_seed, for the torchic side: the same seed, then the call."""
    torchic.manual_seed(42)
    return fn(*args, **kwargs)


def _rebound(fn):
    """op_db's lambda `fn` with its global `torch` bound to torchic."""
    env = dict(fn.__globals__, torch=torchic, wrapper_set_seed=_seeded)
    return types.FunctionType(fn.__code__, env, fn.__name__, fn.__defaults__, fn.__closure__)


def _is_testing_lambda(fn):
    return isinstance(fn, types.FunctionType) and fn.__module__.startswith("torch.testing")


def _tensor_method_name(fn):
    """The Tensor attribute name of a torch.Tensor method, or None."""
    name = getattr(fn, "__name__", None)
    return name if name and getattr(torch.Tensor, name, None) is fn else None


def _names_resolve(fn):
    """Whether every attribute an op_db lambda names exists in torchic: each chain from the
    global `torch` (`torch.nn.functional.dropout`, `torch.Tensor.item`) on the torchic
    module, each other attribute (`x.mT`, `x.clone()`) on torchic's Tensor."""
    chain = None
    for ins in dis.get_instructions(fn):
        if ins.opname == "LOAD_GLOBAL":
            chain = torchic if ins.argval == "torch" else None
        elif ins.opname in ("LOAD_ATTR", "LOAD_METHOD"):
            obj = chain if chain is not None else torchic.Tensor
            chain = getattr(obj, ins.argval, None)
            if chain is None:
                return False
        else:
            chain = None
    return True


def _torchic_variant(op, kind, fn):
    """torchic's callable for torch's variant `fn` of entry `op`, or None."""
    if _is_testing_lambda(fn):
        return _rebound(fn) if _names_resolve(fn) else None
    if kind == "function" and not op.name.startswith("__") and not _tensor_method_name(fn):
        tc = _resolve_path(op.name)
        return tc if _is_op(tc) else None
    name = op.name if kind == "function" and op.name.startswith("__") else \
        _tensor_method_name(fn) or getattr(fn, "__name__", None)
    attr = _tensor_attr(name)
    return getattr(torchic.Tensor, attr) if attr else None


def variants(op):
    """[(kind, torch callable, torchic callable)] for the variants torch and torchic both
    have; kind is "function", "method" or "inplace"."""
    out = []
    for kind, fn in (("function", op.op), ("method", op.method_variant),
                     ("inplace", op.inplace_variant)):
        tc = None if fn is None else _torchic_variant(op, kind, fn)
        if tc is not None:
            out.append((kind, fn, tc))
    return out


# ---------------------------------------------------------------- 2-3. converting samples

_NAMES = ("float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8",
          "uint8", "bool")
_DTYPE_MAP = {getattr(torch, n): n for n in _NAMES}      # torch dtype -> its name
# a tensor of a dtype the backend does not hold is read in this one, where it holds that
FALLBACK = {"int64": "int32", "float64": "float32"}
_INT_RANGE = (-2 ** 31, 2 ** 31 - 1)
NARROW = ("float16", "bfloat16", "uint8", "int8", "int16")   # a result in one: dropped
GRAD_DTYPES = (torch.float32, torch.float64)      # where gradients are compared


def held():
    """The names of the dtypes the current backend holds (`Backend.dtypes`, by code)."""
    from torchic import dispatcher
    codes = set(getattr(dispatcher.runtime().backend, "dtypes", ("f32", "i32")))
    return {n for n in _NAMES if isinstance(getattr(torchic, n, None), torchic.DType)
            and getattr(torchic, n).code in codes}


def _torch_dtypes(op):
    return sorted(str(d).replace("torch.", "") for d in op.supported_dtypes("cpu"))


def sample_dtype(op, dtype, holds):
    """The torch dtype whose samples feed torchic's `dtype` column on a backend holding
    `holds`, or None: the column's own, where both have it; for int32, op_db's int64
    samples read as int32 where the entry has no int32 and the backend no int64."""
    supported = op.supported_dtypes("cpu")
    own = getattr(torch, dtype)
    if dtype in holds and own in supported:
        return own
    if dtype == "int32" and "int32" in holds and "int64" not in holds \
            and torch.int64 in supported:
        return torch.int64
    return None


class Converted:
    """A sample's arguments as torchic values, with the leaves gradients are compared on."""

    def __init__(self, holds):
        self.holds = holds      # the dtype names the backend holds
        self.leaves = []        # [(torch tensor, torchic tensor)] that require grad
        self.noncontiguous = 0  # torch tensors rebuilt contiguous
        self.scale = 1.0        # the largest |value| of the float inputs (at least 1)


def to_torchic(x, conv, grad=True):
    """torchic's value for torch value `x` (tensors nested in lists / tuples / dicts);
    raises Unsupported for what torchic cannot hold."""
    if isinstance(x, torch.Tensor):
        if x.layout != torch.strided or x.is_quantized:
            raise Unsupported(f"a {x.layout} tensor")
        name = _DTYPE_MAP.get(x.dtype)
        if name not in conv.holds:
            name = FALLBACK.get(name)
            if name not in conv.holds:
                raise Unsupported(f"a {x.dtype} tensor")
        x0 = x.detach().resolve_neg()
        a = (x0.float() if x.dtype == torch.bfloat16 else x0).numpy()
        if not x.is_contiguous():
            conv.noncontiguous += 1
        if name == "int32" and x.dtype == torch.int64:
            if a.size and (a.min() < _INT_RANGE[0] or a.max() > _INT_RANGE[1]):
                raise Unsupported("an int64 value past int32")
        if x.is_floating_point() and a.size:
            finite = np.abs(a[np.isfinite(a)])
            if finite.size:
                conv.scale = max(conv.scale, float(finite.max()))
        rg = bool(grad and x.requires_grad and x.is_floating_point())
        t = _in_storage(x, x0, name) if x.storage_offset() and x.is_contiguous() else None
        if t is None:
            t = torchic.tensor(a.copy(), dtype=getattr(torchic, name), requires_grad=rg)
        elif rg:
            t.requires_grad_(True)
        if rg:
            conv.leaves.append((x, t))
        return t
    if isinstance(x, torch.Size):
        return tuple(x)
    if isinstance(x, (list, tuple)):
        items = [to_torchic(v, conv, grad) for v in x]
        return type(x)(items) if type(x) in (list, tuple) else tuple(items)
    if isinstance(x, dict):
        return {k: to_torchic(v, conv, grad) for k, v in x.items()}
    if isinstance(x, torch.dtype):
        if _DTYPE_MAP.get(x) not in conv.holds:
            raise Unsupported(f"dtype={x}")
        return getattr(torchic, _DTYPE_MAP[x])
    if isinstance(x, torch.device):
        return torchic.device(str(x))
    if isinstance(x, (torch.memory_format, torch.layout)):
        if x in (torch.sparse_coo, torch.sparse_csr, torch.sparse_csc, torch.sparse_bsr,
                 torch.sparse_bsc):
            raise Unsupported(f"layout={x}")
        # torchic's object of that name (torchic.contiguous_format ...), else torch's own:
        # torchic accepts it where it changes nothing, or fails
        return getattr(torchic, str(x).replace("torch.", ""), x)
    if isinstance(x, torch.Generator):
        raise Unsupported("a torch.Generator argument")
    if isinstance(x, torch.nn.Module):
        return _torchic_module(x)
    return x


def _in_storage(x, x0, name):
    """A contiguous torch tensor that starts inside its storage (`base[5:15]`, as_strided's
    partial views) as torchic's view of a copy of that whole storage (a leaf, like torch's
    detached view), so an op reading the storage around it (as_strided) sees the same
    elements; None where a storage element is not representable (bfloat16)."""
    if x.dtype == torch.bfloat16:
        return None
    n = x.untyped_storage().nbytes() // x.element_size()
    whole = torch.as_strided(x0, (n,), (1,), 0).numpy().copy()
    if name == "int32" and x.dtype == torch.int64 and n and \
            (whole.min() < _INT_RANGE[0] or whole.max() > _INT_RANGE[1]):
        return None
    base = torchic.tensor(whole, dtype=getattr(torchic, name))
    return torchic.as_strided(base, tuple(x.shape), x.stride(), x.storage_offset()).detach()


def _torchic_module(m):
    """torchic.nn's module of the class name of torch module `m` (a sample's
    distance_function=nn.PairwiseDistance()), with m's settings; a module holding
    parameters or buffers, or of a class torchic lacks, is Unsupported."""
    cls = getattr(torchic.nn, type(m).__name__, None)
    if cls is None or any(True for _ in m.parameters()) or any(True for _ in m.buffers()):
        raise Unsupported(f"a torch module argument ({type(m).__name__})")
    out = cls.__new__(cls)
    torchic.nn.Module.__init__(out)
    for k, v in vars(m).items():
        if not k.startswith("_") and k != "training":
            setattr(out, k, v)
    return out.train(m.training)


def _clone_args(sample, keep_grad=False):
    """(input, args, kwargs) of a torch sample, detached copies (for in-place variants;
    keep_grad: the copies require grad where the originals do)."""
    def clone(x):
        if isinstance(x, torch.Tensor):
            return x.detach().clone().requires_grad_(keep_grad and x.requires_grad)
        if isinstance(x, (list, tuple)):
            return type(x)(clone(v) for v in x) if type(x) in (list, tuple) else x
        if isinstance(x, dict):
            return {k: clone(v) for k, v in x.items()}
        return x
    return clone(sample.input), clone(sample.args), clone(sample.kwargs)


# ---------------------------------------------------------------- 4. comparing

class Mismatch(AssertionError):
    """torchic's result differs from torch's."""


def _flat(x):
    if isinstance(x, (list, tuple)):
        return [y for v in x for y in _flat(v)]
    return [x]


def _close(got, ref, atol, rtol, what):
    got = np.asarray(got, np.float64)
    ref = np.asarray(ref, np.float64)
    if got.shape != ref.shape:
        raise Mismatch(f"{what}: shape {got.shape}, torch {ref.shape}")
    nan_g, nan_r = np.isnan(got), np.isnan(ref)
    inf_same = np.isinf(ref) & (got == ref)
    bad = (nan_g != nan_r) | (~nan_r & ~inf_same &
                              ~(np.abs(got - ref) <= atol + rtol * np.abs(ref)))
    if bad.any():
        i = tuple(int(k) for k in np.argwhere(bad)[0])
        raise Mismatch(f"{what}: {int(bad.sum())} of {ref.size} values differ, e.g. at {i} "
                       f"torchic {got[i]!r} vs torch {ref[i]!r} (atol {atol:.2g}, rtol {rtol:g})")


def _expected_dtype(ref_dtype, holds):
    """The dtype name torchic's result must have for a torch result of `ref_dtype`: the
    same where the backend holds it, else its FALLBACK (None: only the kind is checked)."""
    name = _DTYPE_MAP.get(ref_dtype)
    return name if name in holds else FALLBACK.get(name)


def compare(got, ref, atol, rtol, holds, what="output"):
    """Raise Mismatch unless torchic's result `got` matches torch's `ref` (nested), on a
    backend holding the dtypes `holds`. `atol` / `rtol` are float32's; a float64, float16
    or bfloat16 result gets its own (OTHER_TOLERANCES, atol scaled as float32's)."""
    if isinstance(ref, torch.Tensor):
        if not isinstance(got, torchic.Tensor):
            raise Mismatch(f"{what}: torch returns a tensor, torchic {type(got).__name__}")
        if tuple(got.shape) != tuple(ref.shape):
            raise Mismatch(f"{what}: shape {tuple(got.shape)}, torch {tuple(ref.shape)}")
        want = _expected_dtype(ref.dtype, holds)
        have = got.dtype.name
        if want is not None and have != want or want is None and ref.dtype != torch.bool \
                and ref.is_floating_point() != got.dtype.is_floating_point:
            raise Mismatch(f"{what}: dtype {got.dtype}, torch {ref.dtype}")
        g = (got.detach().float() if have == "bfloat16" else got.detach()).numpy()
        r = ref.detach().resolve_neg()
        r = (r.float() if r.dtype == torch.bfloat16 else r).numpy()
        if ref.is_floating_point():
            if have in OTHER_TOLERANCES:
                a64, rtol = OTHER_TOLERANCES[have]
                atol = atol / ATOL * a64
            _close(g, r, atol, rtol, what)
        else:
            if not np.array_equal(g.astype(np.int64), r.astype(np.int64)):
                bad = np.argwhere(g.astype(np.int64) != r.astype(np.int64))
                i = tuple(int(k) for k in bad[0]) if len(bad) else ()
                raise Mismatch(f"{what}: integer values differ, e.g. at {i}: "
                               f"torchic {g[i] if len(bad) else g} vs torch {r[i] if len(bad) else r}")
    elif isinstance(ref, (tuple, list)):
        if not isinstance(got, (tuple, list)) or len(got) != len(ref):
            raise Mismatch(f"{what}: torch returns a sequence of {len(ref)}, torchic {got!r:.80}")
        for k, (g, r) in enumerate(zip(got, ref)):
            compare(g, r, atol, rtol, holds, f"{what}[{k}]")
    elif isinstance(ref, float) and not isinstance(ref, bool):
        if not isinstance(got, (int, float)) or isinstance(got, bool):
            raise Mismatch(f"{what}: torch returns {ref!r}, torchic {got!r:.80}")
        _close(got, ref, atol, rtol, what)
    elif isinstance(ref, (int, bool)):
        if type(got) is not type(ref) or got != ref:
            raise Mismatch(f"{what}: torch returns {ref!r}, torchic {got!r:.80}")
    elif ref is not None or got is not None:
        if got != ref:
            raise Mismatch(f"{what}: torch returns {ref!r:.80}, torchic {got!r:.80}")


def _cotangents(outs, seed):
    """A fixed random cotangent per float output that requires grad (None for the others)."""
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(tuple(o.shape)).astype(np.float32)
            if isinstance(o, torch.Tensor) and o.requires_grad else None for o in outs]


# ---------------------------------------------------------------- 5-6. running an entry

class Reference:
    """The torch side of one sample and variant: converted torchic arguments are made per
    run (they are tensors of the current runtime); this keeps torch's result and grads."""

    def __init__(self, sample, index, value, grads, cot, before=None):
        self.sample, self.index, self.value, self.grads, self.cot = sample, index, value, grads, cot
        # the sample's (input, args, kwargs) as they were before torch ran it: an op that
        # writes an argument in place (batch_norm's running statistics) changes the sample
        self.before = before


def _call(fn, inp, args, kwargs):
    torch.manual_seed(SEED)
    torchic.manual_seed(SEED)
    return fn(inp, *args, **kwargs)


def _torch_reference(op, kind, fn, sample, index, want_grad):
    """torch's result (and gradients) of `fn` on `sample`; None if torch raises."""
    try:
        if kind == "inplace":
            inp, args, kwargs = _clone_args(sample)
            with torch.no_grad():
                value = _call(fn, inp, args, kwargs)
            return Reference(sample, index, value, None, None)
        before = _clone_args(sample, keep_grad=True)
        value = _call(fn, sample.input, sample.args, sample.kwargs)
    except Exception:
        return None
    grads = cot = None
    if want_grad:
        outs = _flat(value)
        cot = _cotangents(outs, index)
        leaves = [t for t in _flat([sample.input, list(sample.args),
                                    list(sample.kwargs.values())])
                  if isinstance(t, torch.Tensor) and t.requires_grad]
        pairs = [(o, torch.from_numpy(w).to(o.dtype)) for o, w in zip(outs, cot)
                 if w is not None]
        if pairs and leaves:
            try:
                grads = torch.autograd.grad([o for o, _ in pairs], leaves,
                                            [w for _, w in pairs], allow_unused=True)
                # (sgn's gradient is a ZeroTensor, which has no numpy(): real zeros)
                grads = [torch.zeros_like(g) if g is not None and g._is_zerotensor() else g
                         for g in grads]
            except Exception:
                grads = cot = None
        else:
            cot = None
    if isinstance(value, torch.Tensor):
        value = value.detach()
    return Reference(sample, index, value, grads, cot, before)


def _samples(op, tdt):
    """op_db's samples in torch dtype `tdt` (requires_grad where it has gradients), drawn
    once per process: every variant and backend gets the same ones."""
    key = (entry_id(op), str(tdt))
    if key not in _SAMPLE_CACHE:
        grad = tdt in GRAD_DTYPES and op.supports_autograd
        # op_db draws its samples from torch's global generator (and a few from Python's
        # `random`): both seeded per entry (the same samples in every session, whatever
        # ran before), their states put back after
        seed = zlib.crc32(f"{key}".encode())
        py_state = random.getstate()
        random.seed(seed)
        try:
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(seed)
                _SAMPLE_CACHE[key] = list(op.sample_inputs("cpu", tdt, requires_grad=grad))
        finally:
            random.setstate(py_state)
    return _SAMPLE_CACHE[key]


def references(op, tdt, kind, fn, grads):
    """[Reference] of torch's variant `fn` (`kind`) over the entry's samples in torch dtype
    `tdt`, with gradients if `grads` (cached per process: each backend reuses them)."""
    key = (entry_id(op), str(tdt), kind)
    if key not in _REF_CACHE:
        want_grad = grads and tdt in GRAD_DTYPES and op.supports_autograd
        _REF_CACHE[key] = [r for r in (_torch_reference(op, kind, fn, s, i, want_grad)
                                       for i, s in enumerate(_samples(op, tdt)))
                           if r is not None]
    return _REF_CACHE[key]


def _run_sample(kind, tc_fn, ref, holds):
    """Run torchic's variant on one sample and compare; raises Unsupported or an error."""
    s = ref.sample
    for r in _flat(ref.value):
        if isinstance(r, torch.Tensor) and _DTYPE_MAP.get(r.dtype) in NARROW \
                and _DTYPE_MAP[r.dtype] not in holds:
            raise Unsupported(f"a {r.dtype} result")
    conv = Converted(holds)
    grad = ref.grads is not None
    s_input, s_args, s_kwargs = ref.before or (s.input, s.args, s.kwargs)
    inp = to_torchic(s_input, conv, grad)
    args = to_torchic(list(s_args), conv, grad)
    kwargs = to_torchic(dict(s_kwargs), conv, grad)
    try:
        if kind == "inplace":
            with torchic.no_grad():
                got = _call(tc_fn, inp, args, kwargs)
        else:
            got = _call(tc_fn, inp, args, kwargs)
    except (TypeError, OverflowError) as e:
        if any(m in str(e) for m in HELD_REFUSALS):      # skips.HELD_RULE: declared
            raise Unsupported(f"{HELD_RULE}: {str(e)[:120]}") from e
        raise
    compare(got, ref.value, ATOL * conv.scale, RTOL, holds)
    if grad:
        outs = _flat(got)
        loss = None
        for k, w in enumerate(ref.cot):
            if w is None:
                continue
            o = outs[k]
            if not getattr(o, "requires_grad", False):
                raise Mismatch(f"output[{k}] has no gradient (torch's has)")
            term = (o * torchic.tensor(w, dtype=o.dtype)).sum()
            loss = term if loss is None else loss + term
        loss.backward()
        tc_leaves = [t for _, t in conv.leaves]
        if len(tc_leaves) != len(ref.grads):
            raise RuntimeError("harness: the sample's differentiable inputs were not all "
                               "converted")
        for k, (g_ref, leaf) in enumerate(zip(ref.grads, tc_leaves)):
            g = leaf.grad
            if g_ref is None:
                if g is not None and np.any(g.numpy() != 0):
                    raise Mismatch(f"grad of input {k}: torch has none, torchic nonzero")
                continue
            if g is None:
                raise Mismatch(f"grad of input {k}: torchic has none")
            compare(g, g_ref, GRAD_ATOL * conv.scale, GRAD_RTOL, holds, f"grad of input {k}")
    torchic.sync()
    return conv.noncontiguous


def run_entry(op, dtypes=DTYPES):
    """The entry's outcome on the current backend: a dict with `status` (pass / fail /
    missing / skip), `dtypes` {dtype: status}, `variants` (those run), `lacking` (torch's
    variants torchic does not have), `reason` (the first failure or the skip's reason),
    `samples` (run), `dropped` (needing a lacking dtype) and `noncontiguous` (torch tensors
    rebuilt contiguous)."""
    eid = entry_id(op)
    result = {"entry": eid, "name": op.name, "dtypes": {}, "variants": [], "lacking": [],
              "reason": "",
              "samples": 0, "dropped": 0, "noncontiguous": 0}
    why = skip_reason(op.name, _torch_dtypes(op))
    if why:
        return dict(result, status="skip", reason=why)
    found = variants(op)
    if not found:
        return dict(result, status="missing")
    result["variants"] = [kind for kind, _, _ in found]
    result["lacking"] = [kind for kind, fn in (("function", op.op), ("method",
                         op.method_variant), ("inplace", op.inplace_variant))
                         if fn is not None and kind not in result["variants"]]
    # gradients through the function variant, else the method (in place: none)
    grad_kind = next((kind for kind, _, _ in found if kind != "inplace"), None)
    holds = held()
    for dtype in dtypes:
        tdt = sample_dtype(op, dtype, holds)
        if tdt is None:
            continue
        status, ran, dropped = "pass", 0, result["dropped"]
        for kind, fn, tc in found:
            try:
                refs = references(op, tdt, kind, fn,
                                  grads=kind == grad_kind and op.name not in GRAD_SKIPS)
            except Exception as e:       # op_db's sample generator itself failed
                status = "fail"
                result["reason"] = result["reason"] or f"{dtype}: sample_inputs raised {e!r:.200}"
                break

            def run_one(ref, kind=kind, tc=tc):
                result["noncontiguous"] += _run_sample(kind, tc, ref, holds)
            kind_status, kind_ran = db_walk.run_refs(
                refs, run_one, result, lambda ref, kind=kind: f"{dtype} {kind} sample {ref.index}",
                Unsupported)
            ran += kind_ran
            status = "fail" if kind_status == "fail" else status
        if status == "pass" and ran == 0:    # nothing compared: say why
            status = "skip"
            why = (f"needs a dtype {torchic.get_backend()} does not hold"
                   if result["dropped"] > dropped else "torch raises")
            result["reason"] = result["reason"] or f"{dtype}: every sample {why}"
        result["samples"] += ran
        result["dtypes"][dtype] = status
    _check_out_variant(op, found, result, holds)
    result["status"] = db_walk.overall(result["dtypes"])
    return result


def _check_out_variant(op, found, result, holds):
    """op_db's supports_out: the function variant's out= on the first sample of the first
    dtype column that passed (out_check.py); result["out"]: pass / fail / None (unchecked),
    a failure failing that column with the reason."""
    result["out"] = None
    tc = next((tc for kind, _, tc in found if kind == "function"), None)
    dtype = next((d for d, st in result["dtypes"].items() if st == "pass"), None)
    if not op.supports_out or tc is None or dtype is None or _is_testing_lambda(op.op) \
            or _is_testing_lambda(tc):
        return
    refs = references(op, sample_dtype(op, dtype, holds), "function", op.op, grads=True)
    try:
        if not refs or not out_check.check_out(op, tc, refs[0], holds, sys.modules[__name__]):
            return
        result["out"] = "pass"
    except Unsupported:
        return
    except Exception as e:
        result["out"] = "fail"
        result["dtypes"][dtype] = "fail"
        result["reason"] = result["reason"] or \
            f"{dtype} out= sample {refs[0].index}: {type(e).__name__}: {str(e)[:300]}"
        try:
            torchic.sync()
        except Exception:
            pass


def run_all(selected=None):
    """run_entry for every op_db entry (or those whose id is in `selected`), in op_db order,
    torch on one thread (CI has 2 cores, and torchic's workers use them)."""
    return db_walk.run_all(run_entry, entry_id, op_db(), selected)
