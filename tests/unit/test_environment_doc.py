"""docs/ENVIRONMENT.md's table lists every TORCHIC_* environment variable the code reads.

Scanned: the package (src/), the Rust kernels (kernels/src/), setup.py and the test suite
(tests/). A variable is a `TORCHIC_` name in the source text (docstrings and messages
included: they name real settings); the table's rows are its first column.
"""

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]
TABLE = ROOT / "docs" / "ENVIRONMENT.md"
NAME = re.compile(r"\bTORCHIC_[A-Z0-9_]*[A-Z0-9]\b")
# names that are not settings: the env parser's test's throwaway variable, a Python constant
NOT_SETTINGS = {"TORCHIC_X", "TORCHIC_IMPORTS"}


def _sources():
    yield from (ROOT / "src").rglob("*.py")
    yield from (ROOT / "kernels" / "src").rglob("*.rs")
    yield ROOT / "setup.py"
    yield from (ROOT / "tests").rglob("*.py")


def _read_names():
    found = {}
    for path in _sources():
        for name in NAME.findall(path.read_text(encoding="utf-8", errors="replace")):
            found.setdefault(name, path.relative_to(ROOT).as_posix())
    return {k: v for k, v in found.items() if k not in NOT_SETTINGS}


def _table_names():
    rows = re.findall(r"^\| `(TORCHIC_[A-Z0-9_]+)` \|", TABLE.read_text(), re.MULTILINE)
    assert len(rows) == len(set(rows)), "a variable has two rows"
    return set(rows)


def test_every_torchic_variable_read_is_in_the_table():
    missing = {k: v for k, v in _read_names().items() if k not in _table_names()}
    assert not missing, (f"TORCHIC_* variables read but not in docs/ENVIRONMENT.md's table "
                         f"(add a row): {missing}")


def test_every_row_names_a_variable_that_is_read():
    stale = _table_names() - set(_read_names())
    assert not stale, f"docs/ENVIRONMENT.md lists variables nothing reads: {sorted(stale)}"


def test_the_readme_links_the_table():
    assert "docs/ENVIRONMENT.md" in (ROOT / "README.md").read_text()
