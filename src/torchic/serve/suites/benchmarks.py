"""The benchmark suites of `python -m torchic bench`, on the page.

Each suite of ``torchic.bench.suites.SUITES`` (matmul, elementwise, reduce,
overhead, train, memory, and any added later) becomes one page suite whose
buttons pick the implementation (torchic backends and the references: NumPy,
PyTorch, tinygrad), the thread count, the case, the size and the budget. The
measuring is the bench's own (``Runner.run_case``: result check, warm-up,
medians), so the page and the terminal report the same figures.
"""

import contextlib
import importlib.util
import os

from torchic.bench import impls as bench_impls
from torchic.bench import runner as bench_runner
from torchic.bench import suites as bench_suites

from .. import Skip, define_bench
from ._common import backends, cores, thread_choices, unavailable_backends

COLUMNS = ["impl", "threads", "case", "size", "value", "metric", "median_ms", "status", "message"]
BUDGETS = ["quick", "full"]

# how each suite is drawn: x is the row field "n" (the size as a number), one panel per op
PRESENTATION = {
    "matmul": dict(title="Matmul GFLOPS", plot={
        "x": "n", "y": "value", "series": ["impl", "threads"], "xlog": True,
        "xlabel": "n (n×n @ n×n)", "ylabel": "GFLOPS"}),
    "elementwise": dict(title="Elementwise throughput", plot={
        "x": "n", "y": "value", "series": ["impl", "threads"], "panel": "case", "xlog": True,
        "xlabel": "elements", "ylabel": "GB/s"}),
    "reduce": dict(title="Reductions, softmax, cross-entropy", plot={
        "x": "n", "y": "value", "series": ["impl", "threads"], "panel": "case", "xlog": True,
        "xlabel": "elements", "ylabel": "GB/s"}),
    "overhead": dict(title="Per-op overhead (µs per op, lower is better)"),
    "train": dict(title="makemore training step (ms per step, lower is better)"),
    "memory": dict(title="Heap use across a training run (torchic only)"),
}


_case_cache = {}


def _cases(suite, quick):
    """The bench's cases, built once per process: the Runner caches expected results by
    case identity, and the cases cache their input data."""
    key = (suite, quick)
    if key not in _case_cache:
        _case_cache[key] = bench_suites.SUITES[suite]({"quick": quick, "gpu": False})
    return _case_cache[key]


def _x(case):
    p = case.params
    if "n" in p:
        return p["n"]
    if "numel" in p:
        return p["numel"]
    if "rows" in p and "cols" in p:
        return p["rows"] * p["cols"]
    if "batch" in p:
        return p["batch"] * p.get("hidden", 1)
    return None


def _choices(suite):
    """(case names, size labels in size order, quick size labels) over quick + full runs."""
    quick, full = _cases(suite, True), _cases(suite, False)
    names = list(dict.fromkeys(c.name for c in quick + full))
    sized = {}
    for c in quick + full:
        sized.setdefault(c.label, _x(c) or 0)
    labels = sorted(sized, key=lambda lab: (sized[lab], lab))
    return names, labels, list(dict.fromkeys(c.label for c in quick))


def _reference_disabled():
    """Cheap availability of the references for the buttons (the run checks for real)."""
    out = {}
    for name in bench_impls.REFERENCES:
        module = "torch" if name.startswith("torch") else name
        if module != "numpy" and importlib.util.find_spec(module) is None:
            out[name] = f"{module} is not installed"
    if "torch-cuda" in bench_impls.REFERENCES and "torch-cuda" not in out and \
            not os.path.exists("/dev/nvidiactl"):
        out["torch-cuda"] = "no CUDA device"
    return out


def _impl_choices():
    return backends() + [r for r in bench_impls.REFERENCES]


def _impl_disabled():
    return {**unavailable_backends(), **_reference_disabled()}


def _impl_defaults():
    disabled = _impl_disabled()
    return [n for n in backends() if n not in disabled] + ["numpy"]


_impl_cache = {}
_runner_cache = {}


def _implementation(name):
    """The bench's implementation object for a backend or reference name (cached)."""
    if name not in _impl_cache:
        is_backend = name in backends()
        found, skipped = bench_impls.resolve([name] if is_backend else [],
                                             [] if is_backend else [name])
        _impl_cache[name] = (found[0], "") if found else (None, skipped[0][1])
    impl, why = _impl_cache[name]
    if impl is None:
        raise Skip(f"{name} cannot run here: {why}")
    return impl


def _runner(suite, budget):
    key = (suite, budget)
    if key not in _runner_cache:
        _runner_cache[key] = bench_runner.Runner([suite], quick=budget == "quick", backends=[],
                                                 references=[], stream=None)
    return _runner_cache[key]


@contextlib.contextmanager
def _session(impl, threads):
    with impl.session(threads):
        yield impl


def _row_from_record(rec, x):
    status = "ok"
    message = ""
    if rec.get("skipped"):
        status, message = "skip", rec["skipped"]
    elif rec.get("error"):
        status, message = "error", rec["error"]
    elif rec.get("check") not in (None, "ok"):
        status, message = "mismatch", rec["check"]
    row = {"threads": rec.get("threads") if rec.get("threads") is not None else "-",
           "value": rec.get("value"), "metric": rec.get("metric"), "status": status,
           "message": message, "n": x}
    if rec.get("median_s") is not None:
        row["median_ms"] = rec["median_s"] * 1e3
        for k in ("min_s", "max_s", "p10_s", "p90_s", "n_samples", "number"):
            if k in rec:
                row[k] = rec[k]
    if rec.get("values"):
        v = rec["values"]
        row["values"] = v
        if "recycle_rate" in v:
            row["message"] = (f"peak {v.get('peak_mib', 0):.2f} MiB, recycled "
                              f"{v['recycle_rate']:.1%}, {v.get('fresh_per_step', 0):.2f} "
                              f"fresh allocs/step, {v.get('ms_per_step', 0):.2f} ms/step")
    for k in ("first_step_loss", "expected_first_step_loss", "traceback"):
        if k in rec:
            row[k] = rec[k]
    return row


def _runs_once():
    """The implementations without a thread setting (GPUs, tinygrad): they run once."""
    objs = [bench_impls.TorchicImpl(n) for n in backends()]
    objs += [make() for make in bench_impls.REFERENCES.values()]
    return [o.name for o in objs if not bench_runner.impl_threaded(o)]


def _skip_rules(suite):
    """The combinations the suite function is not called for (see registry.py), and why."""
    names, labels, _ = _choices(suite)
    cases = _cases(suite, True) + _cases(suite, False)
    rules = []
    if len(names) > 1:      # each case has its own sizes
        for name in names:
            have = {c.label for c in cases if c.name == name}
            missing = [lab for lab in labels if lab not in have]
            if missing:
                rules.append({"when": {"case": [name], "size": missing},
                              "why": f"{name} is not measured at this size"})
    only = [c for c in cases if c.torchic_only]
    if only:
        when = {"impl": list(bench_impls.REFERENCES),
                "size": list(dict.fromkeys(c.label for c in only))}
        if len(names) > 1:
            when["case"] = list(dict.fromkeys(c.name for c in only))
        rules.append({"when": when, "why": "a torchic-only case (no reference runs it)"})
    for name in _runs_once():
        rules.append({"when": {"impl": [name]}, "unless_first": "threads",
                      "why": f"{name} runs once, not per thread count"})
    return rules


def make_suite_fn(suite):
    # the skip rules (_skip_rules) keep out the pairs that do not exist, references on
    # torchic-only cases and the thread counts of implementations that run once
    def fn(run, impl, threads, size, budget, case=None):
        matching = [c for c in _cases(suite, budget == "quick")
                    if c.label == size and (case is None or c.name == case)]
        if not matching:   # this size belongs to the other budget's list
            matching = [c for c in _cases(suite, budget != "quick")
                        if c.label == size and (case is None or c.name == case)]
        bench_case = matching[0]
        obj = _implementation(impl)
        threaded = bench_runner.impl_threaded(obj)
        t = threads if threaded else None
        key = ("bench", impl, t, id(bench_case) if bench_case.fresh_session else None)
        run.session(key, lambda: _session(obj, threads))
        bench_case.seq = 0
        rec = _runner(suite, budget).run_case(bench_case, obj, t)
        row = _row_from_record(rec, _x(bench_case))
        if row["status"] == "error" and rec.get("traceback"):
            run.log(f"{suite} {impl} {size}: {rec['traceback']}")
        run.row(case=bench_case.name, **row)
    return fn


def _define(suite):
    names, labels, quick_labels = _choices(suite)
    params = {"impl": _impl_choices, "threads": thread_choices}
    if len(names) > 1:
        params["case"] = names
    params["size"] = labels
    params["budget"] = BUDGETS
    ncores = cores()
    defaults = {"impl": _impl_defaults,
                "threads": lambda: bench_runner.default_threads(suite, ncores),
                "size": quick_labels, "budget": ["quick"]}
    if suite == "memory":
        defaults["impl"] = lambda: [n for n in backends() if n not in unavailable_backends()]
    pres = PRESENTATION.get(suite, {})
    columns = COLUMNS if len(names) > 1 else [c for c in COLUMNS if c != "case"]
    define_bench(suite, make_suite_fn(suite), params, defaults=defaults, columns=columns,
                 disabled={"impl": _impl_disabled}, run_all={"budget": ["quick"]},
                 title=pres.get("title", suite), skip=lambda: _skip_rules(suite),
                 plot=pres.get("plot"),
                 description="the `python -m torchic bench` suite: torchic backends beside "
                             "the references in one process; medians after warm-up")


for _suite in bench_suites.SUITES:
    _define(_suite)
