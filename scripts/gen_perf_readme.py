#!/usr/bin/env python3
"""Generate the performance section of the docs from a committed benchmark results file.

    python -m torchic bench --out docs/perf        # measure (writes results.json + plots)
    python scripts/gen_perf_readme.py              # regenerate the docs from it

Reads docs/perf/results.json and writes
  * docs/perf/PERFORMANCE.md: machine, targets and every table, with the plots;
  * README.md, between the markers <!-- perf:begin --> and <!-- perf:end --> (if present):
    a compact section (targets, matmul / overhead / train tables, plots, link to the rest).
No figure is typed by hand: both are rendered from the JSON by torchic.bench.report.
--check exits 1 when a generated file is out of date (for CI); --plots redraws the PNGs.
"""

import argparse
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "src"))

from torchic.bench import plots as plots_mod  # noqa: E402
from torchic.bench import report, targets  # noqa: E402

BEGIN, END = "<!-- perf:begin -->", "<!-- perf:end -->"


def replace_between_markers(text, body):
    """text with everything between BEGIN and END replaced by body; None if no markers."""
    b, e = text.find(BEGIN), text.find(END)
    if b < 0 or e < 0 or e < b:
        return None
    return text[:b + len(BEGIN)] + "\n" + body.rstrip() + "\n" + text[e:]


def load(path):
    with open(path) as f:
        results = json.load(f)
    # the targets are re-derived from the figures, so a changed goal never leaves a stale row
    results["targets"] = targets.evaluate(results["records"], results["impls"],
                                          results.get("gpu_real", False),
                                          results["config"]["suites"])
    return results


def plots_in(folder):
    return [name for name, _ in report.PLOTS if os.path.exists(os.path.join(folder, name))]


def _has_heading_before(text):
    """True when the line above the begin marker region already is a Markdown heading."""
    head = text[:max(text.find(BEGIN), 0)].rstrip().splitlines()
    return bool(head) and head[-1].lstrip().startswith("#")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--results", default=os.path.join(ROOT, "docs", "perf", "results.json"))
    p.add_argument("--out", default=None,
                   help="the full page (default: PERFORMANCE.md next to the results file)")
    p.add_argument("--readme", default=os.path.join(ROOT, "README.md"),
                   help="README with <!-- perf:begin --> / <!-- perf:end --> markers "
                        "('' to leave every README alone)")
    p.add_argument("--plots", action="store_true", help="redraw the PNG plots from the results")
    p.add_argument("--check", action="store_true",
                   help="write nothing; exit 1 if a generated file is out of date")
    args = p.parse_args(argv)

    results = load(args.results)
    perf_dir = os.path.dirname(os.path.abspath(args.results))
    out = args.out or os.path.join(perf_dir, "PERFORMANCE.md")
    if args.plots and not args.check:
        written, notes = plots_mod.write_plots(results, perf_dir)
        for n in notes:
            print(n, file=sys.stderr)
    present = plots_in(perf_dir)

    outputs = {}
    # other runs kept beside the main one (docs/perf/<name>/results.json, e.g. a GPU machine):
    # each gets its own page, linked from the main page and the README
    others = []
    for name in sorted(os.listdir(perf_dir)):
        sub = os.path.join(perf_dir, name, "results.json")
        if os.path.isfile(sub):
            sub_results = load(sub)
            page = os.path.join(perf_dir, name, "PERFORMANCE.md")
            outputs[page] = report.markdown_report(sub_results, heading="#",
                                                   plots=plots_in(os.path.dirname(sub)))
            others.append((report.short_machine(sub_results), page))

    def links_from(path):
        base = os.path.dirname(os.path.abspath(path))
        return [(text, os.path.relpath(p, base).replace(os.sep, "/")) for text, p in others]

    rel_from_out = os.path.relpath(perf_dir, os.path.dirname(os.path.abspath(out)))
    prefix = "" if rel_from_out == "." else rel_from_out + "/"
    outputs[out] = report.markdown_report(results, image_prefix=prefix, heading="#",
                                          plots=present, other_runs=links_from(out))
    if args.readme and os.path.exists(args.readme):
        with open(args.readme) as f:
            text = f.read()
        readme_dir = os.path.dirname(os.path.abspath(args.readme))
        rel = os.path.relpath(perf_dir, readme_dir).replace(os.sep, "/")
        full = os.path.relpath(out, readme_dir).replace(os.sep, "/")
        section = report.markdown_report(results, image_prefix=rel + "/", heading="##",
                                         plots=present, compact=True, full_link=full,
                                         title=not _has_heading_before(text),
                                         other_runs=links_from(args.readme))
        new = replace_between_markers(text, section)
        if new is None:
            print(f"{args.readme}: no {BEGIN} / {END} markers; README left as it is",
                  file=sys.stderr)
        else:
            outputs[args.readme] = new

    stale = []
    for path, text in outputs.items():
        old = None
        if os.path.exists(path):
            with open(path) as f:
                old = f.read()
        if old != text:
            stale.append(path)
            if not args.check:
                os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
                with open(path, "w") as f:
                    f.write(text)
    if args.check:
        for path in stale:
            print(f"out of date: {path} (run python scripts/gen_perf_readme.py)", file=sys.stderr)
        return 1 if stale else 0
    for path in outputs:
        print(("wrote " if path in stale else "unchanged ") + os.path.relpath(path, ROOT))
    return 0


if __name__ == "__main__":
    sys.exit(main())
