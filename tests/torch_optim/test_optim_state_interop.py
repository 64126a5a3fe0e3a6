"""Optimizer state_dicts cross between torch and torchic both ways, in PyTorch's layout:
a torch optimizer's state (torch.save, read by torchic.load) loaded into the torchic
optimizer of the same class continues torch's trajectory, and torchic's state
(torchic.save, read by torch.load(weights_only=True)) loaded into torch's optimizer does
too; the state_dicts hold the same names, tensor dtypes and shapes (counters such as "step"
as 0-d float32 tensors). The reference is torch resumed from its own file."""

import numpy as np
import pytest

import torchic

torch = pytest.importorskip("torch")

CONFIGS = [
    ("Adam", dict(lr=0.01)), ("Adam", dict(lr=0.01, amsgrad=True, weight_decay=0.1)),
    ("AdamW", dict(lr=0.01)), ("AdamW", dict(lr=0.01, amsgrad=True)),
    ("SGD", dict(lr=0.1, momentum=0.9)), ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True)),
    ("SGD", dict(lr=0.1)),
    ("RMSprop", dict(lr=0.01)), ("RMSprop", dict(lr=0.01, momentum=0.5, centered=True)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.01)), ("Adadelta", dict(lr=1.0)),
    ("Adamax", dict(lr=0.01)), ("NAdam", dict(lr=0.01)),
    ("NAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True)),
    ("RAdam", dict(lr=0.01)), ("Rprop", dict(lr=0.01)), ("ASGD", dict(lr=0.01, t0=3)),
    ("Adafactor", dict(lr=0.01)), ("LBFGS", dict(lr=0.5, max_iter=4)),
    ("LBFGS", dict(max_iter=4, line_search_fn="strong_wolfe")),
]
SHAPES = ((5, 4), (5,), (3, 5), (3,))
BEFORE, AFTER = 4, 4        # steps before the save, steps after the load


def _data(dtype):
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s).astype(dtype) for s in SHAPES]
    return arrays, rng.standard_normal((8, 4)).astype(dtype), \
        rng.standard_normal((8, 3)).astype(dtype)


def _steps(lib, name, opt, params, x, y, n):
    """n optimizer steps on a small tanh MLP; the parameters (numpy) after each."""
    xt, yt = lib.tensor(x), lib.tensor(y)

    def closure():
        opt.zero_grad()
        h = lib.tanh(xt @ params[0].t() + params[1])
        loss = ((h @ params[2].t() + params[3] - yt) ** 2).mean()
        loss.backward()
        return loss

    out = []
    for _ in range(n):
        if name == "LBFGS":
            opt.step(closure)
        else:
            closure()
            opt.step()
        out.append([p.detach().numpy().copy() for p in params])
    return out


def _start(lib, name, kwargs, arrays):
    params = [lib.nn.Parameter(lib.tensor(a.copy())) for a in arrays]
    return params, getattr(lib.optim, name)(params, **kwargs)


def _same_layout(ours, theirs, name):
    """The same state names and, where torch holds a tensor, a tensor of its dtype and shape."""
    assert sorted(ours["state"]) == sorted(theirs["state"])
    for i, entry in theirs["state"].items():
        assert set(ours["state"][i]) == set(entry), f"{name}: state names of parameter {i}"
        for k, v in entry.items():
            if isinstance(v, torch.Tensor):
                mine = ours["state"][i][k]
                assert isinstance(mine, torchic.Tensor), f"{name}: state {k!r} not a tensor"
                assert (str(mine.dtype), list(mine.shape)) == (str(v.dtype), list(v.shape)), \
                    f"{name}: state {k!r}"
    assert [g["params"] for g in ours["param_groups"]] == \
        [g["params"] for g in theirs["param_groups"]]


@pytest.mark.parametrize("name, kwargs", CONFIGS,
                         ids=[f"{n}-{'-'.join(f'{k}={v}' for k, v in kw.items())}"
                              for n, kw in CONFIGS])
def test_optimizer_state_dict_crosses_torch_both_ways(backend, tmp_path, name, kwargs):
    dtypes = [np.float32] + ([np.float64] if backend != "webgpu" else [])
    if name == "LBFGS":     # (a line search amplifies float32 rounding: compared in float64)
        if backend == "webgpu":
            pytest.skip("webgpu holds no float64 (LBFGS is compared in float64)")
        dtypes = [np.float64]
    for dtype in dtypes:
        arrays, x, y = _data(dtype)
        # torch: BEFORE steps, saved; the reference resumes it from its own file
        params, opt = _start(torch, name, kwargs, arrays)
        _steps(torch, name, opt, params, x, y, BEFORE)
        torch.save({"params": [p.detach() for p in params], "opt": opt.state_dict()},
                   tmp_path / "theirs.pt")
        ckpt = torch.load(tmp_path / "theirs.pt", weights_only=True)
        params, opt = _start(torch, name, kwargs, [p.numpy() for p in ckpt["params"]])
        opt.load_state_dict(ckpt["opt"])
        want = _steps(torch, name, opt, params, x, y, AFTER)

        # torch's file -> torchic
        ckpt = torchic.load(tmp_path / "theirs.pt")
        params, opt = _start(torchic, name, kwargs, [p.numpy() for p in ckpt["params"]])
        opt.load_state_dict(ckpt["opt"])
        from_torch = _steps(torchic, name, opt, params, x, y, AFTER)

        # torchic: BEFORE steps, saved by torchic.save -> torch
        params, opt = _start(torchic, name, kwargs, arrays)
        _steps(torchic, name, opt, params, x, y, BEFORE)
        ours_sd = opt.state_dict()
        _same_layout(ours_sd, ckpt["opt"], name)
        torchic.save({"params": [p.detach() for p in params], "opt": ours_sd},
                     tmp_path / "ours.pt")
        back = torch.load(tmp_path / "ours.pt", weights_only=True)
        params, opt = _start(torch, name, kwargs, [p.numpy() for p in back["params"]])
        opt.load_state_dict(back["opt"])
        from_torchic = _steps(torch, name, opt, params, x, y, AFTER)

        rtol, atol = (1e-5, 1e-6) if dtype == np.float32 else (1e-9, 1e-12)
        if name == "LBFGS":
            rtol, atol = 1e-7, 1e-10
        for label, got in (("torch -> torchic", from_torch), ("torchic -> torch", from_torchic)):
            tol = dict(rtol=rtol, atol=atol)
            if name in ("NAdam", "ASGD") and dtype == np.float64 \
                    and label.startswith("torch "):
                # torch's load_state_dict casts mu_product (eta, mu) to a float64 parameter's
                # dtype, so torch resumed continues them in float64; its uninterrupted run
                # and torchic keep them float32 (a 1e-8 relative difference)
                tol["rtol"] = 1e-7
            for step, (g, w) in enumerate(zip(got, want)):
                for i, (a, b) in enumerate(zip(g, w)):
                    np.testing.assert_allclose(a, b, **tol, err_msg=(
                        f"{name} {dtype.__name__} {label}: parameter {i}, step {step + 1} "
                        f"after the load"))
