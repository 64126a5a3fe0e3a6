"""torch.nn.modules.channelshuffle: ChannelShuffle (torchic.nn's classes)."""

from ..misc_layers import (ChannelShuffle)  # noqa: F401
