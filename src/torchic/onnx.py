"""``torch.onnx`` under torchic: importable (scripts import it at the top), but exporting is
not supported: ``export`` raises NotImplementedError saying so."""

from typing import Any


def export(model: Any, args: Any = (), f: Any = None, *rest: Any, **kwargs: Any) -> None:
    """Not supported: raises NotImplementedError (torchic has no ONNX exporter)."""
    raise NotImplementedError("torchic.onnx.export: torchic cannot export ONNX models; save the "
                              "weights with torchic.save(model.state_dict(), path) and export "
                              "from PyTorch, which loads that file")


def is_in_onnx_export() -> bool:
    """False: no export is ever running."""
    return False
