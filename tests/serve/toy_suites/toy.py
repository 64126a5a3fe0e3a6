"""Toy suites for the serve tests: deterministic, fast, and misbehaving on purpose."""

import os
import signal
import time

from torchic.serve import define_bench, define_test


def echo(run, n, tag):
    run.log(f"echo n={n} tag={tag}")
    run.test(f"times ten {n}", lambda: {"value": n * 10})
    if tag == "b":
        run.test(f"fails {n}", lambda: (_ for _ in ()).throw(AssertionError("expected failure")))


def boom(run, x):
    if x == 2:
        raise RuntimeError("boom at x=2")
    run.row(value=x, status="pass")


def crash(run, how):
    run.row(value=1, status="pass")
    os.kill(os.getpid(), signal.SIGKILL)


def slow(run, tag, steps):
    for i in run.each(range(steps)):
        time.sleep(0.05)
        run.row(tag=tag, step=i, value=(i + 1) * 1.5, n=2 ** (i % 8 + 4))


def plot_points(run, series, n):
    run.row(series=series, n=n, value=n / 8 + (1 if series == "b" else 0), status="ok")


define_test("toy.echo", echo, {"n": [1, 2, 3], "tag": ["a", "b"]}, defaults={"tag": ["a"]},
            title="Toy echo", columns=["n", "tag", "case", "status", "value", "message"])
define_test("toy.boom", boom, {"x": [1, 2, 3]}, title="Toy boom")
define_test("toy.crash", crash, {"how": ["sigkill"]}, title="Toy crash")
define_bench("toy.slow", slow, {"tag": ["left", "right", "third"], "steps": [4, 40, 400]},
             defaults={"steps": [4]}, title="Toy slow",
             plot={"x": "n", "y": "value", "series": ["tag"], "xlog": True})
define_bench("toy.plot", plot_points, {"series": ["a", "b"], "n": [16, 64, 256, 1024]},
             title="Toy plot", plot={"x": "n", "y": "value", "series": ["series"], "xlog": True,
                                     "xlabel": "n", "ylabel": "GFLOPS"})
# like toy.slow, but with its own time limit (which wins over the server's --run-timeout)
define_bench("toy.hold", slow, {"tag": ["held"], "steps": [400]}, title="Toy hold",
             timeout_s=120)


def panel_points(run, op, series, n):
    # "narrow" stays within a factor 2 (a linear axis), "wide" spans four decades (a log one)
    k = int(series[1:])
    value = 1 + k / 14 + n / 512 if op == "narrow" else 10.0 ** (k / 4 - 2) * n / 16
    run.row(value=value, status="ok")


# 14 series (more than the plot's fixed palette) in two panels
define_bench("toy.panels", panel_points,
             {"op": ["narrow", "wide"], "series": [f"s{k}" for k in range(14)], "n": [16, 256]},
             title="Toy panels", plot={"x": "n", "y": "value", "series": ["series"],
                                       "panel": "op", "xlog": True})


def grid(run, a, b):
    run.row(value=a * 10, status="pass")


# 3 x 2 combinations: (2, y) is skipped, and so is b=y for a=3 unless y is the first b chosen
define_bench("toy.skips", grid, {"a": [1, 2, 3], "b": ["x", "y"]}, title="Toy skips",
             defaults={"b": ["x", "y"]},
             skip=[{"when": {"a": [2], "b": ["y"]}, "why": "no y at a=2"},
                   {"when": {"a": [3]}, "unless_first": "b", "why": "a=3 runs once"}],
             description="a toy whose description has `code` in it")
define_bench("toy.plain", grid, {"a": [1], "b": ["x"]}, title="Toy plain",
             description="a toy whose description has `code` in it")
