"""Process and thread safety on every backend: os.fork(), multiprocessing, concurrent backward.

fork (each case runs in a subprocess with a timeout, so a hang fails instead of
blocking the suite; the script prints one JSON line per result):

* a forked child that uses torchic: on the CPU backends it gets a fresh runtime on
  first use, and the tensors the parent made (also ones whose ops were still queued
  at the fork) keep their values in the child, like PyTorch's CPU tensors; a fork of
  that child (before it used torchic) works the same way. On webgpu the first use
  raises BackendUnavailableError naming the 'spawn' start method, and
  torchic.init('workers') then works in the child;
* a child that never uses torchic exits with status 0 and nothing on stderr;
* multiprocessing.get_context('fork').Pool(2).map over a function that computes
  with a tensor made in the parent gives the NumPy float64 numbers (webgpu: the
  clear error), and a spawn pool works on webgpu;
* forking while another thread keeps issuing ops: the child never hangs on a lock
  the other thread held;
* in every case the parent's results stay right after its children ran and exited.

threads: several threads calling backward() at once through their own graphs into one
shared leaf: every contribution reaches .grad (the sum of the single-thread gradients).
"""

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import torchic

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ENV_NOISE = (
    "XDG_RUNTIME_DIR",     # lavapipe / Mesa without a session bus: not ours
    # Python >= 3.12 warns at every fork of a process with threads (the GPU driver's, the
    # backend's); PyTorch users see the same line. It is Python's, not an error of ours.
    "use of fork() may lead to deadlocks in the child",
)
CPU_BACKENDS = ("workers", "simd")

_PRELUDE = """
import gc, json, os, sys, threading
import numpy as np
import torchic
from torchic import BackendUnavailableError

BACKEND = sys.argv[1]
torchic.init(BACKEND)
A = np.random.default_rng(0).standard_normal((16, 16)).astype(np.float32)


def report(who, **values):
    print(json.dumps({"who": who, **values}), flush=True)


def compute(a):
    return float(((a @ a.T).tanh().sum() * 0.5).item())


def chain(a):      # 100 ops, issued and not read (still queued when the fork comes)
    for _ in range(100):
        a = a * 1.01 + 0.25
    return a
"""

A = np.random.default_rng(0).standard_normal((16, 16)).astype(np.float32)
A64 = A.astype(np.float64)
COMPUTE = float(np.tanh(A64 @ A64.T).sum() * 0.5)


def _chain_sum():
    a = A64.copy()
    for _ in range(100):
        a = a * 1.01 + 0.25
    return float(a.sum())


CHAIN = _chain_sum()


def _script(args, timeout):
    """Run a script in its own process group; on a hang kill the group (forked children too)."""
    proc = subprocess.Popen([sys.executable, *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=ROOT, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        pytest.fail(f"HANG: still running after {timeout} s\nstdout:\n{out}\nstderr:\n{err}")
    return subprocess.CompletedProcess(args, proc.returncode, out, err)


def _run(backend_name, body, timeout=180):
    """Run the prelude + body in a fresh interpreter; {who: values} of what it reported."""
    proc = _script(["-c", _PRELUDE + textwrap.dedent(body), backend_name], timeout)
    stderr = "\n".join(line for line in proc.stderr.splitlines()
                       if not any(n in line for n in ENV_NOISE)).strip()
    assert proc.returncode == 0, f"exit status {proc.returncode}\n{proc.stdout}\n{stderr}"
    assert stderr == "", f"noise on stderr:\n{stderr}"
    reports = {}
    for line in proc.stdout.splitlines():
        if line.startswith("{"):
            r = json.loads(line)
            reports[r.pop("who")] = r
    return reports


def _close(got, want):
    return abs(got - want) <= 1e-4 * max(1.0, abs(want))


def _assert_spawn_error(message):
    assert "fork" in message and "spawn" in message, message


# -- os.fork() -----------------------------------------------------------------------------
def test_fork_child_uses_torchic(backend_name):
    r = _run(backend_name, """
        a = torchic.tensor(A)
        report("parent-before", value=compute(a))
        b = chain(a)
        pid = os.fork()
        if pid == 0:
            if BACKEND != "webgpu":
                grandchild = os.fork()    # a fork of a child that has not used torchic yet
                if grandchild == 0:
                    report("grandchild", fresh=compute(torchic.tensor(A)), inherited=compute(a))
                    sys.exit(0)
                report("grandchild-status", status=os.waitpid(grandchild, 0)[1])
            try:
                report("child", fresh=compute(torchic.tensor(A)), inherited=compute(a),
                       queued=b.sum().item(), memory=torchic.memory()["live_tensors"] > 0)
            except BackendUnavailableError as exc:
                errors = [str(exc)]
                try:
                    compute(a)              # a tensor the parent made: the same error
                except BackendUnavailableError as exc2:
                    errors.append(str(exc2))
                try:
                    torchic.init("webgpu")  # nor can the child open a device of its own
                except BackendUnavailableError as exc3:
                    errors.append(str(exc3))
                torchic.init("workers")
                report("child", errors=errors, workers=compute(torchic.tensor(A)))
            sys.exit(0)
        report("child-status", status=os.waitpid(pid, 0)[1])
        report("parent-after", value=compute(a), queued=b.sum().item(),
               fresh=compute(torchic.tensor(A)))
    """)
    assert r["child-status"]["status"] == 0
    assert _close(r["parent-before"]["value"], COMPUTE)
    after = r["parent-after"]
    assert _close(after["value"], COMPUTE) and _close(after["fresh"], COMPUTE)
    assert _close(after["queued"], CHAIN)
    child = r["child"]
    if backend_name == "webgpu":
        assert len(child["errors"]) == 3
        for message in child["errors"]:
            _assert_spawn_error(message)
        assert _close(child["workers"], COMPUTE)
    else:
        assert _close(child["fresh"], COMPUTE) and _close(child["inherited"], COMPUTE)
        assert _close(child["queued"], CHAIN), "an op queued at the fork was lost in the child"
        assert r["grandchild-status"]["status"] == 0
        assert _close(r["grandchild"]["fresh"], COMPUTE)
        assert _close(r["grandchild"]["inherited"], COMPUTE)


def test_fork_child_replays_a_compiled_function(backend_name):
    if backend_name == "webgpu":
        pytest.skip("webgpu cannot be used in a forked child (test_fork_child_uses_torchic)")
    r = _run(backend_name, """
        w = torchic.zeros(4)
        f = torchic.compile(lambda x: w.add_(x).sum())
        report("parent", values=[f(torchic.ones(4)).item() for _ in range(3)])
        pid = os.fork()
        if pid == 0:
            g = torchic.compile(lambda x: (x * 10.0).sum())    # a program of the child's own
            report("child", g=[g(torchic.ones(4)).item() for _ in range(3)],
                   f=[f(torchic.ones(4)).item() for _ in range(3)])
            sys.exit(0)
        report("child-status", status=os.waitpid(pid, 0)[1])
        report("parent-after", values=[f(torchic.ones(4)).item() for _ in range(2)])
    """)
    assert r["child-status"]["status"] == 0
    assert r["parent"]["values"] == [4.0, 8.0, 12.0]
    assert r["child"] == {"g": [40.0] * 3, "f": [16.0, 20.0, 24.0]}
    assert r["parent-after"]["values"] == [16.0, 20.0]


def test_fork_child_that_never_uses_torchic_exits_cleanly(backend_name):
    r = _run(backend_name, """
        a = torchic.tensor(A)
        value = compute(a)
        b = chain(a)
        c = chain(a)
        pid = os.fork()
        if pid == 0:
            del b              # tensors dying in the child, and at its exit (a, c)
            gc.collect()
            sys.exit(0)        # the normal exit: atexit handlers and finalizers run
        report("child-status", status=os.waitpid(pid, 0)[1])
        report("parent-after", value=compute(a), queued=b.sum().item())
    """)
    assert r["child-status"]["status"] == 0
    assert _close(r["parent-after"]["value"], COMPUTE)
    assert _close(r["parent-after"]["queued"], CHAIN)


def test_fork_while_another_thread_computes(backend_name):
    # the other thread holds the allocator, stream and autograd locks at random moments;
    # it does not exist in the children, which must not wait for it
    r = _run(backend_name, """
        a = torchic.tensor(A)
        stop = threading.Event()

        def busy():
            w = torchic.tensor(A, requires_grad=True)
            while not stop.is_set():
                ((w * 2).tanh().sum()).backward()
                chain(a).sum().item()

        t = threading.Thread(target=busy)
        t.start()
        statuses, children = [], []
        for i in range(5):
            pid = os.fork()
            if pid == 0:
                try:
                    report(f"child-{i}", value=compute(torchic.tensor(A)), inherited=compute(a))
                except BackendUnavailableError as exc:
                    report(f"child-{i}", error=str(exc))
                os._exit(0)
            statuses.append(os.waitpid(pid, 0)[1])
        stop.set()
        t.join()
        report("parent-after", statuses=statuses, value=compute(a))
    """)
    assert r["parent-after"]["statuses"] == [0] * 5
    assert _close(r["parent-after"]["value"], COMPUTE)
    for i in range(5):
        child = r[f"child-{i}"]
        if backend_name == "webgpu":
            _assert_spawn_error(child["error"])
        else:
            assert _close(child["value"], COMPUTE) and _close(child["inherited"], COMPUTE)


# -- multiprocessing -------------------------------------------------------------------------
_POOL = textwrap.dedent("""
    import multiprocessing
    W = torchic.tensor(A)         # made in the parent, used by the pool's workers

    def work(i):
        try:
            x = torchic.tensor(np.full((16, 16), 0.1 * i, np.float32))
            return ((x @ W).tanh().sum() + W.sum()).item()
        except BackendUnavailableError as exc:
            return "error: " + str(exc)

    if __name__ == "__main__":
        report("parent-before", value=compute(W))
        pool = multiprocessing.get_context(METHOD).Pool(2)
        got = pool.map(work, range(6))
        pool.close()
        pool.join()
        report("pool", got=got)
        report("parent-after", value=compute(W), work=work(3))
""")


def _work(i):
    x = np.full((16, 16), 0.1 * i)
    return float(np.tanh(x @ A64).sum() + A64.sum())


def test_fork_pool_map(backend_name):
    r = _run(backend_name, "METHOD = 'fork'\n" + _POOL)
    got = r["pool"]["got"]
    if backend_name == "webgpu":
        for g in got:
            assert g.startswith("error: ")
            _assert_spawn_error(g)
    else:
        for i, g in enumerate(got):
            assert _close(g, _work(i)), (i, g, _work(i))
    assert _close(r["parent-before"]["value"], COMPUTE)
    assert _close(r["parent-after"]["value"], COMPUTE)
    assert _close(r["parent-after"]["work"], _work(3))


def test_spawn_pool_on_webgpu():
    """The way the webgpu error points to: a spawn pool (workers init their own device)."""
    if "webgpu" not in torchic.backend_names():
        pytest.skip("no webgpu backend")
    ok, why = torchic.dispatcher.backend_class("webgpu").available()
    if not ok:
        pytest.skip(why)
    # a spawned worker imports the script's __main__ again: the script must be a file
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "spawn_pool.py")
        with open(path, "w") as f:
            f.write(_PRELUDE + "METHOD = 'spawn'\n" + _POOL)
        proc = _script([path, "webgpu"], 300)
    assert proc.returncode == 0, proc.stderr
    reports = {}
    for line in proc.stdout.splitlines():
        if line.startswith("{"):
            rep = json.loads(line)
            reports[rep.pop("who")] = rep
    for i, g in enumerate(reports["pool"]["got"]):
        assert _close(g, _work(i)), (i, g)
    assert _close(reports["parent-after"]["value"], COMPUTE)


# -- threads: concurrent backward into one shared leaf ----------------------------------------
def test_concurrent_backward_into_shared_leaf(backend):
    threads, rounds, calls = 8, 5, 10     # (one call per thread hardly ever raced)
    rng = np.random.default_rng(5)
    w0 = rng.standard_normal((8, 8)).astype(np.float32)
    xs = [rng.standard_normal((8, 8)).astype(np.float32) for _ in range(threads)]
    # d/dw of sum(tanh(x @ w) * 0.5) + sum(w * x) in float64, per thread
    want = np.zeros((8, 8))
    for x in map(np.float64, xs):
        t = np.tanh(x @ w0)
        want += (x.T @ ((1 - t * t) * 0.5) + x) * calls
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)      # switch threads as often as possible: races show
    try:
        for _ in range(rounds):
            w = torchic.tensor(w0, requires_grad=True)
            inputs = [torchic.tensor(x) for x in xs]
            start = threading.Barrier(threads)
            errors = []

            def one(x):
                try:
                    start.wait()
                    for _ in range(calls):
                        loss = ((x @ w).tanh() * 0.5).sum() + (w * x).sum()
                        loss.backward()      # two contributions to w.grad per call
                except BaseException as exc:     # reported below
                    errors.append(exc)

            pool = [threading.Thread(target=one, args=(x,)) for x in inputs]
            for t in pool:
                t.start()
            for t in pool:
                t.join(120)
            assert not any(t.is_alive() for t in pool), "HANG: a backward thread is stuck"
            assert not errors, errors
            np.testing.assert_allclose(w.grad.numpy(), want, rtol=1e-4, atol=1e-4)
    finally:
        sys.setswitchinterval(old)


# -- threads: ops while another thread shuts the runtime down ---------------------------------
def test_threads_racing_shutdown_get_the_shutdown_error(backend_name):
    """Threads issuing ops, reads and compiled replays while the main thread calls
    torchic.shutdown(): each thread either finishes or gets the documented "closed by
    torchic.shutdown()" RuntimeError; none hangs, and none fails on what close released
    (webgpu once raised IndexError from its emptied arena list; simd and workers said
    "closed before this read completed", and a read racing close could wait for good)."""
    reps = 8 if backend_name == "webgpu" else 20       # (a device each)
    errors, hung = [], []
    try:
        for rep in range(reps):
            torchic.init(backend_name)
            w = torchic.tensor(A)
            step = torchic.compile(lambda x: (x @ w).tanh() * 0.5 + x)
            x0 = torchic.tensor(A)
            step(x0), step(x0)                   # warm-up and recording: the threads replay
            going = threading.Semaphore(0)      # released by each thread in its loop

            def work():
                try:
                    x = x0
                    for i in range(300):
                        if i == 3:
                            going.release()
                        x = (x @ w).tanh() + 1.0
                        if i % 2:
                            x = step(x)
                        if i % 7 == 0:
                            x.sum().item()
                except BaseException as exc:     # checked below
                    errors.append(exc)
            pool = [threading.Thread(target=work) for _ in range(3)]
            for t in pool:
                t.start()
            for t in pool:                       # every thread in its loop (reading too)
                going.acquire(timeout=60)
            for _ in range(rep % 5 * 4):         # a different moment each time
                (w + 1.0).sum()
            torchic.shutdown()
            for t in pool:
                t.join(120)
            hung += [t for t in pool if t.is_alive()]
            assert not hung, f"HANG: a thread is stuck after shutdown (rep {rep})"
    finally:
        torchic.init(backend_name)
    assert errors, "shutdown never interrupted a thread"
    wrong = [e for e in errors if not (isinstance(e, RuntimeError) and
                                       "closed by torchic.shutdown()" in str(e))]
    assert not wrong, "\n".join(f"{type(e).__name__}: {e}" for e in wrong[:5])
