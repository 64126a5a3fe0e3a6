"""Tables from a results dict: aligned text for the terminal, Markdown for the README.

Everything here reads only the results dict (the JSON file), so the README's
performance section can be regenerated from a committed results file
(scripts/gen_perf_readme.py) with no benchmark run.
"""

from .machine import blas_summary, env_text, hardware, openblas_env_text, versions_text
from .runner import fmt

SUITE_TITLES = {
    "matmul": "matmul: square C = A @ B (float32; the matmul_f64 rows float64)",
    "elementwise": "elementwise: float32 arrays",
    "reduce": "reductions: sum, softmax over rows, cross-entropy (mean loss)",
    "overhead": "overhead: tiny ops, issue to result",
    "train": "train: training steps, eager (makemore MLP, makemore Transformer, GPTs, the "
             "lecture scripts; loss.item() included)",
    "compile": "compile: torchic.compile'd chain, makemore, LeNet, LSTM LM and GPT steps (torchic) vs the "
               "references' eager code (torch-compile / torch-cuda-compile: torch.compile)",
    "memory": "memory: torchic heap across a short training run (torchic.memory())",
    # issue 42 (bench/conv.py)
    "conv": "conv: LeNet training step (b64 28x28, SGD, incl. loss.item()) and a ResNet-shaped "
            "conv2d forward + backward",
    "lstm": "lstm: character LSTM LM step (embedding, 2-layer LSTM, linear head, cross "
            "entropy, Adam; incl. loss.item())",
    # dataloader workers (bench/loader.py)
    "loader": "loader: DataLoader epoch, ~1 ms of pure-Python work per item, num_workers 0 vs "
              "2 (persistent); speed-up = ratio of the two rows",
}

UNIT_NOTES = {
    "GFLOPS": "GFLOPS, higher is better",
    "GB/s": "GB/s moved (inputs read + output written), higher is better",
    "µs/op": "µs per op, lower is better",
    "ms/step": "ms per step, lower is better",
}
MIXED_UNITS = "units per case in the unit column; `vs` columns are speedups (> 1: torchic faster)"

HOW_TO_READ = (
    "Every figure is the median of repeated samples after warm-up, measured in one process in "
    "one run; ratios are computed within that run (runs on a shared machine vary by +-20% "
    "between processes, so compare columns, not files). Full runs measure in rounds "
    "(`--rounds`, default 3): every implementation in turn once per round, the samples of all "
    "rounds pooled, so a drift of the machine's speed hits every column alike. torchic is timed "
    "issue to result (each "
    "call ends with `torchic.sync()` or a read). NumPy and PyTorch get their best case: "
    "preallocated outputs (`out=`) where the API allows, and OpenBLAS's own kernel for the "
    "CPU: where OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE are set, the bench runs itself again "
    "without them (`--keep-openblas-env` keeps them; the BLAS line says what was unset). "
    "Threads: torchic runs with "
    "`torchic.init(backend, threads=t)` (OpenBLAS held to 1 thread under it), NumPy under "
    "threadpoolctl's `threadpool_limits(t)` (only its BLAS is threaded), PyTorch with "
    "`torch.set_num_threads(t)`. GPU implementations (webgpu, PyTorch CUDA) are timed as a stream in "
    "the matmul, elementwise and reduce suites: back-to-back ops with one sync per sample of at "
    "least 20 ms; torchic's webgpu figures there come from GPU timestamps (timestamp-query around "
    "back-to-back calls in one compute pass) where the adapter has them (the record's `timed_as` "
    "says which), PyTorch CUDA's "
    "from the wall clock of the synced stream; "
    "the overhead and train suites time every call to its result. `A vs B` columns are speedups of torchic backend A over "
    "reference B (> 1: torchic is faster). A figure marked `?` was over 2x slower with more "
    "threads than with fewer: usually another process on the machine, see the notes.")


def impl_names(results):
    present = {r["impl"] for r in results["records"]}
    return [n for n in results["impls"] if n in present]


def _threads_key(t):
    return -1 if t is None else t


def suite_table(results, suite):
    """(headers, rows, metric) of one timing suite; None when it has no records."""
    recs = [r for r in results["records"] if r["suite"] == suite]
    if not recs or suite == "memory":
        return None
    impls = [n for n in impl_names(results) if any(r["impl"] == n for r in recs)]
    info = results["impls"]
    by = {(r["case"], r["label"], r["threads"], r["impl"]): r for r in recs}
    case_seq = {}
    for r in recs:
        case_seq.setdefault(r["case"], r["seq"])
    keys = {}
    for r in recs:
        keys.setdefault((r["case"], r["label"], r["threads"]), r["seq"])
    threaded_rows = {(c, lab) for (c, lab, t) in keys if t is not None}
    rows_keys = sorted((k for k in keys if k[2] is not None or (k[0], k[1]) not in threaded_rows),
                       key=lambda k: (case_seq[k[0]], _threads_key(k[2]), keys[k]))

    def rec(case, label, t, impl):
        r = by.get((case, label, t, impl))
        return r if r is not None else by.get((case, label, None, impl))

    torchic = [n for n in impls if info[n]["kind"] == "torchic"]
    refs = [n for n in impls if info[n]["kind"] != "torchic"]
    pairs = []
    for x in torchic:
        same = [r for r in refs if info[r].get("gpu") == info[x].get("gpu")]
        for r in (same or [r for r in refs if r == "numpy"]):
            pairs.append((x, r))
    pairs = [(x, r) for x, r in pairs
             if any(_value(rec(*k, x)) is not None and _value(rec(*k, r)) is not None
                    for k in rows_keys)]
    metrics = {r["case"]: r["metric"] for r in recs}
    mixed = len(set(metrics.values())) > 1     # (conv: ms/step and GFLOPS): a unit column
    headers = (["case", "size"] + ["unit"] * mixed + ["threads"] + impls
               + [f"{x} vs {r}" for x, r in pairs])
    rows = []
    metric = MIXED_UNITS if mixed else recs[0]["metric"]
    for k in rows_keys:
        row = [k[0], k[1]] + [metrics[k[0]]] * mixed + ["-" if k[2] is None else str(k[2])]
        for n in impls:
            row.append(_cell(rec(*k, n)))
        for x, r in pairs:
            a, b = rec(*k, x), rec(*k, r)
            shaky = [r.get("suspect") for r in (a, b) if r is not None and r.get("suspect")]
            if _value(a) is None or _value(b) is None:
                row.append("")
            elif shaky:        # an unreliable figure gives no ratio: a dash and the reason
                row.append(f"- (unreliable: {shaky[0]})")
            else:
                row.append(f"{b['median_s'] / a['median_s']:.2f}x")
        rows.append(row)
    return headers, rows, metric


def _value(r):
    return None if r is None else r.get("value")


def _cell(r):
    if r is None:
        return ""
    if r.get("value") is not None:
        s = fmt(r["value"])
        if r.get("check") and r["check"] != "ok":
            s += " (WRONG)"
        if r.get("suspect"):
            s += "?"
        return s
    if r.get("skipped"):
        return "skip"
    return "error"


MEMORY_COLUMNS = [
    ("peak MiB", "peak_mib", "{:.2f}"), ("in use MiB", "in_use_mib", "{:.2f}"),
    ("heap MiB", "heap_mib", "{:.0f}"), ("allocs/step", "allocs_per_step", "{:.1f}"),
    ("fresh/step", "fresh_per_step", "{:.2f}"), ("recycled", "recycle_rate", "{:.1%}"),
    ("live tensors", "live_tensors", "{}"), ("left after free MiB", "after_free_mib", "{:.3f}"),
    ("ms/step", "ms_per_step", "{:.2f}"),
]


MEMORY_NOTE = (
    "Exact figures from `torchic.memory()` across the run (after warm-up steps): peak and "
    "in-use bytes of live blocks, the heap's size, allocations per step, and how many of them "
    "were *fresh* (carved from a free range: every block over 1 MiB is, by design) rather than "
    "recycled from a size-class bucket in O(1). 'left after free' is what stays in use once the "
    "model and its tensors are dropped (cached scalar constants).")


def memory_table(results):
    recs = [r for r in results["records"] if r["suite"] == "memory"]
    if not recs:
        return None
    headers = ["model", "backend", "threads", "steps"] + [c[0] for c in MEMORY_COLUMNS]
    rows = []
    for r in sorted(recs, key=lambda r: (r["seq"], r["impl"])):
        v = r.get("values")
        row = [r["label"], r["impl"], "-" if r["threads"] is None else str(r["threads"]),
               str(r["params"].get("steps", ""))]
        if v:
            row += [f.format(v[k]) for _, k, f in MEMORY_COLUMNS]
        else:
            row += [r.get("skipped") or ("error: " + r.get("error", "?"))] + \
                [""] * (len(MEMORY_COLUMNS) - 1)
        rows.append(row)
    return headers, rows


def targets_table(results):
    rows = []
    for t in results.get("targets", []):
        unit = t.get("unit") or ""
        mine = f"{t['impl']} {fmt(t['value'])} {unit}" if t.get("value") is not None else t["impl"]
        if t.get("ref_value") is not None:
            ref = f"{t['ref']} {fmt(t['ref_value'])} {unit}"
        else:
            ref = t["ref"] or "(absolute)"
        ratio = "" if t.get("ratio") is None else "- (unreliable)" if "suspect: " in t.get(
            "note", "") else (
            f"{t['ratio']:.2f}x" if t["ref"] else fmt(t["ratio"]) + f" {unit}")
        if t["goal"] is None:
            goal = "-"
        elif t["ref"]:
            goal = f"{t['op']} {t['goal']:.2f}x"
        else:
            goal = f"{t['op']} {fmt(t['goal'])} {unit}"
        th = "-" if t["threads"] is None else str(t["threads"])
        rows.append([f"#{t['issue']}", t["title"], th, mine, ref, ratio, goal, t["status"],
                     t.get("note", "")])
    headers = ["issue", "target", "threads", "torchic", "reference", "ratio", "goal", "result",
               "note"]
    return headers, rows


# -- rendering ---------------------------------------------------------------------------------
def render_text(headers, rows):
    widths = [max(len(str(x)) for x in col) for col in zip(headers, *rows)]
    right = [i for i, h in enumerate(headers) if i >= 3 or h in ("threads",)]

    def line(cells):
        out = []
        for i, (c, w) in enumerate(zip(cells, widths)):
            out.append(str(c).rjust(w) if i in right else str(c).ljust(w))
        return "  ".join(out).rstrip()
    sep = "  ".join("-" * w for w in widths)
    return "\n".join([line(headers), sep] + [line(r) for r in rows])


def _numeric_column(cells):
    filled = [str(c) for c in cells if str(c).strip()]
    return bool(filled) and sum(c.lstrip("-+")[:1].isdigit() for c in filled) * 2 > len(filled)


def render_markdown(headers, rows):
    def esc(c):
        return str(c).replace("|", "\\|")
    align = ["---:" if _numeric_column(col) else "---" for col in zip(*rows)] if rows else \
        ["---"] * len(headers)
    out = ["| " + " | ".join(esc(h) for h in headers) + " |", "|" + "|".join(align) + "|"]
    out += ["| " + " | ".join(esc(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def machine_line(results):
    """(hardware, software, BLAS, env) of the report's header (machine.py words them)."""
    m = results["machine"]
    return ("; ".join(hardware(m)), versions_text(m),
            blas_summary(m["blas"]) + "; " + openblas_env_text(m), env_text(m, "`{}={}`", ", "))


def terminal_report(results):
    out = []
    for suite in results["config"]["suites"]:
        if suite == "memory":
            t = memory_table(results)
            if t:
                out += ["", SUITE_TITLES[suite], render_text(*t)]
            continue
        t = suite_table(results, suite)
        if t:
            headers, rows, metric = t
            out += ["", f"{SUITE_TITLES[suite]}  [{UNIT_NOTES.get(metric, metric)}]",
                    render_text(headers, rows)]
    headers, rows = targets_table(results)
    if rows and not results.get("quick"):   # quick mode: toy sizes measure, they judge nothing
        out += ["", "targets (ratios from this run)", render_text(headers, rows)]
    elif rows:
        out += ["", "targets: not judged in --quick mode (toy sizes); run without --quick"]
    if results.get("notes"):
        out += ["", "notes:"] + [f"  - {n}" for n in results["notes"]]
    return "\n".join(out)


PLOTS = [("matmul.png", "matmul GFLOPS against size"),
         ("elementwise.png", "elementwise GB/s against size"),
         ("speedup.png", "speedup over the workers backend")]


COMPACT_SUITES = ("matmul", "overhead", "train")


def command_line(results):
    """The bench command as run, without --out (where the files went is no figure)."""
    argv, shown, skip = list(results.get("argv") or []), [], False
    for a in argv:
        if skip:
            skip = False
        elif a == "--out":
            skip = True
        elif not a.startswith("--out="):
            shown.append(a)
    return " ".join(["python -m torchic bench"] + shown)


def short_machine(results):
    """One phrase naming a run's machine and what ran: for links between result pages."""
    m = results["machine"]
    gpu = m.get("torch", {}).get("cuda_device") or (m.get("webgpu_adapter") or {}).get("device")
    what = ", ".join(results["impls"][n]["label"] for n in impl_names(results))
    where = f"{m['cpu'].get('model')}, {m['cpu'].get('usable_cores')} cores"
    return f"{where}{' + ' + gpu if gpu else ''}: {what}"


def markdown_report(results, image_prefix="", heading="##", plots=None, compact=False,
                    full_link=None, title=True, other_runs=()):
    """The performance section: machine, how to read, targets, one table per suite, plots.

    compact: only the targets and the matmul / overhead / train tables (for the README),
    with a link (full_link) to the page that has every table.
    """
    h2, h3 = heading, heading + "#"
    hw, vers, blas, env = machine_line(results)
    date = results["created"][:10]
    kind = "quick (toy sizes)" if results.get("quick") else "full"
    out = ([f"{h2} Performance", ""] if title else []) + [
           f"Measured with `{command_line(results)}` "
           f"on {date} ({kind} run, {results.get('elapsed_s', 0) / 60:.1f} min).", "",
           f"- **Machine:** {hw}",
           f"- **Software:** {vers}",
           f"- **NumPy's BLAS:** {blas}",
           f"- **Environment:** {env}",
           "- **Ran:** " + ", ".join(results["impls"][n]["label"] for n in impl_names(results)),
           "- **Threads:** " + "; ".join(f"{s} {','.join(map(str, t))}" for s, t in
                                        results["config"].get("threads", {}).items()),
           ]
    skipped = [f"{n} ({i.get('why')})" for n, i in results["impls"].items()
               if not i.get("available")]
    if skipped:
        out.append("- **Not run:** " + "; ".join(skipped))
    out += ["", HOW_TO_READ, ""]
    headers, rows = targets_table(results)
    if rows and not results.get("quick"):
        out += [f"{h3} Targets", "",
                "The backend issues' goals, computed from the figures below (ratio = torchic / "
                "reference in the row's unit).", "", render_markdown(headers, rows), ""]
    plot_for = {"matmul": "matmul.png", "elementwise": "elementwise.png"}
    plots = set(plots) if plots is not None else {p for p, _ in PLOTS}
    for suite in results["config"]["suites"]:
        if compact and suite not in COMPACT_SUITES:
            continue
        if suite == "memory":
            t = memory_table(results)
            if t:
                out += [f"{h3} {SUITE_TITLES[suite]}", "", MEMORY_NOTE, "",
                        render_markdown(*t), ""]
            continue
        t = suite_table(results, suite)
        if not t:
            continue
        headers, rows, metric = t
        out += [f"{h3} {SUITE_TITLES[suite]}", "", f"Unit: {UNIT_NOTES.get(metric, metric)}.", ""]
        if plot_for.get(suite) in plots:
            out += [f"![{suite}]({image_prefix}{plot_for[suite]})", ""]
        out += [render_markdown(headers, rows), ""]
    if "speedup.png" in plots:
        out += [f"{h3} Speedup over `workers`", "", f"![speedup]({image_prefix}speedup.png)", ""]
    if compact and full_link:
        out += [f"Every table (elementwise, reductions, memory) and the raw figures: "
                f"[{full_link}]({full_link}). To measure your machine: `python -m torchic "
                f"bench` (`--quick` for a smoke run); to refresh these docs from a run: "
                f"`python -m torchic bench --out docs/perf && python scripts/gen_perf_readme.py`.",
                ""]
    if other_runs:
        out += ["Also measured (each page is one run on one machine):", ""] + \
            [f"- [{text}]({href})" for text, href in other_runs] + [""]
    if results.get("notes"):
        out += [f"{h3} Notes", ""] + [f"- {n}" for n in results["notes"]] + [""]
    out += ["<sub>Generated by `scripts/gen_perf_readme.py` from the committed results file; "
            "do not edit by hand: rerun the bench and the script.</sub>"]
    return "\n".join(out).rstrip() + "\n"
