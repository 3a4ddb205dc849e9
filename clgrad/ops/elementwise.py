"""Elementwise ops: one table. Each entry is the op's kernel expression per dtype kind (f float,
i signed int, u uint8, b bool) and, right beside it, its vector-Jacobian product per operand,
written in clgrad ops so that it can itself be differentiated. Because an elementwise Jacobian is
diagonal, the same rules give the forward-mode (JVP) derivative.

Expressions use x, y, z (operands), p0.. (scalar parameters), SEL(cond, a, b) and CV(value); see
cl_kernels/elementwise.mako. The kernels of each arity and dtype are one program.
"""
import math

from .. import dtypes
from ..autograd.node import SavedTensor, _validate, hooks, run_node
from ..autograd.op import Op, _null_ctx
from ..autograd.views import _edge
from ..autograd.grad_mode import state as _state
from ..dtypes import ALL as ALL_DTYPES
from ..runtime import kernels as _kernels
from ..runtime.device import path_dependent
from ..runtime.kernels import Program, get_kernel, grid, launch, render, vec_width
from ..runtime.memory import Storage
from ..tensor import Tensor, empty_tensor, layout_of, make_tensor, numel_of
from ._base import (broadcast_shapes, cast_raw, check_dims, check_fp64, collapse, expand_strides,
                    full_raw, launch_walk, pack8_right, same_device, scalar_for, size_repr)

FLOAT, SINT, UINT, BOOL = "f", "i", "u", "b"
NUM = "fiu"


class Entry:
    """One elementwise op of the table."""

    def __init__(self, name, operands, exprs, *, out="same", nparams=0, float_only=False,
                 no_ints=False, novec="", vjp=None, saves=(), cls_name=None, group=""):
        self.name = name
        self.operands = operands          # "T" operand of the compute dtype, "b" a bool operand
        self.arity = len(operands)
        self.exprs = exprs                # {kind: expression}
        self.out = out                    # "same" or "bool"
        self.nparams = nparams
        self.float_only = float_only      # ints and bools are promoted to the default float first
        self.no_ints = no_ints            # ... or, as torch's activations, refused
        self.novec = novec                # kinds whose contiguous kernel is scalar (loops, ipow)
        self.vjp = vjp                    # one function (g, args) -> gradient per operand, or None
        self.saves = saves                # which of x, y, z, out backward reads
        self.cls_name = cls_name or "".join(w.capitalize() for w in name.split("_"))
        # "special": kernels in programs of their own, with the long helpers they call (Bessel
        # functions and the like), so that the common programs and every kernel built alone
        # with their prelude (Intel) do not compile those helpers
        self.group = group
        self.patterns = ["tt", "ts", "st"] if operands == "TT" else ["t" * self.arity]
        # (device, dtype, variant) -> (cl.Kernel, vector width, {numel: launch geometry}), for
        # the fast path
        self.kernels = path_dependent({})


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


def same(g, a):
    """The gradient formula of an operand that passes the gradient on unchanged."""
    return g


# ---- unary ----------------------------------------------------------------------------------
entry("neg", "T", {"f": "-x", "i": "-x", "u": "-x"}, vjp=(lambda g, a: -g,))
# max(x, -x) rather than a select: compilers fold either into the same instruction, but the
# select becomes LLVM's abs intrinsic before Oclgrind sees it, which Oclgrind cannot run.
# CV(-x): -x of a scalar char or short is an int, and max(char, int) is ambiguous.
entry("abs", "T", {"f": "fabs(x)", "i": "max(x, CV(-x))", "u": "x"},
      saves="x", vjp=(lambda g, a: g * sign(a.x),))
entry("sign", "T", {"f": "sign(x)", "i": "SEL(x > CV(0), CV(1), SEL(x < CV(0), CV(-1), CV(0)))",
                    "u": "SEL(x > CV(0), CV(1), CV(0))", "b": "x"},
      vjp=(lambda g, a: zeros_like_(g),))
for _n in ("floor", "ceil", "trunc"):
    entry(_n, "T", {"f": f"{_n}(x)", "i": "x", "u": "x"},
          vjp=(lambda g, a: zeros_like_(g),))
entry("round", "T", {"f": "rint(x)", "i": "x", "u": "x"},
      vjp=(lambda g, a: zeros_like_(g),))
entry("frac", "T", ("f", "x - trunc(x)"), vjp=(same,))
entry("exp", "T", ("f", "exp(x)"), float_only=True, saves="out", vjp=(lambda g, a: g * a.out,))
entry("exp2", "T", ("f", "exp2(x)"), float_only=True, saves="out",
      vjp=(lambda g, a: g * a.out * LN2,))
entry("expm1", "T", ("f", "expm1(x)"), float_only=True, saves="out",
      vjp=(lambda g, a: g * (a.out + 1),))
entry("log", "T", ("f", "log(x)"), float_only=True, saves="x", vjp=(lambda g, a: g / a.x,))
entry("log2", "T", ("f", "log2(x)"), float_only=True, saves="x",
      vjp=(lambda g, a: g / (a.x * LN2),))
entry("log10", "T", ("f", "log10(x)"), float_only=True, saves="x",
      vjp=(lambda g, a: g / (a.x * math.log(10.0)),))
entry("log1p", "T", ("f", "log1p(x)"), float_only=True, saves="x",
      vjp=(lambda g, a: g / (a.x + 1),))
entry("sqrt", "T", ("f", "sqrt(x)"), float_only=True, saves="out",
      vjp=(lambda g, a: g / (a.out * 2),))
entry("rsqrt", "T", ("f", "rsqrt(x)"), float_only=True, saves="out",
      vjp=(lambda g, a: g * a.out.pow(3) * -0.5,))
entry("sin", "T", ("f", "sin(x)"), float_only=True, saves="x", vjp=(lambda g, a: g * cos(a.x),))
entry("cos", "T", ("f", "cos(x)"), float_only=True, saves="x", vjp=(lambda g, a: -(g * sin(a.x)),))
entry("tan", "T", ("f", "tan(x)"), float_only=True, saves="out",
      vjp=(lambda g, a: g * (a.out * a.out + 1),))
entry("asin", "T", ("f", "asin(x)"), float_only=True, saves="x",
      vjp=(lambda g, a: g * rsqrt(1 - a.x * a.x),))
entry("acos", "T", ("f", "acos(x)"), float_only=True, saves="x",
      vjp=(lambda g, a: -(g * rsqrt(1 - a.x * a.x)),))
entry("atan", "T", ("f", "atan(x)"), float_only=True, saves="x",
      vjp=(lambda g, a: g / (a.x * a.x + 1),))
entry("sinh", "T", ("f", "sinh(x)"), float_only=True, saves="x", vjp=(lambda g, a: g * cosh(a.x),))
entry("cosh", "T", ("f", "cosh(x)"), float_only=True, saves="x", vjp=(lambda g, a: g * sinh(a.x),))
entry("tanh", "T", ("f", "tanh(x)"), float_only=True, saves="out",
      vjp=(lambda g, a: tanh_backward(g, a.out),))
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
entry("sigmoid", "T", ("f", "CV(1) / (CV(1) + exp(-x))"), float_only=True, saves="out",
      vjp=(lambda g, a: sigmoid_backward(g, a.out),))
entry("reciprocal", "T", ("f", "CV(1) / x"), float_only=True, saves="out",
      vjp=(lambda g, a: -(g * a.out * a.out),))
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
entry("square", "T", ("fiu", "x * x"), saves="x", vjp=(lambda g, a: g * a.x * 2,))
entry("pow_scalar", "T", {"f": "pow(x, CV(p0))", "i": "ipow_s(x, p0)", "u": "ipow_s(x, p0)"},
      nparams=1, novec="iu", saves="x", cls_name="Pow",
      vjp=(lambda g, a: zeros_like_(g) if a.p[0] == 0 else g * pow(a.x, a.p[0] - 1) * a.p[0],))
entry("rpow_scalar", "T", ("f", "pow(CV(p0), x)"), nparams=1, float_only=True,
      saves="ox", cls_name="Pow", vjp=(lambda g, a: _rpow_grad(g, a.p[0], a.out, a.x),))
entry("clamp", "T", ("fiu", "SEL(SEL(x < CV(p0), CV(p0), x) > CV(p1), CV(p1), SEL(x < CV(p0), CV(p0), x))"),
      nparams=2,
      saves="x", vjp=(lambda g, a: clamp_backward(g, a.x, a.p[0], a.p[1]),))
entry("clamp_min", "T", ("fiu", "SEL(x < CV(p0), CV(p0), x)"), nparams=1, saves="x",
      vjp=(lambda g, a: clamp_min_backward(g, a.x, a.p[0]),))
entry("clamp_max", "T", ("fiu", "SEL(x > CV(p0), CV(p0), x)"), nparams=1, saves="x",
      vjp=(lambda g, a: clamp_max_backward(g, a.x, a.p[0]),))
entry("nan_to_num", "T", {"f": "SEL(isnan(x), CV(p0), SEL(isinf(x) & (x > CV(0)), CV(p1), "
                               "SEL(isinf(x), CV(p2), x)))", "i": "x", "u": "x", "b": "x"},
      nparams=3, saves="x", vjp=(lambda g, a: where(isfinite(a.x), g, zeros_like_(g)),))
entry("logical_not", "T", ("fiub", "x == CV(0)"), out="bool")
# Integers are never NaN nor infinite: a comparison of constants gives the constant mask of x's
# comparison type (comparing x with itself would do too, but compilers warn about it).
_NONE, _ALL = "CV(0) != CV(0)", "CV(0) == CV(0)"
entry("isnan", "T", {"f": "isnan(x)", "i": _NONE, "u": _NONE, "b": _NONE}, out="bool")
entry("isinf", "T", {"f": "isinf(x)", "i": _NONE, "u": _NONE, "b": _NONE}, out="bool")
entry("isfinite", "T", {"f": "isfinite(x)", "i": _ALL, "u": _ALL, "b": _ALL}, out="bool")
entry("signbit", "T", {"f": "signbit(x)", "i": "x < CV(0)", "u": _NONE, "b": _NONE}, out="bool")
entry("bitwise_not", "T", {"i": "~x", "u": "~x", "b": "x ^ CV(1)"})

# ---- binary ---------------------------------------------------------------------------------
entry("add", "TT", {"f": "x + y", "i": "x + y", "u": "x + y", "b": "x | y"},
      vjp=(same, same))
entry("sub", "TT", ("fiu", "x - y"), vjp=(same, lambda g, a: -g))
entry("mul", "TT", {"f": "x * y", "i": "x * y", "u": "x * y", "b": "x & y"}, saves=("y", "x"),
      vjp=(lambda g, a: g * a.y, lambda g, a: g * a.x))
# d/dy as torch computes it, -g * ((x / y) / y): y * y underflows first, and F.normalize's
# gradient along a dim of size 1 (0 but for rounding) then rounds as torch's does
entry("div", "TT", ("f", "x / y"), float_only=True, saves=("y", "xy"),
      vjp=(lambda g, a: g / a.y, lambda g, a: -g * ((a.x / a.y) / a.y)))
entry("floor_divide", "TT", ("fiu", "FLOORDIV(x, y)"), cls_name="FloorDivide")
entry("remainder", "TT", ("fiu", "REMAINDER(x, y)"), saves=("", "xy"),
      vjp=(same, lambda g, a: -(g * floor_divide(a.x, a.y))))
entry("fmod", "TT", {"f": "fmod(x, y)",
                     "i": "SEL((y == CV(0)) | (y == CV(-1)), CV(0), x % SEL((y == CV(0)) | (y == CV(-1)), CV(1), y))",
                     "u": "SEL(y == CV(0), CV(0), x % SEL(y == CV(0), CV(1), y))"}, saves=("", "xy"),
      vjp=(same, lambda g, a: -(g * trunc(a.x / a.y))))
entry("pow", "TT", {"f": "pow(x, y)", "i": "ipow_s(x, y)", "u": "ipow_s(x, y)"}, novec="iu",
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
entry("masked_fill", "Tb", ("fiub", "SEL(y != FALSE_, CV(p0), x)"), nparams=1, saves="y",
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
entry("where", "bTT", ("fiub", "SEL(x != FALSE_, y, z)"), saves=("", "x", "x"),
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
entry("addcmul", "TTT", ("fiu", "x + CV(p0) * y * z"), nparams=1, saves=("", "z", "y"),
      vjp=(same, lambda g, a: g * a.z * a.p[0], lambda g, a: g * a.y * a.p[0]))
entry("addcdiv", "TTT", ("f", "x + CV(p0) * y / z"), nparams=1, float_only=True,
      saves=("", "z", "yz"),
      vjp=(same, lambda g, a: g * a.p[0] / a.z,
           lambda g, a: -(g * a.y * a.p[0]) / (a.z * a.z)))


# ---- gradient formulas that need more than one line ------------------------------------------
def _pow_grad_self(g, a):
    y = a.y
    if not isinstance(y, Tensor):
        return zeros_like_(g) if y == 0 else g * y * pow(a.x, y - 1)
    return where(y == 0, zeros_like_(g), g * y * pow(a.x, y - 1))


def _pow_grad_exp(g, a):
    x = a.x
    if not isinstance(x, Tensor):
        return _rpow_grad(g, x, a.out, a.y)
    return where(logical_and(x == 0, a.y >= 0), zeros_like_(g), g * a.out * log(x))


def _rpow_grad(g, base, out, exponent):
    """The gradient of base ** exponent for a number base, as torch's: out * log(base), which is
    NaN for a negative base; for base 0, zero where exponent >= 0."""
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


# ---- kernels --------------------------------------------------------------------------------
class _RenderEntry:
    """What the template sees of an entry for one dtype."""

    def __init__(self, e, dt):
        self.name = e.name
        self.operands = e.operands
        self.nparams = e.nparams
        self.expr = e.exprs[dt.kind]
        self.out = e.out
        self.vec = dt.kind not in e.novec
        self.patterns = e.patterns


# The ops most scripts use (arithmetic, comparisons, the common activations and their
# gradients): where a driver builds whole programs (PoCL), their kernels are built as a unit of
# their own, so a script need not compile the other 150 kernels of a program (Program.unit_key).
HOT = {"neg", "abs", "sign", "exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "reciprocal",
       "relu", "gelu", "silu", "square", "pow_scalar", "clamp", "clamp_min", "clamp_max",
       "logical_not", "isnan", "isinf", "isfinite", "add", "sub", "mul", "div", "pow", "maximum",
       "minimum", "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "masked_fill",
       "threshold_backward", "tanh_backward", "sigmoid_backward", "silu_backward",
       "gelu_backward", "clamp_backward", "clamp_min_backward", "clamp_max_backward"}

# For integer and bool dtypes the ops scripts use are fewer still: comparisons, counts, masks
# (an accuracy count builds 26 kernels of ew2_i64, not 86).
HOT_EXACT = {"neg", "logical_not", "add", "sub", "mul", "eq", "ne", "lt", "le", "gt", "ge",
             "logical_and", "logical_or", "masked_fill"}

PROGRAMS = {}       # (arity, dtype), and (arity, dtype, group) for the entries of a group
for _arity in (1, 2, 3):
    for _dt in ALL_DTYPES:
        for _group in ("", "special"):
            _entries = [_RenderEntry(e, _dt) for e in TABLE.values()
                        if e.arity == _arity and _dt.kind in e.exprs and e.group == _group]
            if not _entries:
                continue
            _hot_names = HOT if _dt.kind == "f" else HOT_EXACT
            _hot = {f"{e.name}_{kind}_{pat}" for e in _entries if e.name in _hot_names
                    for kind in "cs" for pat in e.patterns} if _arity < 3 else None
            PROGRAMS[(_arity, _dt, _group) if _group else (_arity, _dt)] = Program(
                f"ew{_arity}", f"{_dt.short}_{_group}" if _group else _dt.short,
                render("elementwise.mako", dt=_dt, entries=_entries, bool_dt=dtypes.bool_,
                       special=bool(_group)),
                hot=_hot)


def program_of(e, dt):
    return PROGRAMS[(e.arity, dt, e.group) if e.group else (e.arity, dt)]


# ---- dispatch -------------------------------------------------------------------------------
# torch's names of the dtypes in its "not implemented for" messages
_TORCH_DT_NAMES = {d.name: n for d, n in dtypes.TORCH_NAMES.items()}


def _not_implemented(e, dt):
    if e.name == "sub" and dt is dtypes.bool_:
        return RuntimeError("Subtraction, the `-` operator, with two bool tensors is not supported. "
                            "Use the `^` or `logical_xor()` operator instead.")
    if e.name == "relu" and dt is dtypes.bool_:
        return RuntimeError("Boolean inputs not supported for relu")
    if e.name == "neg" and dt is dtypes.bool_:
        return RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. If you "
                            "are trying to invert a mask, use the `~` or `logical_not()` operator "
                            "instead.")
    # torch raises NotImplementedError (a RuntimeError) for a kernel missing for a dtype
    return NotImplementedError(f'"{e.name}" not implemented for '
                               f'\'{_TORCH_DT_NAMES.get(dt.name, dt.name)}\'')


def _check_bool_sub(operands):
    """torch refuses subtraction with a bool operand (tensor or Python bool), whatever the other."""
    bools = [a for a in operands if type(a) is bool or
             (isinstance(a, Tensor) and a._dtype is dtypes.bool_)]
    if len(bools) == 2:             # a Python bool counts as a bool tensor (torch wraps it)
        raise _not_implemented(TABLE["sub"], dtypes.bool_)
    if bools:
        raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not supported. If "
                           "you are trying to invert a mask, use the `~` or `logical_not()` "
                           "operator instead.")


def compute_dtype(e, operands):
    """The dtype the kernel computes in, by torch's promotion over the T operands."""
    ts = [a for a, k in zip(operands, e.operands) if k == "T"]
    if len(ts) == 1 and isinstance(ts[0], Tensor):
        dt = ts[0]._dtype
    else:
        dt = dtypes.result_type(*ts)
    if e.name == "sub":
        _check_bool_sub(operands)
    if e.float_only and dt.kind != "f":
        if e.no_ints:
            raise _not_implemented(e, dt)
        dt = dtypes.get_default_dtype()
    elif e.name == "square" and dt is dtypes.bool_:
        dt = dtypes.int64               # torch computes it as pow(x, 2): bool promotes to int64
    if dt.kind not in e.exprs:
        raise _not_implemented(e, dt)
    return dt


# the Python ints an integer dtype's kernels take as they are (others wrap on the general path)
_INT_RANGE = {d: ((0, 256) if d is dtypes.uint8 else (-(1 << (8 * d.itemsize - 1)),
                                                      1 << (8 * d.itemsize - 1)))
              for d in dtypes.INTS}
# Python bools take the general path (torch refuses some of them: x - True)
_SCALAR_OK = {"f": (float, int), "i": (int,), "u": (int,)}


def _fast_variant(e, operands, params):
    """The contiguous kernel variant when the operands are the common simple case (contiguous
    tensors of one dtype and shape, or a tensor and a Python number that does not change its
    dtype), else None. Keeps the hot path free of promotion and stride bookkeeping."""
    a = operands[0]
    if type(a) is not Tensor or not a._contig:
        return None
    dt = a._dtype
    kind = dt.kind
    if kind not in e.exprs or (e.float_only and kind != "f") or kind == "b":
        return None
    ok = _SCALAR_OK[kind]
    for p in params:
        if type(p) not in ok:
            return None
    if e.arity == 1:
        return "t"
    if e.operands != "TT":
        return None
    b = operands[1]
    tb = type(b)
    if tb is Tensor:
        if b._contig and b._dtype is dt and b._shape == a._shape and \
                b._storage.device is a._storage.device:
            return "tt"
        return None
    if tb in ok and (kind == "f" or _INT_RANGE[dt][0] <= b < _INT_RANGE[dt][1]):
        return "ts"
    return None


def _run_fast(e, variant, operands, params, out):
    a = operands[0]
    dt = a._dtype
    dev = a._storage.device
    shape = a._shape
    n, strides = layout_of(shape)
    if out is None:
        odt = dtypes.bool_ if e.out == "bool" else dt
        out = make_tensor(Storage(dev, n * odt.itemsize), shape, strides, 0, odt, True)
    if n == 0:
        return out
    plan = e.kernels.get((dev, dt, variant))
    if plan is None:
        k = get_kernel(dev, program_of(e, dt), f"{e.name}_c_{variant}")
        vec = 1 if dt.kind in e.novec else vec_width(dev, dt)
        plan = e.kernels[(dev, dt, variant)] = (k, vec, {})
    k, vec, sizes = plan
    geometry = sizes.get(n)
    if geometry is None:          # the one grid() of every launch, memoised per size
        geometry = sizes[n] = grid(dev, -(-n // vec))
    gs, ls = geometry
    if variant == "ts":
        args = (out._storage.buf, out._offset, a._storage.buf, a._offset, 1, operands[1],
                *params, n)
    elif variant == "tt":
        b = operands[1]
        args = (out._storage.buf, out._offset, a._storage.buf, a._offset, 1, b._storage.buf,
                b._offset, 1, *params, n)
    else:
        args = (out._storage.buf, out._offset, a._storage.buf, a._offset, 1, *params, n)
    launch(dev, k, gs, ls, *args)
    return out


def _one_element(t):
    for st, n in zip(t._strides, t._shape):
        if st != 0 and n != 1:
            return False
    return True


def run(e, operands, params=(), out=None, cdt=None):
    """Evaluate table entry e on operands (Tensors or Python numbers) and return a new tensor, or
    write into `out` (contiguous, of the right shape and dtype)."""
    if cdt is None:
        variant = _fast_variant(e, operands, params)
        if variant is not None and (out is None or out._shape == operands[0]._shape):
            return _run_fast(e, variant, operands, params, out)
    dev = None
    for a in operands:
        if isinstance(a, Tensor):
            if dev is None:
                dev = a._storage.device
            elif a._storage.device is not dev:
                same_device(e.name, operands)
    if cdt is None:
        cdt = compute_dtype(e, operands)
    check_fp64(cdt, dev)
    odt = dtypes.bool_ if e.out == "bool" else cdt
    # operands: tensors of the right dtype, or host scalars where the kernel takes them
    args = list(operands)
    scalar_pos = None
    for k, (a, kind) in enumerate(zip(operands, e.operands)):
        if isinstance(a, Tensor):
            want = cdt if kind == "T" else dtypes.bool_
            if a._dtype is not want:
                args[k] = cast_raw(a, want)
        elif e.operands == "TT" and scalar_pos is None:
            scalar_pos = k
        else:
            args[k] = full_raw((), a, cdt if kind == "T" else dtypes.bool_, dev)
    if scalar_pos is not None and not isinstance(args[1 - scalar_pos], Tensor):
        args[1] = full_raw((), args[1], cdt, dev)
        scalar_pos = None
    # shape
    tensors = [a for a in args if isinstance(a, Tensor)]
    if len(tensors) == 1:
        shape = tensors[0]._shape
    else:
        shape = broadcast_shapes(*[t._shape for t in tensors])
    if out is None:
        out = empty_tensor(shape, odt, dev)
    n = numel_of(shape)
    if n == 0:
        return out
    pattern = e.patterns[0] if scalar_pos is None else ("st" if scalar_pos == 0 else "ts")
    prog = program_of(e, cdt)
    sc = scalar_for(cdt, 0)
    plist = [type(sc)(p) if cdt.kind != "b" else int(bool(p)) for p in params]
    # contiguous kernel: every tensor operand either walks with the output or repeats one element
    # (a single element, or one expanded to any shape: all its strides are 0)
    contiguous = True
    for t in tensors:
        if not ((t._contig and t._shape == shape) or _one_element(t)):
            contiguous = False
            break
    if contiguous:
        kargs = [out._storage.buf, out._offset]
        for k, a in enumerate(args):
            if k == scalar_pos:
                kargs.append(scalar_for(cdt, a))
            else:
                kargs.extend((a._storage.buf, a._offset,
                              0 if _one_element(a) and not (a._contig and a._shape == shape)
                              else 1))
        kargs.extend(plist)
        kargs.append(n)
        k = get_kernel(dev, prog, f"{e.name}_c_{pattern}")
        vec = vec_width(dev, cdt) if cdt.kind not in e.novec else 1
        gs, ls = grid(dev, -(-n // vec))
        launch(dev, k, gs, ls, *kargs)
        return out
    strides = [expand_strides(t, shape) for t in tensors]
    cshape, cstrides = collapse(shape, strides)
    check_dims(e.name, len(cshape))
    kargs = [out._storage.buf, out._offset]
    ti = 0
    for k, a in enumerate(args):
        if k == scalar_pos:
            kargs.append(scalar_for(cdt, a))
        else:
            kargs.extend((a._storage.buf, a._offset, pack8_right(cstrides[ti])))
            ti += 1
    kargs.extend(plist)
    launch_walk(dev, get_kernel(dev, prog, f"{e.name}_s_{pattern}"), n, cshape, *kargs)
    return out


# ---- autograd: one Op class per entry ----------------------------------------------------------
class _Args:
    """The values a gradient formula reads: operands x, y, z, the output and the parameters."""

    __slots__ = ("x", "y", "z", "out", "p")


_NAMES = ("x", "y", "z")


def _make_op(e):
    arity = e.arity
    # what each operand's gradient formula reads: a string per operand, or one for all
    per_operand = e.saves if isinstance(e.saves, tuple) else (e.saves,) * arity

    plans = {}       # needs_input_grad -> [(slot, operand index or None for the output)]

    def save_plan(needs):
        wanted = set()
        for i, spec in enumerate(per_operand):
            if needs[i]:
                wanted.update(spec)
        return [("out" if s == "o" else s, None if s == "o" else _NAMES.index(s))
                for s in ("x", "y", "z", "o") if s in wanted]

    def forward(ctx, *args):
        operands = args[:arity]
        out = run(e, operands, args[arity:])
        if ctx is not _null_ctx:
            ctx.operand_values = [None if isinstance(a, Tensor) else a for a in operands]
            ctx.params = args[arity:]
            needs = ctx.needs_input_grad
            plan = plans.get(needs)
            if plan is None:
                plan = plans[needs] = save_plan(needs)
            to_save = []
            slots = []
            for slot, idx in plan:
                v = out if idx is None else operands[idx]
                if isinstance(v, Tensor):
                    to_save.append(v)
                    slots.append(slot)
            ctx.slots = slots
            if to_save:
                ctx.save_for_backward(*to_save)
        return out

    vjps = e.vjp

    def formula_args(ctx):
        """What the gradient formulas read, from what forward kept on the node."""
        a = _Args()
        vals = ctx.operand_values
        a.x = vals[0]
        a.y = vals[1] if arity > 1 else None
        a.z = vals[2] if arity > 2 else None
        a.out = None
        slots = ctx.slots
        if slots:
            for s, t in zip(slots, ctx._unpack_saved()):
                setattr(a, s, t)
        a.p = ctx.params
        return a

    def backward(ctx, g):
        needs = ctx.needs_input_grad
        if all(vjps[i] is same or not needs[i] for i in range(arity)):
            # only pass-through gradients wanted (add, and the like): no formula to evaluate
            grads = [None] * len(needs)
            for i in range(arity):
                if needs[i]:
                    shape = ctx._in_meta[ctx._tensor_positions.index(i)][0]
                    grads[i] = g if g._shape == shape else sum_to(g, shape)
            return grads
        a = formula_args(ctx)
        positions = ctx._tensor_positions
        grads = [None] * (arity + len(ctx.params))
        for i in range(arity):
            if needs[i] and vjps[i] is not None:
                gi = vjps[i](g, a)
                shape = ctx._in_meta[positions.index(i)][0]
                if gi._shape != shape:
                    gi = sum_to(gi, shape)
                grads[i] = gi
        return grads

    def jvp(tangents, operands, params, out):
        """Forward-mode rule: sum over operands of (partial derivative * tangent)."""
        a = _Args()
        for i in range(3):
            setattr(a, _NAMES[i], operands[i] if i < arity else None)
        a.out = out
        a.p = params
        total = None
        for i in range(arity):
            t = tangents[i]
            if t is None or e.vjp[i] is None:
                continue
            term = e.vjp[i](t, a)
            total = term if total is None else total + term
        return total

    def op_jvp(args, tangents, out):
        if e.vjp is None:               # not differentiable: no tangent
            return None
        return jvp(tangents[:arity], args[:arity], args[arity:], out)

    attrs = {"forward": staticmethod(forward), "_entry": e, "_jvp_rule": staticmethod(jvp),
             "jvp": staticmethod(op_jvp)}
    if e.vjp is not None:
        attrs["backward"] = staticmethod(backward)
    cls = type(e.cls_name, (Op,), attrs)
    if e.vjp is None or e.out == "bool" or e.nparams:
        return cls
    generic_apply = cls.apply.__func__

    def direct(node, g):
        """The backward of a node made by `record`: every operand and g have one shape and
        dtype, so the formulas' results need no summing or casting."""
        shape, dt, _ = node._in_meta[0]
        if g._shape != shape or g._dtype is not dt:      # a hook changed it: the general path
            return run_node(node, [g])
        a = formula_args(node)
        needs = node.needs_input_grad
        res = []
        fits = True
        for i in node._tensor_positions:
            if needs[i] and vjps[i] is not None:
                gi = vjps[i](g, a)
                if type(gi) is not Tensor or gi._shape != shape or gi._dtype is not dt:
                    fits = False
                res.append(gi)
            else:
                res.append(None)
        return res if fits else _validate(node, res)

    # nodes made by `record` answer to the same name and carry `direct`; one class per variant
    # holds what is constant for it
    def lean_node_class(**constants):
        return type(cls._backward_cls.__name__, (cls._backward_cls,),
                    {"_direct_backward": staticmethod(direct), "params": (), "slots": (),
                     **constants})

    node_t = lean_node_class(needs_input_grad=(True,), _tensor_positions=(0,),
                             operand_values=(None, None))
    node_ts = lean_node_class(needs_input_grad=(True, False), _tensor_positions=(0,))
    node_tt = lean_node_class(_tensor_positions=(0, 1), operand_values=(None, None))

    def record(args, variant):
        # Op._apply_recorded plus forward's bookkeeping, for the operands of the fast variants:
        # the output has the first operand's shape, dtype and device, so one meta fits all
        a = args[0]
        out = _run_fast(e, variant, args, (), None)
        meta = ((a._shape, a._dtype, a._storage.device),)
        fn = a._grad_fn
        edge = (fn, a._output_nr) if fn is not None and a._base is None else _edge(a)
        if variant == "tt":
            node = node_tt()
            b = args[1]
            node.needs_input_grad = needs = (a._requires_grad, b._requires_grad)
            node.next_functions = (edge, _edge(b))
            node._in_meta = meta * 2
        else:
            if variant == "ts":
                node = node_ts()
                node.operand_values = (None, args[1])
            else:
                node = node_t()
            needs = node.needs_input_grad
            node.next_functions = (edge,)
            node._in_meta = meta
        node._out_meta = meta
        plan = plans.get(needs)
        if plan is None:
            plan = plans[needs] = save_plan(needs)
        out._grad_fn = node
        out._requires_grad = True
        if plan:
            slots = []
            saved = []
            for slot, idx in plan:
                if idx is None:                 # the output
                    slots.append(slot)
                    saved.append(SavedTensor(out, 0))
                else:
                    v = args[idx]
                    if type(v) is Tensor:
                        slots.append(slot)
                        saved.append(SavedTensor(v))
            if slots:
                node.slots = slots
                node._saved = saved
        return out

    def apply(cls, *args):
        if hooks.op is None and len(args) == arity:
            variant = _fast_variant(e, args, ())
            if variant is not None:
                if _state.grad_enabled and (args[0]._requires_grad or
                                            (variant == "tt" and args[1]._requires_grad)):
                    return record(args, variant)
                return _run_fast(e, variant, args, (), None)
        return generic_apply(cls, *args)

    cls.apply = classmethod(apply)
    return cls




def _tensor_index(ctx, i):
    return ctx._tensor_positions.index(i)


OPS = {name: _make_op(e) for name, e in TABLE.items()}


def apply_ew(name, *args):
    """Apply entry `name` to operands and parameters with autograd."""
    op = OPS[name]
    if TABLE[name].vjp is None:
        return op.forward(_null_ctx, *args)
    return op.apply(*args)


# functional forms used by the gradient formulas above (and exported by clgrad.ops)
def _unary(name):
    op = OPS[name]
    e = TABLE[name]
    if e.vjp is None:
        def f(x):
            return op.forward(_null_ctx, x)
    else:
        def f(x):
            return op.apply(x)
    f.__name__ = name
    return f


exp = _unary("exp")
log = _unary("log")
sin = _unary("sin")
cos = _unary("cos")
sinh = _unary("sinh")
cosh = _unary("cosh")
tanh = _unary("tanh")
sigmoid = _unary("sigmoid")
rsqrt = _unary("rsqrt")
sign = _unary("sign")
trunc = _unary("trunc")
isfinite = _unary("isfinite")
digamma = _unary("digamma")
i0 = _unary("i0")
i0e = _unary("i0e")
i1 = _unary("i1")
i1e = _unary("i1e")


def polygamma(n, x):
    return OPS["polygamma"].apply(x, float(n))


def tanh_backward(g, y):
    return OPS["tanh_backward"].apply(g, y)


def sigmoid_backward(g, y):
    return OPS["sigmoid_backward"].apply(g, y)


def threshold_backward(g, x):
    return OPS["threshold_backward"].apply(g, x)


def silu_backward(g, x):
    return OPS["silu_backward"].apply(g, x)


def gelu_backward(g, x):
    return OPS["gelu_backward"].apply(g, x)


def gelu_tanh_backward(g, x):
    return OPS["gelu_tanh_backward"].apply(g, x)


def softplus_backward(g, x, beta, threshold):
    return OPS["softplus_backward"].apply(g, x, beta, threshold)


def elu_backward(g, x, alpha):
    return OPS["elu_backward"].apply(g, x, alpha)


def leaky_relu_backward(g, x, slope):
    return OPS["leaky_relu_backward"].apply(g, x, slope)


def clamp_backward(g, x, lo, hi):
    return OPS["clamp_backward"].apply(g, x, lo, hi)


def clamp_min_backward(g, x, lo):
    return OPS["clamp_min_backward"].apply(g, x, lo)


def clamp_max_backward(g, x, hi):
    return OPS["clamp_max_backward"].apply(g, x, hi)


def where(cond, x, y):
    return OPS["where"].apply(cond, x, y)


def masked_fill(x, mask, value):
    return OPS["masked_fill"].apply(x, mask, value)


def logical_and(x, y):
    return OPS["logical_and"].forward(_null_ctx, x, y)


def floor_divide(x, y):
    return OPS["floor_divide"].forward(_null_ctx, x, y)


def pow(x, y):
    if isinstance(y, Tensor):
        return OPS["pow"].apply(x, y)
    return OPS["pow_scalar"].apply(x, y)


def zeros_like_(t):
    return full_raw(t._shape, 0, t._dtype, t._storage.device)


def ones_like_(t):
    return full_raw(t._shape, 1, t._dtype, t._storage.device)


def sum_to(t, shape):
    """Sum t down to `shape` (the reverse of broadcasting); recorded by autograd."""
    from .reduce import sum_to as _sum_to
    return _sum_to(t, shape)


__all__ = ["TABLE", "OPS", "run", "apply_ew", "compute_dtype", "size_repr"]
