"""Every entry of the baseline (passing.txt) still passes every input on every backend.

`test_baseline_still_passes` walks module_db on the `backend` fixture's backend: all of it on
workers and simd, a deterministic 1-in-3 subset (by a hash of the entry's id) on webgpu
(lavapipe is slow) unless TORCHIC_MODULEINFO=full. It fails on any baseline entry that no
longer passes, naming the entry, the input and what differs, and warns about entries that now
pass but are not in the baseline (add them: python scripts/gen_coverage_moduleinfo.py
--baseline).

    python -m pytest tests/torch_moduleinfo -q                                  # CI's run
    TORCHIC_TEST_BACKENDS=workers python -m pytest tests/torch_moduleinfo -q    # quick
    TORCHIC_MODULEINFO=full python -m pytest tests/torch_moduleinfo -q          # webgpu all
"""

import os

import pytest

pytest.importorskip("torch")
pytest.importorskip("expecttest")   # module_db's module imports it

import torchic  # noqa: E402
import db_walk  # noqa: E402
import moduleinfo_harness as h  # noqa: E402

BASELINE_FILE = os.path.join(os.path.dirname(__file__), "passing.txt")


def baseline():
    return db_walk.read_baseline(BASELINE_FILE)


def test_baseline_names_module_db_entries():
    """passing.txt names real module_db entries, once each."""
    ids = {h.entry_id(m) for m in h.module_db()}
    listed = baseline()
    assert len(listed) == len(set(listed)), "passing.txt lists an entry twice"
    assert not [e for e in listed if e not in ids], \
        f"passing.txt names entries module_db lacks: {[e for e in listed if e not in ids]}"


def test_skip_table_names_module_db_entries():
    """Every row of module_skips.py names a module_db entry, and none is in the baseline."""
    import module_skips
    ids = {h.entry_id(m) for m in h.module_db()}
    assert not [n for n in module_skips.SKIPS if n not in ids]
    assert not set(module_skips.SKIPS) & set(baseline())


def test_baseline_still_passes(backend):
    db_walk.check_baseline(h, h.module_db(), backend, BASELINE_FILE, "module_db",
                           "scripts/gen_coverage_moduleinfo.py")


def _info(eid):
    return next(m for m in h.module_db() if h.entry_id(m) == eid)


def test_harness_fails_wrong_values(backend, monkeypatch):
    """The comparison is not vacuous: Tanh's values off by 1e-4 (relative) fail."""
    class Off(torchic.nn.Tanh):
        def forward(self, input):
            return torchic.tanh(input) * 1.0001
    monkeypatch.setattr(h, "torchic_class", lambda info: Off)
    r = h.run_entry(_info("nn.Tanh"), dtypes=("float32",))
    assert r["status"] == "fail" and "values differ" in r["reason"], r


def test_harness_fails_a_wrong_parameter_gradient(backend, monkeypatch):
    """Parameter gradients are compared: PReLU with its weight's gradient doubled fails."""
    class Wrong(torchic.nn.PReLU):
        def forward(self, input):
            w = self.weight * 2.0 - self.weight.detach()     # the value, twice the gradient
            return torchic.nn.functional.prelu(input, w)
    monkeypatch.setattr(h, "torchic_class", lambda info: Wrong)
    r = h.run_entry(_info("nn.PReLU"), dtypes=("float32",))
    assert r["status"] == "fail" and "grad of parameter weight" in r["reason"], r


def test_harness_compares_state_after_the_forward(backend, monkeypatch):
    """Buffers written by the forward are compared: a BatchNorm1d that never updates its
    running statistics fails in training mode."""
    class Frozen(torchic.nn.BatchNorm1d):
        def forward(self, input):
            return torchic.nn.functional.batch_norm(input, None, None, self.weight, self.bias,
                                                    True, 0.1, self.eps) \
                if self.training else super().forward(input)
    monkeypatch.setattr(h, "torchic_class", lambda info: Frozen)
    r = h.run_entry(_info("nn.BatchNorm1d"), dtypes=("float32",), modes=(True,))
    assert r["status"] == "fail" and "after the forward" in r["reason"], r
