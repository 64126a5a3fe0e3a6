"""torchic.distributed and DistributedDataParallel across real processes: pytest runs
`mpiexec -n 2 python tests/distributed/workers/<script>` with a timeout (the whole process
group is killed when it expires) and checks the exit status and what the ranks printed.

Without MPI (mpi4py + an mpiexec) these tests skip; TORCHIC_REQUIRE_MPI=1 (set by .ci/run)
makes a missing MPI a failure instead."""

import importlib.util
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import sysconfig
import time

import pytest

WORKERS = pathlib.Path(__file__).resolve().parent / "workers"
TIMEOUT = 240


def _mpiexec():
    # the mpich wheel's launcher sits beside the interpreter's scripts, maybe off PATH
    for folder in (pathlib.Path(sys.executable).parent,
                   pathlib.Path(sysconfig.get_path("scripts"))):
        if (folder / "mpiexec").exists():
            return str(folder / "mpiexec")
    return shutil.which("mpiexec")


@pytest.fixture(scope="module")
def mpiexec():
    launcher = _mpiexec()
    missing = [what for what, ok in (("mpi4py", importlib.util.find_spec("mpi4py")),
                                      ("an mpiexec launcher", launcher)) if not ok]
    if missing:
        why = (f"MPI is not installed ({', '.join(missing)} missing): "
               f'pip install "torchic[distributed]"')
        if os.environ.get("TORCHIC_REQUIRE_MPI") == "1":
            pytest.fail(f"TORCHIC_REQUIRE_MPI=1: {why}")
        pytest.skip(why)
    return launcher


def run(launcher, script, *args, n=2, timeout=TIMEOUT):
    """(exit status, stdout + stderr, seconds) of `mpiexec -n N python script args`."""
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               PYTHONUNBUFFERED="1")
    start = time.monotonic()
    proc = subprocess.Popen([launcher, "-n", str(n), sys.executable, str(WORKERS / script),
                             *args], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=env,
                            start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)     # mpiexec and every rank it started
        out, _ = proc.communicate()
        pytest.fail(f"mpiexec -n {n} {script} {' '.join(args)} hung (killed after "
                    f"{timeout} s):\n{out[-4000:]}")
    return proc.returncode, out, time.monotonic() - start


def test_collectives_match_numpy(mpiexec, backend_name):
    rc, out, _ = run(mpiexec, "collectives.py", backend_name)
    assert rc == 0, out[-6000:]
    for rank in (0, 1):
        assert f"OK collectives {backend_name} rank {rank}" in out, out[-6000:]


def test_ddp_two_processes_match_one_process_on_the_whole_batch(mpiexec, backend_name):
    rc, out, _ = run(mpiexec, "ddp_train.py", backend_name, "50")
    assert rc == 0, out[-6000:]
    assert f"OK ddp {backend_name}: 50 steps" in out, out[-6000:]


def test_ranks_disagreeing_on_the_model_or_an_unused_parameter_raise_clearly(mpiexec):
    rc, out, _ = run(mpiexec, "errors.py", "workers")
    assert rc == 0, out[-6000:]
    assert "OK errors rank 0" in out and "OK errors rank 1" in out, out[-6000:]


def test_a_rank_that_raises_ends_every_rank(mpiexec):
    rc, out, _ = run(mpiexec, "rank_raises.py", "workers", timeout=120)
    assert rc != 0, out
    assert "rank 1 fails on purpose at step 3" in out, out
    assert "rank 1 of 2 raised ValueError; aborting every rank" in out, out
    assert "finished all steps" not in out, out
