"""x[index] and x[index] = value with torch's semantics, and index_put / index_put_.

Basic indices (ints, slices, None, Ellipsis) make views. Integer and boolean tensors (lists,
numpy arrays) are advanced indices: a boolean mask becomes its nonzero coordinates, the index
tensors broadcast together and are bounds checked (one host sync), and the result is the Index
gather (clgrad/ops/index.py) or, for writes, the IndexPut scatter.
"""
import numbers

import numpy as np

from .. import dtypes
from ..autograd.views import check_inplace_allowed
from ..kernels.index import first_bad, nonzero_raw
from ..tensor import Tensor, numel_of
from . import views
from ._base import (broadcast_shapes, cast_raw, copy_into, full_raw, same_device, size_repr,
                    view_raw)
from .index import Index, IndexPut, _apply_, _columns, _tname, advanced_geometry
from .copies import to_device_raw
from .creation import tensor
from .elementwise import TABLE, run
from .inplace import _records


# ---- x[index] and x[index] = value ---------------------------------------------------------------
_BAD_INDEX = ("only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are "
              "valid indices (got {})")


def _treat_as_tuple(index):
    """torch's (and old numpy's) rule: a short list holding sequences, slices, Ellipsis or None
    is a tuple of indices, not one index."""
    if not isinstance(index, (list, np.ndarray)) or len(index) >= 32:
        return False
    if isinstance(index, np.ndarray):
        return index.ndim > 1 and index.dtype != object
    return any(isinstance(i, (Tensor, list, tuple, np.ndarray, slice)) or i is None or
               i is Ellipsis for i in index)


def _convert(item, x):
    """One index item as: None, Ellipsis, bool, int, slice, or a Tensor (int64 or bool)."""
    if item is None or item is Ellipsis or isinstance(item, (bool, slice)):
        return item
    if isinstance(item, np.bool_):
        return bool(item)
    if isinstance(item, numbers.Integral):
        return int(item)
    if isinstance(item, Tensor):
        if item._dtype.kind in "fc":
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        if not item._shape:              # a 0-d tensor indexes like a number (one host read)
            return bool(item.item()) if item._dtype.kind == "b" else int(item.item())
        if item._dtype is dtypes.uint8:
            return item.to(dtypes.bool_)     # byte masks, as torch still accepts them
        return item
    if isinstance(item, np.ndarray) and item.ndim == 0 and item.dtype.kind in "biu":
        return item.item()                   # a 0-d array indexes like a number, as in torch
    if isinstance(item, (list, tuple, np.ndarray)):
        arr = np.asarray(item)
        if arr.dtype == np.bool_:
            return tensor(arr, dtype=dtypes.bool_, device=x.device)
        if arr.size == 0:
            arr = arr.astype(np.int64)
        if arr.dtype.kind not in "iu":
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        return tensor(arr.astype(np.int64), device=x.device)
    if hasattr(item, "__index__"):
        return item.__index__()
    raise IndexError(_BAD_INDEX.format(type(item).__name__))


def _items(x, index):
    """The index as a list of converted items, Ellipsis expanded to full slices."""
    raw = list(index) if isinstance(index, tuple) or _treat_as_tuple(index) else [index]
    items = [_convert(i, x) for i in raw]
    used = 0
    for it in items:
        if isinstance(it, Tensor):
            used += len(it._shape) if it._dtype is dtypes.bool_ else 1
        elif isinstance(it, (int, slice)) and not isinstance(it, bool):
            used += 1
    if sum(1 for it in items if it is Ellipsis) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    nd = len(x._shape)
    if used > nd:
        raise IndexError(f"too many indices for tensor of dimension {nd}")
    out = []
    for it in items:
        if it is Ellipsis:
            out.extend([slice(None)] * (nd - used))
        else:
            out.append(it)
    return out


def _as_int(v):
    if isinstance(v, Tensor):
        return int(v.item())
    return int(v.__index__())


def _basic(x, items):
    """Apply the basic items as views; return the view and the advanced items as (dim, tensor)
    over it (a bool mask covers as many dims as it has). A Python bool (or 0-d bool tensor)
    is torch's: a new dim of size 1, indexed by the advanced index [0] (True) or [] (False), so
    it broadcasts with the other index tensors (x[True, idx] has idx's shape) and makes a copy."""
    res, d, advanced = x, 0, []
    for it in items:
        if it is None or isinstance(it, bool):
            res = views.unsqueeze(res, d)
            if it is not None:
                advanced.append((d, full_raw((1,) if it else (0,), 0, dtypes.int64,
                                             x._storage.device)))
            d += 1
        elif isinstance(it, int):
            n = res._shape[d]
            if not -n <= it < n:
                raise IndexError(f"index {it} is out of bounds for dimension {d} with size {n}")
            res = views.select(res, d, it)
        elif isinstance(it, slice):
            step = 1 if it.step is None else _as_int(it.step)
            if step <= 0:
                raise ValueError("step must be greater than zero")
            start = None if it.start is None else _as_int(it.start)
            stop = None if it.stop is None else _as_int(it.stop)
            if (start, stop, step) != (None, None, 1):      # a full slice changes nothing
                res = views.slice_dim(res, d, start, stop, step)
            d += 1
        else:
            advanced.append((d, it))
            d += len(it._shape) if it._dtype is dtypes.bool_ else 1
    return res, advanced


def _check_masks(x, advanced):
    for d, t in advanced:
        if t._dtype is dtypes.bool_:
            for j, n in enumerate(t._shape):
                if d + j >= len(x._shape) or x._shape[d + j] != n:
                    raise IndexError(f"The shape of the mask {size_repr(t._shape)} at index {j} "
                                     f"does not match the shape of the indexed tensor "
                                     f"{size_repr(x._shape)} at index {d + j}")


def _resolve(x, advanced, deferred=False):
    """Turn the advanced items over view x into (dims, int64 index tensors): masks become their
    nonzero coordinates; shapes are broadcast and bounds checked (deferred: the check is
    returned as a third item, to run later, as torch's index_put_ checks the values' shape
    first)."""
    # index tensors on another device are moved to x's: torch takes CPU indices for a CUDA
    # tensor, and a ported program's indices may be on clgrad's default device (a GPU) while x
    # is on "cpu" (LongTensor([...]) indexing x.cpu())
    dev = x._storage.device
    advanced = [(d, t if t._storage.device is dev else to_device_raw(t, dev))
                for d, t in advanced]
    _check_masks(x, advanced)
    dims, idx, checks = [], [], []
    for d, t in advanced:
        if t._dtype is dtypes.bool_:         # a mask gives coordinates in bounds
            for j, c in enumerate(_columns(nonzero_raw(t))):
                dims.append(d + j)
                idx.append(c)
        else:
            dims.append(d)
            idx.append(cast_raw(t, dtypes.int64))
            checks.append((idx[-1], -x._shape[d], x._shape[d]))
    try:
        shape = broadcast_shapes(*[t._shape for t in idx])
    except RuntimeError:
        raise IndexError(f"shape mismatch: indexing tensors could not be broadcast together with "
                         f"shapes {', '.join(size_repr(t._shape) for t in idx)}") from None
    # torch's rules: a dim of size 0 indexed by a non-empty (broadcast) index raises at once;
    # otherwise the bounds are checked only where the result has elements
    n = numel_of(shape)
    for d in dims:
        if n and x._shape[d] == 0:
            raise IndexError(f"index is out of bounds for dimension {d} with size 0 (indices "
                             f"of shape {size_repr(shape)})")
    n *= numel_of(tuple(m for d, m in enumerate(x._shape) if d not in dims))

    def check():
        if not n:
            return
        bad = first_bad(checks)
        if bad is not None:
            t = checks[bad[0]][0]
            d = dims[next(i for i, u in enumerate(idx) if u is t)]
            raise IndexError(f"index {bad[1]} is out of bounds for dimension {d} with size "
                             f"{x._shape[d]}")
    if deferred:
        return tuple(dims), idx, check
    check()
    return tuple(dims), idx


def getitem(x, index):
    """x[index] with torch's semantics: ints, slices, None and Ellipsis make a view; integer and
    boolean tensors (lists, numpy arrays) gather. Several index tensors broadcast together; their
    result dims replace the indexed dims when those are adjacent, else they come first.

    >>> import clgrad
    >>> x = clgrad.arange(12).view(3, 4)
    >>> x[[0, 2], 1:3].tolist(), x[x > 9].tolist(), x[[0, 2], [1, 3]].tolist()
    ([[1, 2], [9, 10]], [10, 11], [1, 11])
    """
    res, advanced = _basic(x, _items(x, index))
    if not advanced:
        return views.View.apply(x, x._shape, x._strides) if res is x else res
    dims, idx = _resolve(res, advanced)
    return Index.apply(res, dims, *idx)


def _values(x, value, advanced, op="index_put_"):
    """value as a tensor for writing into x: numbers take x's dtype; tensors must have it, except
    a one-element value written through a single boolean mask (torch's masked_fill path)."""
    if not isinstance(value, Tensor):
        if isinstance(value, (numbers.Number, np.generic)):
            return full_raw((), value, x._dtype, x._storage.device)
        raise TypeError(f"can't assign a {type(value).__name__} to a "
                        f"clgrad.{_tname(x)}Tensor")
    if value._dtype is not x._dtype:
        if len(advanced) == 1 and advanced[0][1]._dtype is dtypes.bool_ and value.numel() == 1:
            return value.to(x._dtype)
        raise RuntimeError(f"Index put requires the source and destination dtypes match, got "
                           f"{_tname(x)} for the destination and "
                           f"{_tname(value)} for the source.")
    return value


def _fit_values(values, shape):
    """Drop leading 1s of values' shape and check it broadcasts to the indexing result."""
    vs = values._shape
    while len(vs) > len(shape) and vs[0] == 1:
        vs = vs[1:]
    try:
        if broadcast_shapes(vs, shape) != tuple(shape):
            raise RuntimeError
    except RuntimeError:
        raise RuntimeError(f"shape mismatch: value tensor of shape {size_repr(values._shape)} "
                           f"cannot be broadcast to indexing result of shape "
                           f"{size_repr(shape)}") from None
    return values if vs == values._shape else values.reshape(vs)


def _put(x, advanced, value, accumulate):
    """x[advanced] = value (or +=), in place, through autograd's in-place machinery."""
    d, mask = advanced[0]
    single_mask = len(advanced) == 1 and mask._dtype is dtypes.bool_
    if not single_mask:               # torch: the indices' shapes before the values' dtype
        resolved = _resolve(x, advanced, deferred=True)
    _check_masks(x, advanced)         # torch: the mask's shape before the values' dtype
    values = _values(x, value, advanced)
    if single_mask and values.numel() == 1 and not accumulate and not _records(x, (values,)):
        # x[mask] = one value: an elementwise where, no nonzero and no host sync
        check_inplace_allowed(x)
        same_device("index_put_", [x, mask])
        mshape = mask._shape + (1,) * (len(x._shape) - d - len(mask._shape))
        m = view_raw(mask, mshape, mask._strides + (1,) * (len(mshape) - len(mask._shape)),
                     mask._offset)
        v = view_raw(values, (), (), values._offset)
        if x._contig:
            run(TABLE["where"], (m, v, x), out=x, cdt=x._dtype)
        else:
            copy_into(x, run(TABLE["where"], (m, v, x)))
        x._vc[0] += 1
        return x
    dims, idx, check = _resolve(x, advanced, deferred=True) if single_mask else resolved
    shape = advanced_geometry(x._shape, x._strides, dims, idx)[0]
    values = _fit_values(values, shape)
    check()                           # torch: the values' shape before the indices' bounds
    return _apply_(IndexPut, x, (values, dims, bool(accumulate)) + tuple(idx), "index_put_")


def setitem(x, index, value):
    """x[index] = value, in place: value (a number or a tensor) broadcasts to the indexed shape.
    Basic indices write through a view; tensor indices scatter (duplicates: one of the values
    wins). Recorded by autograd like any in-place op.

    >>> import clgrad
    >>> x = clgrad.zeros(2, 3)
    >>> x[[0, 1], [2, 0]] = 5
    >>> x[x == 0] = clgrad.tensor(1.0)
    >>> x.tolist()
    [[1.0, 1.0, 5.0], [5.0, 1.0, 1.0]]
    """
    res, advanced = _basic(x, _items(x, index))
    if advanced:
        _put(res, advanced, value, False)
    elif isinstance(value, Tensor):
        # torch drops the value's leading size-1 dims first: x[0] = ones(1) is fine
        k = 0
        while len(value._shape) - k > len(res._shape) and value._shape[k] == 1:
            k += 1
        res.copy_(value.reshape(value._shape[k:]) if k else value)
    elif isinstance(value, (numbers.Number, np.generic)):
        res.fill_(value)
    else:
        raise TypeError(f"can't assign a {type(value).__name__} to a "
                        f"clgrad.{_tname(x)}Tensor")


def _put_items(x, indices, values):
    if not isinstance(values, Tensor):
        raise TypeError(f"index_put(): argument 'values' (position 2) must be Tensor, not "
                        f"{type(values).__name__}")
    indices = list(indices)
    advanced, d = [], 0
    for i, t in enumerate(indices):
        if not isinstance(t, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got "
                            f"{type(t).__name__}")
        if t._dtype.kind in "fc":
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        if t._dtype is dtypes.uint8:
            t = t.to(dtypes.bool_)
        advanced.append((d, t))
        d += len(t._shape) if t._dtype is dtypes.bool_ else 1
    if d > len(x._shape):
        raise IndexError(f"too many indices for tensor of dimension {len(x._shape)} (got {d})")
    return advanced


def index_put_(self, indices, values, accumulate=False):
    """self[indices] = values in place; with accumulate=True duplicates add up.

    >>> import clgrad
    >>> x = clgrad.zeros(3)
    >>> x.index_put_((clgrad.tensor([0, 0, 2]),), clgrad.tensor(1.0), accumulate=True).tolist()
    [2.0, 0.0, 1.0]
    """
    advanced = _put_items(self, indices, values)
    if not advanced:
        return self.copy_(values) if not accumulate else self.add_(values)
    return _put(self, advanced, values, accumulate)


def index_put(input, indices, values, accumulate=False):
    """Out-of-place index_put_: a copy of input with values written (or added) at indices.

    >>> import clgrad
    >>> clgrad.zeros(3).index_put((clgrad.tensor([1]),), clgrad.tensor(7.0)).tolist()
    [0.0, 7.0, 0.0]
    """
    advanced = _put_items(input, indices, values)
    if not advanced:
        values = _values(input, values, advanced)
        return views.clone(input) + values if accumulate else \
            views.clone(input).copy_(values)
    dims, idx, check = _resolve(input, advanced, deferred=True)
    values = _values(input, values, advanced)      # torch: after the indices' shapes
    shape = advanced_geometry(input._shape, input._strides, dims, idx)[0]
    values = _fit_values(values, shape)
    check()
    return IndexPut.apply(input, values, dims, bool(accumulate), *idx)


FUNCTIONS = {"index_put": index_put, "index_put_": index_put_}
METHODS = dict(FUNCTIONS)
METHODS.update({"__getitem__": getitem, "__setitem__": setitem})
