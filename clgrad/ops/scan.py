"""The scans: cumsum, cumprod, cummax, cummin, logcumsumexp, each an Op with its
differentiation rule. The kernels are the scan family's (clgrad.kernels.scan); the backward
passes are ops too, written so that they can be differentiated again (double backward).
"""
import collections

from .. import dtypes
from ..autograd.grad_mode import state as _state
from ..autograd.op import Op
from ..kernels.scan import cumext_backward_raw, cumext_gather_raw, scan_raw
from ..tensor import Tensor, numel_of
from ._base import cast_raw
from .join import cat
from .pointwise import where
from .softmax import _check_dtype


class Cumsum(Op):
    """Running sums along dim (from the end when `reverse`); the gradient is the reversed
    running sum of the gradient."""

    @staticmethod
    def forward(ctx, x, dim, reverse):
        ctx.dim, ctx.reverse = dim, reverse
        return scan_raw("cumsum", x, dim, reverse)[0]

    @staticmethod
    def backward(ctx, g):
        return Cumsum.apply(g, ctx.dim, not ctx.reverse), None, None

    @staticmethod
    def jvp(args, tangents, out):
        return Cumsum.apply(tangents[0], *args[1:])


class Cumprod(Op):
    """Running products along dim; backward copes with zeros (_cumprod_backward)."""

    @staticmethod
    def forward(ctx, x, dim):
        out = scan_raw("cumprod", x, dim)[0]
        ctx.dim = dim
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, g):
        x, out = ctx.saved_tensors
        if x._dtype.kind == "c":
            # torch's convention, g * conj(d out / dx): the same sums of products of conj(x)
            x, out = x.conj(), out.conj()
        return _cumprod_backward(g, x, out, ctx.dim), None


def _rcumsum(t, dim):
    return Cumsum.apply(t, dim, True)


def _cumprod_backward(g, x, out, dim):
    """d out_k / d x_i = prod(x_j, j <= k, j != i), zeros in x included (as torch's
    cumprod_backward)."""
    if numel_of(x._shape) <= 1 or x._shape[dim] == 1:
        return g
    if _state.grad_enabled:
        # create_graph: a formula whose own derivative is right too. Without zeros the simple
        # one is; with them, torch's O(n^2) sum of products that leave out x_i.
        if not (x == 0).any().item():
            return _rcumsum(g * out, dim) / x
        return _cumprod_backward_quadratic(g, x, dim)
    # O(n) and no host sync: before the first zero of a line out_k / x_i is safe; the first zero
    # collects the products of the non-zeros up to each k before the second zero; after the
    # first zero every product holds it.
    is_zero = x == 0
    zeros_so_far = Cumsum.apply(is_zero, dim, False)
    nonzero = x.masked_fill(is_zero, 1)
    w = g * Cumprod.apply(nonzero, dim)
    before = zeros_so_far == 0
    first = zeros_so_far == 1
    zero = w.new_zeros(())
    grad_before = _rcumsum(w.masked_fill(~before, 0), dim) / nonzero
    grad_first = _rcumsum(w.masked_fill(~first, 0), dim)
    return where(before, grad_before, where(first.logical_and(is_zero), grad_first, zero))


def _cumprod_backward_quadratic(g, x, dim):
    """grad_k = sum over j >= k of g_j * prod(x_i, i <= j, i != k), one k at a time."""
    n = x._shape[dim]
    cols = []
    for k in range(n):
        parts = []
        if k > 0:
            before = x.narrow(dim, 0, k).prod(dim, keepdim=True)
        else:
            before = x.new_ones(tuple(1 if i == dim else s for i, s in enumerate(x._shape)))
        parts.append(before)
        if k < n - 1:
            parts.append(before * Cumprod.apply(x.narrow(dim, k + 1, n - k - 1), dim))
        left_out = cat(parts, dim) if len(parts) > 1 else parts[0]
        cols.append((g.narrow(dim, k, n - k) * left_out).sum(dim, keepdim=True))
    return cat(cols, dim)


_LOWEST = {dtypes.float32: -3.4028234663852886e38, dtypes.float64: -1.7976931348623157e308,
           dtypes.float16: -65504.0, dtypes.bfloat16: -3.3895313892515355e38}


class Logcumsumexp(Op):
    """log(cumsum(exp(x))) along dim (from the end when `reverse`)."""

    @staticmethod
    def forward(ctx, x, dim, reverse):
        out = scan_raw("logcumsumexp", x, dim, reverse)[0]
        ctx.dim, ctx.reverse = dim, reverse
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, g):
        # sum over the k that x_i reaches of g_k exp(x_i - out_k) (as torch computes it)
        x, out = ctx.saved_tensors
        if not g._shape or numel_of(g._shape) == 0:
            return g, None, None
        pos, neg = _signed_logcumsumexp(g, -out, ctx.dim, not ctx.reverse)
        return (pos + x).exp() - (neg + x).exp(), None, None

    @staticmethod
    def jvp(args, tangents, out):
        # sum over the j that out_k reaches of t_j exp(x_j - out_k); from the backward formula the
        # double-vjp trick would take log|u| at u = 0
        x, dim, reverse = args
        t = tangents[0]
        if not t._shape or numel_of(t._shape) == 0:
            return t
        pos, neg = _signed_logcumsumexp(t, x, dim, reverse)
        return (pos - out).exp() - (neg - out).exp()


def _signed_logcumsumexp(w, a, dim, reverse):
    """The logs of the running sums of w * exp(a) over w's positive and negative parts apart: sums
    of exponentials, kept from overflowing as logcumsumexps."""
    lowest = w.new_full((), _LOWEST[w._dtype])           # log(0), finite: lowest - x is no NaN
    log_abs = w.abs().log()
    pos = Logcumsumexp.apply(where(w > 0, log_abs, lowest) + a, dim, reverse)
    neg = Logcumsumexp.apply(where(w < 0, log_abs, lowest) + a, dim, reverse)
    return pos, neg


class Cummax(Op):
    """Running maximum along dim and where it was found; the gradient goes to that index."""

    _which = "cummax"

    @classmethod
    def forward(cls, ctx, x, dim):
        values, indices = scan_raw(cls._which, x, dim)
        ctx.dim = dim
        ctx.save_for_backward(indices)
        ctx.mark_non_differentiable(indices)
        return values, indices

    @staticmethod
    def backward(ctx, g, _gi):
        if g is None:
            return None, None
        idx, = ctx.saved_tensors
        return CummaxminBackward.apply(g, idx, ctx.dim), None

    @staticmethod
    def jvp(args, tangents, out):
        return CummaxminGather.apply(tangents[0], out[1], args[1]), None


class Cummin(Cummax):
    _which = "cummin"


Cummax._backward_cls._handles_none = True       # no zeros made for the indices' gradient
Cummin._backward_cls._handles_none = True


class CummaxminBackward(Op):
    """The gradient of cummax / cummin: g summed onto the chosen indices (torch's
    cummaxmin_backward, a scatter_add)."""

    @staticmethod
    def forward(ctx, g, idx, dim):
        ctx.dim = dim
        ctx.save_for_backward(idx)
        return cumext_backward_raw(g, idx, dim)

    @staticmethod
    def backward(ctx, gg):
        idx, = ctx.saved_tensors
        return CummaxminGather.apply(gg, idx, ctx.dim), None, None


class CummaxminGather(Op):
    """x at the indices cummax / cummin chose (the adjoint of CummaxminBackward)."""

    @staticmethod
    def forward(ctx, x, idx, dim):
        ctx.dim = dim
        ctx.save_for_backward(idx)
        return cumext_gather_raw(x, idx, dim)

    @staticmethod
    def backward(ctx, g):
        idx, = ctx.saved_tensors
        return CummaxminBackward.apply(g, idx, ctx.dim), None, None


def _scan_input(op, input, dim, dtype=None):
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(input).__name__}")
    if dim is None or isinstance(dim, bool):
        raise TypeError(f"{op}(): argument 'dim' must be int, not {type(dim).__name__}")
    if dtype is not None:
        input = input.to(dtypes.as_dtype(dtype))
    return input, input._wrap_dim(dim)


def cumsum(input, dim, *, dtype=None):
    """Running sums along dim; ints and bools accumulate to int64 unless `dtype` says otherwise.

    >>> import clgrad
    >>> clgrad.tensor([1, 2, 3]).cumsum(0).tolist()
    [1, 3, 6]
    """
    x, d = _scan_input("cumsum", input, dim, dtype)
    out = Cumsum.apply(x, d, False)
    return out if dtype is None or out._dtype is x._dtype else cast_raw(out, x._dtype)


def cumprod(input, dim, *, dtype=None):
    """Running products along dim; ints and bools accumulate to int64 unless `dtype` says
    otherwise.

    >>> import clgrad
    >>> clgrad.tensor([1.0, 2.0, 0.0, 4.0]).cumprod(0).tolist()
    [1.0, 2.0, 0.0, 0.0]
    """
    x, d = _scan_input("cumprod", input, dim, dtype)
    out = Cumprod.apply(x, d)
    return out if dtype is None or out._dtype is x._dtype else cast_raw(out, x._dtype)


def _check_ordered(op, x):
    if x._dtype.kind == "c":        # complex numbers have no order: torch's CPU message
        raise NotImplementedError(f'"{op}_cpu" not implemented for '
                                  f"'{dtypes.TORCH_NAMES[x._dtype]}'")


CummaxReturn = collections.namedtuple("cummax", ["values", "indices"])
CumminReturn = collections.namedtuple("cummin", ["values", "indices"])


def cummax(input, dim):
    """(values, indices): the running maximum along dim and the index it came from (the last one
    on ties; NaN beats everything).

    >>> import clgrad
    >>> clgrad.tensor([1.0, 3.0, 2.0, 3.0]).cummax(0).indices.tolist()
    [0, 1, 1, 3]
    """
    x, d = _scan_input("cummax", input, dim)
    _check_ordered("cummax", x)
    return CummaxReturn(*Cummax.apply(x, d))


def cummin(input, dim):
    """(values, indices): the running minimum along dim and the index it came from.

    >>> import clgrad
    >>> clgrad.tensor([3.0, 1.0, 2.0]).cummin(0).values.tolist()
    [3.0, 1.0, 1.0]
    """
    x, d = _scan_input("cummin", input, dim)
    _check_ordered("cummin", x)
    return CumminReturn(*Cummin.apply(x, d))


def logcumsumexp(input, dim):
    """log(cumsum(exp(input))) along dim, computed without overflow.

    >>> import clgrad
    >>> [round(v, 3) for v in clgrad.tensor([1000.0, 1000.0]).logcumsumexp(0).tolist()]
    [1000.0, 1000.693]
    """
    x, d = _scan_input("logcumsumexp", input, dim)
    _check_dtype("logcumsumexp", x)
    return Logcumsumexp.apply(x, d, False)


FUNCTIONS = {"cumsum": cumsum, "cumprod": cumprod, "cummax": cummax, "cummin": cummin,
             "logcumsumexp": logcumsumexp}
METHODS = {"cumsum": cumsum, "cumprod": cumprod, "cummax": cummax, "cummin": cummin,
           "logcumsumexp": logcumsumexp}
