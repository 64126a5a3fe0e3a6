"""Issue 44, a newcomer's first hour: what the README promises about the tests, and quiet
test output (no skip-summary wall, no RuntimeWarning from the comparison helpers)."""

import re
import tomllib
import warnings
from pathlib import Path

import numpy as np

from torchic.testing import checks

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()


def test_default_summary_lists_failures_not_skips():
    opts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    flags = re.findall(r"-r(\w+)", opts.get("addopts", ""))
    for f in flags:
        assert "s" not in f and "a" not in f and "A" not in f, opts["addopts"]


def test_readme_states_test_time_and_a_quick_subset_that_exists():
    assert re.search(r"full run takes about \d+ minutes", README)
    m = re.search(r"`TORCHIC_TEST_BACKENDS=workers python -m pytest ([^`]+?) -q`", README)
    assert m, "README gives no quick subset"
    for path in m.group(1).split():
        assert (ROOT / path).exists(), path
    assert 'pip install -e ".[test,torch]" && python -m pytest' in README


def test_comparisons_do_not_warn_on_inf_and_nan():
    got = np.array([np.inf, -np.inf, np.nan, 1.0, np.inf])
    ref = np.array([np.inf, -np.inf, np.nan, 1.0, -np.inf])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert checks._worst(got, ref) == np.inf
        assert checks._worst(got[:4], ref[:4]) == 0.0


def _python(code, **env_extra):
    import os
    import subprocess
    import sys
    env = dict(os.environ)
    env.pop("TORCHIC_BACKEND", None)
    env.update(env_extra)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, timeout=120)


def test_default_backend_is_said_once_with_the_reason():
    code = ("import torchic; torchic.tensor([1.0]).sum().item(); torchic.init(); "
            "torchic.init(); from torchic import dispatcher; print(dispatcher.current_backend_name())")
    proc = _python(code)
    assert proc.returncode == 0, proc.stderr
    said = [ln for ln in proc.stderr.splitlines() if ln.startswith("torchic: using the ")]
    assert len(said) == 1, proc.stderr
    chosen = proc.stdout.split()[-1]
    assert f"using the {chosen} backend (" in said[0]
    assert "TORCHIC_BACKEND" in said[0] and "init(backend=...)" in said[0]


def test_a_chosen_backend_is_not_announced():
    proc = _python("import torchic; torchic.init('workers'); torchic.tensor([1.0]).item()")
    assert proc.returncode == 0 and "torchic: using" not in proc.stderr, proc.stderr
    proc = _python("import torchic; torchic.tensor([1.0]).item()", TORCHIC_BACKEND="workers")
    assert proc.returncode == 0 and "torchic: using" not in proc.stderr, proc.stderr


def test_installed_without_a_crate_the_remedies_work_outside_a_checkout(monkeypatch, tmp_path):
    import pytest

    from torchic.backends.simd import build, native
    monkeypatch.setattr(native, "PACKAGE_DIR", tmp_path / "lib" / "site-packages" / "torchic" / "x")
    assert not native.in_checkout()
    remedy = native.how_to_get_it()
    assert "pip install -e" not in remedy and "--no-binary torchic" in remedy
    # the platform wheel (tests/packaging/test_wheel.py installs it by this command)
    assert f"pip install --force-reinstall --no-deps {native.platform_wheel_name()}" in remedy
    monkeypatch.setattr(build, "crate_dir", lambda root=None: tmp_path / "kernels")
    with pytest.raises(RuntimeError) as err:
        build.build()
    assert "not a source checkout" in str(err.value) and "--no-binary" in str(err.value)
    assert native.platform_wheel_name() in str(err.value)


def test_info_is_a_readable_summary_and_json_has_every_detail():
    import json
    import subprocess
    import sys

    from torchic import __main__ as cli
    d = {"isa": "avx2", "l1d": {"size": 32768, "ways": 8}, "l3": {"size": 33554432}}
    d.update({f"knob{i}": i * 1000 for i in range(30)})
    short = cli._readable(d, 80)
    assert short.startswith("isa avx2, l1d 32 KiB, l3 32 MiB, knob0 0") and short.endswith(" ...")
    assert len(short) <= 80 and "{" not in short
    adapter = "gpu (Vulkan): max buffer 1; features: " + ", ".join(f"f{i}" for i in range(50))
    assert cli._readable(adapter, 80) == "gpu (Vulkan): max buffer 1; 50 features"

    proc = _python("import sys; from torchic.__main__ import main; sys.exit(main(['info']))")
    assert proc.returncode == 0, proc.stderr
    assert all(len(line) <= cli.INFO_WIDTH for line in proc.stdout.splitlines()), proc.stdout
    assert "{'" not in proc.stdout and "[workers] available" in proc.stdout
    full = subprocess.run([sys.executable, "-m", "torchic", "info", "--json"], capture_output=True,
                          text=True, timeout=120)
    report = json.loads(full.stdout)
    assert set(report["backends"]) >= {"workers"}
    if "--json` prints every detail" not in proc.stdout:
        assert len(full.stdout) < 2000      # nothing was shortened: a short report


def _doc_modules():
    import sys
    sys.path.insert(0, str(ROOT / "scripts"))
    from check_docstrings import MODULES
    return MODULES


def test_every_documented_package_is_in_the_sidebar_and_examples_stay_code():
    import importlib
    modules = _doc_modules()
    for m in modules:   # a documented module's parent package is documented too (the sidebar)
        parent = m.rsplit(".", 1)[0]
        assert "." not in m or parent in modules, f"{parent} (parent of {m}) is not documented"
    for m in modules:
        try:
            doc = importlib.import_module(m).__doc__ or ""
        except ImportError:
            continue
        rest = [ln for ln in doc.splitlines()[1:] if ln.strip()]
        # only indented lines after the summary: cleandoc strips the indent, code turns prose
        assert not rest or min(len(ln) - len(ln.lstrip()) for ln in rest) == 0, m


def test_nn_page_renders_its_example_as_code():
    import pytest
    pdoc = pytest.importorskip("pdoc")
    pdoc.render.configure(docformat="google", show_source=False)
    html = pdoc.pdoc("torchic.nn")
    code = [block for block in html.split("<pre>")[1:] if "MLP" in block.split("</pre>")[0]]
    assert code and "forward" in code[0].split("</pre>")[0], "the MLP example is not code"
