"""torch.utils under torchic: `data` (datasets, samplers, DataLoader) and, when the
`tensorboard` package is installed, `tensorboard` (SummaryWriter; imported on demand)."""

from . import data  # noqa: F401
