"""Reductions: sum, mean, prod, max/min (values and indices), amax/amin, argmax/argmin, all/any,
var/std, logsumexp, norm; each an Op with its differentiation rule beside it.

The kernels are the reduce family's (clgrad.kernels.reduce: reduce_raw and the table of what
each reduction accumulates in, its identity, how it combines and what it returns).
"""
import builtins
import collections
import math

from .. import dtypes
from ..autograd.op import Op, _null_ctx
from ..kernels.reduce import out_shape, reduce_raw
from ..tensor import Tensor, contiguous_strides, numel_of
from ._base import cast_raw, full_raw, size_repr, view_raw
from .elementwise import where, run, TABLE
from . import elementwise

# ---- dims ----------------------------------------------------------------------------------------
def wrap_dims(op, dim, ndim):
    """Reduced dimensions as a sorted tuple; None means all."""
    if dim is None:
        return tuple(range(ndim))
    if isinstance(dim, int) and not isinstance(dim, bool):
        dims = (dim,)
    else:
        dims = tuple(dim)
        if not dims:
            return tuple(range(ndim))
    out = []
    n = builtins.max(ndim, 1)
    for d in dims:
        if not isinstance(d, int) or isinstance(d, bool):
            raise TypeError(f"{op}(): dim must be an int or a tuple of ints, got {type(d).__name__}")
        if not -n <= d < n:
            raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                             f"but got {d})")
        d %= n
        if ndim == 0:
            continue
        if d in out:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
        out.append(d)
    return tuple(sorted(out))


# ---- recorded reductions ------------------------------------------------------------------------
def _keep_shape(in_shape, dims):
    return tuple(1 if i in dims else s for i, s in enumerate(in_shape))


def _expand_back(g, in_shape, dims, keepdim):
    """The gradient of a reduction's output, broadcast back over the reduced dims."""
    if not keepdim:
        g = g.reshape(_keep_shape(in_shape, dims))
    return g.expand(in_shape)


class Sum(Op):
    @staticmethod
    def forward(ctx, x, dims, keepdim, dtype):
        if dtype is not None and x._dtype is not dtype:
            x = cast_raw(x, dtype)
        ctx.dims, ctx.keepdim = dims, keepdim
        return reduce_raw("sum", x, dims, keepdim)

    @staticmethod
    def backward(ctx, g):
        shape = ctx._in_meta[0][0]
        return _expand_back(g, shape, ctx.dims, ctx.keepdim), None, None, None

    @staticmethod
    def jvp(args, tangents, out):
        return Sum.apply(tangents[0], *args[1:])


class Mean(Op):
    @staticmethod
    def forward(ctx, x, dims, keepdim, dtype):
        if dtype is not None and x._dtype is not dtype:
            x = cast_raw(x, dtype)
        if x._dtype.kind not in "fc":
            raise RuntimeError(f"mean(): could not infer output dtype. Input dtype must be either a "
                               f"floating point or complex dtype. Got: {x._dtype.name.capitalize()}")
        n = 1
        for d in dims:
            n *= x._shape[d]
        ctx.dims, ctx.keepdim, ctx.n = dims, keepdim, n
        return reduce_raw("sum", x, dims, keepdim, scale=(1.0 / n) if n else float("nan"))

    @staticmethod
    def backward(ctx, g):
        shape = ctx._in_meta[0][0]
        # divide the small gradient, then expand it (a view): dividing the expanded one was a
        # pass over the whole input's size (a LayerNorm's mean, twice per norm)
        return _expand_back(g / ctx.n, shape, ctx.dims, ctx.keepdim), None, None, None

    @staticmethod
    def jvp(args, tangents, out):
        return Mean.apply(tangents[0], *args[1:])


class Prod(Op):
    @staticmethod
    def forward(ctx, x, dims, keepdim, dtype):
        if dtype is not None and x._dtype is not dtype:
            x = cast_raw(x, dtype)
        out = reduce_raw("prod", x, dims, keepdim)
        ctx.dims, ctx.keepdim = dims, keepdim
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, g):
        x, out = ctx.saved_tensors
        gk = _expand_back(g, x._shape, ctx.dims, ctx.keepdim)
        partials = _prod_partials(x, out, ctx.dims, ctx.keepdim)
        if partials._dtype.kind == "c":             # torch's convention: g * conj(d prod / dx)
            partials = elementwise.OPS["conj"].apply(partials)
        return gk * partials, None, None, None

    @staticmethod
    def jvp(args, tangents, out):
        x, dims, keepdim, dtype = args
        t = tangents[0] if dtype is None else tangents[0].to(dtype)
        xd = x if dtype is None else x.to(dtype)
        return Sum.apply(t * _prod_partials(xd, out, dims, keepdim), dims, keepdim, None)


def _prod_partials(x, out, dims, keepdim):
    """d prod / d x at every element, without dividing by zero: out / x where the slice has no
    zero, the product of the others at a slice's only zero, 0 where a slice has two zeros."""
    shape = x._shape
    ok = _expand_back(out, shape, dims, keepdim)
    is_zero = x == 0
    zeros = is_zero.sum(dim=dims, keepdim=True)
    if zeros._shape != shape:
        zeros = zeros.expand(shape)
    nz = x.masked_fill(is_zero, 1)
    prod_nz = _expand_back(nz.prod(dim=dims, keepdim=keepdim) if dims else nz, shape, dims,
                           keepdim)
    safe = where_(is_zero, ones_like_raw(x), x)
    return where_(zeros == 0, ok / safe,
                  where_((zeros == 1).logical_and(is_zero), prod_nz, zeros_like_raw(x)))


def where_(c, a, b):
    return where(c, a, b)


def ones_like_raw(t):
    return full_raw(t._shape, 1, t._dtype, t._storage.device)


def zeros_like_raw(t):
    return full_raw(t._shape, 0, t._dtype, t._storage.device)


class AMax(Op):
    """amax / amin ("amax", "amin") and max() / min() without dim ("max", "min"): the gradient is
    shared among tied elements. As torch's, amax's backward multiplies by the mask, so a NaN or
    inf gradient reaches every element (amax().var(): NaN throughout), while max()'s fills the
    tied places only (torch on CPU)."""

    _which = "max"

    @staticmethod
    def forward(ctx, x, dims, keepdim, which):
        out = reduce_raw(which[-3:], x, dims, keepdim)
        ctx.dims, ctx.keepdim, ctx.spread = dims, keepdim, which.startswith("a")
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, g):
        x, out = ctx.saved_tensors
        shape = x._shape
        mask = x == _expand_back(out, shape, ctx.dims, ctx.keepdim)
        count = mask.sum(dim=ctx.dims, keepdim=True).to(g._dtype)
        share = _expand_back(g, shape, ctx.dims, ctx.keepdim) / count.expand(shape)
        if ctx.spread:
            return share * mask.to(share._dtype), None, None, None
        return where_(mask, share, zeros_like_raw(share)), None, None, None

    @staticmethod
    def jvp(args, tangents, out):
        x, dims, keepdim, _ = args
        t = tangents[0]
        mask = x == _expand_back(out, x._shape, dims, keepdim)
        count = mask.sum(dim=dims, keepdim=keepdim).to(t._dtype)
        return where_(mask, t, zeros_like_raw(t)).sum(dim=dims, keepdim=keepdim) / count


class MaxDim(Op):
    """max / min along one dim: values and indices; the gradient goes to the chosen index."""

    @staticmethod
    def forward(ctx, x, dim, keepdim, which):
        if x._shape and x._shape[dim] == 0:
            raise IndexError(f"{which}(): Expected reduction dim {dim} to have non-zero size.")
        dims = (dim,) if x._shape else ()
        values = reduce_raw(which, x, dims, keepdim)
        indices = reduce_raw("arg" + which, x, dims, keepdim)
        ctx.dim, ctx.keepdim = dim, keepdim
        ctx.save_for_backward(indices)
        ctx.mark_non_differentiable(indices)
        return values, indices

    @staticmethod
    def backward(ctx, g, _gi):
        idx, = ctx.saved_tensors
        shape = ctx._in_meta[0][0]
        if not shape:
            return g, None, None, None
        mask = _chosen(idx, shape, ctx.dim, ctx.keepdim)
        gk = _expand_back(g, shape, (ctx.dim,), ctx.keepdim)
        return where_(mask, gk, zeros_like_raw(gk)), None, None, None

    @staticmethod
    def jvp(args, tangents, out):
        x, dim, keepdim, _ = args
        t = tangents[0]
        if not x._shape:
            return t, None
        mask = _chosen(out[1], x._shape, dim, keepdim)
        return where_(mask, t, zeros_like_raw(t)).sum(dim=dim, keepdim=keepdim), None


def _chosen(idx, shape, dim, keepdim):
    """Mask of the elements that max/min along dim picked (idx: their indices)."""
    n = shape[dim]
    # function-level: import cycle: creation imports inplace, which imports reduce
    from .creation import arange_raw
    pos = arange_raw(n, dtypes.int64, idx._storage.device)
    pos = view_raw(pos, tuple(n if i == dim else 1 for i in range(len(shape))),
                   tuple(1 if i == dim else 0 for i in range(len(shape))), 0)
    kshape = _keep_shape(shape, (dim,))
    idx_k = idx if keepdim else view_raw(idx, kshape, contiguous_strides(kshape), idx._offset)
    return pos == idx_k


class Var(Op):
    @staticmethod
    def forward(ctx, x, dims, correction, keepdim, take_sqrt):
        _check_float("std and var", x)
        n = 1
        for d in dims:
            n *= x._shape[d]
        if n > 1:
            # shift by each row's first element: a constant row then has variance exactly 0, as
            # torch's Welford pass gives, where the float mean alone is off by an ulp
            first = view_raw(x, tuple(1 if d in dims else s for d, s in enumerate(x._shape)),
                             x._strides, x._offset)
            xs = run(TABLE["sub"], (x, first))
        else:
            xs = x
        mean = reduce_raw("sum", xs, dims, True, scale=(1.0 / n) if n else float("nan"))
        diff = run(TABLE["sub"], (xs, mean))
        sq = run(TABLE["mul"], (diff, diff))
        denom = builtins.max(n - correction, 0)
        var = reduce_raw("sum", sq, dims, keepdim,
                         scale=(1.0 / denom) if denom else float("inf"))
        if denom == 0:
            var = run(TABLE["mul"], (var, float("nan"))) if n == 0 else var
        out = run(TABLE["sqrt"], (var,)) if take_sqrt else var
        ctx.dims, ctx.keepdim, ctx.denom, ctx.take_sqrt = dims, keepdim, denom, take_sqrt
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, g):
        x, out = ctx.saved_tensors
        shape = x._shape
        dims = ctx.dims
        mean = x.mean(dim=dims, keepdim=True) if dims else x
        gk = _expand_back(g, shape, dims, ctx.keepdim)
        denom = ctx.denom if ctx.denom else float("nan")
        grad = gk * (x - mean) * (2.0 / denom)
        if ctx.take_sqrt:
            grad = _div_std(grad, _expand_back(out, shape, dims, ctx.keepdim))
        return grad, None, None, None, None

    @staticmethod
    def jvp(args, tangents, out):
        x, dims, correction, keepdim, take_sqrt = args
        n = 1
        for d in dims:
            n *= x._shape[d]
        denom = builtins.max(n - correction, 0) or float("nan")
        mean = x.mean(dim=dims, keepdim=True) if dims else x
        # the deviations sum to zero, so the tangent's own mean drops out
        t = (tangents[0] * (x - mean)).sum(dim=dims, keepdim=keepdim) * (2.0 / denom)
        return _div_std(t, out) if take_sqrt else t


def _div_std(g, std):
    """g / (2 std), 0 where std is 0: torch's std backward, so a constant feature gives a zero
    gradient rather than NaN (0 / 0)."""
    return where_(std == 0, zeros_like_raw(g), g / (std * 2))


class LogSumExp(Op):
    @staticmethod
    def forward(ctx, x, dims, keepdim):
        if x._dtype.kind != "f":
            x = cast_raw(x, dtypes.get_default_dtype())
        m = reduce_raw("max", x, dims, True) if numel_of(x._shape) else \
            full_raw(out_shape(x._shape, dims, True), float("-inf"), x._dtype, x._storage.device)
        m = run(TABLE["where"], (run(TABLE["isinf"], (m,)), full_raw((), 0, m._dtype,
                                                                      m._storage.device), m))
        e = run(TABLE["exp"], (run(TABLE["sub"], (x, m)),))
        s = reduce_raw("sum", e, dims, keepdim)
        mk = m if keepdim else view_raw(m, out_shape(x._shape, dims, False),
                                        contiguous_strides(out_shape(x._shape, dims, False)), 0)
        out = run(TABLE["add"], (run(TABLE["log"], (s,)), mk))
        ctx.dims, ctx.keepdim = dims, keepdim
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, g):
        x, out = ctx.saved_tensors
        shape = x._shape
        gk = _expand_back(g, shape, ctx.dims, ctx.keepdim)
        ok = _expand_back(out, shape, ctx.dims, ctx.keepdim)
        return gk * (x - ok).exp(), None, None

    @staticmethod
    def jvp(args, tangents, out):
        x, dims, keepdim = args
        weights = (x - _expand_back(out, x._shape, dims, keepdim)).exp()
        return (tangents[0] * weights).sum(dim=dims, keepdim=keepdim)


class Norm2(Op):
    """The 2-norm, with a zero gradient where the norm is zero (as torch gives)."""

    _node_name = "NormBackward1"

    @staticmethod
    def forward(ctx, x, dims, keepdim):
        sq = run(TABLE["mul"], (x, x))
        out = run(TABLE["sqrt"], (reduce_raw("sum", sq, dims, keepdim),))
        ctx.dims, ctx.keepdim = dims, keepdim
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, g):
        x, out = ctx.saved_tensors
        shape = x._shape
        ok = _expand_back(out, shape, ctx.dims, ctx.keepdim)
        gk = _expand_back(g, shape, ctx.dims, ctx.keepdim)
        safe = where_(ok == 0, ones_like_raw(ok), ok)
        # torch's order, grad * (x / norm): where the exact gradient cancels (F.normalize along a
        # dim of size 1) the rounding left over is then torch's
        return where_(ok == 0, zeros_like_raw(ok), gk * (x / safe)), None, None

    @staticmethod
    def jvp(args, tangents, out):
        x, dims, keepdim = args
        dot = (tangents[0] * x).sum(dim=dims, keepdim=keepdim)
        safe = where_(out == 0, ones_like_raw(out), out)
        return where_(out == 0, zeros_like_raw(out), dot / safe)


class NormP(Op):
    """The p-norm for p other than 1, 2 and +-inf, with torch's gradient (norm_backward): the
    composed |x|^p summed to the power 1/p gives inf * 0 = NaN where the norm or an element is
    zero; torch gives 0 there. p = 0 counts non-zeros: its result requires grad, but backward
    gives no gradient (torch's undefined one)."""

    _node_name = "LinalgVectorNormBackward0"

    @staticmethod
    def forward(ctx, x, p, dims, keepdim):
        a = x.abs()
        if p == 0:
            out = (a != 0).to(x._dtype).sum(dims, keepdim)
        else:
            out = a.pow(p).sum(dims, keepdim).pow(1.0 / p)
        ctx.p, ctx.dims, ctx.keepdim = p, dims, keepdim
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def _grad(x, n, p, g):
        """g times d norm / dx (n and g broadcast back over the reduced dims), in the order of
        torch's norm_backward, so that its rounding is torch's too."""
        if p < 1:       # |x|^(p-1) is inf at 0, where torch takes 0
            scaled = x.sign() * where_(x == 0, zeros_like_raw(x), x.abs().pow(p - 1))
            return scaled * g * n.pow(1 - p)
        scaled = x.sign() * x.abs().pow(p - 1) if p < 2 else x * x.abs().pow(p - 2)
        return scaled * where_(n == 0, zeros_like_raw(g), g / n.pow(p - 1))

    @staticmethod
    def backward(ctx, g):
        x, out = ctx.saved_tensors
        if ctx.p == 0:
            return None, None, None, None
        back = lambda t: _expand_back(t, x._shape, ctx.dims, ctx.keepdim)  # noqa: E731
        return NormP._grad(x, back(out), ctx.p, back(g)), None, None, None

    @staticmethod
    def jvp(args, tangents, out):
        x, p, dims, keepdim = args
        if p == 0:
            return zeros_like_raw(out)
        # the factor of the tangent is constant along the reduced dims
        return NormP._grad(x, _expand_back(out, x._shape, dims, keepdim), p, tangents[0]) \
            .sum(dims, keepdim)


# ---- the functions ------------------------------------------------------------------------------
def _dims(op, x, dim):
    return wrap_dims(op, dim, len(x._shape))


def sum(x, dim=None, keepdim=False, *, dtype=None):
    """Sum over `dim` (all dims when None); ints and bools sum to int64.

    >>> import clgrad
    >>> clgrad.tensor([[1, 2], [3, 4]]).sum(0).tolist()
    [4, 6]
    """
    if dtype is not None:
        dtype = dtypes.as_dtype(dtype)
    return Sum.apply(x, _dims("sum", x, dim), bool(keepdim), dtype)


def mean(x, dim=None, keepdim=False, *, dtype=None):
    """Mean over `dim` (all dims when None).

    >>> import clgrad
    >>> clgrad.tensor([1.0, 2.0, 6.0]).mean().item()
    3.0
    """
    if dtype is not None:
        dtype = dtypes.as_dtype(dtype)
    return Mean.apply(x, _dims("mean", x, dim), bool(keepdim), dtype)


def prod(x, dim=None, keepdim=False, *, dtype=None):
    """Product over one dim (all elements when None).

    >>> import clgrad
    >>> clgrad.tensor([2.0, 3.0, 4.0]).prod().item()
    24.0
    """
    if dtype is not None:
        dtype = dtypes.as_dtype(dtype)
    return Prod.apply(x, _dims("prod", x, dim), bool(keepdim), dtype)


def sum_to(t, shape):
    """Sum t down to `shape` (undo broadcasting).

    >>> import clgrad
    >>> clgrad.ones(2, 3).sum_to_size(1, 3).tolist()
    [[2.0, 2.0, 2.0]]
    """
    shape = tuple(shape)
    if t._shape == shape:
        return t
    lead = len(t._shape) - len(shape)
    if lead < 0:
        raise RuntimeError(f"size {size_repr(shape)} is not expandable to size "
                           f"{size_repr(t._shape)}")
    dims = list(range(lead))
    for i, s in enumerate(shape):
        ts = t._shape[lead + i]
        if s == 1 and ts != 1:
            dims.append(lead + i)
        elif s != ts:
            raise RuntimeError(f"size {size_repr(shape)} is not expandable to size "
                               f"{size_repr(t._shape)}")
    if dims == list(range(lead)):
        return Sum.apply(t, tuple(dims), False, None)  # a bias's gradient: no view to copy later
    r = Sum.apply(t, tuple(dims), True, None) if dims else t
    if r._shape != shape:
        r = r.reshape(shape)
    return r


MinMax = collections.namedtuple("max", ["values", "indices"])
MinReturn = collections.namedtuple("min", ["values", "indices"])


def _check_empty_extreme(name, x, dim, dims):
    """torch's rules for max/min over an empty tensor: with no dim, a RuntimeError; an empty
    reduced dim, an IndexError; empty kept dims only give an empty result."""
    if numel_of(x._shape):
        return
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
        raise RuntimeError(f"{name}(): Expected reduction dim to be specified for input.numel() "
                           f"== 0. Specify the reduction dim with the 'dim' argument.")
    for d in dims:
        if x._shape[d] == 0:
            raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")


def _minmax(which, x, dim, keepdim, other):
    if other is not None:
        return elementwise.OPS["maximum" if which == "max" else "minimum"].apply(x, other)
    if dim is None:
        _check_empty_extreme(which, x, None, ())
        return AMax.apply(x, tuple(range(len(x._shape))), False, which)
    d = x._wrap_dim(dim)
    vals, idx = MaxDim.apply(x, d, bool(keepdim), which)
    return (MinMax if which == "max" else MinReturn)(vals, idx)


def max(x, dim=None, keepdim=False, *, other=None):
    """Largest element; with `dim`, (values, indices) along it; with a tensor, the elementwise
    maximum.

    >>> import clgrad
    >>> clgrad.tensor([[1, 5], [7, 2]]).max(1).indices.tolist()
    [1, 0]
    """
    if isinstance(dim, Tensor):
        dim, other = None, dim
    return _minmax("max", x, dim, keepdim, other)


def min(x, dim=None, keepdim=False, *, other=None):
    """Smallest element; with `dim`, (values, indices) along it.

    >>> import clgrad
    >>> clgrad.tensor([3.0, 1.0, 2.0]).min().item()
    1.0
    """
    if isinstance(dim, Tensor):
        dim, other = None, dim
    return _minmax("min", x, dim, keepdim, other)


def amax(x, dim=(), keepdim=False):
    """Largest elements over dims (all when empty); ties share the gradient.

    >>> import clgrad
    >>> clgrad.tensor([[1.0, 5.0], [7.0, 2.0]]).amax(0).tolist()
    [7.0, 5.0]
    """
    dims = _dims("amax", x, dim)
    _check_empty_extreme("amax", x, dim, dims)
    return AMax.apply(x, dims, bool(keepdim), "amax")


def amin(x, dim=(), keepdim=False):
    """Smallest elements over dims (all when empty).

    >>> import clgrad
    >>> clgrad.tensor([[1.0, 5.0], [7.0, 2.0]]).amin(1).tolist()
    [1.0, 2.0]
    """
    dims = _dims("amin", x, dim)
    _check_empty_extreme("amin", x, dim, dims)
    return AMax.apply(x, dims, bool(keepdim), "amin")


def _argext(which, x, dim, keepdim):
    if x._dtype is dtypes.bool_:
        raise RuntimeError(f"arg{which}(): does not support bool input")
    if dim is None:
        flat = x.reshape(-1)
        if numel_of(x._shape) == 0:
            raise IndexError(f"arg{which}(): Expected reduction dim to be specified for "
                             f"input.numel() == 0.")
        r = reduce_raw("arg" + which, flat, (0,), False)
        return r.reshape((1,) * len(x._shape)) if keepdim else r
    d = x._wrap_dim(dim)
    if x._shape and x._shape[d] == 0:
        raise IndexError(f"arg{which}(): Expected reduction dim {d} to have non-zero size.")
    return reduce_raw("arg" + which, x, (d,) if x._shape else (), keepdim)


def argmax(x, dim=None, keepdim=False):
    """Index of the largest element (first one on ties; NaN counts as largest).

    >>> import clgrad
    >>> clgrad.tensor([1.0, 9.0, 3.0]).argmax().item()
    1
    """
    return _argext("max", x, dim, keepdim)


def argmin(x, dim=None, keepdim=False):
    """Index of the smallest element.

    >>> import clgrad
    >>> clgrad.tensor([4.0, 1.0, 3.0]).argmin().item()
    1
    """
    return _argext("min", x, dim, keepdim)


def _as_bool(x):
    if x._dtype is dtypes.bool_:
        return x
    return run(TABLE["ne"], (x, 0))


def all(x, dim=None, keepdim=False):
    """Whether all elements (along dim) are non-zero.

    >>> import clgrad
    >>> clgrad.tensor([True, False]).all().item()
    False
    """
    return reduce_raw("all", _as_bool(x), _dims("all", x, dim), keepdim)


def any(x, dim=None, keepdim=False):
    """Whether any element (along dim) is non-zero.

    >>> import clgrad
    >>> clgrad.tensor([0, 0, 3]).any().item()
    True
    """
    return reduce_raw("any", _as_bool(x), _dims("any", x, dim), keepdim)


def _check_float(op, x):
    """torch checks the dtype of std / var before their dims: an integer tensor with a dim out
    of range is this RuntimeError, not the IndexError."""
    if x._dtype.kind not in "fc":
        raise RuntimeError(f"{op} only support floating point and complex dtypes, got "
                           f"{x._dtype}")


def _correction(unbiased, correction):
    if correction is not None:
        return correction
    if unbiased is None:
        return 1
    return 1 if unbiased else 0


def var(x, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """Variance over dims with Bessel's `correction` (1 unless told).

    >>> import clgrad
    >>> round(clgrad.tensor([1.0, 2.0, 3.0, 4.0]).var().item(), 5)
    1.66667
    """
    if isinstance(dim, bool):
        unbiased, dim = dim, None
    _check_float("std and var", x)
    return _var_or_std(x, _dims("var", x, dim), _correction(unbiased, correction), bool(keepdim),
                       False)


def std(x, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """Standard deviation over dims with Bessel's `correction` (1 unless told).

    >>> import clgrad
    >>> round(clgrad.tensor([1.0, 3.0]).std().item(), 4)
    1.4142
    """
    if isinstance(dim, bool):
        unbiased, dim = dim, None
    _check_float("std and var", x)
    return _var_or_std(x, _dims("std", x, dim), _correction(unbiased, correction), bool(keepdim),
                       True)


def _var_or_std(x, dims, correction, keepdim, take_sqrt):
    if x._dtype.kind != "c":
        return Var.apply(x, dims, correction, keepdim, take_sqrt)
    # a complex tensor's variance is the mean of |z - mean|^2 (real), which is the sum of its
    # parts' variances: Var over the real view (the pair dim, last, is not reduced), then the
    # pair summed; gradients flow back through view_as_real
    from .complexes import view_as_real
    v = Var.apply(view_as_real(x), dims, correction, keepdim, False).sum(-1)
    return StdOfVar.apply(v) if take_sqrt else v


class StdOfVar(Op):
    """sqrt of a variance, with torch's std backward (0 where the std is 0)."""
    @staticmethod
    def forward(ctx, v):
        out = run(TABLE["sqrt"], (v,))
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, g):
        out, = ctx.saved_tensors
        return _div_std(g, out)

    @staticmethod
    def jvp(args, tangents, out):
        return _div_std(tangents[0], out)


def var_mean(x, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """(var, mean) over dims."""
    _check_float("var_mean", x)
    return var(x, dim, unbiased, keepdim, correction=correction), mean(x, dim, keepdim)


def std_mean(x, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """(std, mean) over dims."""
    _check_float("std_mean", x)
    return std(x, dim, unbiased, keepdim, correction=correction), mean(x, dim, keepdim)


def logsumexp(x, dim, keepdim=False):
    """log(sum(exp(x))) over dims, computed without overflow.

    >>> import clgrad
    >>> round(clgrad.tensor([1000.0, 1000.0]).logsumexp(0).item(), 3)
    1000.693
    """
    return LogSumExp.apply(x, _dims("logsumexp", x, dim), bool(keepdim))


def norm(x, p="fro", dim=None, keepdim=False, dtype=None):
    """Vector p-norm over dims (2, 1, inf, -inf, 0, any real p; 'fro' is 2).

    >>> import clgrad
    >>> clgrad.tensor([3.0, 4.0]).norm().item()
    5.0
    """
    if dtype is not None:
        x = x.to(dtypes.as_dtype(dtype))
    if isinstance(p, str) and not (p == "fro" and (dim is None or isinstance(dim, int) or
                                                   len(dim) <= 2)):
        # torch.norm hands 'nuc', 'fro' over more than two dims and unknown names to
        # linalg.matrix_norm, which takes them or raises its errors
        # function-level: import cycle: linalg_lu imports pointwise, which imports reduce
        from .linalg_lu import matrix_norm
        return matrix_norm(x, p, tuple(range(x.ndim)) if dim is None else dim, keepdim)
    if x._dtype.kind == "c":
        x = x.abs()                # a complex vector's norm is its magnitudes' (real)
    if x._dtype.kind != "f":
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as "
                           f"input. Got {dtypes.TORCH_NAMES[x._dtype]}")
    dims = _dims("norm", x, dim)
    if p == "fro" or p == 2 or p is None:
        return Norm2.apply(x, dims, bool(keepdim))
    p = float(p)
    if (p < 0 or p == math.inf) and not numel_of(x._shape):     # torch: no identity to give
        empty = [d for d in dims if not x._shape[d]] if dim is not None and dims else None
        if empty is None or empty:
            where = "an empty tensor" if empty is None else f"the dimension {empty[0]} (empty)"
            raise RuntimeError(f"linalg.vector_norm cannot compute the {p:g} norm on {where} "
                               f"because the operation does not have an identity (input of "
                               f"shape {size_repr(x._shape)})")
    a = x.abs()
    if p == math.inf:
        return a.amax(dims, keepdim)
    if p == -math.inf:
        return a.amin(dims, keepdim)
    if p == 1:
        return a.sum(dims, keepdim)
    return NormP.apply(x, p, dims, bool(keepdim))


__all__ = ["sum", "mean", "prod", "max", "min", "amax", "amin", "argmax", "argmin", "all", "any",
           "var", "std", "var_mean", "std_mean", "logsumexp", "norm", "sum_to", "reduce_raw",
           "wrap_dims"]
