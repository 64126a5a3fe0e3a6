"""torchic.distributed without MPI processes: the import boundary (torchic never loads MPI),
the error naming what to install, PyTorch's errors before init, DistributedSampler against
PyTorch's, and autograd's post-accumulate-grad hook that DDP's buckets are built on."""

import subprocess
import sys

import numpy as np
import pytest

import torchic
import torchic.distributed as dist
from torchic.autograd import register_post_accumulate_grad_hook
from torchic.utils.data import DistributedSampler


def _python(code):
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, stdin=subprocess.DEVNULL)


def test_import_torchic_never_imports_mpi():
    run = _python("import sys, torchic, torchic.nn, torchic.nn.parallel, "
                  "torchic.distributed, torchic.utils.data\n"
                  "torchic.distributed.is_available()\n"
                  "assert 'mpi4py' not in sys.modules, 'mpi4py imported'\nprint('clean')")
    assert run.returncode == 0 and "clean" in run.stdout, run.stderr


def test_missing_mpi4py_names_what_to_install():
    run = _python("import sys; sys.modules['mpi4py'] = None\n"
                  "import torchic.distributed as dist\n"
                  "try:\n    dist.init_process_group()\n"
                  "except ImportError as e:\n    print('ImportError:', e)\n")
    assert 'ImportError: torchic.distributed needs MPI and mpi4py' in run.stdout, run.stderr
    assert 'pip install "torchic[distributed]"' in run.stdout


def test_calls_before_init_raise_pytorchs_error():
    assert not dist.is_initialized()
    assert isinstance(dist.is_available(), bool)
    for call in (dist.get_rank, dist.get_world_size, dist.barrier,
                 lambda: dist.all_reduce(torchic.ones(2)),
                 lambda: torchic.nn.parallel.DistributedDataParallel(torchic.nn.Linear(2, 2))):
        with pytest.raises(ValueError, match="Default process group has not been initialized"):
            call()


def test_nccl_and_unknown_backends_are_refused_before_mpi_loads():
    with pytest.raises(RuntimeError, match="CUDA"):
        dist.init_process_group("nccl")
    with pytest.raises(ValueError, match="unknown backend"):
        dist.init_process_group("carrier-pigeon")


@pytest.mark.parametrize("n", [0, 1, 5, 10, 11, 37])
@pytest.mark.parametrize("replicas", [1, 2, 3])
@pytest.mark.parametrize("shuffle", [False, True])
@pytest.mark.parametrize("drop_last", [False, True])
def test_distributed_sampler_matches_pytorch(n, replicas, shuffle, drop_last):
    torch_data = pytest.importorskip("torch.utils.data")
    for rank in range(replicas):
        ours = DistributedSampler(range(n), replicas, rank, shuffle, seed=3, drop_last=drop_last)
        theirs = torch_data.DistributedSampler(range(n), replicas, rank, shuffle, seed=3,
                                               drop_last=drop_last)
        for epoch in (0, 4):
            ours.set_epoch(epoch)
            theirs.set_epoch(epoch)
            assert list(ours) == list(theirs) and len(ours) == len(theirs)


def test_distributed_sampler_splits_and_pads():
    parts = [list(DistributedSampler(range(5), 2, r, shuffle=False)) for r in range(2)]
    assert parts == [[0, 2, 4], [1, 3, 0]]          # padded with the start
    parts = [list(DistributedSampler(range(5), 2, r, shuffle=False, drop_last=True))
             for r in range(2)]
    assert parts == [[0, 2], [1, 3]]
    shuffled = [list(DistributedSampler(range(10), 2, r, seed=1)) for r in range(2)]
    assert sorted(shuffled[0] + shuffled[1]) == list(range(10))
    with pytest.raises(ValueError, match="Invalid rank 2"):
        DistributedSampler(range(4), num_replicas=2, rank=2)


def test_post_accumulate_grad_hook_fires_once_with_the_whole_gradient(backend):
    w = torchic.tensor([1.0, 2.0, 3.0], requires_grad=True)
    unused = torchic.tensor([1.0], requires_grad=True)
    seen = []
    register_post_accumulate_grad_hook(w, lambda t: seen.append(t.grad.numpy().copy()))
    register_post_accumulate_grad_hook(unused, lambda t: seen.append("unused"))
    x = torchic.tensor([4.0, 5.0, 6.0])
    ((w * x).sum() + (w * w).sum() + w.sum()).backward()   # three edges into w
    wv, xv = np.array([1.0, 2.0, 3.0]), np.array([4.0, 5.0, 6.0])
    assert len(seen) == 1
    np.testing.assert_allclose(seen[0], xv + 2 * wv + 1)
    (w * 2).sum().backward()                                # accumulates: fires again
    assert len(seen) == 2
    np.testing.assert_allclose(seen[1], xv + 2 * wv + 3)


def test_post_accumulate_grad_hook_remove_and_leaf_backward(backend):
    w = torchic.tensor([1.0, 2.0], requires_grad=True)
    calls = []
    handle = register_post_accumulate_grad_hook(w, lambda t: calls.append(1))
    w.backward(torchic.tensor([1.0, 1.0]))                  # backward on the leaf itself
    assert calls == [1]
    handle.remove()
    (w * 3).sum().backward()
    assert calls == [1]
    with pytest.raises(RuntimeError, match="non-leaf"):
        register_post_accumulate_grad_hook(w * 2, lambda t: None)


def test_post_accumulate_grad_hook_is_a_tensor_method(backend):
    w = torchic.tensor([1.0, 2.0], requires_grad=True)
    seen = []
    handle = w.register_post_accumulate_grad_hook(lambda t: seen.append(t.grad.tolist()))
    (w * w).sum().backward()
    assert seen == [[2.0, 4.0]]
    handle.remove()
