"""Public-PyTorch-style programs run twice, with PyTorch and with torchic standing in for
torch (shim.py), on every backend; their losses (and other checked values) must agree.

Each program in this folder is a plain PyTorch script with `main(steps, seed, bridge)`
returning a dict of checked values ("losses" first). Two ways of giving both runs the
same inputs:

* replay (the main test): the PyTorch run records every random draw the program hands
  its bridge (initial weights / a module's state_dict, batches, samples) as NumPy
  arrays, and the torchic run replays them (copied into its tensors / loaded with
  load_state_dict). The comparison does not depend on the random generators. `reverse`
  runs torchic first and replays its draws into PyTorch (both directions via NumPy).
* seed: both runs draw for themselves from the same seed; they agree only where
  torchic's generator reproduces PyTorch's bit for bit.

Losses must agree within 1e-4 relative over the first STEPS steps; other floats within
1e-4 relative or 1e-5 absolute; ints, strings and booleans exactly.

`python tests/programs/test_programs.py [backend ...]` prints, for every program and
backend, whether it passes or the first missing / divergent piece (the gap survey).
"""

import importlib.util
import itertools
import os
import sys
import traceback

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

from _fixtures import Bridge  # noqa: E402
from shim import torchic_as_torch  # noqa: E402

torch = pytest.importorskip("torch")

STEPS = int(os.environ.get("TORCHIC_PROGRAM_STEPS", "20"))
MAKEMORE_MODELS = ("bigram", "mlp", "rnn", "gru", "bow", "transformer")
PROGRAMS = [("bigram_counts", {}), ("bigram_nn", {}), ("bigram", {}), ("mlp", {}), ("batchnorm_stats", {}),
            ("backprop_ninja", {}), ("wavenet", {})] + \
           [(f"makemore[{m}]", {"model_type": m}) for m in MAKEMORE_MODELS] + \
           [("gpt", {}), ("chargpt", {}), ("nanogpt_resume", {})] + \
           [("lstm_tagger", {})] + \
           [(f"word_lm[{m}]", {"model": m}) for m in ("LSTM", "GRU", "Transformer")] + \
           [("custom_function_fit", {})] + \
           [("time_sequence_prediction", {})]   # LSTMCell + LBFGS in float64 (pytorch/examples)
# issue 42 classics: pytorch/examples' MNIST net on synthetic images; the seq2seq tutorial's GRUs
PROGRAMS += [("cnn_images", {})] + \
            [(f"seq2seq_gru[{d}]", {"decoder": d}) for d in ("attention", "plain")]
# programs that run in float64, which webgpu does not hold (skipped there)
FLOAT64_PROGRAMS = {"time_sequence_prediction"}

_count = itertools.count()


def load(name):
    """A fresh copy of the program module (its `import torch` binds whatever is in
    sys.modules now: PyTorch, or torchic under the shim)."""
    path = os.path.join(HERE, name.split("[")[0] + ".py")
    spec = importlib.util.spec_from_file_location(f"_program_{next(_count)}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def to_numpy(t):
    return np.array(t.detach().numpy(), copy=True)


def from_numpy(lib, a):
    return lib.tensor(a)


class Recorder(Bridge):
    """Records the draws of the first run (NumPy arrays and Python numbers, in order)."""

    def __init__(self):
        self.tape = []

    def params(self, name, tensors):
        self.tape.append((name, [to_numpy(t) for t in tensors]))

    def module(self, name, model):
        self.tape.append((name, {k: to_numpy(v) for k, v in model.state_dict().items()}))

    def batch(self, name, *tensors):
        self.tape.append((name, [to_numpy(t) for t in tensors]))
        return super().batch(name, *tensors)

    def value(self, name, v):
        self.tape.append((name, v))
        return v


class Replayer(Bridge):
    """Feeds the recorded draws to the second run, whose own draws are discarded."""

    def __init__(self, tape, lib):
        self.tape, self.lib = list(tape), lib

    def _next(self, name):
        assert self.tape, f"the second run drew {name!r} after the first run's last draw"
        got, item = self.tape.pop(0)
        assert got == name, f"the runs diverged: the second drew {name!r} where the first drew {got!r}"
        return item

    def params(self, name, tensors):
        arrays = self._next(name)
        with self.lib.no_grad():
            for t, a in zip(tensors, arrays, strict=True):
                t.copy_(from_numpy(self.lib, a))

    def module(self, name, model):
        state = self._next(name)
        model.load_state_dict({k: from_numpy(self.lib, a) for k, a in state.items()})

    def batch(self, name, *tensors):
        out = [from_numpy(self.lib, a) for a in self._next(name)]
        return out[0] if len(out) == 1 else tuple(out)

    def value(self, name, v):
        return self._next(name)


def run_torch(name, kwargs, bridge):
    """The PyTorch reference, on its CPU (a CUDA build would pick "cuda" in the programs that
    ask torch.cuda.is_available(), and its numbers are not the CPU generator's)."""
    available, torch.cuda.is_available = torch.cuda.is_available, lambda: False
    try:
        return load(name).main(steps=STEPS, bridge=bridge, **kwargs)
    finally:
        torch.cuda.is_available = available


def run_torchic(name, kwargs, bridge):
    with torchic_as_torch():
        return load(name).main(steps=STEPS, bridge=bridge, **kwargs)


def run_pair(name, kwargs, mode):
    """(torch's results, torchic's results) for mode 'replay', 'reverse' or 'seed'."""
    import torchic
    if mode == "seed":
        return run_torch(name, kwargs, Bridge()), run_torchic(name, kwargs, Bridge())
    rec = Recorder()
    if mode == "replay":
        ref = run_torch(name, kwargs, rec)
        return ref, run_torchic(name, kwargs, Replayer(rec.tape, torchic))
    got = run_torchic(name, kwargs, rec)
    return run_torch(name, kwargs, Replayer(rec.tape, torch)), got


def _flat(v):
    if isinstance(v, (list, tuple)):
        return [x for item in v for x in _flat(item)]
    return [v]


SHOWN_ONLY = {"checks"}     # printed by the program, not compared (backprop_ninja's exact flags)


def divergence(ref, got, with_samples=True):
    """None when the results agree, else a line naming the first value that differs."""
    for key, want in ref.items():
        if key in SHOWN_ONLY or (key == "samples" and not with_samples):
            continue
        have = got.get(key)
        a, b = _flat(want), _flat(have)
        if len(a) != len(b):
            return f"{key}: {len(b)} values, PyTorch has {len(a)}"
        for i, (x, y) in enumerate(zip(a, b)):
            if isinstance(x, float) or isinstance(y, float):
                rtol, atol = (1e-4, 0.0) if key == "losses" else (1e-4, 1e-5)
                if not (np.isfinite(x) == np.isfinite(y)) or (
                        np.isfinite(x) and abs(x - y) > atol + rtol * abs(x)):
                    return f"{key}[{i}]: torchic {y!r}, PyTorch {x!r}"
            elif x != y:
                return f"{key}[{i}]: torchic {y!r}, PyTorch {x!r}"
    return None


def first_gap(exc):
    """The exception and the program line (in this folder) that raised it."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if f.filename.startswith(HERE) and not f.filename.endswith(("test_programs.py",
                                                                            "shim.py"))]
    where = f" at {os.path.basename(frames[-1].filename)}:{frames[-1].lineno}: " \
            f"{frames[-1].line}" if frames else ""
    return f"{type(exc).__name__}: {str(exc)[:300]}{where}"


# Known gaps, measured by the survey: (program, mode) -> the first missing piece. strict:
# when the piece lands the test passes, turns red, and the entry must go. (None left.)
XFAIL = {}


def _skip_float64(backend, name):
    if backend == "webgpu" and name in FLOAT64_PROGRAMS:
        pytest.skip(f"{name} runs in float64, which webgpu does not hold (WGSL has no f64)")


def _params(mode):
    out = []
    for name, kwargs in PROGRAMS:
        reason = XFAIL.get((name, mode))
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
        out.append(pytest.param(name, kwargs, id=name, marks=marks))
    return out


@pytest.mark.parametrize("name, kwargs", _params("replay"))
def test_program_matches_torch(backend, name, kwargs):
    """Same initial weights and batches (PyTorch's draws replayed): the same losses."""
    _skip_float64(backend, name)
    ref, got = run_pair(name, kwargs, "replay")
    why = divergence(ref, got, with_samples=False)
    assert why is None, why


@pytest.mark.parametrize("name, kwargs", _params("seed"))
def test_program_matches_torch_from_the_seed(backend, name, kwargs):
    """Pure seeding: torchic draws its own weights, batches and samples from the seed."""
    _skip_float64(backend, name)
    ref, got = run_pair(name, kwargs, "seed")
    why = divergence(ref, got, with_samples=True)
    assert why is None, why


def test_replay_works_in_both_directions(backend):
    """torchic's draws replayed into PyTorch give PyTorch's losses for them."""
    ref, got = run_pair("bigram_nn", {}, "reverse")
    assert divergence(ref, got, with_samples=False) is None


def survey(backends, modes=("replay", "seed")):
    import torchic
    for backend in backends:
        torchic.init(backend)
        for name, kwargs in PROGRAMS:
            for mode in modes:
                try:
                    ref, got = run_pair(name, kwargs, mode)
                    why = divergence(ref, got, with_samples=mode == "seed")
                    line = "PASS" if why is None else f"DIVERGES {why}"
                except Exception as exc:  # noqa: BLE001  (the survey reports every gap)
                    line = "FAILS " + first_gap(exc)
                print(f"{backend:8s} {mode:6s} {name:22s} {line}", flush=True)


if __name__ == "__main__":
    survey(sys.argv[1:] or ["workers"])
