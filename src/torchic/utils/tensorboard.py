"""torch.utils.tensorboard under torchic: SummaryWriter over the `tensorboard` package.

A thin wrapper: the event files are written by tensorboard's own EventFileWriter and its
protos, so TensorBoard (and its EventAccumulator) reads them as it reads PyTorch's.
torchic tensors (0-d or not) are read back to Python numbers / NumPy arrays first.
`tensorboard` is optional (pip install tensorboard, or the `tensorboard` extra); importing
this module without it raises ImportError saying so.
"""

import os
from typing import Any
import socket
import time

import numpy as np

from ..tensor import Tensor

try:
    from tensorboard.compat.proto.event_pb2 import Event
    from tensorboard.compat.proto.summary_pb2 import HistogramProto, Summary
    from tensorboard.plugins.text.summary_v2 import text_pb
    from tensorboard.summary.writer.event_file_writer import EventFileWriter
except ImportError as e:      # (ModuleNotFoundError is an ImportError)
    raise ImportError("torchic.utils.tensorboard needs the `tensorboard` package: "
                      "pip install tensorboard") from e

__all__ = ["SummaryWriter"]


def _number(value, what):
    """A torchic tensor of one element, a NumPy scalar or a Python number -> float."""
    if isinstance(value, Tensor):
        if value.numel() != 1:
            raise ValueError(f"{what}: a scalar needs a tensor of one element, got shape "
                             f"{list(value.shape)}")
        return float(value.item())
    return float(np.asarray(value).reshape(()))


def _array(values):
    if isinstance(values, Tensor):
        return values.detach().numpy().astype(np.float64).ravel()
    return np.asarray(values, dtype=np.float64).ravel()


class SummaryWriter:
    """PyTorch's SummaryWriter: add_scalar, add_scalars, add_histogram, add_text, flush,
    close; a context manager. log_dir defaults to runs/<date>_<host><comment>."""

    def __init__(self, log_dir: str | None = None, comment: str = "",
                 purge_step: int | None = None, max_queue: int = 10, flush_secs: int = 120,
                 filename_suffix: str = "") -> None:
        if not log_dir:
            stamp = time.strftime("%b%d_%H-%M-%S")
            log_dir = os.path.join("runs", f"{stamp}_{socket.gethostname()}{comment}")
        self.log_dir = str(log_dir)
        self._options = dict(max_queue_size=max_queue, flush_secs=flush_secs,
                             filename_suffix=filename_suffix)
        self._writer = EventFileWriter(self.log_dir, **self._options)
        self._scalar_writers = {}       # add_scalars: one writer per run subdirectory

    def get_logdir(self) -> str:
        """The directory the event files are written to."""
        return self.log_dir

    def _add(self, summary, global_step, walltime, writer=None):
        event = Event(summary=summary, wall_time=time.time() if walltime is None else walltime)
        if global_step is not None:
            event.step = int(_number(global_step, "global_step"))
        (writer or self._writer).add_event(event)

    def add_scalar(self, tag: str, scalar_value: float | Tensor, global_step: int | None = None,
                   walltime: float | None = None, new_style: bool = False,
                   double_precision: bool = False) -> None:
        """Log one number (a Python number or a one-element tensor) under `tag` at step
        `global_step`; TensorBoard plots a tag's values against the steps."""
        value = _number(scalar_value, f"add_scalar({tag!r})")
        self._add(Summary(value=[Summary.Value(tag=tag, simple_value=value)]), global_step,
                  walltime)

    def add_scalars(self, main_tag: str, tag_scalar_dict: dict[str, Any],
                    global_step: int | None = None, walltime: float | None = None) -> None:
        """Each tag goes to its own run, log_dir/<main_tag>_<tag>, under the tag main_tag
        (how PyTorch lays them out, so TensorBoard draws them on one chart)."""
        for tag, scalar in tag_scalar_dict.items():
            run = os.path.join(self.log_dir, f"{main_tag.replace('/', '_')}_{tag}")
            writer = self._scalar_writers.get(run)
            if writer is None:
                writer = self._scalar_writers[run] = EventFileWriter(run, **self._options)
            value = _number(scalar, f"add_scalars({main_tag!r})[{tag!r}]")
            self._add(Summary(value=[Summary.Value(tag=main_tag, simple_value=value)]),
                      global_step, walltime, writer)

    def add_histogram(self, tag: str, values: Any, global_step: int | None = None,
                      bins: Any = "tensorflow", walltime: float | None = None,
                      max_bins: int | None = None) -> None:
        """A histogram of the values (np.histogram's bins; "tensorflow", PyTorch's default,
        is taken as NumPy's "auto" rule here)."""
        data = _array(values)
        if data.size == 0:
            raise ValueError("The input has no element.")
        counts, edges = np.histogram(data, bins="auto" if bins == "tensorflow" else bins)
        proto = HistogramProto(min=float(data.min()), max=float(data.max()), num=data.size,
                               sum=float(data.sum()), sum_squares=float(data @ data),
                               bucket_limit=edges[1:].tolist(), bucket=counts.tolist())
        self._add(Summary(value=[Summary.Value(tag=tag, histo=proto)]), global_step,
                  walltime)

    def add_text(self, tag: str, text_string: str, global_step: int | None = None,
                 walltime: float | None = None) -> None:
        """Log a string (markdown) under `tag` at step `global_step`."""
        self._add(text_pb(tag, text_string), global_step, walltime)

    def flush(self) -> None:
        """Write the pending events to disk."""
        self._writer.flush()
        for writer in self._scalar_writers.values():
            writer.flush()

    def close(self) -> None:
        """Flush and close the event files."""
        self._writer.close()
        for writer in self._scalar_writers.values():
            writer.close()
        self._scalar_writers = {}

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
