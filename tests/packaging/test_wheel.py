"""Issue 44: torchic as a user installs it from wheels, in a fresh venv outside the repository.

`pip wheel .` without cargo makes a pure py3-none-any wheel (no kernels): it installs, the other
backends work, and `init("simd")` names a remedy that works for an installed wheel. With cargo it
makes a py3-none-<platform> wheel holding the compiled kernels; the remedy's own command installs
it over the pure one, and then `init("simd")` runs a training step whose numbers are checked
against NumPy. Both wheels are built in the checkout (setuptools' build/, cargo's kernels/target:
in CI the editable install has already compiled the crate, so cargo only relinks).
"""

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
REQUIRE_KERNELS = (os.environ.get("TORCHIC_REQUIRE_KERNELS") == "1"
                   or os.environ.get("TORCHIC_REQUIRE_ALL_BACKENDS") == "1")

# run inside the venv: the backends, then one SGD step of a Linear on MSE loss, and its numbers
PROGRAM = r"""
import json, sys
import numpy as np
import torchic
report = {"file": torchic.__file__}
try:
    torchic.init("simd")
    report["simd"] = None
except torchic.BackendUnavailableError as exc:
    report["simd"] = str(exc)
    torchic.init("workers")
report["backend"] = torchic.get_backend()
torchic.manual_seed(0)
model = torchic.nn.Linear(3, 2)
w0, b0 = model.weight.detach().numpy().copy(), model.bias.detach().numpy().copy()
X = np.arange(12, dtype=np.float32).reshape(4, 3) / 10
Y = np.array([[1, 0], [0, 1], [1, 1], [0, 0]], dtype=np.float32)
opt = torchic.optim.SGD(model.parameters(), lr=0.1)
losses = []
for step in range(5):
    opt.zero_grad()
    loss = torchic.nn.functional.mse_loss(model(torchic.tensor(X)), torchic.tensor(Y))
    loss.backward()
    opt.step()
    losses.append(loss.item())
    if step == 0:
        report["w1"] = model.weight.detach().numpy().tolist()
        report["b1"] = model.bias.detach().numpy().tolist()
report.update(w0=w0.tolist(), b0=b0.tolist(), losses=losses)
if report["backend"] == "simd":
    from torchic.backends.simd import native
    report["library"] = str(native.library_path())
print(json.dumps(report))
"""


def _env(**extra):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("TORCHIC_") and k not in ("PYTHONPATH", "PIP_REQUIRE_VIRTUALENV")}
    env.update(extra)
    return env


def _run(cmd, cwd, env, timeout=600):
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"{cmd}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


def _build_wheel(out, env):
    """`pip wheel .` in the checkout; the build requirements from this environment when it has
    them (the [test] extra brings setuptools-rust), else pip's isolated build environment."""
    import setuptools
    cmd = [sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "-q", "-w", str(out)]
    if (importlib.util.find_spec("setuptools_rust") is not None
            and int(setuptools.__version__.split(".")[0]) >= 77):
        cmd.append("--no-build-isolation")
    shutil.rmtree(ROOT / "build", ignore_errors=True)   # no stale build/lib files in the wheel
    _run(cmd, cwd=out, env=env)
    (wheel,) = out.glob("torchic-*.whl")
    return wheel


def _pip_into(venv_python, args, cwd):
    return _run([sys.executable, "-m", "pip", "--python", str(venv_python), *args], cwd=cwd,
                env=_env())


def _program(venv_python, cwd):
    proc = _run([str(venv_python), "-c", PROGRAM], cwd=cwd, env=_env(), timeout=300)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _check_training(report):
    import numpy as np
    X = np.arange(12, dtype=np.float64).reshape(4, 3) / 10
    Y = np.array([[1, 0], [0, 1], [1, 1], [0, 0]], dtype=np.float64)
    w0, b0 = np.array(report["w0"]), np.array(report["b0"])
    r = X @ w0.T + b0 - Y
    np.testing.assert_allclose(report["losses"][0], (r ** 2).mean(), rtol=1e-5)
    gw, gb = 2 * r.T @ X / r.size, 2 * r.sum(0) / r.size
    np.testing.assert_allclose(report["w1"], w0 - 0.1 * gw, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(report["b1"], b0 - 0.1 * gb, rtol=1e-5, atol=1e-6)
    assert all(b < a for a, b in zip(report["losses"], report["losses"][1:])), report["losses"]


def test_wheels_install_outside_the_checkout_and_the_simd_remedy_works(tmp_path):
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)],
         cwd=tmp_path, env=_env())
    python = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")

    # 1. built where there is no cargo: a pure wheel without the library
    (tmp_path / "pure").mkdir()
    pure = _build_wheel(tmp_path / "pure", _env(CARGO=str(tmp_path / "no-cargo-here")))
    assert pure.name.endswith("-py3-none-any.whl"), pure.name
    names = zipfile.ZipFile(pure).namelist()
    assert not any(n.endswith(("_kernels.so", "_kernels.dll")) for n in names), names
    assert "torchic/backends/simd/_kernels.build-error.txt" in names
    _pip_into(python, ["install", "--no-deps", "--no-index", "--ignore-installed", str(pure)],
              cwd=tmp_path)
    report = _program(python, tmp_path)
    assert Path(report["file"]).is_relative_to(venv), report["file"]
    assert report["backend"] == "workers"
    _check_training(report)
    why = report["simd"]
    assert why and "cargo was not found on PATH when this torchic was built" in why, why
    assert "pip install -e" not in why and "torchic.backends.simd.build" not in why, why
    from torchic.backends.simd import native
    wheel_name = native.platform_wheel_name()
    remedy = re.search(r"(pip install --force-reinstall --no-deps \S+\.whl)", why)
    assert remedy and remedy.group(1).endswith(wheel_name), why

    # 2. built with cargo: the platform wheel with the kernels, installed as the remedy says
    if shutil.which(os.environ.get("CARGO", "cargo")) is None:
        if REQUIRE_KERNELS:
            pytest.fail("cargo is missing (TORCHIC_REQUIRE_KERNELS=1): no platform wheel")
        pytest.skip("cargo is not on the PATH: the platform wheel cannot be built here")
    (tmp_path / "plat").mkdir()
    plat = _build_wheel(tmp_path / "plat", _env())
    assert plat.name == wheel_name, (plat.name, wheel_name)
    assert f"torchic/backends/simd/{native.LIB_NAME}" in zipfile.ZipFile(plat).namelist()
    version, tag = plat.name[:-4].split("-", 2)[1:]
    wheel_text = zipfile.ZipFile(plat).read(f"torchic-{version}.dist-info/WHEEL").decode()
    assert "Root-Is-Purelib: false" in wheel_text and f"Tag: {tag}" in wheel_text, wheel_text
    args = remedy.group(1).split()[1:-1] + ["--no-index", str(plat)]
    _pip_into(python, args, cwd=tmp_path)
    report = _program(python, tmp_path)
    assert report["simd"] is None and report["backend"] == "simd", report
    assert Path(report["library"]).is_relative_to(venv), report["library"]
    _check_training(report)
