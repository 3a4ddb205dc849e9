"""clgrad.amp: mixed precision as torch.amp: `autocast` (also clgrad.autocast) and GradScaler.

Inside `with clgrad.autocast(device_type, dtype)`, each op on the autocast lists casts its
floating-point tensor arguments at dispatch: ops on the lower-precision list (matmul, linear,
conv, bmm, addmm, baddbmm, ...) run in float16 / bfloat16, ops on the float32 list (softmax,
log_softmax, losses, norms, exp, log, pow, sum, ...) run in float32, and ops on the promote list
(cat, stack, ...) run in the widest input type. The lists follow torch's for the device type:
"cuda" (GPU OpenCL devices; float16 by default) and "cpu" (the CPU OpenCL device; bfloat16 by
default). Only tensors on a device of that type are cast. Casts are ordinary differentiable ops,
so the gradients of float32 parameters arrive in float32; a parameter cast once in a region is
reused from a cache for the rest of the region (cache_enabled).

>>> import clgrad
>>> lin = clgrad.nn.Linear(4, 2).to("cpu")
>>> x = clgrad.randn(3, 4, device="cpu")
>>> with clgrad.autocast("cpu", dtype=clgrad.bfloat16):
...     y = lin(x)
...     loss = clgrad.nn.functional.mse_loss(y, clgrad.zeros(3, 2, device="cpu"))
>>> y.dtype, loss.dtype
(clgrad.bfloat16, clgrad.float32)
"""
from .autocast_mode import (autocast, custom_bwd, custom_fwd, get_autocast_dtype,
                            is_autocast_available, is_autocast_enabled)
from .grad_scaler import GradScaler

__all__ = ["autocast", "custom_fwd", "custom_bwd", "is_autocast_enabled", "get_autocast_dtype",
           "is_autocast_available", "GradScaler"]
