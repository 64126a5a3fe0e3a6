"""Runs suites over implementations and collects one record per (case, impl, threads).

Loop order: suite -> thread count -> implementation -> case. An implementation
is set up once per (suite, threads) (``torchic.init`` for a backend, thread
limits for a reference) and runs every case of the suite in that setting, so
all figures of one suite come from one process within seconds of each other.
"""

import datetime
import gc
import statistics
import os
import sys
import time
import traceback

from . import machine as machine_mod
from .impls import NotSupported, resolve, threadpoolctl_available
from .suites import SUITES, check, metric_value
from .targets import evaluate
from .timing import Budget, measure, pooled

try:
    from tqdm.auto import tqdm      # optional (pip install 'torchic[progress]')
except ImportError:
    tqdm = None

SCHEMA = 1

# suites where GPU implementations are timed as a stream of queued ops (see impls.py)
STREAM_SUITES = ("matmul", "elementwise", "reduce")


def cores():
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def default_threads(suite, ncores):
    """matmul: 1, 2, 4, ... up to every core; other suites: 1 and every core."""
    ts = {1, ncores}
    if suite == "matmul":
        p = 2
        while p < ncores:
            ts.add(p)
            p *= 2
    return sorted(ts)


class Progress:
    """One line per record: the count done, an ETA (the mean time per record so far times the
    records left), the figure. With tqdm installed and an interactive stream (a terminal, a
    notebook), the lines are written above a tqdm.auto bar."""

    def __init__(self, total, stream):
        self.total, self.done, self.stream = total, 0, stream
        self.width = len(str(total))
        self.start = time.perf_counter()
        interactive = "ipykernel" in sys.modules or getattr(stream, "isatty", lambda: False)()
        self.bar = None if stream is None or tqdm is None or not interactive else tqdm(
            total=total, file=stream, unit="record", dynamic_ncols=True, leave=False)

    def eta(self):
        left = (time.perf_counter() - self.start) / self.done * (self.total - self.done)
        return fmt_duration(left)

    def close(self):
        if self.bar is not None:
            self.bar.close()

    def line(self, rec):
        self.done += 1
        if self.stream is None:
            return
        th = "-" if rec["threads"] is None else rec["threads"]
        rnd = f" (round {rec['round']})" if rec.get("round") else ""
        if rec.get("value") is not None and rec["suite"] == "memory":
            v = rec["values"]
            what = (f"peak {v['peak_mib']:.2f} MiB, recycle {v['recycle_rate']:.1%}, "
                    f"{v['fresh_per_step']:.2f} fresh allocs/step")
        elif rec.get("value") is not None:
            what = (f"{fmt(rec['value']):>9} {rec['metric']:<7} median {fmt_time(rec['median_s'])}"
                    f" ({rec['n_samples']}x{rec['number']})")
            if rec.get("check") and rec["check"] != "ok":
                what += f"  !! {rec['check']}"
        else:
            what = ("skipped: " + rec["skipped"]) if rec.get("skipped") else \
                ("ERROR: " + rec.get("error", "?"))
        text = (f"[{self.done:>{self.width}}/{self.total} ETA {self.eta():>5}] {rec['suite']:<11} "
                f"{rec['case']:<13} {rec['label']:<12} t={th:<3} {rec['impl']:<10} {what}{rnd}")
        if self.bar is None:
            print(text, file=self.stream, flush=True)
        else:
            self.bar.write(text, file=self.stream)
            self.bar.update(1)


def fmt(v):
    if v is None:
        return "-"
    a = abs(v)
    if a >= 1000:
        return f"{v:,.0f}"
    if a >= 100:
        return f"{v:.0f}"
    if a >= 10:
        return f"{v:.1f}"
    if a >= 1:
        return f"{v:.2f}"
    return f"{v:.3g}"


def fmt_duration(s):
    """12s, 3m05s, 1h02m: an ETA."""
    s = int(round(s))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


def fmt_time(s):
    if s >= 1:
        return f"{s:.2f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.3g} ms"
    return f"{s * 1e6:.3g} µs"


class Runner:
    def __init__(self, suites, quick=False, backends=None, references=None, threads=None,
                 repeat=None, rounds=None, stream=sys.stderr, cases=None):
        unknown = [s for s in suites if s not in SUITES]
        if unknown:
            raise ValueError(f"unknown suite(s) {unknown}; known: {', '.join(SUITES)}")
        self.suites = list(suites)
        self.cases = set(cases) if cases else None     # case names to run (None: all)
        self.quick = quick
        self.budget = Budget.quick(repeat) if quick else Budget(repeat=repeat or 7)
        self.rounds = rounds or (1 if quick else 3)
        self.stream = stream
        self.settle_s = 0.0 if quick else 0.2
        self.ncores = cores()
        self.threads_arg = threads
        self.impls, self.skipped = resolve(backends, references)
        self.requested = {"backends": backends, "references": references}
        self.records = []
        self.notes = []
        self._last = {}          # (impl, threads, suite, case) -> (work, median_s)
        self._expected = {}      # id(case) -> expected value

    def threads_for(self, suite):
        if suite == "memory":
            ts = self.threads_arg or default_threads(suite, self.ncores)
            return [max(ts)]
        return list(self.threads_arg) if self.threads_arg else default_threads(suite,
                                                                                 self.ncores)

    def say(self, msg=""):
        if self.stream is not None:
            print(msg, file=self.stream, flush=True)

    # -- the run ----------------------------------------------------------------------------
    def run(self, argv=None):
        start = time.perf_counter()
        want_webgpu = any(i.name == "webgpu" for i in self.impls)
        machine = machine_mod.collect(want_webgpu=want_webgpu, backends=[
            i.name for i in self.impls if i.kind == "torchic"])
        gpu_real = bool(machine.get("torch", {}).get("cuda")) or (
            want_webgpu and not machine_mod.is_cpu_adapter(machine.get("webgpu_adapter")))
        ctx = {"quick": self.quick, "gpu": gpu_real}
        self.say("torchic bench" + (" (quick)" if self.quick else ""))
        for line in machine_mod.summary_lines(machine):
            self.say("  " + line)
        self.say("  running: " + ", ".join(f"{i.name}" for i in self.impls))
        for name, why in self.skipped:
            self.say(f"  skipped: {name} ({why})")
            self.notes.append(f"{name} not run: {why}")
        load = machine.get("loadavg_1min_at_start")
        if load is not None and load > 0.5 * self.ncores:
            self.notes.append(f"the machine was busy when the run started (load average "
                              f"{load:.2f} on {self.ncores} cores): figures, multi-threaded "
                              f"ones most, may be noisy")
            self.say("  note: " + self.notes[-1])
        if not threadpoolctl_available():
            self.notes.append("threadpoolctl is not installed: NumPy's OpenBLAS threads could "
                              "not be limited (NumPy ran with its default thread count) and "
                              "the BLAS kernel is unknown; pip install threadpoolctl")
            self.say("  note: " + self.notes[-1])

        plan = [(s, [c for c in SUITES[s](ctx) if self.cases is None or c.name in self.cases])
                for s in self.suites]
        total = 0
        for suite, cases in plan:
            ths = self.threads_for(suite)
            for impl in self.impls:
                n = sum(1 for c in cases if not (c.torchic_only and impl.kind != "torchic"))
                total += n * (len(ths) if impl_threaded(impl) else 1) * self.rounds_for(cases)
        progress = Progress(total, self.stream)
        try:
            for suite, cases in plan:
                for seq, case in enumerate(cases):
                    case.seq = seq
                self.run_suite(suite, cases, progress)
                self._expected.clear()
                gc.collect()
        finally:
            progress.close()

        self.flag_thread_anomalies()
        impls_info = {}
        for impl in self.impls:
            impls_info[impl.name] = {"label": impl.label, "kind": impl.kind, "gpu": impl.gpu,
                                     "threaded": impl_threaded(impl), "available": True,
                                     "describe": safe(impl.describe)}
        for name, why in self.skipped:
            impls_info[name] = {"label": name, "available": False, "why": why,
                                "kind": "reference" if name in ("numpy", "torch", "torch-cuda",
                                                                "tinygrad") else "torchic"}
        targets = evaluate(self.records, impls_info, gpu_real, self.suites)
        return {
            "schema": SCHEMA,
            "tool": "python -m torchic bench",
            "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "argv": list(argv) if argv is not None else None,
            "quick": self.quick,
            "config": {"suites": self.suites,
                       "threads": {s: self.threads_for(s) for s in self.suites},
                       "backends": self.requested["backends"],
                       "references": self.requested["references"],
                       "budget": vars(self.budget).copy(),
                       "blas_threads_during_torchic": 1 if threadpoolctl_available() else None},
            "machine": machine,
            "gpu_real": gpu_real,
            "impls": impls_info,
            "records": self.records,
            "targets": targets,
            "notes": self.notes,
            "elapsed_s": round(time.perf_counter() - start, 1),
            "loadavg_1min_at_end": machine_mod.loadavg(),
        }

    def rounds_for(self, cases):
        # custom measurements (the memory suite) count things rather than time them: once
        return 1 if any(c.run is not None for c in cases) else self.rounds

    # Rounds: every implementation is measured once per round, in turn, each time with a
    # share of the budget, and a figure is the median of the samples of all rounds. On a
    # small shared machine the speed drifts by tens of percent over a minute; measured
    # round after round, every implementation sees the same drift, so the ratios the
    # targets compare hold still.
    def run_suite(self, suite, cases, progress):
        ths = self.threads_for(suite)
        rounds = self.rounds_for(cases)
        budget = self.budget.per_round(rounds)
        by_key = {}     # (case seq, impl, threads) -> one record per round
        for rnd in range(rounds):
            for t in ths:
                for impl in self.impls:
                    threaded = impl_threaded(impl)
                    if not threaded and t != ths[0]:
                        continue
                    eligible = [c for c in cases
                                if not (c.torchic_only and impl.kind != "torchic")]
                    if not eligible:
                        continue
                    groups = [[c] for c in eligible] if any(c.fresh_session for c in eligible) \
                        else [eligible]
                    for group in groups:
                        recs = self.run_group(group, impl, t if threaded else None, budget,
                                              first_round=rnd == 0)
                        for case, rec in zip(group, recs):
                            by_key.setdefault((case.seq, impl.name, rec["threads"]),
                                              []).append(rec)
                            if rounds > 1:
                                rec["round"] = rnd + 1
                            progress.line(rec)
        for recs in by_key.values():
            self.records.append(merge_rounds(recs))

    def run_group(self, group, impl, threads, budget, first_round):
        """One session of impl running the cases of group; one record per case."""
        recs = []
        # let the previous implementation's spinning thread pools (OpenBLAS, OpenMP) go to
        # sleep before this one starts its own
        time.sleep(self.settle_s)
        try:
            with impl.session(threads):
                for case in group:
                    recs.append(self.run_case(case, impl, threads, budget, first_round))
        except Exception as exc:  # noqa: BLE001  (session setup / teardown)
            msg = f"{type(exc).__name__}: {exc}"
            for case in group[len(recs):]:
                rec = self.base(case, impl, threads)
                rec["error"] = "session failed: " + msg
                recs.append(rec)
        return recs

    def flag_thread_anomalies(self, factor=2.0):
        """Mark figures that got much slower with more threads: on a small shared machine
        that is almost always another process taking a core (an OpenMP / OpenBLAS team
        then waits a scheduler tick per op), not the library. They stay in the results,
        marked, and a note says so."""
        groups = {}
        for r in self.records:
            if r.get("value") is not None and r["threads"] is not None and "median_s" in r:
                groups.setdefault((r["impl"], r["suite"], r["case"], r["label"]), []).append(r)
        flagged = []
        for recs in groups.values():
            recs.sort(key=lambda r: r["threads"])
            base = recs[0]
            for r in recs[1:]:
                if r["median_s"] > factor * base["median_s"]:
                    r["suspect"] = (f"{r['median_s'] / base['median_s']:.1f}x slower with "
                                    f"{r['threads']} threads than with {base['threads']}")
                    flagged.append(r)
        if flagged:
            ex = ", ".join(f"{r['impl']} {r['case']} {r['label']} t={r['threads']}"
                           for r in flagged[:4])
            self.notes.append(
                f"{len(flagged)} figure(s) were over {factor:g}x slower with more threads than "
                f"with fewer ({ex}{', ...' if len(flagged) > 4 else ''}); marked 'suspect' in "
                f"the JSON. On a small shared machine this is usually another process taking a "
                f"core: rerun on a quiet machine before quoting them.")
            self.say("  note: " + self.notes[-1])

    @staticmethod
    def base(case, impl, threads):
        return {"suite": case.suite, "case": case.name, "label": case.label,
                "params": case.params, "impl": impl.name, "kind": impl.kind,
                "threads": threads, "metric": case.metric, "seq": getattr(case, "seq", 0),
                "work": case.work, "value": None}

    def expected(self, case):
        key = id(case)
        if key not in self._expected:
            self._expected[key] = case.expected()
        return self._expected[key]

    def run_case(self, case, impl, threads, budget=None, first_round=True):
        budget = budget or self.budget
        rec = self.base(case, impl, threads)
        fn = None
        try:
            if case.run is not None:
                values = case.run(impl, budget)
                rec["values"] = values
                rec["value"] = values.get("peak_mib")
                return rec
            key = (impl.name, threads, case.suite, case.name)
            last = self._last.get(key)
            # extrapolate only from a compute-bound figure: a small size's time is mostly
            # fixed overhead and would project absurdly long times for the big ones
            if last is not None and last[1] >= 0.05:
                projected = last[1] * case.work / last[0]
                if projected > budget.max_call_s:
                    rec["skipped"] = (f"projected {projected:.1f} s per call (from the previous "
                                      f"size) > {budget.max_call_s:.0f} s limit")
                    return rec
            stream = impl.gpu and case.suite in STREAM_SUITES
            impl.defer_sync = stream
            try:
                fn = case.build(impl)
            finally:
                impl.defer_sync = False
            first = fn()
            if first_round and case.expected is not None:
                ok, detail = check(impl.read(first), self.expected(case), case.rtol, case.atol)
                rec["check"] = "ok" if ok else f"MISMATCH ({detail})"
            if first_round and case.suite == "train":
                rec["first_step_loss"] = float(first)
                rec["expected_first_step_loss"] = self.expected(case)
            del first
            if stream:
                timing = measure(fn, budget, sync=impl.sync,
                                 min_sample_s=max(budget.min_sample_s, budget.gpu_sample_s))
                rec["timed_as"] = "stream: back-to-back calls, one sync per sample"
                gpu_seconds = getattr(impl, "gpu_seconds", None)
                gpu_s = gpu_seconds(fn) if gpu_seconds is not None else None
                if gpu_s:   # the device's own clock: the figure the GPU tables report
                    rec["wall_median_s"] = timing.median_s
                    timing = timing.with_median(gpu_s)
                    rec["timed_as"] = "GPU timestamps around back-to-back calls in one pass"
            else:
                timing = measure(fn, budget)
            rec["_timing"] = timing     # (merge_rounds pools the rounds' samples)
            rec.update(timing.as_dict())
            rec["value"] = metric_value(case.metric, case.work, timing.median_s)
            self._last[key] = (case.work, timing.median_s)
        except NotSupported as exc:
            rec["skipped"] = f"not supported by {impl.name}: {exc}"
        except MemoryError as exc:   # torchic's HeapFullError: a buffer limit of the device
            rec["skipped"] = f"does not fit: {type(exc).__name__}: {exc}"[:300]
        except Exception as exc:  # noqa: BLE001  (recorded; the run goes on)
            rec["error"] = f"{type(exc).__name__}: {exc}"[:500]
            rec["traceback"] = traceback.format_exc(limit=6)[-2000:]
        finally:
            del fn
            if case.suite in ("train", "memory") or case.work >= 1e8:
                gc.collect()
        return rec


def merge_rounds(recs):
    """The record of one figure from its rounds: the first round's record (checks, first
    loss) with the timing of all rounds pooled. A round that failed or skipped wins: the
    figure is reported as failed, with its reason."""
    for r in recs:
        r.pop("round", None)
    timings = [r.pop("_timing", None) for r in recs]
    bad = [r for r in recs if r.get("value") is None]
    if len(recs) == 1 or bad:
        return bad[0] if bad else recs[0]
    merged = dict(recs[0])
    if "wall_median_s" in merged:   # GPU timestamps: one figure per round, take their median
        timing = pooled(timings).with_median(statistics.median(r["median_s"] for r in recs))
        merged["wall_median_s"] = statistics.median(r["wall_median_s"] for r in recs)
    else:
        timing = pooled(timings)
    merged.update(timing.as_dict())
    merged["rounds"] = len(recs)
    merged["round_medians_s"] = [r["median_s"] for r in recs]
    merged["value"] = metric_value(merged["metric"], merged["work"], timing.median_s)
    return merged


def impl_threaded(impl):
    return not impl.gpu and getattr(impl, "threaded", True)


def safe(fn):
    try:
        return fn()
    except Exception as exc:  # noqa: BLE001
        return {"error": str(exc)}
