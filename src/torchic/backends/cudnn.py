"""torch.backends.cudnn under torchic: no cuDNN. The flags scripts set (benchmark,
deterministic) are plain attributes that change nothing: torchic's kernels do not autotune
and run the same way every time."""

enabled = True
benchmark = False
deterministic = False
allow_tf32 = True


def is_available():
    return False


def version():
    return None
