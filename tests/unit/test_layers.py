"""The core is layered: each module imports only the layers below it, at module level.

LAYERS lists the core's modules bottom-up; a module may import (from torchic) only
modules of earlier layers, and no import in the core hides inside a function (the
old way of dodging an import cycle; an ``if TYPE_CHECKING:`` block at module level is
module level). Parsed with ast, nothing is imported.
"""

import ast
import pathlib

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parents[2] / "src" / "torchic"

# bottom-up; modules on one line form one layer (they may not import each other either)
LAYERS = [
    ["tensor_str"],   # issue 44: reprs laid out as PyTorch's (NumPy only)
    ["shape", "ops", "interrupts", "size"],
    ["allocator"],
    ["backend"],
    ["dispatcher"],
    ["known"],    # issue 45: host-known values of integer tensors
    ["dtypes"],
    ["devices", "cuda", "formats"],
    ["tensor"],
    ["promotion"],
    ["scopes"],
    ["raw"],
    ["generator"],
    ["creation"],
    ["random_fills", "grad_mode", "legacy_types"],
    ["autograd.grad_sum", "autograd.variable"],
    ["autograd.hooks"],
    ["autograd.engine"],
    ["autograd.function"],
    ["autograd.api"],
    ["autograd.gradcheck", "autograd.variable"],
    ["autograd"],
    ["functions.common"],
    ["functions.elementwise", "functions.views"],
    ["functions.reduce", "functions.matmul"],
    ["functions.fused", "functions.stepwise"],
    ["functions"],
    ["api.elementwise", "api.conversion", "api.indexing", "api.std_order"],
    ["api.reductions", "api.shaping", "api.rounding"],
    ["api.inplace", "api.aliases"],   # aliases: keyword spellings (multiply, clone, t)
    ["api.extra_ops", "api.ordering"],
    ["api.view_ops"], ["api.index_ops"], ["api.place_ops", "api.joining"],   # issue 41's
    ["api.products", "api.einsum", "api.creation_ops", "api.random_ops"],     # products (issue 41): composites over matmul
    ["api.math_ops", "api.special", "api.bitwise"],
    ["api.scans", "api.statistics", "api.norms"],      # reductions, scans, norms
    ["api.order_stats"],
    ["api.out"],      # out= (issue 41): the out keyword's wrapper and table, resize_
    ["api"],
    ["linalg"],     # torchic.linalg: products and norms
    ["methods"],
    ["recording"],
    ["compile_autograd"],
    ["compile"],
    ["autograd.functional", "autograd.graph"],
]
RANK = {name: i for i, layer in enumerate(LAYERS) for name in layer}


def _source(name):
    path = PACKAGE.joinpath(*name.split("."))
    return (path / "__init__.py") if path.is_dir() else path.with_suffix(".py")


def _imports(name):
    """(torchic module imported, line, at module level?) for each import in `name`."""
    tree = ast.parse(_source(name).read_text())
    package = name.split(".") if _source(name).name == "__init__.py" else name.split(".")[:-1]
    found = []
    top_level = {id(node) for node in tree.body}
    for node in tree.body:   # `if TYPE_CHECKING:` imports are module level (checkers only)
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            top_level |= {id(n) for n in node.body}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            elif node.module and node.module.startswith("torchic"):
                module = node.module[len("torchic."):]
            else:
                module = None
            targets = [module] if node.module or module else []
            if not node.module:       # from . import x, y
                targets = [".".join(base + [a.name]) for a in node.names]
            elif module is not None:
                targets = [f"{module}.{a.name}" if f"{module}.{a.name}" in RANK else module
                           for a in node.names]
            for target in targets:
                if target:
                    found.append((target.strip("."), node.lineno, id(node) in top_level))
        elif isinstance(node, ast.Import):
            for a in node.names:
                found.append((None, node.lineno, id(node) in top_level))
    return found


@pytest.mark.parametrize("name", sorted(RANK))
def test_module_imports_only_lower_layers_at_module_level(name):
    for target, line, top in _imports(name):
        assert top, f"{name}.py:{line}: an import inside a function (import at module level)"
        if target is None or target not in RANK:
            continue          # the standard library, numpy, or a layer outside the core
        assert RANK[target] < RANK[name], (
            f"{name}.py:{line} imports {target}, which is not below it: layers are "
            f"{LAYERS}")


def test_every_core_module_has_a_layer():
    core = {p.stem for p in PACKAGE.glob("*.py")} - {"__init__", "__main__", "testing",
                                                     "checkpoint", "serialization",
                                                     "demo", "jit", "onnx", "accelerator"}
    core |= {f"{d}.{p.stem}" if p.stem != "__init__" else d
             for d in ("functions", "api", "autograd") for p in (PACKAGE / d).glob("*.py")}
    assert core <= set(RANK), f"modules without a layer: {sorted(core - set(RANK))}"


def test_no_core_file_over_500_lines():
    for name in RANK:
        lines = _source(name).read_text().count("\n")
        assert lines <= 550, f"{name}: {lines} lines (split it by concern)"
