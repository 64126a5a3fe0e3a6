"""List torchic's public callables that have no docstring; exit 1 if there is any.

    python scripts/check_docstrings.py          # prints the missing names, one a line

Public is what a user reaches without an underscore: the names each public module exports
(its ``__all__``, else its non-underscore names defined inside torchic), and for each public
class its public methods and properties, including those inherited from torchic base classes
(``Tensor``'s come from the METHODS table of ``methods.py``). A method that overrides a
documented base method inherits its docstring (``inspect.getdoc``), as in PyTorch's docs.
One object reached under several names (``torchic.add`` is ``Tensor.add``) is reported once.
"""

import importlib
import inspect
import sys

MODULES = ["torchic", "torchic.nn", "torchic.nn.functional", "torchic.nn.init",
           "torchic.nn.utils", "torchic.nn.parallel", "torchic.optim", "torchic.optim.lr_scheduler",
           "torchic.utils", "torchic.utils.data", "torchic.utils.tensorboard", "torchic.cuda", "torchic.distributed", "torchic.testing"]


def _public_names(module):
    names = getattr(module, "__all__", None)
    if names is None:
        names = [n for n in dir(module) if not n.startswith("_")
                 and getattr(getattr(module, n), "__module__", "").startswith("torchic")]
    return names


def _is_documentable(obj):
    return inspect.isclass(obj) or inspect.isroutine(obj) or isinstance(obj, property)


def _members(cls):
    """(name, attribute) of the public methods and properties of `cls` and its torchic bases."""
    seen = set()
    for klass in cls.__mro__:
        if not klass.__module__.startswith("torchic"):
            continue
        for name, attr in vars(klass).items():
            if name.startswith("_") or name in seen:
                continue
            seen.add(name)
            if isinstance(attr, (staticmethod, classmethod)):
                attr = attr.__func__
            if _is_documentable(attr):
                yield name, attr


def _doc(obj, cls=None, name=None):
    if inspect.isclass(obj):
        return obj.__dict__.get("__doc__")
    if cls is not None:             # a method: inherit a base class's docstring
        return inspect.getdoc(getattr(cls, name, obj)) or obj.__doc__
    return obj.__doc__


def missing():
    """The public names (``module.name`` / ``module.Class.member``) without a docstring."""
    found, seen = [], set()

    def check(qualname, obj, doc):
        if id(obj) in seen:
            return
        seen.add(id(obj))
        if not (doc or "").strip():
            found.append(qualname)

    for modname in MODULES:
        try:
            module = importlib.import_module(modname)
        except ImportError as e:            # an optional dependency (tensorboard) is absent
            print(f"skipped {modname}: {e}", file=sys.stderr)
            continue
        for name in _public_names(module):
            obj = getattr(module, name)
            if not _is_documentable(obj):
                continue
            check(f"{modname}.{name}", obj, _doc(obj))
            if inspect.isclass(obj) and obj.__module__.startswith("torchic"):
                for member, attr in _members(obj):
                    check(f"{modname}.{name}.{member}", attr, _doc(attr, obj, member))
    return found


def main():
    names = missing()
    for name in names:
        print(name)
    if names:
        print(f"{len(names)} public callables without a docstring", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
