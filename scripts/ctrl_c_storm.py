"""Run the Ctrl-C storm of tests/conformance/test_faults.py many times and count hangs.

    python scripts/ctrl_c_storm.py BACKEND [RUNS]

Each run starts the storm test's child (tensors made and freed in a loop, hundreds of
SIGINTs 2-12 ms apart for 2.8 s, then one result read) and reports a run as a hang when
the child prints no RESULT within 60 s; its faulthandler traceback (dumped at 30 s) and,
on webgpu, the read state are printed. Run it with both cores busy (for example beside
two `python3 -c 'while True: pass'`): the hang it was written for came once in tens of
runs, and only under load.
"""

import os
import random
import signal
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "conformance"))

from test_faults import _SIGINT_STORM_CHILD, _wait_for  # noqa: E402

_DIAGNOSE = r'''
import faulthandler, sys, threading, time, _signal
faulthandler.dump_traceback_later(30, exit=True)


def watchdog():
    time.sleep(20)
    from torchic import dispatcher
    gpu = getattr(dispatcher.runtime().backend, "gpu", None)
    if gpu is not None:
        print("STATE map_result", gpu._map_result, "inflight", gpu._inflight, "held",
              gpu.guard.depth, "handler", _signal.getsignal(2), flush=True)


threading.Thread(target=watchdog, daemon=True).start()
'''


def main():
    backend = sys.argv[1]
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    child = _DIAGNOSE + _SIGINT_STORM_CHILD
    hangs = wrong = not_ready = 0
    for i in range(runs):
        proc = subprocess.Popen([sys.executable, "-c", child, backend, "3.0"], cwd=ROOT,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line, lines = _wait_for(proc, "READY", 300)
        if not line:
            proc.kill()
            proc.communicate()
            not_ready += 1
            print(f"run {i}: the child never got ready: {lines}", flush=True)
            continue
        rng = random.Random(i)
        t0 = time.monotonic()
        while time.monotonic() - t0 < 2.8 and proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            time.sleep(rng.uniform(0.002, 0.012))
        line, lines = _wait_for(proc, "RESULT", 60)
        try:
            out, err = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
        err = "\n".join(x for x in err.splitlines() if "XDG_RUNTIME_DIR" not in x)
        if not line:
            hangs += 1
            print(f"run {i}: HANG (exit {proc.returncode})\n{''.join(lines)}{out}\n"
                  f"{err[-4000:]}", flush=True)
        elif proc.returncode != 0 or line.split()[1] != "12.0":
            wrong += 1
            print(f"run {i}: WRONG (exit {proc.returncode}) {line}\n{err[-2000:]}", flush=True)
    print(f"{backend}: {runs} runs, {hangs} hangs, {wrong} wrong or failed, "
          f"{not_ready} never ready", flush=True)
    return 1 if hangs or wrong else 0


if __name__ == "__main__":
    sys.exit(main())
