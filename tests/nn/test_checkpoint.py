"""torchic.save / torchic.load of .safetensors files: round trips on every backend, interop, errors."""

import io
import json
import struct
import tracemalloc

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
    assert arrays["i"].dtype == np.int64          # torchic.tensor([1, 2, 3]) is int64
    np.testing.assert_array_equal(arrays["i"], [1, 2, 3])
    # and the header is what the format says: u64 length + JSON
    raw = path.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    assert header["i"]["dtype"] == "I64" and header["a.b"]["shape"] == [2, 2]


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
    np.testing.assert_array_equal(dst(x).detach().numpy(), src(x).detach().numpy())
    assert dst[5].num_batches_tracked.item() == 1


def test_reads_files_from_other_tools_and_keeps_dtypes(backend, tmp_path):
    path = tmp_path / "other.safetensors"
    arrays = {"f16": np.ones(2, np.float16), "i64": np.array([5, -6, 2**40], dtype=np.int64),
              "u8": np.array([255], np.uint8), "flag": np.array([True, False]),
              "u16": np.array([65535], np.uint16)}
    if backend == "webgpu":
        arrays["i64"] = arrays["i64"][:2]          # webgpu's int64 rule: within int32
    else:
        arrays["f64"] = np.arange(3, dtype=np.float64)
    save_file(arrays, str(path))
    back = torchic.load(path)
    want = {"f16": torchic.float16, "flag": torchic.bool, "i64": torchic.int64,
            "u8": torchic.uint8, "u16": torchic.int32, "f64": torchic.float64}
    assert {k: t.dtype for k, t in back.items()} == {k: want[k] for k in arrays}
    for k, a in arrays.items():
        np.testing.assert_array_equal(back[k].numpy(), a, err_msg=k)
    save_file({"big": np.array([2**63], dtype=np.uint64)}, str(path))
    with pytest.raises(checkpoint.CheckpointError, match="do not fit in int64"):
        torchic.load(path)


# every dtype, written by torchic and read by PyTorch's safetensors, and back
_ROUND_TRIP = {"f64": "float64", "f32": "float32", "f16": "float16", "bf16": "bfloat16",
               "i64": "int64", "i32": "int32", "i16": "int16", "i8": "int8", "u8": "uint8",
               "b8": "bool"}


def test_every_dtype_round_trips_with_pytorchs_safetensors(backend, tmp_path):
    torch = pytest.importorskip("torch")
    from safetensors.torch import load_file as torch_load, save_file as torch_save
    values = [[1.5, -2.0, 0.0], [3.0, 65504.0 / 512, -0.25]]
    theirs = {code: torch.tensor(values).to(getattr(torch, name))
              for code, name in _ROUND_TRIP.items()}
    if backend == "webgpu":            # no float64 there (WGSL has none): refused, named
        with pytest.raises(TypeError, match="webgpu"):
            torchic.tensor(values, dtype=torchic.float64)
        del theirs["f64"]
    path = tmp_path / "theirs.safetensors"
    torch_save(theirs, str(path))
    ours = torchic.load(path)
    for code, t in theirs.items():
        assert ours[code].dtype == getattr(torchic, _ROUND_TRIP[code]), code
        np.testing.assert_array_equal(ours[code].float().numpy(), t.float().numpy(),
                                      err_msg=code)
    torchic.save(ours, tmp_path / "ours.safetensors")
    again = torch_load(str(tmp_path / "ours.safetensors"))
    assert set(again) == set(theirs)      # (safetensors.torch orders keys by dtype)
    for code, t in theirs.items():
        assert again[code].dtype == t.dtype and torch.equal(again[code], t), code


def test_reads_pytorch_state_dicts(backend, tmp_path):
    torch = pytest.importorskip("torch")
    from safetensors.torch import save_file as torch_save
    tm = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.BatchNorm1d(2))
    tm(torch.randn(4, 3))
    path = tmp_path / "torch.safetensors"
    torch_save(tm.state_dict(), str(path))
    m = nn.Sequential(nn.Linear(3, 2), nn.BatchNorm1d(2))
    m.load_state_dict(torchic.load(path))
    np.testing.assert_array_equal(m[0].weight.detach().numpy(), tm[0].weight.detach().numpy())
    assert m[1].num_batches_tracked.item() == 1     # int64 in the file and here


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


def test_safetensors_refuses_modules_and_bare_tensors(backend, tmp_path):
    with pytest.raises(TypeError, match="model.state_dict\\(\\)"):
        torchic.save(nn.Linear(1, 1), tmp_path / "m.safetensors")
    with pytest.raises(TypeError, match="not a bare tensor"):
        torchic.save(torchic.ones(1), tmp_path / "t.safetensors")
    with pytest.raises(ValueError, match="same name"):
        torchic.save({"a.b": torchic.ones(1), "a": {"b": torchic.ones(1)}},
                     tmp_path / "c.safetensors")


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


# ---------------------------------------------------------------------------------
# checkpoints are untrusted input: every crafted file raises CheckpointError
# ---------------------------------------------------------------------------------
def _raw_file(header, data=b"", length=None):
    """An 8-byte length, a header (a dict dumped as JSON, or raw bytes) and data."""
    h = header if isinstance(header, bytes) else json.dumps(header).encode()
    return struct.pack("<Q", len(h) if length is None else length) + h + data


def _f32(n, begin=0):
    return {"dtype": "F32", "shape": [n], "data_offsets": [begin, begin + 4 * n]}


_DEEP = b'{"a":' + b"[" * 100_000 + b"]" * 100_000 + b"}"
_CRAFTED = {
    "huge length": (_raw_file(b"{}", length=2**64 - 1), "header length 18446744073709551615 "
                                                       "exceeds the file size"),
    "length past end": (_raw_file(b"{}", length=11), "exceeds the file size"),
    "deep JSON": (_raw_file(_DEEP), "nested too deeply"),
    "deep metadata": (_raw_file(b'{"__metadata__":' + _DEEP[5:]), "nested too deeply"),
    "not utf-8": (_raw_file(b'{"\xff": 1}'), "bad JSON header"),
    "utf-16": (_raw_file('{"a": 1}'.encode("utf-16")), "bad JSON header"),
    "4301-digit int": (_raw_file(b'{"x": {"dtype": "F32", "shape": [' + b"9" * 4301 +
                                 b'], "data_offsets": [0, 4]}}'), "bad JSON header"),
    "not an object": (_raw_file([]), "not a JSON object"),
    "duplicate tensor": (_raw_file(b'{"x": ' + json.dumps(_f32(1)).encode() + b', "x": ' +
                                   json.dumps(_f32(1, 4)).encode() + b"}", bytes(8)),
                         "key 'x' twice"),
    "duplicate metadata": (_raw_file(b'{"__metadata__": {"a": "1", "a": "2"}}'), "'a' twice"),
    "metadata list": (_raw_file({"__metadata__": ["a"]}), "__metadata__ must map"),
    "metadata int value": (_raw_file({"__metadata__": {"a": 1}}), "__metadata__ must map"),
    "entry not object": (_raw_file({"x": [1, 2]}), "'x': its header entry is not"),
    "no dtype": (_raw_file({"x": {"shape": [1], "data_offsets": [0, 4]}}, bytes(4)),
                 "no 'dtype'"),
    "dtype not str": (_raw_file({"x": {**_f32(1), "dtype": 7}}, bytes(4)), "not a string"),
    "dtype list": (_raw_file({"x": {**_f32(1), "dtype": ["F32"]}}, bytes(4)), "not a string"),
    "dtype unknown": (_raw_file({"x": {**_f32(1), "dtype": "F8_E4M3"}}, bytes(1)),
                      "'F8_E4M3' cannot be read"),
    "shape not list": (_raw_file({"x": {**_f32(1), "shape": "1"}}, bytes(4)),
                       "not a list of non-negative"),
    "negative dim": (_raw_file({"x": {**_f32(1), "shape": [-1]}}, bytes(4)), "non-negative"),
    "bool dim": (_raw_file({"x": {**_f32(1), "shape": [True]}}, bytes(4)), "non-negative"),
    "float dim": (_raw_file({"x": {**_f32(1), "shape": [1.0]}}, bytes(4)), "non-negative"),
    "NaN dim": (_raw_file(b'{"x": {"dtype": "F32", "shape": [NaN], "data_offsets": [0, 4]}}',
                          bytes(4)), "non-negative"),
    "too many dims": (_raw_file({"x": {**_f32(1), "shape": [1] * 65}}, bytes(4)),
                      "65 dimensions"),
    "one offset": (_raw_file({"x": {**_f32(1), "data_offsets": [4]}}, bytes(4)),
                   "not a list of two integers"),
    "str offset": (_raw_file({"x": {**_f32(1), "data_offsets": [0, "4"]}}, bytes(4)),
                   "not a list of two integers"),
    "negative offset": (_raw_file({"x": {**_f32(1), "data_offsets": [-4, 0]}}, bytes(4)),
                        "outside the data section"),
    "reversed offsets": (_raw_file({"x": {**_f32(0), "data_offsets": [4, 0]}}, bytes(4)),
                         "outside the data section"),
    "offset past end": (_raw_file({"x": {**_f32(1), "data_offsets": [0, 2**70]}}, bytes(4)),
                        "outside the data section"),
    "size mismatch": (_raw_file({"x": {**_f32(1), "shape": [2]}}, bytes(4)),
                      "shape \\[2\\] of F32 does not fill its 4 bytes"),
    "huge shape": (_raw_file({"x": {"dtype": "F32", "shape": [2**40] * 3,
                                    "data_offsets": [0, 8]}}, bytes(8)), "is too large"),
    "huge empty shape": (_raw_file({"x": {"dtype": "F32", "shape": [2**60, 0],
                                          "data_offsets": [0, 0]}}), "is too large"),
    "huge dim": (_raw_file({"x": {"dtype": "F32", "shape": [0, 2**70],
                                  "data_offsets": [0, 0]}}), "is too large"),
    "empty after data": (_raw_file({"x": {"dtype": "F32", "shape": [5, 0],
                                          "data_offsets": [0, 0]}}, bytes(8)), "after the last"),
    "overlap": (_raw_file({"x": _f32(2), "y": _f32(2, 4)}, bytes(16)), "overlapping tensors"),
    "gap": (_raw_file({"x": _f32(1), "y": _f32(1, 8)}, bytes(12)), "a gap"),
    "trailing bytes": (_raw_file({"x": _f32(1)}, bytes(8)), "4 bytes after the last tensor"),
    "keys not JSON": (_raw_file({"__metadata__": {"torchic.keys": "[["}, "x": _f32(1)},
                                bytes(4)), "bad JSON torchic.keys metadata"),
    "keys not paths": (_raw_file({"__metadata__": {"torchic.keys": "[[1]]"}, "1": _f32(1)},
                                 bytes(4)), "not a list of key paths"),
    "keys empty path": (_raw_file({"__metadata__": {"torchic.keys": "[[]]"}, "x": _f32(1)},
                                  bytes(4)), "not a list of key paths"),
    "keys tensor above": (_raw_file({"__metadata__": {"torchic.keys": '[["a"],["a","b"]]'},
                                     "a": _f32(1), "a.b": _f32(1, 4)}, bytes(8)),
                          "'a.b' is below 'a', which is a tensor"),
    "keys tensor below": (_raw_file({"__metadata__": {"torchic.keys": '[["a","b"],["a"]]'},
                                     "a": _f32(1), "a.b": _f32(1, 4)}, bytes(8)),
                          "'a' is a tensor and also holds"),
}


@pytest.mark.parametrize("case", list(_CRAFTED))
def test_crafted_files_raise_checkpoint_error_naming_the_file(backend, tmp_path, case):
    raw, match = _CRAFTED[case]
    path = tmp_path / "crafted.safetensors"
    path.write_bytes(raw)
    tracemalloc.start()
    try:
        for load in (torchic.load, lambda p: torchic.load(io.BytesIO(p.read_bytes()))):
            with pytest.raises(checkpoint.CheckpointError, match=match) as info:
                load(path)
        # nothing the header declares is allocated: the peak follows the file's size
        assert tracemalloc.get_traced_memory()[1] < 64 * len(raw) + 256 * 1024
    finally:
        tracemalloc.stop()
    assert "crafted.safetensors" not in str(info.value)        # the BytesIO has no name...
    with pytest.raises(checkpoint.CheckpointError) as info:
        torchic.load(path)
    assert str(path) in str(info.value)                       # ...the path is named
    if case.startswith("keys"):
        assert checkpoint.metadata(path) == {}                 # the header itself is valid
    else:
        with pytest.raises(checkpoint.CheckpointError, match=match):
            checkpoint.metadata(path)


def test_header_over_the_maximum_is_refused_before_reading(backend, tmp_path, monkeypatch):
    path = tmp_path / "big_header.safetensors"
    path.write_bytes(_raw_file({"x": _f32(1)}, bytes(4)))
    assert torchic.load(path)["x"].tolist() == [0.0]
    monkeypatch.setattr(checkpoint.safetensors, "_MAX_HEADER", 16)
    with pytest.raises(checkpoint.CheckpointError, match="over the 16-byte maximum"):
        torchic.load(path)


def _valid_file():
    buf = io.BytesIO()
    torchic.save({"model": {"w": torchic.tensor([[1.0, -2.0], [3.5, 4.0]]),
                            "b": torchic.tensor([0.25, 0.5])},
                  "step": torchic.tensor(3), "empty": torchic.zeros(0, 2)}, buf,
                 metadata={"note": "fuzz"})
    return buf.getvalue()


_ODD_VALUES = [None, True, -1, 2**70, 1.5, "F32", "", [], [1], [-1, 2], [0, 0, 0], {},
               {"dtype": "F32"}, [[0]], "[[\"model\"]]"]


def _replace_one_value(header, gen):
    """The header with one value (at any depth) replaced by an odd one."""
    slots = []
    stack = [header]
    while stack:
        node = stack.pop()
        for k in (node if isinstance(node, dict) else range(len(node))):
            slots.append((node, k))
            if isinstance(node[k], (dict, list)):
                stack.append(node[k])
    node, k = slots[int(gen.integers(0, len(slots)))]
    node[k] = _ODD_VALUES[int(gen.integers(0, len(_ODD_VALUES)))]
    return header


def _mutations(raw, count, seed=13):
    """`count` corruptions of `raw`: flipped / overwritten / inserted / deleted bytes,
    truncations, rewritten length fields and header values of the wrong type or range
    (a fixed seed: the same corpus every run)."""
    gen = np.random.default_rng(seed)
    n = struct.unpack("<Q", raw[:8])[0]
    for i in range(count):
        b = bytearray(raw)
        kind = i % 7
        if kind == 6:                                   # one header value made odd
            header = _replace_one_value(json.loads(raw[8:8 + n]), gen)
            yield _raw_file(json.dumps(header).encode(), raw[8 + n:])
            continue
        if kind == 0:                                   # a few random bytes anywhere
            for pos in gen.integers(0, len(b), gen.integers(1, 4)):
                b[pos] = int(gen.integers(0, 256))
        elif kind == 1:                                 # one byte of the header changed
            b[8 + int(gen.integers(0, n))] = int(gen.choice(list(b'{}[]",:0123456789-e. ')))
        elif kind == 2:                                 # truncated
            del b[int(gen.integers(0, len(b))):]
        elif kind == 3:                                 # bytes inserted into the header
            pos = 8 + int(gen.integers(0, 40))
            b[pos:pos] = bytes(gen.integers(0, 256, int(gen.integers(1, 5)), dtype=np.uint8))
        elif kind == 4:                                 # a bit of the length field flipped
            b[int(gen.integers(0, 8))] ^= 1 << int(gen.integers(0, 8))
        else:                                           # a digit in the header changed
            digits = [j for j in range(8, len(b)) if chr(b[j]).isdigit()]
            if digits:
                b[digits[int(gen.integers(0, len(digits)))]] = ord(str(gen.integers(0, 10)))
        yield bytes(b)


def test_fuzzed_files_raise_only_checkpoint_error_in_bounded_memory(backend, tmp_path):
    raw = _valid_file()
    back = torchic.load(io.BytesIO(raw))
    assert back["model"]["w"].tolist() == [[1.0, -2.0], [3.5, 4.0]]
    path = tmp_path / "fuzz.safetensors"
    outcomes = {"loaded": 0, "refused": 0}
    tracemalloc.start()
    try:
        for bad in _mutations(raw, 350):
            path.write_bytes(bad)
            tracemalloc.reset_peak()
            for source in (path, io.BytesIO(bad)):
                try:
                    out = torchic.load(source)
                except checkpoint.CheckpointError as exc:
                    assert "fuzz.safetensors" in str(exc) or source is not path
                    outcomes["refused"] += 1
                else:
                    assert isinstance(out, dict)
                    outcomes["loaded"] += 1
            # no declared size is allocated: the peak is a small multiple of the file
            assert tracemalloc.get_traced_memory()[1] < 64 * len(bad) + 256 * 1024
    finally:
        tracemalloc.stop()
    assert outcomes["refused"] > 350          # most corruptions are caught...
    assert outcomes["loaded"] > 0             # ...and some (a changed value) are valid files


def test_no_tensor_is_dropped_silently(backend, tmp_path):
    # another tool's flat file with "a" and "a.b" loads flat: nothing collides
    path = tmp_path / "flat.safetensors"
    save_file({"a": np.ones(1, np.float32), "a.b": np.zeros(2, np.float32)}, str(path))
    assert {k: v.shape for k, v in torchic.load(path).items()} == {"a": (1,), "a.b": (2,)}
    # recorded nesting that no longer matches the tensors (an edited file) loads flat too
    path.write_bytes(_raw_file({"__metadata__": {"torchic.keys": '[["a","b"],["c"]]'},
                                "a.b": _f32(1), "z": _f32(1, 4)}, bytes(8)))
    assert sorted(torchic.load(path)) == ["a.b", "z"]


def test_save_refuses_names_it_cannot_write_back(backend, tmp_path):
    path = tmp_path / "names.safetensors"
    with pytest.raises(ValueError, match="'__metadata__' is reserved"):
        torchic.save({"__metadata__": torchic.ones(1)}, path)
    with pytest.raises(ValueError, match="not valid Unicode"):
        torchic.save({"\ud800": torchic.ones(1)}, path)
    with pytest.raises(ValueError, match="not valid Unicode"):
        torchic.save({"x": torchic.ones(1)}, path, metadata={"k": "\udfff"})
    assert not path.exists()
    # below the top level the name is "__metadata__.x": fine, and it round-trips
    torchic.save({"__metadata__": {"x": torchic.ones(1)}, "é": torchic.zeros(1)}, path)
    back = torchic.load(path)
    assert list(back) == ["__metadata__", "é"] and back["__metadata__"]["x"].tolist() == [1.0]


def test_reads_bfloat16_and_raw_bool_bytes(backend, tmp_path):
    values = np.array([1.0, -2.5, 3.140625, 0.0], np.float32)   # exact in bfloat16
    bf16 = (values.view(np.uint32) >> 16).astype("<u2").tobytes()
    path = tmp_path / "bf16.safetensors"
    path.write_bytes(_raw_file({"h": {"dtype": "BF16", "shape": [2, 2], "data_offsets": [0, 8]},
                                "m": {"dtype": "BOOL", "shape": [3], "data_offsets": [8, 11]}},
                               bf16 + bytes([0, 1, 7])))
    back = torchic.load(path)
    assert back["h"].dtype == torchic.bfloat16
    np.testing.assert_array_equal(back["h"].float().numpy(), values.reshape(2, 2))
    assert back["m"].dtype == torchic.bool and back["m"].tolist() == [False, True, True]


# ---------------------------------------------------------------------------------
# Module.load_state_dict is all-or-nothing
# ---------------------------------------------------------------------------------
def _snapshot(model):
    return {k: (t, t._storage, t.detach().numpy().copy()) for k, t in
            model.state_dict(keep_vars=True).items()}


def _assert_unchanged(model, snap):
    now = model.state_dict(keep_vars=True)
    assert list(now) == list(snap)
    for k, (t, storage, values) in snap.items():
        assert now[k] is t and now[k]._storage is storage, k       # same objects...
        np.testing.assert_array_equal(now[k].detach().numpy(), values, err_msg=k)   # ...same values


def _disposed(shape):
    t = torchic.zeros(*shape)
    t.dispose()
    return t


@pytest.mark.parametrize("last, match", [
    (lambda: np.array(2.0**70), "num_batches_tracked.*does not fit in int64"),
    (lambda: np.array("3"), "num_batches_tracked.*cannot make a tensor"),
    (lambda: _disposed(()), "num_batches_tracked.*disposed"),
    (lambda: torchic.zeros(2), "size mismatch for 2.num_batches_tracked"),
], ids=["int-overflow", "not-numeric", "disposed", "shape"])
def test_failing_load_state_dict_leaves_the_module_unchanged(backend, last, match):
    torchic.manual_seed(3)
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.BatchNorm1d(4))
    model(torchic.randn(5, 3))                       # running stats and counter move
    snap = _snapshot(model)
    sd = {k: torchic.randn(*t.shape) if t.dtype == torchic.float32 else torchic.tensor(9)
          for k, t in model.state_dict().items()}
    sd["2.num_batches_tracked"] = last()             # the last key the load would copy
    with pytest.raises(RuntimeError, match=match):
        model.load_state_dict(sd)
    _assert_unchanged(model, snap)
    sd["2.num_batches_tracked"] = np.array(9)        # fixed: everything is loaded
    model.load_state_dict(sd)
    for k, t in model.state_dict().items():
        np.testing.assert_array_equal(t.numpy(), np.asarray(sd[k]), err_msg=k)
    assert model[2].num_batches_tracked.dtype == torchic.int64


def test_load_state_dict_reads_every_value_before_writing_any(backend):
    # values that are the module's own tensors (here swapped) are read as they were
    model = nn.Sequential(nn.Linear(2, 2, bias=False), nn.Linear(2, 2, bias=False))
    a, b = model[0].weight.detach().numpy().copy(), model[1].weight.detach().numpy().copy()
    model.load_state_dict({"0.weight": model[1].weight, "1.weight": model[0].weight[:, :]})
    np.testing.assert_array_equal(model[0].weight.detach().numpy(), b)
    np.testing.assert_array_equal(model[1].weight.detach().numpy(), a)
