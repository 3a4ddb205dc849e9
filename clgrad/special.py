"""torch.special: the special functions clgrad has, under torch.special's names.

>>> import clgrad
>>> abs(clgrad.special.gammaln(clgrad.tensor([5.0])).item() - 3.1781) < 1e-4      # log(4!)
True
"""
import math

from .ops import pointwise as _pw
from .ops import reduce as _reduce
from .ops import softmax as _softmax
from .ops import special as _sp
from .ops.pointwise import where as _where

digamma = _pw.FUNCTIONS["digamma"]
psi = digamma
gammaln = _pw.FUNCTIONS["lgamma"]
polygamma = _sp.polygamma
multigammaln = _sp.mvlgamma
erf = _pw.FUNCTIONS["erf"]
erfc = _pw.FUNCTIONS["erfc"]
erfinv = _sp.erfinv
exp2 = _pw.FUNCTIONS["exp2"]
expm1 = _pw.FUNCTIONS["expm1"]
expit = _pw.FUNCTIONS["sigmoid"]
log1p = _pw.FUNCTIONS["log1p"]
logit = _sp.logit
sinc = _sp.sinc
xlogy = _sp.xlogy
round = _pw.round          # (the doctests below use no round(): this name shadows Python's here)
logsumexp = _reduce.logsumexp


def softmax(input, dim, *, dtype=None):
    """softmax along dim (torch.special.softmax: dim is required)."""
    return _softmax.softmax(input, dim, dtype=dtype)


def log_softmax(input, dim, *, dtype=None):
    """log_softmax along dim."""
    return _softmax.log_softmax(input, dim, dtype=dtype)


def _float(name, x):
    return _sp._float(name, x)


def entr(input):
    """-x log x for x > 0, 0 at 0, -inf for x < 0.

    >>> import clgrad
    >>> clgrad.special.entr(clgrad.tensor([0.0, 1.0, -1.0])).tolist()
    [0.0, -0.0, -inf]
    """
    x = _float("entr", input)
    pos = x > 0
    safe = _where(pos, x, x.new_ones(()))        # keeps log's gradient finite where unused
    out = -safe * safe.log()
    return _where(pos, out, _where(x == 0, x.new_zeros(()), x.new_full((), -math.inf)))


def xlog1py(input, other):
    """input * log1p(other), 0 where input is 0 (unless other is NaN).

    >>> import clgrad
    >>> clgrad.special.xlog1py(clgrad.tensor([0.0, 2.0]), clgrad.tensor([-1.0, 0.0])).tolist()
    [0.0, 0.0]
    """
    x, y = _sp._tensors("xlog1py", input, other)
    x, y = _float("xlog1py", x), _float("xlog1py", y)
    prod = x * y.log1p()
    zero = (x == 0).logical_and(y.isnan().logical_not())
    return _where(zero, prod.new_zeros(()), prod)


def ndtr(input):
    """The standard normal distribution function, 0.5 erfc(-x / sqrt(2)).

    >>> import clgrad
    >>> clgrad.special.ndtr(clgrad.tensor([0.0])).item()
    0.5
    """
    return (_float("ndtr", input) * -math.sqrt(0.5)).erfc() * 0.5


def ndtri(input):
    """The inverse of ndtr: sqrt(2) erfinv(2p - 1).

    >>> import clgrad
    >>> abs(clgrad.special.ndtri(clgrad.tensor([0.975])).item() - 1.95996) < 1e-4
    True
    """
    return erfinv(_float("ndtri", input) * 2 - 1) * math.sqrt(2.0)


def log_ndtr(input):
    """log(ndtr(x)), by the asymptotic series of the normal tail below x = -20, where ndtr
    underflows.

    >>> import clgrad
    >>> x = clgrad.tensor([-30.0], dtype=clgrad.float64)
    >>> abs(clgrad.special.log_ndtr(x).item() + 454.3212) < 1e-4
    True
    """
    x = _float("log_ndtr", input)
    far = x < -20
    xs = _where(far, x, x.new_full((), -20.0))             # the series, on x <= -20 only
    z = 1 / (xs * xs)
    tail = (-0.5 * xs * xs - (-xs).log() - 0.5 * math.log(2 * math.pi)
            + (1 - z * (1 - z * (3 - z * (15 - z * 105)))).log())
    xn = _where(far, x.new_zeros(()), x)                   # the direct form, elsewhere
    return _where(far, tail, ndtr(xn).log())


__all__ = ["digamma", "psi", "gammaln", "polygamma", "multigammaln", "erf", "erfc", "erfinv",
           "exp2", "expm1", "expit", "log1p", "logit", "sinc", "xlogy", "xlog1py", "round",
           "logsumexp", "softmax", "log_softmax", "entr", "ndtr", "ndtri", "log_ndtr"]
