"""clgrad: tensors with PyTorch's API and automatic differentiation on any OpenCL device.

>>> import clgrad
>>> x = clgrad.tensor([1.0, 2.0, 3.0], requires_grad=True)
>>> (x * x).sum().backward()
>>> x.grad.tolist()
[2.0, 4.0, 6.0]
"""
from ._version import __version__
from . import dtypes
from .dtypes import (bfloat16, bool_ as bool, can_cast, complex32, complex64, complex128, dtype,
                     finfo, float16, float32, float64, get_default_dtype, iinfo, int8, int16,
                     int32, int64, promote_types, result_type, set_default_dtype, uint8)
from .tensor import Size, Tensor, device
from . import autograd
from .autograd.grad_mode import (enable_grad, inference_mode, is_grad_enabled,
                                 is_inference_mode_enabled, no_grad, set_grad_enabled)
from .autograd.anomaly_mode import (is_anomaly_check_nan_enabled, is_anomaly_enabled,
                                   set_anomaly_enabled)
from . import _face
# the autograd tools on top of the core (extras: they use the ops, now bound), named in
# clgrad.autograd as torch.autograd has them (gradcheck the function); clgrad/autograd/__init__.py
# imports only the core
from .autograd import anomaly_mode as _am, forward_ad, functional, graph, profiler  # noqa: E402,F401
from .autograd import gradcheck as _gc  # noqa: E402
for _v in (_gc.GradcheckError, _gc.gradcheck, _gc.gradgradcheck, _am.detect_anomaly,
           _am.set_detect_anomaly):
    setattr(autograd, _v.__name__, _v)
del _am, _gc, _v, forward_ad, functional, graph, profiler
from . import cl
from . import cuda
from .runtime.memory import OutOfMemoryError  # torch.OutOfMemoryError
from . import backends
from ._legacy import CPU_TYPES as _CPU_TYPES, CUDA_TYPES as _CUDA_TYPES

float = float32
double = float64
half = float16
long = int64
int = int32
short = int16
cfloat = complex64
cdouble = complex128
chalf = complex32

globals().update(_face.FUNCTIONS)
globals().update(_CPU_TYPES)
for _n, _t in _CUDA_TYPES.items():
    setattr(cuda, _n, _t)

_matmul_precision = "highest"


def set_float32_matmul_precision(precision):
    """Accepted as torch's ("highest", "high", "medium"); GEMM accumulates in float32 always.

    >>> import clgrad
    >>> clgrad.set_float32_matmul_precision("high"); clgrad.get_float32_matmul_precision()
    'high'
    """
    global _matmul_precision
    if precision not in ("highest", "high", "medium"):
        raise RuntimeError(f"Invalid precision {precision!r}: expected 'highest', 'high' or "
                           f"'medium'")
    _matmul_precision = precision


def get_float32_matmul_precision():
    return _matmul_precision


def set_default_device(device):
    """Make `device` ("cpu", "cuda:0", "cl:1", a clgrad.device) where tensors go when none is
    named; None restores clgrad's rule (CLGRAD_DEVICE, else the first GPU, else the CPU).

    >>> import clgrad
    >>> clgrad.set_default_device("cpu"); clgrad.zeros(1).device
    device(type='cpu')
    >>> clgrad.set_default_device(None)
    """
    # function-level: keeps the name off the clgrad namespace
    from .runtime import device as _d
    if device is None:
        _d._default_index = None
    else:
        _d.set_default_device(device)


def get_default_device():
    """The device tensors go to when none is named.

    >>> import clgrad
    >>> isinstance(clgrad.get_default_device(), clgrad.device)
    True
    """
    # function-level: keeps the name off the clgrad namespace
    from .runtime.device import default_device
    return device(default_device())


def is_tensor(obj):
    """Whether obj is a clgrad Tensor.

    >>> import clgrad
    >>> clgrad.is_tensor(clgrad.zeros(1)), clgrad.is_tensor([1])
    (True, False)
    """
    return isinstance(obj, Tensor)


def is_floating_point(t):
    return t.is_floating_point()


def numel(t):
    return t.numel()


def broadcast_shapes(*shapes):
    """The shape that tensors of these shapes broadcast to.

    >>> import clgrad
    >>> clgrad.broadcast_shapes((2, 1), (1, 3))
    clgrad.Size([2, 3])
    """
    # function-level: keeps the name off the clgrad namespace
    from .ops._base import broadcast_shapes as _b
    return Size(_b(*[tuple(s) for s in shapes]))


def broadcast_tensors(*tensors):
    shape = broadcast_shapes(*[t.shape for t in tensors])
    return tuple(t.expand(shape) for t in tensors)


# training: modules and losses, optimisers, data loading, checkpoints (they build on the above)
from . import fft, func, linalg, nn, optim, special, testing, utils  # noqa: E402
from .func import vmap  # noqa: E402
from .serialization import load, save  # noqa: E402
# torch's top-level forms of nn.functional ops (ATen's argument lists) and its RNN cell ops
from ._nn_top_level import *  # noqa: E402,F401,F403
from .ops.rnn_step import *  # noqa: E402,F401,F403
# torch's constants, its smaller namespaces and samplers (issue 23)
from math import e, inf, nan, pi  # noqa: E402  (Python floats, as torch's)
from . import _inductor, accelerator, random, version  # noqa: E402
from . import distributions  # noqa: E402  (torch.distributions; uses the namespace above)
from ._sampling import _standard_gamma, _standard_gamma_grad, binomial, poisson  # noqa: E402
# sparse COO tensors, dense-backed (issue 23): torch.sparse, sparse_coo_tensor, the layouts and
# the sparse methods of dense tensors (to_sparse; indices() and the like raise torch's errors)
from . import sparse  # noqa: E402
from .sparse import dsmm, hspmm, smm, spmm  # noqa: E402
from .sparse.coo import DENSE_METHODS as _SPARSE_METHODS, sparse_coo_tensor  # noqa: E402
from .tensor import layout, sparse_coo, strided  # noqa: E402
_SPARSE_METHODS.update(smm=smm, sparse_mask=sparse.sparse_mask)
for _name, _fn in _SPARSE_METHODS.items():
    setattr(Tensor, _name, _fn)
del _name, _fn, _SPARSE_METHODS
# torch.multiprocessing, torch.profiler and torch.onnx (issue 23; onnx's package loads on export)
from . import multiprocessing, onnx, profiler  # noqa: E402
# process-wide settings (threads, print options, determinism)
from ._settings import *  # noqa: E402,F401,F403
# torch's autocast state functions (is_autocast_enabled, set_autocast_dtype, ...)
from .amp.state import *  # noqa: E402,F401,F403

# mixed precision: the first autocast region wraps the listed ops (namespace, Tensor,
# nn.functional)
from . import amp  # noqa: E402
from .amp import autocast  # noqa: E402
cuda.amp = amp                    # torch.cuda.amp.autocast / GradScaler, as in older scripts

# compiled steps: torch.compile's interface over recordings of the device work (issue 20)
from . import compiler  # noqa: E402
from .compiler import compile  # noqa: E402,A001
from . import _dynamo  # noqa: E402  (torch._dynamo.config, reset, mark_dynamic)
from .compiler import _graphs  # noqa: E402
for _ns in (cuda, cl):            # CUDA graphs' names, on every device
    for _name in ("CUDAGraph", "graph", "graph_pool_handle", "is_current_stream_capturing",
                  "make_graphed_callables"):
        setattr(_ns, _name, getattr(_graphs, _name))
del _ns, _name, _graphs
