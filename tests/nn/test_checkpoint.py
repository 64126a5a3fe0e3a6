"""torchic.save / torchic.load: safetensors round trips on every backend, interop, errors."""

import io
import json
import struct

import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

import torchic
import torchic.nn as nn
from torchic import checkpoint


def test_round_trip_dtypes_shapes_and_order(backend, tmp_path, rng):
    a = rng.standard_normal((3, 4)).astype(np.float32)
    sd = {
        "w": torchic.tensor(a),
        "idx": torchic.tensor(np.array([[1, -2], [2**31 - 1, 0]], dtype=np.int32)),
        "scalar": torchic.tensor(2.5),
        "count": torchic.tensor(7),
        "empty": torchic.zeros(0, 3),
        "view": torchic.tensor(a).T[1:],          # non-contiguous view: saved as its values
    }
    path = tmp_path / "sd.safetensors"
    torchic.save(sd, path)
    back = torchic.load(path)
    assert list(back) == list(sd)                 # key order kept
    for k, t in sd.items():
        assert isinstance(back[k], torchic.Tensor)
        assert back[k].shape == t.shape and back[k].dtype == t.dtype, k
        np.testing.assert_array_equal(back[k].numpy(), t.numpy())
    assert back["idx"].dtype == torchic.int32 and back["count"].shape == ()


def test_file_is_plain_safetensors(backend, tmp_path):
    path = tmp_path / "plain.safetensors"
    torchic.save({"a.b": torchic.ones(2, 2), "i": torchic.tensor([1, 2, 3])}, str(path))
    arrays = load_file(str(path))
    assert arrays["a.b"].dtype == np.float32 and arrays["a.b"].shape == (2, 2)
    assert arrays["i"].dtype == np.int32
    np.testing.assert_array_equal(arrays["i"], [1, 2, 3])
    # and the header is what the format says: u64 length + JSON
    raw = path.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    assert header["i"]["dtype"] == "I32" and header["a.b"]["shape"] == [2, 2]


def test_nested_dicts_are_flattened_with_dots_and_restored(backend, tmp_path):
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
    obj = {"model": model.state_dict(), "step": torchic.tensor(1000),
           "extra": {"deep": {"x": torchic.zeros(1)}}}
    path = tmp_path / "nested.safetensors"
    torchic.save(obj, path)
    assert sorted(load_file(str(path))) == sorted(
        ["model." + k for k in model.state_dict()] + ["step", "extra.deep.x"])
    back = torchic.load(path)
    assert list(back) == ["model", "step", "extra"]
    assert list(back["model"]) == list(model.state_dict())
    assert back["step"].item() == 1000
    assert back["extra"]["deep"]["x"].shape == (1,)


def test_model_round_trip(backend, tmp_path):
    torchic.manual_seed(1)
    src = nn.Sequential(nn.Embedding(10, 4), nn.Flatten(), nn.Linear(8, 6), nn.LayerNorm(6),
                        nn.Tanh(), nn.BatchNorm1d(6), nn.Linear(6, 3))
    src(torchic.randint(0, 10, (5, 2)))          # move the BatchNorm running stats
    src.eval()
    path = tmp_path / "model.safetensors"
    torchic.save(src.state_dict(), path)
    dst = nn.Sequential(nn.Embedding(10, 4), nn.Flatten(), nn.Linear(8, 6), nn.LayerNorm(6),
                        nn.Tanh(), nn.BatchNorm1d(6), nn.Linear(6, 3))
    dst.load_state_dict(torchic.load(path))
    dst.eval()
    x = torchic.randint(0, 10, (4, 2))
    np.testing.assert_array_equal(dst(x).numpy(), src(x).numpy())
    assert dst[5].num_batches_tracked.item() == 1


def test_reads_files_from_other_tools_and_converts_dtypes(backend, tmp_path):
    path = tmp_path / "other.safetensors"
    save_file({"f64": np.arange(3, dtype=np.float64), "f16": np.ones(2, np.float16),
               "i64": np.array([5, -6], dtype=np.int64), "u8": np.array([255], np.uint8),
               "flag": np.array([True, False])}, str(path))
    back = torchic.load(path)
    assert {k: t.dtype for k, t in back.items()} == {
        "f16": torchic.float32, "f64": torchic.float32, "flag": torchic.int32,
        "i64": torchic.int32, "u8": torchic.int32}
    assert back["i64"].tolist() == [5, -6] and back["flag"].tolist() == [1, 0]
    save_file({"big": np.array([2**40], dtype=np.int64)}, str(path))
    with pytest.raises(checkpoint.CheckpointError, match="do not fit in int32"):
        torchic.load(path)


def test_reads_pytorch_state_dicts(backend, tmp_path):
    torch = pytest.importorskip("torch")
    from safetensors.torch import save_file as torch_save
    tm = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.BatchNorm1d(2))
    tm(torch.randn(4, 3))
    path = tmp_path / "torch.safetensors"
    torch_save(tm.state_dict(), str(path))
    m = nn.Sequential(nn.Linear(3, 2), nn.BatchNorm1d(2))
    m.load_state_dict(torchic.load(path))
    np.testing.assert_array_equal(m[0].weight.numpy(), tm[0].weight.detach().numpy())
    assert m[1].num_batches_tracked.item() == 1     # int64 in the file, int32 here


def test_file_objects_and_metadata(backend, tmp_path):
    buf = io.BytesIO()
    torchic.save({"x": torchic.ones(2)}, buf)
    buf.seek(0)
    assert torchic.load(buf)["x"].tolist() == [1.0, 1.0]
    path = tmp_path / "meta.safetensors"
    checkpoint.save({"x": torchic.ones(1)}, path, metadata={"author": "me", "steps": "10"})
    assert checkpoint.metadata(path) == {"author": "me", "steps": "10"}
    with pytest.raises(ValueError, match="reserved"):
        checkpoint.save({"x": torchic.ones(1)}, path, metadata={"torchic.keys": "[]"})
    with pytest.raises(TypeError, match="str -> str"):
        checkpoint.save({"x": torchic.ones(1)}, path, metadata={"n": 1})


def test_save_is_atomic_and_overwrites(backend, tmp_path):
    path = tmp_path / "ck.safetensors"
    torchic.save({"x": torchic.ones(1)}, path)
    with pytest.raises(TypeError):
        torchic.save({"x": torchic.ones(1), "bad": 3}, path)   # refused before writing
    assert torchic.load(path)["x"].tolist() == [1.0]
    torchic.save({"y": torchic.zeros(2)}, path)
    assert list(torchic.load(path)) == ["y"]
    assert [p.name for p in tmp_path.iterdir()] == ["ck.safetensors"]   # no temp files left


@pytest.mark.parametrize("obj, match", [
    ({"n": 3}, "'n' is a int, not a tensor.*torchic.tensor"),
    ({"a": {"s": "text"}}, "'a.s' is a str.*metadata"),
    ({"arr": np.zeros(2)}, "'arr' is a ndarray.*torchic.tensor"),
    ({1: None}, "keys must be strings"),
    ({"": None}, "empty key"),
    ([1, 2], "dict of name -> tensor"),
])
def test_save_refuses_non_tensors_with_clear_errors(backend, tmp_path, obj, match):
    if obj == {"": None} or obj == {1: None}:
        obj = {k: torchic.ones(1) for k in obj}
    with pytest.raises((TypeError, ValueError), match=match):
        torchic.save(obj, tmp_path / "x.safetensors")


def test_save_refuses_modules_and_bare_tensors(backend, tmp_path):
    with pytest.raises(TypeError, match="model.state_dict\\(\\)"):
        torchic.save(nn.Linear(1, 1), tmp_path / "m")
    with pytest.raises(TypeError, match="not a bare tensor"):
        torchic.save(torchic.ones(1), tmp_path / "t")
    with pytest.raises(ValueError, match="same name"):
        torchic.save({"a.b": torchic.ones(1), "a": {"b": torchic.ones(1)}}, tmp_path / "c")


def test_load_errors(backend, tmp_path):
    with pytest.raises(FileNotFoundError):
        torchic.load(tmp_path / "missing.safetensors")
    with pytest.raises(IsADirectoryError):
        torchic.load(tmp_path)
    bad = tmp_path / "bad.safetensors"
    bad.write_bytes(b"definitely not a checkpoint")
    with pytest.raises(checkpoint.CheckpointError, match="not a safetensors file"):
        torchic.load(bad)
    bad.write_bytes(b"abc")
    with pytest.raises(checkpoint.CheckpointError, match="only 3 bytes"):
        torchic.load(bad)
    bad.write_bytes(struct.pack("<Q", 5) + b"{nope")
    with pytest.raises(checkpoint.CheckpointError, match="bad JSON header"):
        torchic.load(bad)
    good = tmp_path / "good.safetensors"
    torchic.save({"x": torchic.ones(100)}, good)
    truncated = tmp_path / "trunc.safetensors"
    truncated.write_bytes(good.read_bytes()[:-40])
    with pytest.raises(checkpoint.CheckpointError):
        torchic.load(truncated)
    assert issubclass(checkpoint.CheckpointError, ValueError)
