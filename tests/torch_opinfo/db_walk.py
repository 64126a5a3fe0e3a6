"""What the OpInfo walk (opinfo_harness.py, op_db) and the ModuleInfo walk
(tests/torch_moduleinfo/moduleinfo_harness.py, module_db) share around their harnesses.

A harness `h` is a module with `entry_id(entry)`, `run_entry(entry)`, `run_all(selected)`,
`in_webgpu_sample(eid)` and `full_walk()`; a run of one entry is a dict with at least "entry", "status" ("pass",
"fail", "missing", "skip") and "reason". Here: the webgpu subset and the whole-database run
(`in_sample`, `run_all`), the loop over one column's references (`run_refs`), the baseline
test (`read_baseline`, `check_baseline`), and the coverage scripts' walk, summary table and
command line (`walk`, `passing_everywhere`, `backend_rows`, `main`).
"""

import argparse
import collections
import os
import sys
import time
import warnings
import zlib

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WEBGPU_SAMPLE = 3            # webgpu on lavapipe runs 1 entry in 3 unless the walk is full


def in_sample(eid):
    """Whether entry `eid` is in webgpu's deterministic subset (1 in WEBGPU_SAMPLE by hash)."""
    return zlib.crc32(eid.encode()) % WEBGPU_SAMPLE == 0


def run_all(run_entry, entry_id, entries, selected=None):
    """run_entry for each entry (those whose id is in `selected`, where given), in the
    database's order, torch on one thread (CI has 2 cores, and torchic's workers use them)."""
    import torch
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return [run_entry(e) for e in entries if selected is None or entry_id(e) in selected]
    finally:
        torch.set_num_threads(threads)


def run_refs(refs, run_one, result, describe, unsupported):
    """Run `run_one(ref)` for each of one column's references, up to the first failure:
    returns (status "pass" or "fail", how many ran). A ref raising `unsupported` (it needs
    what the backend lacks) is counted in result["dropped"]; the first failure's message,
    `describe(ref)` + the error, becomes result["reason"] where it has none, and the
    backend's stream is synced (a kernel error left in it is not the next ref's)."""
    import torchic
    ran = 0
    for ref in refs:
        try:
            run_one(ref)
            ran += 1
        except unsupported:
            result["dropped"] += 1
        except Exception as e:
            if not result["reason"]:
                result["reason"] = f"{describe(ref)}: {type(e).__name__}: {str(e)[:300]}"
            try:
                torchic.sync()
            except Exception:
                pass
            return "fail", ran
    return "pass", ran


def overall(columns):
    """An entry's status from its columns' statuses: fail, else pass, else skip."""
    statuses = set(columns.values())
    return "fail" if "fail" in statuses else "pass" if "pass" in statuses else "skip"


# ---------------------------------------------------------------- the baseline test

def read_baseline(path):
    """The entry ids of a passing.txt (comments and blank lines aside)."""
    with open(path) as f:
        return [line.strip() for line in f if line.strip() and not line.startswith("#")]


def selection(h, entries, backend):
    """The entry ids walked on `backend` (None: all of them)."""
    if backend != "webgpu" or h.full_walk():
        return None
    return {h.entry_id(e) for e in entries if h.in_webgpu_sample(h.entry_id(e))}


def check_baseline(h, entries, backend, path, db, script):
    """Fail naming every entry of the baseline at `path` that no longer passes on `backend`
    (with its reason); warn about entries that pass but are not in it (`script --baseline`
    adds those that pass everywhere)."""
    results = h.run_all(selection(h, entries, backend))
    # the torch side kept for the next backend is ~300k objects: every later scan of the
    # heap in the session (gc, torch.compile's gc.get_referrers) pays for them, more than
    # the next walk pays to build them again
    h.forget_references()
    listed = set(read_baseline(path))
    regressed = [r for r in results if r["entry"] in listed and r["status"] != "pass"]
    new = [r["entry"] for r in results if r["entry"] not in listed and r["status"] == "pass"]
    if new:
        warnings.warn(f"{len(new)} {db} entries pass on {backend} but are not in "
                      f"{os.path.relpath(path, ROOT)}: "
                      f"{', '.join(new)}; those that pass on every backend are added by "
                      f"`python {script} --baseline`", stacklevel=2)
    assert not regressed, f"{len(regressed)} baseline entries no longer pass on {backend}:\n" + \
        "\n".join(f"  {r['entry']} ({r['status']}): {r['reason']}" for r in regressed)


# ---------------------------------------------------------------- the coverage scripts

def walk(h, backends, selected=None):
    """{backend: [run_entry result]} and the seconds each backend took."""
    import torchic
    h.run_all(set())            # (loads the database: not part of the first backend's time)
    results, seconds = {}, {}
    for b in backends:
        torchic.init(b)
        t0 = time.perf_counter()
        results[b] = h.run_all(selected)
        seconds[b] = time.perf_counter() - t0
        print(f"{b}: {collections.Counter(r['status'] for r in results[b])} "
              f"in {seconds[b]:.0f} s", file=sys.stderr)
    return results, seconds


def passing_everywhere(results):
    """The entries that pass on every backend walked, in the database's order."""
    first = next(iter(results.values()))
    return [r["entry"] for k, r in enumerate(first)
            if all(rs[k]["status"] == "pass" for rs in results.values())]


def backend_rows(results, seconds, runs_key, runs_label):
    """The markdown table of counts per backend (`runs_key`: the result's count of runs)."""
    n = len(next(iter(results.values())))
    lines = [f"| backend | entries | passing | failing | missing | skipped | {runs_label} | "
             "seconds |", "|---|---|---|---|---|---|---|---|"]
    for b, rs in results.items():
        c = collections.Counter(r["status"] for r in rs)
        lines.append(f"| `{b}` | {n} | {c['pass']} | {c['fail']} | {c['missing']} | "
                     f"{c['skip']} | {sum(r[runs_key] for r in rs)} | {seconds[b]:.0f} |")
    return lines


def entry_tables(results, cells, columns_key, note_len, missing_text, skipped_intro):
    """The per-entry table's rows (| entry | cells(k, r)... | note |: `cells` giving
    the row's cells after the entry's, `note` the first backend's reason) and the sections
    after it: the entries missing (by name, `missing_text` first) and those skipped with no
    column run (their reasons, `skipped_intro` lines first)."""
    backends = list(results)
    first = results[backends[0]]
    lines, missing, skipped = [], [], []
    for k, r in enumerate(first):
        if r["status"] == "missing":
            missing.append(r["entry"])
            continue
        if r["status"] == "skip" and not r[columns_key]:
            skipped.append(r)
            continue
        note = next((results[b][k]["reason"] for b in backends if results[b][k]["reason"]), "")
        note = note.replace("|", "\\|").replace("\n", " ")[:note_len]
        lines.append(f"| `{r['entry']}` | " + " | ".join(cells(k, r)) + f" | {note} |")
    lines += ["", f"## Missing ({len(missing)})", "", missing_text, "",
              ", ".join(f"`{e}`" for e in missing), "", f"## Skipped ({len(skipped)})", "",
              *skipped_intro, "| entry | reason |", "|---|---|"]
    return lines + [f"| `{r['entry']}` | {r['reason']} |" for r in skipped]


def main(doc, harness, render, selector, columns_key, out, baseline, header):
    """A coverage script's command line: walk the harness module named `harness` on
    --backends, then either print the --<selector> entries' results (their `columns_key`)
    or write `out` from `render(results, seconds)` (and with --baseline the baseline file,
    `header` first). The script puts the suites' folders and src/ on sys.path."""
    import importlib
    import torchic
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--backends", default=None,
                    help="comma list (default: every registered backend)")
    ap.add_argument(f"--{selector}", default=None,
                    help="comma list of entry ids: print, write nothing")
    ap.add_argument("--baseline", action="store_true",
                    help=f"also rewrite {os.path.relpath(baseline, ROOT)}")
    args = ap.parse_args()
    h = importlib.import_module(harness)
    backends = args.backends.split(",") if args.backends else torchic.backend_names()
    chosen = getattr(args, selector)
    selected = set(chosen.split(",")) if chosen else None
    results, seconds = walk(h, backends, selected)
    if selected:
        for b in backends:
            for r in results[b]:
                print(b, r["entry"], r["status"], r[columns_key], r["reason"])
        return
    with open(out, "w") as f:
        f.write(render(results, seconds))
    print(f"wrote {os.path.relpath(out, ROOT)}", file=sys.stderr)
    if args.baseline:
        everywhere = passing_everywhere(results)
        with open(baseline, "w") as f:
            f.write(header + "".join(e + "\n" for e in everywhere))
        print(f"wrote {os.path.relpath(baseline, ROOT)} ({len(everywhere)} entries)",
              file=sys.stderr)
