"""`python -m torchic <command>`: demo, info, bench, serve.

    demo   train the makemore character model on the bundled names and sample from it
    info   backends, their availability, SIMD path, GPU adapters
    bench  performance suites beside NumPy / PyTorch (see `python -m torchic bench -h`)
    serve  the interactive test and benchmark page
"""

import argparse
import importlib
import json
import platform
import sys


def info(argv=None):
    parser = argparse.ArgumentParser(prog="python -m torchic info",
                                     description="backends, SIMD path and GPU adapters")
    parser.add_argument("--json", action="store_true", help="print JSON")
    args = parser.parse_args(argv)
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
    for name, entry in report["backends"].items():
        state = "available" if entry["available"] else "unavailable"
        print(f"\n[{name}] {state}")
        for key, value in entry.items():
            if key == "available":
                continue
            if isinstance(value, list):
                print(f"  {key}:")
                for item in value:
                    print(f"    - {item}")
            else:
                print(f"  {key}: {value}")
    return 0


COMMANDS = {
    "demo": ("torchic.demo", "main"),
    "bench": ("torchic.bench", "main"),
    "serve": ("torchic.serve", "main"),
}


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0
    command, rest = argv[0], argv[1:]
    if command == "info":
        return info(rest)
    if command not in COMMANDS:
        print(f"unknown command {command!r}; commands: demo, info, bench, serve",
              file=sys.stderr)
        return 2
    module_name, fn_name = COMMANDS[command]
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        print(f"`{command}` is not available in this installation: {exc}", file=sys.stderr)
        return 2
    return getattr(module, fn_name)(rest) or 0


if __name__ == "__main__":
    sys.exit(main())
