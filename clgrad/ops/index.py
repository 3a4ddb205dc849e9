"""The Ops of indexing, gathers and scatters (forward, backward, forward mode), their geometry and
the argument checks they share. The public functions are in clgrad/ops/subscript.py (x[...],
x[...] = v, index_put) and clgrad/ops/scatter_gather.py (index_select, gather, scatter,
scatter_add, index_add, index_copy, index_fill, masked_select, masked_scatter, take,
take_along_dim, nonzero); scatter_reduce in clgrad/ops/scatter_reduce.py.

Everything runs on one kernel family (clgrad/kernels/index.py, cl_kernels/index.mako): a `gather`
reads data at addresses moved by index tensors, a `scatter` writes there, and `scatter_add` adds
there atomically, so that duplicate indices sum. Each op only describes its geometry: the
iteration shape, the strides that walk the data over it, and the index tensors ("slots") with the
data stride of the dim each one indexes; more slots than a kernel takes are folded into one here
(fit_slots, with elementwise ops).

Accumulation (index_put_(accumulate=True), index_add, scatter_add, and the backward of every
gather) uses atomics, except index_add of contiguous rows on CPU code paths (an embedding's
backward), which goes by lines, without atomics, summing in index order (kernels.index's
index_add_lines_raw). The atomics are integer atomic_add, and compare-and-swap loops for floats
and for 16- and 8-bit types (on the 32-bit word that holds the element). Sums of duplicates are
therefore correct but, for floats, their rounding depends on the order the device runs them in,
as with torch on CUDA. 64-bit types need cl_khr_int64_base_atomics; on a device without it, the
sum is done on the host with numpy (download, np.add.at, upload), which is correct and slow.

Index bounds are checked before a kernel runs, by a small kernel that raises a flag the host reads
back: one host sync per indexing op. nonzero (and so boolean masks) also syncs, since the size of
its result depends on the data.
"""
from .. import dtypes
from ..autograd.op import Op
from ..kernels.index import (SLOTS, Slot, first_bad, gather_raw, index_add_lines_raw,
                             nonzero_raw, scatter_raw)
from ..tensor import Tensor, contiguous_strides, empty_tensor, numel_of
from . import views
from ._base import (broadcast_shapes, cast_raw, contiguous_raw, copy_into, expand_strides,
                    full_raw, size_repr, view_raw)
from .elementwise import TABLE, run, masked_fill
from .reduce import sum_to
from .inplace import apply_inplace


def fit_slots(slots, shape):
    """The slots of a launch over `shape`, folded into one when there are more than a kernel
    takes (kernels.index.SLOTS): their address terms added up in one int64 tensor."""
    if len(slots) <= SLOTS:
        return slots
    total = None
    for s in slots:
        v = view_raw(s.t, shape, s.strides, s.t._offset)
        term = run(TABLE["mul"], (run(TABLE["remainder"], (v, s.size)), s.mul))
        total = term if total is None else run(TABLE["add"], (total, term))
    # the terms are wrapped into range, so the sum stays below this bound (the kernels clamp
    # each index into its slot's size)
    bound = 1 + sum((s.size - 1) * abs(s.mul) for s in slots)
    return [Slot(total, contiguous_strides(shape), 1, bound)]


def _clone_raw(x):
    return copy_into(empty_tensor(x._shape, x._dtype, x._storage.device), x)


def _vec(t):
    """A 0-d tensor seen as a 1-element 1-d one (the kernels' geometry wants a dim)."""
    return view_raw(t, (1,), (1,), t._offset) if not t._shape else t


def _as_scalar(t, shape):
    return t if shape else view_raw(t, (), (), t._offset)


def _columns(nz):
    """The columns of a nonzero result, as 1-d views."""
    count, nd = nz._shape
    return [view_raw(nz, (count,), (nd,), nz._offset + d) for d in range(nd)]


# ---- geometry of the ops -------------------------------------------------------------------------
def advanced_geometry(shape, strides, dims, idx):
    """x[idx] with index tensors idx at dims of x (shape, strides), by torch's rule: the broadcast
    index shape takes the place of the indexed dims when they are adjacent, else it goes first.
    Returns the result shape, the strides that walk x over it, and the slots."""
    b = broadcast_shapes(*[t._shape for t in idx])
    rest = [d for d in range(len(shape)) if d not in dims]
    adjacent = dims[-1] - dims[0] == len(dims) - 1
    lead = [d for d in rest if d < dims[0]] if adjacent else []
    tail = rest[len(lead):]
    out_shape = tuple(shape[d] for d in lead) + b + tuple(shape[d] for d in tail)
    walk = [strides[d] for d in lead] + [0] * len(b) + [strides[d] for d in tail]
    slots = [Slot(t, [0] * len(lead) + expand_strides(t, b) + [0] * len(tail), strides[d],
                  shape[d]) for d, t in zip(dims, idx)]
    return out_shape, walk, slots


def _along_dim(dst, dim, index, n):
    """Walk dst's shape with dim's extent n, the index (1-d) choosing dst's position along dim:
    (shape, dst strides, slot) for index_add / index_copy / index_fill."""
    shape = dst._shape[:dim] + (n,) + dst._shape[dim + 1:]
    st = list(dst._strides)
    st[dim] = 0
    ist = [0] * len(shape)
    ist[dim] = index._strides[0]
    return shape, st, Slot(index, ist, dst._strides[dim], dst._shape[dim])


def _put_along(dst, dim, index, src, accumulate, alpha=1):
    """dst[..., index[j], ...] = (or +=) src[..., j, ...]: src may also be a 0-d value."""
    if accumulate and index_add_lines_raw(dst, dim, index, src, alpha):
        return dst
    d1, i1 = _vec(dst), _vec(index)
    shape, st, slot = _along_dim(d1, dim, i1, i1._shape[0])
    s1 = _vec(src)
    scatter_raw(d1, shape, st, d1._offset, s1, expand_strides(s1, shape), [slot], accumulate,
                alpha)
    return dst


def _scatter_into(dst, dim, index, src, accumulate, value=False):
    """dst[index[c] along dim, c elsewhere] = (or +=) src[c] for c in index's shape."""
    d1, i1, s1 = _vec(dst), _vec(index), _vec(src)
    st = list(d1._strides)
    st[dim] = 0
    sst = [0] * len(i1._shape) if value else list(s1._strides)
    scatter_raw(d1, i1._shape, st, d1._offset, s1, sst,
                [Slot(i1, i1._strides, d1._strides[dim], d1._shape[dim])], accumulate)
    return dst


def _index_put_raw(dst, values, dims, idx, accumulate):
    shape, walk, slots = advanced_geometry(dst._shape, dst._strides, dims, idx)
    src = cast_raw(values, dst._dtype)
    scatter_raw(dst, shape, walk, dst._offset, src, expand_strides(src, shape),
                fit_slots(slots, shape), accumulate)
    return dst


# ---- autograd ops -------------------------------------------------------------------------------
# The ops that change a copy of their input define write(out, ...): the raw change, used by
# forward on a clone and by the in-place forms straight on the tensor when autograd does not record.
def _zeros(shape, like):
    return full_raw(shape, 0, like._dtype, like._storage.device)


def linear_jvp(cls, args, tangents, out):
    """Forward mode of an op that is linear in its data arguments (positions cls._linear; None:
    every tensor argument): the op itself applied to their tangents, zeros where one has none.
    Index tensors, masks and sizes pass unchanged; a constant it writes (cls._constants) is 0."""
    a = list(args)
    linear = [i for i, x in enumerate(a) if isinstance(x, Tensor)] if cls._linear is None \
        else cls._linear
    if all(tangents[i] is None for i in linear):
        return None
    for i in linear:
        a[i] = tangents[i] if tangents[i] is not None else _zeros(a[i]._shape, a[i])
    for i in cls._constants:
        a[i] = 0
    return cls.apply(*a)


class _Writer(Op):
    _linear, _constants = (0, 3), ()           # x and the written tensor (src, values ...)
    jvp = classmethod(linear_jvp)

    @classmethod
    def forward(cls, ctx, x, *args):
        cls.remember(ctx, *args)
        return cls.write(_clone_raw(x), *args)

    @staticmethod
    def remember(ctx, dim, index, *rest):
        ctx.dim = dim
        ctx.save_for_backward(index)


class Index(Op):
    """x[idx at dims]: a gather. Its gradient adds g into zeros at the same places."""

    _linear, _constants = (0,), ()
    jvp = classmethod(linear_jvp)

    @staticmethod
    def forward(ctx, x, dims, *idx):
        ctx.dims = dims
        ctx.save_for_backward(*idx)
        shape, walk, slots = advanced_geometry(x._shape, x._strides, dims, idx)
        return gather_raw(x, shape, walk, x._offset, fit_slots(slots, shape))

    @staticmethod
    def backward(ctx, g):
        idx = ctx.saved_tensors
        gx = IndexPut.apply(_zeros(ctx._in_meta[0][0], g), g, ctx.dims, True, *idx)
        return (gx, None) + (None,) * len(idx)


class IndexPut(_Writer):
    """x with values (broadcast to the indexing result) written, or added, at idx."""

    _linear = (0, 1)

    write = staticmethod(lambda out, values, dims, accumulate, *idx:
                         _index_put_raw(out, values, dims, idx, accumulate))

    @staticmethod
    def remember(ctx, values, dims, accumulate, *idx):
        ctx.dims, ctx.accumulate = dims, accumulate
        ctx.save_for_backward(*idx)

    @staticmethod
    def backward(ctx, g):
        idx = ctx.saved_tensors
        gx = gv = None
        if ctx.needs_input_grad[0]:
            gx = g if ctx.accumulate else IndexPut.apply(g, _zeros((), g), ctx.dims, False, *idx)
        if ctx.needs_input_grad[1]:
            gv = sum_to(Index.apply(g, ctx.dims, *idx), ctx._in_meta[1][0])
        return (gx, gv, None, None) + (None,) * len(idx)


class IndexSelect(Op):
    _linear, _constants = (0,), ()
    jvp = classmethod(linear_jvp)

    @staticmethod
    def forward(ctx, x, dim, index):
        ctx.dim = dim
        ctx.save_for_backward(index)
        x1 = _vec(x)
        shape, walk, slots = advanced_geometry(x1._shape, x1._strides, (dim,), (_vec(index),))
        return _as_scalar(gather_raw(x1, shape, walk, x1._offset, slots), x._shape)

    @staticmethod
    def backward(ctx, g):
        index, = ctx.saved_tensors
        return IndexAdd.apply(_zeros(ctx._in_meta[0][0], g), ctx.dim, index, g, 1), None, None


class IndexAdd(_Writer):
    write = staticmethod(lambda out, dim, index, source, alpha:
                         _put_along(out, dim, index, source, True, alpha))

    @staticmethod
    def remember(ctx, dim, index, source, alpha):
        ctx.dim, ctx.alpha = dim, alpha
        ctx.save_for_backward(index)

    @staticmethod
    def backward(ctx, g):
        index, = ctx.saved_tensors
        gs = None
        if ctx.needs_input_grad[3]:
            gs = IndexSelect.apply(g, ctx.dim, index).reshape(ctx._in_meta[2][0])
            if ctx.alpha != 1:
                gs = gs * ctx.alpha
        return g, None, None, gs, None


class IndexCopy(_Writer):
    write = staticmethod(lambda out, dim, index, source:
                         _put_along(out, dim, index, source, False))

    @staticmethod
    def backward(ctx, g):
        index, = ctx.saved_tensors
        gx = gs = None
        if ctx.needs_input_grad[0]:
            gx = IndexFill.apply(g, ctx.dim, index, _zeros((), g))
        if ctx.needs_input_grad[3]:
            gs = IndexSelect.apply(g, ctx.dim, index).reshape(ctx._in_meta[2][0])
        return gx, None, None, gs


class IndexFill(_Writer):
    """index_fill with a number (passed as a 0-d tensor of x's dtype that needs no gradient)."""

    write = staticmethod(lambda out, dim, index, value:
                         _put_along(out, dim, index, cast_raw(value, out._dtype), False))

    @staticmethod
    def backward(ctx, g):
        index, = ctx.saved_tensors
        gx = gv = None
        if ctx.needs_input_grad[0]:
            gx = IndexFill.apply(g, ctx.dim, index, _zeros((), g))
        if ctx.needs_input_grad[3]:
            gv = IndexSelect.apply(g, ctx.dim, index).sum()
        return gx, None, None, gv


class IndexFillTensor(IndexFill):
    """index_fill with a 0-d tensor value, which gets the sum of the filled places' gradient."""

    _node_name = "IndexFillBackward1"


class Gather(Op):
    _linear, _constants = (0,), ()
    jvp = classmethod(linear_jvp)

    @staticmethod
    def forward(ctx, x, dim, index):
        ctx.dim = dim
        ctx.save_for_backward(index)
        x1, i1 = _vec(x), _vec(index)
        walk = list(x1._strides)
        walk[dim] = 0
        out = gather_raw(x1, i1._shape, walk, x1._offset,
                         [Slot(i1, i1._strides, x1._strides[dim], x1._shape[dim])])
        return _as_scalar(out, index._shape)

    @staticmethod
    def backward(ctx, g):
        index, = ctx.saved_tensors
        return ScatterAdd.apply(_zeros(ctx._in_meta[0][0], g), ctx.dim, index, g), None, None


class Scatter(_Writer):
    """scatter with a src tensor: src's gradient is gathered, x's is g where nothing was written."""

    write = staticmethod(lambda out, dim, index, src: _scatter_into(out, dim, index, src, False))

    @staticmethod
    def backward(ctx, g):
        index, = ctx.saved_tensors
        gx = gs = None
        if ctx.needs_input_grad[0]:
            gx = ScatterValue.apply(g, ctx.dim, index, _zeros((), g))
        if ctx.needs_input_grad[3]:
            gs = _src_grad(g, ctx, index)
        return gx, None, None, gs


def _src_grad(g, ctx, index):
    """The gradient of scatter's src: g gathered at index, and zero where src is larger than
    index (those elements were not read)."""
    gs = Gather.apply(g, ctx.dim, index)
    shape = ctx._in_meta[2][0]
    if gs._shape != shape and shape:
        # function-level: import cycle: shape imports index
        from .shape import constant_pad_nd
        pad = []
        for have, want in zip(reversed(gs._shape), reversed(shape)):
            pad += [0, want - have]
        gs = constant_pad_nd(gs, pad)
    return gs


class ScatterValue(_Writer):
    """scatter with a number (a 0-d tensor of x's dtype)."""

    _node_name = "ScatterBackward1"
    write = staticmethod(lambda out, dim, index, value:
                         _scatter_into(out, dim, index, value, False, value=True))

    @staticmethod
    def backward(ctx, g):
        index, = ctx.saved_tensors
        return ScatterValue.apply(g, ctx.dim, index, _zeros((), g)), None, None, None


class ScatterAdd(_Writer):
    write = staticmethod(lambda out, dim, index, src: _scatter_into(out, dim, index, src, True))

    @staticmethod
    def backward(ctx, g):
        index, = ctx.saved_tensors
        gs = _src_grad(g, ctx, index) if ctx.needs_input_grad[3] else None
        return g, None, None, gs


class Take(Op):
    _linear, _constants = (0,), ()
    jvp = classmethod(linear_jvp)

    @staticmethod
    def forward(ctx, x, index):
        ctx.save_for_backward(index)
        xc = contiguous_raw(x)
        return gather_raw(xc, index._shape, [0] * len(index._shape), xc._offset,
                          [Slot(index, index._strides, 1, xc.numel())])

    @staticmethod
    def backward(ctx, g):
        index, = ctx.saved_tensors
        shape = ctx._in_meta[0][0]
        flat = IndexPut.apply(_zeros((numel_of(shape),), g), g, (0,), True, index)
        return flat.reshape(shape), None


class MaskedSelect(Op):
    _linear, _constants = (0,), ()
    jvp = classmethod(linear_jvp)

    @staticmethod
    def forward(ctx, x, mask, shape):
        nz = nonzero_raw(view_raw(mask, shape, expand_strides(mask, shape), mask._offset))
        ctx.shape = shape
        ctx.save_for_backward(nz)
        xst = expand_strides(x, shape)
        slots = [Slot(c, c._strides, xst[d], shape[d]) for d, c in enumerate(_columns(nz))
                 if xst[d]]          # dims x is broadcast along do not move the address
        return gather_raw(x, (nz._shape[0],), [0], x._offset, fit_slots(slots, (nz._shape[0],)))

    @staticmethod
    def backward(ctx, g):
        nz, = ctx.saved_tensors
        cols = _columns(nz)
        full = IndexPut.apply(_zeros(ctx.shape, g), g, tuple(range(len(cols))), False, *cols)
        return sum_to(full, ctx._in_meta[0][0]), None, None


def _masked_scatter_raw(out, mask, source):
    nz = nonzero_raw(mask)
    count = nz._shape[0]
    if count > source.numel():
        raise RuntimeError(f"masked_scatter: Number of elements of source < number of ones in mask "
                           f"(source {size_repr(source._shape)} has {source.numel()}, the mask "
                           f"{count})")
    src = contiguous_raw(source)
    slots = [Slot(c, c._strides, out._strides[d], out._shape[d])
             for d, c in enumerate(_columns(nz)) if out._shape[d] != 1]
    scatter_raw(out, (count,), [0], out._offset, src, [1], fit_slots(slots, (count,)))
    return nz


class MaskedScatter(_Writer):
    """x (of the mask's shape) with its masked places taken from source's elements in order."""

    _linear = (0, 2)

    @staticmethod
    def write(out, mask, source):
        _masked_scatter_raw(out, mask, source)
        return out

    @staticmethod
    def forward(ctx, x, mask, source):
        out = _clone_raw(x)
        nz = _masked_scatter_raw(out, mask, source)
        ctx.save_for_backward(mask, nz)
        return out

    @staticmethod
    def backward(ctx, g):
        # function-level: import cycle: join imports index
        from .join import cat
        mask, nz = ctx.saved_tensors
        gx = gs = None
        if ctx.needs_input_grad[0]:
            gx = masked_fill(g, mask, 0)
        if ctx.needs_input_grad[2]:
            cols = _columns(nz)
            picked = Index.apply(g, tuple(range(len(cols))), *cols)
            shape = ctx._in_meta[2][0]
            missing = numel_of(shape) - picked.numel()      # source elements the mask left unused
            if missing:
                picked = cat([picked, _zeros((missing,), g)])
            gs = picked.reshape(shape)
        return gx, None, gs


class AsStridedScatter(Op):
    """The gradient of an as_strided view whose windows overlap: each element of g is added into
    the input element it was read from."""

    _linear, _constants = (0,), ()
    jvp = classmethod(linear_jvp)

    @staticmethod
    def forward(ctx, g, in_shape, shape, strides, offset):
        ctx.geom = (shape, strides, offset)
        out = _zeros(in_shape, g)
        return scatter_raw(out, shape, strides, out._offset + offset, g, g._strides, [],
                           accumulate=True)

    @staticmethod
    def backward(ctx, gg):
        shape, strides, offset = ctx.geom
        gg = gg.contiguous()
        return (views.AsStrided.apply(gg, shape, strides, gg._offset + offset),
                None, None, None, None)


def as_strided_backward_overlapping(g, in_shape, shape, strides, offset):
    """Sum each element of g (the gradient of an as_strided view with overlapping windows) into
    the element of a zero tensor of in_shape that it was read from.

    >>> import clgrad
    >>> from clgrad.ops.index import as_strided_backward_overlapping
    >>> as_strided_backward_overlapping(clgrad.ones(2, 2), (3,), (2, 2), (1, 1), 0).tolist()
    [1.0, 2.0, 1.0]
    """
    return AsStridedScatter.apply(g, tuple(in_shape), tuple(shape), tuple(strides), offset)


# ---- argument checks shared by the functions -----------------------------------------------------
_TORCH_NAMES = dtypes.TORCH_NAMES


def _tname(t):
    """torch's name of a tensor's (or a dtype's) scalar type, as its messages print it."""
    return _TORCH_NAMES[t._dtype if isinstance(t, Tensor) else t]


def _dtype_name(t):
    return _tname(t) if isinstance(t, Tensor) else type(t).__name__


def _index_dtype(op, index, ints=(dtypes.int64, dtypes.int32), msg=None, exc=RuntimeError):
    if not isinstance(index, Tensor):
        raise TypeError(f"{op}(): argument 'index' must be Tensor, not {type(index).__name__}")
    if index._dtype not in ints:
        raise exc(msg or f"{op}(): Expected dtype int64 for index, but got "
                         f"{_tname(index)}")
    return cast_raw(index, dtypes.int64)


def _check_range(op, index, size, dim, negative, exc, fmt=None):
    bad = first_bad([(index, -size if negative else 0, size)])
    if bad is not None:
        msg = (fmt or "{op}(): index {v} is out of bounds for dimension {d} with size {n}")
        raise exc(msg.format(op=op, v=bad[1], d=dim, n=size))


def _vector_index(op, index, exc=IndexError):
    if len(index._shape) > 1:
        raise exc(f"{op}(): Index is supposed to be a vector, but got dim: {len(index._shape)} "
                  f"with type: {_tname(index)} and size: "
                  f"{size_repr(index._shape)}")


def _same_dtype(op, x, other, what="source"):
    if other._dtype is not x._dtype:
        raise RuntimeError(f"{op}(): self ({_tname(x)}) and {what} "
                           f"({_tname(other)}) must have the same scalar type")


def _value_tensor(x, value):
    if isinstance(value, Tensor):
        return value.to(x._dtype)
    return full_raw((), value, x._dtype, x._storage.device)


# ---- in-place writes -----------------------------------------------------------------------------
def _apply_(op, self, args, name):
    """self <- op(self, *args) in place: written straight into self when autograd does not
    record (operands that share self's memory are copied first), else through apply_inplace."""

    def fast():
        op.write(self, *[_clone_raw(a) if isinstance(a, Tensor) and a._storage is self._storage
                         else a for a in args])
    return apply_inplace(op, self, *args, fast=fast, name=name)
