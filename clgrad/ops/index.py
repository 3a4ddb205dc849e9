"""Indexing: x[...] and x[...] = v. Basic indices (ints, slices with steps, None, Ellipsis)
make views; tensor and boolean indices go through the gather/scatter kernels."""
import numbers

import numpy as np

from .. import dtypes
from ..tensor import Tensor
from . import views


def _is_advanced(item):
    return isinstance(item, (Tensor, list, np.ndarray)) and not isinstance(item, bool)


def _normalize(x, index):
    if not isinstance(index, tuple):
        index = (index,)
    items = []
    for it in index:
        if isinstance(it, np.integer):
            it = int(it)
        elif isinstance(it, Tensor) and it._dtype.kind in "iu" and not it._shape and False:
            it = int(it.item())
        items.append(it)
    consumed = 0
    ellipsis = 0
    for it in items:
        if it is Ellipsis:
            ellipsis += 1
        elif it is None or isinstance(it, bool):
            continue
        elif isinstance(it, Tensor) and it._dtype is dtypes.bool_:
            consumed += max(len(it._shape), 1) if it._shape else 0
        elif isinstance(it, np.ndarray) and it.dtype == np.bool_:
            consumed += it.ndim
        else:
            consumed += 1
    if ellipsis > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    nd = len(x._shape)
    if consumed > nd:
        raise IndexError(f"too many indices for tensor of dimension {nd}")
    out = []
    for it in items:
        if it is Ellipsis:
            out.extend([slice(None)] * (nd - consumed))
        else:
            out.append(it)
    return out


def _basic(x, items):
    """Apply the basic part of an index; returns the view and the remaining advanced items with
    the dims they apply to."""
    d = 0
    res = x
    advanced = []
    for it in items:
        if it is None:
            res = views.unsqueeze(res, d)
            d += 1
        elif isinstance(it, bool):
            res = views.unsqueeze(res, d)
            if not it:
                res = views.slice_dim(res, d, 0, 0)
            d += 1
        elif isinstance(it, numbers.Integral) and not isinstance(it, bool):
            n = res._shape[d]
            if not -n <= it < n:
                raise IndexError(f"index {it} is out of bounds for dimension {d} with size {n}")
            res = views.select(res, d, it)
        elif isinstance(it, Tensor) and not it._shape and it._dtype.kind in "iu":
            advanced.append((d, it))
            d += 1
        elif isinstance(it, slice):
            step = 1 if it.step is None else _as_int(it.step)
            if step <= 0:
                raise ValueError("step must be greater than zero")
            res = views.slice_dim(res, d, None if it.start is None else _as_int(it.start),
                                  None if it.stop is None else _as_int(it.stop), step)
            d += 1
        elif _is_advanced(it):
            t = it if isinstance(it, Tensor) else _to_index_tensor(it, x)
            advanced.append((d, t))
            d += len(t._shape) if t._dtype is dtypes.bool_ else 1
        else:
            raise IndexError(f"only integers, slices (`:`), ellipsis (`...`), None and long or "
                             f"byte Variables are valid indices (got {type(it).__name__})")
    return res, advanced


def _as_int(v):
    if isinstance(v, Tensor):
        return int(v.item())
    return int(v.__index__())


def _to_index_tensor(it, ref):
    from .creation import tensor
    arr = np.asarray(it)
    if arr.dtype == np.bool_:
        return tensor(arr, dtype=dtypes.bool_, device=ref.device)
    if arr.size == 0:
        arr = arr.astype(np.int64)
    if arr.dtype.kind not in "iu":
        raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
    return tensor(arr.astype(np.int64), device=ref.device)


def getitem(x, index):
    """x[index] with torch's semantics: a view for basic indices, a gather otherwise."""
    items = _normalize(x, index)
    res, advanced = _basic(x, items)
    if not advanced:
        if res is x:
            res = views.View.apply(x, x._shape, x._strides)
        return res
    return advanced_getitem(res, advanced)


def setitem(x, index, value):
    """x[index] = value (a number or a tensor broadcast to the indexed shape), in place."""
    items = _normalize(x, index)
    res, advanced = _basic(x, items)
    if not advanced:
        if isinstance(value, Tensor):
            res.copy_(value)
        else:
            res.fill_(value)
        return
    advanced_setitem(x, res, advanced, value)


def advanced_getitem(x, advanced):
    raise NotImplementedError("indexing with tensors is not implemented yet")


def advanced_setitem(base, x, advanced, value):
    raise NotImplementedError("assigning through tensor indices is not implemented yet")


FUNCTIONS = {}
METHODS = {"__getitem__": getitem, "__setitem__": setitem}
