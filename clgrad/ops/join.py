"""Joining: cat and stack (their gradients are the slices of the incoming gradient)."""
from .. import dtypes
from ..autograd.function import Op
from ..tensor import Tensor, empty_tensor, numel_of
from ._base import copy_into, same_device, size_repr, view_raw


class Cat(Op):
    @staticmethod
    def forward(ctx, dim, *tensors):
        ref = next((t for t in tensors if not (len(t._shape) == 1 and t._shape[0] == 0)), tensors[0])
        dt = dtypes.result_type(*[t for t in tensors]) if len(tensors) > 1 else tensors[0]._dtype
        for t in tensors[1:]:
            dt = dtypes.promote_types(dt, t._dtype)
        dt = tensors[0]._dtype if all(t._dtype is tensors[0]._dtype for t in tensors) else dt
        shape = list(ref._shape)
        total = 0
        sizes = []
        for i, t in enumerate(tensors):
            if len(t._shape) == 1 and t._shape[0] == 0 and len(ref._shape) != 1:
                sizes.append(0)
                continue            # torch skips legacy empty 1-d tensors
            if len(t._shape) != len(ref._shape):
                raise RuntimeError(f"Tensors must have same number of dimensions: got "
                                   f"{len(ref._shape)} and {len(t._shape)}")
            for d, (a, b) in enumerate(zip(ref._shape, t._shape)):
                if d != dim and a != b:
                    raise RuntimeError(f"Sizes of tensors must match except in dimension {dim}. "
                                       f"Expected size {a} but got size {b} for tensor number {i} "
                                       f"in the list.")
            sizes.append(t._shape[dim])
            total += t._shape[dim]
        shape[dim] = total
        dev = same_device("cat", tensors)
        out = empty_tensor(tuple(shape), dt, dev)
        strides = out._strides
        start = 0
        for t, s in zip(tensors, sizes):
            if s == 0:
                continue
            piece = view_raw(out, tuple(shape[:dim]) + (s,) + tuple(shape[dim + 1:]), strides,
                             start * strides[dim])
            copy_into(piece, t)
            start += s
        ctx.dim, ctx.sizes = dim, sizes
        return out

    @staticmethod
    def backward(ctx, g):
        grads = []
        start = 0
        for s, meta in zip(ctx.sizes, ctx._in_meta):
            if s == 0 and meta[0] != g._shape[:ctx.dim] + (0,) + g._shape[ctx.dim + 1:]:
                grads.append(None)
                continue
            grads.append(g.narrow(ctx.dim, start, s))
            start += s
        return (None,) + tuple(grads)


def cat(tensors, dim=0, *, out=None):
    """Join tensors along an existing dim.

    >>> import clgrad
    >>> clgrad.cat([clgrad.zeros(1, 2), clgrad.ones(2, 2)]).shape
    clgrad.Size([3, 2])
    """
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("torch.cat(): expected a non-empty list of Tensors")
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got "
                            f"{type(t).__name__}")
    ref = next((t for t in tensors if not (len(t._shape) == 1 and t._shape[0] == 0)), tensors[0])
    nd = len(ref._shape)
    if nd == 0:
        raise RuntimeError("zero-dimensional tensor (at position 0) cannot be concatenated")
    n = max(nd, 1)
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but "
                         f"got {dim})")
    res = Cat.apply(dim % n, *tensors)
    if out is not None:
        out.copy_(res)
        return out
    return res


concat = concatenate = cat


def stack(tensors, dim=0, *, out=None):
    """Join same-shaped tensors along a new dim.

    >>> import clgrad
    >>> clgrad.stack([clgrad.zeros(2), clgrad.ones(2)], 1).shape
    clgrad.Size([2, 2])
    """
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    shape = tensors[0]._shape
    for i, t in enumerate(tensors):
        if t._shape != shape:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got "
                               f"{size_repr(shape)} at entry 0 and {size_repr(t._shape)} at entry "
                               f"{i}")
    n = len(shape) + 1
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but "
                         f"got {dim})")
    dim %= n
    return cat([t.unsqueeze(dim) for t in tensors], dim, out=out)


def hstack(tensors):
    tensors = [t if t._shape else t.reshape(1) for t in tensors]
    return cat(tensors, 0 if len(tensors[0]._shape) == 1 else 1)


def vstack(tensors):
    return cat([t.reshape(1, -1) if len(t._shape) < 2 else t for t in tensors], 0)


__all__ = ["cat", "concat", "concatenate", "stack", "hstack", "vstack"]
