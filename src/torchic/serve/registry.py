"""Suite registry: ``define_bench`` / ``define_test`` and the discovery of suite files.

A suite is one Python file in a suites folder (``torchic/serve/suites/`` and any
``--suites DIR``) that makes one or more registration calls at import time:

    from torchic.serve import define_bench

    def matmul(run, backend, size):          # called once per combination of params
        run.use_backend(backend)
        ...
        run.row(backend=backend, size=size, gflops=g)

    define_bench("my-matmul", matmul, {"backend": backends, "size": [128, 256, 512]},
                 plot={"x": "size", "y": "gflops", "series": ["backend"]})

``params`` maps a parameter name to its choices (a list of JSON scalars, or a
callable that returns one, evaluated when the suites are listed). The page
shows one button per choice; a run is the cartesian product of the selected
choices, in declaration order (the last parameter varies fastest), and the
suite function is called once per combination with keyword arguments.

A combination that cannot run (a case that has no such size, a reference that
cannot run a torchic-only case, a GPU that runs once rather than per thread
count) is declared up front with ``skip``, a list of rules (or a callable that
returns one) the page evaluates too, so its "N combinations" count is the
number that run and it can say which are skipped and why:

    skip=[{"when": {"impl": ["numpy"], "size": ["4096"]}, "why": "too slow"},
          {"when": {"impl": ["webgpu"]}, "unless_first": "threads",
           "why": "webgpu runs once, not per thread count"}]

A rule matches a combination whose every ``when`` parameter has one of the
listed values (and, with ``unless_first``, whose value of that parameter is not
the first one selected); the first matching rule's ``why`` is the reason.

Files whose name starts with ``_`` are not suites (helpers live there).
Importing a suite file must be cheap: it may import torchic, but must not
initialize a backend or measure anything at import time.
"""

import dataclasses
import importlib
import importlib.util
import itertools
import os
import pkgutil
import sys
import traceback
import zlib
from typing import Callable, Optional

KINDS = ("test", "bench")
MAX_COMBINATIONS = 10_000
BUILTIN_PACKAGE = "torchic.serve.suites"


class SuiteError(ValueError):
    """A suite definition is invalid (raised at registration time)."""


class ParamError(ValueError):
    """A run asked for a parameter value the suite does not offer."""


@dataclasses.dataclass
class Param:
    name: str
    choices: list
    default: list            # the choices selected when the page opens
    labels: dict             # choice (as str) -> button text
    disabled: dict           # choice (as str) -> why it cannot run here (button greyed out)
    run_all: list            # the choices "Run all" uses (every enabled one unless narrowed)

    def as_dict(self):
        return dataclasses.asdict(self)


@dataclasses.dataclass
class Suite:
    name: str
    kind: str                     # "test" or "bench"
    fn: Callable
    params: dict                  # name -> list of choices, or callable -> list
    title: str = ""
    description: str = ""
    columns: Optional[list] = None     # table columns in order (extra row keys are appended)
    plot: Optional[dict] = None        # {"x", "y", "series": [..], "panel", "xlog", "xlabel",
    #                                    "ylabel"}: one panel per value of the row key "panel"
    defaults: Optional[dict] = None    # name -> choices selected by default (or callable)
    labels: Optional[dict] = None      # name -> {choice: button text}
    disabled: Optional[dict] = None    # name -> {choice: why not here} (or callable -> that)
    run_all: Optional[dict] = None     # name -> the choices "Run all" uses (default: all enabled)
    timeout_s: Optional[float] = None  # the server stops a run that takes longer
    skip: object = None                # rules of combinations that do not run (or callable)
    module: str = ""                   # where it was defined (the worker imports this)
    source: str = ""

    def resolve_params(self):
        """The params as Param records, callables evaluated (done when listing)."""
        out = []
        defaults = _call(self.defaults) or {}
        labels = self.labels or {}
        disabled_all = self.disabled or {}
        for name, choices in self.params.items():
            choices = list(_call(choices))
            _check_choices(self.name, name, choices)
            disabled = {str(k): str(v) for k, v in (_call(disabled_all.get(name)) or {}).items()
                        if any(_same(c, k) for c in choices)}
            default = _call(defaults.get(name, choices))
            default = [c for c in choices if any(_same(c, d) for d in default)
                       and str(c) not in disabled]
            default = default or [c for c in choices if str(c) not in disabled] or list(choices)
            text = {str(k): str(v) for k, v in (labels.get(name) or {}).items()}
            enabled = [c for c in choices if str(c) not in disabled] or list(choices)
            narrowed = _call((self.run_all or {}).get(name))
            every = [c for c in enabled if narrowed is None or any(_same(c, n) for n in narrowed)]
            out.append(Param(name, choices, default, text, disabled, every or enabled))
        return out

    def describe(self):
        """JSON-able description for the page and for parameter validation."""
        return {"name": self.name, "kind": self.kind, "title": self.title or self.name,
                "description": self.description, "columns": self.columns, "plot": self.plot,
                "timeout_s": self.timeout_s, "module": self.module, "source": self.source,
                "params": [p.as_dict() for p in self.resolve_params()],
                "skip": self.skip_rules()}

    def skip_rules(self):
        rules = list(_call(self.skip) or [])
        _check_skip(self.name, rules)
        return rules


def _call(x):
    return x() if callable(x) else x


def _same(a, b):
    """Choice equality that also accepts the string form (deep links send strings)."""
    if a == b and type(a) is type(b):
        return True
    if isinstance(a, bool) or isinstance(b, bool):
        return str(a).lower() == str(b).lower()
    return str(a) == str(b)


def _check_choices(suite, name, choices):
    if not isinstance(name, str) or not name.isidentifier():
        raise SuiteError(f"suite {suite!r}: parameter name {name!r} must be a Python identifier")
    if not choices:
        raise SuiteError(f"suite {suite!r}: parameter {name!r} has no choices")
    for c in choices:
        if not isinstance(c, (str, int, float, bool)):
            raise SuiteError(f"suite {suite!r}: choice {c!r} of {name!r} is not a JSON scalar "
                             f"(str, int, float or bool)")
    if len({str(c) for c in choices}) != len(choices):
        raise SuiteError(f"suite {suite!r}: parameter {name!r} has duplicate choices")


def _check_skip(suite, rules):
    for rule in rules:
        if not (isinstance(rule, dict) and isinstance(rule.get("when"), dict)
                and isinstance(rule.get("why"), str)
                and all(isinstance(v, list) for v in rule["when"].values())):
            raise SuiteError(f"suite {suite!r}: skip rule {rule!r} must be "
                             f"{{'when': {{param: [values]}}, 'why': str}}")


# -- the registry ---------------------------------------------------------------------------
_SUITES = {}          # name -> Suite, in registration order
_current_module = [None]


def _define(kind, name, fn, params, **options):
    if not isinstance(name, str) or not name or any(c.isspace() or c in "/?#&" for c in name):
        raise SuiteError(f"suite name {name!r} must be a non-empty string without spaces, "
                         f"'/', '?', '#' or '&'")
    if not callable(fn):
        raise SuiteError(f"suite {name!r}: fn must be callable, got {type(fn).__name__}")
    if not isinstance(params, dict):
        raise SuiteError(f"suite {name!r}: params must be a dict of name -> choices")
    unknown = set(options) - {f.name for f in dataclasses.fields(Suite)} - {"kind"}
    if unknown:
        raise SuiteError(f"suite {name!r}: unknown option(s) {sorted(unknown)}")
    module = _current_module[0] or getattr(fn, "__module__", "") or ""
    source = getattr(sys.modules.get(module), "__file__", "") or ""
    old = _SUITES.get(name)
    if old is not None and old.module != module:
        raise SuiteError(f"suite {name!r} is defined twice: in {old.source or old.module} and "
                         f"in {source or module}")
    for pname, choices in params.items():
        if not callable(choices):
            _check_choices(name, pname, list(choices))
    if options.get("skip") is not None and not callable(options["skip"]):
        _check_skip(name, options["skip"])
    suite = Suite(name=name, kind=kind, fn=fn, params=dict(params), module=module,
                  source=source, **options)
    _SUITES[name] = suite
    return fn


def define_test(name, fn, params=None, **options):
    """Register a test suite: ``fn(run, **one_combination)`` records pass/fail rows.

    options: title, description, columns, plot, defaults, labels, disabled, run_all,
    timeout_s, skip.
    """
    return _define("test", name, fn, params or {}, **options)


def define_bench(name, fn, params=None, **options):
    """Register a benchmark suite: ``fn(run, **one_combination)`` records figures.

    options: as define_test.
    """
    return _define("bench", name, fn, params or {}, **options)


def suites():
    return dict(_SUITES)


def clear():
    _SUITES.clear()


# -- discovery ------------------------------------------------------------------------------
def _extra_module_name(path):
    stem = os.path.splitext(os.path.basename(path))[0]
    tag = format(zlib.crc32(os.path.abspath(os.path.dirname(path)).encode()), "08x")
    return f"torchic_serve_user_{tag}.{stem}"


def import_suite_file(module, source=None):
    """Import one suite module (by name, or from a file path for extra folders)."""
    _current_module[0] = module
    try:
        if module in sys.modules:
            return sys.modules[module]
        if source and not module.startswith(BUILTIN_PACKAGE + "."):
            parent = module.rsplit(".", 1)[0]
            if parent not in sys.modules:   # a namespace-like parent so pickling/reprs work
                pkg = importlib.util.module_from_spec(importlib.machinery.ModuleSpec(parent, None))
                pkg.__path__ = [os.path.dirname(source)]
                sys.modules[parent] = pkg
            spec = importlib.util.spec_from_file_location(module, source)
            mod = importlib.util.module_from_spec(spec)
            sys.modules[module] = mod
            try:
                spec.loader.exec_module(mod)
            except BaseException:
                sys.modules.pop(module, None)
                raise
            return mod
        return importlib.import_module(module)
    finally:
        _current_module[0] = None


def suite_files(extra_dirs=()):
    """(module name, path) of every suite file: built-ins first, then each extra folder."""
    from . import suites as builtin
    files = []
    for info in sorted(pkgutil.iter_modules(builtin.__path__), key=lambda m: m.name):
        if not info.name.startswith("_") and not info.ispkg:
            path = os.path.join(builtin.__path__[0], info.name + ".py")
            files.append((f"{BUILTIN_PACKAGE}.{info.name}", path))
    for d in extra_dirs:
        if not os.path.isdir(d):
            raise FileNotFoundError(f"suites folder {d!r} does not exist")
        for fname in sorted(os.listdir(d)):
            if fname.endswith(".py") and not fname.startswith("_"):
                path = os.path.join(os.path.abspath(d), fname)
                files.append((_extra_module_name(path), path))
    return files


def discover(extra_dirs=()):
    """Import every suite file; returns (suites, load_errors).

    A file that fails to import does not stop the others: its error is returned
    (and shown on the page) instead.
    """
    errors = []
    for module, path in suite_files(extra_dirs):
        try:
            import_suite_file(module, path)
        except Exception as exc:  # noqa: BLE001  (reported on the page)
            errors.append({"module": module, "source": path,
                           "error": f"{type(exc).__name__}: {exc}",
                           "traceback": traceback.format_exc(limit=8)})
    return suites(), errors


# -- runs -----------------------------------------------------------------------------------
def normalize_params(desc, requested):
    """Validate requested {name: value or [values]} against a suite description.

    Missing parameters take the suite's defaults. Returns {name: [choices]} with
    the suite's own choice values (in the suite's order). Raises ParamError.
    """
    if requested is None:
        requested = {}
    if not isinstance(requested, dict):
        raise ParamError("params must be an object of name -> value or list of values")
    params = {p["name"]: p for p in desc["params"]}
    unknown = [k for k in requested if k not in params]
    if unknown:
        known = ", ".join(params) or "none"
        raise ParamError(f"suite {desc['name']!r} has no parameter {unknown[0]!r} "
                         f"(parameters: {known})")
    out = {}
    for name, p in params.items():
        if name not in requested:
            out[name] = list(p["default"])
            continue
        values = requested[name]
        if not isinstance(values, list):
            values = [values]
        if not values:
            raise ParamError(f"select at least one value of {name!r}")
        chosen = []
        for v in values:
            if not isinstance(v, (str, int, float, bool)):
                raise ParamError(f"bad value {v!r} for parameter {name!r}")
            match = [c for c in p["choices"] if _same(c, v)]
            if not match:
                offered = ", ".join(str(c) for c in p["choices"])
                raise ParamError(f"bad value {v!r} for parameter {name!r} of suite "
                                 f"{desc['name']!r}; choices: {offered}")
            if match[0] not in chosen:
                chosen.append(match[0])
        out[name] = [c for c in p["choices"] if c in chosen]
    n = 1
    for vs in out.values():
        n *= len(vs)
    if n > MAX_COMBINATIONS:
        raise ParamError(f"{n} combinations requested; at most {MAX_COMBINATIONS} per run")
    return out


def combinations(params):
    """Every combination of {name: [choices]}, in declaration order (last varies fastest)."""
    names = list(params)
    return [dict(zip(names, values)) for values in itertools.product(*params.values())]


def skip_reason(rules, combo, selection):
    """Why this combination does not run (the first matching skip rule), or None.

    The page's app.js (skipReason) applies the same rules to count what a run will do.
    """
    for rule in rules or ():
        if not all(any(_same(combo.get(k), v) for v in vs) for k, vs in rule["when"].items()):
            continue
        first = rule.get("unless_first")
        if first is not None and selection.get(first) and _same(combo.get(first),
                                                                 selection[first][0]):
            continue
        return rule["why"]
    return None


def plan(rules, selection):
    """(combinations that run, [(combination, why) skipped]) of a selection."""
    runs, skipped = [], []
    for combo in combinations(selection):
        why = skip_reason(rules, combo, selection)
        (runs.append(combo) if why is None else skipped.append((combo, why)))
    return runs, skipped
