"""The bench's lecture-script rows (bench/scripts.py, issue 45): tests/programs/bigram.py and
gpt.py loaded with PyTorch and with torchic standing in for torch, their `trainer().step` timed.
On every backend the steps a row times are PyTorch's (same seed: torchic draws the same
weights and batches), and the first loss is inside the row's bound."""

import pytest

from torchic.bench import impls, scripts, suites
from torchic.bench.runner import Runner

pytest.importorskip("torch")


@pytest.mark.parametrize("row", sorted(scripts.SCRIPTS))
def test_script_rows_time_pytorchs_steps(backend, row):
    name, offset = scripts.SCRIPTS[row]
    want = scripts.build(name, impls.TorchImpl())
    got = scripts.build(name, impls.TorchicImpl(backend))
    losses = [(got(), want()) for _ in range(3)]
    for mine, theirs in losses:
        assert mine == pytest.approx(theirs, rel=1e-4)
    bound = scripts.first_loss(offset)
    assert losses[0][0] == pytest.approx(bound, rel=0.1)


def test_train_suite_has_the_script_rows_and_cases_filters_them():
    names = [c.name for c in suites.train_suite({"quick": True, "gpu": False})]
    assert {"bigram_script", "gpt_script"} <= set(names)
    runner = Runner(["train"], quick=True, backends=["workers"], references=[],
                    cases=["bigram_script"], stream=None)
    results = runner.run()
    assert {r["case"] for r in results["records"]} == {"bigram_script"}
    assert all(r.get("error") is None for r in results["records"]), results["records"]
