"""Issue 44: every command README.md shows is run by a test, and its printed output (where the
README shows one) is what it prints.

The commands are read from README.md itself: its ```bash blocks and its inline `python ...`,
`pip ...`, `mpiexec ...` spans, each `a && b` split in its parts. Every part must be in one of
the tables below, and every table entry must still be in the README (a new command without a
test, or a stale entry, fails `test_every_readme_command_is_accounted_for`):

- RUN_HERE: run by this file, the long ones in the reduced form the README announces (collect
  the tests instead of running them, a few training steps, one `--quick` bench suite);
- COVERED: run by another test, named (it must exist);
- NOT_RUN: with the reason (a download, a system install; `pip install` lines are checked for
  their extras, which .ci/run installs).
The README's two Python blocks (the quick start, `torchic.compile`) run as they are (the
compile loop for fewer steps) and their commented outputs are compared with what they print.
"""

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
PY = sys.executable


def _parts():
    spans = [m.group(1) for m in re.finditer(r"```bash\n(.*?)```", README, re.S)]
    lines = [ln.strip() for block in spans for ln in block.splitlines()]
    lines = [ln for ln in lines if ln and not ln.startswith("#")]
    for m in re.finditer(r"(?<!`)`([^`]+)`(?!`)", README):
        text = " ".join(m.group(1).split())
        if re.match(r"(python|pip|mpiexec|curl|apt-get|TORCHIC_\w+=\S+ python)\b", text):
            lines.append(text)
    parts = set()
    for line in lines:
        line = line.split("  #")[0].strip()     # a trailing comment
        parts.update(p.strip() for p in line.split(" && "))
    return parts


def _run(args, env=None, cwd=ROOT, timeout=600):
    full_env = dict(os.environ, PYTHONUNBUFFERED="1", **(env or {}))
    src = str(ROOT / "src")
    full_env["PYTHONPATH"] = src + os.pathsep + full_env.get("PYTHONPATH", "")
    return subprocess.run(args, cwd=cwd, env=full_env, capture_output=True, text=True,
                          timeout=timeout)


def _ok(proc):
    assert proc.returncode == 0, f"{proc.args}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc.stdout


# -- the reduced forms -------------------------------------------------------------------------

_COLLECTED = {}


def _collects(env=None, paths=()):
    """A test command, collected instead of run (the full run takes 25 minutes): no
    collection error (one collection per environment and paths)."""
    def check(tmp_path):
        key = (tuple(sorted((env or {}).items())), tuple(paths))
        if key not in _COLLECTED:
            _COLLECTED[key] = _ok(_run([PY, "-m", "pytest", "--collect-only", "-q", "-p",
                                        "no:cacheprovider", *paths], env=env))
        out = _COLLECTED[key]
        m = re.search(r"(\d+) tests? collected", out)
        assert m and int(m.group(1)) > 0 and "error" not in out.splitlines()[-1], out[-2000:]
    return check


def _names_file(tmp_path):
    names = ["emma", "olivia", "ava", "isabella", "sophia", "mia", "liam", "noah", "jacob",
             "mason", "ethan", "william", "james", "logan", "lucas", "aiden"] * 4
    path = tmp_path / "names.txt"
    path.write_text("\n".join(names) + "\n")
    return path


SMALL = ["--hidden", "16", "--samples", "3", "--no-plot", "--no-progress"]


def _makemore_with_data(tmp_path):
    """`--steps 200000` as `--steps 40` on a names.txt written here (the download is not run)."""
    _names_file(tmp_path)
    out = _ok(_run([PY, str(ROOT / "examples" / "makemore.py"), "--data", "names.txt",
                    "--steps", "40", "--out", str(tmp_path), *SMALL], cwd=tmp_path))
    assert "3 samples:" in out and "names.txt" in out, out[-2000:]


def _makemore_ddp(tmp_path):
    """`mpiexec -n 2 python examples/makemore.py --ddp` for 40 steps."""
    sys.path.insert(0, str(ROOT / "tests" / "distributed"))
    from test_mpi import _mpiexec
    launcher = _mpiexec()
    if launcher is None or not __import__("importlib").util.find_spec("mpi4py"):
        if os.environ.get("TORCHIC_REQUIRE_MPI") == "1":
            pytest.fail("MPI is required (TORCHIC_REQUIRE_MPI=1) but missing")
        pytest.skip('MPI is not installed (pip install -e ".[distributed]")')
    out = _ok(_run([launcher, "-n", "2", PY, str(ROOT / "examples" / "makemore.py"), "--ddp",
                    "--steps", "40", "--out", str(tmp_path), *SMALL], cwd=tmp_path, timeout=300))
    assert "2 processes" in out and "final loss: train" in out, out[-2000:]


def _bench(*args):
    """The bench, reduced to `--quick` and its overhead suite (the full run takes minutes)."""
    def check(tmp_path):
        out = _ok(_run([PY, "-m", "torchic", "bench", *args, "--quick", "--no-plots",
                        "--out", str(tmp_path / "perf"), "overhead"]))
        assert (tmp_path / "perf" / "results.json").is_file() and "add_chain" in out, out[-2000:]
    return check


def _coverage_walk(script, flag, entry):
    """A coverage walk, reduced to one entry on workers (the walk over every entry writes the
    docs; with an entry list it prints and writes nothing)."""
    def check(tmp_path):
        pytest.importorskip("torch")
        out = _ok(_run([PY, str(ROOT / "scripts" / script), "--backends", "workers", flag,
                        entry]))
        assert re.search(rf"workers {re.escape(entry)} pass", out), out[-2000:]
    return check


RUN_HERE = {
    "python -m pytest": _collects(),
    "python -m pytest -rs": _collects(),
    "TORCHIC_TEST_BACKENDS=workers python -m pytest tests/unit tests/backend -q":
        _collects({"TORCHIC_TEST_BACKENDS": "workers"}, ["tests/unit", "tests/backend"]),
    "TORCHIC_TEST_BACKENDS=workers python -m pytest tests/torch_opinfo -q":
        _collects({"TORCHIC_TEST_BACKENDS": "workers"}, ["tests/torch_opinfo"]),
    "TORCHIC_OPINFO=full python -m pytest tests/torch_opinfo -q":
        _collects({"TORCHIC_OPINFO": "full"}, ["tests/torch_opinfo"]),
    "python examples/makemore.py --data names.txt --steps 200000": _makemore_with_data,
    "mpiexec -n 2 python examples/makemore.py --ddp": _makemore_ddp,
    "python -m torchic bench --backends simd,workers --refs numpy,torch --threads 1,2":
        _bench("--backends", "simd,workers", "--refs", "numpy,torch", "--threads", "1,2"),
    "python -m torchic bench --out docs/perf": _bench(),
    "python scripts/gen_coverage_opinfo.py --baseline":
        _coverage_walk("gen_coverage_opinfo.py", "--ops", "abs"),
    "python scripts/gen_coverage_moduleinfo.py --baseline":
        _coverage_walk("gen_coverage_moduleinfo.py", "--modules", "nn.ReLU"),
}

COVERED = {
    "python -m torchic demo":
        "tests/nn/test_demo_first_run.py::test_readme_demo_command_saves_the_model_and_says_what_next",
    "python -m torchic info":
        "tests/unit/test_first_hour.py::test_info_is_a_readable_summary_and_json_has_every_detail",
    "python -m torchic serve": "tests/serve/test_page_e2e.py::test_page_runs_suites_and_streams_results",
    "python scripts/build_docs.py": "tests/unit/test_docs.py::test_api_reference_builds_without_warnings",
    "python -m torchic bench": "tests/bench/test_bench_quick.py::test_every_suite_ran",
    "pip wheel --no-deps .":
        "tests/packaging/test_wheel.py::test_wheels_install_outside_the_checkout_and_the_simd_remedy_works",
    "python scripts/gen_perf_readme.py":
        "tests/bench/test_bench_parts.py::test_gen_perf_readme_replaces_between_markers",
}

NOT_RUN = {
    "curl -LO https://raw.githubusercontent.com/karpathy/makemore/master/names.txt":
        "a download (CI has no network): the makemore run uses a names.txt written here",
    "pip install -v": "a flag of pip's, not a command",
    "apt-get install cargo": "a system install: .ci/run makes it",
    "apt-get install mesa-vulkan-drivers": "a system install: .ci/run makes it",
}
PIP_INSTALL = re.compile(r'pip install -e (\.|"\.\[([a-z,]+)\]")$')


def test_every_readme_command_is_accounted_for():
    parts = _parts()
    installs = {p for p in parts if PIP_INSTALL.match(p)}
    known = set(RUN_HERE) | set(COVERED) | set(NOT_RUN)
    assert not parts - installs - known, f"README commands no test runs: {parts - installs - known}"
    assert not known - parts, f"table entries the README no longer shows: {known - parts}"


def test_readme_pip_installs_name_real_extras():
    """`pip install -e ".[x,y]"` lines: .ci/run installs them; here every extra exists."""
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    installs = [PIP_INSTALL.match(p) for p in _parts()]
    named = {e for m in installs if m and m.group(2) for e in m.group(2).split(",")}
    assert named and not named - set(extras), named - set(extras)


def test_ci_installs_the_system_packages_the_readme_names():
    ci = (ROOT / ".ci" / "run").read_text()
    named = [p.split()[-1] for p in _parts() if p.startswith("apt-get install ")]
    assert named, "no apt-get line found"
    for package in named:
        assert re.search(rf"apt-get install [^\n]*\b{re.escape(package)}\b", ci), package


@pytest.mark.parametrize("command", sorted(COVERED))
def test_covering_test_exists(command):
    path, name = COVERED[command].split("::")
    assert re.search(rf"^def {name}\(", (ROOT / path).read_text(), re.M), COVERED[command]


@pytest.mark.parametrize("command", sorted(RUN_HERE))
def test_readme_command_runs(command, tmp_path):
    RUN_HERE[command](tmp_path)


def _python_blocks():
    return [m.group(1) for m in re.finditer(r"```python\n(.*?)```", README, re.S)]


def test_quick_start_prints_what_the_readme_says():
    """The quick start runs as shown; a print's comment that is an output (`# tensor(...`,
    `# 10.0 7.0`, continued on `#` lines below it) is what it prints, line for line."""
    (block,) = [b for b in _python_blocks() if "import torchic as torch" in b]
    out = _ok(_run([PY, "-c", block])).splitlines()
    lines = block.splitlines()
    expected = []          # per print: its output lines, or None for a remark
    for i, line in enumerate(lines):
        if not line.startswith("print("):
            continue
        want = line.split("#", 1)[1].strip() if "#" in line else ""
        if not re.match(r"(tensor\(|-?\d)", want):
            expected.append(None)
            continue
        want = [want]
        for more in lines[i + 1:]:
            if not more.lstrip().startswith("#") or more.startswith("#"):
                break
            want.append(more.split("#", 1)[1].strip())
        expected.append(want)
    at = 0
    for want in expected:
        if want is None:
            at += 1
            continue
        got = out[at:at + len(want)]
        assert [" ".join(g.split()) for g in got] == [" ".join(w.split()) for w in want], \
            (want, got)
        at += len(want)
    assert at == len(out) and sum(w is not None for w in expected) >= 2, (expected, out)


COMPILE_PRELUDE = """
import torchic
import torchic as torch
import torchic.nn as nn
import torchic.nn.functional as F
torch.manual_seed(0)
X = torch.randint(0, 27, (400, 3))
Y = torch.randint(0, 27, (400,))
model = nn.Sequential(nn.Embedding(27, 10), nn.Flatten(), nn.Linear(30, 64), nn.Tanh(),
                      nn.Linear(64, 27))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
sched = torch.optim.lr_scheduler.StepLR(opt, step_size=100, gamma=0.5)
"""


def test_compile_example_runs_and_matches_eager(backend, capsys):
    """The README's torchic.compile loop, 200 steps instead of 10,000 (the README says so):
    it prints a falling loss, bit for bit eager mode's."""
    (block,) = [b for b in _python_blocks() if "@torchic.compile" in b]
    assert "range(10_000)" in block and "step % 1000" in block
    block = block.replace("range(10_000)", "range(200)").replace("step % 1000", "step % 50")
    runs = []
    for code in (block, block.replace("@torchic.compile\n", "")):
        exec(compile(COMPILE_PRELUDE + code, "README.md", "exec"), {})
        runs.append([float(v) for v in capsys.readouterr().out.split()])
    compiled, eager = runs
    assert len(compiled) == 4 and compiled == eager, runs
    assert compiled[-1] < compiled[0], compiled
