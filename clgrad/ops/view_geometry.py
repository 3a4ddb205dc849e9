"""The geometry of views, apart from the view ops themselves (clgrad/ops/views.py): resolving
a requested shape (one -1, torch's size and dims arguments), the strides that show a tensor in
another shape without a copy, wrapping dims, the (shape, strides, offset) of select, slice and
diagonal, and the layout forward mode needs so that a view's tangent is the same view of the
input's tangent."""
import builtins

from ..runtime.memory import Storage
from ..tensor import Tensor, contiguous_strides, make_tensor, numel_of
from ._base import copy_into, size_repr


# ---- geometry ------------------------------------------------------------------------------------
def infer_size(shape, numel):
    """Resolve one -1 in a requested shape, with torch's errors."""
    shape = list(shape)
    infer = None
    known = 1
    for i, s in enumerate(shape):
        if s == -1:
            if infer is not None:
                raise RuntimeError("only one dimension can be inferred")
            infer = i
        elif s < 0:
            raise RuntimeError(f"invalid shape dimension {s}")
        else:
            known *= s
    if infer is not None:
        if known == 0:
            raise RuntimeError(f"cannot reshape tensor of {numel} elements into shape "
                               f"{size_repr(shape)} because the unspecified dimension size -1 can "
                               f"be any value and is ambiguous")
        if numel % known:
            raise RuntimeError(f"shape '{size_repr(shape)}' is invalid for input of size {numel}")
        shape[infer] = numel // known
    elif known != numel:
        raise RuntimeError(f"shape '{size_repr(shape)}' is invalid for input of size {numel}")
    return tuple(shape)


def view_strides(oldshape, oldstride, newshape):
    """Strides that show a tensor of (oldshape, oldstride) as newshape without copying, or None
    (torch's computeStride)."""
    if not oldshape:
        return tuple(1 for _ in newshape)
    numel = numel_of(oldshape)
    if numel == 0:
        return contiguous_strides(newshape)
    newstride = [0] * len(newshape)
    view_d = len(newshape) - 1
    chunk_base_stride = oldstride[-1]
    tensor_numel = 1
    view_numel = 1
    for tensor_d in range(len(oldshape) - 1, -1, -1):
        tensor_numel *= oldshape[tensor_d]
        if tensor_d == 0 or (oldshape[tensor_d - 1] != 1 and
                             oldstride[tensor_d - 1] != tensor_numel * chunk_base_stride):
            while view_d >= 0 and (view_numel < tensor_numel or newshape[view_d] == 1):
                newstride[view_d] = view_numel * chunk_base_stride
                view_numel *= newshape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if tensor_d > 0:
                chunk_base_stride = oldstride[tensor_d - 1]
                tensor_numel = 1
                view_numel = 1
    if view_d != -1:
        return None
    return tuple(newstride)


def is_non_overlapping(shape, strides):
    dims = sorted((abs(st), n) for n, st in zip(shape, strides) if n > 1)
    reach = 0
    for st, n in dims:
        if st <= reach:
            return False
        reach += st * (n - 1)
    return True


def _wrap(dim, ndim):
    n = builtins.max(ndim, 1)
    if not isinstance(dim, int) or isinstance(dim, bool):
        raise TypeError(f"dim must be an int, got {type(dim).__name__}")
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but "
                         f"got {dim})")
    return dim % n


# ---- size and dims arguments -------------------------------------------------------------------
def _shape_arg(shape):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = shape[0]
    elif len(shape) == 1 and hasattr(shape[0], "__iter__") and not isinstance(shape[0], Tensor):
        shape = tuple(shape[0])
    out = []
    for s in shape:
        if isinstance(s, Tensor):
            s = int(s.item())
        if not isinstance(s, int) or isinstance(s, bool):
            try:
                s = s.__index__()
            except AttributeError:
                raise TypeError(f"shape must be a tuple of ints, got {type(s).__name__}") from None
        out.append(s)
    return tuple(out)


def keyword_sizes(op, name, args, kw):
    """The sizes (or dims) of a method taking them as `*args` or as torch's keyword `name=`
    (`kw`, None when not given): both at once is torch's TypeError."""
    if kw is None:
        return args
    if args:
        raise TypeError(f"{op}() got multiple values for argument '{name}'")
    return (kw,)


# ---- the geometry of the slicing views: (shape, strides, offset) of the result ----------------
def _select_geom(shape, strides, offset, dim, index):
    return (shape[:dim] + shape[dim + 1:], strides[:dim] + strides[dim + 1:],
            offset + index * strides[dim])


def _slice_geom(shape, strides, offset, dim, start, stop, step):
    n = builtins.max(0, -(-(stop - start) // step))
    return (shape[:dim] + (n,) + shape[dim + 1:],
            strides[:dim] + (strides[dim] * step,) + strides[dim + 1:],
            offset + start * strides[dim] if n else offset)


def _diag_geom(shape, strides, offset, off, d1, d2):
    if off >= 0:
        n = builtins.max(0, builtins.min(shape[d1], shape[d2] - off))
        start = offset + off * strides[d2] if n else offset
    else:
        n = builtins.max(0, builtins.min(shape[d1] + off, shape[d2]))
        start = offset - off * strides[d1] if n else offset
    keep = [i for i in range(len(shape)) if i not in (d1, d2)]
    return (tuple(shape[i] for i in keep) + (n,),
            tuple(strides[i] for i in keep) + (strides[d1] + strides[d2],), start)


# ---- forward mode: a view's tangent is the same view of the input's tangent ---------------------
def _extent(t):
    """Elements of storage that t's view reaches (counting from element 0)."""
    if numel_of(t._shape) == 0:
        return t._offset
    return t._offset + 1 + builtins.sum((n - 1) * s for n, s in zip(t._shape, t._strides) if s > 0)


def same_layout(primal, tangent):
    """Whether tangent is laid out like primal (shape, strides, offset, enough storage): then any
    view of the primal, taken with the same geometry, is the same view of the tangent."""
    return (tangent._shape == primal._shape and tangent._strides == primal._strides and
            tangent._offset == primal._offset and
            tangent._storage.nbytes // tangent._dtype.itemsize >= _extent(primal))


def empty_with_layout(primal, dtype=None):
    """An uninitialised tensor laid out like primal, over a storage as long as primal's."""
    dt = dtype or primal._dtype
    storage = Storage(primal._storage.device,
                      primal._storage.nbytes // primal._dtype.itemsize * dt.itemsize)
    return make_tensor(storage, primal._shape, primal._strides, primal._offset, dt,
                       primal._contig)


def in_layout_of(primal, tangent):
    """tangent itself when it is laid out like primal, else a copy that is."""
    if same_layout(primal, tangent):
        return tangent
    return copy_into(empty_with_layout(primal, tangent._dtype), tangent)


def view_jvp(cls, args, tangents, out):
    """The jvp rule of every view op: apply the view to the input's tangent, laid out like the
    input so that absolute geometry (as_strided's offset, view's strides) means the same."""
    t = tangents[0]
    if t is None:
        return None
    return cls.apply(in_layout_of(args[0], t), *args[1:])
