"""Indexing, gathers and scatters: x[...], x[...] = v, index_put_, index_select, gather, scatter,
scatter_add, index_add, index_copy, index_fill, masked_select, masked_scatter, take,
take_along_dim, nonzero.

Basic indices (ints, slices, None, Ellipsis) make views. Everything else runs on one kernel family
(cl_kernels/index.mako): a `gather` reads data at addresses moved by index tensors, a `scatter`
writes there, and `scatter_add` adds there atomically, so that duplicate indices sum. Each op only
describes its geometry: the iteration shape, the strides that walk the data over it, and the index
tensors ("slots") with the data stride of the dim each one indexes.

Accumulation (index_put_(accumulate=True), index_add, scatter_add, and the backward of every
gather) uses atomics: integer atomic_add, and compare-and-swap loops for floats and for 16- and
8-bit types (on the 32-bit word that holds the element). Sums of duplicates are therefore correct
but, for floats, their rounding depends on the order the device runs them in, as with torch on
CUDA. 64-bit types need cl_khr_int64_base_atomics; on a device without it, the sum is done on the
host with numpy (download, np.add.at, upload), which is correct and slow.

Index bounds are checked before a kernel runs, by a small kernel that raises a flag the host reads
back: one host sync per indexing op. nonzero (and so boolean masks) also syncs, since the size of
its result depends on the data.
"""
import numbers

import numpy as np
import pyopencl as cl

from .. import dtypes
from ..autograd.op import Op
from ..autograd.views import check_inplace_allowed
from ..dtypes import ALL as ALL_DTYPES
from ..runtime.kernels import Program, get_kernel, grid, launch, render
from ..tensor import Tensor, contiguous_strides, empty_tensor, numel_of, upload
from . import views
from ._base import (MAX_DIMS, broadcast_shapes, cast_raw, check_dims, collapse, contiguous_raw,
                    copy_into, expand_strides, full_raw, launch_walk, pack8, pack8_right,
                    same_device, scalar_for, size_repr, view_raw)
from ._base import check_no_internal_overlap

SLOTS = 4               # index tensors one launch takes; more are folded into one (see _fold)
PROGRAMS = {dt: Program("index", dt.short, render("index.mako", dt=dt, SLOTS=SLOTS))
            for dt in ALL_DTYPES}
_ZERO8 = pack8([])


# ---- raw kernels (no autograd) -------------------------------------------------------------------
class Slot:
    """An index tensor as the kernels read it: at iteration coordinates c its value is
    t[t._offset + c . strides]; that value, wrapped by `size` when negative, moves the data address
    by value * mul."""

    __slots__ = ("t", "strides", "mul", "size")

    def __init__(self, t, strides, mul, size):
        self.t, self.strides, self.mul, self.size = t, list(strides), mul, size


def _fold(slots, shape):
    """More index tensors than a kernel takes: add up their address terms in one int64 tensor."""
    from .elementwise import TABLE, run
    total = None
    for s in slots:
        v = view_raw(s.t, shape, s.strides, s.t._offset)
        term = run(TABLE["mul"], (run(TABLE["remainder"], (v, s.size)), s.mul))
        total = term if total is None else run(TABLE["add"], (total, term))
    return [Slot(total, contiguous_strides(shape), 1, 1)]


def _launch(name, dt, dev, shape, operands, slots, scalars=()):
    """Launch kernel `name` over `shape`: operands are the data operands' (buffer, element offset,
    strides over shape), scalars the arguments that follow them in the kernel's signature."""
    if len(slots) > SLOTS:
        slots = _fold(slots, shape)
    cshape, cst = collapse(shape, [list(st) for _, _, st in operands] + [s.strides for s in slots])
    check_dims(name, len(cshape))
    args = []
    for (buf, off, _), st in zip(operands, cst):
        args += [buf, off, pack8_right(st)]
    args += list(scalars)
    args.append(len(slots))
    for k in range(SLOTS):
        if k < len(slots):
            s = slots[k]
            args += [s.t._storage.buf, s.t._offset, pack8_right(cst[len(operands) + k]), s.mul,
                     s.size]
        else:                                    # an unused slot: any buffer, never read
            args += [operands[0][0], 0, _ZERO8, 0, 1]
    launch_walk(dev, get_kernel(dev, PROGRAMS[dt], name), numel_of(shape), cshape, *args)


def gather_raw(x, shape, strides, offset, slots):
    """A new contiguous tensor of `shape` whose element c is x's storage at
    offset + c . strides + the slots' terms."""
    dev = x._storage.device
    out = empty_tensor(tuple(shape), x._dtype, dev)
    if out.numel():
        _launch("gather", x._dtype, dev, shape, [(out._storage.buf, out._offset, out._strides),
                                                 (x._storage.buf, offset, strides)], slots)
    return out


def scatter_raw(dst, shape, strides, offset, src, src_strides, slots, accumulate=False, alpha=1):
    """For every c in `shape`: dst's storage at offset + c . strides + the slots' terms gets
    src (of dst's dtype) at src._offset + c . src_strides, or has it added (times alpha)."""
    dt, dev = dst._dtype, dst._storage.device
    if not numel_of(shape):
        return dst
    if accumulate and dt.ct in ("double", "long") and not dev.has_int64_atomics:
        return _scatter_add_host(dst, shape, strides, offset, src, src_strides, slots, alpha)
    operands = [(dst._storage.buf, offset, strides), (src._storage.buf, src._offset, src_strides)]
    if accumulate:
        _launch("scatter_add", dt, dev, shape, operands, slots, [scalar_for(dt, alpha)])
    else:
        _launch("scatter", dt, dev, shape, operands, slots)
    return dst


def copy_raw(dst, src):
    """dst <- src for tensors of one dtype and shape, any strides (src may be broadcast): the
    scatter kernel with no index, whose chunked walk beats a per-element strided copy on CPUs."""
    return scatter_raw(dst, dst._shape, dst._strides, dst._offset, src,
                       expand_strides(src, dst._shape), [])


def _scatter_add_host(dst, shape, strides, offset, src, src_strides, slots, alpha):
    """scatter_add for 64-bit types on a device without 64-bit atomics: np.add.at on the host."""
    n = numel_of(shape)
    coords = np.indices(shape).reshape(len(shape), n)
    addr = np.full(n, offset, dtype=np.int64) + sum(c * s for c, s in zip(coords, strides))
    for s in slots:
        v = view_raw(s.t, shape, s.strides, s.t._offset)._read_host().reshape(-1)
        addr = addr + np.where(v < 0, v + s.size, v) * s.mul
    vals = view_raw(src, shape, src_strides, src._offset)._read_host().reshape(-1)
    lo, hi = int(addr.min()), int(addr.max())
    span = np.empty(hi - lo + 1, dtype=dst._dtype.np)
    q, isz = dst._storage.device.queue, dst._dtype.itemsize
    cl.enqueue_copy(q, span, dst._storage.buf, src_offset=lo * isz, is_blocking=True)
    np.add.at(span, addr - lo, vals * np.asarray(alpha, dtype=span.dtype))
    cl.enqueue_copy(q, dst._storage.buf, span, dst_offset=lo * isz, is_blocking=True)
    return dst


def _first_bad(checks):
    """checks: [(int64 index tensor, lo, hi)]. None when every index lies in [lo, hi), else
    (position in checks, first bad value). One host sync; the host only reads the indices again
    to name the culprit when there is one."""
    live = [(k, t, lo, hi) for k, (t, lo, hi) in enumerate(checks) if t.numel()]
    if not live:
        return None
    dev = live[0][1]._storage.device
    # the flag is uploaded rather than filled: a fill would build the int32 copy program for
    # one zero (a script's first gather paid ~0.4 s on PoCL for it)
    flag = upload(np.zeros(1, np.int32), dtypes.int32, dev)
    kern = get_kernel(dev, PROGRAMS[dtypes.int64], "check_index")
    for _, t, lo, hi in live:
        shape, (st,) = collapse(t._shape, [list(t._strides)])
        check_dims("index", len(shape))
        launch_walk(dev, kern, t.numel(), shape, t._storage.buf, t._offset, pack8_right(st), lo,
                    hi, flag._storage.buf)
    seen = np.zeros(1, np.int32)
    cl.enqueue_copy(dev.queue, seen, flag._storage.buf, is_blocking=True)
    if not seen[0]:
        return None
    for k, t, lo, hi in live:
        a = t._read_host().reshape(-1)
        bad = np.flatnonzero((a < lo) | (a >= hi))
        if bad.size:
            return k, int(a[bad[0]])
    return None          # pragma: no cover - the flag and the host disagree


def nonzero_raw(x):
    """The coordinates of x's nonzero elements in row-major order: int64 (count, x.ndim).

    A compaction without barriers: each work-item counts the nonzeros of its chunk, the host turns
    the counts into starting rows (it has to wait for the total anyway), each work-item writes the
    coordinates of its chunk's nonzeros from its row on."""
    dev = x._storage.device
    nd = len(x._shape)
    check_dims("nonzero", nd)
    n = x.numel()
    if n == 0:
        return empty_tensor((0, nd), dtypes.int64, dev)
    x = contiguous_raw(x)
    chunk = max(64, -(-n // 8192))               # at most 8192 counts travel to the host
    groups = -(-n // chunk)
    counts = empty_tensor((groups,), dtypes.int64, dev)
    prog = PROGRAMS[x._dtype]
    gs, ls = grid(dev, groups)
    launch(dev, get_kernel(dev, prog, "nz_count"), gs, ls, x._storage.buf, x._offset, n, chunk,
           counts._storage.buf)
    host = np.empty(groups, np.int64)
    cl.enqueue_copy(dev.queue, host, counts._storage.buf, is_blocking=True)
    total = int(host.sum())
    if not (total and nd):
        return empty_tensor((total, nd), dtypes.int64, dev)
    # + the spare rows of nz_write, one per work-item
    out = empty_tensor((total + groups, nd), dtypes.int64, dev)
    starts = upload(np.cumsum(host) - host, dtypes.int64, dev)
    launch(dev, get_kernel(dev, prog, "nz_write"), gs, ls, x._storage.buf, x._offset,
           starts._storage.buf, out._storage.buf, total, n, chunk, nd, pack8_right(x._shape, 1))
    return view_raw(out, (total, nd), out._strides, 0)


def tri_raw(out, x, diagonal, upper):
    """out <- tril(x, diagonal) (or triu); out may be x itself."""
    n = x.numel()
    if n == 0:
        return out
    dev = x._storage.device
    rows, cols = x._shape[-2], x._shape[-1]
    shape, (ost, xst) = collapse(x._shape, [list(out._strides), list(x._strides)])
    check_dims("tril", len(shape))
    launch_walk(dev, get_kernel(dev, PROGRAMS[x._dtype], "tri"), n, shape, out._storage.buf,
                out._offset, pack8_right(ost), x._storage.buf, x._offset, pack8_right(xst), rows,
                cols, diagonal, int(upper))
    return out


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
    scatter_raw(dst, shape, walk, dst._offset, src, expand_strides(src, shape), slots, accumulate)
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
        return gather_raw(x, shape, walk, x._offset, slots)

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
        from .reduce import sum_to
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
        return gather_raw(x, (nz._shape[0],), [0], x._offset, slots)

    @staticmethod
    def backward(ctx, g):
        from .reduce import sum_to
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
    scatter_raw(out, (count,), [0], out._offset, src, [1], slots)
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
        from .elementwise import masked_fill
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
    bad = _first_bad([(index, -size if negative else 0, size)])
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
        if item._dtype.kind == "f":
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        if not item._shape:              # a 0-d tensor indexes like a number (one host read)
            return bool(item.item()) if item._dtype.kind == "b" else int(item.item())
        if item._dtype is dtypes.uint8:
            return item.to(dtypes.bool_)     # byte masks, as torch still accepts them
        return item
    if isinstance(item, np.ndarray) and item.ndim == 0 and item.dtype.kind in "biu":
        return item.item()                   # a 0-d array indexes like a number, as in torch
    if isinstance(item, (list, tuple, np.ndarray)):
        from .creation import tensor
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
    over it (a bool mask covers as many dims as it has)."""
    res, d, advanced = x, 0, []
    for it in items:
        if it is None or isinstance(it, bool):
            res = views.unsqueeze(res, d)
            if it is False:
                res = views.slice_dim(res, d, 0, 0)
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


def _resolve(x, advanced):
    """Turn the advanced items over view x into (dims, int64 index tensors): masks become their
    nonzero coordinates; shapes are broadcast and bounds checked."""
    same_device("index", [x] + [t for _, t in advanced])
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
        broadcast_shapes(*[t._shape for t in idx])
    except RuntimeError:
        raise IndexError(f"shape mismatch: indexing tensors could not be broadcast together with "
                         f"shapes {', '.join(size_repr(t._shape) for t in idx)}") from None
    bad = _first_bad(checks)
    if bad is not None:
        t = checks[bad[0]][0]
        d = dims[next(i for i, u in enumerate(idx) if u is t)]
        raise IndexError(f"index {bad[1]} is out of bounds for dimension {d} with size "
                         f"{x._shape[d]}")
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
    from .elementwise import TABLE, run
    from .inplace import _records
    values = _values(x, value, advanced)
    _check_masks(x, advanced)
    d, mask = advanced[0]
    if len(advanced) == 1 and mask._dtype is dtypes.bool_ and values.numel() == 1 and \
            not accumulate and not _records(x, (values,)):
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
    dims, idx = _resolve(x, advanced)
    shape = advanced_geometry(x._shape, x._strides, dims, idx)[0]
    values = _fit_values(values, shape)

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
        if t._dtype.kind == "f":
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
    values = _values(input, values, advanced)
    if not advanced:
        return views.clone(input) + values if accumulate else \
            views.clone(input).copy_(values)
    dims, idx = _resolve(input, advanced)
    shape = advanced_geometry(input._shape, input._strides, dims, idx)[0]
    return IndexPut.apply(input, _fit_values(values, shape), dims, bool(accumulate), *idx)


# ---- gathers along a dim -------------------------------------------------------------------------
def index_select(input, dim, index):
    """The slices of input at positions `index` (a vector) along dim.

    >>> import clgrad
    >>> clgrad.arange(6).view(2, 3).index_select(1, clgrad.tensor([2, 0])).tolist()
    [[2, 0], [5, 3]]
    """
    d = views._wrap(dim, len(input._shape))
    index = _index_dtype("index_select", index, exc=IndexError,
                         msg="index_select(): Expected dtype int32 or int64 for index")
    _vector_index("index_select", index)
    if index.numel() != 1 and not input._shape:
        raise RuntimeError("index_select(): Index to scalar can have only 1 value, got "
                         f"{index.numel()} value(s)")
    n = input._shape[d] if input._shape else 1
    if n == 0 and index.numel() and len(input._shape) > 1:     # a 1-d one: out of range below
        raise RuntimeError("index_select(): self indexing axis dim should be positive")
    _check_range("index_select", index, n, d, False, IndexError,
                 "index_select(): index {v} out of range in self (dimension {d} with size {n})")
    return IndexSelect.apply(input, d, index)


def _gather_shapes(op, x, dim, index, src=None):
    if len(index._shape) != len(x._shape) and index._shape and x._shape:
        raise RuntimeError(f"{op}(): Index tensor must have the same number of dimensions as "
                           f"input tensor (index {size_repr(index._shape)}, input "
                           f"{size_repr(x._shape)})")
    if src is not None and len(src._shape) != len(index._shape) and src._shape and index._shape:
        raise RuntimeError(f"{op}(): Index tensor must have the same number of dimensions as src "
                           f"tensor (index {size_repr(index._shape)}, src "
                           f"{size_repr(src._shape)})")
    for d, n in enumerate(index._shape):
        too_big = (d != dim and n > x._shape[d]) or (src is not None and n > src._shape[d])
        if too_big:
            if src is None:
                raise RuntimeError(f"Size does not match at dimension {d} expected index "
                                   f"{size_repr(index._shape)} to be no larger than self "
                                   f"{size_repr(x._shape)} apart from dimension {dim}")
            raise RuntimeError(f"{op}(): Expected index {size_repr(index._shape)} to be no larger "
                               f"than self {size_repr(x._shape)} apart from dimension {dim} and "
                               f"to be no larger size than src {size_repr(src._shape)}")


def gather(input, dim, index, *, sparse_grad=False):
    """out[i][j] = input[index[i][j]][j] (dim 0), and so on: values picked along dim.

    >>> import clgrad
    >>> x = clgrad.tensor([[1, 2], [3, 4]])
    >>> clgrad.gather(x, 1, clgrad.tensor([[0, 0], [1, 0]])).tolist()
    [[1, 1], [4, 3]]
    """
    d = views._wrap(dim, len(input._shape))
    index = _index_dtype("gather", index, msg="gather(): Expected dtype int32/int64 for index")
    same_device("gather", [input, index])
    _gather_shapes("gather", input, d, index)
    n = input._shape[d] if input._shape else 1
    _check_range("gather", index, n, d, False, RuntimeError)
    return Gather.apply(input, d, index)


def take_along_dim(input, indices, dim=None):
    """Values picked along dim by indices, broadcasting input and indices against each other
    elsewhere (the flattened input when dim is None).

    >>> import clgrad
    >>> x = clgrad.tensor([[10, 30, 20], [60, 40, 50]])
    >>> clgrad.take_along_dim(x, x.argmax(1, keepdim=True), 1).tolist()
    [[30], [60]]
    """
    if dim is None:
        return gather(input.reshape(-1), 0, indices.reshape(-1))
    if len(input._shape) != len(indices._shape):
        raise RuntimeError(f"torch.take_along_dim(): input and indices should have the same "
                           f"number of dimensions, but got {len(input._shape)} dimensions for "
                           f"input, and {len(indices._shape)} dimensions for indices")
    d = views._wrap(dim, len(input._shape))
    si, sx = list(input._shape), list(indices._shape)
    si[d] = sx[d] = 1
    b = broadcast_shapes(tuple(si), tuple(sx))
    ishape, xshape = list(b), list(b)
    ishape[d], xshape[d] = input._shape[d], indices._shape[d]
    return gather(views.expand(input, tuple(ishape)), d, views.expand(indices, tuple(xshape)))


def take(input, index):
    """Elements of the flattened input at index (negative values count from the end).

    >>> import clgrad
    >>> clgrad.arange(6).view(2, 3).take(clgrad.tensor([[0, -1]])).tolist()
    [[0, 5]]
    """
    index = _index_dtype("take", index, (dtypes.int64,),
                         f"take(): Expected a long tensor for index, but got "
                         f"{_dtype_name(index)}")
    same_device("take", [input, index])
    n = input.numel()
    _check_range("take", index, n, 0, True, IndexError,
                 "take(): out of range: tried to access index {v} on a tensor of {n} elements.")
    return Take.apply(input, index)


# ---- scatters along a dim: each has an out-of-place form and an in-place one ------------------
def _scatter_args(input, dim, index, src=None, value=None, reduce=None):
    """Check scatter's arguments; returns (op, its arguments after input)."""
    if src is None:
        src = value
    if src is None:
        raise TypeError("scatter() missing 1 required argument: 'src' or 'value'")
    if reduce is not None:
        if reduce not in ("add", "multiply"):
            raise RuntimeError(f"reduce argument must be either add or multiply, got {reduce}")
        if not isinstance(src, Tensor):
            src = full_raw(index._shape, src, input._dtype, input._storage.device)
        if reduce == "multiply":
            from .scatter_reduce import ScatterMultiply
            return ScatterMultiply, _scatter_add_args(input, dim, index, src)[1]
        return _scatter_add_args(input, dim, index, src)
    d = views._wrap(dim, len(input._shape))
    index = _index_dtype("scatter", index)
    is_tensor = isinstance(src, Tensor)
    same_device("scatter", [input, index] + ([src] if is_tensor else []))
    if is_tensor and src._dtype is not input._dtype:
        raise RuntimeError(f"scatter(): Expected self.dtype to be equal to src.dtype (got "
                           f"{_tname(input)} and {_tname(src)})")
    _gather_shapes("scatter", input, d, index, src if is_tensor else None)
    _check_range("scatter", index, input._shape[d] if input._shape else 1, d, False, RuntimeError)
    if is_tensor:
        return Scatter, (d, index, src)
    return ScatterValue, (d, index, _value_tensor(input, src))


def _scatter_add_args(input, dim, index, src):
    d = views._wrap(dim, len(input._shape))
    index = _index_dtype("scatter_add", index)
    if not isinstance(src, Tensor):
        raise TypeError(f"scatter_add(): argument 'src' must be Tensor, not {type(src).__name__}")
    same_device("scatter_add", [input, index, src])
    if src._dtype is not input._dtype:
        raise RuntimeError(f"scatter_add(): Expected self.dtype to be equal to src.dtype (got "
                           f"{_tname(input)} and {_tname(src)})")
    _gather_shapes("scatter_add", input, d, index, src)
    _check_range("scatter_add", index, input._shape[d] if input._shape else 1, d, False,
                 RuntimeError)
    return ScatterAdd, (d, index, src)


def _along_checks(op, x, dim, index, source=None):
    d = views._wrap(dim, len(x._shape))
    if source is None:
        return d
    if not isinstance(source, Tensor):
        raise TypeError(f"{op}(): argument 'source' must be Tensor, not {type(source).__name__}")
    same_device(op, [x, index, source])
    _same_dtype(op, x, source)
    k = index.numel()
    if source._shape:
        if len(source._shape) != max(len(x._shape), 1) or k != source._shape[d]:
            exc = IndexError if op == "index_copy_" else RuntimeError
            n = source._shape[d] if d < len(source._shape) else 1
            raise exc(f"{op}(): Number of indices ({k}) should be equal to source.size(dim) "
                      f"({n}), for dim: {d} (self {size_repr(x._shape)}, source "
                      f"{size_repr(source._shape)})")
        for i, (a, b) in enumerate(zip(x._shape, source._shape)):
            if i != d and a != b:
                raise RuntimeError(f"{op}(): source {size_repr(source._shape)} must have the "
                                   f"shape of self {size_repr(x._shape)} apart from dimension {d}")
    elif k != 1:
        raise RuntimeError(f"{op}(): Number of indices ({k}) should be equal to source.size(dim) "
                           f"(1), for dim: {d}")
    return d


def _index_add_args(input, dim, index, source, alpha=1):
    index = _index_dtype("index_add_", index, exc=IndexError,
                         msg="index_add_(): Expected dtype int32/int64 for index")
    _vector_index("index_add_", index)
    d = _along_checks("index_add_", input, dim, index, source)
    _check_range("index_add_", index, input._shape[d] if input._shape else 1, d, False,
                 IndexError,
                 "index_add_(): index {v} out of range in self (dimension {d} with size {n})")
    return IndexAdd, (d, index, source, alpha if input._dtype.kind == "f" else int(alpha))


def _index_copy_args(input, dim, index, source):
    index = _index_dtype("index_copy_", index, (dtypes.int64,),
                         f"index_copy_(): Expected a long tensor for index, but got "
                         f"{_dtype_name(index)}")
    _vector_index("index_copy_", index)
    d = _along_checks("index_copy_", input, dim, index, source)
    _check_range("index_copy_", index, input._shape[d] if input._shape else 1, d, False,
                 IndexError)
    return IndexCopy, (d, index, source)


def _index_fill_args(input, dim, index, value):
    index = _index_dtype("index_fill_", index, (dtypes.int64,),
                         "index_fill_(): Expected dtype int64 for index.", IndexError)
    if len(index._shape) > 1:
        raise RuntimeError(f"index_fill_(): Index has to be a vector/scalar (got "
                           f"{size_repr(index._shape)})")
    d = _along_checks("index_fill_", input, dim, index)
    if isinstance(value, Tensor) and value._shape:
        raise RuntimeError(f"index_fill_ only supports a 0-dimensional value tensor, but got "
                           f"tensor with {len(value._shape)} dimension(s).")
    _check_range("index_fill_", index, input._shape[d] if input._shape else 1, d, True,
                 IndexError)
    if isinstance(value, Tensor):
        same_device("index_fill_", [input, index, value])
        return IndexFillTensor, (d, index, value.to(input._dtype))
    return IndexFill, (d, index, _value_tensor(input, value))



def scatter(input, dim, index, src=None, *, value=None, reduce=None):
    """A copy of input with src's values (or a number) written at positions `index` along dim;
    with duplicate indices one of the values wins.

    >>> import clgrad
    >>> clgrad.zeros(2, 3).scatter(1, clgrad.tensor([[2], [0]]), 1.0).tolist()
    [[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]]
    """
    op, args = _scatter_args(input, dim, index, src, value, reduce)
    return op.apply(input, *args)


def scatter_add(input, dim, index, src):
    """A copy of input with src's values added at positions `index` along dim; duplicates add.

    >>> import clgrad
    >>> clgrad.zeros(3).scatter_add(0, clgrad.tensor([0, 0, 2]), clgrad.ones(3)).tolist()
    [2.0, 0.0, 1.0]
    """
    op, args = _scatter_add_args(input, dim, index, src)
    return op.apply(input, *args)


def index_add(input, dim, index, source, *, alpha=1):
    """A copy of input with alpha * source added at positions `index` along dim (duplicates add).

    >>> import clgrad
    >>> clgrad.zeros(3).index_add(0, clgrad.tensor([0, 0]), clgrad.tensor([1.0, 2.0])).tolist()
    [3.0, 0.0, 0.0]
    """
    op, args = _index_add_args(input, dim, index, source, alpha)
    return op.apply(input, *args)


def index_copy(input, dim, index, source):
    """A copy of input with source's slices written at positions `index` along dim.

    >>> import clgrad
    >>> clgrad.zeros(3).index_copy(0, clgrad.tensor([2, 0]), clgrad.tensor([1.0, 2.0])).tolist()
    [2.0, 0.0, 1.0]
    """
    op, args = _index_copy_args(input, dim, index, source)
    return op.apply(input, *args)


def index_fill(input, dim, index, value):
    """A copy of input with the slices at positions `index` along dim set to value (a number or
    a 0-d tensor); negative positions count from the end.

    >>> import clgrad
    >>> clgrad.zeros(2, 3).index_fill(1, clgrad.tensor([0, -1]), 7.0).tolist()
    [[7.0, 0.0, 7.0], [7.0, 0.0, 7.0]]
    """
    op, args = _index_fill_args(input, dim, index, value)
    return op.apply(input, *args)


# ---- masks ---------------------------------------------------------------------------------------
def _bool_mask(op, mask):
    if not isinstance(mask, Tensor) or mask._dtype is not dtypes.bool_:
        raise RuntimeError(f"{op}: expected BoolTensor for mask")
    return mask


def masked_select(input, mask):
    """The elements of input where mask (broadcast with it) is True, as a 1-d tensor.

    >>> import clgrad
    >>> x = clgrad.tensor([[1, 2], [3, 4]])
    >>> x.masked_select(x > 1).tolist(), x.masked_select(clgrad.tensor([True, False])).tolist()
    ([2, 3, 4], [1, 3])
    """
    _bool_mask("masked_select", mask)
    same_device("masked_select", [input, mask])
    shape = broadcast_shapes(input._shape, mask._shape)
    if not shape:
        input, mask, shape = views.reshape(input, 1), views.reshape(mask, 1), (1,)
    return MaskedSelect.apply(input, mask, shape)


def _masked_scatter_args(op, input, mask, source):
    _bool_mask(op, mask)
    if not isinstance(source, Tensor):
        raise TypeError(f"{op}(): argument 'source' must be Tensor, not {type(source).__name__}")
    same_device(op, [input, mask, source])
    if source._dtype is not input._dtype:
        raise RuntimeError(f"masked_scatter: expected self and source to have same dtypes but got "
                           f"{_tname(input)} and "
                           f"{_tname(source)}")


def masked_scatter(input, mask, source):
    """A copy of input (broadcast with mask) whose places where mask is True take source's
    elements in order.

    >>> import clgrad
    >>> x = clgrad.zeros(2, 2)
    >>> x.masked_scatter(clgrad.tensor([[True, False], [True, True]]),
    ...                  clgrad.tensor([1.0, 2.0, 3.0, 4.0])).tolist()
    [[1.0, 0.0], [2.0, 3.0]]
    """
    _masked_scatter_args("masked_scatter", input, mask, source)
    shape = broadcast_shapes(input._shape, mask._shape)
    if input._shape != shape:
        input = views.expand(input, shape)
    if mask._shape != shape:
        mask = views.expand(mask, shape)
    return MaskedScatter.apply(input, mask, source)


def masked_scatter_(self, mask, source):
    """In-place masked_scatter: mask broadcasts to self's shape."""
    check_no_internal_overlap(self)
    _masked_scatter_args("masked_scatter_", self, mask, source)
    if broadcast_shapes(self._shape, mask._shape) != self._shape:
        raise RuntimeError(f"masked_scatter_: mask {size_repr(mask._shape)} can't be broadcast to "
                           f"self {size_repr(self._shape)}")
    if mask._shape != self._shape:
        mask = views.expand(mask, self._shape)
    return _apply_(MaskedScatter, self, (mask, source), "masked_scatter_")


def nonzero(input, *, as_tuple=False):
    """Coordinates of the nonzero elements: an int64 (count, ndim) tensor, or with as_tuple one
    1-d tensor per dim (a 0-d input counts as 1-d there). Waits for the device: the result's size
    depends on the data.

    >>> import clgrad
    >>> x = clgrad.tensor([[0, 1], [2, 0]])
    >>> x.nonzero().tolist(), [t.tolist() for t in x.nonzero(as_tuple=True)]
    ([[0, 1], [1, 0]], [[0, 1], [1, 0]])
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"nonzero(): argument 'input' must be Tensor, not {type(input).__name__}")
    if as_tuple:
        return tuple(_columns(nonzero_raw(_vec(input))))
    return nonzero_raw(input)


def argwhere(input):
    """nonzero(input): the (count, ndim) coordinates of the nonzero elements.

    >>> import clgrad
    >>> clgrad.argwhere(clgrad.tensor([0, 3, 5])).tolist()
    [[1], [2]]
    """
    return nonzero(input)


# ---- in-place forms ------------------------------------------------------------------------------
def _apply_(op, self, args, name):
    """self <- op(self, *args) in place: written straight into self when autograd does not
    record (operands that share self's memory are copied first), else through apply_inplace."""
    from .inplace import apply_inplace

    def fast():
        op.write(self, *[_clone_raw(a) if isinstance(a, Tensor) and a._storage is self._storage
                         else a for a in args])
    return apply_inplace(op, self, *args, fast=fast, name=name)


def _inplace(args_of, name, doc):
    def f_(self, *args, **kwargs):
        if name != "index_fill_":       # torch lets index_fill_ write expanded tensors
            check_no_internal_overlap(self)
        op, a = args_of(self, *args, **kwargs)
        return _apply_(op, self, a, name)
    f_.__name__ = name
    f_.__doc__ = doc
    return f_


def _scatter_args_kw(self, dim, index, src=None, *, value=None, reduce=None):
    return _scatter_args(self, dim, index, src, value, reduce)


def _index_add_args_kw(self, dim, index, source, *, alpha=1):
    return _index_add_args(self, dim, index, source, alpha)


FUNCTIONS = {
    "index_put": index_put, "index_put_": index_put_, "index_select": index_select,
    "gather": gather, "scatter": scatter, "scatter_add": scatter_add, "index_add": index_add,
    "index_copy": index_copy, "index_fill": index_fill, "masked_select": masked_select,
    "masked_scatter": masked_scatter, "nonzero": nonzero, "argwhere": argwhere, "take": take,
    "take_along_dim": take_along_dim,
}
METHODS = dict(FUNCTIONS)
METHODS.update({
    "__getitem__": getitem, "__setitem__": setitem, "masked_scatter_": masked_scatter_,
    "scatter_": _inplace(_scatter_args_kw, "scatter_", "In-place scatter."),
    "scatter_add_": _inplace(_scatter_add_args, "scatter_add_", "In-place scatter_add."),
    "index_add_": _inplace(_index_add_args_kw, "index_add_", "In-place index_add."),
    "index_copy_": _inplace(_index_copy_args, "index_copy_", "In-place index_copy."),
    "index_fill_": _inplace(_index_fill_args, "index_fill_", "In-place index_fill."),
})


def class_targets_raw(target, ignore_index, dt):
    """(safe, w) for class-index targets (int64): safe is target with the ignore_index entries
    replaced by 0, w is 1 (dtype dt) where a target counts and 0 where it is ignored; one kernel
    instead of a comparison, a select, a negation and a cast. Not recorded (neither needs a
    gradient)."""
    dev = target._storage.device
    t = contiguous_raw(target)
    safe = empty_tensor(t._shape, dtypes.int64, dev)
    w = empty_tensor(t._shape, dt, dev)
    n = numel_of(t._shape)
    if n:
        gs, ls = grid(dev, n)
        launch(dev, get_kernel(dev, PROGRAMS[dt], "class_targets"), gs, ls, t._storage.buf,
               t._offset, n, int(ignore_index), safe._storage.buf, w._storage.buf)
    return safe, w

