"""Every op torchic exports is tested against a reference: by an op_db entry the OpInfo walk
reaches, or by a row of the per-op table (torchic.testing.CASES), or it is listed in
UNCOVERED below with the reason.

The exports checked: the functions of `torchic.__all__` defined by the op layers
(`torchic.api`, `torchic.creation`), the functions of `torchic.nn.functional`, and
Tensor's public methods (the operator dunders are the spellings of the named methods).
An export is covered by op_db when an entry outside the skip table resolves to it (its
name, or the name of torch's method / in-place variant); by CASES when a case is named
after it (`sum`, or `sum_dim0` for a non-in-place `sum`); and an alias (the same function
object as a covered export: `clip` is `clamp`) is covered with it.
"""

import inspect

import pytest

pytest.importorskip("torch")
pytest.importorskip("expecttest")

import torchic  # noqa: E402
import torchic.nn.functional as F  # noqa: E402
from torchic import testing  # noqa: E402
import opinfo_harness as h  # noqa: E402

# Exports with no op_db entry the walk reaches and no CASES row: keep it short and honest.
UNCOVERED = {
    # made from data or state, not ops on tensors (every sample of the walk goes through
    # torchic.tensor; tests/unit/test_interop.py checks the NumPy / DLPack exchanges)
    "tensor": "constructor from data", "as_tensor": "constructor from data",
    "from_numpy": "constructor from data", "from_dlpack": "constructor from data",
    "Tensor.from_data": "constructor from data (the original's spelling)",
    # the generator's state (tests/unit/test_torch_rng.py: PyTorch's numbers bit for bit)
    "manual_seed": "generator state", "seed": "generator state",
    "initial_seed": "generator state", "get_rng_state": "generator state",
    "set_rng_state": "generator state",
    # op_db's entries are skipped (skips.py: uninitialized memory)
    "empty": "undefined values", "empty_like": "undefined values",
    # random ops op_db has no entry for (tests/unit/test_torch_rng.py compares them with
    # PyTorch's generator)
    "rand": "no op_db entry", "randperm": "no op_db entry", "Tensor.rand": "no op_db entry",
    "Tensor.random_": "no op_db entry",
    # ops with no op_db entry and no CASES row yet
    "Tensor.copy_": "no op_db entry (tests/nn/test_new_ops_vs_torch.py compares it)",
    "Tensor.type_as": "no op_db entry, no case",
    "Tensor.type": "no op_db entry, no case (the dtype's name, or a cast by it)",
    # metadata, reads and autograd plumbing: not ops
    **{f"Tensor.{n}": "not an op" for n in (
        "backward", "cpu", "cuda", "detach", "dim", "dispose", "element_size",
        "is_signed", "is_contiguous",
        "is_floating_point", "item_async", "nelement", "numel", "numpy", "numpy_async",
        "register_post_accumulate_grad_hook", "requires_grad_", "retain_grad", "set", "size",
        "storage_offset", "stride", "to_array", "tolist", "tolist_async")},
    # issue 41 (tests/nn/test_products_vs_torch.py compares each with torch)
    "chain_matmul": "no op_db entry (deprecated in PyTorch for linalg.multi_dot)",
    "Tensor.new_empty": "undefined values", "Tensor.new_tensor": "no op_db entry",
    "Tensor.bernoulli_": "no op_db entry (bernoulli's is the function's)",
    # autograd plumbing (tests/backend/test_autograd_api.py compares it with torch)
    "Tensor.register_hook": "not an op",
    # out= (issue 41): op_db's resize_ entries are skipped (undefined values past the old
    # elements); tests/backend/test_out_keyword.py compares them with torch
    "Tensor.resize_": "undefined values", "Tensor.resize_as_": "undefined values",
}


def opinfo_names():
    """The torchic names the OpInfo walk reaches (entries outside the skip table)."""
    names = set()
    for op in h.op_db():
        if h.skip_reason(op.name, h._torch_dtypes(op)):
            continue
        for kind, fn, _ in h.variants(op):
            own = getattr(fn, "__name__", "<lambda>")
            if kind == "function" or own == "<lambda>":
                names.add(op.name.split(".")[-1] + ("_" if kind == "inplace" else ""))
            else:
                names.add(own)
    return names


def in_cases(name):
    return any(c == name or (not name.endswith("_") and c.startswith(name + "_"))
               for c in testing.CASES)


def exports():
    """{qualified name: object} of the ops torchic exports."""
    out = {}
    for n in torchic.__all__:
        obj = getattr(torchic, n)
        if inspect.isfunction(obj) and (obj.__module__.startswith("torchic.api")
                                        or obj.__module__ == "torchic.creation"):
            out[n] = obj
    for n, obj in vars(F).items():
        if not n.startswith("_") and inspect.isfunction(obj) and \
                obj.__module__ == F.__name__:
            out[f"nn.functional.{n}"] = obj
    for n in dir(torchic.Tensor):
        obj = getattr(torchic.Tensor, n)
        if not n.startswith("_") and callable(obj):
            out[f"Tensor.{n}"] = obj
    return out


def test_every_exported_op_is_covered():
    reached = opinfo_names()
    ops = exports()
    covered = {q for q, obj in ops.items()
               if q.split(".")[-1] in reached or in_cases(q.split(".")[-1])}
    covered_objs = [ops[q] for q in covered]
    uncovered = sorted(q for q, obj in ops.items() if q not in covered and q not in UNCOVERED
                       and not any(obj is c for c in covered_objs))
    assert not uncovered, (
        f"exported ops with no op_db entry the walk reaches and no CASES row: {uncovered}; "
        "add a CASES row (src/torchic/testing/cases.py), or list it in UNCOVERED with the reason")


def test_uncovered_is_current():
    """UNCOVERED lists only exports that exist and are not covered after all."""
    ops = exports()
    reached = opinfo_names()
    stale = [q for q in UNCOVERED if q not in ops or q.split(".")[-1] in reached
             or in_cases(q.split(".")[-1])]
    assert not stale, f"remove from UNCOVERED (gone, or covered now): {stale}"
