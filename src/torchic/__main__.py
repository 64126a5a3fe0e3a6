"""`python -m torchic <command>` (also installed as the `torchic` script).

One argparse parser with a subcommand each: demo, info, bench, serve. `info` is defined here;
demo, bench and serve have their own parsers in their modules, so the top level only picks
the command and hands everything after it to that module's main(argv): their options and
their -h are theirs. A bad or missing command prints the usage and exits with status 2.
"""

import argparse
import importlib
import json
import platform
import sys
import textwrap


from . import __version__

PROG = "python -m torchic"
INFO_HELP = "backends, their availability (or why not), SIMD path, GPU adapters"
# command -> (module with main(argv), one line of help)
DELEGATED = {
    "demo": ("torchic.demo", "train the makemore character model on the bundled names and "
                             "sample from it"),
    "bench": ("torchic.bench", "performance suites beside NumPy / PyTorch"),
    "serve": ("torchic.serve", "the interactive test and benchmark page"),
}


def _add_info_arguments(parser):
    parser.add_argument("--json", action="store_true",
                        help="print every detail as JSON (the default is a short summary)")


def build_parser():
    parser = argparse.ArgumentParser(
        prog=PROG, description="torchic: a small PyTorch-style neural-network library.",
        epilog=f"`{PROG} COMMAND -h` shows a command's options.")
    parser.add_argument("--version", action="version", version=f"torchic {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    _add_info_arguments(commands.add_parser("info", help=INFO_HELP, description=INFO_HELP))
    for name, (_, help_text) in DELEGATED.items():
        # add_help=False: `demo -h` goes on to the demo's own parser
        commands.add_parser(name, help=help_text, add_help=False)
    return parser


def info(argv=None):
    """`python -m torchic info` (argv: the arguments after `info`)."""
    parser = argparse.ArgumentParser(prog=f"{PROG} info", description=INFO_HELP)
    _add_info_arguments(parser)
    return _info(parser.parse_args(argv))


def _info(args):
    import numpy

    import torchic
    from torchic import dispatcher
    report = {"torchic": torchic.__version__, "python": platform.python_version(),
              "numpy": numpy.__version__, "machine": platform.machine(), "backends": {}}
    for name in dispatcher.backend_names():
        cls = dispatcher.backend_class(name)
        ok, why = cls.available()
        entry = {"available": ok}
        if not ok:
            entry["reason"] = why
        if ok:
            try:
                entry.update(cls.describe_platform())
            except Exception as exc:  # info must never crash
                entry["error"] = f"{type(exc).__name__}: {exc}"
        report["backends"][name] = entry
    if args.json:
        print(json.dumps(report, indent=2, default=str))
        return 0
    print(f"torchic {report['torchic']}  python {report['python']}  numpy {report['numpy']}  "
          f"({report['machine']})")
    shortened = False
    for name, entry in report["backends"].items():
        state = "available" if entry["available"] else "unavailable"
        print(f"\n[{name}] {state}")
        for key, value in entry.items():
            if key == "available":
                continue
            if isinstance(value, list):
                print(f"  {key}:")
                for item in value:
                    text = _readable(item, INFO_WIDTH - 6)
                    shortened |= text.replace("\n      ", " ") != str(item)
                    print(f"    - {text}")
            else:
                text = _readable(value, INFO_WIDTH - 4 - len(key))
                shortened |= text.replace("\n      ", " ") != str(value)
                print(f"  {key}: {text}")
    if shortened:
        print(f"\n(a summary: `{PROG} info --json` prints every detail)")
    return 0


INFO_WIDTH = 100     # the summary's lines stay within this many columns


def _size(n):
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale and n % (scale // 4) == 0:
            return f"{n / scale:g} {unit}"
    return f"{n} B"


def _readable(value, width):
    """One line of at most `width` characters: a dict as `key value` pairs (cache levels by
    their size), a long text with its feature list counted, anything cut at a field boundary."""
    if isinstance(value, dict):
        parts = []
        for k, v in value.items():
            if isinstance(v, dict) and isinstance(v.get("size"), int):
                parts.append(f"{k} {_size(v['size'])}")
            elif not isinstance(v, (dict, list)):
                parts.append(f"{k} {v}")
        text, sep = ", ".join(parts), ", "
    else:   # a text: the feature list counted, then wrapped under its key
        text = str(value)
        head, found, features = text.partition("; features: ")
        if found:
            text = f"{head}; {len(features.split(', '))} features"
        return "\n      ".join(textwrap.wrap(text, width, break_on_hyphens=False)) or text
    if len(text) <= width:
        return text
    more = " ..."
    cut = text.rfind(sep, 0, width - len(more))
    return (text[:cut] if cut > 0 else text[:width - len(more)]) + more


def main(argv=None):
    """The command line; returns the exit status (argparse exits with 2 on bad usage)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    args, _ = parser.parse_known_args(argv)
    if args.command == "info":
        return _info(parser.parse_args(argv))   # strict: an unknown option is an error
    # the command is the first argument that is not an option (the top level takes no values)
    at = argv.index(args.command)
    parser.parse_args(argv[:at + 1])            # an unknown option before it is an error
    module_name, _ = DELEGATED[args.command]
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:   # an optional dependency (e.g. `serve` needs starlette)
        print(f"{PROG} {args.command}: not available in this installation: {exc}",
              file=sys.stderr)
        return 2
    return module.main(argv[at + 1:]) or 0


if __name__ == "__main__":
    sys.exit(main())
