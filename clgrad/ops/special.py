"""Elementwise functions made of other ops: logaddexp, logaddexp2, xlogy, logit, sinc, erfinv,
heaviside, deg2rad, rad2deg.

Where the composition's own derivative would be wrong or inexact at some points (logaddexp at
equal arguments, erfinv through its approximation), the function is an Op whose forward runs the
composition without recording and whose backward is the exact formula, written in clgrad ops so
that higher derivatives work.
"""
import math

from .. import dtypes
from ..autograd.op import Op, _null_ctx
from ..autograd.grad_mode import no_grad
from ..tensor import Tensor
from .pointwise import where, inplace
from .elementwise import apply_ew, TABLE, run
from .inplace import copy_


def _tensors(op, a, b):
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        raise TypeError(f"{op}(): expected at least one Tensor argument")
    like = a if isinstance(a, Tensor) else b
    if not isinstance(a, Tensor):
        a = like.new_tensor(a)
    if not isinstance(b, Tensor):
        b = like.new_tensor(b)
    return a, b


def _float(op, t):
    if t.dtype.kind != "f":
        return t.to(dtypes.get_default_dtype())
    return t


class Logaddexp(Op):
    """log(exp(a) + exp(b)) without overflow; equal infinities give themselves."""

    @staticmethod
    def forward(ctx, a, b):
        with no_grad():
            hi = a.maximum(b)
            out = hi + (-(a - b).abs()).exp().log1p()
            out = where((a == b).logical_and(a.isinf()), a, out)
        ctx.save_for_backward(a, b)
        return out

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        w = (a - b).sigmoid()                          # exp(a) / (exp(a) + exp(b))
        return g * w, g * (1 - w)


def logaddexp(input, other):
    """log(exp(input) + exp(other)), computed without overflow.

    >>> import clgrad
    >>> round(clgrad.logaddexp(clgrad.tensor([1000.0]), clgrad.tensor([1000.0])).item(), 3)
    1000.693
    """
    a, b = _tensors("logaddexp", input, other)
    a, b = _float("logaddexp", a), _float("logaddexp", b)
    dt = dtypes.promote_types(a.dtype, b.dtype)
    return Logaddexp.apply(a.to(dt), b.to(dt))


def logaddexp2(input, other):
    """log2(2**input + 2**other), computed without overflow.

    >>> import clgrad
    >>> clgrad.logaddexp2(clgrad.tensor([1.0]), clgrad.tensor([1.0])).item()
    2.0
    """
    ln2 = math.log(2.0)
    a, b = _tensors("logaddexp2", input, other)
    return logaddexp(_float("logaddexp2", a) * ln2, _float("logaddexp2", b) * ln2) / ln2


def xlogy(input, other):
    """input * log(other), 0 where input is 0 (even where other is 0 or inf); NaN in other
    gives NaN.

    >>> import clgrad
    >>> clgrad.xlogy(clgrad.tensor([0.0, 2.0]), clgrad.tensor([0.0, 1.0])).tolist()
    [0.0, 0.0]
    """
    x, y = _tensors("xlogy", input, other)
    x, y = _float("xlogy", x), _float("xlogy", y)
    prod = x * y.log()
    zero = (x == 0).logical_and(y.isnan().logical_not())
    return where(zero, prod.new_zeros(()), prod)


def logit(input, eps=None):
    """log(p / (1 - p)), with p clamped to [eps, 1 - eps] when eps is given.

    >>> import clgrad
    >>> clgrad.logit(clgrad.tensor([0.5])).item()
    0.0
    """
    p = _float("logit", input)
    if eps is not None:
        p = p.clamp(eps, 1 - eps)
    return (p / (1 - p)).log()


def sinc(input):
    """sin(pi x) / (pi x), 1 at 0.

    >>> import clgrad
    >>> clgrad.sinc(clgrad.tensor([0.0, 1.0])).tolist()[0]
    1.0
    """
    x = _float("sinc", input)
    px = x * math.pi
    zero = x == 0
    safe = where(zero, px.new_ones(()), px)
    return where(zero, px.new_ones(()), safe.sin() / safe)


class Erfinv(Op):
    """The inverse of erf on (-1, 1): ±inf at ±1, NaN outside."""

    @staticmethod
    def forward(ctx, x):
        with no_grad():
            y = _erfinv_approx(x.to(dtypes.float64) if x.dtype is dtypes.float64 else
                               x.to(dtypes.float32))
            # Newton steps on erf(y) = x: the approximation is good to ~1e-7 relative, two
            # steps reach float64's precision
            c = 2.0 / math.sqrt(math.pi)
            for _ in range(2):
                err = y.erf() - x
                step = err / (c * (-(y * y)).exp())
                y = where(y.isfinite(), y - step, y)
            y = y.to(x.dtype)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        y, = ctx.saved_tensors
        return g * (math.sqrt(math.pi) / 2) * (y * y).exp()


def _erfinv_approx(x):
    """Giles' single-precision approximation (2010): two polynomials in w = -log(1 - x^2)."""
    w = -((1 - x) * (1 + x)).log()
    central = w < 5.0
    wc = w - 2.5
    pc = 2.81022636e-08
    for c in (3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503,
              -0.00417768164, 0.246640727, 1.50140941):
        pc = pc * wc + c
    wt = w.clamp(min=5.0).sqrt() - 3.0
    pt = -0.000200214257
    for c in (0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613,
              0.00943887047, 1.00167406, 2.83297682):
        pt = pt * wt + c
    y = where(central, pc, pt) * x
    inf = x.abs() == 1
    return where(inf, x * float("inf"), y)


def erfinv(input):
    """The inverse error function.

    >>> import clgrad
    >>> round(clgrad.erfinv(clgrad.tensor([0.5])).item(), 5)
    0.47694
    """
    return Erfinv.apply(_float("erfinv", input))


def heaviside(input, values):
    """0 where input < 0, 1 where input > 0, `values` where input == 0.

    >>> import clgrad
    >>> clgrad.heaviside(clgrad.tensor([-1.0, 0.0, 2.0]), clgrad.tensor(0.5)).tolist()
    [0.0, 0.5, 1.0]
    """
    if input.dtype is not values.dtype:
        raise RuntimeError(f"heaviside is not yet implemented for tensors with different "
                           f"dtypes: {input.dtype} and {values.dtype}")
    pos = (input > 0).to(input.dtype)
    return where(input == 0, values.to(input.dtype), pos)


def deg2rad(input):
    """Degrees to radians.

    >>> import clgrad
    >>> round(clgrad.deg2rad(clgrad.tensor([180.0])).item(), 5)
    3.14159
    """
    return _float("deg2rad", input) * (math.pi / 180.0)


def rad2deg(input):
    """Radians to degrees.

    >>> import clgrad
    >>> round(clgrad.rad2deg(clgrad.tensor([3.14159265])).item(), 3)
    180.0
    """
    return _float("rad2deg", input) * (180.0 / math.pi)


def _check_n(n):
    if not isinstance(n, int) or isinstance(n, bool):
        raise TypeError(f"polygamma(): argument 'n' must be int, not {type(n).__name__}")
    if n < 0:
        raise RuntimeError(f"polygamma(n, x) does not support negative n, got n = {n}")


def polygamma(n, input):
    """The n-th derivative of digamma (n = 0: digamma itself).

    >>> import clgrad
    >>> round(clgrad.polygamma(1, clgrad.tensor([1.0])).item(), 5)     # pi^2 / 6
    1.64493
    """
    _check_n(n)
    return apply_ew("polygamma", input, float(n))


def _polygamma_method(self, n):
    return polygamma(n, self)


def _polygamma_(self, n):
    _check_n(n)
    return inplace("polygamma", self, (), (float(n),))


def mvlgamma(input, p):
    """The multivariate log-gamma of dimension p: sum over i < p of lgamma(x - i / 2) plus
    p (p - 1) / 4 * log(pi); every element must exceed (p - 1) / 2.

    >>> import clgrad
    >>> round(clgrad.mvlgamma(clgrad.tensor([2.5]), 2).item(), 3)
    0.857
    """
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    x = _float("mvlgamma", input)
    if x.numel() and not bool((x > (p - 1) / 2).all()):
        raise RuntimeError(f"All elements must be greater than (p-1)/2 = {(p - 1) / 2}")
    total = apply_ew("lgamma", x)
    for i in range(1, p):
        total = total + apply_ew("lgamma", x - i / 2)
    return total + p * (p - 1) / 4 * math.log(math.pi)


def _mvlgamma_(self, p):
    return copy_(self, mvlgamma(self, p))


def i0(input):
    """The modified Bessel function of the first kind of order 0.

    >>> import clgrad
    >>> round(clgrad.i0(clgrad.tensor([1.0])).item(), 5)
    1.26607
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"i0(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    return apply_ew("i0", input)


def _i0_(self):
    return inplace("i0", self, ())


class SpecialZeta(Op):
    """Hurwitz zeta; torch differentiates it in q only: d/dq zeta(x, q) = -x zeta(x + 1, q)."""

    @staticmethod
    def forward(ctx, x, q):
        ctx.x = x
        if isinstance(q, Tensor):
            ctx.save_for_backward(q)
        return run(TABLE["zeta"], (x, q))

    @staticmethod
    def backward(ctx, g):
        if ctx.needs_input_grad[0]:
            raise NotImplementedError("the derivative for 'zeta' is not implemented.")
        q, = ctx.saved_tensors
        return None, g * -ctx.x * zeta(ctx.x + 1, q)


def zeta(input, other):
    """The Hurwitz zeta function: the sum over k >= 0 of (k + other)^-input.

    >>> import clgrad
    >>> round(clgrad.special.zeta(clgrad.tensor([2.0]), 1.0).item(), 5)     # pi^2 / 6
    1.64493
    """
    _two("zeta", input, other)
    return SpecialZeta.apply(input, other)


class _Igamma(Op):
    """The regularized incomplete gamma functions; torch differentiates them in x only:
    d/dx P(a, x) = x^(a - 1) e^-x / Gamma(a) = -d/dx Q(a, x)."""

    upper = 0

    @classmethod
    def forward(cls, ctx, a, x):
        if ctx is not _null_ctx and ctx.needs_input_grad[1]:
            ctx.save_for_backward(a, x)
        return run(TABLE["igammac" if cls.upper else "igamma"], (a, x))

    @classmethod
    def backward(cls, ctx, g):
        if ctx.needs_input_grad[0]:
            name = "igammac" if cls.upper else "igamma"
            raise NotImplementedError(f"the derivative for '{name}: input' is not implemented.")
        a, x = ctx.saved_tensors
        d = ((a - 1) * x.log() - x - a.lgamma()).exp()
        return None, g * (-d if cls.upper else d)


class Igamma(_Igamma):
    upper = 0


class Igammac(_Igamma):
    upper = 1


def _two(op, a, b):
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        raise TypeError(f"{op}(): expected at least one Tensor argument, got "
                        f"{type(a).__name__} and {type(b).__name__}")


def _igamma_args(op, input, other):
    for pos, (arg, v) in enumerate((("input", input), ("other", other))):
        if not isinstance(v, Tensor):
            raise TypeError(f"{op}(): argument '{arg}' (position {pos + 1}) must be Tensor, "
                            f"not {type(v).__name__}")


def igamma(input, other):
    """The regularized lower incomplete gamma function P(input, other).

    >>> import clgrad
    >>> round(clgrad.igamma(clgrad.tensor([1.0]), clgrad.tensor([2.0])).item(), 5)   # 1 - e^-2
    0.86466
    """
    _igamma_args("igamma", input, other)
    return Igamma.apply(input, other)


def igammac(input, other):
    """The regularized upper incomplete gamma function Q(input, other) = 1 - P(input, other).

    >>> import clgrad
    >>> round(clgrad.igammac(clgrad.tensor([1.0]), clgrad.tensor([2.0])).item(), 5)  # e^-2
    0.13534
    """
    _igamma_args("igammac", input, other)
    return Igammac.apply(input, other)


def _igamma_(self, other):
    return copy_(self, igamma(self, other))


def _igammac_(self, other):
    return copy_(self, igammac(self, other))


FUNCTIONS = {"logaddexp": logaddexp, "logaddexp2": logaddexp2, "xlogy": xlogy, "logit": logit,
             "sinc": sinc, "erfinv": erfinv, "heaviside": heaviside, "deg2rad": deg2rad,
             "rad2deg": rad2deg, "polygamma": polygamma, "mvlgamma": mvlgamma, "i0": i0,
             "igamma": igamma, "igammac": igammac}
FUNCTIONS["i0_"] = _i0_
METHODS = dict(FUNCTIONS)
METHODS.update({"polygamma": _polygamma_method, "polygamma_": _polygamma_,
                "mvlgamma_": _mvlgamma_, "i0_": _i0_, "igamma_": _igamma_,
                "igammac_": _igammac_})
