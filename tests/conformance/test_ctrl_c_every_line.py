"""Ctrl-C at every line of the op path, on every backend.

The storm test in test_faults.py presses Ctrl-C at random moments; a bad moment is
rare there (the CI hang it found came once in tens of runs under load). This test
presses at chosen moments instead: a trace function counts the points where CPython
handles a signal (a function's start, right after each call returns) in torchic,
wgpu-py and cffi while a small workload (fill, arithmetic, an upload, a matmul, an
index gather, two reads) runs, and then the workload is repeated with a real SIGINT
raised at the n-th of those points, for n spread over all of them. (Not at every line:
a line's start is often no such point, the first line of a `finally` for one, and a
press there would fail code that no real press can break.) After every press:

* the runtime must still compute the right answer (no lock left held, no batch lost,
  no read left waiting: a hang fails through faulthandler's timeout);
* on webgpu, the KeyboardInterrupt must never be raised inside wgpu-py or cffi, whose
  Python code is not written for it (cffi's parser lock is taken outside its ``try``):
  every call into them runs under ``interrupts.sigint_held``, which holds the press
  back until the call is done;
* nothing may be printed on stderr by a swallowed interrupt (a cffi callback error).

Presses land in the Python code of threading.py and queue.py that the main thread runs
too (a read or sync waits there), at every point in it: a press inside threading.Event.wait once left the Event's
inner lock released ("release unlocked lock" instead of KeyboardInterrupt) or held (the
workers coordinator then hung in set()), 1 press in ~150 of the storm test under load.

The pipeline and bind-group caches are emptied before each run so that presses land in
the first-time paths (compiling a shader) too; in "grow" mode each run starts from a new
runtime, so presses land while the heap makes and registers its first arena (a press
there once made simd's Rust side use another arena's memory: results read as 0; and on
webgpu a new GPU's first product read wgpu-py's `adapter.info` property outside the guard,
for the matmul tile table: the press was raised inside wgpu-py, ~1 pass in 10 under load). In
"compile" mode the workload is a new torchic.compile'd step called four times (warm-up,
recording, two replays), so presses land in the recording and the replays too (a press
at the start of the recorder's install once left it installed: every later compile was
refused and every read raised).
"""

import subprocess
import sys

import pytest

from test_faults import ROOT, _stderr_clean

_CHILD = r"""
import dis, faulthandler, os, queue, signal, sys, threading
faulthandler.dump_traceback_later(float(sys.argv[3]), exit=True)
signal.signal(signal.SIGINT, signal.default_int_handler)
import numpy as np
import cffi
import torchic
from torchic import dispatcher

backend, points, mode = sys.argv[1], int(sys.argv[2]), sys.argv[4]
torchic.init(backend)
third_party = [os.path.dirname(cffi.__file__)]
try:
    import wgpu
    third_party.append(os.path.dirname(wgpu.__file__))
except ImportError:
    pass
third_party = tuple(third_party)
stdlib = (threading.__file__, queue.__file__)   # what a wait runs (every point pressed)
traced = (os.path.dirname(torchic.__file__),) + third_party + stdlib


def forget_caches():
    if mode == "grow":         # a new runtime: the run makes its heap's first arena
        torchic.init(backend)
    gpu = getattr(dispatcher.runtime().backend, "gpu", None)
    if gpu is not None:
        gpu.pipelines.clear()
        gpu.plans.clear()
        gpu._bind_groups.clear()


def workload():
    if mode == "compile":
        return compiled_workload()
    a = torchic.ones(8) * 2
    b = (a + 1).sum()
    c = torchic.tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
    d = (c @ c.T).tanh()
    e = d[torchic.tensor([1, 0])]
    return b.item(), e.numpy()


def step(x, acc):
    acc.add_((x @ x.T).tanh())                 # an argument updated in place
    return (x + 1).sum(), acc[torchic.tensor([1, 0])]


def compiled_workload():
    f = torchic.compile(step)
    x = torchic.tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
    acc = torchic.zeros(2, 2)
    for _ in range(4):                         # warm-up, recording, two replays
        b, e = f(x, acc)
    return b.item() + 3.0, e.numpy() / 4.0     # (the numbers of the other modes)


c64 = np.arange(6, dtype=np.float64).reshape(2, 3)
want = np.tanh(c64 @ c64.T)[[1, 0]]


def check():
    b, e = workload()
    assert b == 24.0, b
    np.testing.assert_allclose(e, want, rtol=1e-5)


count, target = [0], [0]
stdlib_points = []      # the counts of the points in `stdlib` (the counting run's)
_after_calls = {}


def after_calls(code):
    # Offsets of the instructions right after a call, where a press stands for one that
    # CPython handles as the call returns. (That one is raised by the call instruction
    # itself: where the next instruction lies outside the call's `try` or `with` block,
    # the block's handler would not see a press raised there, so none is.)
    offsets = _after_calls.get(code)
    if offsets is None:
        entries = dis.Bytecode(code).exception_entries

        def handler(offset):
            return next((e.target for e in entries if e.start <= offset < e.end), None)
        ins = list(dis.get_instructions(code))
        offsets = _after_calls[code] = {y.offset for x, y in zip(ins, ins[1:])
                                        if x.opname == "CALL" and
                                        handler(x.offset) == handler(y.offset)}
    return offsets


def point(frame):
    count[0] += 1
    if target[0] == 0 and frame.f_code.co_filename in stdlib:
        stdlib_points.append(count[0])
    if count[0] == target[0]:
        signal.raise_signal(signal.SIGINT)


def on_opcode(frame, event, arg):
    if event == "opcode" and frame.f_lasti in after_calls(frame.f_code):
        point(frame)
    return on_opcode


def tracer(frame, event, arg):
    # The points are where CPython handles a real signal: a function's start (this
    # "call" event: its RESUME) and right after each call returns. A line's start is
    # not one: a press there could land where none can (before the first line of a
    # `finally`, or between a `with`'s __enter__ and its block).
    if not frame.f_code.co_filename.startswith(traced):
        return None
    frame.f_trace_opcodes = True
    point(frame)
    return on_opcode


def raised_in(exc):
    # the innermost frame of the traceback that is not this script's (the tracer)
    tb, where = exc.__traceback__, "?"
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename
        if name != "<string>":
            where = f"{name}:{tb.tb_lineno}"
        tb = tb.tb_next
    return where


check()
forget_caches()
sys.settrace(tracer)
workload()
sys.settrace(None)
total = count[0]
presses = sorted(set(range(1, total + 1, max(1, total // points))) | set(stdlib_points))
caught, inside = 0, []
for t in presses:
    forget_caches()
    count[0], target[0] = 0, t
    try:
        sys.settrace(tracer)
        try:
            workload()
        finally:
            sys.settrace(None)
    except KeyboardInterrupt as exc:
        caught += 1
        where = raised_in(exc)
        if where.startswith(third_party):
            inside.append(where)
    check()
print("POINTS", total, "PRESSES", len(presses), "CAUGHT", caught, "STDLIB",
      len(stdlib_points), flush=True)
for where in inside:
    print("INSIDE", where, flush=True)
"""


@pytest.mark.parametrize("mode", ["ops", "grow", "compile"])
def test_ctrl_c_at_every_line_leaves_the_runtime_working(backend_name, mode):
    """mode "ops": presses along the op path of a warm runtime; "grow": along the first
    allocations of a fresh runtime (the heap's first arena is made and registered);
    "compile": along a compiled step's warm-up, recording and replays."""
    points = 400 if mode == "ops" or backend_name != "webgpu" else 40   # (a device each)
    proc = subprocess.run([sys.executable, "-c", _CHILD, backend_name, str(points), "240",
                           mode], capture_output=True, text=True, timeout=300, cwd=ROOT)
    err = _stderr_clean(proc.stderr)
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout}\n{err[-4000:]}"
    summary = [line.split() for line in proc.stdout.splitlines() if line.startswith("POINTS")]
    assert summary, proc.stdout
    total, presses, caught = summary[0][1:6:2]
    assert int(presses) >= min(points, int(total)) // 2
    assert int(caught) > int(presses) // 4, proc.stdout    # the presses were delivered
    inside = [line for line in proc.stdout.splitlines() if line.startswith("INSIDE")]
    assert not inside, "KeyboardInterrupt raised inside third-party code:\n" + "\n".join(inside)
    assert _without_ignored_interrupts(err) == "", f"noise on stderr:\n{err[-4000:]}"


def _without_ignored_interrupts(err):
    """stderr less the reports of a KeyboardInterrupt that landed in a finalizer: CPython
    prints "Exception ignored in: <function Storage.__del__ ...>" and drops it (a user
    presses again). Any other exception reported there is a bug."""
    kept, block = [], []
    for line in err.splitlines() + ["Exception ignored in: (end)"]:
        if line.startswith("Exception ignored in"):
            if block and not block[-1].startswith("KeyboardInterrupt"):
                kept.extend(block)
            block = [line]
        elif block:
            block.append(line)
        else:
            kept.append(line)
    return "\n".join(kept).strip()
