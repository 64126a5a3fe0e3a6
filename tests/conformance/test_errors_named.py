"""Errors that name the problem (issue 13, section 4), on every backend where they apply.

* a kernel's error is catchable as the built-in class PyTorch users catch (IndexError
  for an index / target out of range) and as KernelError; HeapFullError is a MemoryError,
  CheckpointError a ValueError;
* sync mode (init(sync=True) / TORCHIC_SYNC=1) raises at the line that issued the op and
  names it (`C[idx]`, cross_entropy, loss.backward());
* .to() takes PyTorch's overloads, refuses unknown devices and dtypes before anything is
  queued, and the one dtype parser agrees everywhere;
* .grad assignment is checked like PyTorch's (same classes, same messages);
* NumPy integer scalars index like ints;
* after shutdown() the error says so; heap_cap, threads and TORCHIC_* values are checked
  and named;
* creation functions refuse a tensor over the heap cap before building it on the host.

The bad-input catalogue (bad_cases.py) has a row for most of these too, run in a child
process per backend; the tests here check results against NumPy / PyTorch references.
"""

import os
import subprocess
import sys
import tracemalloc

import numpy as np
import pytest

import torchic
from torchic import dispatcher
from torchic.allocator import HeapFullError
from torchic.checkpoint import CheckpointError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture
def restore(backend_name):
    """For tests that re-init (sync mode, a small heap cap, shutdown): the default again."""
    yield backend_name
    torchic.init(backend_name)


def _sane():
    x = torchic.tensor([[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_allclose((x @ x).numpy(), np.array([[7.0, 10.0], [15.0, 22.0]]))
    torchic.sync()


class _CountOps:
    """Counts the ops issued on the current runtime (runtime.run is an instance attribute)."""

    def __init__(self, monkeypatch):
        rt = dispatcher.runtime()
        self.n, run = 0, rt.run

        def counting(*args):
            self.n += 1
            return run(*args)
        monkeypatch.setattr(rt, "run", counting)


# -- kernel errors are the built-in classes too ---------------------------------------------
def test_index_tensor_out_of_range_is_an_index_error(backend):
    C = torchic.randn(5, 3)
    rows = C[torchic.tensor([0, 7])]
    with pytest.raises(IndexError, match=r"gather_rows' \(from indexing with an integer tensor"
                                         r".*index 7 is out of range \[0, 5\)") as info:
        rows.numpy()
    assert isinstance(info.value, torchic.KernelError)
    assert isinstance(info.value, RuntimeError)          # KernelError's own base stays
    assert isinstance(info.value.__cause__, IndexError)
    assert "TORCHIC_SYNC=1" in str(info.value)           # says how to find the line
    _sane()


def test_kernel_error_is_still_caught_as_kernel_error(backend):
    rows = torchic.ones(3, 2)[torchic.tensor([-4])]
    with pytest.raises(torchic.KernelError, match=r"index -4 is out of range \[0, 3\)"):
        rows.numpy()
    _sane()


def test_cross_entropy_target_out_of_range_is_an_index_error(backend):
    x = torchic.randn(2, 3, requires_grad=True)
    loss = torchic.cross_entropy(x, torchic.tensor([0, 3]))
    with pytest.raises(IndexError, match=r"'cross_entropy' failed.*target class 3 is out of "
                                         r"range \[0, 3\)"):
        loss.item()
    loss.backward()
    with pytest.raises(IndexError, match=r"'cross_entropy_grad' \(from the backward of "
                                         r"cross_entropy\).*target class 3"):
        x.grad.numpy()
    _sane()


def test_embedding_backward_names_the_backward_of_indexing(backend):
    table = torchic.randn(4, 2, requires_grad=True)
    out = table[torchic.tensor([[1, 4]])]
    out.sum().backward()
    with pytest.raises(IndexError) as info:
        table.grad.numpy()
    msg = str(info.value)
    assert "gather_rows" in msg and "index 4 is out of range [0, 4)" in msg
    _sane()


def test_kernel_error_class_follows_the_kind_of_the_kernel_error():
    assert dispatcher.kernel_error_class(IndexError("x")) is dispatcher.KernelIndexError
    assert dispatcher.kernel_error_class(ValueError("x")) is dispatcher.KernelValueError
    assert dispatcher.kernel_error_class(TypeError("x")) is dispatcher.KernelTypeError
    assert dispatcher.kernel_error_class(MemoryError()) is dispatcher.KernelMemoryError
    assert dispatcher.kernel_error_class(KeyError("x")) is dispatcher.KernelError
    assert dispatcher.kernel_error_class(RuntimeError("x")) is dispatcher.KernelError
    for cls, builtin in ((dispatcher.KernelIndexError, IndexError),
                         (dispatcher.KernelValueError, ValueError),
                         (dispatcher.KernelTypeError, TypeError),
                         (dispatcher.KernelMemoryError, MemoryError)):
        assert issubclass(cls, torchic.KernelError) and issubclass(cls, builtin)


def test_heap_full_is_a_memory_error(backend, restore):
    torchic.init(backend, heap_cap=1 << 20)
    with pytest.raises(MemoryError, match=r"heap cap exceeded: requested 4194304 bytes"):
        torchic.zeros(1 << 20)
    assert issubclass(torchic.HeapFullError, MemoryError)


def test_checkpoint_error_is_a_value_error(backend, tmp_path):
    path = tmp_path / "not_a_checkpoint.safetensors"
    path.write_bytes(b"\x01\x02\x03")
    with pytest.raises(ValueError, match=r"not a safetensors file") as info:
        torchic.load(str(path))
    assert isinstance(info.value, CheckpointError)


# -- sync mode ---------------------------------------------------------------------------
def test_sync_mode_raises_at_the_indexing_line_and_names_it(backend, restore):
    torchic.init(backend, sync=True)
    C = torchic.randn(5, 3)
    idx = torchic.tensor([0, 7])
    with pytest.raises(IndexError) as info:
        # no read: the op itself raises
        C[idx]
    msg = str(info.value)
    assert isinstance(info.value, torchic.KernelError)
    assert "index 7 is out of range [0, 5)" in msg
    assert "torchic.Tensor.__getitem__ (GatherRows.forward)" in msg
    assert f"{__file__}:" in msg and msg.endswith(": C[idx])")
    assert "TORCHIC_SYNC=1" not in msg        # (the hint is for the asynchronous mode)
    # the line is in the traceback too
    assert any(f.name == "test_sync_mode_raises_at_the_indexing_line_and_names_it"
               for f in info.traceback)
    _sane()
    np.testing.assert_array_equal(C[torchic.tensor([4, 0])].numpy(),
                                  C.numpy()[[4, 0]])


def test_sync_mode_names_cross_entropy_and_its_backward(backend, restore):
    torchic.init(backend, sync=True)
    logits = torchic.randn(2, 3, requires_grad=True)
    with pytest.raises(IndexError, match=r"target class 3 is out of range.*sync mode: issued by "
                                         r"torchic\.cross_entropy \(CrossEntropy\.forward\), at "
                                         r".*: loss = torchic\.cross_entropy\(logits, target\)"):
        target = torchic.tensor([0, 3])
        loss = torchic.cross_entropy(logits, target)  # noqa: F841  (the line the error names)
    with torchic.no_grad():
        good = torchic.cross_entropy(logits, torchic.tensor([0, 2]))
    e = np.exp(logits.detach().numpy())
    ref = -np.log(e / e.sum(1, keepdims=True))
    np.testing.assert_allclose(good.item(), ref[[0, 1], [0, 2]].mean(), rtol=1e-5)


def test_sync_mode_names_the_backward_call(backend, restore):
    from torchic import raw
    torchic.init(backend, sync=True)
    logits = torchic.randn(2, 3, requires_grad=True)
    # the forward runs with valid targets; then the saved target is overwritten behind
    # autograd's back (no version bump), so only the backward's kernel sees class 5
    target = torchic.tensor([1, 2])
    loss = torchic.cross_entropy(logits, target)
    raw.write(target, np.array([1, 5], np.int32))
    with pytest.raises(IndexError) as info:
        loss.backward()
    msg = str(info.value)
    assert "target class 5 is out of range [0, 3)" in msg
    assert "torchic.Tensor.backward (CrossEntropy.backward)" in msg
    assert msg.endswith(": loss.backward())")


def test_torchic_sync_env_turns_sync_mode_on(backend, restore, monkeypatch):
    monkeypatch.setenv("TORCHIC_SYNC", "1")
    torchic.init(backend)
    with pytest.raises(IndexError, match=r"sync mode: issued by torchic\.Tensor\.__getitem__"):
        torchic.ones(3, 2)[torchic.tensor([3])]
    monkeypatch.setenv("TORCHIC_SYNC", "0")
    torchic.init(backend)
    rows = torchic.ones(3, 2)[torchic.tensor([3])]     # queued: raised at the read
    with pytest.raises(IndexError, match=r"raised at the next read or sync; set TORCHIC_SYNC=1"):
        rows.numpy()


def test_sync_mode_settings_are_checked(backend, restore, monkeypatch):
    with pytest.raises(TypeError, match=r"sync must be True or False, got 1"):
        torchic.init(backend, sync=1)
    monkeypatch.setenv("TORCHIC_SYNC", "maybe")
    with pytest.raises(ValueError, match=r"environment variable TORCHIC_SYNC must be 0 or 1, "
                                         r"got 'maybe'"):
        torchic.init(backend)


# -- .to() ---------------------------------------------------------------------------------
def test_to_float_string_converts_and_queues_nothing_bad(backend):
    x = torchic.tensor([1, 2, 3])
    for name in ("float", "float32", "f32"):
        y = x.to(name)
        assert y.dtype is torchic.float32
        np.testing.assert_array_equal(y.numpy(), np.array([1.0, 2.0, 3.0], np.float32))
    for name, dtype in (("long", torchic.int64), ("int", torchic.int32),
                        ("int64", torchic.int64), ("int32", torchic.int32)):
        z = y.to(name)
        assert z.dtype is dtype
        np.testing.assert_array_equal(z.numpy(), np.array([1, 2, 3]))
    torchic.sync()      # nothing failed later on the kernel thread


def test_to_keeps_pytorchs_overloads(backend):
    x = torchic.tensor([1.5, -2.0, 3.0])
    ref = np.array([1.5, -2.0, 3.0], np.float32)
    assert x.to("cpu") is x and x.to("cpu:0") is x and x.to(x.device) is x
    assert x.to(torchic.float32) is x and x.to(torchic.float) is x
    if "f64" in torchic.dispatcher.runtime().backend.dtypes:
        assert x.to(float).dtype is torchic.float64         # Python's float is double
    np.testing.assert_array_equal(x.to(torchic.int32).numpy(), ref.astype(np.int32))
    np.testing.assert_array_equal(x.to(int).numpy(), ref.astype(np.int64))
    np.testing.assert_array_equal(x.to(np.int64).numpy(), ref.astype(np.int64))
    np.testing.assert_array_equal(x.to(torchic.tensor([7])).numpy(), ref.astype(np.int64))
    assert x.to(torchic.tensor([0.5])) is x
    np.testing.assert_array_equal(x.to(device="cpu", dtype=torchic.int32).numpy(),
                                  ref.astype(np.int32))
    np.testing.assert_array_equal(x.to("cpu", torchic.long).numpy(), ref.astype(np.int64))
    np.testing.assert_array_equal(x.to(dtype="long", non_blocking=True).numpy(),
                                  ref.astype(np.int64))
    assert x.to(torchic.float32, False, False) is x
    copy = x.to("cpu", copy=True)
    assert copy is not x
    x.add_(1.0)
    np.testing.assert_array_equal(copy.numpy(), ref)          # a real copy
    w = torchic.ones(3, requires_grad=True)
    (w.to(torchic.float32, copy=True) * 2).sum().backward()   # copy=True keeps the graph
    np.testing.assert_array_equal(w.grad.numpy(), np.full(3, 2.0))


@pytest.mark.parametrize("args,kwargs,exc,match", [
    (("cuda",), {}, RuntimeError, r"to\('cuda'\): device 'cuda' is not available"),
    (("cuda:0",), {}, RuntimeError, r"device 'cuda:0' is not available"),
    (("mps",), {}, RuntimeError, r"device 'mps' is not available"),
    ((), {"device": "cuda"}, RuntimeError, r"device 'cuda' is not available"),
    (("cuda", torchic.float32), {}, RuntimeError, r"device 'cuda' is not available"),
    ((0,), {}, RuntimeError, r"to\(0\): a device index names a CUDA device"),
    (("abc",), {}, RuntimeError, r"expected a device \('cpu' or '\w+'\) or a dtype.*got 'abc'"),
    (("complex64",), {}, TypeError, r"unsupported dtype 'complex64'"),
    ((), {"dtype": "float16x"}, TypeError, r"unsupported dtype 'float16x'"),
    ((), {"dtype": complex}, TypeError, r"unsupported dtype <class 'complex'>"),
    (("cpu",), {"memory": 1}, TypeError, r"unexpected keyword argument 'memory'"),
    (("cpu", "x"), {}, TypeError, r"invalid combination of arguments"),
])
def test_to_refuses_unknown_devices_and_dtypes_before_queuing(backend, monkeypatch, args,
                                                               kwargs, exc, match):
    x = torchic.tensor([1, 2])
    ops = _CountOps(monkeypatch)
    with pytest.raises(exc, match=match):
        x.to(*args, **kwargs)
    assert ops.n == 0, "an op was queued before the arguments were checked"
    torchic.sync()
    np.testing.assert_array_equal(x.numpy(), [1, 2])


def test_to_other_backend_names_the_one_device(backend):
    others = [n for n in dispatcher.backend_names() if n != backend]
    for name in others:
        with pytest.raises(RuntimeError, match=rf"device '{name}' is not available.*this tensor "
                                               rf"is on '{backend}'"):
            torchic.ones(2).to(name)


def test_one_dtype_parser_everywhere(backend):
    """Creation, .to() and the casts accept (and refuse) the same spellings."""
    good = {"float": "f32", "float32": "f32", "f32": "f32", "long": "i64", "int": "i32",
            "int64": "i64", "int32": "i32", float: "f64", int: "i64", np.float64: "f64",
            np.int16: "i16", torchic.float32: "f32", torchic.long: "i64", "half": "f16",
            "float64": "f64", "double": "f64", torchic.float64: "f64", bool: "b8"}
    src = torchic.tensor([1.0, 2.0])
    held = torchic.dispatcher.runtime().backend.dtypes
    for spelling, code in good.items():
        if code not in held:        # (webgpu's float64: refused, naming the backend)
            with pytest.raises(TypeError, match="does not hold"):
                torchic.zeros(2, dtype=spelling)
            continue
        assert torchic.zeros(2, dtype=spelling)._dtype == code
        assert torchic.tensor([1, 2], dtype=spelling)._dtype == code
        assert src.to(spelling)._dtype == code
        assert src.to(dtype=spelling)._dtype == code
        assert torchic.arange(3, dtype=spelling)._dtype == code
    for bad in ("complex64", complex, "float16x", np.complex128):
        for make in (lambda d: torchic.zeros(2, dtype=d), lambda d: src.to(dtype=d),
                     lambda d: torchic.tensor([1], dtype=d)):
            with pytest.raises(TypeError, match=r"unsupported dtype"):
                make(bad)
    with pytest.raises(TypeError, match=r"softmax expects floating tensors"):
        torchic.nn.functional.softmax(src, dim=0, dtype="long")
    np.testing.assert_allclose(torchic.nn.functional.softmax(src, dim=0, dtype="float").numpy(),
                               np.exp([1, 2]) / np.exp([1, 2]).sum(), rtol=1e-6)
    torchic.sync()


# -- .grad assignment ------------------------------------------------------------------------
def test_grad_assignment_is_checked_like_pytorch(backend):
    w = torchic.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"^attempting to assign a gradient of size '\[2\]' "
                                           r"to a tensor of size '\[3\]'\. Please ensure that "
                                           r"the gradient and the tensor are the same size$"):
        w.grad = torchic.ones(2)
    with pytest.raises(RuntimeError, match=r"^attempting to assign a gradient of size "
                                           r"'\[1, 3\]' to a tensor of size '\[3\]'"):
        w.grad = torchic.ones(1, 3)
    with pytest.raises(RuntimeError, match=r"^attempting to assign a gradient with dtype 'int' "
                                           r"to a tensor with grad_dtype 'Float'\. The gradient "
                                           r"must match the tensor's grad_dtype"):
        w.grad = torchic.ones(3, dtype="i32")
    for bad, name in ((5, "int"), ([1.0, 2.0, 3.0], "list"), (np.ones(3), "ndarray")):
        with pytest.raises(TypeError, match=rf"^assigned grad expected to be a Tensor or None but "
                                            rf"got grad of type {name}$"):
            w.grad = bad
    assert w.grad is None                      # nothing was assigned by the failures
    g = torchic.tensor([1.0, 2.0, 3.0])
    w.grad = g
    assert w.grad is g
    torchic.optim.SGD([w], lr=0.5).step()
    np.testing.assert_allclose(w.detach().numpy(), [0.5, 0.0, -0.5])
    w.grad = None
    assert w.grad is None
    w.grad = torchic.ones(3)
    del w.grad
    assert w.grad is None
    (w * w).sum().backward()                   # accumulation still works after assignments
    np.testing.assert_allclose(w.grad.numpy(), [1.0, 0.0, -1.0])


def test_grad_messages_match_pytorch(backend):
    torch = pytest.importorskip("torch")

    def message(make):
        try:
            make()
        except Exception as exc:   # noqa: BLE001
            return type(exc).__name__, str(exc)
        return None

    def bad_shape(lib):
        t = lib.ones(3, requires_grad=True)
        t.grad = lib.ones(2)

    def bad_type(lib):
        t = lib.ones(3, requires_grad=True)
        t.grad = [1.0]

    def bad_dtype(lib):
        t = lib.ones(3, requires_grad=True)
        t.grad = lib.ones(3, dtype=lib.int32)

    assert message(lambda: bad_shape(torchic)) == message(lambda: bad_shape(torch))
    assert message(lambda: bad_type(torchic)) == message(lambda: bad_type(torch))
    ours, theirs = message(lambda: bad_dtype(torchic)), message(lambda: bad_dtype(torch))
    assert ours[0] == theirs[0] and theirs[1].startswith(ours[1])


# -- NumPy integer indices ---------------------------------------------------------------------
def test_numpy_integer_scalars_index_like_ints(backend, rng):
    ref = rng.standard_normal((4, 5)).astype(np.float32)
    x = torchic.tensor(ref)
    i64, i32, u8 = np.int64(3), np.int32(1), np.uint8(2)
    np.testing.assert_array_equal(x[i64].numpy(), ref[3])
    np.testing.assert_array_equal(x[i32, i64].numpy(), ref[1, 3])
    np.testing.assert_array_equal(x[(i64,)].numpy(), ref[3])
    np.testing.assert_array_equal(x[np.int64(-1)].numpy(), ref[-1])
    np.testing.assert_array_equal(x[i32:i64].numpy(), ref[1:3])
    np.testing.assert_array_equal(x[:, np.int64(0):np.int64(5):u8].numpy(), ref[:, 0:5:2])
    np.testing.assert_array_equal(x[[i64, np.int32(0), 2]].numpy(), ref[[3, 0, 2]])
    np.testing.assert_array_equal(x[u8, ..., i32].numpy(), ref[2, ..., 1])
    with pytest.raises(IndexError, match=r"index 4 is out of bounds for dimension 0 with size 4"):
        x[np.int64(4)]
    with pytest.raises(TypeError, match=r"invalid index of type bool"):
        x[np.bool_(True)]


def test_numpy_integer_scalars_in_assignment(backend):
    x = torchic.zeros(3, 4)
    ref = np.zeros((3, 4), np.float32)
    x[np.int64(1)] = 5.0
    ref[1] = 5.0
    x[np.int32(2), np.int64(3)] = -1.0
    ref[2, 3] = -1.0
    x[np.int64(0), np.int64(1):np.int64(3)] = torchic.tensor([7.0, 8.0])
    ref[0, 1:3] = [7.0, 8.0]
    np.testing.assert_array_equal(x.numpy(), ref)


# -- shutdown, heap_cap and environment values ----------------------------------------------------
def test_use_after_shutdown_says_shutdown(backend, restore):
    old = torchic.ones(3) * 2
    torchic.shutdown()
    for use in (lambda: old + 1, lambda: old.numpy(), lambda: old.sum()):
        with pytest.raises(RuntimeError, match=r"closed by torchic\.shutdown\(\)") as info:
            use()
        assert "replaced by" not in str(info.value)
    torchic.init(backend)
    with pytest.raises(RuntimeError, match=r"closed by torchic\.shutdown\(\)"):
        old + 1                        # a new runtime since: still the shutdown that killed it
    replaced = torchic.ones(3)
    torchic.init(backend)
    with pytest.raises(RuntimeError, match=r"replaced by torchic\.init\(\)"):
        replaced + 1


@pytest.mark.parametrize("kwargs,exc,match", [
    ({"heap_cap": True}, ValueError, r"heap_cap must be a positive number of bytes, got True"),
    ({"heap_cap": 1.5e9}, ValueError, r"heap_cap must be a positive number of bytes, got "
                                      r"1500000000\.0"),
    ({"heap_cap": 0}, ValueError, r"heap_cap must be a positive number of bytes, got 0"),
    ({"heap_cap": "8G"}, ValueError, r"heap_cap must be a positive number of bytes, got '8G'"),
    ({"threads": True}, ValueError, r"threads must be a positive int, got True"),
    ({"threads": -2}, ValueError, r"threads must be a positive int, got -2"),
    ({"threads": 2.0}, ValueError, r"threads must be a positive int, got 2\.0"),
])
def test_init_arguments_are_checked(backend, restore, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        torchic.init(backend, **kwargs)


def test_init_accepts_numpy_integers(backend, restore):
    rt = torchic.init(backend, heap_cap=np.int64(64 << 20), threads=np.int32(1))
    assert rt.allocator.cap_bytes == 64 << 20
    _sane()


@pytest.mark.parametrize("value", ["8G", "-1", "0", "1.5", "lots"])
def test_heap_cap_env_is_checked_and_named(backend, restore, monkeypatch, value):
    monkeypatch.setenv("TORCHIC_HEAP_CAP", value)
    with pytest.raises(ValueError, match=rf"environment variable TORCHIC_HEAP_CAP must be a "
                                         rf"positive number of bytes.*got '{value}'"):
        torchic.init(backend)


def test_heap_cap_env_is_used(backend, restore, monkeypatch):
    monkeypatch.setenv("TORCHIC_HEAP_CAP", str(32 << 20))
    assert torchic.init(backend).allocator.cap_bytes == 32 << 20


def test_env_helpers_name_the_variable(monkeypatch):
    monkeypatch.setenv("TORCHIC_X", " 12 ")
    assert dispatcher.env_int("TORCHIC_X", 5) == 12
    monkeypatch.setenv("TORCHIC_X", "")
    assert dispatcher.env_int("TORCHIC_X", 5) == 5
    monkeypatch.setenv("TORCHIC_X", "twelve")
    with pytest.raises(ValueError, match=r"environment variable TORCHIC_X must be an integer "
                                         r">= 1, got 'twelve'"):
        dispatcher.env_int("TORCHIC_X", 5)
    monkeypatch.setenv("TORCHIC_X", "-3")
    with pytest.raises(ValueError, match=r"TORCHIC_X must be an integer >= 0, got '-3'"):
        dispatcher.env_int("TORCHIC_X", 5, minimum=0)
    for text, value in (("1", True), ("true", True), ("0", False), ("off", False)):
        monkeypatch.setenv("TORCHIC_X", text)
        assert dispatcher.env_flag("TORCHIC_X") is value
    monkeypatch.setenv("TORCHIC_X", "spin")
    assert dispatcher.env_choice("TORCHIC_X", "auto", ("auto", "spin")) == "spin"
    monkeypatch.setenv("TORCHIC_X", "fast")
    with pytest.raises(ValueError, match=r"TORCHIC_X must be one of auto, spin, got 'fast'"):
        dispatcher.env_choice("TORCHIC_X", "auto", ("auto", "spin"))


def test_webgpu_wait_env_is_checked_and_named(monkeypatch):
    ok, why = dispatcher.backend_class("webgpu").available()
    wanted = os.environ.get("TORCHIC_TEST_BACKENDS", "webgpu").split(",")
    if "webgpu" not in wanted or (not ok and os.environ.get("TORCHIC_REQUIRE_ALL_BACKENDS") != "1"):
        pytest.skip(f"webgpu not tested here: {why or 'not selected'}")
    before = dispatcher._runtime.backend.name if dispatcher._runtime else None
    try:
        monkeypatch.setenv("TORCHIC_WEBGPU_WAIT", "sometimes")
        with pytest.raises(ValueError, match=r"TORCHIC_WEBGPU_WAIT must be one of auto, "
                                             r"spin, block, got 'sometimes'"):
            torchic.init("webgpu")
        monkeypatch.setenv("TORCHIC_WEBGPU_WAIT", "block")
        torchic.init("webgpu")
        assert torchic.ones(3).sum().item() == 3.0
    finally:
        monkeypatch.delenv("TORCHIC_WEBGPU_WAIT")
        if before is not None:
            torchic.init(before)


def test_split_min_env_is_checked_and_named():
    """TORCHIC_SPLIT_MIN is read when the workers backend is imported (at the first init)."""
    env = dict(os.environ, TORCHIC_SPLIT_MIN="1M", PYTHONPATH=os.path.join(ROOT, "src"))
    proc = subprocess.run([sys.executable, "-c", "import torchic; torchic.init('workers')"],
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    assert "ValueError: environment variable TORCHIC_SPLIT_MIN must be an integer >= 0, " \
           "got '1M'" in proc.stderr


@pytest.mark.parametrize("var,value,message", [
    ("TORCHIC_SIMD_ISA", "avx9000", r"must be one of scalar, avx2.*got 'avx9000'"),
    ("TORCHIC_SIMD_FUSE", "yes", r"must be 0 .* or 1, got 'yes'"),
])
def test_simd_env_settings_are_checked_and_named(backend_name, restore, monkeypatch, var, value,
                                                 message):
    if backend_name != "simd":
        pytest.skip(f"{var} is a simd setting")
    monkeypatch.setenv(var, value)
    with pytest.raises(ValueError, match=f"environment variable {var} {message}"):
        torchic.init("simd")


# -- the heap cap bounds host memory too ---------------------------------------------------------
_CAP = 1 << 20
_BIG = 1 << 24          # 16M elements: 64 MB of float32 (128 MB of float64) if built
_HOST_LIMIT = 8 << 20   # what a refused creation may allocate on the host at most


@pytest.mark.parametrize("name,make,nbytes", [
    ("randn", lambda: torchic.randn(_BIG), 4 * _BIG),
    ("rand", lambda: torchic.rand(4096, 4096), 4 * _BIG),
    ("randint", lambda: torchic.randint(0, 10, (_BIG,)), 8 * _BIG),      # (int64)
    ("arange", lambda: torchic.arange(_BIG), 8 * _BIG),
    ("arange float", lambda: torchic.arange(0.0, _BIG / 2, 0.5), 4 * _BIG),
    ("linspace", lambda: torchic.linspace(0, 1, _BIG), 4 * _BIG),
    ("randperm", lambda: torchic.randperm(_BIG), 8 * _BIG),
    ("zeros", lambda: torchic.zeros(_BIG), 4 * _BIG),
    ("ones", lambda: torchic.ones(4096, 4096), 4 * _BIG),
    ("full", lambda: torchic.full((_BIG,), 2.5), 4 * _BIG),
    ("empty", lambda: torchic.empty(_BIG), 4 * _BIG),
    ("randn_like", lambda: torchic.randn_like(torchic.ones(1 << 16)), None),
    ("multinomial", lambda: torchic.multinomial(torchic.tensor([1.0, 2.0]), _BIG,
                                                replacement=True), 8 * _BIG),
])
def test_creation_refuses_a_tensor_over_the_cap_before_building_it(backend, restore, name, make,
                                                                   nbytes):
    torchic.init(backend, heap_cap=_CAP)
    if name == "randn_like":        # 256 KB fits: the cap is about the new tensor's size
        np.testing.assert_equal(make().shape, (1 << 16,))
        return
    tracemalloc.start()
    try:
        with pytest.raises(HeapFullError) as info:
            make()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    msg = str(info.value)
    assert f"requested {nbytes} bytes" in msg and f"cap of {_CAP} bytes" in msg, msg
    assert peak < _HOST_LIMIT, f"{name}: {peak} bytes were allocated on the host before refusing"
    _sane()


def test_tensor_of_a_huge_list_or_array_is_refused_before_conversion(backend, restore):
    torchic.init(backend, heap_cap=_CAP)
    rows = [[0.5] * 1024] * 1024                     # 1M floats: 4 MB as float32
    array = np.zeros((1024, 1024))                   # float64: would be converted first
    for data, what in ((rows, "a tensor from a list"),
                       (array, r"a tensor from an array of shape \[1024, 1024\]")):
        tracemalloc.start()
        try:
            with pytest.raises(HeapFullError, match=rf"requested 4194304 bytes for {what}, more "
                                                    rf"than the heap cap of {_CAP} bytes"):
                torchic.tensor(data)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert peak < 1 << 20, f"{peak} bytes were allocated on the host before refusing"
    small = torchic.tensor([[1, 2], [3, 4]])         # under the cap: unchanged
    np.testing.assert_array_equal(small.numpy(), [[1, 2], [3, 4]])
    np.testing.assert_array_equal(torchic.arange(5).numpy(), np.arange(5))
    np.testing.assert_allclose(torchic.linspace(0, 1, 5).numpy(), np.linspace(0, 1, 5))


def test_webgpu_matmul_tile_env_is_checked_and_named(backend_name, monkeypatch):
    if backend_name != "webgpu":
        pytest.skip("TORCHIC_WEBGPU_MATMUL_TILE is a webgpu setting")
    torchic.init("webgpu")
    a = torchic.ones(4, 4)
    monkeypatch.setenv("TORCHIC_WEBGPU_MATMUL_TILE", "3x3x3")
    out = a @ a
    with pytest.raises(ValueError, match=r"environment variable TORCHIC_WEBGPU_MATMUL_TILE must "
                                         r"be one of .*64x64x8.*got '3x3x3'") as info:
        out.numpy()
    assert isinstance(info.value, torchic.KernelError)
    monkeypatch.setenv("TORCHIC_WEBGPU_MATMUL_TILE", "32x32x16")
    np.testing.assert_array_equal((a @ a).numpy(), np.full((4, 4), 4.0))
