"""Elementwise ops: one table, the file to edit to add one. Each entry is the op's kernel
expression per dtype kind (f float, i signed int, u uint8, b bool) and, right beside it, its
vector-Jacobian product per operand, written in clgrad ops so that it can itself be
differentiated. Because an elementwise Jacobian is diagonal, the same rules give the forward-mode
(JVP) derivative.

Expressions use x, y, z (operands), p0.. (scalar parameters), SEL(cond, a, b) and CV(value); see
cl_kernels/elementwise.mako. Kind c (complex64, complex128, complex32) computes on (re, im) pairs
(float2 / double2) with common.mako's complex helpers (cmul, cdiv, cexp, clog, csqrt, ...); its
parameters are pairs already (write p0, not CV(p0)). Gradients follow torch's convention for
complex numbers (the conjugate Wirtinger derivative): the VJP of a holomorphic f is
g * conj(f'(z)), which is why the formulas below multiply by conj(...) (a no-op on real tensors). Adding an op is one `entry(...)` below (and a public function in
clgrad/ops/pointwise.py where torch has one); the rest follows from the table:

- its kernels: clgrad/kernels/elementwise.py renders every entry (`build`, one program per arity
  and dtype) and evaluates an entry with torch's promotion and broadcasting (`run`);
- its Op class: clgrad/ops/elementwise_autograd.py makes one per entry (`register`, into OPS),
  with the lean recording path of contiguous operands; `apply_ew(name, ...)` applies it.

The gradient formulas call the functional forms of clgrad/ops/elementwise_autograd.py (exp,
where, tanh_backward, ...), imported below.
"""
import cmath
import math

from ..kernels.elementwise import Entry, build
from ..kernels import fused  # noqa: F401  (recordings fuse the table's kernels)
# what the rest of clgrad takes from here: the kernels' evaluation and checks, and the Ops
from ..kernels.elementwise import PROGRAMS, _check_bool_sub, compute_dtype, run  # noqa: F401
from ..tensor import Tensor
from ._base import size_repr  # noqa: F401
from .complexes import real as _real_view
from .elementwise_autograd import OPS, apply_ew, register  # noqa: F401
# the functional forms the gradient formulas below call, and `same` (a pass-through gradient)
from .elementwise_autograd import (  # noqa: F401
    clamp_backward, clamp_max_backward, clamp_min_backward, cos, cosh, digamma, elu_backward,
    exp, floor_divide, gelu_backward, gelu_tanh_backward, i0, i0e, i1, i1e, isfinite,
    leaky_relu_backward, log, logical_and, masked_fill, ones_like_, polygamma, pow, rsqrt, same,
    sigmoid, sigmoid_backward, sign, silu_backward, sin, sinh, softplus_backward, sum_to, tanh,
    tanh_backward, threshold_backward, trunc, where, zeros_like_)

FLOAT, SINT, UINT, BOOL, COMPLEX = "f", "i", "u", "b", "c"
NUM = "fiu"


def kinds(spec, expr):
    return {k: expr for k in spec}


TABLE = {}


def entry(name, operands, exprs, **kw):
    if isinstance(exprs, tuple):            # (kinds, expression)
        exprs = kinds(*exprs)
    e = Entry(name, operands, exprs, **kw)
    TABLE[name] = e
    return e


LN2 = math.log(2.0)
SQRT1_2 = 0.7071067811865476
INV_SQRT_2PI = 0.3989422804014327
TWO_OVER_SQRT_PI = 1.1283791670955126
GELU_K = 0.7978845608028654


def _sech2(u):
    """sech(u)^2 as a kernel expression: 4 / (e^u + e^-u)^2 goes to 0 for large |u|, where
    1 - tanh(u)^2 is left with tanh's last-bit error (gelu's tanh gradient was 1.285 at 300)."""
    return f"(CV(4) / ((exp({u}) + exp(-({u}))) * (exp({u}) + exp(-({u})))))"
GELU_C = 0.044715


# ---- unary ----------------------------------------------------------------------------------
entry("neg", "T", {"f": "-x", "i": "-x", "u": "-x", "c": "-x"}, vjp=(lambda g, a: -g,))
# conj of a complex tensor (of a real one: the tensor itself, no launch: see conj below)
entry("conj", "T", {"c": "cconj(x)"}, vjp=(lambda g, a: conj(g),))
# max(x, -x) rather than a select: compilers fold either into the same instruction, but the
# select becomes LLVM's abs intrinsic before Oclgrind sees it, which Oclgrind cannot run.
# CV(-x): -x of a scalar char or short is an int, and max(char, int) is ambiguous.
entry("abs", "T", {"f": "fabs(x)", "i": "max(x, CV(-x))", "u": "x", "c": "cabs_(x)"},
      out="real", saves="x", vjp=(lambda g, a: g * sgn(a.x),))
# sgn: sign for real tensors, z / |z| (0 at 0) for complex ones
entry("sgn", "T", {"f": "sign(x)", "i": "SEL(x > CV(0), CV(1), SEL(x < CV(0), CV(-1), CV(0)))",
                   "u": "SEL(x > CV(0), CV(1), CV(0))", "b": "x", "c": "csgn(x)"},
      saves="xo", vjp=(lambda g, a: _sgn_grad(g, a),))
# angle: the argument of a complex number; of a real one 0 or pi (NaN kept)
entry("angle", "T", {"f": f"SEL(isnan(x), x, SEL(x < CV(0), CV({math.pi!r}), CV(0)))",
                     "c": "carg(x)"}, out="real", float_only=True, saves="x",
      vjp=(lambda g, a: _angle_grad(g, a),))
entry("sign", "T", {"f": "sign(x)", "i": "SEL(x > CV(0), CV(1), SEL(x < CV(0), CV(-1), CV(0)))",
                    "u": "SEL(x > CV(0), CV(1), CV(0))", "b": "x"},
      vjp=(lambda g, a: zeros_like_(g),))
for _n in ("floor", "ceil", "trunc"):
    entry(_n, "T", {"f": f"{_n}(x)", "i": "x", "u": "x"},
          vjp=(lambda g, a: zeros_like_(g),))
entry("round", "T", {"f": "rint(x)", "i": "x", "u": "x"},
      vjp=(lambda g, a: zeros_like_(g),))
entry("frac", "T", ("f", "x - trunc(x)"), vjp=(same,))
entry("exp", "T", {"f": "exp(x)", "c": "cexp(x)"}, float_only=True, saves="out",
      vjp=(lambda g, a: g * conj(a.out),))
entry("exp2", "T", ("f", "exp2(x)"), float_only=True, saves="out",
      vjp=(lambda g, a: g * a.out * LN2,))
entry("expm1", "T", ("f", "expm1(x)"), float_only=True, saves="out",
      vjp=(lambda g, a: g * (a.out + 1),))
entry("log", "T", {"f": "log(x)", "c": "clog(x)"}, float_only=True, saves="x",
      vjp=(lambda g, a: g / conj(a.x),))
entry("log2", "T", ("f", "log2(x)"), float_only=True, saves="x",
      vjp=(lambda g, a: g / (a.x * LN2),))
entry("log10", "T", ("f", "log10(x)"), float_only=True, saves="x",
      vjp=(lambda g, a: g / (a.x * math.log(10.0)),))
entry("log1p", "T", ("f", "log1p(x)"), float_only=True, saves="x",
      vjp=(lambda g, a: g / (a.x + 1),))
entry("sqrt", "T", {"f": "sqrt(x)", "c": "csqrt(x)"}, float_only=True, saves="out",
      vjp=(lambda g, a: g / (conj(a.out) * 2),))
entry("rsqrt", "T", {"f": "rsqrt(x)", "c": "crecip(csqrt(x))"}, float_only=True, saves="out",
      vjp=(lambda g, a: g * conj(a.out.pow(3)) * -0.5,))
entry("sin", "T", {"f": "sin(x)", "c": "csin(x)"}, float_only=True, saves="x",
      vjp=(lambda g, a: g * conj(cos(a.x)),))
entry("cos", "T", {"f": "cos(x)", "c": "ccos(x)"}, float_only=True, saves="x",
      vjp=(lambda g, a: -(g * conj(sin(a.x))),))
entry("tan", "T", ("f", "tan(x)"), float_only=True, saves="out",
      vjp=(lambda g, a: g * (a.out * a.out + 1),))
entry("asin", "T", ("f", "asin(x)"), float_only=True, saves="x",
      vjp=(lambda g, a: g * rsqrt(1 - a.x * a.x),))
entry("acos", "T", ("f", "acos(x)"), float_only=True, saves="x",
      vjp=(lambda g, a: -(g * rsqrt(1 - a.x * a.x)),))
entry("atan", "T", ("f", "atan(x)"), float_only=True, saves="x",
      vjp=(lambda g, a: g / (a.x * a.x + 1),))
entry("sinh", "T", {"f": "sinh(x)", "c": "csinh(x)"}, float_only=True, saves="x",
      vjp=(lambda g, a: g * conj(cosh(a.x)),))
entry("cosh", "T", {"f": "cosh(x)", "c": "ccosh(x)"}, float_only=True, saves="x",
      vjp=(lambda g, a: g * conj(sinh(a.x)),))
entry("tanh", "T", {"f": "tanh(x)", "c": "ctanh(x)"}, float_only=True, saves="out",
      vjp=(lambda g, a: g * conj(1 - a.out * a.out) if a.out.is_complex() else
           tanh_backward(g, a.out),))
entry("asinh", "T", ("f", "asinh(x)"), float_only=True, saves="x",
      vjp=(lambda g, a: g * rsqrt(a.x * a.x + 1),))
entry("acosh", "T", ("f", "acosh(x)"), float_only=True, saves="x",
      vjp=(lambda g, a: g * rsqrt(a.x * a.x - 1),))
entry("atanh", "T", ("f", "atanh(x)"), float_only=True, saves="x",
      vjp=(lambda g, a: g / (1 - a.x * a.x),))
# the gamma family: digamma and polygamma loop (recurrence, series), so their kernels are scalar
entry("lgamma", "T", ("f", "lgamma(x)"), float_only=True, saves="x",
      vjp=(lambda g, a: g * digamma(a.x),))
entry("digamma", "T", ("f", "digamma_s(x)"), float_only=True, novec="f", saves="x",
      vjp=(lambda g, a: g * polygamma(1, a.x),))
entry("polygamma", "T", ("f", "polygamma_s((int)(p0), x)"), nparams=1, float_only=True,
      novec="f", saves="x", vjp=(lambda g, a: g * polygamma(int(a.p[0]) + 1, a.x),))
# Bessel functions and friends: scalar helpers in elementwise.mako that loop (series, continued
# fractions, recurrences), compiled in programs of their own (group "special"). torch
# differentiates i0, i0e, i1, i1e and erfcx, not the others.
SPECIAL = dict(float_only=True, novec="f", group="special")
entry("i0", "T", ("f", "bessel_i_s(0, x, 0)"), **SPECIAL, saves="x",
      vjp=(lambda g, a: g * i1(a.x),))
entry("i0e", "T", ("f", "bessel_i_s(0, x, 1)"), **SPECIAL, saves="xo", cls_name="SpecialI0E",
      vjp=(lambda g, a: g * (i1e(a.x) - sign(a.x) * a.out),))
entry("i1", "T", ("f", "bessel_i_s(1, x, 0)"), **SPECIAL, saves="xo", cls_name="SpecialI1",
      vjp=(lambda g, a: _i1_grad(g, a, False),))
entry("i1e", "T", ("f", "bessel_i_s(1, x, 1)"), **SPECIAL, saves="xo", cls_name="SpecialI1E",
      vjp=(lambda g, a: _i1_grad(g, a, True),))
entry("erfcx", "T", ("f", "erfcx_s(x)"), **SPECIAL, saves="xo", cls_name="SpecialErfcx",
      vjp=(lambda g, a: g * (a.x * a.out * 2 - TWO_OVER_SQRT_PI),))
for _n, _expr in {"bessel_j0": "bessel_jy_s(0, x)", "bessel_j1": "bessel_jy_s(1, x)",
                  "bessel_y0": "bessel_jy_s(2, x)", "bessel_y1": "bessel_jy_s(3, x)",
                  "modified_bessel_i0": "bessel_i_s(0, x, 0)",
                  "modified_bessel_i1": "bessel_i_s(1, x, 0)",
                  "modified_bessel_k0": "bessel_k_s(0, x, 0)",
                  "modified_bessel_k1": "bessel_k_s(1, x, 0)",
                  "scaled_modified_bessel_k0": "bessel_k_s(0, x, 1)",
                  "scaled_modified_bessel_k1": "bessel_k_s(1, x, 1)",
                  "spherical_bessel_j0": "spherical_j0_s(x)", "airy_ai": "airy_ai_s(x)"}.items():
    entry(_n, "T", ("f", _expr), **SPECIAL)
# two operands, no table gradient: zeta and igamma(c) are differentiated by their Ops in
# clgrad/ops/special.py (torch differentiates only one operand of each), the polynomials not at
# all. igamma refuses integers, as torch.
entry("zeta", "TT", ("f", "zeta_s(x, y)"), **SPECIAL)
entry("igamma", "TT", ("f", "igamma_s(x, y, 0)"), **SPECIAL, no_ints=True)
entry("igammac", "TT", ("f", "igamma_s(x, y, 1)"), **SPECIAL, no_ints=True)
POLYNOMIALS = {"chebyshev_polynomial_t": 0, "chebyshev_polynomial_u": 1,
               "chebyshev_polynomial_v": 2, "chebyshev_polynomial_w": 3,
               "hermite_polynomial_h": 4, "hermite_polynomial_he": 5,
               "laguerre_polynomial_l": 6, "legendre_polynomial_p": 7}
for _n, _k in list(POLYNOMIALS.items()):
    entry(_n, "TT", ("f", f"orthopoly_s({_k}, x, y)"), **SPECIAL)
    if _n.startswith("chebyshev"):                  # T*_n(x) = T_n(2x - 1), and so on
        entry("shifted_" + _n, "TT", ("f", f"orthopoly_s({_k}, CV(2) * x - CV(1), y)"),
              **SPECIAL)
entry("erf", "T", ("f", "erf(x)"), float_only=True, saves="x",
      vjp=(lambda g, a: g * exp(-(a.x * a.x)) * TWO_OVER_SQRT_PI,))
entry("erfc", "T", ("f", "erfc(x)"), float_only=True, saves="x",
      vjp=(lambda g, a: g * exp(-(a.x * a.x)) * -TWO_OVER_SQRT_PI,))
entry("sigmoid", "T", {"f": "CV(1) / (CV(1) + exp(-x))", "c": "csigmoid(x)"}, float_only=True,
      saves="out", vjp=(lambda g, a: g * conj(a.out * (1 - a.out)) if a.out.is_complex() else
                        sigmoid_backward(g, a.out),))
entry("reciprocal", "T", {"f": "CV(1) / x", "c": "crecip(x)"}, float_only=True, saves="out",
      vjp=(lambda g, a: -(g * conj(a.out * a.out)),))
entry("relu", "T", {"f": "SEL(x < CV(0), CV(0), x)", "i": "SEL(x < CV(0), CV(0), x)", "u": "x"},
      saves="out", vjp=(lambda g, a: threshold_backward(g, a.out),))
# 1 + erf(u) written as erfc(-u): no cancellation in the negative tail (fuzz: 3e-4 off at x = -4)
entry("gelu", "T", ("f", f"CV(0.5) * x * GELU_ERFC(-x * CV({SQRT1_2}))"), float_only=True,
      no_ints=True, saves="x", vjp=(lambda g, a: gelu_backward(g, a.x),))
entry("gelu_tanh", "T",
      ("f", f"CV(0.5) * x * (CV(1) + tanh(CV({GELU_K}) * (x + CV({GELU_C}) * x * x * x)))"),
      float_only=True, no_ints=True, saves="x", vjp=(lambda g, a: gelu_tanh_backward(g, a.x),))
entry("silu", "T", ("f", "x / (CV(1) + exp(-x))"), float_only=True, no_ints=True, saves="x",
      vjp=(lambda g, a: silu_backward(g, a.x),))
entry("softplus", "T", ("f", "SEL(x * CV(p0) > CV(p1), x, log1p(exp(x * CV(p0))) / CV(p0))"),
      nparams=2, float_only=True, no_ints=True, saves="x",
      vjp=(lambda g, a: softplus_backward(g, a.x, a.p[0], a.p[1]),))
entry("elu", "T", ("f", "SEL(x > CV(0), x, CV(p0) * expm1(x))"), nparams=1, float_only=True,
      no_ints=True, saves="x", vjp=(lambda g, a: elu_backward(g, a.x, a.p[0]),))
entry("leaky_relu", "T", ("f", "SEL(x < CV(0), x * CV(p0), x)"), nparams=1, float_only=True,
      no_ints=True, saves="x", vjp=(lambda g, a: leaky_relu_backward(g, a.x, a.p[0]),))
entry("square", "T", {"f": "x * x", "i": "x * x", "u": "x * x", "c": "cmul(x, x)"}, saves="x",
      vjp=(lambda g, a: g * conj(a.x) * 2,))
entry("pow_scalar", "T", {"f": "pow(x, CV(p0))", "i": "ipow_s(x, p0)", "u": "ipow_s(x, p0)",
                          "c": "cpow(x, p0)"},
      nparams=1, novec="iu", saves="x", cls_name="Pow",
      vjp=(lambda g, a: zeros_like_(g) if a.p[0] == 0 else
           g * conj(pow(a.x, a.p[0] - 1) * a.p[0]),))
entry("rpow_scalar", "T", {"f": "pow(CV(p0), x)", "c": "cpow(p0, x)"}, nparams=1,
      float_only=True, saves="ox", cls_name="Pow",
      vjp=(lambda g, a: _rpow_grad(g, a.p[0], a.out, a.x),))
entry("clamp", "T", ("fiu", "SEL(SEL(x < CV(p0), CV(p0), x) > CV(p1), CV(p1), SEL(x < CV(p0), CV(p0), x))"),
      nparams=2,
      saves="x", vjp=(lambda g, a: clamp_backward(g, a.x, a.p[0], a.p[1]),))
entry("clamp_min", "T", ("fiu", "SEL(x < CV(p0), CV(p0), x)"), nparams=1, saves="x",
      vjp=(lambda g, a: clamp_min_backward(g, a.x, a.p[0]),))
entry("clamp_max", "T", ("fiu", "SEL(x > CV(p0), CV(p0), x)"), nparams=1, saves="x",
      vjp=(lambda g, a: clamp_max_backward(g, a.x, a.p[0]),))
entry("nan_to_num", "T", {"f": "SEL(isnan(x), CV(p0), SEL(isinf(x) & (x > CV(0)), CV(p1), "
                               "SEL(isinf(x), CV(p2), x)))", "i": "x", "u": "x", "b": "x",
                         "c": "cnan_to_num(x, p0, p1, p2)"},
      nparams=3, saves="x", vjp=(lambda g, a: where(isfinite(a.x), g, zeros_like_(g)),))
entry("logical_not", "T", {**kinds("fiub", "x == CV(0)"), "c": "!(x.x != 0 | x.y != 0)"},
      out="bool")
# Integers are never NaN nor infinite: a comparison of constants gives the constant mask of x's
# comparison type (comparing x with itself would do too, but compilers warn about it).
_NONE, _ALL = "CV(0) != CV(0)", "CV(0) == CV(0)"
entry("isnan", "T", {"f": "isnan(x)", "i": _NONE, "u": _NONE, "b": _NONE,
                     "c": "(isnan(x.x) | isnan(x.y))"}, out="bool")
entry("isinf", "T", {"f": "isinf(x)", "i": _NONE, "u": _NONE, "b": _NONE,
                     "c": "(isinf(x.x) | isinf(x.y))"}, out="bool")
entry("isfinite", "T", {"f": "isfinite(x)", "i": _ALL, "u": _ALL, "b": _ALL,
                        "c": "(isfinite(x.x) & isfinite(x.y))"}, out="bool")
entry("signbit", "T", {"f": "signbit(x)", "i": "x < CV(0)", "u": _NONE, "b": _NONE}, out="bool")
entry("bitwise_not", "T", {"i": "~x", "u": "~x", "b": "x ^ CV(1)"})

# ---- binary ---------------------------------------------------------------------------------
entry("add", "TT", {"f": "x + y", "i": "x + y", "u": "x + y", "b": "x | y", "c": "x + y"},
      vjp=(same, same))
entry("sub", "TT", ("fiuc", "x - y"), vjp=(same, lambda g, a: -g))
entry("mul", "TT", {"f": "x * y", "i": "x * y", "u": "x * y", "b": "x & y", "c": "cmul(x, y)"},
      saves=("y", "x"), vjp=(lambda g, a: g * conj(a.y), lambda g, a: g * conj(a.x)))
# d/dy as torch computes it, -g * ((x / y) / y): y * y underflows first, and F.normalize's
# gradient along a dim of size 1 (0 but for rounding) then rounds as torch's does
entry("div", "TT", {"f": "x / y", "c": "cdiv(x, y)"}, float_only=True, saves=("y", "xy"),
      vjp=(lambda g, a: g / conj(a.y), lambda g, a: -g * conj((a.x / a.y) / a.y)))
entry("floor_divide", "TT", ("fiu", "FLOORDIV(x, y)"), cls_name="FloorDivide")
entry("remainder", "TT", ("fiu", "REMAINDER(x, y)"), saves=("", "xy"),
      vjp=(same, lambda g, a: -(g * floor_divide(a.x, a.y))))
entry("fmod", "TT", {"f": "fmod(x, y)",
                     "i": "SEL((y == CV(0)) | (y == CV(-1)), CV(0), x % SEL((y == CV(0)) | (y == CV(-1)), CV(1), y))",
                     "u": "SEL(y == CV(0), CV(0), x % SEL(y == CV(0), CV(1), y))"}, saves=("", "xy"),
      vjp=(same, lambda g, a: -(g * trunc(a.x / a.y))))
entry("pow", "TT", {"f": "pow(x, y)", "i": "ipow_s(x, y)", "u": "ipow_s(x, y)", "c": "cpow(x, y)"},
      novec="iu",
      saves=("xy", "xyo"), vjp=(lambda g, a: _pow_grad_self(g, a), lambda g, a: _pow_grad_exp(g, a)))
entry("atan2", "TT", ("f", "atan2(x, y)"), float_only=True, saves=("xy", "xy"),
      vjp=(lambda g, a: g * a.y * _atan2_recip(a), lambda g, a: -(g * a.x) * _atan2_recip(a)))
entry("maximum", "TT", {"f": "SEL(isnan(x) | isnan(y), x + y, fmax(x, y))",
                        "i": "SEL(x > y, x, y)", "u": "SEL(x > y, x, y)", "b": "x | y"},
      saves="xy", vjp=(lambda g, a: _minmax_grad(g, a.x, a.y, True),
                       lambda g, a: _minmax_grad(g, a.y, a.x, True)))
entry("minimum", "TT", {"f": "SEL(isnan(x) | isnan(y), x + y, fmin(x, y))",
                        "i": "SEL(x < y, x, y)", "u": "SEL(x < y, x, y)", "b": "x & y"},
      saves="xy", vjp=(lambda g, a: _minmax_grad(g, a.x, a.y, False),
                       lambda g, a: _minmax_grad(g, a.y, a.x, False)))
entry("copysign", "TT", ("f", "copysign(x, y)"), float_only=True, saves=("xo", ""),
      vjp=(lambda g, a: where(a.x == 0, zeros_like_(g), g * a.out / a.x),
           lambda g, a: zeros_like_(g)))
entry("hypot", "TT", ("f", "hypot(x, y)"), float_only=True, saves=("xo", "yo"),
      vjp=(lambda g, a: g * a.x / a.out, lambda g, a: g * a.y / a.out))
for _n, _op in (("eq", "=="), ("ne", "!="), ("lt", "<"), ("le", "<="), ("gt", ">"), ("ge", ">=")):
    entry(_n, "TT", ("fiub", f"x {_op} y"), out="bool")
TABLE["eq"].exprs["c"] = "ceq(x, y)"
TABLE["ne"].exprs["c"] = "!ceq(x, y)"
entry("logical_and", "TT", ("fiub", "(x != CV(0)) & (y != CV(0))"), out="bool")
entry("logical_or", "TT", ("fiub", "(x != CV(0)) | (y != CV(0))"), out="bool")
entry("logical_xor", "TT", ("fiub", "(x != CV(0)) ^ (y != CV(0))"), out="bool")
entry("bitwise_and", "TT", ("iub", "x & y"))
entry("bitwise_or", "TT", ("iub", "x | y"))
entry("bitwise_xor", "TT", ("iub", "x ^ y"))
# torch's shifts: a count past the width (or negative) shifts everything out, where C takes it
# modulo the width; scalar code (novec) so that sizeof(x) is one element's size
entry("bitwise_left_shift", "TT",
      ("iu", "SEL((y < CV(0)) | (y >= CV(8 * sizeof(x))), CV(0), x << y)"), novec="iu")
entry("bitwise_right_shift", "TT",
      ("iu", "SEL((y < CV(0)) | (y >= CV(8 * sizeof(x))), SEL(x < CV(0), CV(-1), CV(0)), x >> y)"),
      novec="iu")
entry("lerp_scalar", "TT",
      ("f", "SEL(CV(p0) < CV(0.5), x + CV(p0) * (y - x), y - (y - x) * (CV(1) - CV(p0)))"),
      nparams=1, float_only=True, cls_name="Lerp",
      vjp=(lambda g, a: g * (1 - a.p[0]), lambda g, a: g * a.p[0]))
entry("masked_fill", "Tb", {**kinds("fiub", "SEL(y != FALSE_, CV(p0), x)"),
                            "c": "SEL(y != FALSE_, p0, x)"}, nparams=1, saves="y",
      vjp=(lambda g, a: masked_fill(g, a.y, 0), None))
# backward helpers: fused gradients of activations, themselves differentiable
entry("threshold_backward", "TT", ("f", "SEL(y > CV(0), x, CV(0))"), saves="y",
      vjp=(lambda g, a: threshold_backward(g, a.y), None))
entry("tanh_backward", "TT", ("f", "x * (CV(1) - y * y)"), saves=("y", "xy"),
      vjp=(lambda g, a: tanh_backward(g, a.y), lambda g, a: g * a.x * a.y * -2))
entry("sigmoid_backward", "TT", ("f", "x * y * (CV(1) - y)"), saves=("y", "xy"),
      vjp=(lambda g, a: sigmoid_backward(g, a.y), lambda g, a: g * a.x * (1 - 2 * a.y)))
entry("silu_backward", "TT",
      ("f", "x * (CV(1) / (CV(1) + exp(-y))) * (CV(1) + y * (CV(1) - CV(1) / (CV(1) + exp(-y))))"),
      saves=("y", "xy"), vjp=(lambda g, a: silu_backward(g, a.y), lambda g, a: g * a.x * _silu2(a.y)))
entry("gelu_backward", "TT",
      ("f", f"x * (CV(0.5) * GELU_ERFC(-y * CV({SQRT1_2})) + y * exp(CV(-0.5) * y * y) * CV({INV_SQRT_2PI}))"),
      saves=("y", "xy"), vjp=(lambda g, a: gelu_backward(g, a.y),
                       lambda g, a: g * a.x * exp(a.y * a.y * -0.5) * INV_SQRT_2PI * (2 - a.y * a.y)))
entry("gelu_tanh_backward", "TT",
      ("f", f"x * (CV(0.5) * (CV(1) + tanh(CV({GELU_K}) * (y + CV({GELU_C}) * y * y * y))) + "
            f"CV(0.5) * y * {_sech2(f'CV({GELU_K}) * (y + CV({GELU_C}) * y * y * y)')} * CV({GELU_K}) * "
            f"(CV(1) + CV({3 * GELU_C}) * y * y))"),
      saves=("y", "xy"), vjp=(lambda g, a: gelu_tanh_backward(g, a.y),
                       lambda g, a: g * a.x * _gelu_tanh2(a.y)))
entry("softplus_backward", "TT",
      ("f", "SEL(y * CV(p0) > CV(p1), x, x * (CV(1) - CV(1) / (CV(1) + exp(y * CV(p0)))))"),
      nparams=2, saves=("y", "xy"),
      vjp=(lambda g, a: softplus_backward(g, a.y, a.p[0], a.p[1]),
           lambda g, a: where(a.y * a.p[0] > a.p[1], zeros_like_(g),
                              g * a.x * a.p[0] * sigmoid_backward(ones_like_(a.y), sigmoid(a.y * a.p[0])))))
entry("elu_backward", "TT", ("f", "SEL(y > CV(0), x, x * CV(p0) * exp(y))"), nparams=1,
      saves=("y", "xy"),
      vjp=(lambda g, a: elu_backward(g, a.y, a.p[0]),
           lambda g, a: where(a.y > 0, zeros_like_(g), g * a.x * a.p[0] * exp(a.y))))
entry("leaky_relu_backward", "TT", ("f", "SEL(y > CV(0), x, x * CV(p0))"), nparams=1, saves="y",
      vjp=(lambda g, a: leaky_relu_backward(g, a.y, a.p[0]), None))
entry("clamp_backward", "TT", ("f", "SEL((y >= CV(p0)) & (y <= CV(p1)), x, CV(0))"), nparams=2,
      saves="y", vjp=(lambda g, a: clamp_backward(g, a.y, a.p[0], a.p[1]), None))
entry("clamp_min_backward", "TT", ("f", "SEL(y >= CV(p0), x, CV(0))"), nparams=1, saves="y",
      vjp=(lambda g, a: clamp_min_backward(g, a.y, a.p[0]), None))
entry("clamp_max_backward", "TT", ("f", "SEL(y <= CV(p0), x, CV(0))"), nparams=1, saves="y",
      vjp=(lambda g, a: clamp_max_backward(g, a.y, a.p[0]), None))

# ---- ternary --------------------------------------------------------------------------------
entry("where", "bTT", ("fiubc", "SEL(x != FALSE_, y, z)"), saves=("", "x", "x"),
      vjp=(None, lambda g, a: where(a.x, g, zeros_like_(g)),
           lambda g, a: where(a.x, zeros_like_(g), g)))
entry("lerp", "TTT", ("f", "SEL(z < CV(0.5), x + z * (y - x), y - (y - x) * (CV(1) - z))"),
      float_only=True, saves=("z", "z", "xy"),
      vjp=(lambda g, a: g * (1 - a.z), lambda g, a: g * a.z, lambda g, a: g * (a.y - a.x)))
entry("clamp_tensor", "TTT",
      {"f": "SEL(isnan(x), x, SEL(x < y, y, SEL(x > z, z, x)))",
       "i": "SEL(x < y, y, SEL(x > z, z, x))", "u": "SEL(x < y, y, SEL(x > z, z, x))"},
      saves=("xyz", "xy", "xz"), cls_name="Clamp",
      vjp=(lambda g, a: where(logical_and(a.x >= a.y, a.x <= a.z), g, zeros_like_(g)),
           lambda g, a: where(a.x < a.y, g, zeros_like_(g)),
           lambda g, a: where(a.x > a.z, g, zeros_like_(g))))
entry("addcmul", "TTT", {**kinds("fiu", "x + CV(p0) * y * z"), "c": "x + cmul(p0, cmul(y, z))"},
      nparams=1, saves=("", "z", "y"),
      vjp=(same, lambda g, a: g * conj(a.z * a.p[0]), lambda g, a: g * conj(a.y * a.p[0])))
entry("addcdiv", "TTT", {"f": "x + CV(p0) * y / z", "c": "x + cmul(p0, cdiv(y, z))"}, nparams=1,
      float_only=True, saves=("", "z", "yz"),
      vjp=(same, lambda g, a: g * conj(a.p[0] / a.z),
           lambda g, a: -(g * conj(a.y * a.p[0] / (a.z * a.z)))))


# ---- gradient formulas that need more than one line ------------------------------------------
def conj(t):
    """The conjugate of a complex tensor (recorded); a real tensor or a number itself."""
    if isinstance(t, Tensor):
        return apply_ew("conj", t) if t._dtype.kind == "c" else t
    return t.conjugate() if isinstance(t, complex) else t


def _real_part(t):
    return t if t._dtype.kind != "c" else _real_view(t)


def sgn(t):
    return apply_ew("sgn", t)


def _pow_grad_self(g, a):
    y = a.y
    if not isinstance(y, Tensor):
        return zeros_like_(g) if y == 0 else g * conj(y * pow(a.x, y - 1))
    return where(y == 0, zeros_like_(g), g * conj(y * pow(a.x, y - 1)))


def _pow_grad_exp(g, a):
    x = a.x
    if not isinstance(x, Tensor):
        return _rpow_grad(g, x, a.out, a.y)
    y = a.y if a.y._dtype.kind != "c" else _real_part(a.y)
    return where(logical_and(x == 0, y >= 0), zeros_like_(g), g * conj(a.out * log(x)))


def _rpow_grad(g, base, out, exponent):
    """The gradient of base ** exponent for a number base, as torch's: out * log(base), which is
    NaN for a negative base; for base 0, zero where exponent >= 0."""
    if isinstance(base, complex) or out._dtype.kind == "c":
        base = complex(base)
        if base == 0:
            ex = _real_part(exponent)
            return where(ex >= 0, zeros_like_(g), g * conj(out * complex(float("-inf"), 0)))
        return g * conj(out * cmath.log(base))
    if base > 0:
        return g * out * math.log(base)
    if base < 0:
        return g * out * float("nan")
    return where(exponent >= 0, zeros_like_(g), g * out * float("-inf"))


# torch's i1 and i1e gradients: i0 - i1 / x (i0e - i1e (sign x + 1 / x)), 0.5 where |x| is below
# the dtype's epsilon (the formula is 0 / 0 at 0)
_EPS = {"float64": 2.220446049250313e-16, "float32": 1.1920928955078125e-07,
        "float16": 0.0009765625, "bfloat16": 0.0078125}


def _i1_grad(g, a, scaled):
    eps = _EPS[a.x.dtype.name]
    big = a.x.abs() > eps
    safe = where(big, a.x, eps)
    if scaled:
        d = i0e(safe) - a.out * (sign(safe) + 1 / safe)
    else:
        d = i0(safe) - a.out / safe
    return g * where(big, d, 0.5)


def _sgn_grad(g, a):
    """torch's sgn_backward: 0 for real tensors; for complex (g - Re(g conj(s)) s) / |z|, 0 at
    z = 0."""
    if a.x._dtype.kind != "c":
        return zeros_like_(g)
    r = a.x.abs()
    s = a.out
    d = (g - _real_part(g * conj(s)) * s) / r
    return where(r == 0, zeros_like_(d), d)


def _angle_grad(g, a):
    """torch's angle_backward: 0 for real tensors; for complex g * z / |z|^2 * i (0 at z = 0),
    the gradient of atan2(y, x) in torch's convention."""
    x = a.x
    if x._dtype.kind != "c":
        return zeros_like_(g)
    r2 = x.abs().pow(2)
    d = g * x / r2 * 1j
    return where(r2 == 0, zeros_like_(d), d)


def _atan2_recip(a):
    """1 / (x^2 + y^2), 0 where both are 0: torch's atan2 gradient at the origin is 0, not NaN."""
    r = a.x * a.x + a.y * a.y
    return where(r == 0, zeros_like_(r), 1 / r)


def _minmax_grad(g, mine, other, is_max):
    """torch's rule: the gradient goes to the larger (smaller) input, split evenly on ties."""
    if not isinstance(other, Tensor):
        win = mine > other if is_max else mine < other
        tie = mine == other
    else:
        win = mine > other if is_max else mine < other
        tie = mine == other
    return where(win, g, where(tie, g * 0.5, zeros_like_(g)))


def _silu2(x):
    s = sigmoid(x)
    return s * (1 - s) * (2 + x * (1 - 2 * s))


def _gelu_tanh2(x):
    u = (x + x * x * x * GELU_C) * GELU_K
    t = tanh(u)
    du = (1 + x * x * (3 * GELU_C)) * GELU_K
    d2u = x * (6 * GELU_C * GELU_K)
    return (1 - t * t) * (du - x * t * du * du + x * d2u * 0.5)


# ---- the table complete: its kernels rendered, its Op classes made ------------------------------
build(TABLE)
register(TABLE)


__all__ = ["TABLE", "OPS", "run", "apply_ew", "compute_dtype", "size_repr"]
