"""Tensors seen as lines along one dim, and the launch geometry of kernels that give each line
(or each run of lines) to one work-item: shared by the softmax, scan and norm families.

A tensor is seen as [outer, L, inner]: outer * inner independent lines of L elements along `dim`.

>>> import clgrad
>>> lines(clgrad.empty(2, 3, 4), 1)
(2, 3, 4, 12, 4, 1)
"""
from ..runtime.kernels import few_sizes, grid
from ..tensor import numel_of
from ._layout import collapse
from .copy import contiguous_raw


def lines(t, dim):
    """t seen as lines along dim: (outer, L, inner, outer stride, L stride, inner stride), or None
    when the dims before (or after) dim do not merge into one stride (t is then copied)."""
    shape, strides = t._shape, t._strides
    if not shape:
        return 1, 1, 1, 0, 0, 0
    oshape, (ost,) = collapse(shape[:dim], [strides[:dim]])
    ishape, (ist,) = collapse(shape[dim + 1:], [strides[dim + 1:]])
    if len(oshape) > 1 or len(ishape) > 1:
        return None
    return (numel_of(oshape), shape[dim], numel_of(ishape), ost[0] if ost else 0, strides[dim],
            ist[0] if ist else 0)


def lines_of(t, dim):
    """(t or a contiguous copy of it, its lines along dim)."""
    ls = lines(t, dim)
    if ls is None:
        t = contiguous_raw(t)
        ls = lines(t, dim)
    return t, ls


def line_grid(dev, n):
    """(global, local size) for n work-items. A CPU runs each work-group on one core, so there a
    launch of few items gets groups small enough for every core to take some (of few sizes:
    few_sizes)."""
    gs, ls = grid(dev, n)
    if dev.cpu_paths:
        ls = (few_sizes(dev, min(ls[0], -(-n // (4 * dev.compute_units)))),)
        gs = (-(-n // ls[0]) * ls[0],)
    return gs, ls
