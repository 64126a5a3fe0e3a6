"""PNG plots from a results dict (matplotlib, Agg): GFLOPS and GB/s against size, speedups.

Plots read only the results dict, like the tables, so they can be redrawn from a
committed results file. Missing matplotlib is not an error: ``write_plots``
returns a note instead of files.
"""

import os

STYLE = {  # impl: (colour, marker, linestyle); torchic solid, references dashed
    "workers": ("#1f77b4", "o", "-"), "simd": ("#d62728", "s", "-"),
    "webgpu": ("#2ca02c", "^", "-"), "numpy": ("#555555", "x", "--"),
    "torch": ("#ff7f0e", "d", "--"), "torch-cuda": ("#9467bd", "v", "--"),
    "tinygrad": ("#8c564b", "*", ":"),
}

HEADLINE = [  # (suite, case, label) shown in the speedup plot when measured
    ("matmul", "matmul", "256"), ("matmul", "matmul", "1024"), ("matmul", "matmul", "2048"),
    ("elementwise", "add", "16M"), ("elementwise", "exp", "16M"), ("elementwise", "tanh", "16M"),
    ("reduce", "sum", "16M"), ("reduce", "softmax", "4096x1024"),
    ("reduce", "cross_entropy", "4096x1024"), ("overhead", "add_latency", "32x32"),
    ("overhead", "add_chain", "32x32 x100"), ("train", "makemore", "b32 h200"),
    ("train", "makemore", "b4096 h1024"),
]


def _style(name):
    return STYLE.get(name, ("#17becf", ".", "-"))


def _label(results, name):
    return results["impls"].get(name, {}).get("label", name)


def write_plots(results, outdir):
    """Write the plots into outdir; return (files written, notes)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return [], ["plots skipped: matplotlib is not installed (pip install matplotlib)"]
    os.makedirs(outdir, exist_ok=True)
    written = []
    for name, fn in (("matmul.png", _matmul), ("elementwise.png", _elementwise),
                     ("speedup.png", _speedup)):
        fig = fn(results, plt)
        if fig is None:
            continue
        path = os.path.join(outdir, name)
        fig.savefig(path, dpi=110, bbox_inches="tight")
        plt.close(fig)
        written.append(path)
    return written, []


def _title(results, what):
    cpu = results["machine"]["cpu"]
    return f"{what} — {cpu.get('model')}, {cpu.get('usable_cores')} cores ({results['created'][:10]})"


def _records(results, suite):
    return [r for r in results["records"] if r["suite"] == suite and r.get("value") is not None]


def _matmul(results, plt):
    recs = _records(results, "matmul")
    if not recs:
        return None
    threads = sorted({r["threads"] for r in recs if r["threads"] is not None})
    gpu = [r for r in recs if r["threads"] is None]
    panels = [(f"{t} thread{'s' if t > 1 else ''}", t) for t in threads]
    if gpu:
        panels.append(("GPU / runs once", None))
    fig, axes = plt.subplots(1, len(panels), figsize=(5.2 * len(panels), 4.2), squeeze=False)
    for ax, (title, t) in zip(axes[0], panels):
        for impl in [n for n in results["impls"] if any(r["impl"] == n for r in recs)]:
            pts = sorted((r["params"].get("n") or int(r["label"]), r["value"]) for r in recs
                         if r["impl"] == impl and r["threads"] == t)
            if not pts:
                continue
            c, m, ls = _style(impl)
            ax.plot([p[0] for p in pts], [p[1] for p in pts], color=c, marker=m, linestyle=ls,
                    label=_label(results, impl))
        ax.set_xscale("log", base=2)
        ax.set_xlabel("n (n x n x n)")
        ax.set_ylabel("GFLOPS")
        ax.set_title(title)
        ax.grid(True, alpha=0.3)
        ax.set_ylim(bottom=0)
        ax.legend(fontsize=8)
    fig.suptitle(_title(results, "float32 matmul"), fontsize=10)
    return fig


def _elementwise(results, plt):
    recs = _records(results, "elementwise")
    if not recs:
        return None
    ops = list(dict.fromkeys(r["case"] for r in recs))
    tmax = max((r["threads"] for r in recs if r["threads"] is not None), default=None)
    fig, axes = plt.subplots(1, len(ops), figsize=(3.6 * len(ops), 3.6), squeeze=False)
    for ax, op in zip(axes[0], ops):
        for impl in [n for n in results["impls"] if any(r["impl"] == n for r in recs)]:
            pts = sorted((r["params"].get("numel") or 0, r["value"]) for r in recs
                         if r["impl"] == impl and r["case"] == op and r["threads"] in (tmax, None))
            if not pts:
                continue
            c, m, ls = _style(impl)
            ax.plot([p[0] for p in pts], [p[1] for p in pts], color=c, marker=m, linestyle=ls,
                    label=_label(results, impl), markersize=4)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("elements")
        ax.set_title(op)
        ax.grid(True, which="both", alpha=0.3)
    axes[0][0].set_ylabel("GB/s (read + written)")
    axes[0][-1].legend(fontsize=7)
    fig.suptitle(_title(results, f"elementwise, {tmax} threads"), fontsize=10)
    return fig


def _speedup(results, plt):
    recs = [r for r in results["records"] if r.get("value") is not None]
    tmax = max((r["threads"] for r in recs if r["threads"] is not None), default=None)

    def get(impl, suite, case, label):
        for r in recs:
            if (r["impl"], r["suite"], r["case"], r["label"]) == (impl, suite, case, label) \
                    and r["threads"] in (tmax, None):
                return r
        return None
    cases = [h for h in HEADLINE if get("workers", *h) is not None]
    others = [n for n in results["impls"] if n != "workers" and
              any(get(n, *h) is not None for h in cases)]
    if not cases or not others:
        return None
    width = 0.8 / len(others)
    fig, ax = plt.subplots(figsize=(max(7.0, 0.85 * len(cases) + 2), 4.4))
    for i, impl in enumerate(others):
        xs, ys = [], []
        for j, h in enumerate(cases):
            r = get(impl, *h)
            if r is not None:
                xs.append(j + (i - (len(others) - 1) / 2) * width)
                ys.append(get("workers", *h)["median_s"] / r["median_s"])
        c, _, _ = _style(impl)
        ax.bar(xs, ys, width=width, color=c, label=_label(results, impl),
               alpha=1.0 if results["impls"][impl]["kind"] == "torchic" else 0.55)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_yscale("log")
    ax.set_xticks(range(len(cases)))
    ax.set_xticklabels([f"{c} {lab}".replace("cross_entropy", "x-ent").replace("add_", "")
                        for _, c, lab in cases], rotation=35, ha="right", fontsize=8)
    ax.set_ylabel("speedup over torchic workers (x)")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title(_title(results, f"speedup over workers, {tmax} threads"), fontsize=10)
    return fig
