"""Device habits of PyTorch programs: torchic.device, THE device check, .to / .cpu / .cuda,
torchic.cuda, torch.backends.mps / cudnn, threads, the default dtype and inference_mode.

Compared with the installed PyTorch where it is there (same exception classes and, for
the device parser, the same messages).
"""

import pickle

import numpy as np
import pytest

import torchic
from torchic import devices, nn


def _torch():
    return pytest.importorskip("torch")


# -- torchic.device ----------------------------------------------------------------------------

@pytest.mark.parametrize("args", [("cpu",), ("cpu", 0), ("cpu:0",), ("cpu:3",), ("cuda",),
                                  ("cuda", 1), ("mps",), ("meta",)])
def test_device_fields_match_torch(args):
    torch = _torch()
    ours, theirs = torchic.device(*args), torch.device(*args)
    assert (ours.type, ours.index) == (theirs.type, theirs.index)
    assert str(ours) == str(theirs) and repr(ours) == repr(theirs)


@pytest.mark.parametrize("args", [("gpu",), ("CPU",), ("",), ("cuda:x",), ("cpu:-1",),
                                  ("cpu:0:1",), ("cpu:01",), ("cpu:0", 1), ("cpu", -1),
                                  ("cpu", "0"), (1.5,)])
def test_device_errors_match_torch(args):
    torch = _torch()
    with pytest.raises(Exception) as theirs:
        torch.device(*args)
    with pytest.raises(type(theirs.value)) as ours:
        torchic.device(*args)
    if isinstance(theirs.value, RuntimeError):
        assert str(ours.value) == str(theirs.value)


def test_device_equality_hash_and_pickle():
    cpu = torchic.device("cpu")
    assert cpu == torchic.device("cpu") and cpu != torchic.device("cpu", 0)
    assert cpu == "cpu" and torchic.device("cpu", 0) == "cpu:0" and cpu != "cuda"
    assert torchic.device(cpu) == cpu and torchic.device("cuda") != cpu
    assert len({cpu, torchic.device("cpu"), "cpu"}) == 1
    assert pickle.loads(pickle.dumps(torchic.device("cpu", 2))) == torchic.device("cpu", 2)
    with pytest.raises(AttributeError):
        cpu.type = "cuda"


# -- check_device --------------------------------------------------------------------------

@pytest.mark.parametrize("dev", [None, "cpu", "cpu:0", "cpu:1", torchic.device("cpu"),
                                 torchic.device("cpu", 0)])
def test_check_device_accepts_cpu(dev):
    assert devices.check_device(dev) == torchic.device("cpu")


@pytest.mark.parametrize("dev", ["cuda", "mps", "cuda:0", "xpu", torchic.device("cuda", 1), 0])
def test_check_device_refuses_accelerators_naming_the_backend(dev):
    with pytest.raises(RuntimeError, match=r"torchic picks where ops run with the backend "
                                           r"\(torchic\.init\(backend=\"webgpu\"\).*"
                                           r"torch\.cuda\.is_available\(\) is False"):
        devices.check_device(dev)


def test_check_device_refuses_unknown_types_like_torch():
    with pytest.raises(RuntimeError, match=r"^Expected one of cpu, cuda, .* device type at "
                                           r"start of device string: gpu$"):
        devices.check_device("gpu")
    with pytest.raises(TypeError):
        devices.check_device(1.5)


# -- tensors and modules ---------------------------------------------------------------------

def test_tensor_device_habits(backend):
    x = torchic.tensor([1.5, -2.0])
    assert x.device == torchic.device("cpu") and x.device.type == "cpu" and not x.is_cuda
    assert x.cpu() is x and x.to("cpu") is x and x.to(x.device) is x
    assert x.to(torchic.device("cpu")) is x and x.to(device=torchic.device("cpu", 0)) is x
    y = x.to(torchic.device("cpu"), torchic.int32)
    np.testing.assert_array_equal(y.numpy(), [1, -2])
    assert torchic.tensor([1, 2]).to("cpu", dtype=torchic.float32).dtype is torchic.float32
    for bad in ("cuda", "cuda:0", "mps", torchic.device("cuda")):
        with pytest.raises(RuntimeError, match="torchic picks where ops run with the backend"):
            x.to(bad)
    with pytest.raises(RuntimeError, match=r"cuda\(\): device 'cuda' is not available"):
        x.cuda()
    with pytest.raises(RuntimeError, match=r"Invalid device string: 'cpu:x'"):
        x.to("cpu:x")
    np.testing.assert_array_equal(x.numpy(), np.array([1.5, -2.0], np.float32))


def test_module_device_habits(backend):
    m = nn.Linear(3, 2)
    assert m.to(torchic.device("cpu")) is m and m.to("cpu:0") is m and m.cpu() is m
    assert m.weight.device == "cpu"
    with pytest.raises(RuntimeError, match="torchic picks where ops run with the backend"):
        m.cuda()
    with pytest.raises(RuntimeError, match="not available"):
        m.to(torchic.device("cuda", 0))


def test_pytorch_device_idiom_picks_cpu(backend):
    dev = torchic.device("cuda" if torchic.cuda.is_available() else "cpu")
    model = nn.Linear(2, 1).to(dev)
    out = model(torchic.ones(4, 2).to(dev))
    assert out.shape == (4, 1) and out.device == dev


# -- torch.cuda, torch.backends ------------------------------------------------------------------

def test_cuda_module(backend):
    cuda = torchic.cuda
    assert cuda.is_available() is False and cuda.device_count() == 0
    assert cuda.is_bf16_supported() is False and cuda.is_initialized() is False
    assert cuda.manual_seed(3) is None and cuda.manual_seed_all(3) is None
    assert cuda.empty_cache() is None
    with pytest.raises(TypeError):
        cuda.manual_seed("seed")
    y = torchic.ones(3) * 2
    cuda.synchronize()
    np.testing.assert_array_equal(y.numpy(), [2, 2, 2])
    with pytest.raises(RuntimeError, match="no CUDA device"):
        cuda.current_device()


def test_backends_shims_match_a_cpu_torch():
    assert torchic.backends.mps.is_available() is False
    assert torchic.backends.cudnn.is_available() is False
    torchic.backends.cudnn.benchmark = True       # scripts set it; it changes nothing
    torchic.backends.cudnn.benchmark = False
    assert "mps" not in torchic.backend_names() and "cudnn" not in torchic.backend_names()
    torch = _torch()
    assert torch.backends.mps.is_available() is False


# -- threads, default dtype ------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["workers", "simd"])
def test_set_num_threads_before_the_first_op_sizes_the_runtime(name):
    """A script's torch.set_num_threads(1) at its top: the default runtime its first op
    starts has one worker thread, as does an init() without threads; init(threads=n) and
    a runtime already running keep their own count. (A fresh process: the first op.)"""
    import os
    import subprocess
    import sys
    if not torchic.dispatcher.backend_class(name).available()[0]:
        pytest.skip(f"{name} unavailable")
    code = (
        "import torchic\n"
        "torchic.set_num_threads(1)\n"
        "x = torchic.ones(4) * 2\n"
        "rt = torchic.dispatcher.runtime()\n"
        "print(rt.backend.name, rt.backend.threads, float(x.sum()))\n"
        "print(torchic.init(threads=2).backend.threads)\n"
        "print(torchic.init().backend.threads, torchic.get_num_threads())\n")
    env = dict(os.environ, TORCHIC_BACKEND=name)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, timeout=120, stdin=subprocess.DEVNULL)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:3] == [f"{name} 1 8.0", "2", "1 1"], out.stdout


def test_num_threads_and_default_dtype(backend):
    old = torchic.dispatcher.requested_threads
    try:
        torchic.dispatcher.requested_threads = None
        rt = torchic.dispatcher.runtime()
        assert torchic.get_num_threads() == rt.backend.threads
        torchic.set_num_threads(3)
        assert torchic.get_num_threads() == 3
        with pytest.raises(RuntimeError, match="Number of threads must be positive"):
            torchic.set_num_threads(0)
        with pytest.raises(TypeError):
            torchic.set_num_threads(2.5)
    finally:
        torchic.dispatcher.requested_threads = old
    assert torchic.get_default_dtype() is torchic.float32
    try:
        for d in (torchic.float64, np.float64, "float64", torchic.float32, torchic.float,
                  "float32", np.float32):
            torchic.set_default_dtype(d)
            if torchic.get_default_dtype().code in rt.backend.dtypes:
                assert torchic.get_default_dtype() is torchic.tensor([1.5]).dtype
            else:       # (webgpu's float64: refused, naming the backend)
                with pytest.raises(TypeError, match=rt.backend.name):
                    torchic.tensor([1.5])
        for d in (torchic.int32, torchic.bool, "long", np.int64):
            with pytest.raises(TypeError, match="only floating-point types"):
                torchic.set_default_dtype(d)
    finally:
        torchic.set_default_dtype(torchic.float32)
    assert torchic.get_default_dtype() is torchic.float32


# -- inference_mode ------------------------------------------------------------------------------

def test_inference_mode_as_torch(backend):
    w = torchic.ones(2, requires_grad=True)
    assert not torchic.is_inference_mode_enabled()
    with torchic.inference_mode() as entered:
        assert entered is None
        assert torchic.is_inference_mode_enabled() and not torchic.is_grad_enabled()
        y = w * 2
        with torchic.inference_mode(False):
            assert not torchic.is_inference_mode_enabled() and torchic.is_grad_enabled()
        assert not torchic.is_grad_enabled()
    assert torchic.is_grad_enabled() and not torchic.is_inference_mode_enabled()
    assert not y.requires_grad and y.grad_fn is None
    np.testing.assert_array_equal(y.numpy(), [2, 2])
    with torchic.no_grad():
        with torchic.inference_mode(False):
            assert torchic.is_grad_enabled()      # as torch: inference_mode(False) turns grad on

    @torchic.inference_mode()
    def called():
        return torchic.is_inference_mode_enabled(), (w * 3).requires_grad

    @torchic.inference_mode
    def bare():
        return torchic.is_inference_mode_enabled(), torchic.is_grad_enabled()

    assert called() == (True, False) and bare() == (True, False)
    assert called.__name__ == "called" and bare.__name__ == "bare"
    with pytest.raises(TypeError):
        torchic.inference_mode("yes")


def test_inference_mode_states_match_torch():
    torch = _torch()
    for lib in (torch, torchic):
        seen = []
        with lib.inference_mode():
            seen.append((lib.is_grad_enabled(), lib.is_inference_mode_enabled()))
            with lib.inference_mode(False):
                seen.append((lib.is_grad_enabled(), lib.is_inference_mode_enabled()))
        with lib.no_grad(), lib.inference_mode(False):
            seen.append((lib.is_grad_enabled(), lib.is_inference_mode_enabled()))
        if lib is torch:
            expected = seen
    assert seen == expected
