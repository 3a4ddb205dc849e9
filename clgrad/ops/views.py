"""View ops: new shape, strides and offset over the same storage, never a copy. Each is described
by its geometry (a function of the input's shape, strides and offset), so that the backward of
the slicing ones is the same geometry applied to a zero tensor the input's size. The geometry
(shapes, strides, dims, forward mode's layouts) is in view_geometry.py; the ops that copy on
purpose (contiguous, clone, dtype casts) and detach are in copies.py."""
import builtins

from .. import dtypes
from ..autograd.op import Op
from ..tensor import (Tensor, contiguous_strides, empty_tensor, is_contiguous_layout, make_tensor,
                      numel_of)
from ._base import copy_into, full_raw, size_repr, view_raw
# the ops that copy live in copies.py, the geometry in view_geometry.py; the names below stay
# reachable as views.<name> for the face (views.__all__) and the ops modules that use them
from .copies import Clone, clone, contiguous, detach, detach_, to_dtype  # noqa: F401
from .view_geometry import (_diag_geom, _select_geom, _shape_arg, _slice_geom, _wrap,  # noqa: F401
                            infer_size, is_non_overlapping, keyword_sizes, view_jvp, view_strides)
from .reduce import sum_to


def _view(x, shape, strides, offset):
    return view_raw(x, shape, strides, offset)


# ---- the scatter that undoes a slicing view -------------------------------------------------------
class ViewScatter(Op):
    """A copy of `base` whose region (shape, strides, offset relative to a contiguous layout)
    holds `src`: the adjoint of taking that view."""

    @staticmethod
    def forward(ctx, base, src, shape, strides, offset):
        out = empty_tensor(base._shape, base._dtype, base._storage.device)
        copy_into(out, base)
        copy_into(view_raw(out, shape, strides, offset), src)
        ctx.geom = (shape, strides, offset)
        return out

    @staticmethod
    def backward(ctx, g):
        shape, strides, offset = ctx.geom
        g = g.contiguous()
        gb = gs = None
        if ctx.needs_input_grad[0]:
            z = full_raw(shape, 0, g._dtype, g._storage.device)
            gb = ViewScatter.apply(g, z, shape, strides, offset)
        if ctx.needs_input_grad[1]:
            gs = AsStrided.apply(g, shape, strides, g._offset + offset)
        return gb, gs, None, None, None

    @staticmethod
    def jvp(args, tangents, out):
        base, src = args[:2]
        tb, ts = tangents[:2]
        tb = tb if tb is not None else full_raw(base._shape, 0, base._dtype, base._storage.device)
        ts = ts if ts is not None else full_raw(src._shape, 0, src._dtype, src._storage.device)
        return ViewScatter.apply(tb, ts, *args[2:])


def view_scatter(base, src, shape, strides, offset):
    return ViewScatter.apply(base, src, tuple(shape), tuple(strides), offset)


def _scatter_back(g, in_shape, shape, strides, offset):
    zeros = full_raw(in_shape, 0, g._dtype, g._storage.device)
    return ViewScatter.apply(zeros, g, shape, strides, offset)


# ---- view ops ------------------------------------------------------------------------------------
class View(Op):
    _is_view = True
    jvp = classmethod(view_jvp)

    @staticmethod
    def forward(ctx, x, shape, strides):
        return _view(x, shape, strides, x._offset)

    @staticmethod
    def backward(ctx, g):
        return g.reshape(ctx._in_meta[0][0]), None, None


class Expand(Op):
    _is_view = True
    jvp = classmethod(view_jvp)

    @staticmethod
    def forward(ctx, x, shape):
        nd = len(shape)
        off = nd - len(x._shape)
        strides = []
        for i, n in enumerate(shape):
            if i < off:
                strides.append(0)
            else:
                strides.append(0 if x._shape[i - off] == 1 and n != 1 else x._strides[i - off])
        return _view(x, shape, strides, x._offset)

    @staticmethod
    def backward(ctx, g):
        return sum_to(g, ctx._in_meta[0][0]), None


class Permute(Op):
    _is_view = True
    jvp = classmethod(view_jvp)

    @staticmethod
    def forward(ctx, x, dims):
        ctx.dims = dims
        return _view(x, tuple(x._shape[d] for d in dims), tuple(x._strides[d] for d in dims),
                     x._offset)

    @staticmethod
    def backward(ctx, g):
        inv = [0] * len(ctx.dims)
        for i, d in enumerate(ctx.dims):
            inv[d] = i
        return Permute.apply(g, tuple(inv)), None


class Transpose(Op):
    _is_view = True
    jvp = classmethod(view_jvp)

    @staticmethod
    def forward(ctx, x, d0, d1):
        shape, strides = list(x._shape), list(x._strides)
        shape[d0], shape[d1] = shape[d1], shape[d0]
        strides[d0], strides[d1] = strides[d1], strides[d0]
        ctx.d = (d0, d1)
        return _view(x, tuple(shape), tuple(strides), x._offset)

    @staticmethod
    def backward(ctx, g):
        d0, d1 = ctx.d
        base = g._base
        if base is not None and g._grad_fn is None and base._offset == g._offset and \
                base._shape == _swapped(g._shape, d0, d1) and \
                base._strides == _swapped(g._strides, d0, d1):
            # g is the transpose of a whole tensor (a weight's gradient computed in the
            # weight's own layout): hand back that tensor, which .grad can then keep without
            # a copy, rather than a view of it
            return base, None, None
        return Transpose.apply(g, d0, d1), None, None


def _swapped(seq, d0, d1):
    out = list(seq)
    out[d0], out[d1] = out[d1], out[d0]
    return tuple(out)


class T(Transpose):
    pass


class Squeeze(Op):
    _is_view = True
    jvp = classmethod(view_jvp)

    @staticmethod
    def forward(ctx, x, dims):
        keep = [i for i in range(len(x._shape)) if not (i in dims and x._shape[i] == 1)]
        return _view(x, tuple(x._shape[i] for i in keep), tuple(x._strides[i] for i in keep),
                     x._offset)

    @staticmethod
    def backward(ctx, g):
        return g.reshape(ctx._in_meta[0][0]), None


class Unsqueeze(Op):
    _is_view = True
    jvp = classmethod(view_jvp)

    @staticmethod
    def forward(ctx, x, dim):
        shape, strides = list(x._shape), list(x._strides)
        st = strides[dim] * shape[dim] if dim < len(shape) else 1
        shape.insert(dim, 1)
        strides.insert(dim, st)
        ctx.dim = dim
        return _view(x, tuple(shape), tuple(strides), x._offset)

    @staticmethod
    def backward(ctx, g):
        return g.reshape(ctx._in_meta[0][0]), None


class _GeomView(Op):
    """A slicing view: forward applies `geom` to the input, backward scatters into zeros."""

    _is_view = True
    jvp = classmethod(view_jvp)
    geom = None

    @classmethod
    def _forward(cls, ctx, x, *params):
        shape, strides, offset = cls.geom(x._shape, x._strides, x._offset, *params)
        ctx.params = params
        return _view(x, shape, strides, offset)

    @classmethod
    def _backward(cls, ctx, g):
        in_shape = ctx._in_meta[0][0]
        shape, strides, offset = cls.geom(in_shape, contiguous_strides(in_shape), 0, *ctx.params)
        return (_scatter_back(g, in_shape, shape, strides, offset),) + (None,) * len(ctx.params)


def _geom_view(name, geom):
    cls = type(name, (_GeomView,), {"geom": staticmethod(geom)})
    cls.forward = staticmethod(lambda ctx, x, *p: cls._forward(ctx, x, *p))
    cls.backward = staticmethod(lambda ctx, g: cls._backward(ctx, g))
    return cls


Select = _geom_view("Select", _select_geom)
Slice = _geom_view("Slice", _slice_geom)
Diagonal = _geom_view("Diagonal", _diag_geom)


class AsStrided(Op):
    """A view given by explicit geometry. Its gradient lives in the input's memory layout: the
    incoming gradient is scattered into zeros laid out like the input's storage, which is then
    read back through the input's own strides."""

    _is_view = True
    jvp = classmethod(view_jvp)

    @staticmethod
    def forward(ctx, x, shape, strides, storage_offset):
        ctx.geom = (shape, strides, storage_offset - x._offset)
        ctx.in_strides = x._strides
        return _view(x, shape, strides, storage_offset)

    @staticmethod
    def backward(ctx, g):
        in_shape = ctx._in_meta[0][0]
        shape, strides, offset = ctx.geom
        in_strides = ctx.in_strides
        if in_strides == contiguous_strides(in_shape) or numel_of(in_shape) == 0:
            if is_non_overlapping(shape, strides):
                return _scatter_back(g, in_shape, shape, strides, offset), None, None, None
            # function-level: import cycle: index imports views
            from .index import as_strided_backward_overlapping
            return (as_strided_backward_overlapping(g, in_shape, shape, strides, offset), None,
                    None, None)
        if offset < 0 or any(s < 0 for s in in_strides):
            raise NotImplementedError("as_strided backward: the view reaches outside its input")
        span = 1 + builtins.sum((n - 1) * s for n, s in zip(in_shape, in_strides))
        if is_non_overlapping(shape, strides):
            flat = _scatter_back(g, (span,), shape, strides, offset)
        else:
            # function-level: import cycle: index imports views
            from .index import as_strided_backward_overlapping
            flat = as_strided_backward_overlapping(g, (span,), shape, strides, offset)
        return AsStrided.apply(flat, in_shape, in_strides, flat._offset), None, None, None


class Unbind(Op):
    _is_view = True
    jvp = classmethod(view_jvp)

    @staticmethod
    def forward(ctx, x, dim):
        ctx.dim = dim
        return tuple(_view(x, *_select_geom(x._shape, x._strides, x._offset, dim, i))
                     for i in range(x._shape[dim]))

    @staticmethod
    def backward(ctx, *grads):
        # function-level: import cycle: join imports views
        from .join import stack
        shape, dt, dev = ctx._in_meta[0]
        piece = shape[:ctx.dim] + shape[ctx.dim + 1:]
        gs = [g if g is not None else full_raw(piece, 0, dt, dev) for g in grads]
        return stack(gs, ctx.dim), None

    _handles_none = True


Unbind._backward_cls._handles_none = True


class SplitWithSizes(Op):
    _is_view = True
    jvp = classmethod(view_jvp)

    @staticmethod
    def forward(ctx, x, sizes, dim):
        ctx.sizes, ctx.dim = sizes, dim
        outs = []
        start = 0
        for s in sizes:
            outs.append(_view(x, *_slice_geom(x._shape, x._strides, x._offset, dim, start,
                                                start + s, 1)))
            start += s
        return tuple(outs)

    @staticmethod
    def backward(ctx, *grads):
        # function-level: import cycle: join imports views
        from .join import cat
        shape, dt, dev = ctx._in_meta[0]
        gs = []
        for g, s in zip(grads, ctx.sizes):
            if g is None:
                g = full_raw(shape[:ctx.dim] + (s,) + shape[ctx.dim + 1:], 0, dt, dev)
            gs.append(g)
        return cat(gs, ctx.dim), None, None


SplitWithSizes._backward_cls._handles_none = True


def view(x, *shape, size=None, dtype=None):
    """The same data with another shape; fails where that needs a copy (use reshape).

    >>> import clgrad
    >>> clgrad.arange(6).view(2, 3).shape, clgrad.arange(6).view(size=(3, 2)).shape
    (clgrad.Size([2, 3]), clgrad.Size([3, 2]))
    """
    if dtype is not None:
        if shape or size is not None:
            raise TypeError("view() received an invalid combination of arguments: a dtype and "
                            "a size")
        return view_dtype(x, dtype)
    shape = keyword_sizes("view", "size", shape, size)
    if len(shape) == 1 and isinstance(shape[0], dtypes.dtype):
        return view_dtype(x, shape[0])
    shape = infer_size(_shape_arg(shape), numel_of(x._shape))
    strides = view_strides(x._shape, x._strides, shape)
    if strides is None:
        raise RuntimeError(f"view size is not compatible with input tensor's size and stride (at "
                           f"least one dimension spans across two contiguous subspaces). Use "
                           f".reshape(...) instead. (input {size_repr(x._shape)} with strides "
                           f"{size_repr(x._strides)}, requested {size_repr(shape)})")
    return View.apply(x, shape, strides)


def view_dtype(x, dt):
    """The same bytes read as dtype dt (x.view(dt)): a view, not a copy. A wider or narrower
    dtype changes the size of the last dim, which must be contiguous, as in torch. The result
    does not carry gradients.

    >>> import clgrad
    >>> clgrad.tensor([1.0]).view(clgrad.int32).tolist()
    [1065353216]
    """
    old, new = x._dtype.itemsize, dt.itemsize
    shape, strides, offset = list(x._shape), list(x._strides), x._offset
    if old != new:
        if not shape:
            raise RuntimeError(f"self.dim() cannot be 0 to view {x._dtype} as {dt} (different "
                               f"element sizes)")
        if strides[-1] != 1:
            raise RuntimeError(f"self.stride(-1) must be 1 to view {x._dtype} as {dt} "
                               f"(different element sizes), but got {strides[-1]}")
        if old > new:
            r = old // new
            shape[-1] *= r
            strides = [s * r for s in strides[:-1]] + [1]
            offset *= r
        else:
            r = new // old
            if shape[-1] % r:
                raise RuntimeError(f"self.size(-1) must be divisible by {r} to view {x._dtype} "
                                   f"as {dt} (different element sizes), but got {shape[-1]}")
            if any(s % r for s in strides[:-1]) or offset % r:
                raise RuntimeError(f"self.stride(k) and the storage offset must be divisible by "
                                   f"{r} to view {x._dtype} as {dt} (different element sizes)")
            shape[-1] //= r
            strides = [s // r for s in strides[:-1]] + [1]
            offset //= r
    shape, strides = tuple(shape), tuple(strides)
    return make_tensor(x._storage, shape, strides, offset, dt,
                       is_contiguous_layout(shape, strides), x._vc)


def reshape(x, *shape, **kw):
    """The same data with another shape: a view when the strides allow it, else a copy.

    >>> import clgrad
    >>> clgrad.arange(6).reshape(3, -1).shape, clgrad.reshape(clgrad.arange(6), shape=(2, 3)).shape
    (clgrad.Size([3, 2]), clgrad.Size([2, 3]))
    """
    shape = keyword_sizes("reshape", "shape", shape, kw.pop("shape", None))
    if kw:
        raise TypeError(f"reshape() got an unexpected keyword argument '{next(iter(kw))}'")
    shape = infer_size(_shape_arg(shape), numel_of(x._shape))
    if shape == x._shape:
        return View.apply(x, shape, x._strides)
    strides = view_strides(x._shape, x._strides, shape)
    if strides is None:
        x = Clone.apply(x)
        strides = contiguous_strides(shape)
    return View.apply(x, shape, strides)


def view_as(x, other):
    return view(x, other._shape)


def reshape_as(x, other):
    return reshape(x, other._shape)


def expand(x, *shape, size=None, implicit=False):
    """A view repeating size-1 dims (and new leading dims) without copying; -1 keeps a size.

    >>> import clgrad
    >>> clgrad.tensor([[1], [2]]).expand(2, 3).tolist(), clgrad.ones(1).expand(size=(2,)).shape
    ([[1, 1, 1], [2, 2, 2]], clgrad.Size([2]))
    """
    shape = _shape_arg(keyword_sizes("expand", "size", shape, size))
    if len(shape) < len(x._shape):
        raise RuntimeError(f"expand: the number of sizes provided ({len(shape)}) must be greater or "
                           f"equal to the number of dimensions in the tensor ({len(x._shape)})")
    off = len(shape) - len(x._shape)
    out = []
    for i, n in enumerate(shape):
        if i < off:
            if n < 0:
                raise RuntimeError(f"expand: the expanded size of the tensor (-1) isn't allowed in "
                                   f"a leading, non-existing dimension {i}")
            out.append(n)
            continue
        cur = x._shape[i - off]
        if n == -1:
            n = cur
        if cur != n and cur != 1:
            raise RuntimeError(f"The expanded size of the tensor ({n}) must match the existing size "
                               f"({cur}) at non-singleton dimension {i}.  Target sizes: "
                               f"{size_repr(shape)}.  Tensor sizes: {size_repr(x._shape)}")
        out.append(n)
    out = tuple(out)
    if out == x._shape:
        return View.apply(x, out, x._strides)
    return Expand.apply(x, out)


def expand_as(x, other):
    return expand(x, other._shape)


def broadcast_to(x, shape):
    return expand(x, tuple(shape))


def permute(x, *dims, **kw):
    """A view with the dims reordered.

    >>> import clgrad
    >>> clgrad.zeros(2, 3, 4).permute(2, 0, 1).shape, clgrad.zeros(2, 3).permute(dims=(1, 0)).shape
    (clgrad.Size([4, 2, 3]), clgrad.Size([3, 2]))
    """
    dims = keyword_sizes("permute", "dims", dims, kw.pop("dims", None))
    if kw:
        raise TypeError(f"permute() got an unexpected keyword argument '{next(iter(kw))}'")
    if not dims:
        raise TypeError('permute() missing 1 required positional arguments: "dims"')
    dims = _shape_arg(dims)
    nd = len(x._shape)
    if len(dims) != nd:
        raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor input does not "
                           f"match the length of the desired ordering of dimensions i.e. input.dim() "
                           f"= {nd} is not equal to len(dims) = {len(dims)}")
    w = tuple(_wrap(d, nd) for d in dims)
    if len(set(w)) != nd:
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    return Permute.apply(x, w)


def transpose(x, dim0, dim1):
    """A view with two dims swapped.

    >>> import clgrad
    >>> clgrad.zeros(2, 3).transpose(0, 1).shape
    clgrad.Size([3, 2])
    """
    nd = len(x._shape)
    if nd == 0:
        _wrap(dim0, 0), _wrap(dim1, 0)
        return View.apply(x, x._shape, x._strides)
    d0, d1 = _wrap(dim0, nd), _wrap(dim1, nd)
    return Transpose.apply(x, d0, d1)


swapaxes = swapdims = transpose


def t(x):
    """Transpose of a tensor of at most 2 dims.

    >>> import clgrad
    >>> clgrad.zeros(2, 3).t().shape
    clgrad.Size([3, 2])
    """
    if len(x._shape) > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is "
                           f"{len(x._shape)}D")
    if len(x._shape) < 2:
        return View.apply(x, x._shape, x._strides)
    return T.apply(x, 0, 1)


def mT(x):
    if len(x._shape) < 2:
        raise RuntimeError("tensor.mT is only supported on matrices or batches of matrices. Got "
                           f"{len(x._shape)}-D tensor.")
    return transpose(x, -2, -1)


def squeeze(x, dim=None):
    """Drop size-1 dims (all, or the given ones).

    >>> import clgrad
    >>> clgrad.zeros(1, 3, 1).squeeze().shape
    clgrad.Size([3])
    """
    nd = len(x._shape)
    if dim is None:
        dims = tuple(i for i, n in enumerate(x._shape) if n == 1)
    elif isinstance(dim, int):
        dims = (_wrap(dim, nd),)
    else:
        dims = tuple(_wrap(d, nd) for d in dim)
    if nd == 0:
        dims = ()
    return Squeeze.apply(x, dims)


def unsqueeze(x, dim):
    """Insert a size-1 dim at `dim`.

    >>> import clgrad
    >>> clgrad.zeros(3).unsqueeze(0).shape
    clgrad.Size([1, 3])
    """
    return Unsqueeze.apply(x, _wrap(dim, len(x._shape) + 1))


def flatten(x, start_dim=0, end_dim=-1):
    """Merge dims start_dim..end_dim into one.

    >>> import clgrad
    >>> clgrad.zeros(2, 3, 4).flatten(1).shape
    clgrad.Size([2, 12])
    """
    nd = len(x._shape)
    if nd == 0:
        return reshape(x, (1,))
    s, e = _wrap(start_dim, nd), _wrap(end_dim, nd)
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    n = 1
    for d in range(s, e + 1):
        n *= x._shape[d]
    return reshape(x, x._shape[:s] + (n,) + x._shape[e + 1:])


def unflatten(x, dim, sizes):
    nd = len(x._shape)
    d = _wrap(dim, nd)
    sizes = infer_size(tuple(sizes), x._shape[d])
    return reshape(x, x._shape[:d] + sizes + x._shape[d + 1:])


def ravel(x):
    return reshape(x, (-1,))


def select(x, dim, index):
    """The slice at `index` along `dim`, without that dim (a view).

    >>> import clgrad
    >>> clgrad.arange(6).view(2, 3).select(1, 2).tolist()
    [2, 5]
    """
    nd = len(x._shape)
    if nd == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = _wrap(dim, nd)
    if isinstance(index, Tensor):
        index = int(index.item())
    n = x._shape[d]
    if not -n <= index < n:
        raise IndexError(f"select(): index {index} out of range for tensor of size "
                         f"{size_repr(x._shape)} at dimension {d}")
    return Select.apply(x, d, index % n)


def slice_dim(x, dim, start, stop, step=1):
    """x[..., start:stop:step, ...] along dim, with Python's clamping of start and stop."""
    n = x._shape[dim]
    if step <= 0:
        raise ValueError("step must be greater than zero")
    start, stop, _ = slice(start, stop).indices(n)
    stop = builtins.max(stop, start)
    return Slice.apply(x, dim, start, stop, step)


def narrow(x, dim, start, length):
    """The `length` elements from `start` along `dim` (a view).

    >>> import clgrad
    >>> clgrad.arange(5).narrow(0, 1, 3).tolist()
    [1, 2, 3]
    """
    nd = len(x._shape)
    d = _wrap(dim, nd)
    if isinstance(start, Tensor):
        start = int(start.item())
    n = x._shape[d]
    if start < 0:
        start += n
    if not 0 <= start <= n or length < 0 or start + length > n:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({n}).")
    return Slice.apply(x, d, start, start + length, 1)


def diagonal(x, offset=0, dim1=0, dim2=1):
    """The diagonal of the (dim1, dim2) planes, as a view.

    >>> import clgrad
    >>> clgrad.arange(9).view(3, 3).diagonal().tolist()
    [0, 4, 8]
    """
    nd = len(x._shape)
    d1, d2 = _wrap(dim1, nd), _wrap(dim2, nd)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return Diagonal.apply(x, offset, d1, d2)


def as_strided(x, size, stride, storage_offset=None):
    """A view with the given size, strides and storage offset (elements).

    >>> import clgrad
    >>> clgrad.arange(6).as_strided((2, 2), (3, 1)).tolist()
    [[0, 1], [3, 4]]
    """
    size, stride = tuple(size), tuple(stride)
    off = x._offset if storage_offset is None else storage_offset
    if len(size) != len(stride):
        raise RuntimeError(f"mismatch in length of strides and shape: {len(size)} and {len(stride)}")
    if numel_of(size):
        hi = off + builtins.sum((n - 1) * s for n, s in zip(size, stride))
        if off < 0 or hi >= x._storage.nbytes // x._dtype.itemsize:
            raise RuntimeError(f"setStorage: sizes {size_repr(size)}, strides {size_repr(stride)}, "
                               f"storage offset {off} require more storage than the tensor has")
    return AsStrided.apply(x, size, stride, off)


def unbind(x, dim=0):
    """The slices along `dim`, as a tuple of views.

    >>> import clgrad
    >>> [t.tolist() for t in clgrad.arange(4).view(2, 2).unbind(1)]
    [[0, 2], [1, 3]]
    """
    d = _wrap(dim, len(x._shape))
    if not x._shape:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    return Unbind.apply(x, d)


def split(x, split_size_or_sections, dim=0):
    """Pieces of `split_size` along dim (the last may be smaller), or of the listed sizes.

    >>> import clgrad
    >>> [t.tolist() for t in clgrad.arange(5).split(2)]
    [[0, 1], [2, 3], [4]]
    """
    d = _wrap(dim, len(x._shape))
    n = x._shape[d]
    if isinstance(split_size_or_sections, int):
        s = split_size_or_sections
        if s <= 0 and not (s == 0 and n == 0):
            raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got dimension "
                               f"size of {n}")
        sizes = [s] * (n // s) + ([n % s] if n % s else []) if s else [0]
        if not sizes:
            sizes = [0] if n == 0 else sizes
    else:
        sizes = list(split_size_or_sections)
        if builtins.sum(sizes) != n:
            raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {n} (input "
                               f"tensor's size at dimension {d}), but got split_sizes={sizes}")
    return SplitWithSizes.apply(x, tuple(sizes), d)


def split_with_sizes(x, split_sizes, dim=0):
    return split(x, list(split_sizes), dim)


def chunk(x, chunks, dim=0):
    """`chunks` pieces along dim (fewer if the size does not allow that many).

    >>> import clgrad
    >>> len(clgrad.arange(5).chunk(3))
    3
    """
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    d = _wrap(dim, len(x._shape))
    n = x._shape[d]
    if n == 0:                  # torch gives `chunks` empty pieces
        return split(x, [0] * chunks, d)
    return split(x, -(-n // chunks), d)



__all__ = ["view", "reshape", "view_as", "reshape_as", "expand", "expand_as", "broadcast_to",
           "permute", "transpose", "swapaxes", "swapdims", "t", "squeeze", "unsqueeze", "flatten",
           "unflatten", "ravel", "select", "narrow", "diagonal", "as_strided", "unbind", "split",
           "split_with_sizes", "chunk", "contiguous", "clone", "detach", "detach_", "view_scatter",
           "slice_dim", "to_dtype", "mT"]
