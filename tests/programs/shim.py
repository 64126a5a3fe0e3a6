"""torchic standing in for torch: run an unmodified PyTorch program on torchic.

    with torchic_as_torch():
        module = load(path)        # its `import torch`, `import torch.nn as nn`,
        module.main()              # `from torch.utils.data import DataLoader` get torchic

While the context is active, sys.modules maps `torch` and the submodules PyTorch
programs import (MODULES) to their torchic counterparts, and any other `torch.*` import
fails with a ModuleNotFoundError naming the missing torchic module (instead of Python
loading a second copy of a torchic file under a torch name). On exit the real torch
modules, if they were imported, come back, so one process can run the same program
with PyTorch and with torchic in turn (tests/programs/test_programs.py).

The shim adds nothing to torchic: a torch module that torchic lacks stays missing, and a
program that uses it fails there (which is the point of the harness). It can become
`torchic.as_torch()` / `python -m torchic run script.py` once it proves useful.
"""

import contextlib
import importlib
import importlib.abc
import sys

# the torch module -> the torchic module that stands in for it
MODULES = {
    "torch": "torchic",
    "torch.nn": "torchic.nn",
    "torch.nn.functional": "torchic.nn.functional",
    "torch.nn.init": "torchic.nn.init",
    "torch.nn.utils": "torchic.nn.utils",
    "torch.nn.utils.rnn": "torchic.nn.utils.rnn",     # recurrent layers (issue 42)
    "torch.optim": "torchic.optim",
    "torch.optim.lr_scheduler": "torchic.optim.lr_scheduler",
    "torch.utils": "torchic.utils",
    "torch.utils.data": "torchic.utils.data",
    "torch.cuda": "torchic.cuda",
}


class _RefuseOtherTorchModules(importlib.abc.MetaPathFinder):
    """Any `torch.*` module not in MODULES: a clear ModuleNotFoundError."""

    def find_spec(self, name, path=None, target=None):
        if name == "torch" or name.startswith("torch."):
            raise ModuleNotFoundError(
                f"torchic has no stand-in for {name!r} (tests/programs/shim.py maps: "
                f"{', '.join(sorted(MODULES))})", name=name)
        return None


def stand_ins():
    """{torch module name: torchic module} for the torchic modules that exist."""
    out = {}
    for torch_name, torchic_name in MODULES.items():
        try:
            out[torch_name] = importlib.import_module(torchic_name)
        except ModuleNotFoundError as exc:
            if exc.name is None or not torchic_name.startswith(exc.name):
                raise   # a module that exists but fails to import: a real error
    return out


@contextlib.contextmanager
def torchic_as_torch():
    saved = {k: v for k, v in sys.modules.items() if k == "torch" or k.startswith("torch.")}
    finder = _RefuseOtherTorchModules()
    for k in saved:
        del sys.modules[k]
    sys.modules.update(stand_ins())
    sys.meta_path.insert(0, finder)
    try:
        yield sys.modules["torch"]
    finally:
        sys.meta_path.remove(finder)
        for k in [k for k in sys.modules if k == "torch" or k.startswith("torch.")]:
            del sys.modules[k]
        sys.modules.update(saved)
