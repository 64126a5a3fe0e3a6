"""Generate src/torchic/_tensor_methods.pyi: Tensor's op methods as a type checker sees them.

    python scripts/gen_tensor_stub.py           # rewrite the stub
    python scripts/gen_tensor_stub.py --check   # exit 1 if the committed stub is out of date

Tensor's op methods are bound at run time from one table (``methods.METHODS``), which
a checker cannot follow. This script reads that same table and writes, from each
function's own signature and annotations, a stub of them: ``TensorMethods``, the base class
``tensor.py`` gives ``Tensor`` under ``TYPE_CHECKING`` only (at run time the base is
``object``), and the module-level unary op functions (``torchic.exp`` ...: made from
``api.UNARY_OPS``, exported by ``api/__init__.py`` for checkers from this stub's
``__all__``). Nothing is written by hand: a method whose function lacks an annotation is
an error here (annotate the function), so the stub is exactly the table.
tests/unit/test_typing.py runs ``--check``.
"""

import argparse
import collections.abc
import inspect
import os
import sys
import types
import typing

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "src", "torchic", "_tensor_methods.pyi")

# object's methods whose stub signature differs from object's (PyTorch's stubs do the same)
OVERRIDES = {"__eq__", "__ne__", "__new__", "__init__", "__format__", "__reduce_ex__"}


class Renderer:
    """Annotation objects to stub source, collecting the imports they need."""

    def __init__(self, shadowed=()):
        self.imports = collections.defaultdict(set)   # module -> names
        self.errors = []
        self.shadowed = set(shadowed)     # names a method takes in the class (float, int ...)
        self.uses_builtins = False

    def name(self, module, name):
        if module == "builtins":
            if name in self.shadowed:     # `float` in the class body is Tensor.float
                self.uses_builtins = True
                return f"builtins.{name}"
            return name
        if module in ("torchic.tensor",):
            return name                                   # Tensor: imported by the stub
        if module.startswith("torchic."):
            self.imports["." + module[len("torchic."):]].add(name)
            return name
        if module == "numpy":
            self.imports["numpy"].add(name)
            return name
        self.imports[module].add(name)
        return name

    def __call__(self, ann, where):
        if ann is inspect.Parameter.empty:
            self.errors.append(f"{where}: no annotation")
            return "Any"
        if isinstance(ann, str):
            return ann
        if ann is None or ann is type(None):
            return "None"
        if ann is typing.Any:
            return self.name("typing", "Any")
        if ann is Ellipsis:
            return "..."
        if isinstance(ann, list):                         # Callable's argument list
            return "[" + ", ".join(self(a, where) for a in ann) + "]"
        origin = typing.get_origin(ann)
        if origin in (typing.Union, types.UnionType):
            return " | ".join(self(a, where) for a in typing.get_args(ann))
        if origin is not None:
            args = typing.get_args(ann)
            if origin is collections.abc.Callable and args:
                params, ret = args[:-1], args[-1]
                head = "..." if params == (Ellipsis,) else self(list(params[0]) if len(
                    params) == 1 and isinstance(params[0], (list, tuple)) else list(params),
                    where)
                return f"{self.name('collections.abc', 'Callable')}[{head}, {self(ret, where)}]"
            base = self(origin, where)
            if origin is typing.Literal:
                return f"{base}[{', '.join(repr(a) for a in args)}]"
            return f"{base}[{', '.join(self(a, where) for a in args)}]" if args else base
        if ann is typing.Literal:
            return self.name("typing", "Literal")
        if isinstance(ann, type):
            if ann.__module__ == "numpy" and ann.__name__ == "ndarray":
                self.imports["numpy.typing"].add("NDArray")
                self.imports["typing"].add("Any")
                return "NDArray[Any]"
            return self.name(ann.__module__, ann.__qualname__)
        self.errors.append(f"{where}: cannot write annotation {ann!r} in a stub")
        return "Any"


def _function(value):
    """(kind, function) of a METHODS value: a function, staticmethod or property."""
    if isinstance(value, staticmethod):
        return "static", value.__func__
    if isinstance(value, property):
        return "property", value.fget
    return "method", value


def render_signature(render, fn, where, drop_first):
    sig = inspect.signature(fn)
    params = list(sig.parameters.values())
    out = []
    if drop_first:
        if not params or params[0].kind not in (params[0].POSITIONAL_ONLY,
                                                params[0].POSITIONAL_OR_KEYWORD):
            raise SystemExit(f"{where}: a method's function must take the tensor first")
        params = params[1:]
        out.append("self")
    star = False
    for i, p in enumerate(params):
        if p.kind is p.KEYWORD_ONLY and not star:
            out.append("*")
            star = True
        ann = render(p.annotation, f"{where}({p.name})")
        if p.kind is p.VAR_POSITIONAL:
            star = True
            out.append(f"*{p.name}: {ann}")
        elif p.kind is p.VAR_KEYWORD:
            out.append(f"**{p.name}: {ann}")
        else:
            default = "" if p.default is p.empty else " = ..."
            out.append(f"{p.name}: {ann}{default}")
        if p.kind is p.POSITIONAL_ONLY and (i + 1 == len(params) or
                                            params[i + 1].kind is not p.POSITIONAL_ONLY):
            out.append("/")
    ret = render(sig.return_annotation, f"{where} return")
    return f"({', '.join(out)}) -> {ret}"


def _overloads(fn):
    """The @overload signatures of fn (typing.get_overloads: Python 3.11+), or []."""
    get = getattr(typing, "get_overloads", None)
    if get is None:
        raise SystemExit("the stub is generated with Python 3.11+ (typing.get_overloads)")
    return get(fn)


def _body(fn, indent):
    """The stub body: the first paragraph of fn's docstring (a checker's hover text)."""
    doc = (inspect.getdoc(fn) or "").split("\n\n")[0].strip()
    if not doc:
        return " ..."
    doc = doc.replace("\\", "\\\\").replace('"""', '\\"""').replace("\n", "\n" + indent)
    doc += " " if doc.endswith('"') else ""
    return f'\n{indent}"""{doc}"""'


def _method_lines(render, name, fn, where, kind, ignore):
    """The stub lines of one method: one def, or one per @overload of its function (the
    first with the docstring's first paragraph)."""
    variants = _overloads(fn) if kind != "property" else []
    decorator = {"property": ["    @property"], "static": ["    @staticmethod"]}.get(kind, [])
    lines = []
    for i, variant in enumerate(variants or [fn]):
        sig = render_signature(render, variant, where, drop_first=kind != "static")
        lines += (["    @overload"] if variants else []) + decorator
        body = _body(fn, " " * 8) if i == 0 else " ..."
        lines.append(f"    def {name}{sig}:{ignore}{body}" if body != " ..." else
                     f"    def {name}{sig}: ...{ignore}")
    if variants:
        render.imports["typing"].add("overload")
    return lines


def generate():
    sys.path.insert(0, os.path.join(ROOT, "src"))
    from torchic import api, methods     # noqa: PLC0415  (the script's subject)

    render = Renderer(shadowed=methods.METHODS)
    lines = []
    for name, value in methods.METHODS.items():
        kind, fn = _function(value)
        where = f"METHODS[{name!r}] ({fn.__module__}.{fn.__qualname__})"
        ignore = "  # type: ignore[override]" if name in OVERRIDES else ""
        if name == "__new__":                    # Tensor(data) / Tensor(2, 3): a constructor
            sig = render_signature(render, fn, where, drop_first=True)
            sig = sig.replace("(self", "(cls", 1).rsplit(" -> ", 1)[0] + " -> Self"
            render.imports["typing_extensions"].add("Self")
            lines.append(f"    def __new__{sig}: ...{ignore}")
            continue
        lines += _method_lines(render, name, fn, where, kind, ignore)
    functions = []
    for name, fn in sorted(api.UNARY_OPS.items()):
        functions.append(f"def {name}"
                         f"{render_signature(render, fn, f'api.UNARY_OPS[{name!r}]', False)}"
                         f":{_body(fn, ' ' * 4)}")
    if render.errors:
        raise SystemExit("the stub is generated from the functions' annotations; annotate:\n  "
                         + "\n  ".join(render.errors))
    imports = ["import builtins"] * render.uses_builtins
    render.imports[".tensor"].add("Tensor")
    for module in sorted(render.imports, key=lambda m: (m.startswith("."), m)):
        imports.append(f"from {module} import {', '.join(sorted(render.imports[module]))}")
    header = ['"""GENERATED by scripts/gen_tensor_stub.py from methods.METHODS and '
              'api.UNARY_OPS: do not edit.', "",
              "Tensor's op methods (bound at run time by methods.py) and the unary op "
              "functions, for", 'type checkers. Regenerate after changing either table."""',
              ""]
    names = ", ".join(f'"{n}"' for n in sorted(api.UNARY_OPS))
    body = (header + imports + ["", f"__all__ = [{names}]", "", ""] + functions +
            ["", "", "class TensorMethods:",
             '    """The methods methods.METHODS binds onto Tensor (its base for checkers)."""',
             ""] + lines)
    return "\n".join(body) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="exit 1 if the committed stub differs from the generated one")
    args = parser.parse_args()
    text = generate()
    if args.check:
        with open(OUT) as f:
            if f.read() != text:
                print(f"{os.path.relpath(OUT, ROOT)} is out of date: regenerate with "
                      f"python scripts/gen_tensor_stub.py", file=sys.stderr)
                return 1
        return 0
    with open(OUT, "w") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
