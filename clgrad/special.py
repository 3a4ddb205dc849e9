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
from .tensor import Tensor as _Tensor
from .ops.elementwise import apply_ew

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


i0 = _sp.i0
zeta = _sp.zeta
gammainc = _sp.igamma
gammaincc = _sp.igammac


def _unary(name, example, value, grad=""):
    """A torch.special function of one tensor over table entry `name`."""

    def f(input):
        if not isinstance(input, _Tensor):
            raise TypeError(f"special_{name}(): argument 'input' (position 1) must be Tensor, "
                            f"not {type(input).__name__}")
        return apply_ew(name, input)
    f.__name__ = f.__qualname__ = name
    f.__doc__ = (f"torch.special.{name}{grad}.\n\n    >>> import clgrad\n"
                 f"    >>> abs(clgrad.special.{name}(clgrad.tensor([{example}])).item() - ({value}))"
                 f" < 1e-4\n    True\n    ")
    return f


i0e = _unary("i0e", 1.0, 0.4658, ": exp(-|x|) i0(x)")
i1 = _unary("i1", 1.0, 0.5652, ": the modified Bessel function of the first kind of order 1")
i1e = _unary("i1e", 1.0, 0.2079, ": exp(-|x|) i1(x)")
erfcx = _unary("erfcx", 30.0, 0.0188, ": exp(x^2) erfc(x), without overflow")
bessel_j0 = _unary("bessel_j0", 1.0, 0.7652, ": the Bessel function of the first kind of order 0")
bessel_j1 = _unary("bessel_j1", 1.0, 0.4401, ": the Bessel function of the first kind of order 1")
bessel_y0 = _unary("bessel_y0", 1.0, 0.0883, ": the Bessel function of the second kind of order 0")
bessel_y1 = _unary("bessel_y1", 1.0, -0.7812, ": the Bessel function of the second kind of order 1")
modified_bessel_i0 = _unary("modified_bessel_i0", 1.0, 1.2661, " (as i0, without a gradient)")
modified_bessel_i1 = _unary("modified_bessel_i1", 1.0, 0.5652, " (as i1, without a gradient)")
modified_bessel_k0 = _unary("modified_bessel_k0", 1.0, 0.421,
                            ": the modified Bessel function of the second kind of order 0")
modified_bessel_k1 = _unary("modified_bessel_k1", 1.0, 0.6019,
                            ": the modified Bessel function of the second kind of order 1")
scaled_modified_bessel_k0 = _unary("scaled_modified_bessel_k0", 1.0, 1.1445, ": exp(x) k0(x)")
scaled_modified_bessel_k1 = _unary("scaled_modified_bessel_k1", 1.0, 1.6362, ": exp(x) k1(x)")
spherical_bessel_j0 = _unary("spherical_bessel_j0", 1.0, 0.8415, ": sin(x) / x")
airy_ai = _unary("airy_ai", 1.0, 0.1353, ": the Airy function Ai")


def _polynomial(name, example):
    """A torch.special polynomial p_n(x): n a tensor or a number, truncated to an integer."""

    def f(input, n):
        if not isinstance(input, _Tensor) and not isinstance(n, _Tensor):
            raise TypeError(f"special_{name}(): expected at least one Tensor argument, got "
                            f"{type(input).__name__} and {type(n).__name__}")
        return apply_ew(name, input, n)
    f.__name__ = f.__qualname__ = name
    f.__doc__ = (f"torch.special.{name}(input, n), by its three-term recurrence.\n\n"
                 f"    >>> import clgrad\n"
                 f"    >>> abs(clgrad.special.{name}(clgrad.tensor([0.3]), 3).item() - ({example}))"
                 f" < 1e-4\n    True\n    ")
    return f


chebyshev_polynomial_t = _polynomial("chebyshev_polynomial_t", -0.792)
chebyshev_polynomial_u = _polynomial("chebyshev_polynomial_u", -0.984)
chebyshev_polynomial_v = _polynomial("chebyshev_polynomial_v", -0.344)
chebyshev_polynomial_w = _polynomial("chebyshev_polynomial_w", -1.624)
hermite_polynomial_h = _polynomial("hermite_polynomial_h", -3.384)
hermite_polynomial_he = _polynomial("hermite_polynomial_he", -0.873)
laguerre_polynomial_l = _polynomial("laguerre_polynomial_l", 0.2305)
legendre_polynomial_p = _polynomial("legendre_polynomial_p", -0.3825)
shifted_chebyshev_polynomial_t = _polynomial("shifted_chebyshev_polynomial_t", 0.944)
shifted_chebyshev_polynomial_u = _polynomial("shifted_chebyshev_polynomial_u", 1.088)
shifted_chebyshev_polynomial_v = _polynomial("shifted_chebyshev_polynomial_v", 1.448)
shifted_chebyshev_polynomial_w = _polynomial("shifted_chebyshev_polynomial_w", 0.728)

__all__ = ["digamma", "psi", "gammaln", "polygamma", "multigammaln", "erf", "erfc", "erfinv",
           "exp2", "expm1", "expit", "log1p", "logit", "sinc", "xlogy", "xlog1py", "round",
           "logsumexp", "softmax", "log_softmax", "entr", "ndtr", "ndtri", "log_ndtr", "i0",
           "i0e", "i1", "i1e", "erfcx", "zeta", "gammainc", "gammaincc", "bessel_j0",
           "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_i0", "modified_bessel_i1",
           "modified_bessel_k0", "modified_bessel_k1", "scaled_modified_bessel_k0",
           "scaled_modified_bessel_k1", "spherical_bessel_j0", "airy_ai", "chebyshev_polynomial_t",
           "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w",
           "hermite_polynomial_h", "hermite_polynomial_he", "laguerre_polynomial_l",
           "legendre_polynomial_p", "shifted_chebyshev_polynomial_t",
           "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
           "shifted_chebyshev_polynomial_w"]
