"""Every entry of the baseline (passing.txt) still passes every sample on every backend.

`test_baseline_still_passes` walks op_db on the `backend` fixture's backend: all of it on
workers and simd, a deterministic 1-in-3 subset (by a hash of the entry's id) on webgpu
(lavapipe is slow) unless TORCHIC_OPINFO=full. It fails on any baseline entry that no longer
passes, naming the entry and its first differing sample, and warns about entries that now
pass but are not in the baseline (add them: python scripts/gen_coverage_opinfo.py --baseline).

    python -m pytest tests/torch_opinfo -q                                  # CI's run
    TORCHIC_TEST_BACKENDS=workers python -m pytest tests/torch_opinfo -q    # quick
    TORCHIC_OPINFO=full python -m pytest tests/torch_opinfo -q              # every entry, webgpu too
"""

import os

import pytest

pytest.importorskip("torch")
pytest.importorskip("expecttest")   # op_db's module imports it

import torchic  # noqa: E402
import db_walk  # noqa: E402
import opinfo_harness as h  # noqa: E402

BASELINE_FILE = os.path.join(os.path.dirname(__file__), "passing.txt")


def baseline():
    return db_walk.read_baseline(BASELINE_FILE)


def test_baseline_names_op_db_entries():
    """passing.txt names real op_db entries, once each."""
    ids = {h.entry_id(op) for op in h.op_db()}
    listed = baseline()
    assert len(listed) == len(set(listed)), "passing.txt lists an entry twice"
    assert not [e for e in listed if e not in ids], \
        f"passing.txt names entries op_db does not have: {[e for e in listed if e not in ids]}"


def test_skip_table_names_op_db_entries():
    """Every row of skips.py names op_db entries (a renamed entry leaves no stale row)."""
    import skips
    names = {op.name for op in h.op_db()}
    assert not [n for n in skips.SKIPS if n not in names], \
        f"skips.SKIPS names no op_db entry: {[n for n in skips.SKIPS if n not in names]}"
    assert all(any(n.startswith(p) for n in names) for p in skips.SKIP_PREFIXES)
    assert not [n for n in skips.GRAD_SKIPS if n not in names]


def test_baseline_still_passes(backend):
    db_walk.check_baseline(h, h.op_db(), backend, BASELINE_FILE, "op_db",
                           "scripts/gen_coverage_opinfo.py")


def _op(eid):
    return next(op for op in h.op_db() if h.entry_id(op) == eid)


def test_harness_fails_wrong_values(backend, monkeypatch):
    """The comparison is not vacuous: sin's values off by 1e-4 (relative) fail."""
    op = _op("sin")
    monkeypatch.setattr(h, "variants", lambda op: [("function", op.op,
                                                    lambda x: torchic.sin(x) * 1.0001)])
    r = h.run_entry(op, dtypes=("float32",))
    assert r["status"] == "fail" and "values differ" in r["reason"], r


def test_harness_fails_a_wrong_gradient(backend, monkeypatch):
    """Gradients are compared: sin's values with the gradient of x (1, not cos x) fail."""
    op = _op("sin")

    def wrong(x):
        return torchic.sin(x).detach() + (x - x.detach())
    monkeypatch.setattr(h, "variants", lambda op: [("function", op.op, wrong)])
    r = h.run_entry(op, dtypes=("float32",))
    assert r["status"] == "fail" and "grad of input 0" in r["reason"], r


def test_random_ops_compare_value_for_value(backend, monkeypatch):
    """The generator is PyTorch's: a random entry passes from the same seed, and fails
    when torchic's generator is seeded differently before the call."""
    op = _op("multinomial")
    assert h.run_entry(op)["status"] == "pass"
    monkeypatch.setattr(h, "_seeded", lambda fn, *a, **k: (torchic.manual_seed(7), fn(*a, **k))[1])
    assert h.run_entry(op)["status"] == "fail"


# out= (issue 41): op_db's supports_out entries have their out= variant checked (out_check.py)
def test_harness_checks_the_out_variant(backend, monkeypatch):
    """An add whose out= returns a new tensor instead of `out` fails; the real one passes
    and its out= was checked."""
    op = _op("add")
    r = h.run_entry(op, dtypes=("float32",))
    assert r["status"] == "pass" and r["out"] == "pass", r

    def not_into_out(*args, out=None, **kwargs):
        return torchic.add(*args, **kwargs)
    monkeypatch.setattr(h, "variants", lambda op: [("function", op.op, not_into_out)])
    r = h.run_entry(op, dtypes=("float32",))
    assert r["status"] == "fail" and "out=" in r["reason"], r


def test_harness_checks_out_dtype_refusal(backend, monkeypatch):
    """mm writing a float result into an int64 out (torch refuses it) fails the entry."""
    op = _op("mm")

    def lenient(a, b, out=None):
        if out is None:
            return torchic.mm(a, b)
        return torchic.api.out.write_into(out, torchic.mm(a, b))
    monkeypatch.setattr(h, "variants", lambda op: [("function", op.op, lenient)])
    r = h.run_entry(op, dtypes=("float32",))
    assert r["status"] == "fail" and "refuses" in r["reason"], r


def test_held_dtype_refusals_are_declared(backend):
    """float_power's float64 result: passes where the backend holds float64; on webgpu (no
    float64) its samples are left out under skips.HELD_RULE, never failed; dropout's MKL
    mask is a declared skip (skips.RANDOM_MASK)."""
    import skips
    r = h.run_entry(_op("float_power"), dtypes=("float32",))
    assert r["status"] == ("skip" if backend == "webgpu" else "pass"), r
    assert h.run_entry(_op("nn.functional.dropout"))["reason"] == skips.RANDOM_MASK
