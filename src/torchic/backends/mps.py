"""torch.backends.mps under torchic: no MPS device (the GPU is the webgpu backend's)."""


def is_available():
    return False


def is_built():
    return False
