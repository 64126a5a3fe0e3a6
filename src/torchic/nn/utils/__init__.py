"""torchic.nn.utils: gradient clipping (torch.nn.utils.clip_grad_norm_ / clip_grad_value_),
parameters_to_vector / vector_to_parameters."""

from . import rnn  # recurrent layers: PackedSequence and friends
from .clip_grad import clip_grad_norm_, clip_grad_value_, get_total_norm
from .convert_parameters import parameters_to_vector, vector_to_parameters

__all__ = ["clip_grad_norm_", "clip_grad_value_", "get_total_norm", "parameters_to_vector",
           "vector_to_parameters", "rnn"]
