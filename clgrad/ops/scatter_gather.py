"""The gathers, scatters and mask ops along a dim, out of place and in place: index_select,
gather, take, take_along_dim, scatter, scatter_add, index_add, index_copy, index_fill,
masked_select, masked_scatter, nonzero, argwhere. Argument checks with torch's messages here;
the Ops are in clgrad/ops/index.py, the kernels in clgrad/kernels/index.py.
"""
from .. import dtypes
from ..kernels.index import nonzero_raw
from ..tensor import Tensor
from . import views
from ._base import broadcast_shapes, check_no_internal_overlap, full_raw, same_device, size_repr
from .index import (Gather, IndexAdd, IndexCopy, IndexFill, IndexFillTensor, IndexSelect,
                    MaskedScatter, MaskedSelect, Scatter, ScatterAdd, ScatterValue, Take, _apply_,
                    _check_range, _columns, _dtype_name, _index_dtype, _same_dtype, _tname,
                    _value_tensor, _vec, _vector_index)


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
            # function-level: import cycle: scatter_reduce imports scatter_gather
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
    "index_select": index_select, "gather": gather, "scatter": scatter,
    "scatter_add": scatter_add, "index_add": index_add, "index_copy": index_copy,
    "index_fill": index_fill, "masked_select": masked_select, "masked_scatter": masked_scatter,
    "nonzero": nonzero, "argwhere": argwhere, "take": take, "take_along_dim": take_along_dim,
}
METHODS = dict(FUNCTIONS)
METHODS.update({
    "masked_scatter_": masked_scatter_,
    "scatter_": _inplace(_scatter_args_kw, "scatter_", "In-place scatter."),
    "scatter_add_": _inplace(_scatter_add_args, "scatter_add_", "In-place scatter_add."),
    "index_add_": _inplace(_index_add_args_kw, "index_add_", "In-place index_add."),
    "index_copy_": _inplace(_index_copy_args, "index_copy_", "In-place index_copy."),
    "index_fill_": _inplace(_index_fill_args, "index_fill_", "In-place index_fill."),
})
