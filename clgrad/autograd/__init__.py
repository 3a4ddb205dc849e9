"""clgrad.autograd: reverse-mode automatic differentiation with torch.autograd's API.

This package holds the autograd core and imports only it. The tools on top of the core
(anomaly_mode, forward_ad, functional, gradcheck, graph, profiler: the extras layer, which use the
ops) are imported by clgrad/__init__.py once the ops are bound, which binds their names into this
namespace as torch.autograd has them, so that importing the core never runs the ops layer above it.
"""
from . import grad_mode
from .engine import backward, grad
from .function import Function, FunctionCtx, once_differentiable, InplaceFunction, NestedIOFunction
from .grad_mode import (enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled,
                        no_grad, set_grad_enabled, set_multithreading_enabled)
from . import function


def Variable(data, requires_grad=False, volatile=False):
    """Deprecated wrapper kept for old code: returns the tensor itself (requiring grad when
    asked).

    >>> import clgrad
    >>> v = clgrad.autograd.Variable(clgrad.ones(2), requires_grad=True)
    >>> type(v).__name__, v.requires_grad
    ('Tensor', True)
    """
    if requires_grad:
        data.requires_grad_(True)
    return data


__all__ = ["backward", "grad", "Function", "FunctionCtx", "once_differentiable", "no_grad",
           "enable_grad", "set_grad_enabled", "inference_mode", "is_grad_enabled",
           "is_inference_mode_enabled", "Variable", "function", "grad_mode", "gradcheck",
           "gradgradcheck", "GradcheckError", "set_multithreading_enabled", "anomaly_mode",
           "detect_anomaly", "set_detect_anomaly", "forward_ad", "functional", "graph",
           "profiler"]
