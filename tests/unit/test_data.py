"""torchic.utils.data against PyTorch's torch.utils.data (where torch is installed).

Two kinds of checks:
- our own invariants, on every backend: every index once per epoch, drop_last, lengths,
  collation, PyTorch's argument errors;
- bit-for-bit batch order against torch for the same seed. Those depend on
  torchic.randperm / randint producing PyTorch's numbers (torchic's generator, creation.py):
  they are expected to fail (xfail) until it does, and must pass once it does.
"""

import collections

import numpy as np
import pytest

import torchic
from torchic.utils.data import (BatchSampler, ConcatDataset, DataLoader, Dataset,
                                IterableDataset, RandomSampler, SequentialSampler, Subset,
                                SubsetRandomSampler, TensorDataset, WeightedRandomSampler,
                                default_collate, random_split)


def _torch():
    return pytest.importorskip("torch")


def _generator_matches_torch():
    try:
        import torch
    except ImportError:
        return False
    torch.manual_seed(7)
    torchic.manual_seed(7)
    same = torch.randperm(50).tolist() == torchic.randperm(50).tolist()
    torchic.manual_seed(0)
    return same


bit_exact = pytest.mark.xfail(not _generator_matches_torch(), strict=True,
                              reason="needs torchic's generator to give PyTorch's randperm / "
                                     "randint numbers (creation.py)")


def _as_lists(batch):
    """A collated batch -> plain Python values (tensors of either library -> lists)."""
    if hasattr(batch, "tolist"):
        return batch.tolist()
    if isinstance(batch, dict):
        return {k: _as_lists(v) for k, v in batch.items()}
    if isinstance(batch, (list, tuple)):
        return [_as_lists(b) for b in batch]
    return batch


class Squares(Dataset):
    def __init__(self, n):
        self.n = n

    def __getitem__(self, i):
        if not 0 <= i < self.n:
            raise IndexError(i)
        return i * i

    def __len__(self):
        return self.n


class Stream(IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return iter(range(self.n))

    def __len__(self):
        return self.n


# -- datasets ------------------------------------------------------------------------------------

def test_tensor_dataset_subset_concat(backend):
    x = torchic.arange(12).float().reshape(6, 2)
    y = torchic.arange(6)
    ds = TensorDataset(x, y)
    assert len(ds) == 6
    xi, yi = ds[4]
    np.testing.assert_array_equal(xi.numpy(), [8.0, 9.0])
    assert yi.item() == 4
    with pytest.raises(AssertionError, match="Size mismatch between tensors"):
        TensorDataset(x, torchic.arange(5))
    sub = Subset(ds, [5, 0, 2])
    assert len(sub) == 3 and sub[0][1].item() == 5 and sub[-1][1].item() == 2
    both = ConcatDataset([Squares(3), Squares(4)])
    assert len(both) == 7 and [both[i] for i in range(7)] == [0, 1, 4, 0, 1, 4, 9]
    assert both[-1] == 9 and (Squares(2) + Squares(1))[2] == 0
    with pytest.raises(ValueError, match="absolute value of index"):
        both[-8]


def test_random_split_lengths_match_torch():
    torch = _torch()
    for n, fractions in [(10, [0.3, 0.7]), (30, [0.3, 0.3, 0.4]), (7, [0.5, 0.5]),
                         (11, [0.1, 0.2, 0.3, 0.4]), (5, [3, 2])]:
        ours = random_split(range(n), fractions)
        theirs = torch.utils.data.random_split(range(n), fractions)
        assert [len(s) for s in ours] == [len(s) for s in theirs]
        flat = [i for s in ours for i in s]
        assert sorted(flat) == list(range(n))
    with pytest.raises(ValueError, match="Sum of input lengths does not equal"):
        random_split(range(5), [2, 2])
    with pytest.raises(ValueError, match="Fraction at index 1 is not between 0 and 1"):
        random_split(range(5), [0.5, 1.5, -1.0])
    with pytest.warns(UserWarning, match="Length of split at index 1 is 0"):
        random_split(range(1), [0.5, 0.5])


@bit_exact
def test_random_split_matches_torch_for_the_same_seed():
    torch = _torch()
    ours = random_split(range(20), [0.25, 0.75], generator=torchic.Generator().manual_seed(42))
    theirs = torch.utils.data.random_split(range(20), [0.25, 0.75],
                                           generator=torch.Generator().manual_seed(42))
    assert [list(s) for s in ours] == [list(s) for s in theirs]


# -- samplers ------------------------------------------------------------------------------------

def test_random_sampler_invariants(backend):
    data = range(10)
    sampler = RandomSampler(data)
    for _ in range(2):
        epoch = list(sampler)
        assert sorted(epoch) == list(range(10))
    long = list(RandomSampler(data, num_samples=25))
    counts = collections.Counter(long)
    assert len(long) == 25 and set(counts) == set(range(10)) and max(counts.values()) == 3
    drawn = list(RandomSampler(data, replacement=True, num_samples=70))
    assert len(drawn) == 70 and all(0 <= i < 10 for i in drawn)
    g1, g2 = torchic.Generator().manual_seed(3), torchic.Generator().manual_seed(3)
    assert list(RandomSampler(data, generator=g1)) == list(RandomSampler(data, generator=g2))
    with pytest.raises(TypeError, match="replacement should be a boolean value"):
        RandomSampler(data, replacement=1)
    with pytest.raises(ValueError, match="num_samples should be a positive integer value"):
        RandomSampler(data, num_samples=0)
    assert len(RandomSampler(data, num_samples=4)) == 4


def test_subset_weighted_and_batch_samplers(backend):
    picked = list(SubsetRandomSampler([3, 5, 7, 9]))
    assert sorted(picked) == [3, 5, 7, 9]
    weighted = list(WeightedRandomSampler([0.0, 1.0, 0.0, 3.0], 200))
    assert len(weighted) == 200 and set(weighted) <= {1, 3} and weighted.count(3) > 100
    distinct = list(WeightedRandomSampler([1.0, 2.0, 3.0, 4.0], 4, replacement=False))
    assert sorted(distinct) == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="weights should be a 1d sequence"):
        WeightedRandomSampler([[1.0, 2.0]], 1)
    with pytest.raises(ValueError, match="num_samples should be a positive integer"):
        WeightedRandomSampler([1.0], 0)
    seq = SequentialSampler(range(10))
    assert list(BatchSampler(seq, 3, False)) == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]
    assert list(BatchSampler(seq, 3, True)) == [[0, 1, 2], [3, 4, 5], [6, 7, 8]]
    assert len(BatchSampler(seq, 3, False)) == 4 and len(BatchSampler(seq, 3, True)) == 3
    with pytest.raises(ValueError, match="batch_size should be a positive integer value"):
        BatchSampler(seq, 0, False)
    with pytest.raises(ValueError, match="drop_last should be a boolean value"):
        BatchSampler(seq, 2, 1)


@bit_exact
@pytest.mark.parametrize("kwargs", [{}, {"num_samples": 25}, {"replacement": True},
                                    {"replacement": True, "num_samples": 70}])
def test_random_sampler_matches_torch_for_the_same_seed(kwargs):
    torch = _torch()
    torch.manual_seed(11)
    torchic.manual_seed(11)
    theirs = [list(torch.utils.data.RandomSampler(range(10), **kwargs)) for _ in range(2)]
    ours = [list(RandomSampler(range(10), **kwargs)) for _ in range(2)]
    assert ours == theirs
    g, tg = torchic.Generator().manual_seed(5), torch.Generator().manual_seed(5)
    assert list(RandomSampler(range(10), generator=g, **kwargs)) == \
        list(torch.utils.data.RandomSampler(range(10), generator=tg, **kwargs))


# -- collation -------------------------------------------------------------------------------------

Point = collections.namedtuple("Point", ["x", "y"])


def _samples():
    return [
        [1, 2, 3],
        [1.5, -2.0],
        [True, False],
        ["a", "b"],
        [np.array([1.0, 2.0]), np.array([3.0, 4.0])],
        [np.float64(1.5), np.float64(2.5)],
        [(1, 2.0, "s"), (3, 4.0, "t")],
        [[1, 2], [3, 4]],
        [{"a": 1, "b": [0.5, 1.5]}, {"a": 2, "b": [2.5, 3.5]}],
        [Point(1, 2.0), Point(3, 4.0)],
    ]


@pytest.mark.parametrize("i", range(len(_samples())))
def test_default_collate_matches_torch(backend, i):
    torch = _torch()
    batch = _samples()[i]
    theirs = torch.utils.data.default_collate(batch)
    if backend == "webgpu" and any(isinstance(x, np.ndarray | np.float64) and x.dtype == np.float64
                                   for x in batch):
        # float64 arrays stay float64, as PyTorch's: webgpu refuses them, naming the dtype
        with pytest.raises(TypeError, match="webgpu.*float64"):
            default_collate(batch)
        return
    ours = default_collate(batch)
    assert type(ours) is type(theirs) or hasattr(ours, "tolist")
    assert _as_lists(ours) == _as_lists(theirs)


def test_default_collate_dtypes_and_errors(backend):
    assert default_collate([1, 2]).dtype is torchic.int64      # as PyTorch's
    assert default_collate([1.0, 2.0]).dtype is torchic.float32
    t = default_collate([torchic.tensor([1.0, 2.0]), torchic.tensor([3.0, 4.0])])
    assert t.shape == (2, 2)
    np.testing.assert_array_equal(t.numpy(), [[1, 2], [3, 4]])
    p = default_collate([Point(1, 2.0), Point(3, 4.0)])
    assert isinstance(p, Point) and p.x.tolist() == [1, 3]
    with pytest.raises(TypeError, match="default_collate: batch must contain tensors"):
        default_collate([object(), object()])
    with pytest.raises(TypeError, match="default_collate: batch must contain"):
        default_collate([np.array(["a"]), np.array(["b"])])
    with pytest.raises(RuntimeError, match="each element in list of batch should be of equal"):
        default_collate([[1, 2], [3]])


@pytest.mark.parametrize("make", [torchic.zeros, lambda n: np.zeros(n, np.float32)],
                         ids=["tensors", "arrays"])
def test_default_collate_of_unequal_shapes_raises_pytorchs_error(backend, make):
    """Stacking samples of different shapes: PyTorch's RuntimeError and message (issue 39)."""
    want = r"stack expects each tensor to be equal size, but got \[2\] at entry 0 and \[3\] at " \
           r"entry 2"
    with pytest.raises(RuntimeError, match=want):
        default_collate([make(2), make(2), make(3)])
    with pytest.raises(RuntimeError, match="stack expects a non-empty TensorList"):
        torchic.stack([])
    torch = pytest.importorskip("torch")
    batch = [torch.zeros(2), torch.zeros(2), torch.zeros(3)]
    with pytest.raises(RuntimeError, match=want):
        torch.utils.data.default_collate(batch)


# -- DataLoader ------------------------------------------------------------------------------------

def test_dataloader_batches_in_order(backend):
    x = torchic.arange(20).float().reshape(10, 2)
    y = torchic.arange(10)
    loader = DataLoader(TensorDataset(x, y), batch_size=4)
    batches = list(loader)
    assert len(loader) == 3 and len(batches) == 3
    assert [b[1].tolist() for b in batches] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    np.testing.assert_array_equal(batches[2][0].numpy(), [[16, 17], [18, 19]])
    dropped = DataLoader(TensorDataset(x, y), batch_size=4, drop_last=True)
    assert len(dropped) == 2 and [len(b[1]) for b in dropped] == [4, 4]
    unbatched = list(DataLoader(Squares(3), batch_size=None))
    assert unbatched == [0, 1, 4]
    sampled = DataLoader(Squares(6), batch_sampler=[[5, 0], [2]])
    assert [b.tolist() for b in sampled] == [[25, 0], [4]]


def test_dataloader_shuffle_invariants(backend):
    loader = DataLoader(Squares(11), batch_size=3, shuffle=True)
    assert len(loader) == 4
    epochs = []
    for _ in range(3):
        batches = [b.tolist() for b in loader]
        assert [len(b) for b in batches] == [3, 3, 3, 2]
        flat = [v for b in batches for v in b]
        assert sorted(flat) == [i * i for i in range(11)]
        epochs.append(flat)
    assert epochs[0] != epochs[1] or epochs[1] != epochs[2]
    g1, g2 = torchic.Generator().manual_seed(9), torchic.Generator().manual_seed(9)
    a = [b.tolist() for b in DataLoader(Squares(11), batch_size=3, shuffle=True, generator=g1)]
    b = [b.tolist() for b in DataLoader(Squares(11), batch_size=3, shuffle=True, generator=g2)]
    assert a == b
    dropped = DataLoader(Squares(11), batch_size=3, shuffle=True, drop_last=True)
    assert len(dropped) == 3 and [len(b) for b in dropped] == [3, 3, 3]


def test_dataloader_iterable_dataset_and_workers(backend):
    loader = DataLoader(Stream(7), batch_size=3)
    assert len(loader) == 3 and [b.tolist() for b in loader] == [[0, 1, 2], [3, 4, 5], [6]]
    dropped = DataLoader(Stream(7), batch_size=3, drop_last=True)
    assert len(dropped) == 2 and [b.tolist() for b in dropped] == [[0, 1, 2], [3, 4, 5]]
    assert list(DataLoader(Stream(2), batch_size=None)) == [0, 1]
    started = []
    workers = DataLoader(Squares(5), batch_size=2, num_workers=2, pin_memory=True,
                         worker_init_fn=started.append, persistent_workers=True)
    assert [b.tolist() for b in workers] == [[0, 1], [4, 9], [16]]
    assert started == []        # worker_init_fn runs in the worker processes


@pytest.mark.parametrize("kwargs", [
    {"num_workers": -1}, {"timeout": -1}, {"prefetch_factor": 2},
    {"num_workers": 1, "prefetch_factor": -1}, {"persistent_workers": True},
    {"sampler": [0, 1], "shuffle": True},
    {"batch_sampler": [[0]], "batch_size": 2}, {"batch_sampler": [[0]], "drop_last": True},
    {"batch_sampler": [[0]], "shuffle": True}, {"batch_sampler": [[0]], "sampler": [0]},
    {"batch_size": None, "drop_last": True},
])
def test_dataloader_argument_conflicts_match_torch(kwargs):
    torch = _torch()
    with pytest.raises(ValueError) as theirs:
        torch.utils.data.DataLoader(range(4), **kwargs)
    with pytest.raises(ValueError) as ours:
        DataLoader(Squares(4), **kwargs)
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("kwargs", [{"shuffle": True}, {"sampler": [0]},
                                    {"batch_sampler": [[0]]}])
def test_dataloader_iterable_conflicts_match_torch(kwargs):
    torch = _torch()

    class TorchStream(torch.utils.data.IterableDataset):
        def __iter__(self):
            return iter(range(3))

    with pytest.raises(ValueError) as theirs:
        torch.utils.data.DataLoader(TorchStream(), **kwargs)
    with pytest.raises(ValueError) as ours:
        DataLoader(Stream(3), **kwargs)
    first = lambda e: str(e.value).split(", but got")[0]      # noqa: E731 (reprs differ)
    assert first(ours) == first(theirs)


def test_dataloader_frozen_attributes_and_lengths_match_torch():
    torch = _torch()
    for kwargs in [{"batch_size": 3}, {"batch_size": 3, "drop_last": True},
                   {"batch_size": 1}, {"batch_size": None}, {"batch_size": 4, "shuffle": True}]:
        assert len(DataLoader(Squares(10), **kwargs)) == \
            len(torch.utils.data.DataLoader(range(10), **kwargs))
    loader = DataLoader(Squares(3))
    with pytest.raises(ValueError, match="batch_size attribute should not be set after "
                                         "DataLoader is initialized"):
        loader.batch_size = 2
    loader.num_workers = 0          # not frozen


@bit_exact
@pytest.mark.parametrize("with_generator", [False, True])
def test_dataloader_shuffle_matches_torch_for_the_same_seed(with_generator):
    torch = _torch()
    torch.manual_seed(3)
    torchic.manual_seed(3)
    tg = torch.Generator().manual_seed(8) if with_generator else None
    g = torchic.Generator().manual_seed(8) if with_generator else None
    theirs = torch.utils.data.DataLoader(range(13), batch_size=4, shuffle=True, generator=tg)
    ours = DataLoader(Squares(13), batch_size=4, shuffle=True, generator=g)
    for _ in range(2):          # two epochs: the per-iterator seed draws line up too
        assert [[v * v for v in b.tolist()] for b in theirs] == [b.tolist() for b in ours]
    assert torch.randperm(10).tolist() == torchic.randperm(10).tolist()


# -- torchic.utils.tensorboard -------------------------------------------------------------------

def test_tensorboard_import_error_names_the_package(monkeypatch):
    import importlib
    import sys
    for name in [n for n in sys.modules if n.split(".")[0] == "tensorboard"] + ["tensorboard"]:
        monkeypatch.setitem(sys.modules, name, None)               # as if not installed
    monkeypatch.delitem(sys.modules, "torchic.utils.tensorboard", raising=False)
    with pytest.raises(ImportError, match=r"needs the `tensorboard` package: pip install "
                                          r"tensorboard"):
        importlib.import_module("torchic.utils.tensorboard")


def test_summary_writer_event_files_are_readable(backend, tmp_path):
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from torchic.utils.tensorboard import SummaryWriter

    values = np.linspace(-1.0, 2.0, 31)
    with SummaryWriter(log_dir=str(tmp_path)) as writer:
        for step in range(3):
            writer.add_scalar("loss", torchic.tensor(1.5 - step), step)     # a 0-d tensor
        writer.add_scalar("lr", 0.25, global_step=torchic.tensor(7))
        writer.add_scalars("acc", {"train": torchic.tensor([0.5]), "val": 0.75}, 1)
        writer.add_histogram("w", torchic.tensor(values.astype(np.float32)), 2)
        writer.add_text("note", "hello torchic", 4)
        writer.flush()
    acc = EventAccumulator(str(tmp_path), size_guidance={"tensors": 0})
    acc.Reload()
    assert [(e.step, e.value) for e in acc.Scalars("loss")] == [(0, 1.5), (1, 0.5), (2, -0.5)]
    assert [(e.step, e.value) for e in acc.Scalars("lr")] == [(7, 0.25)]
    histo = acc.Histograms("w")[0]
    assert histo.step == 2 and histo.histogram_value.num == 31
    assert histo.histogram_value.min == pytest.approx(-1.0)
    assert histo.histogram_value.max == pytest.approx(2.0)
    assert histo.histogram_value.sum == pytest.approx(values.sum(), rel=1e-6)
    assert sum(histo.histogram_value.bucket) == 31
    text = acc.Tensors("note")[0]
    assert text.step == 4 and text.tensor_proto.string_val[0] == b"hello torchic"
    for run, expected in (("acc_train", 0.5), ("acc_val", 0.75)):
        sub = EventAccumulator(str(tmp_path / run))
        sub.Reload()
        assert [(e.step, e.value) for e in sub.Scalars("acc")] == [(1, expected)]
    with pytest.raises(ValueError, match="a tensor of one element"):
        SummaryWriter(log_dir=str(tmp_path / "x")).add_scalar("bad", torchic.ones(2))
