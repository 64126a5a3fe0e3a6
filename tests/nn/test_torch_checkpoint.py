"""torchic.save / torchic.load in PyTorch's zip format: round trips on every backend, files
read by real torch.load and written by real torch.save, and crafted (untrusted) files."""

import collections
import io
import pickle
import tracemalloc
import zipfile

import numpy as np
import pytest

import torchic
from torchic import checkpoint

torch = pytest.importorskip("torch")

CODES = {"float32": torchic.float32, "float64": torchic.float64, "float16": torchic.float16,
         "bfloat16": torchic.bfloat16, "int64": torchic.int64, "int32": torchic.int32,
         "int16": torchic.int16, "int8": torchic.int8, "uint8": torchic.uint8,
         "bool": torchic.bool}


def _held(backend):
    return [n for n in CODES if not (backend == "webgpu" and n == "float64")]


def _values(name, shape=(2, 3)):
    rng = np.random.default_rng(0)
    if name == "bool":
        return rng.random(shape) > 0.5
    if name.startswith(("int", "uint")):
        return rng.integers(0, 100, shape)
    return rng.standard_normal(shape)


def _same(ours, theirs):
    """A torchic tensor equals a torch tensor: dtype name, shape, values (bits for floats)."""
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    assert tuple(ours.shape) == tuple(theirs.shape)
    mine = ours.detach().float().numpy() if ours.dtype == torchic.bfloat16 else \
        ours.detach().numpy()
    ref = theirs.detach().float().numpy() if theirs.dtype == torch.bfloat16 else \
        theirs.detach().numpy()
    np.testing.assert_array_equal(mine, ref)


def test_every_dtype_round_trips_and_torch_reads_it(backend, tmp_path):
    obj = {name: torchic.tensor(_values(name), dtype=CODES[name]) for name in _held(backend)}
    path = tmp_path / "all.pt"
    torchic.save(obj, path)
    back = torchic.load(path)
    theirs = torch.load(path, weights_only=True)
    assert list(back) == list(obj) == list(theirs)
    for name, t in obj.items():
        assert back[name].dtype == t.dtype
        if name != "bfloat16":
            np.testing.assert_array_equal(back[name].numpy(), t.numpy())
        _same(back[name], theirs[name])


def test_nanogpt_checkpoint_both_ways(backend, tmp_path):
    model = torchic.nn.Sequential(torchic.nn.Linear(4, 8), torchic.nn.LayerNorm(8))
    ckpt = {"model": model.state_dict(), "model_args": {"n_layer": 2, "bias": False},
            "iter_num": 1200, "best_val_loss": 1.4667, "config": {"dataset": "shakespeare"},
            "opt": [1, (2.5, None), "s", b"\x00\x01", {3, 4}], "dtype": torchic.float16,
            "device": torchic.device("cpu")}
    path = tmp_path / "ckpt.pt"
    torchic.save(ckpt, path)
    theirs = torch.load(path, weights_only=True)
    assert isinstance(theirs["model"], collections.OrderedDict)
    assert theirs["iter_num"] == 1200 and theirs["best_val_loss"] == 1.4667
    assert theirs["opt"] == [1, (2.5, None), "s", b"\x00\x01", {3, 4}]
    assert theirs["dtype"] is torch.float16 and theirs["device"] == torch.device("cpu")
    for k, v in model.state_dict().items():
        _same(v, theirs["model"][k])
    # and torch's own checkpoint of the same layers loads into torchic's model
    ref = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.LayerNorm(8))
    torch.save({"model": ref.state_dict(), "iter_num": 7}, tmp_path / "theirs.pt")
    ours = torchic.load(tmp_path / "theirs.pt")
    model.load_state_dict(ours["model"])
    x = np.random.default_rng(1).standard_normal((3, 4)).astype(np.float32)
    np.testing.assert_allclose(model(torchic.tensor(x)).detach().numpy(),
                               ref(torch.tensor(x)).detach().numpy(), rtol=1e-5, atol=1e-6)
    assert ours["iter_num"] == 7


def test_torch_views_parameters_and_shared_storages_load(backend, tmp_path):
    base = torch.arange(24, dtype=torch.float32).reshape(4, 6)
    obj = {"view": base[1:, ::2].t(), "base": base, "p": torch.nn.Parameter(torch.ones(3)),
           "bf": torch.randn(5).bfloat16(), "b": torch.tensor([True, False]),
           "i": torch.arange(10)[2:9:3], "empty": torch.zeros(0, 3), "scalar": torch.tensor(2.5)}
    torch.save(obj, tmp_path / "v.pt")
    ours = torchic.load(tmp_path / "v.pt")
    for k in obj:
        _same(ours[k], obj[k])
    assert isinstance(ours["p"], torchic.nn.Parameter) and ours["p"].requires_grad


def test_tied_tensors_stay_one_object(backend, tmp_path):
    w = torchic.randn(3, 2)
    torchic.save({"a": w, "b": w}, tmp_path / "tied.pt")
    back = torchic.load(tmp_path / "tied.pt")
    assert back["a"] is back["b"]
    theirs = torch.load(tmp_path / "tied.pt")
    assert theirs["a"].data_ptr() == theirs["b"].data_ptr()


def test_optimizer_state_of_torch_loads(backend, tmp_path):
    m = torch.nn.Linear(3, 2)
    opt = torch.optim.AdamW(m.parameters(), lr=1e-3)
    m(torch.randn(4, 3)).sum().backward()
    opt.step()
    torch.save(opt.state_dict(), tmp_path / "opt.pt")
    ours = torchic.load(tmp_path / "opt.pt")
    ref = opt.state_dict()
    assert ours["param_groups"][0]["lr"] == 1e-3
    assert set(ours["state"]) == {0, 1}
    for i in (0, 1):
        for key in ("exp_avg", "exp_avg_sq", "step"):
            _same(ours["state"][i][key], ref["state"][i][key])


def test_modules_need_weights_only_false(backend, tmp_path):
    ref = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.ReLU(), torch.nn.Linear(3, 1))
    torch.save(ref, tmp_path / "m.pt")
    with pytest.raises(pickle.UnpicklingError, match="Sequential.*weights_only=False"):
        torchic.load(tmp_path / "m.pt")
    model = torchic.load(tmp_path / "m.pt", weights_only=False)
    assert isinstance(model, torchic.nn.Sequential)
    x = np.ones((2, 2), np.float32)
    np.testing.assert_allclose(model(torchic.tensor(x)).detach().numpy(),
                               ref(torch.tensor(x)).detach().numpy(), rtol=1e-6)
    # a torchic module round trips the same way
    torchic.save(model, tmp_path / "ours.pt")
    again = torchic.load(tmp_path / "ours.pt", weights_only=False)
    np.testing.assert_array_equal(again(torchic.tensor(x)).detach().numpy(),
                                  model(torchic.tensor(x)).detach().numpy())
    assert [n for n, _ in again.named_parameters()] == ["0.weight", "0.bias", "2.weight",
                                                        "2.bias"]


def test_numpy_arrays_follow_torchs_weights_only_rule(backend, tmp_path):
    a = np.arange(6.0).reshape(2, 3)
    torchic.save({"a": a, "t": torchic.ones(2)}, tmp_path / "np.pt")
    with pytest.raises(pickle.UnpicklingError, match="weights_only"):
        torchic.load(tmp_path / "np.pt")
    back = torchic.load(tmp_path / "np.pt", weights_only=False)
    np.testing.assert_array_equal(back["a"], a)
    np.testing.assert_array_equal(torch.load(tmp_path / "np.pt", weights_only=False)["a"], a)


def test_file_objects_and_the_safetensors_suffix(backend, tmp_path):
    buf = io.BytesIO()
    torchic.save([torchic.ones(2), 3], buf)
    buf.seek(0)
    back = torchic.load(buf)
    assert back[1] == 3 and back[0].tolist() == [1.0, 1.0]
    torchic.save({"w": torchic.ones(2)}, tmp_path / "w.safetensors")
    assert (tmp_path / "w.safetensors").read_bytes()[:4] != b"PK\x03\x04"
    assert torchic.load(tmp_path / "w.safetensors")["w"].tolist() == [1.0, 1.0]


def test_add_safe_globals_allows_a_class(backend, tmp_path):
    torchic.save({"c": collections.Counter("aab"), "d": collections.deque([1])},
                 tmp_path / "g.pt")
    with pytest.raises(pickle.UnpicklingError, match="collections.deque"):
        torchic.load(tmp_path / "g.pt")
    with torchic.serialization.safe_globals([collections.deque]):
        assert torchic.load(tmp_path / "g.pt")["d"] == collections.deque([1])
    with pytest.raises(pickle.UnpicklingError):
        torchic.load(tmp_path / "g.pt")


# ---------------------------------------------------------------------------------------
# crafted files: each raises a clear error, memory stays in proportion to the file
# ---------------------------------------------------------------------------------------
def _archive(pkl: bytes, records=None, compress=None):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr(zipfile.ZipInfo("a/data.pkl"), pkl)
        for name, data in (records or {}).items():
            info = zipfile.ZipInfo(f"a/{name}")
            info.compress_type = compress or zipfile.ZIP_STORED
            zf.writestr(info, data)
    return buf.getvalue()


def _tensor_pickle(numel, offset, size, stride, storage="FloatStorage"):
    """A protocol-2 pickle of one tensor over storage record '0', as torch writes it."""
    class Pid:
        pass

    class P(pickle._Pickler):  # type: ignore[name-defined]
        def persistent_id(self, obj):
            if isinstance(obj, Pid):
                return ("storage", G("torch", storage), "0", "cpu", numel)
            return None

    class G:
        def __init__(self, m, n):
            self.m, self.n = m, n

        def __call__(self):
            pass

    def save_g(self, obj):
        self.write(pickle.GLOBAL + f"{obj.m}\n{obj.n}\n".encode())

    P.dispatch = dict(pickle._Pickler.dispatch)  # type: ignore[attr-defined]
    P.dispatch[G] = save_g

    class T:
        def __reduce__(self):
            return G("torch._utils", "_rebuild_tensor_v2"), (Pid(), offset, size, stride,
                                                              False, collections.OrderedDict())
    buf = io.BytesIO()
    P(buf, protocol=2).dump(T())
    return buf.getvalue()


BAD = {
    "not a zip": (b"PK\x03\x04garbage", "bad zip"),
    "two pickles": (None, "one <name>/data.pkl"),
    "storage record missing": (_archive(_tensor_pickle(4, 0, (4,), (1,))), "missing"),
    "record smaller than declared": (
        _archive(_tensor_pickle(1 << 40, 0, (4,), (1,)), {"data/0": b"\0" * 16}),
        "declares"),
    "view past its storage": (
        _archive(_tensor_pickle(4, 2, (4,), (1,)), {"data/0": b"\0" * 16}), "past its storage"),
    "negative stride": (
        _archive(_tensor_pickle(4, 0, (4,), (-1,)), {"data/0": b"\0" * 16}), "malformed"),
    "compressed storage": (
        _archive(_tensor_pickle(4, 0, (4,), (1,)), {"data/0": b"\0" * 16},
                 zipfile.ZIP_DEFLATED), "compressed"),
    "complex storage": (
        _archive(_tensor_pickle(2, 0, (2,), (1,), "ComplexFloatStorage"),
                 {"data/0": b"\0" * 16}), "ComplexFloatStorage"),
    "os.system": (_archive(b"cos\nsystem\n(S'true'\ntR."), "os.system"),
    "truncated pickle": (_archive(b"\x80\x02}q\x00(X"), "malformed pickle"),
    "legacy format": (b"\x80\x02\x8a\nl\xfc\x9cF\xf9 j\xa8P\x19.", "legacy"),
    "no format at all": (b"\x80\x02N.", "not a safetensors file"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_crafted_files_raise_clear_errors(backend, tmp_path, case):
    data, match = BAD[case]
    if data is None:
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w") as zf:
            zf.writestr("a/data.pkl", b"\x80\x02N.")
            zf.writestr("b/data.pkl", b"\x80\x02N.")
        data = buf.getvalue()
    path = tmp_path / "bad.pt"
    path.write_bytes(data)
    with pytest.raises((checkpoint.CheckpointError, pickle.UnpicklingError), match=match):
        torchic.load(path)
    # weights_only=False still checks the structure (the globals aside)
    if case not in ("os.system",):
        with pytest.raises((checkpoint.CheckpointError, pickle.UnpicklingError)):
            torchic.load(path, weights_only=False)


def test_deep_nesting_and_memory_in_proportion(backend, tmp_path):
    deep = b"\x80\x02" + b"]" * 200_000 + b"a" * 199_999 + b"."    # lists 200,000 deep
    path = tmp_path / "deep.pt"
    path.write_bytes(_archive(deep))
    tracemalloc.start()
    back = torchic.load(path)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert isinstance(back, list) and isinstance(back[0], list)
    assert peak < 200 * path.stat().st_size + (1 << 20)
