"""torchic.autograd: PyTorch's torch.autograd.

The engine (engine.py: Primitive, the nodes torchic's ops record, and the backward pass),
user-defined ops (function.py: Function, FunctionCtx, once_differentiable), hooks and
anomaly detection (hooks.py), and the entry points programs call: `backward`, `grad`.
`functional` (jacobian, hessian, vjp, jvp, hvp, vhp) and `graph` are submodules loaded by
torchic itself (functional uses op functions above this layer); `gradcheck` /
`gradgradcheck` (gradcheck.py) are the functions, as in torch.autograd.
"""

from ..grad_mode import (enable_grad as enable_grad, inference_mode as inference_mode,
                         is_grad_enabled as is_grad_enabled,
                         is_inference_mode_enabled as is_inference_mode_enabled,
                         no_grad as no_grad, set_grad_enabled as set_grad_enabled)
from .engine import (AccumulateGrad as AccumulateGrad, Primitive as Primitive,
                     _topological_order as _topological_order, create_graph_on as create_graph_on,
                     run_backward as run_backward, zero_grads as zero_grads)
from .grad_sum import LazyGrad as LazyGrad, _GradSum as _GradSum
from .hooks import (RemovableHandle as RemovableHandle, detect_anomaly as detect_anomaly,
                    is_anomaly_check_nan_enabled as is_anomaly_check_nan_enabled,
                    is_anomaly_enabled as is_anomaly_enabled, register_hook as register_hook,
                    register_post_accumulate_grad_hook as register_post_accumulate_grad_hook,
                    set_detect_anomaly as set_detect_anomaly)
from . import function as function
from .function import (Function as Function, FunctionCtx as FunctionCtx,
                       InplaceFunction as InplaceFunction,
                       once_differentiable as once_differentiable)
from .api import backward as backward, grad as grad
from .gradcheck import gradcheck as gradcheck, gradgradcheck as gradgradcheck
from .variable import Variable as Variable
