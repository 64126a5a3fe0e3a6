"""Progress output: the demo's training bar (tqdm.auto, plain lines without tqdm) and the
bench's progress lines with their ETA."""

import io

import numpy as np
import pytest

import torchic
from torchic import demo
from torchic.bench import runner


def _tiny_problem():
    words = ["anna", "bob", "carl", "dora", "emil"]
    stoi, itos = demo.build_vocab(words)
    X, Y = demo.build_dataset(words, stoi, 3)
    torchic.manual_seed(0)
    return demo.CharMLP(len(itos), 3, 4, 8), X, Y


def test_demo_progress_without_tqdm_prints_plain_lines_with_an_eta(backend, monkeypatch,
                                                                     capsys):
    monkeypatch.setattr(demo, "tqdm", None)
    model, X, Y = _tiny_problem()
    losses = demo.train(model, X, Y, steps=40, progress=True, read_every=4)
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert len(lines) == 10                       # one line per tenth of the run
    assert lines[-1].startswith("step 40/40 (100%) loss ") and "ETA 0 s" in lines[-1]
    assert all("ETA" in ln for ln in lines)
    assert np.isfinite(losses).all()


def test_demo_progress_uses_tqdm_auto(backend, monkeypatch):
    tqdm_auto = pytest.importorskip("tqdm.auto")
    assert demo.tqdm is tqdm_auto.tqdm
    made = []

    class Bar(tqdm_auto.tqdm):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, file=io.StringIO(), **kwargs)
            made.append(self)
    monkeypatch.setattr(demo, "tqdm", Bar)
    model, X, Y = _tiny_problem()
    demo.train(model, X, Y, steps=12, progress=True, read_every=4)
    assert len(made) == 1 and made[0].n == 12


def _record(i):
    return {"suite": "overhead", "case": f"case{i}", "label": "x", "threads": 1,
            "impl": "workers", "value": 1.5, "metric": "us/op", "median_s": 1e-6,
            "n_samples": 3, "number": 10}


def test_bench_progress_lines_have_an_eta():
    out = io.StringIO()          # not a terminal: plain lines, no bar
    p = runner.Progress(3, out)
    for i in range(3):
        p.line(_record(i))
    p.close()
    lines = out.getvalue().splitlines()
    assert [ln.split("]")[0] for ln in lines][0].startswith("[1/3 ETA ")
    assert lines[-1].startswith("[3/3 ETA    0s] overhead")
    assert p.bar is None


def test_fmt_duration():
    assert [runner.fmt_duration(s) for s in (0.4, 59, 65, 3599, 3725)] == \
        ["0s", "59s", "1m05s", "59m59s", "1h02m"]
