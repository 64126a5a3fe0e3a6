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
