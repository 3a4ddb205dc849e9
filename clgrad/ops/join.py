"""Joining: cat and stack (one strided copy per input into the matching slice of the result; their
gradients are those slices of the incoming gradient) and the numpy-style stackers built on them.

Inputs of different dtypes are promoted together as torch does (promote_types over all of them),
and the copies cast on the way."""
import functools

from .. import dtypes
from ..autograd.op import Op
from ..tensor import Tensor, empty_tensor
from . import views
from ._base import copy_into, full_raw, same_device, size_repr, view_raw
from .index import linear_jvp


def _tensor_list(op, tensors):
    if isinstance(tensors, Tensor) or not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{op}(): argument 'tensors' (position 1) must be tuple of Tensors, not "
                        f"{type(tensors).__name__}")
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got "
                            f"{type(t).__name__}")
    return list(tensors)


def _result_dtype(tensors):
    return functools.reduce(dtypes.promote_types, (t._dtype for t in tensors))


def _legacy_empty(t):
    """A 1-d tensor of size 0: torch's cat skips it whatever the other tensors' shapes."""
    return t._shape == (0,)


class Cat(Op):
    _linear, _constants = None, ()          # forward mode: cat of the tangents
    jvp = classmethod(linear_jvp)

    @staticmethod
    def forward(ctx, dim, *tensors):
        parts = [t for t in tensors if not _legacy_empty(t)]
        dt = _result_dtype(tensors)
        dev = tensors[0]._storage.device
        if not parts:
            ctx.sizes = [None] * len(tensors)
            return empty_tensor((0,), dt, dev)
        shape = list(parts[0]._shape)
        shape[dim] = sum(t._shape[dim] for t in parts)
        out = empty_tensor(tuple(shape), dt, dev)
        start = 0
        for t in parts:
            n = t._shape[dim]
            copy_into(view_raw(out, t._shape, out._strides, start * out._strides[dim]), t)
            start += n
        ctx.dim = dim
        ctx.sizes = [None if _legacy_empty(t) else t._shape[dim] for t in tensors]
        return out

    @staticmethod
    def backward(ctx, g):
        grads, start = [], 0
        for n, (shape, dt, dev) in zip(ctx.sizes, ctx._in_meta):
            if n is None:                    # a skipped 1-d empty input
                grads.append(full_raw(shape, 0, g._dtype, dev))
                continue
            grads.append(views.narrow(g, ctx.dim, start, n))
            start += n
        return (None,) + tuple(grads)


def cat(tensors, dim=0, *, out=None):
    """Join tensors along an existing dim; all other sizes must match (1-d empty tensors are
    skipped). Mixed dtypes are promoted.

    >>> import clgrad
    >>> clgrad.cat([clgrad.zeros(1, 2), clgrad.ones(2, 2, dtype=clgrad.int32)]).tolist()
    [[0.0, 0.0], [1.0, 1.0], [1.0, 1.0]]
    """
    tensors = _tensor_list("cat", tensors)
    if not tensors:
        raise ValueError("torch.cat(): expected a non-empty list of Tensors")
    same_device("cat", tensors)
    for i, t in enumerate(tensors):
        if not t._shape:
            raise RuntimeError(f"zero-dimensional tensor (at position {i}) cannot be concatenated")
    parts = [(i, t) for i, t in enumerate(tensors) if not _legacy_empty(t)]
    d = 0
    if parts:
        i0, ref = parts[0]
        d = views._wrap(dim, len(ref._shape))
        for i, t in parts[1:]:
            if len(t._shape) != len(ref._shape):
                raise RuntimeError(f"Tensors must have same number of dimensions: got "
                                   f"{len(ref._shape)} and {len(t._shape)}")
            for k, (a, b) in enumerate(zip(ref._shape, t._shape)):
                if k != d and a != b:
                    raise RuntimeError(f"Sizes of tensors must match except in dimension {d}. "
                                       f"Expected size {a} but got size {b} for tensor number {i} "
                                       f"in the list.")
    res = Cat.apply(d, *tensors)
    if out is not None:
        return out.copy_(res)
    return res


concat = concatenate = cat


class Stack(Op):
    _linear, _constants = None, ()
    jvp = classmethod(linear_jvp)

    @staticmethod
    def forward(ctx, dim, *tensors):
        ref = tensors[0]
        shape = ref._shape[:dim] + (len(tensors),) + ref._shape[dim:]
        out = empty_tensor(shape, _result_dtype(tensors), ref._storage.device)
        st = out._strides
        piece_st = st[:dim] + st[dim + 1:]
        for i, t in enumerate(tensors):
            copy_into(view_raw(out, ref._shape, piece_st, i * st[dim]), t)
        ctx.dim = dim
        return out

    @staticmethod
    def backward(ctx, g):
        return (None,) + tuple(views.select(g, ctx.dim, i) for i in range(len(ctx._in_meta)))


def stack(tensors, dim=0, *, out=None):
    """Join same-shaped tensors along a new dim.

    >>> import clgrad
    >>> clgrad.stack([clgrad.zeros(2), clgrad.ones(2)], 1).tolist()
    [[0.0, 1.0], [0.0, 1.0]]
    """
    tensors = _tensor_list("stack", tensors)
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    same_device("stack", tensors)
    shape = tensors[0]._shape
    for i, t in enumerate(tensors):
        if t._shape != shape:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got "
                               f"{size_repr(shape)} at entry 0 and {size_repr(t._shape)} at entry "
                               f"{i}")
    res = Stack.apply(views._wrap(dim, len(shape) + 1), *tensors)
    if out is not None:
        return out.copy_(res)
    return res


def _atleast(n, tensors):
    """Each tensor with at least n dims (n <= 3), the way numpy's atleast_Nd adds them."""
    res = []
    for t in tensors:
        nd = len(t._shape)
        if nd >= n:
            res.append(t)
        elif n == 3 and nd == 2:
            res.append(views.unsqueeze(t, 2))
        elif n == 3 and nd == 1:
            res.append(views.reshape(t, (1, t._shape[0], 1)))
        else:
            res.append(views.reshape(t, (1,) * (n - nd) + t._shape))
    return res


def _atleast_public(n, tensors):
    if len(tensors) == 1 and isinstance(tensors[0], Tensor):
        return _atleast(n, tensors)[0]
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    return tuple(_atleast(n, tensors))


def atleast_1d(*tensors):
    """Each tensor with at least 1 dim (0-d ones become shape [1]).

    >>> import clgrad
    >>> clgrad.atleast_1d(clgrad.tensor(1.0)).shape
    clgrad.Size([1])
    """
    return _atleast_public(1, tensors)


def atleast_2d(*tensors):
    """Each tensor with at least 2 dims (1-d ones become a row).

    >>> import clgrad
    >>> clgrad.atleast_2d(clgrad.zeros(3)).shape
    clgrad.Size([1, 3])
    """
    return _atleast_public(2, tensors)


def atleast_3d(*tensors):
    """Each tensor with at least 3 dims: [n] becomes [1, n, 1] and [m, n] becomes [m, n, 1].

    >>> import clgrad
    >>> clgrad.atleast_3d(clgrad.zeros(2, 3)).shape
    clgrad.Size([2, 3, 1])
    """
    return _atleast_public(3, tensors)


def _nonempty(op, tensors):
    tensors = _tensor_list(op, tensors)
    if not tensors:
        raise RuntimeError(f"{op} expects a non-empty TensorList")
    return tensors


def hstack(tensors, *, out=None):
    """Join horizontally: along dim 1, or dim 0 for 1-d tensors.

    >>> import clgrad
    >>> clgrad.hstack([clgrad.tensor([1, 2]), clgrad.tensor([3])]).tolist()
    [1, 2, 3]
    """
    tensors = _atleast(1, _nonempty("hstack", tensors))
    return cat(tensors, 0 if len(tensors[0]._shape) == 1 else 1, out=out)


def vstack(tensors, *, out=None):
    """Join vertically: along dim 0 after making every tensor at least 2-d (rows).

    >>> import clgrad
    >>> clgrad.vstack([clgrad.tensor([1, 2]), clgrad.tensor([3, 4])]).tolist()
    [[1, 2], [3, 4]]
    """
    return cat(_atleast(2, _nonempty("vstack", tensors)), 0, out=out)


row_stack = vstack


def dstack(tensors, *, out=None):
    """Join depth-wise: along dim 2 after making every tensor at least 3-d.

    >>> import clgrad
    >>> clgrad.dstack([clgrad.tensor([1, 2]), clgrad.tensor([3, 4])]).tolist()
    [[[1, 3], [2, 4]]]
    """
    return cat(_atleast(3, _nonempty("dstack", tensors)), 2, out=out)


def column_stack(tensors, *, out=None):
    """Join as columns: 0-d and 1-d tensors become columns, the rest join along dim 1.

    >>> import clgrad
    >>> clgrad.column_stack([clgrad.tensor([1, 2]), clgrad.tensor([[3], [4]])]).tolist()
    [[1, 3], [2, 4]]
    """
    tensors = _nonempty("column_stack", tensors)
    cols = [views.reshape(t, (t.numel(), 1)) if len(t._shape) <= 1 else t for t in tensors]
    return cat(cols, 1, out=out)


__all__ = ["cat", "concat", "concatenate", "stack", "hstack", "vstack", "row_stack", "dstack",
           "column_stack", "atleast_1d", "atleast_2d", "atleast_3d"]
