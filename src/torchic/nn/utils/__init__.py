"""torchic.nn.utils: gradient clipping (torch.nn.utils.clip_grad_norm_ / clip_grad_value_)."""

from . import rnn  # recurrent layers: PackedSequence and friends
from .clip_grad import clip_grad_norm_, clip_grad_value_, get_total_norm

__all__ = ["clip_grad_norm_", "clip_grad_value_", "get_total_norm", "rnn"]
