"""torchic.nn.utils.rnn: variable-length batches for the recurrent layers (PyTorch's spellings).

A PackedSequence holds the rows of a batch of sequences sorted by length (longest first), time
step by time step: ``data`` is (sum(lengths), *) and ``batch_sizes[t]`` says how many sequences
are still running at step t. Packing and unpacking are each ONE gather of rows (differentiable:
the gradient flows back to the padded tensor), with the row indices computed on the host from
the lengths (which PyTorch also keeps on the CPU).

    packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
    out, h = lstm(packed)
    padded, lengths = pad_packed_sequence(out, batch_first=True)
"""

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from ... import api as _ops
from ...creation import full, tensor as _tensor
from ...tensor import Tensor

__all__ = ["PackedSequence", "pack_padded_sequence", "pad_packed_sequence", "pad_sequence",
           "pack_sequence", "unpad_sequence", "unpack_sequence", "invert_permutation"]


def _host_ints(values, what):
    """A list of Python ints from a list / tuple / int tensor / ndarray."""
    if isinstance(values, Tensor):
        if values.is_floating_point():
            raise TypeError(f"{what} must be an integer tensor or a list of ints, got "
                            f"{values.dtype}")
        return [int(v) for v in values.numpy().reshape(-1)]
    return [int(v) for v in np.asarray(values).reshape(-1)]


def invert_permutation(permutation: Tensor | None) -> Tensor | None:
    """The permutation that undoes `permutation` (an int64 1-D tensor), or None for None."""
    if permutation is None:
        return None
    p = np.asarray(_host_ints(permutation, "permutation"), dtype=np.int64)
    inv = np.empty_like(p)
    inv[p] = np.arange(p.size, dtype=np.int64)
    return _tensor(inv)


class PackedSequence(NamedTuple):
    """A batch of variable-length sequences packed time step by time step.

    Fields (PyTorch's): ``data`` (sum(lengths), *) the rows of every step, longest sequences
    first; ``batch_sizes`` int64 (T,) the number of sequences running at each step;
    ``sorted_indices`` / ``unsorted_indices`` the batch permutation into / out of the
    length order (None when the batch came sorted). Made by pack_padded_sequence /
    pack_sequence, never by hand.
    """

    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Tensor | None = None
    unsorted_indices: Tensor | None = None

    def _sizes(self) -> list[int]:
        return _host_ints(self.batch_sizes, "batch_sizes")

    @property
    def is_cuda(self) -> bool:
        return False

    def is_pinned(self) -> bool:
        return False

    def to(self, *args, **kwargs) -> "PackedSequence":
        """The data converted by Tensor.to (dtype), the indices unchanged."""
        data = self.data.to(*args, **kwargs)
        return self if data is self.data else self._replace(data=data)

    def float(self) -> "PackedSequence":
        return self._replace(data=self.data.float())

    def double(self) -> "PackedSequence":
        return self._replace(data=self.data.double())

    def cpu(self) -> "PackedSequence":
        return self


def _packed_rows(lengths, batch):
    """For lengths sorted descending: (batch_sizes, the flat (t * batch + b) index of each
    packed row)."""
    steps = lengths[0] if lengths else 0
    sizes = [sum(1 for n in lengths if n > t) for t in range(steps)]
    rows = [t * batch + b for t in range(steps) for b in range(sizes[t])]
    return sizes, rows


def pack_padded_sequence(input: Tensor, lengths: Tensor | Sequence[int],
                         batch_first: bool = False,
                         enforce_sorted: bool = True) -> PackedSequence:
    """Pack a padded batch (T, B, *) (or (B, T, *) with batch_first) of sequences of the
    given lengths into a PackedSequence.

    With enforce_sorted=True the lengths must be in decreasing order; otherwise the batch is
    sorted here and the permutation kept (the RNN's outputs come back in the input's order).

    Example::

        >>> x = torchic.randn(3, 5, 4)          # batch 3, up to 5 steps
        >>> packed = pack_padded_sequence(x, [5, 2, 3], batch_first=True, enforce_sorted=False)
    """
    lens = _host_ints(lengths, "lengths")
    if isinstance(lengths, Tensor) and lengths.ndim != 1:
        raise RuntimeError(f"'lengths' argument should be a 1D tensor, got {lengths.ndim}-D")
    if enforce_sorted:
        if any(a < b for a, b in zip(lens, lens[1:])):
            raise RuntimeError("`lengths` array must be sorted in decreasing order when "
                               "`enforce_sorted` is True. You can pass `enforce_sorted=False` "
                               "to pack_padded_sequence and/or pack_sequence to sidestep this "
                               "requirement if you do not need ONNX exportability.")
        sorted_indices = None
        order = list(range(len(lens)))
    else:
        order = sorted(range(len(lens)), key=lambda i: -lens[i])   # stable, as torch.sort
        sorted_indices = _tensor(np.asarray(order, dtype=np.int64))
    if batch_first:
        input = input.transpose(0, 1)
    steps, batch = input.shape[0], input.shape[1]
    if len(lens) != batch:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got "
                           f"{len(lens)} (batch_size={batch})")
    slens = [lens[i] for i in order]
    if slens and slens[-1] <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an "
                           "element in 'lengths' that is <= 0")
    if slens and slens[0] > steps:
        raise RuntimeError(f"Found a sequence of length {slens[0]} in a padded input of "
                           f"{steps} steps")
    sizes, rows = _packed_rows(slens, batch)
    # packed row (t, j) is padded row (t, order[j])
    idx = [r // batch * batch + order[r % batch] for r in rows]
    flat = input.reshape(steps * batch, *input.shape[2:])
    data = flat[_tensor(np.asarray(idx, dtype=np.int64))]
    return PackedSequence(data, _tensor(np.asarray(sizes, dtype=np.int64)), sorted_indices,
                          invert_permutation(sorted_indices))


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False,
                        padding_value: float = 0.0,
                        total_length: int | None = None) -> tuple[Tensor, Tensor]:
    """Undo pack_padded_sequence: (padded (T, B, *) or (B, T, *), lengths int64 (B,)), the
    batch in the order it had before packing; padded places hold padding_value. total_length
    pads to that many steps (at least the longest sequence)."""
    data, sizes = sequence.data, sequence._sizes()
    steps, batch = len(sizes), (sizes[0] if sizes else 0)
    if total_length is not None:
        if total_length < steps:
            raise ValueError(f"Expected total_length to be at least the length of the longest "
                             f"sequence in input, but got total_length={total_length} and max "
                             f"sequence length being {steps}")
        steps_out = total_length
    else:
        steps_out = steps
    slens = [sum(1 for s in sizes if s > j) for j in range(batch)]
    unsorted = (list(range(batch)) if sequence.unsorted_indices is None
                else _host_ints(sequence.unsorted_indices, "unsorted_indices"))
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    pad_row = int(offsets[-1])
    idx = np.full((steps_out, batch), pad_row, dtype=np.int64)
    for b in range(batch):
        j = unsorted[b]                      # output column b is sorted sequence j
        n = slens[j]
        idx[:n, b] = offsets[:n] + j
    feat = tuple(data.shape[1:])
    padding = full((1, *feat), padding_value, dtype=data.dtype)
    padded = _ops.cat([data, padding], 0)[_tensor(idx.reshape(-1))]
    padded = padded.reshape(steps_out, batch, *feat)
    if batch_first:
        padded = padded.transpose(0, 1)
    lengths = _tensor(np.asarray([slens[unsorted[b]] for b in range(batch)], dtype=np.int64))
    return padded, lengths


def pad_sequence(sequences: Tensor | Sequence[Tensor], batch_first: bool = False,
                 padding_value: float = 0.0, padding_side: str = "right") -> Tensor:
    """Stack tensors of shapes (L_i, *) into one (L_max, B, *) (or (B, L_max, *) with
    batch_first) tensor, padding with padding_value on the right (or the left)."""
    if padding_side not in ("right", "left"):
        raise ValueError(f"Expected padding_side to be one of left or right, but got "
                         f"{padding_side}.")
    if isinstance(sequences, Tensor):
        sequences = list(sequences.unbind(0))
    sequences = list(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    feat = tuple(sequences[0].shape[1:])
    for s in sequences:
        if tuple(s.shape[1:]) != feat:
            raise RuntimeError(f"The size of tensor a ({feat}) must match the size of tensor "
                               f"b ({tuple(s.shape[1:])}) at non-singleton dimension 1")
    lens = [s.shape[0] for s in sequences]
    steps, batch = max(lens), len(sequences)
    total = sum(lens)
    offsets = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
    idx = np.full((batch, steps), total, dtype=np.int64)
    for b, n in enumerate(lens):
        start = 0 if padding_side == "right" else steps - n
        idx[b, start:start + n] = np.arange(offsets[b], offsets[b] + n)
    if not batch_first:
        idx = idx.T
    dtype = sequences[0].dtype
    padding = full((1, *feat), padding_value, dtype=dtype)
    rows = _ops.cat([*(s.to(dtype) for s in sequences), padding], 0)
    return rows[_tensor(np.ascontiguousarray(idx).reshape(-1))].reshape(*idx.shape, *feat)


def unpad_sequence(padded_sequences: Tensor, lengths: Tensor | Sequence[int],
                   batch_first: bool = False) -> list[Tensor]:
    """The list of sequences (L_i, *) cut from a padded batch."""
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    return [padded_sequences[b, :n] for b, n in enumerate(_host_ints(lengths, "lengths"))]


def pack_sequence(sequences: Sequence[Tensor], enforce_sorted: bool = True) -> PackedSequence:
    """Pack a list of tensors (L_i, *) (longest first unless enforce_sorted=False)."""
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths,
                                enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences: PackedSequence) -> list[Tensor]:
    """The list of sequences (L_i, *) in a PackedSequence, in their original order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
