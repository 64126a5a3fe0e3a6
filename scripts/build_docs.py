"""Build the API reference from the docstrings with pdoc: HTML pages in docs/api/.

    pip install -e ".[docs]"              # pdoc
    python scripts/build_docs.py          # -> docs/api/index.html (not committed)
    python scripts/build_docs.py --check  # build into a temporary folder; exit 1 on a warning

The reference covers the public modules only (the ones scripts/check_docstrings.py checks),
not the internals (dispatcher, backends, bench, serve). Every warning pdoc emits (a
docstring it cannot parse, a source it cannot read, a module that fails to import) fails
the build: tests/unit/test_docs.py runs `--check`.
"""

import argparse
import importlib
import pathlib
import re
import sys
import tempfile
import warnings

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
from check_docstrings import MODULES  # noqa: E402  (one list of the public modules)


def _importable(module):
    try:
        importlib.import_module(module)
    except ImportError as exc:
        print(f"skipped {module}: {exc}")       # a note, not a warning (stdout)
        return False
    return True


def build(output):
    """Render the public modules into `output`; returns pdoc's warnings (as strings)."""
    import pdoc
    import pdoc.render

    pdoc.render.configure(docformat="google", show_source=False,
                          footer_text="torchic API reference")
    # pdoc documents a package's submodules too: keep exactly the public modules, less those
    # whose optional dependency is not installed (torchic.utils.tensorboard without tensorboard)
    present = [m for m in MODULES if _importable(m)]
    only_public = "!(?!(" + "|".join(re.escape(m) for m in present) + ")$)"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pdoc.pdoc("torchic", "torchic.testing", only_public,
                  output_directory=pathlib.Path(output))
    # a package's page lists its submodules, importing each: one whose optional dependency
    # is missing (torchic.utils.tensorboard) was skipped above, its import warning is expected
    absent = [m for m in MODULES if m not in present]
    return [f"{w.category.__name__}: {w.message}" for w in caught
            if not any(str(w.message).startswith(f"Couldn't import {m}:") for m in absent)]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output", default=str(ROOT / "docs" / "api"),
                        help="output folder (default: docs/api)")
    parser.add_argument("--check", action="store_true",
                        help="build into a temporary folder and only report warnings")
    args = parser.parse_args(argv)
    if args.check:
        with tempfile.TemporaryDirectory() as tmp:
            problems = build(tmp)
    else:
        problems = build(args.output)
        print(f"API reference written to {args.output}/index.html")
    for p in problems:
        print(p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
