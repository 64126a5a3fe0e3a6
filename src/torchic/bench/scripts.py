"""Rows that time a whole torch-spelled lecture script's training iteration (issue 45).

`tests/programs/bigram.py` and `tests/programs/gpt.py` (the "let's build GPT" lecture's
bigram.py and its gpt.py at a reduced size) each expose `trainer(seed)`, whose `step()` is
the script's loop body: get_batch (torch.randint, a list comprehension of slices with 0-d
tensor bounds, torch.stack), the forward, `zero_grad(set_to_none=True)`, backward and the
AdamW step. The same file is loaded twice: with PyTorch, and with torchic standing in for
torch (tests/programs/shim.py), and `step().item()` is timed on each: eager, one
iteration issue to result. These rows need a source checkout (the scripts live with the
tests); without one they are skipped.

The first-step check is a bound, not a match (the exact match with PyTorch, losses over 20
steps, is tests/programs/test_programs.py): the bigram table starts N(0, 1), so its first
loss is about ln(vocab) + 1/2; the GPT starts at std 0.02, so about ln(vocab).
"""

import importlib.util
import itertools
import math
import os
import sys

from .impls import NotSupported

PROGRAMS = os.path.join(os.path.dirname(__file__), "..", "..", "..", "tests", "programs")
SCRIPTS = {"bigram_script": ("bigram", 0.5), "gpt_script": ("gpt", 0.0)}
_count = itertools.count()


def _programs_dir():
    path = os.path.normpath(PROGRAMS)
    if not os.path.isfile(os.path.join(path, "shim.py")):
        raise NotSupported("the script rows need a source checkout (tests/programs/)")
    if path not in sys.path:
        sys.path.insert(0, path)
    return path


def _load(name):
    path = os.path.join(_programs_dir(), name + ".py")
    spec = importlib.util.spec_from_file_location(f"_bench_script_{next(_count)}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def build(name, impl):
    """fn(): one training iteration of tests/programs/<name>.py, its loss read."""
    if impl.kind == "torchic":
        _programs_dir()
        from shim import torchic_as_torch      # tests/programs/shim.py
        with torchic_as_torch():
            run = _load(name).trainer()
        step = run.step
        return lambda: step().item()
    if impl.name != "torch":
        raise NotSupported("the script rows time PyTorch CPU (the scripts pick their device)")
    import torch
    available, torch.cuda.is_available = torch.cuda.is_available, lambda: False
    try:
        run = _load(name).trainer()
    finally:
        torch.cuda.is_available = available
    step = run.step

    def step_with_grad():
        with torch.enable_grad():
            return step().item()
    return step_with_grad


def first_loss(offset):
    """The bound a row's first loss is checked against: ln(vocab of the scripts' text) +
    `offset` (module doc)."""
    _programs_dir()
    from _fixtures import TEXT
    return math.log(len(set(TEXT))) + offset


def script_cases(ctx, case_cls):
    """The bigram_script and gpt_script rows of the train suite (`case_cls`: suites.Case,
    passed in because suites imports this module)."""
    return [case_cls("train", row, f"tests/programs/{name}.py", {"script": name + ".py"},
                     "ms/step", 1, lambda impl, name=name: build(name, impl),
                     lambda offset=offset: first_loss(offset), rtol=0.1, atol=0.0)
            for row, (name, offset) in SCRIPTS.items()]
