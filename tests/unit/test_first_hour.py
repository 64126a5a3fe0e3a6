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
