"""The bench's pure parts: timing, result checks, targets, tables, README generation."""

import importlib.util
import json
import os
import subprocess
import sys

import pytest

from torchic.bench import cli, machine, report, targets, timing
from torchic.bench.suites import check, human, metric_value

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_measure_takes_median_and_autoranges():
    calls = []

    def fn():
        calls.append(1)
    t = timing.measure(fn, timing.Budget(repeat=5, min_total_s=0.01, warmup_s=0.001))
    assert t.number > 1                      # a ~100 ns call is batched
    assert len(t.samples) >= 5
    assert t.min_s <= t.median_s <= t.max_s
    d = t.as_dict(keep_samples=0)
    assert "samples" not in d and d["n_samples"] == len(t.samples)


def test_measure_respects_max_total_for_slow_calls():
    import time
    t = timing.measure(lambda: time.sleep(0.02),
                       timing.Budget(repeat=50, min_samples=2, max_total_s=0.05, warmup_s=0))
    assert 2 <= len(t.samples) <= 4 and t.number == 1


def test_check_and_units():
    assert check([1.0, 2.0], [1.0, 2.0 + 1e-9], 1e-6, 0)[0]
    ok, detail = check([1.0, 2.5], [1.0, 2.0], 1e-3, 1e-6)
    assert not ok and "0.5" in detail
    assert not check([float("nan")], [1.0], 1e-3, 0)[0]
    assert human(1 << 20) == "1M" and human(1 << 14) == "16K" and human(1000) == "1000"
    assert metric_value("GFLOPS", 2e9, 1.0) == pytest.approx(2.0)
    assert metric_value("µs/op", 100, 1e-3) == pytest.approx(10.0)


def _rec(impl, suite, case, label, threads, value, metric, median_s=1.0):
    return {"impl": impl, "suite": suite, "case": case, "label": label, "threads": threads,
            "value": value, "metric": metric, "median_s": median_s, "seq": 0,
            "params": {}, "check": "ok"}


def _impls(*names):
    return {n: {"available": True, "kind": "torchic" if n in ("workers", "simd") else "reference",
                "label": n, "gpu": False} for n in names}


def test_targets_pass_fail_and_missing():
    recs = [_rec("simd", "matmul", "matmul", "1024", 1, 80.0, "GFLOPS", 1 / 80),
            _rec("numpy", "matmul", "matmul", "1024", 1, 85.0, "GFLOPS", 1 / 85),
            _rec("simd", "overhead", "add_chain", "32x32 x100", 1, 9.0, "µs/op"),
            _rec("torch", "overhead", "add_chain", "32x32 x100", 1, 3.0, "µs/op")]
    rows = targets.evaluate(recs, _impls("simd", "numpy", "torch"), gpu_real=False)
    by = {(r["title"], r["threads"]): r for r in rows}
    mm = by[("matmul 1024³ vs NumPy", 1)]
    assert mm["status"] == "PASS" and mm["ratio"] == pytest.approx(80 / 85)
    chain = by[("32x32 add in a 100-op chain, time/op vs PyTorch", 1)]
    assert chain["status"] == "FAIL" and chain["ratio"] == pytest.approx(3.0)
    assert by[("exp 16M vs NumPy", 1)]["status"] == "missing"
    assert by[("matmul 1024³ vs NumPy", 2)]["status"] == "missing"
    assert all(r["status"] == "n/a" for r in rows if r["issue"] == 6)


def test_compiled_gpt_steps_are_judged_against_torch_compile_on_cpu():
    """issue 45: each CPU GPT model's compiled step against torch.compile's (<= 0.7x its
    time), its eager step against PyTorch eager's; torch-compile is asked for by name."""
    from torchic.bench import gpt, impls
    label = gpt.label(gpt.CPU_MODELS["makemore"])
    recs = [_rec("simd", "compile", "gpt", label, 1, 10.0, "ms/step"),
            _rec("torch-compile", "compile", "gpt", label, 1, 14.0, "ms/step"),
            _rec("simd", "train", "gpt", label, 1, 20.0, "ms/step"),
            _rec("torch", "train", "gpt", label, 1, 19.0, "ms/step")]
    rows = targets.evaluate(recs, _impls("simd", "torch", "torch-compile"), gpu_real=False)
    by = {(r["title"], r["threads"]): r for r in rows}
    compiled = by[("GPT makemore step compiled vs torch.compile, time", 1)]
    assert compiled["status"] == "FAIL" and compiled["ratio"] == pytest.approx(10 / 14)
    eager = by[("GPT makemore step eager vs PyTorch eager, time", 1)]
    assert eager["status"] == "FAIL" and eager["ratio"] == pytest.approx(20 / 19)
    assert by[("GPT nanogpt step compiled vs torch.compile, time", 1)]["status"] == "missing"
    default, _ = impls.resolve(backends=["none"])
    assert "torch-compile" not in [i.name for i in default]
    named, skipped = impls.resolve(backends=["none"], references=["torch-compile"])
    assert [i.name for i in named] + [n for n, _ in skipped] == ["torch-compile"]
    # the CPU models are CPU rows: a GPU implementation (lavapipe: ~6 s a step) skips them
    impls.TorchicImpl("simd").gpt_size_check(gpt.CPU_MODELS["nanogpt"])
    with pytest.raises(impls.NotSupported, match="CPU implementations only"):
        impls.TorchicImpl("webgpu").gpt_size_check(gpt.CPU_MODELS["nanogpt"])


def _judged(recs, *impl_names):
    """The target rows evaluated on `recs`, by (title, threads)."""
    rows = targets.evaluate(recs, _impls(*impl_names), gpu_real=False)
    return {(r["title"], r["threads"]): r for r in rows}


def test_lenet_and_lstm_steps_are_judged_against_pytorch():
    """issue 42: the LeNet and LSTM LM steps at most PyTorch CPU's time, at each thread
    count; the conv2d row is shown, not judged."""
    from torchic.bench import conv, lstm
    lenet, lm = conv.lenet_label(conv.LENET), lstm.label(lstm.CFG)
    resnet = conv.resnet_label(conv.RESNET)
    recs = [_rec(impl, suite, case, label, threads, value, unit)
            for impl, suite, case, label, threads, value, unit in (
                ("simd", "conv", "lenet", lenet, 1, 6.0, "ms/step"),
                ("torch", "conv", "lenet", lenet, 1, 8.0, "ms/step"),
                ("simd", "conv", "lenet", lenet, 2, 7.0, "ms/step"),
                ("torch", "conv", "lenet", lenet, 2, 6.0, "ms/step"),
                ("simd", "lstm", "lstm_lm", lm, 1, 170.0, "ms/step"),
                ("torch", "lstm", "lstm_lm", lm, 1, 190.0, "ms/step"),
                ("simd", "conv", "conv2d_fwd_bwd", resnet, 1, 56.0, "GFLOPS"),
                ("torch", "conv", "conv2d_fwd_bwd", resnet, 1, 76.0, "GFLOPS"))]
    by = _judged(recs, "simd", "torch")
    assert by[("LeNet step b64 vs PyTorch, time", 1)]["status"] == "PASS"
    two = by[("LeNet step b64 vs PyTorch, time", 2)]
    assert two["status"] == "FAIL" and two["ratio"] == pytest.approx(7 / 6)
    assert by[("LSTM LM step vs PyTorch, time", 1)]["ratio"] == pytest.approx(170 / 190)
    shown = by[("conv2d fwd+bwd (ResNet-shaped) vs PyTorch", 1)]
    assert shown["status"] == "info" and shown["ratio"] == pytest.approx(56 / 76)


def test_compiled_lenet_and_lstm_steps_are_judged_against_torch_compile(monkeypatch):
    """issue 45: the compiled LeNet / LSTM LM steps at most 0.7x torch.compile's time; the
    torch-compile reference compiles them, PyTorch eager does not."""
    from torchic.bench import conv, impls, lstm
    lenet, lm = conv.lenet_label(conv.LENET), lstm.label(lstm.CFG)
    recs = [_rec(impl, "compile", case, label, 2, ms, "ms/step")
            for impl, case, label, ms in (("simd", "lenet", lenet, 6.0),
                                          ("torch-compile", "lenet", lenet, 10.0),
                                          ("simd", "lstm_lm", lm, 80.0),
                                          ("torch-compile", "lstm_lm", lm, 100.0))]
    by = _judged(recs, "simd", "torch-compile")
    assert by[("LeNet step b64 compiled vs torch.compile, time", 2)]["status"] == "PASS"
    lstm_row = by[("LSTM LM step compiled vs torch.compile, time", 2)]
    assert lstm_row["status"] == "FAIL" and lstm_row["ratio"] == pytest.approx(0.8)
    compiled = impls.TorchCompileImpl("cpu")
    import torch._dynamo
    seen, resets = [], []
    # each compiled step starts from a clean dynamo cache (past its recompile limit dynamo
    # would run the shared `train` / optimizer code eagerly)
    monkeypatch.setattr(torch._dynamo, "reset", lambda: resets.append(1))
    monkeypatch.setattr(conv, "lenet_step", lambda impl, cfg, c: seen.append(c))
    monkeypatch.setattr(lstm, "training_step",
                        lambda lib, cfg, device, compile: seen.append(compile))
    compiled.lenet_step(conv.QUICK_LENET)
    compiled.lstm_step(lstm.QUICK)
    impls.TorchImpl("cpu").lenet_step(conv.QUICK_LENET)
    impls.TorchImpl("cpu").lstm_step(lstm.QUICK)
    assert seen == [True, torch.compile, False, None] and len(resets) == 2


def test_exp_goal_at_the_most_threads_and_copy_shares_at_one():
    recs = [_rec("simd", "elementwise", "exp", "16M", 1, 12.0, "GB/s"),
            _rec("numpy", "elementwise", "exp", "16M", 1, 10.0, "GB/s"),
            _rec("simd", "elementwise", "exp", "16M", 2, 30.0, "GB/s"),
            _rec("numpy", "elementwise", "exp", "16M", 2, 10.0, "GB/s"),
            _rec("numpy", "elementwise", "copy", "16M", 1, 15.0, "GB/s"),
            _rec("simd", "elementwise", "copy", "16M", 2, 40.0, "GB/s")]
    rows = targets.evaluate(recs, _impls("simd", "numpy"), gpu_real=False)
    goal = [r for r in rows if r["title"] == "exp 16M vs NumPy"]
    assert [(r["threads"], r["status"]) for r in goal] == [(2, "PASS")]
    assert goal[0]["ratio"] == pytest.approx(3.0)
    shares = {r["impl"]: r for r in rows if "share of copy bandwidth" in r["title"]}
    # against the best copy on the same (one) thread, not the 2-thread one
    assert shares["simd"]["ratio"] == pytest.approx(12 / 15) and shares["simd"]["threads"] == 1
    assert shares["numpy"]["ratio"] == pytest.approx(10 / 15)
    assert {r["status"] for r in shares.values()} == {"info"}


def test_wrong_result_fails_its_target():
    recs = [_rec("simd", "elementwise", "exp", "16M", 1, 30.0, "GB/s"),
            _rec("numpy", "elementwise", "exp", "16M", 1, 10.0, "GB/s")]
    recs[0]["check"] = "MISMATCH (max err 1)"
    rows = targets.evaluate(recs, _impls("simd", "numpy"), gpu_real=False)
    row = next(r for r in rows if r["title"] == "exp 16M vs NumPy")
    assert row["status"] == "FAIL" and "MISMATCH" in row["note"]


def _results():
    recs = [_rec("workers", "matmul", "matmul", "128", 1, 10.0, "GFLOPS", 0.4),
            _rec("numpy", "matmul", "matmul", "128", 1, 40.0, "GFLOPS", 0.1)]
    return {"created": "2026-11-29T00:00:00+00:00", "quick": False, "argv": [],
            "elapsed_s": 60, "config": {"suites": ["matmul"]},
            "machine": {"cpu": {"model": "Test CPU", "usable_cores": 2, "arch": "x86_64",
                                "key_flags": ["avx2"]},
                        "versions": {"python": "3.11", "numpy": "2", "torchic": "0.1"},
                        "blas": {"libraries": []}, "env": {}},
            "impls": _impls("workers", "numpy"), "records": recs,
            "targets": targets.evaluate(recs, _impls("workers", "numpy"), False),
            "notes": ["a note"]}


def test_tables_show_values_and_ratios():
    headers, rows, metric = report.suite_table(_results(), "matmul")
    assert headers[:5] == ["case", "size", "threads", "workers", "numpy"]
    assert "workers vs numpy" in headers and rows[0][headers.index("workers vs numpy")] == "0.25x"
    md = report.markdown_report(_results())
    assert "Test CPU" in md and "| matmul | 128 | 1 | 10.0 | 40.0 | 0.25x |" in md
    assert "a note" in md
    text = report.terminal_report(_results())
    assert "workers vs numpy" in text and "0.25x" in text


def test_a_suite_mixing_units_shows_a_unit_column():
    recs = [_rec("simd", "conv", "lenet", "b64", 1, 5.0, "ms/step", 0.005),
            _rec("torch", "conv", "lenet", "b64", 1, 4.0, "ms/step", 0.004),
            _rec("simd", "conv", "conv2d_fwd_bwd", "b8", 1, 60.0, "GFLOPS", 0.02),
            _rec("torch", "conv", "conv2d_fwd_bwd", "b8", 1, 120.0, "GFLOPS", 0.01)]
    res = dict(_results(), records=recs, impls=_impls("simd", "torch"))
    headers, rows, metric = report.suite_table(res, "conv")
    assert headers[:4] == ["case", "size", "unit", "threads"] and metric == report.MIXED_UNITS
    assert [r[2] for r in rows] == ["ms/step", "GFLOPS"]
    assert [r[-1] for r in rows] == ["0.80x", "0.50x"]


def test_terminal_header_and_report_share_the_machine_wording():
    m = dict(_results()["machine"], memory={"total_gib": 8.0},
             webgpu_adapter={"device": "llvmpipe", "adapter_type": "CPU", "backend_type": "Vulkan"},
             platforms={"simd": {"kernels": "Rust", "isa": "avx2+fma", "force": "x" * 40}})
    parts = machine.hardware(m)
    assert parts == ["Test CPU, 2 cores (x86_64), flags avx2", "8.0 GiB RAM",
                     "WebGPU adapter llvmpipe (CPU, Vulkan)", "torchic simd: Rust, isa avx2+fma"]
    lines = machine.summary_lines(m)
    assert lines[0] == "machine " + parts[0] and [x.strip() for x in lines[1:4]] == parts[1:]
    assert report.machine_line({"machine": m})[0] == "; ".join(parts)


def test_machine_record_quick_and_full():
    quick = machine.collect(quick=True)
    assert "flags" not in quick["cpu"] and "blas" not in quick
    full = machine.collect(backends=["workers"])
    assert full["cpu"]["flags"] is not None and "blas" in full
    assert full["platforms"]["workers"]["kernels"].startswith("NumPy")


def test_gen_perf_readme_replaces_between_markers(tmp_path):
    perf = tmp_path / "perf"
    perf.mkdir()
    (perf / "results.json").write_text(json.dumps(_results()))
    readme = tmp_path / "README.md"
    readme.write_text("# x\n\nintro\n\n<!-- perf:begin -->\nstale\n<!-- perf:end -->\n\nrest\n")
    script = os.path.join(ROOT, "scripts", "gen_perf_readme.py")
    args = [sys.executable, script, "--results", str(perf / "results.json"),
            "--readme", str(readme)]
    assert subprocess.run(args + ["--check"], capture_output=True).returncode == 1
    subprocess.run(args, check=True, capture_output=True)
    text = readme.read_text()
    assert "stale" not in text and text.startswith("# x\n\nintro\n\n<!-- perf:begin -->\n## ")
    # under an existing "## Performance" heading, the section brings no heading of its own
    readme.write_text("# x\n\n## Performance\n\n<!-- perf:begin -->\n<!-- perf:end -->\n")
    subprocess.run(args, check=True, capture_output=True)
    text = readme.read_text()
    assert text.count("## Performance") == 1 and "### matmul" in text
    readme.write_text("# x\n\nintro\n\n<!-- perf:begin -->\nstale\n<!-- perf:end -->\n\nrest\n")
    subprocess.run(args, check=True, capture_output=True)
    text = readme.read_text()
    assert text.rstrip().endswith("rest") and "Test CPU" in text
    assert "perf/PERFORMANCE.md" in text
    assert "# Performance" in (perf / "PERFORMANCE.md").read_text()
    assert subprocess.run(args + ["--check"], capture_output=True).returncode == 0


def test_cli_rejects_bad_arguments(capsys):
    assert cli.main(["nosuchsuite", "--quick"]) == 2
    with pytest.raises(SystemExit):
        cli.main(["--threads", "0"])
    assert cli.main(["matmul", "--backends", "nosuch", "--quick", "--refs", "none"]) == 2


@pytest.mark.skipif(not importlib.util.find_spec("matplotlib"), reason="matplotlib missing")
def test_plots_from_results(tmp_path):
    from torchic.bench import plots
    written, notes = plots.write_plots(_results(), str(tmp_path))
    assert not notes and any(p.endswith("matmul.png") for p in written)


def test_figures_slower_with_more_threads_are_flagged():
    from torchic.bench.runner import Runner
    r = Runner(["matmul"], backends=[], references=[], stream=None)
    fast = _rec("torch", "elementwise", "add", "64K", 1, 100.0, "GB/s", 1e-5)
    slow = _rec("torch", "elementwise", "add", "64K", 2, 0.1, "GB/s", 8e-3)
    fine = _rec("numpy", "elementwise", "add", "64K", 2, 90.0, "GB/s", 1.1e-5)
    r.records = [fast, slow, fine, _rec("numpy", "elementwise", "add", "64K", 1, 95, "GB/s", 1e-5)]
    r.flag_thread_anomalies()
    assert "suspect" in slow and "suspect" not in fine and "suspect" not in fast
    assert any("slower with more threads" in n for n in r.notes)


def test_rounds_interleave_implementations_and_pool_samples():
    """Each implementation is measured once per round, in turn; the figure pools the
    samples of every round."""
    from torchic.bench.runner import Runner
    r = Runner(["overhead"], quick=True, backends=["workers"], references=["numpy"],
               threads=[1], rounds=2, stream=None)
    order = []
    original = r.run_case

    def spy(case, impl, threads, budget=None, first_round=True):
        order.append((impl.name, first_round))
        return original(case, impl, threads, budget, first_round)
    r.run_case = spy
    result = r.run()
    # round 1: workers then numpy; round 2: the same again (only round 1 checks results)
    ours = [o for o in order if o[0] == "workers"]
    n = len(ours) // 2               # the suite's cases, each once per round
    assert n >= 2 and ours == [("workers", True)] * n + [("workers", False)] * n
    assert order.index(("numpy", True)) < order.index(("workers", False))
    recs = [x for x in result["records"] if x["case"] == "add_chain"]
    assert {x["impl"] for x in recs} == {"workers", "numpy"}
    for x in recs:
        assert x["rounds"] == 2 and len(x["round_medians_s"]) == 2
        assert x["check"] == "ok"
        assert min(x["round_medians_s"]) <= x["median_s"] <= max(x["round_medians_s"]) * 1.0001
        assert x["value"] == pytest.approx(metric_value(x["metric"], x["work"], x["median_s"]))


def test_cli_rejects_zero_rounds(capsys):
    assert cli.main(["overhead", "--rounds", "0"]) == 2
    assert "--rounds" in capsys.readouterr().err


def test_openblas_tuning_is_removed_for_the_rerun_and_reported():
    env, removed = machine.without_openblas_tuning(
        {"OPENBLAS_CORETYPE": "Haswell", "OPENBLAS_L2_SIZE": "512", "PATH": "/bin"})
    assert removed == {"OPENBLAS_CORETYPE": "Haswell", "OPENBLAS_L2_SIZE": "512"}
    assert "OPENBLAS_CORETYPE" not in env and "OPENBLAS_L2_SIZE" not in env and env["PATH"] == "/bin"
    # the re-run itself does not run again, and says what was removed
    assert machine.without_openblas_tuning(env) == (None, {})
    text = machine.openblas_env_text({"env": {machine.OPENBLAS_UNSET_MARK:
                                              env[machine.OPENBLAS_UNSET_MARK]}})
    assert "OPENBLAS_CORETYPE=Haswell in the environment, unset for this run" in text
    assert machine.without_openblas_tuning({"PATH": "/bin"}) == (None, {})


def test_unreliable_cells_give_no_ratio_and_quick_mode_no_verdicts():
    res = _results()
    res["records"][0]["suspect"] = "3.0x slower with 2 threads than with 1"
    res["targets"] = targets.evaluate(res["records"], _impls("workers", "numpy"), False)
    headers, rows, _ = report.suite_table(res, "matmul")
    cell = rows[0][headers.index("workers vs numpy")]
    assert cell.startswith("- (unreliable: 3.0x slower") and "0.25x" not in cell
    text = report.terminal_report(res)
    assert "0.25x" not in text
    assert "targets (ratios from this run)" in text
    res["quick"] = True
    text = report.terminal_report(res)
    assert "targets (ratios" not in text and "PASS" not in text and "FAIL" not in text
    assert "not judged in --quick mode" in text
    assert "Targets" not in report.markdown_report(res)
