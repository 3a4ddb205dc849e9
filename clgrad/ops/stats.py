"""Statistics made of other ops: nansum, nanmean, count_nonzero, aminmax, quantile, nanquantile,
bincount, histc, trapezoid, cumulative_trapezoid.
"""
import collections

from .. import dtypes
from ..autograd.grad_mode import no_grad
from ..tensor import Tensor
from .pointwise import where
from .sort import sort_indices
from .join import stack

AminmaxReturn = collections.namedtuple("aminmax", ["min", "max"])


def nansum(input, dim=None, keepdim=False, *, dtype=None):
    """The sum with NaN counted as zero.

    >>> import clgrad
    >>> clgrad.tensor([1.0, float("nan"), 2.0]).nansum().item()
    3.0
    """
    x = input
    if x.dtype.kind == "f":
        x = where(x.isnan(), x.new_zeros(()), x)
    return x.sum(dim, keepdim=keepdim, dtype=dtype) if dim is not None else \
        x.sum(dtype=dtype)


def nanmean(input, dim=None, keepdim=False, *, dtype=None):
    """The mean of the elements that are not NaN.

    >>> import clgrad
    >>> clgrad.tensor([1.0, float("nan"), 2.0]).nanmean().item()
    1.5
    """
    if input.dtype.kind != "f":
        raise RuntimeError(f"nanmean(): expected input to have floating point dtype but got "
                           f"{str(input.dtype).replace('clgrad.', '').capitalize()}")
    count = input.isnan().logical_not().sum(dim, keepdim=keepdim) if dim is not None else \
        input.isnan().logical_not().sum()
    return nansum(input, dim, keepdim, dtype=dtype) / count


def count_nonzero(input, dim=None):
    """How many elements are not zero (along dims).

    >>> import clgrad
    >>> clgrad.tensor([[0, 1], [2, 0]]).count_nonzero(dim=0).tolist()
    [1, 1]
    """
    nz = input != 0
    return nz.sum(dim) if dim is not None else nz.sum()


def aminmax(input, *, dim=None, keepdim=False):
    """(min, max) at once.

    >>> import clgrad
    >>> clgrad.tensor([3, 1, 2]).aminmax()
    aminmax(min=tensor(1), max=tensor(3))
    """
    if dim is None:
        if input.numel() == 0:
            raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as "
                               "the operation has no identity.")
        return AminmaxReturn(input.amin(), input.amax())
    return AminmaxReturn(input.amin(dim, keepdim=keepdim), input.amax(dim, keepdim=keepdim))


_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(op, input, q, dim, keepdim, interpolation, ignore_nan):
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be Tensor")
    if input.dtype not in (dtypes.float32, dtypes.float64):
        raise RuntimeError(f"{op}() input tensor must be either float or double dtype")
    if interpolation not in _INTERPOLATIONS:
        raise ValueError(f"{op}() interpolation must be one of linear, lower, higher, midpoint "
                         f"or nearest. Got {interpolation}")
    scalar_q = not isinstance(q, Tensor)
    qt = input.new_tensor([q] if scalar_q else q.tolist()).reshape(-1) if scalar_q or \
        q.dim() <= 1 else None
    if qt is None:
        raise RuntimeError(f"{op}() q must be a scalar or 1D tensor")
    with no_grad():
        if bool(((qt < 0) | (qt > 1)).any()):
            raise RuntimeError(f"{op}() q values must be in the range [0, 1]")
    x = input.reshape(-1) if dim is None else input
    d = 0 if dim is None else x._wrap_dim(dim)
    n = x.shape[d]
    if n == 0:
        raise IndexError(f"{op}() input tensor must be non-empty")
    order = sort_indices(x, d)
    xs = x.gather(d, order)                                   # NaN last
    nans = x.isnan().sum(d, keepdim=True)
    valid = (n - nans) if ignore_nan else x.new_full(nans.shape, n, dtype=dtypes.int64)
    last = (valid - 1).clamp(min=0).to(x.dtype)               # [.., 1, ..]
    outs = []
    for qi in qt.tolist():
        pos = last * qi
        lo = pos.floor()
        hi = pos.ceil()
        if interpolation == "lower":
            pos = lo
        elif interpolation == "higher":
            pos = hi
        elif interpolation == "nearest":
            pos = pos.round()
        lo_i, hi_i = pos.floor().long(), pos.ceil().long()
        a, b = xs.gather(d, lo_i), xs.gather(d, hi_i)
        if interpolation == "midpoint":
            v = a + (b - a) * where(hi_i > lo_i, x.new_full((), 0.5), x.new_zeros(()))
        else:
            v = a + (b - a) * (pos - pos.floor())
        bad = (valid == 0) if ignore_nan else (nans > 0)      # all NaN / any NaN: NaN
        v = where(bad, x.new_full((), float("nan")), v)
        outs.append(v if keepdim and dim is not None else v.squeeze(d))
    out = outs[0] if scalar_q else stack(outs, 0)
    if dim is None and keepdim:
        out = out.reshape(((len(outs),) if not scalar_q else ()) + (1,) * input.dim())
    return out


def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):
    """The q-th quantiles along dim (of all elements when dim is None), interpolating as
    `interpolation` says; a row with NaN gives NaN.

    >>> import clgrad
    >>> clgrad.tensor([1.0, 2.0, 3.0, 4.0]).quantile(0.5).item()
    2.5
    """
    return _quantile("quantile", input, q, dim, keepdim, interpolation, False)


def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):
    """quantile ignoring NaN.

    >>> import clgrad
    >>> clgrad.tensor([1.0, float("nan"), 3.0]).nanquantile(0.5).item()
    2.0
    """
    return _quantile("nanquantile", input, q, dim, keepdim, interpolation, True)


def bincount(input, weights=None, minlength=0):
    """How often each value 0..max occurs in a 1-d int tensor (summing `weights` instead of
    ones when given).

    >>> import clgrad
    >>> clgrad.tensor([0, 1, 1, 3]).bincount().tolist()
    [1, 2, 0, 1]
    """
    if input.dim() != 1 or input.dtype.kind not in "iub" or input.dtype is dtypes.bool_:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    with no_grad():
        if input.numel() and bool((input < 0).any()):
            raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
        top = int(input.max().item()) + 1 if input.numel() else 0
    n = max(top, minlength)
    idx = input.long()
    if weights is None:
        out = idx.new_zeros((n,))
        return out.scatter_add(0, idx, idx.new_ones(idx.shape))
    w = weights if weights.dtype.kind == "f" else weights.double()
    return w.new_zeros((n,)).scatter_add(0, idx, w)


def histc(input, bins=100, min=0, max=0):
    """A histogram of `bins` equal bins between min and max (the data's range when both are 0);
    elements outside are ignored.

    >>> import clgrad
    >>> clgrad.tensor([1.0, 2.0, 1.0]).histc(bins=4, min=0, max=3).tolist()
    [0.0, 2.0, 1.0, 0.0]
    """
    if input.dtype.kind != "f":
        raise RuntimeError(f"\"histogram_cpu\" not implemented for "
                           f"'{str(input.dtype).replace('clgrad.', '').capitalize()}'")
    if bins <= 0:
        raise RuntimeError(f"torch.histc(): bins must be > 0, but got {bins} for bins")
    with no_grad():
        x = input.detach().reshape(-1)
        lo, hi = float(min), float(max)
        if lo == hi and x.numel():
            lo, hi = float(x.min().item()), float(x.max().item())
        if lo == hi:
            lo, hi = lo - 1, hi + 1
        if lo > hi:
            raise RuntimeError(f"torch.histc(): max must be larger than min, but got min {min} "
                               f"max {max}")
        inside = (x >= lo) & (x <= hi)
        b = ((x - lo) * (bins / (hi - lo))).floor().long().clamp(0, bins - 1)
        counts = x.new_zeros((bins,))
        return counts.scatter_add(0, b, inside.to(x.dtype))


def trapezoid(y, x=None, *, dx=None, dim=-1):
    """The integral of y along dim by the trapezoid rule, at spacing dx (default 1) or sample
    points x.

    >>> import clgrad
    >>> clgrad.trapezoid(clgrad.tensor([1.0, 2.0, 3.0])).item()
    4.0
    """
    d = y._wrap_dim(dim)
    n = y.shape[d]
    if n == 0:
        return y.sum(d)
    mid = (y.narrow(d, 1, n - 1) + y.narrow(d, 0, n - 1)) / 2
    if isinstance(x, Tensor):
        return (mid * _steps(x, y, d)).sum(d)
    if x is not None:
        dx = x
    return mid.sum(d) * (1.0 if dx is None else dx)


def _steps(x, y, d):
    """The spacing of sample points x along dim d of y (a 1-d x applies to every line)."""
    steps = x.diff(dim=-1 if x.dim() == 1 else d)
    if x.dim() == 1:
        shape = [1] * y.dim()
        shape[d] = y.shape[d] - 1
        steps = steps.reshape(shape)
    return steps


def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    """The running trapezoid-rule integral of y along dim (one element shorter).

    >>> import clgrad
    >>> clgrad.cumulative_trapezoid(clgrad.tensor([1.0, 2.0, 3.0])).tolist()
    [1.5, 4.0]
    """
    d = y._wrap_dim(dim)
    n = y.shape[d]
    mid = (y.narrow(d, 1, max(n - 1, 0)) + y.narrow(d, 0, max(n - 1, 0))) / 2
    if isinstance(x, Tensor):
        mid = mid * _steps(x, y, d)
    elif x is not None or dx is not None:
        mid = mid * (x if x is not None else dx)
    return mid.cumsum(d)


FUNCTIONS = {"nansum": nansum, "nanmean": nanmean, "count_nonzero": count_nonzero,
             "aminmax": aminmax, "quantile": quantile, "nanquantile": nanquantile,
             "bincount": bincount, "histc": histc, "trapezoid": trapezoid,
             "trapz": trapezoid, "cumulative_trapezoid": cumulative_trapezoid}
METHODS = {"nansum": nansum, "nanmean": nanmean, "count_nonzero": count_nonzero,
           "aminmax": aminmax, "quantile": quantile, "nanquantile": nanquantile,
           "bincount": bincount, "histc": histc}
