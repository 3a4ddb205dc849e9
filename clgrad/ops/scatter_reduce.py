"""scatter_reduce and index_reduce: src's values combined into a copy of input at index's
positions with 'sum', 'prod', 'mean', 'amax' or 'amin', counting input's own value unless
include_self=False, as torch's. Sums use scatter_add's atomic add; products, maxima and minima the
compare-and-swap kernel scatter_combine of cl_kernels/index.mako. Complex tensors take 'sum',
'prod' and 'mean' without a derivative and refuse 'amax' / 'amin', as torch's; their products,
which no compare-and-swap covers, are segmented running products of the values sorted by target.

Gradients follow torch's definitions: sum and mean pass the gradient back (divided by each
slot's count for mean); amax and amin share it evenly among the elements equal to the result;
prod gives each element the product of the others in its slot (exact with zeros: computed from
the product of the non-zeros and the count of zeros, not by dividing by the element).
"""
from .. import dtypes
from ..autograd.grad_mode import state as _grad_state
from ..autograd.op import Op
from ..kernels.index import Slot, combine_raw
from ..tensor import Tensor, numel_of
from . import index as _ix
from .scatter_gather import _gather_shapes, scatter
from ._base import full_raw, same_device, size_repr

_OPS = {"prod": 0, "amax": 1, "amin": 2}
_REDUCES = ("sum", "prod", "mean", "amax", "amin")


def _identity(reduce, dt):
    if reduce in ("sum", "mean"):
        return 0
    if reduce == "prod":
        return 1
    if dt.kind == "f":
        return float("-inf") if reduce == "amax" else float("inf")
    import numpy as np
    info = np.iinfo(dt.np) if dt.kind in "iu" else None
    if info is None:                                   # bool
        return 0 if reduce == "amax" else 1
    return int(info.min) if reduce == "amax" else int(info.max)


def _combine_into(dst, dim, index, src, reduce):
    """dst[index along dim] op= src, atomically (dst contiguous and written in place)."""
    dev, dt = dst._storage.device, dst._dtype
    if dt.ct in ("double", "long") and not dev.has_int64_atomics:
        raise NotImplementedError(f"scatter_reduce('{reduce}') of {dt} needs 64-bit atomics "
                                  f"(cl_khr_int64_base_atomics), which {dev.name} lacks")
    d1, i1, s1 = _ix._vec(dst), _ix._vec(index), _ix._vec(src)
    if not i1.numel():
        return dst
    if dt.kind == "c":
        _complex_prod_into(d1, dim, i1, s1)
        return dst
    st = list(d1._strides)
    st[dim] = 0
    combine_raw(d1, i1._shape, st, s1, list(s1._strides),
                [Slot(i1, i1._strides, d1._strides[dim], d1._shape[dim])], _OPS[reduce])
    return dst


def _complex_prod_into(dst, dim, index, src):
    """dst[index along dim] *= src for complex dtypes, which no compare-and-swap covers (a pair
    is 64 or 128 bits): the (position, value) pairs sorted by dst position (stable), a segmented
    running product by doubling steps of the table's complex mul, then each position's total
    multiplied into dst once (distinct positions: no atomics)."""
    from .creation import arange
    from .join import cat
    from .pointwise import where
    from .sort import argsort
    n = numel_of(dst._shape)
    pos = arange(n, device=dst.device).reshape(dst._shape).gather(dim, index).reshape(-1)
    order = argsort(pos, stable=True)
    pos, val = pos[order], src.reshape(-1)[order]
    m, s = pos._shape[0], 1
    while s < m:
        same = pos[s:] == pos[:-s]
        val = cat([val[:s], where(same, val[s:] * val[:-s], val[s:])])
        s *= 2
    last = cat([pos[1:] != pos[:-1], full_raw((1,), True, dtypes.bool_, pos._storage.device)])
    pos, val = pos[last], val[last]
    flat = dst.view(-1)
    flat.index_put_((pos,), flat[pos] * val)
    return dst


def _counts(input, dim, index, include_self):
    """How many values each position of the result combines (input's own one included)."""
    dt = input._dtype.real                 # a complex tensor's counts are real
    ones = full_raw(index._shape, 1, dt, input._storage.device)
    c = full_raw(input._shape, 1 if include_self else 0, dt, input._storage.device)
    return _ix._scatter_into(c, dim, index, ones, True)


class ScatterReduce(Op):
    @staticmethod
    def forward(ctx, input, dim, index, src, reduce, include_self):
        out = _ix._clone_raw(input)
        dt = input._dtype
        if not include_self:
            ident = full_raw(index._shape, _identity(reduce, dt), dt, input._storage.device)
            _ix._scatter_into(out, dim, index, ident, False)
        if reduce in ("sum", "mean"):
            _ix._scatter_into(out, dim, index, src, True)
        else:
            _combine_into(out, dim, index, src, reduce)
        if reduce == "mean":
            count = _counts(input, dim, index, include_self)
            count = count.clamp_min(1)
            out = out / count if dt.kind in "fc" else out.div(count, rounding_mode="floor")
            ctx.count = count
        ctx.dim, ctx.reduce, ctx.include_self = dim, reduce, include_self
        ctx.save_for_backward(input, index, src, out)
        return out

    @staticmethod
    def backward(ctx, g):
        input, index, src, out = ctx.saved_tensors
        dim, reduce, keep = ctx.dim, ctx.reduce, ctx.include_self
        # where src wrote: input's own value only counts with include_self
        written = scatter(input.new_zeros(input.shape, dtype=dtypes.bool_), dim, index, True)
        self_mask = written.logical_not() | keep
        if reduce in ("sum", "mean"):
            gg = g / ctx.count if reduce == "mean" else g
            gi = gg * self_mask if not keep else gg
            return gi, None, None, gg.gather(dim, index), None, None
        if reduce in ("amax", "amin"):
            hit_self = (input == out) & self_mask
            hit_src = src == out.gather(dim, index)
            n = hit_self.to(g.dtype).scatter_add(dim, index, hit_src.to(g.dtype))
            share = g / n.clamp_min(1)
            return share * hit_self, None, None, share.gather(dim, index) * hit_src, None, None
        # prod: the product of the other factors of each slot, from the product of the non-zero
        # factors and the number of zero factors (input's own when it counts)
        zero_self = (input == 0) & self_mask
        nz_self = input.masked_fill(input == 0, 1).masked_fill(self_mask.logical_not(), 1)
        nz_src = src.masked_fill(src == 0, 1)
        nz_prod = nz_self.scatter_reduce(dim, index, nz_src, "prod")
        zeros = zero_self.to(g.dtype).scatter_add(dim, index, (src == 0).to(g.dtype))

        def others(x, zero_x, nzp, nz):
            alone = nzp / x.masked_fill(zero_x, 1)             # the others when x is not 0
            return (zero_x & (nz == 1)) * nzp + (zero_x.logical_not() & (nz == 0)) * alone
        gi = g * others(input, input == 0, nz_prod, zeros) * self_mask
        gsrc = g.gather(dim, index) * others(src, src == 0, nz_prod.gather(dim, index),
                                             zeros.gather(dim, index))
        return gi, None, None, gsrc, None, None


class ScatterMultiply(ScatterReduce):
    """scatter(..., reduce='multiply'): the product, input's values included."""

    @staticmethod
    def forward(ctx, input, dim, index, src):
        return ScatterReduce.forward(ctx, input, dim, index, src, "prod", True)

    @staticmethod
    def backward(ctx, g):
        return ScatterReduce.backward(ctx, g)[:4]

    @staticmethod
    def write(out, dim, index, src):
        return _combine_into(out, dim, index, src, "prod")


def scatter_reduce(input, dim, index, src, reduce, *, include_self=True):
    """A copy of input where src's values are combined, by `reduce` ('sum', 'prod', 'mean',
    'amax', 'amin'), into the positions index gives along dim; include_self=False leaves
    input's value out of the positions written to.

    >>> import clgrad
    >>> x = clgrad.tensor([1.0, 2.0, 3.0])
    >>> x.scatter_reduce(0, clgrad.tensor([0, 0, 2]), clgrad.tensor([5.0, 4.0, 1.0]), "amax").tolist()
    [5.0, 2.0, 3.0]
    >>> x.scatter_reduce(0, clgrad.tensor([0, 0]), clgrad.tensor([5.0, 4.0]), "mean",
    ...                  include_self=False).tolist()
    [4.5, 2.0, 3.0]
    """
    if reduce not in _REDUCES:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got "
                           f"{reduce}")
    for name, t in (("index", index), ("src", src)):
        if not isinstance(t, Tensor):
            raise TypeError(f"scatter_reduce(): argument '{name}' must be Tensor, not "
                            f"{type(t).__name__}")
    d = _ix.views._wrap(dim, len(input._shape))
    index = _ix._index_dtype("scatter_reduce", index)
    same_device("scatter_reduce", [input, index, src])
    if src._dtype is not input._dtype:
        raise RuntimeError(f"scatter_reduce(): Expected self.dtype to be equal to src.dtype "
                           f"(got {input.dtype} and {src.dtype}): self {size_repr(input._shape)}")
    _gather_shapes("scatter_reduce", input, d, index, src)
    # torch's order: without self, its targets are zeroed first (index_fill_, which checks the
    # bounds), then the reduction's kernel is picked by dtype, then its loop checks the bounds
    bool_mean = reduce == "mean" and input._dtype is dtypes.bool_
    if bool_mean and include_self:
        raise NotImplementedError('"scatter_gather_tensor_cpu_reduce_mean" not implemented for '
                                  "'Bool'")
    _ix._check_range("scatter_reduce", index, input._shape[d] if input._shape else 1, d, False,
                     RuntimeError)
    if bool_mean:
        raise NotImplementedError('"scatter_gather_tensor_cpu_reduce_mean" not implemented for '
                                  "'Bool'")
    if input._dtype.kind == "c":
        _check_complex("scatter_reduce", input, src, reduce)
    if index._shape != src._shape:
        src = src[tuple(slice(0, n) for n in index._shape)]
    return ScatterReduce.apply(input, d, index, src, reduce, include_self)


def _check_complex(op, input, src, reduce):
    """torch reduces complex tensors with sum, prod and mean, without a derivative."""
    if reduce in ("amax", "amin"):
        raise NotImplementedError(f'"scatter_gather_tensor_cpu_reduce_{reduce}" not implemented '
                                  f"for '{dtypes.TORCH_NAMES[input._dtype]}'")
    if (input._requires_grad or src._requires_grad) and _grad_state.grad_enabled:
        raise RuntimeError(f"{op} does not support automatic differentiation for outputs with "
                           f"complex dtype.")


def scatter_reduce_(input, dim, index, src, reduce, *, include_self=True):
    """scatter_reduce in place.

    >>> import clgrad
    >>> x = clgrad.ones(3)
    >>> x.scatter_reduce_(0, clgrad.tensor([1, 1]), clgrad.tensor([2.0, 3.0]), "prod").tolist()
    [1.0, 6.0, 1.0]
    """
    return input.copy_(scatter_reduce(input, dim, index, src, reduce,
                                      include_self=include_self))


def index_reduce(input, dim, index, source, reduce, *, include_self=True):
    """input with the slices of source combined, by `reduce` ('prod', 'mean', 'amax', 'amin'),
    into the slices `index` names along dim (torch's index_reduce).

    >>> import clgrad
    >>> x = clgrad.ones(2, 2)
    >>> x.index_reduce(0, clgrad.tensor([1, 1]), clgrad.tensor([[2.0, 3.0], [4.0, 5.0]]),
    ...                "prod").tolist()
    [[1.0, 1.0], [8.0, 15.0]]
    """
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or "
                           f"amin but got {reduce}.")
    if input._dtype.kind == "c":
        raise NotImplementedError(f'"index_func_" not implemented for '
                                  f"'{dtypes.TORCH_NAMES[input._dtype]}'")
    if index.dim() > 1:
        raise IndexError(f"index_reduce_(): Index is supposed to be a vector, but got dim: "
                         f"{index.dim()}")
    d = _ix.views._wrap(dim, len(input._shape))
    if source.dim() and source.shape[d] != index.numel():
        raise RuntimeError(f"index_reduce_(): Number of indices ({index.numel()}) should be "
                           f"equal to source.size(dim) ({source.shape[d]})")
    # the vector index spread over source's shape: scatter_reduce along dim
    shape = [1] * source.dim()
    if source.dim():
        shape[d] = index.numel()
    full_index = index.reshape(shape).expand(tuple(source.shape)) if source.dim() else index
    return scatter_reduce(input, d, full_index.contiguous(), source, reduce,
                          include_self=include_self)


def index_reduce_(input, dim, index, source, reduce, *, include_self=True):
    """index_reduce in place.

    >>> import clgrad
    >>> clgrad.zeros(3).index_reduce_(0, clgrad.tensor([2]), clgrad.tensor([7.0]), "amax").tolist()
    [0.0, 0.0, 7.0]
    """
    return input.copy_(index_reduce(input, dim, index, source, reduce,
                                    include_self=include_self))


FUNCTIONS = {"scatter_reduce": scatter_reduce, "index_reduce": index_reduce}
METHODS = {"scatter_reduce": scatter_reduce, "scatter_reduce_": scatter_reduce_,
           "index_reduce": index_reduce, "index_reduce_": index_reduce_}
