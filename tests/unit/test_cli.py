"""`python -m torchic ...` as a user types it: usage, exit codes, --version, one-line errors.

Each test runs the command in a subprocess (what argparse prints and the exit status are
the contract); none of them trains: a bad option value must fail before any work starts.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

import torchic

ROOT = Path(__file__).resolve().parents[2]
COMMANDS = ("demo", "info", "bench", "serve")


def run_cli(*args, env_extra=None):
    env = dict(os.environ)
    env.pop("XDG_RUNTIME_DIR", None)   # headless: keeps Mesa's Wayland probe quiet
    env.pop("TORCHIC_BACKEND", None)
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-m", "torchic", *args], capture_output=True,
                          text=True, env=env, timeout=300)


def assert_one_line_error(proc, *needles):
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("python -m torchic demo: error: "), lines[0]
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


def test_no_command_prints_usage_and_exits_2():
    proc = run_cli()
    assert proc.returncode == 2
    assert proc.stderr.startswith("usage: python -m torchic"), proc.stderr
    assert "required: COMMAND" in proc.stderr


def test_unknown_command_prints_usage_and_exits_2():
    proc = run_cli("trian")
    assert proc.returncode == 2
    assert proc.stderr.startswith("usage: python -m torchic"), proc.stderr
    assert "invalid choice: 'trian'" in proc.stderr


@pytest.mark.parametrize("args", [("--bogus", "demo"), ("info", "--bogus")])
def test_unknown_option_exits_2(args):
    proc = run_cli(*args)
    assert proc.returncode == 2
    assert "unrecognized arguments: --bogus" in proc.stderr, proc.stderr


def test_help_lists_every_command():
    proc = run_cli("--help")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("usage: python -m torchic")
    for command in COMMANDS:
        assert f"\n    {command} " in proc.stdout, (command, proc.stdout)


def test_version_is_the_package_version():
    proc = run_cli("--version")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"torchic {torchic.__version__}"


def test_the_version_has_one_place():
    # pyproject.toml reads torchic.__version__ instead of repeating it
    tomllib = pytest.importorskip("tomllib")   # Python 3.11+
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in project["project"]
    assert "version" in project["project"]["dynamic"]
    attr = project["tool"]["setuptools"]["dynamic"]["version"]["attr"]
    assert attr == "torchic.__version__"


@pytest.mark.parametrize("command", COMMANDS)
def test_each_command_has_its_own_help(command):
    # demo, bench and serve get their argv from the top level and print their own options
    proc = run_cli(command, "-h")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"usage: python -m torchic {command} "), proc.stdout


def test_demo_unknown_backend_is_a_one_line_error():
    assert_one_line_error(run_cli("demo", "--backend", "nope"), "--backend", "'nope'")


def test_demo_unavailable_backend_is_a_one_line_error_saying_why(tmp_path):
    # the simd library is missing; the note setup.py writes when it cannot build it is quoted
    (tmp_path / "_kernels.build-error.txt").write_text(
        "cargo was not found on PATH when torchic was installed\n")
    proc = run_cli("demo", "--backend", "simd",
                   env_extra={"TORCHIC_SIMD_LIB": str(tmp_path / "_kernels.so")})
    assert_one_line_error(proc, "--backend", "'simd' is not available",
                          "cargo was not found on PATH when torchic was installed",
                          "https://rustup.rs")


def test_demo_missing_data_file_is_a_one_line_error(tmp_path):
    missing = tmp_path / "no-such-names.txt"
    assert_one_line_error(run_cli("demo", "--backend", "workers", "--data", str(missing)),
                          "--data", str(missing))


def test_demo_empty_data_file_is_a_one_line_error(tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n")
    assert_one_line_error(run_cli("demo", "--backend", "workers", "--data", str(empty)),
                          "--data", "no items")


def test_demo_data_directory_is_a_one_line_error(tmp_path):
    assert_one_line_error(run_cli("demo", "--backend", "workers", "--data", str(tmp_path)),
                          "--data", "Is a directory")
