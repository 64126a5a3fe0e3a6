"""Test files need unique basenames: tests/ has no __init__.py files, so pytest imports each
test module by its basename, and two tests/*/test_x.py stop the whole run at collection."""

import collections
import pathlib

TESTS = pathlib.Path(__file__).resolve().parents[1]


def test_test_file_basenames_are_unique():
    seen = collections.defaultdict(list)
    for path in TESTS.rglob("test_*.py"):
        seen[path.name].append(str(path.relative_to(TESTS)))
    clashes = {name: paths for name, paths in seen.items() if len(paths) > 1}
    assert not clashes, f"test files sharing a basename (rename one): {clashes}"
