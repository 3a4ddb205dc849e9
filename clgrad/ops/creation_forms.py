"""torch's creation functions beyond clgrad/ops/creation.py, composed of its ops: `scalar_tensor`,
`asarray` (a tensor itself where it can be, else a copy), the deprecated `range` (end
inclusive), `empty_strided`, `empty_permuted` and `fill` (a new tensor of input's shape, one
value).
"""
import builtins
import math
import warnings

import numpy as np

from .. import dtypes
from ..runtime.device import get_device
from ..tensor import Tensor
from . import creation, views

__all__ = ["scalar_tensor", "asarray", "range", "empty_strided", "empty_permuted", "fill"]


def scalar_tensor(s, *, dtype=None, layout=None, device=None, pin_memory=None,
                  requires_grad=False):
    """A 0-d tensor holding s, of the default float dtype unless dtype says otherwise.

    >>> import clgrad
    >>> t = clgrad.scalar_tensor(3); t.dtype, t.item()
    (clgrad.float32, 3.0)
    """
    if isinstance(s, Tensor):
        s = s.item()
    return creation.tensor(s, dtype=dtype or dtypes.get_default_dtype(), device=device,
                           requires_grad=requires_grad)


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=False):
    """obj as a tensor: a tensor is returned itself when dtype and device already match (copy=True
    forces a copy, copy=False refuses one); other data is copied to the device. OpenCL buffers
    cannot alias host memory, so copy=False on a numpy array or a sequence raises ValueError.

    >>> import clgrad
    >>> t = clgrad.zeros(2); clgrad.asarray(t) is t, clgrad.asarray([1, 2]).dtype
    (True, clgrad.int64)
    """
    if isinstance(obj, Tensor):
        dt = obj.dtype if dtype is None else dtypes.as_dtype(dtype)
        dev = obj._storage.device if device is None else get_device(device)
        if copy is False and dt is not obj.dtype:
            raise ValueError(f"can't alias tensor with dtype {obj.dtype} into dtype {dt}.")
        if copy is False and dev is not obj._storage.device:
            raise ValueError(f"can't alias tensor from device {obj.device} to "
                             f"{dev.torch_name if hasattr(dev, 'torch_name') else device}.")
        out = obj.to(device=device, dtype=dt)
        if copy and out is obj:
            out = views.clone(obj)
        if requires_grad:
            out.requires_grad_(True)
        return out
    if copy is False:
        raise ValueError("can't alias host memory into an OpenCL tensor: clgrad copies data to "
                         "the device (use copy=None or copy=True)")
    if dtype is None and isinstance(obj, np.ndarray) and obj.dtype == np.float64:
        dtype = dtypes.float64                       # numpy's own dtype is kept, as torch's
    return creation.tensor(obj, dtype=dtype, device=device, requires_grad=requires_grad)


def range(start=0, end=None, step=1, *, dtype=None, layout=None, device=None, pin_memory=None,
          requires_grad=False):
    """Deprecated in torch: start, start + step, ... up to end INCLUSIVE, of the default float
    dtype unless dtype says otherwise (use arange, which excludes end).

    >>> import clgrad, warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     clgrad.range(1, 4).tolist()
    [1.0, 2.0, 3.0, 4.0]
    """
    warnings.warn("torch.range is deprecated and will be removed in a future release because its "
                  "behavior is inconsistent with Python's range builtin. Instead, use "
                  "torch.arange, which produces values in [start, end).", UserWarning,
                  stacklevel=2)
    if end is None:
        start, end = 0, start
    if step == 0:
        raise RuntimeError("range: step must be nonzero")
    if (end - start) * step < 0:
        raise RuntimeError(f"range: upper bound and larger bound inconsistent with step sign "
                           f"(start={start}, end={end}, step={step})")
    n = int(math.floor((end - start) / step)) + 1
    dt = dtypes.get_default_dtype() if dtype is None else dtypes.as_dtype(dtype)
    vals = start + step * np.arange(n, dtype=np.float64)
    if dt.kind != "f":
        vals = np.trunc(vals).astype(np.int64) if dt is not dtypes.bool_ else vals != 0
    return creation.tensor(vals, dtype=dt, device=device, requires_grad=requires_grad)


def empty_strided(size, stride, *, dtype=None, layout=None, device=None, requires_grad=False,
                  pin_memory=False):
    """An uninitialised tensor with the given size and stride (over a storage just big enough).

    >>> import clgrad
    >>> clgrad.empty_strided((2, 3), (1, 2)).stride()
    (1, 2)
    """
    size, stride = tuple(size), tuple(stride)
    if len(size) != len(stride):
        raise RuntimeError(f"empty_strided: mismatch in length of strides and shape ({size} "
                           f"and {stride})")
    n = 0 if 0 in size else 1 + sum((s - 1) * st for s, st in zip(size, stride))
    base = creation.empty(n, dtype=dtype, device=device)
    out = views.as_strided(base, size, stride).detach()
    return out.requires_grad_(True) if requires_grad else out


def empty_permuted(size, physical_layout, *, dtype=None, layout=None, device=None,
                   requires_grad=False, pin_memory=False):
    """An uninitialised tensor of `size` whose memory holds its dims in physical_layout order
    (physical_layout[0] outermost).

    >>> import clgrad
    >>> clgrad.empty_permuted((2, 3, 4), (0, 2, 1)).stride()
    (12, 1, 3)
    """
    size, perm = tuple(size), tuple(physical_layout)
    if sorted(perm) != list(builtins.range(len(size))):
        raise RuntimeError(f"empty_permuted: physical_layout {list(perm)} is not a permutation "
                           f"of the {len(size)} dims of size {list(size)}")
    base = creation.empty(*[size[p] for p in perm], dtype=dtype, device=device)
    inv = [perm.index(d) for d in builtins.range(len(size))]
    out = base.permute(*inv)
    return out.requires_grad_(True) if requires_grad else out


def fill(input, value):
    """A new tensor of input's shape, dtype and device, every element value (differentiable in
    a 0-d tensor value; input's gradient is zero).

    >>> import clgrad
    >>> clgrad.fill(clgrad.zeros(2), 3).tolist()
    [3.0, 3.0]
    """
    return views.clone(input).fill_(value)


FUNCTIONS = {n: globals()[n] for n in __all__}
METHODS = {}
