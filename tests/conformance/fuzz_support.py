"""Differential fuzzing support: shapes, layouts, values, and the torchic-vs-NumPy check.

An *example* is a list of inputs plus a torchic function and a NumPy float64
reference. Hypothesis draws the structure (shapes, layouts, which axes, op
parameters) and one seed; the values come from that seed (continuous values
make kinks and ties vanishingly rare, so gradients are well defined), or, in
"ints" mode, from small integers (ties, zeros, duplicates on purpose: values
only for ops with kinks).

Layouts. Every input is a *view* of a leaf buffer, built like this:

    core   values of shape C  (C = the input shape S with 1 on "expanded" dims,
                               maybe missing leading dims)
    stored = core.transpose(p)                    (a random permutation)
    buffer = NaN padding with `stored` placed at buffer[o0::s0, o1::s1, ...]
    view   = buffer[slices].permute(inverse p).expand(S)

so one input can be transposed, sliced with steps and an offset, and expanded
at once (or plain contiguous). The padding is NaN: a kernel that reads outside
the view turns the result into NaN and fails the check. Gradients are checked
on the *buffer* leaf (through the view ops' backward): zero outside the view,
and inside it the central finite difference of the float64 reference with
respect to each core element (perturbing a core element perturbs all its
broadcast copies, so expanded inputs and ties from duplication are handled).
"""

import math
import os
import warnings

import numpy as np
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

import torchic
from torchic import testing

# -- example counts and profiles ------------------------------------------------------------
GPU_BACKENDS = {"webgpu"}
LONG = os.environ.get("TORCHIC_FUZZ_LONG") == "1"

settings.register_profile(
    "torchic-ci", derandomize=True, database=None, deadline=None, print_blob=False,
    max_examples=200,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                           HealthCheck.data_too_large, HealthCheck.function_scoped_fixture,
                           HealthCheck.large_base_example])
settings.register_profile(
    "torchic-long", parent=settings.get_profile("torchic-ci"), derandomize=False,
    max_examples=10_000)
PROFILE = "torchic-long" if LONG else "torchic-ci"


def examples_for(backend):
    """Examples per op: 150 on CPU backends, 50 on webgpu (lavapipe is slow), 10,000 long."""
    env = os.environ.get("TORCHIC_FUZZ_EXAMPLES")
    if env:
        return int(env)
    if LONG:
        return 10_000
    return 50 if backend in GPU_BACKENDS else 150


def fuzz_settings(backend):
    return settings(settings.get_profile(PROFILE), max_examples=examples_for(backend))


# -- shapes --------------------------------------------------------------------------------
# sides drawn from this pool: small, 1 often (broadcast / squeeze edge), 0 about 1 in 12
SIDES = (1, 2, 3, 4, 1, 2, 3, 5, 2, 3, 4, 0)
MAX_NUMEL = 48


def draw_shape(data, min_dims=0, max_dims=4, zero_ok=True, min_side=0, label="shape"):
    ndim = data.draw(st.integers(min_dims, max_dims), label=label + ".ndim")
    pool = [s for s in SIDES if (zero_ok or s) and s >= min_side] or [max(min_side, 1)]
    shape = []
    for i in range(ndim):
        shape.append(data.draw(st.sampled_from(pool), label=f"{label}[{i}]"))
    # keep examples small: shrink the largest side until numel fits
    while math.prod(shape) > MAX_NUMEL:
        j = shape.index(max(shape))
        shape[j] = max(shape[j] - 1, 1)
    return tuple(shape)


def broadcast_partner(data, shape, label="partner"):
    """A shape that broadcasts with `shape`: drop leading dims, turn some dims into 1."""
    drop = data.draw(st.integers(0, len(shape)), label=label + ".drop")
    out = []
    for i, d in enumerate(shape[drop:]):
        out.append(1 if data.draw(st.booleans(), label=f"{label}.one[{i}]") else d)
    return tuple(out)


# -- layouts -------------------------------------------------------------------------------
class Layout:
    """How an input of shape S is laid out: expanded dims, storage permutation, slicing."""

    def __init__(self, shape, core_shape, perm, starts, steps, pads):
        self.shape, self.core_shape = tuple(shape), tuple(core_shape)
        self.perm, self.starts, self.steps, self.pads = perm, starts, steps, pads

    @property
    def plain(self):
        return (self.core_shape == self.shape and self.perm == tuple(range(len(self.perm)))
                and not any(self.starts) and all(s == 1 for s in self.steps)
                and not any(self.pads))

    def stored_shape(self):
        return tuple(self.core_shape[p] for p in self.perm)

    def buffer_shape(self):
        return tuple(o + (n - 1) * s + 1 + pad if n else o + pad
                     for n, o, s, pad in zip(self.stored_shape(), self.starts, self.steps,
                                             self.pads))

    def slices(self):
        return tuple(slice(o, o + n * s, s)
                     for n, o, s in zip(self.stored_shape(), self.starts, self.steps))

    def describe(self):
        if self.plain:
            return "contiguous"
        return (f"core{self.core_shape} perm{self.perm} starts{self.starts} "
                f"steps{self.steps} -> {self.shape}")


def draw_layout(data, rng, shape, allow_expand=True, label="layout"):
    """Hypothesis picks the kind of layout (and the permutation); the details
    (which dims are expanded, steps, offsets, padding) come from the seeded rng,
    which keeps the number of draws per example (their cost dominates) small."""
    kind = data.draw(st.sampled_from(("contiguous", "transposed", "sliced", "expanded", "mixed")),
                     label=label)
    n = len(shape)
    core = list(shape)
    if kind in ("expanded", "mixed") and allow_expand and n:
        lead = int(rng.integers(0, 2))
        core = [1 if rng.random() < 0.5 else d for d in shape][lead:]
    perm = tuple(range(len(core)))
    if kind in ("transposed", "mixed") and len(core) >= 2:
        perm = tuple(data.draw(st.permutations(range(len(core))), label=label + ".perm"))
    starts = [0] * len(core)
    steps = [1] * len(core)
    pads = [0] * len(core)
    if kind in ("sliced", "mixed"):
        for i in range(len(core)):
            steps[i] = int(rng.integers(1, 4))
            starts[i] = int(rng.integers(0, 2))
            pads[i] = int(rng.integers(0, 2))
    return Layout(shape, core, perm, tuple(starts), tuple(steps), tuple(pads))


# -- inputs --------------------------------------------------------------------------------
# the per-op test table's domains (torchic.testing.DOMAINS: each case names its inputs'):
# continuous draws, and integer-valued ones (ties, zeros) for the "ints" mode
DOMAINS = {name: d.sample for name, d in testing.DOMAINS.items()}
INT_DOMAINS = {name: d.ints for name, d in testing.DOMAINS.items()}


class Input:
    """One input of an example: values (of the core), layout, dtype, differentiable?"""

    def __init__(self, core, layout, dtype="f32", grad=True, pad_value=None):
        self.core = core                   # float64 values (rounded to float32) or int64
        self.layout = layout
        self.dtype = dtype
        self.grad = grad and dtype == "f32"
        self.pad_value = pad_value

    def array(self, core=None):
        """The values the op sees (shape S), as float64 (or int64)."""
        c = self.core if core is None else core
        return np.broadcast_to(c, self.layout.shape).copy()

    def buffer(self):
        lay = self.layout
        dt = np.float64 if self.dtype == "f32" else np.int64
        pad = self.pad_value if self.pad_value is not None else (
            np.nan if self.dtype == "f32" else 1 << 20)
        buf = np.full(lay.buffer_shape(), pad, dtype=dt)
        buf[lay.slices()] = self.core.transpose(lay.perm)
        return buf

    def make(self):
        """(leaf buffer tensor, view tensor fed to the op)."""
        lay = self.layout
        np_dtype = np.float32 if self.dtype == "f32" else np.int32
        if lay.plain:
            t = torchic.tensor(self.core.astype(np_dtype), requires_grad=self.grad)
            return t, t
        buf = torchic.tensor(self.buffer().astype(np_dtype), requires_grad=self.grad)
        v = buf[lay.slices()] if any(lay.starts) or any(lay.pads) or \
            any(s != 1 for s in lay.steps) else buf
        if lay.perm != tuple(range(len(lay.perm))):
            v = v.permute(tuple(np.argsort(lay.perm)))
        if lay.core_shape != lay.shape:
            v = v.expand(lay.shape)
        return buf, v

    def expected_buffer_grad(self, core_grad):
        lay = self.layout
        if lay.plain:
            return core_grad
        g = np.zeros(lay.buffer_shape())
        g[lay.slices()] = core_grad.transpose(lay.perm)
        return g


def draw_input(data, rng, shape, domain="real", mode="normal", dtype="f32", grad=True,
               layout=True, allow_expand=True, values=None, label="x"):
    lay = draw_layout(data, rng, shape, allow_expand, label=label + ".layout") if layout else \
        Layout(shape, shape, tuple(range(len(shape))), (0,) * len(shape), (1,) * len(shape),
               (0,) * len(shape))
    if values is not None:
        core = values(rng, lay.core_shape)
    elif dtype == "i32":
        core = rng.integers(-3, 4, lay.core_shape)
    else:
        core = (INT_DOMAINS if mode == "ints" else DOMAINS)[domain](rng, lay.core_shape)
    if dtype == "f32":
        core = np.asarray(core, np.float64).astype(np.float32).astype(np.float64)
    else:
        core = np.asarray(core, np.int64)
    return Input(core, lay, dtype, grad)


def draw_rng(data):
    seed = data.draw(st.integers(0, 2 ** 32 - 1), label="seed")
    return np.random.default_rng(seed)


def draw_mode(data):
    return data.draw(st.sampled_from(("normal", "normal", "ints")), label="mode")


# -- the check -----------------------------------------------------------------------------
def _fd(fn, arrays, inputs, k, w, eps=1e-6):
    """d sum(fn(...) * w) / d core_k by central differences in float64."""
    core = inputs[k].core.copy()
    grad = np.zeros_like(core)
    for idx in np.ndindex(core.shape):
        orig = core[idx]
        vals = []
        for delta in (eps, -eps):
            core[idx] = orig + delta
            args = list(arrays)
            args[k] = inputs[k].array(core)
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)   # empty means etc.
                vals.append(np.sum(np.asarray(fn(*args), np.float64) * w))
        core[idx] = orig
        grad[idx] = (vals[0] - vals[1]) / (2 * eps)
    return grad


def close(got, ref, atol, rtol, what, tiny=False):
    """Assert got ~= ref elementwise (NaN where ref is NaN, infs equal, else within atol +
    rtol |ref|). tiny: a reference below atol (not 0) is held to rtol alone (plus one
    subnormal step), so an answer 3x off on tanh(1e-8) is not hidden by atol."""
    got = np.asarray(got)
    ref = np.asarray(ref)
    assert got.shape == ref.shape, f"{what}: shape {got.shape} != reference {ref.shape}"
    if got.size == 0:
        return
    with np.errstate(all="ignore"):
        return _close(got, ref, atol, rtol, what, tiny)


def _close(got, ref, atol, rtol, what, tiny=False):
    g64 = got.astype(np.float64)
    same_nan = np.isnan(g64) == np.isnan(ref)
    bad = ~same_nan
    both = ~np.isnan(g64) & ~np.isnan(ref)
    inf = both & (np.isinf(g64) | np.isinf(ref))
    bad |= inf & (g64 != ref)
    fin = both & ~inf
    small = tiny & (np.abs(ref) < atol) & (ref != 0)
    bound = np.where(small, 1.5e-45, atol) + rtol * np.abs(ref)
    bad |= fin & ~(np.abs(g64 - ref) <= bound)
    if bad.any():
        i = tuple(np.argwhere(bad)[0])
        raise AssertionError(
            f"{what}: {int(bad.sum())} of {got.size} elements differ; first at {i}: "
            f"got {got[i]!r}, expected {ref[i]!r} (atol {atol}, rtol {rtol})\n"
            f"got:\n{got}\nexpected:\n{ref}")


def check(tc_fn, np_fn, inputs, grad=True, atol=1e-5, rtol=1e-4, grad_atol=1e-4,
          grad_rtol=1e-3, out_dtype=None, rng=None):
    """Run tc_fn on the inputs' views and compare values (and gradients) with np_fn."""
    made = [inp.make() for inp in inputs]
    arrays = [inp.array() for inp in inputs]
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)           # empty means etc.
        ref = np.asarray(np_fn(*[a.copy() for a in arrays]))
    out = tc_fn(*[v for _, v in made])
    got = out.detach().numpy()
    if out_dtype is not None:
        assert out.dtype == out_dtype, f"dtype {out.dtype}, expected {out_dtype}"
    if ref.dtype.kind in "iub":
        assert got.shape == ref.shape, f"shape {got.shape} != reference {ref.shape}"
        np.testing.assert_array_equal(got, ref, err_msg="values")
    else:
        close(got, ref.astype(np.float64), atol, rtol, "values")
    grads = [k for k, inp in enumerate(inputs) if inp.grad]
    if not grad or not grads or not out.requires_grad or not np.all(np.isfinite(ref)):
        return out   # (a NaN / inf output has no meaningful finite-difference gradient)
    rng = rng or np.random.default_rng(0)
    w = rng.standard_normal(ref.shape)
    (out * torchic.tensor(w.astype(np.float32))).sum().backward()
    for k in grads:
        leaf = made[k][0]
        expected = inputs[k].expected_buffer_grad(_fd(np_fn, arrays, inputs, k, w))
        got_g = leaf.grad.numpy() if leaf.grad is not None else np.zeros(expected.shape)
        close(got_g, expected, grad_atol, grad_rtol, f"gradient of input {k} "
              f"({inputs[k].layout.describe()})")
    return out


def describe(inputs):
    return "; ".join(f"{inp.dtype}{inp.layout.shape} {inp.layout.describe()}" for inp in inputs)
