"""Interop with the Python ML ecosystem: pickle, copy, deepcopy, DLPack, __array__ inputs,
the live-tensor count, the default backend and a quiet stderr (issue 18)."""

import copy
import gc
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest

import torchic
import torchic.nn as nn
from torchic import dispatcher

CPU_BACKENDS = ("workers", "simd")   # their heap is host memory: DLPack export is zero-copy


def _values(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


# -- pickle / copy / deepcopy ---------------------------------------------------------------
def test_pickle_round_trips_values_dtype_shape_and_requires_grad(backend):
    ref = _values((3, 4))
    cases = [torchic.tensor(ref), torchic.tensor(ref, requires_grad=True),
             torchic.tensor(np.arange(6, dtype=np.int32).reshape(2, 3)),
             torchic.tensor(2.5), torchic.zeros(0, 3)]
    for t in cases:
        for protocol in (2, pickle.HIGHEST_PROTOCOL):
            u = pickle.loads(pickle.dumps(t, protocol=protocol))
            assert type(u) is torchic.Tensor and u is not t
            assert u.shape == t.shape and u.dtype == t.dtype
            assert u.requires_grad == t.requires_grad and u.is_leaf
            np.testing.assert_array_equal(u.detach().numpy(), t.detach().numpy())
            assert u._storage is not t._storage


def test_pickle_of_a_view_carries_its_own_values_contiguous(backend):
    ref = _values((4, 6))
    v = torchic.tensor(ref).T[1:4, ::2]          # strided, offset view of a larger storage
    u = pickle.loads(pickle.dumps(v))
    np.testing.assert_array_equal(u.numpy(), ref.T[1:4, ::2])
    assert u.is_contiguous() and u.storage_offset() == 0
    assert len(pickle.dumps(v)) < len(pickle.dumps(torchic.tensor(ref)))   # not the whole base


def test_pickle_and_copy_of_a_non_leaf_follow_pytorch(backend):
    # PyTorch: pickle / copy.copy of a non-leaf give a leaf that requires grad (no graph);
    # deepcopy refuses it
    a = torchic.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = a * 2
    for u in (pickle.loads(pickle.dumps(b)), copy.copy(b)):
        assert u.is_leaf and u.requires_grad and u.grad_fn is None
        np.testing.assert_array_equal(u.detach().numpy(), [2.0, 4.0, 6.0])
    with pytest.raises(RuntimeError, match="graph leaves"):
        copy.deepcopy(b)


def test_non_leaf_behaviour_matches_torch():
    torch = pytest.importorskip("torch")
    b = torch.ones(2, requires_grad=True) * 2
    u = pickle.loads(pickle.dumps(b))
    assert u.is_leaf and u.requires_grad
    assert copy.copy(b).data_ptr() == b.data_ptr()           # copy.copy shares storage
    with pytest.raises(RuntimeError, match="graph leaves"):
        copy.deepcopy(b)


def test_copy_copy_shares_storage_and_deepcopy_copies(backend):
    t = torchic.tensor([1.0, 2.0, 3.0], requires_grad=True)
    t.grad = torchic.ones(3)
    c = copy.copy(t)
    assert c._storage is t._storage and c.requires_grad and c.grad is None   # as PyTorch
    d = copy.deepcopy(t)
    assert d._storage is not t._storage and d.requires_grad
    np.testing.assert_array_equal(d.grad.numpy(), [1.0, 1.0, 1.0])
    with torchic.no_grad():
        t.mul_(10)
    np.testing.assert_array_equal(c.detach().numpy(), [10.0, 20.0, 30.0])
    np.testing.assert_array_equal(d.detach().numpy(), [1.0, 2.0, 3.0])


def test_parameters_stay_parameters(backend):
    p = nn.Parameter(torchic.tensor(_values((2, 3))))
    frozen = nn.Parameter(torchic.tensor(_values((2,))), requires_grad=False)
    for q in (p, frozen):
        for u in (pickle.loads(pickle.dumps(q)), copy.copy(q), copy.deepcopy(q)):
            assert type(u) is nn.Parameter and u.requires_grad == q.requires_grad
            np.testing.assert_array_equal(u.detach().numpy(), q.detach().numpy())
    assert copy.copy(p)._storage is p._storage


def _model():
    torchic.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 2))


def _step(model, opt, x, y):
    loss = torchic.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    return loss.item()


@pytest.mark.parametrize("make_opt", [lambda ps: torchic.optim.AdamW(ps, lr=1e-2),
                                      lambda ps: torchic.optim.SGD(ps, lr=0.1, momentum=0.9)],
                         ids=["adamw", "sgd-momentum"])
def test_module_and_optimizer_pickle_round_trip(backend, make_opt):
    x, y = torchic.tensor(_values((5, 3), 1)), torchic.tensor(_values((5, 2), 2))
    model = _model()
    opt = make_opt(model.parameters())
    for _ in range(2):
        _step(model, opt, x, y)
    model2, opt2 = pickle.loads(pickle.dumps((model, opt)))
    assert opt2.param_groups[0]["params"][0] is model2[0].weight     # identity kept
    np.testing.assert_array_equal(model2(x).detach().numpy(), model(x).detach().numpy())
    np.testing.assert_array_equal(model2[1].running_mean.numpy(),
                                  model[1].running_mean.numpy())
    # the optimizer state came along: the next steps agree exactly
    for _ in range(2):
        assert _step(model2, opt2, x, y) == _step(model, opt, x, y)
    for p, q in zip(model.parameters(), model2.parameters()):
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())


def test_deepcopy_of_a_model_is_independent(backend):
    model = _model()
    snapshot = copy.deepcopy(model)                  # an EMA / best-model snapshot
    x = torchic.tensor(_values((4, 3), 3))
    before = model(x).detach().numpy()
    with torchic.no_grad():
        for p in model.parameters():
            p.add_(1.0)
    np.testing.assert_array_equal(snapshot(x).detach().numpy(), before)


def test_matplotlib_plots_tensors(backend, tmp_path):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    t = torchic.arange(5.0)
    fig, ax = plt.subplots()
    (line,) = ax.plot(t)                         # matplotlib copy.copy()s its data
    (line2,) = ax.plot(t, t * 2)
    fig.savefig(tmp_path / "plot.png")
    plt.close(fig)
    np.testing.assert_array_equal(line.get_ydata(), [0, 1, 2, 3, 4])
    np.testing.assert_array_equal(line2.get_ydata(), [0, 2, 4, 6, 8])


# -- DLPack ---------------------------------------------------------------------------------
def test_dlpack_export_to_numpy(backend):
    ref = _values((5, 6))
    t = torchic.tensor(ref)
    assert t.__dlpack_device__() == (1, 0)
    for src, want in ((t, ref), (t.T[1:, ::2], ref.T[1:, ::2]),
                      (torchic.tensor(np.arange(4, dtype=np.int32)), np.arange(4)),
                      (torchic.tensor(3.0), np.float32(3.0))):
        a = np.from_dlpack(src)
        assert a.dtype == src.numpy().dtype and a.shape == tuple(src.shape)
        np.testing.assert_array_equal(a, want)


def test_dlpack_export_is_zero_copy_on_the_cpu_backends(backend):
    t = torchic.tensor(_values((4, 6)))
    v = t.T[::2]                                  # strides travel with the capsule
    a = np.from_dlpack(v)
    if backend not in CPU_BACKENDS:
        a[0, 0] = 123.0                           # webgpu: a host copy
        assert t.numpy()[0, 0] != 123.0
        return
    assert a.strides == tuple(4 * s for s in v.stride())
    a[1, 2] = 123.0                               # the tensor's own memory
    assert t.numpy()[2, 2] == 123.0            # v[i, j] is t[j, 2 i]
    assert np.shares_memory(a, np.from_dlpack(t))


def test_dlpack_export_waits_for_queued_ops(backend):
    ref = _values((64, 64)).astype(np.float64)
    x = torchic.tensor(ref.astype(np.float32))
    y = x
    for _ in range(20):                           # queued, not waited for
        y = (y @ x) * 0.05 + 1.0
    want = ref
    for _ in range(20):
        want = (want @ ref) * 0.05 + 1.0
    np.testing.assert_allclose(np.from_dlpack(y), want, rtol=1e-3, atol=1e-3)


def test_dlpack_export_keeps_the_storage_alive(backend):
    t = torchic.tensor(np.full((256,), 7.0, np.float32))
    gc.collect()
    blocks = torchic.memory()["live_blocks"]
    a = np.from_dlpack(t[::2])
    del t
    gc.collect()
    held = backend in CPU_BACKENDS          # the consumer holds the block (webgpu: a copy)
    assert torchic.memory()["live_blocks"] == blocks - (not held)
    others = [torchic.full((256,), float(i)) for i in range(20)]   # would reuse a free block
    torchic.sync()
    np.testing.assert_array_equal(a, np.full(128, 7.0, np.float32))
    del a, others
    gc.collect()
    assert torchic.memory()["live_blocks"] == blocks - 1


def test_dlpack_refuses_a_tensor_that_requires_grad(backend):
    w = torchic.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="require gradient"):
        np.from_dlpack(w)
    np.testing.assert_array_equal(np.from_dlpack(w.detach()), [1.0, 1.0, 1.0])


def test_dlpack_copy_argument(backend):
    t = torchic.tensor([1.0, 2.0])
    copied = np.from_dlpack(t, copy=True)
    copied[0] = 50.0
    assert t.numpy()[0] == 1.0
    if backend in CPU_BACKENDS:
        np.testing.assert_array_equal(np.from_dlpack(t, copy=False), [1.0, 2.0])
        assert np.shares_memory(np.asarray(t, copy=False), np.from_dlpack(t))
    else:
        with pytest.raises(BufferError, match="not host memory"):
            t.__dlpack__(copy=False)
        with pytest.raises(ValueError, match="not host memory"):
            np.asarray(t, copy=False)


def test_from_dlpack_imports_numpy_and_torchic(backend):
    held = torchic.dispatcher.runtime().backend.dtypes
    for arr, dtype in ((np.arange(6.0).reshape(2, 3), torchic.float64),
                       (np.arange(6, dtype=np.int64)[::2], torchic.int64),
                       (np.array([True, False]), torchic.bool)):
        if dtype.code not in held:          # (webgpu's float64: refused, naming the backend)
            with pytest.raises(TypeError, match=backend):
                torchic.from_dlpack(arr)
            continue
        t = torchic.from_dlpack(arr)
        assert t.dtype == dtype and t.shape == arr.shape
        np.testing.assert_array_equal(t.numpy(), arr)
    t = torchic.tensor([1.0, 2.0])
    u = torchic.from_dlpack(t)
    assert u._storage is t._storage and not u.requires_grad
    with pytest.raises(RuntimeError, match="require gradient"):
        torchic.from_dlpack(torchic.ones(2, requires_grad=True))
    with pytest.raises(TypeError, match="__dlpack__"):
        torchic.from_dlpack([1, 2])


def test_dlpack_both_ways_with_torch(backend):
    torch = pytest.importorskip("torch")
    ref = _values((3, 5))
    t = torchic.tensor(ref)
    tt = torch.from_dlpack(t.T)
    assert tt.dtype == torch.float32 and tuple(tt.shape) == (5, 3)
    np.testing.assert_array_equal(tt.numpy(), ref.T)
    if backend in CPU_BACKENDS:                   # torch sees the same memory
        tt[0, 0] = -1.0
        assert t.numpy()[0, 0] == -1.0
    back = torchic.from_dlpack(torch.arange(12, dtype=torch.int64).reshape(3, 4)[:, 1:])
    assert back.dtype == torchic.int64
    np.testing.assert_array_equal(back.numpy(), np.arange(12).reshape(3, 4)[:, 1:])


# -- __array__ inputs -----------------------------------------------------------------------
class _ArrayLike:
    def __init__(self, a):
        self.a = a
        self.shape = a.shape

    def __array__(self, dtype=None, copy=None):
        return self.a if dtype is None else self.a.astype(dtype)


def test_tensor_and_load_state_dict_take_array_likes(backend):
    ref = _values((2, 3))
    np.testing.assert_array_equal(torchic.tensor(_ArrayLike(ref)).numpy(), ref)
    lin = nn.Linear(3, 2)
    lin.load_state_dict({"weight": _ArrayLike(ref), "bias": _ArrayLike(np.ones(2))})
    np.testing.assert_array_equal(lin.weight.detach().numpy(), ref)
    np.testing.assert_array_equal(lin.bias.detach().numpy(), [1.0, 1.0])
    with pytest.raises(TypeError, match="non-tensor values for 'bias'"):
        lin.load_state_dict({"weight": ref, "bias": "ones"})


def test_torch_tensors_load_directly(backend):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    tmodel = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3))
    model.load_state_dict(tmodel.state_dict())        # torch tensors, no conversion
    x = _values((5, 4), 4)
    np.testing.assert_allclose(model(torchic.tensor(x)).detach().numpy(),
                               tmodel(torch.from_numpy(x)).detach().numpy(), rtol=1e-5, atol=1e-6)
    # tensors that require grad (named_parameters) are read through .detach()
    model.load_state_dict(dict(tmodel.named_parameters()))
    w = torch.ones(2, 3, requires_grad=True)
    np.testing.assert_array_equal(torchic.tensor(w).numpy(), np.ones((2, 3)))
    assert torchic.tensor(torch.arange(3)).dtype == torchic.int64


# -- memory(): the live-tensor count ---------------------------------------------------------
def test_memory_counts_live_tensors_without_the_garbage_collector(backend, monkeypatch):
    def refuse():
        raise AssertionError("memory() scanned the garbage collector")
    monkeypatch.setattr(gc, "get_objects", refuse)
    before = torchic.memory()["live_tensors"]
    ts = [torchic.zeros(10) for _ in range(5)]
    assert torchic.memory()["live_tensors"] == before + 5
    views = [t[1:] for t in ts]                   # views share their base's storage
    assert torchic.memory()["live_tensors"] == before + 5
    del ts
    assert torchic.memory()["live_tensors"] == before + 5   # the views keep them
    del views
    assert torchic.memory()["live_tensors"] == before
    t = torchic.ones(3)
    t.dispose()
    assert torchic.memory()["live_tensors"] == before


# -- the default backend, stderr -------------------------------------------------------------
def test_default_backend_is_the_fastest_available(monkeypatch):
    monkeypatch.delenv("TORCHIC_BACKEND", raising=False)
    simd_ok = dispatcher.backend_class("simd").available()[0]
    try:
        rt = torchic.init()
        assert rt.backend.name == ("simd" if simd_ok else "workers")
        monkeypatch.setenv("TORCHIC_BACKEND", "workers")
        assert torchic.init().backend.name == "workers"
    finally:
        torchic.shutdown()      # the backend fixture starts the backend it needs again


def _run(code_or_args, env_extra=None):
    env = dict(os.environ)
    env.pop("XDG_RUNTIME_DIR", None)      # headless: what makes Mesa's Wayland probe print
    env.update(env_extra or {})
    args = code_or_args if isinstance(code_or_args, list) else ["-c", code_or_args]
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env,
                          timeout=300)


def test_info_prints_no_stderr_noise():
    r = _run(["-m", "torchic", "info"])
    assert r.returncode == 0, r.stderr
    assert "XDG_RUNTIME_DIR" not in r.stderr and "[workers]" in r.stdout
    assert r.stderr.strip() == "", r.stderr


def test_webgpu_init_prints_no_stderr_noise():
    pytest.importorskip("wgpu")
    if not dispatcher.backend_class("webgpu").available()[0]:
        pytest.skip("webgpu unavailable")
    r = _run("import torchic; torchic.init('webgpu'); print(torchic.ones(3).sum().item())")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "3.0"
    assert "XDG_RUNTIME_DIR" not in r.stderr, r.stderr
