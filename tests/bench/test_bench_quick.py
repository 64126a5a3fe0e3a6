"""`python -m torchic bench --quick` runs every suite on every available backend (CI).

One quick run (toy sizes, seconds) in a subprocess, exactly as a user types it;
the tests below read its JSON. This is what keeps the benchmark from rotting:
a renamed op, a backend that breaks under a suite or a results-file change
shows up here, not in the next release's README.
"""

import importlib.util
import json
import os
import subprocess
import sys

import pytest

from torchic import dispatcher
from torchic.dtypes import dtype_code
from torchic.bench.suites import SUITES

REQUIRE_ALL = os.environ.get("TORCHIC_REQUIRE_ALL_BACKENDS") == "1"


def _available_backends():
    names = []
    for name in dispatcher.backend_names():
        ok, why = dispatcher.backend_class(name).available()
        if ok:
            names.append(name)
        elif REQUIRE_ALL:
            pytest.fail(f"backend {name!r} is required in CI but unavailable: {why}")
    return names


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench")
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    proc = subprocess.run([sys.executable, "-m", "torchic", "bench", "--quick", "--out", str(out)],
                          capture_output=True, text=True, timeout=900, env=env)
    assert proc.returncode == 0, f"bench failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    with open(out / "results.json") as f:
        results = json.load(f)
    return results, out, proc


def _records(results, suite, impl):
    return [r for r in results["records"] if r["suite"] == suite and r["impl"] == impl]


def test_every_suite_ran(quick_run):
    results, _, _ = quick_run
    assert results["quick"] is True
    assert results["config"]["suites"] == list(SUITES)
    for suite in SUITES:
        assert any(r["suite"] == suite for r in results["records"]), suite


def test_every_available_backend_in_every_suite(quick_run):
    results, _, _ = quick_run
    for name in _available_backends():
        assert results["impls"][name]["available"], name
        for suite in SUITES:
            recs = _records(results, suite, name)
            assert recs, f"no {suite} figures for backend {name}"
            for r in recs:
                assert r.get("error") is None, f"{suite}/{r['case']} {r['label']} on {name}: " \
                                               f"{r.get('error')}\n{r.get('traceback', '')}"
                dtype = r.get("params", {}).get("dtype")
                refused = dtype and dispatcher.backend_class(name).refusals.get(dtype_code(dtype))
                if r["value"] is None and refused and f"not supported by {name}" in \
                        r.get("skipped", ""):
                    continue      # a dtype the backend refuses (webgpu's float64), said so
                assert r["value"] is not None, (suite, r["case"], name, r.get("skipped"))
                assert r.get("check", "ok") == "ok", (suite, r["case"], r["label"], name,
                                                      r["check"])


def test_references_in_the_same_run(quick_run):
    results, _, _ = quick_run
    refs = ["numpy"] + (["torch"] if importlib.util.find_spec("torch") else [])
    for ref in refs:
        for suite in SUITES:
            if suite == "memory":        # heap figures exist for torchic only
                continue
            if suite == "loader" and ref == "numpy":     # no DataLoader in NumPy: said so
                recs = _records(results, suite, ref)
                assert recs and all("not supported" in r.get("skipped", "") for r in recs)
                continue
            recs = _records(results, suite, ref)
            if ref == "numpy":   # the eager-path rows have no NumPy counterpart: said so
                recs = [r for r in recs if "not supported" not in r.get("skipped", "")
                        or r["case"] in ("transformer", "gpt", "lenet", "conv2d_fwd_bwd",
                                         "lstm_lm")]
            if ref == "numpy":   # no hand-written NumPy Transformer / GPT / CNN / LSTM: skipped
                apart = ("transformer", "gpt", "lenet", "conv2d_fwd_bwd", "lstm_lm")
                skipped = [r for r in recs if r["case"] in apart]
                assert all("not supported" in r.get("skipped", "") for r in skipped), skipped
                recs = [r for r in recs if r["case"] not in apart]
                if not recs and suite in ("conv", "lstm"):
                    continue
            assert recs and all(r["value"] is not None for r in recs), (suite, ref)
            assert all(r.get("check", "ok") == "ok" for r in recs), (suite, ref)


def test_transformer_row_beside_pytorch(quick_run):
    """The makemore Transformer step ran on every backend and PyTorch, and each one's first
    loss is the float64 NumPy forward's."""
    results, _, _ = quick_run
    impls = _available_backends() + (["torch"] if importlib.util.find_spec("torch") else [])
    for name in impls:
        recs = [r for r in _records(results, "train", name) if r["case"] == "transformer"]
        assert recs, f"no transformer step figure for {name}"
        for r in recs:
            assert r["value"] is not None and r["metric"] == "ms/step", (name, r)
            assert abs(r["first_step_loss"] - r["expected_first_step_loss"]) <= \
                1e-5 + 1e-4 * abs(r["expected_first_step_loss"]), (name, r)


def test_gpt_row_beside_pytorch(quick_run):
    """The GPT step (bench/gpt.py, issue 17) ran eager (train) and compiled (compile) on
    every backend and eager on PyTorch; each first loss is within the ln(vocab) bound."""
    results, _, _ = quick_run
    impls = _available_backends() + (["torch"] if importlib.util.find_spec("torch") else [])
    for suite in ("train", "compile"):
        for name in impls:
            recs = [r for r in _records(results, suite, name) if r["case"] == "gpt"]
            assert recs and all(r["value"] is not None and r.get("check") == "ok"
                                for r in recs), (suite, name, recs)


def test_memory_figures(quick_run):
    results, _, _ = quick_run
    for r in (r for r in results["records"] if r["suite"] == "memory"):
        v = r["values"]
        assert v["peak_mib"] > 0 and v["heap_mib"] >= v["peak_mib"]
        assert 0.0 <= v["recycle_rate"] <= 1.0
        assert v["allocs_per_step"] > 0


def test_machine_and_targets(quick_run):
    results, _, _ = quick_run
    m = results["machine"]
    assert m["cpu"]["model"] and m["cpu"]["usable_cores"] >= 1
    assert {"python", "numpy", "torchic"} <= set(m["versions"])
    assert "blas" in m and "env" in m
    titles = {t["title"] for t in results["targets"]}
    assert "exp 16M vs NumPy" in titles and "makemore step b32 vs PyTorch, time" in titles
    for t in results["targets"]:
        assert t["status"] in ("PASS", "FAIL", "PASS?", "FAIL?", "info", "missing", "n/a"), t


def test_outputs_written(quick_run):
    results, out, proc = quick_run
    md = (out / "results.md").read_text()
    # quick mode measures and judges nothing (issue 44): no targets table, and it says why
    assert "## Performance" in md and "### Targets" not in md
    assert "targets: not judged in --quick mode" in proc.stdout
    if importlib.util.find_spec("matplotlib"):
        for name in ("matmul.png", "elementwise.png"):
            assert (out / name).stat().st_size > 1000, name
