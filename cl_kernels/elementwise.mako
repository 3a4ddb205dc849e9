## Elementwise kernels of one arity for one dtype, generated from the op table in
## clgrad/ops/elementwise.py. Each table entry gives an expression over operands x, y, z and
## parameters p0, p1, p2 written with SEL(cond, a, b), CV(value) and FALSE_ (a bool zero), so that the same text is valid
## on VEC-wide vectors (contiguous kernels) and on scalars (tails and strided kernels).
##
## Complex dtypes (kind c) compute in float2 / double2 pairs (re, im): their expressions call
## common.mako's complex helpers (cmul, cdiv, cexp, ...), their kernels are scalar (one pair per
## work-item), CV(v) is the complex number (v, 0), and parameters p0.. are pairs already.
## Entries with out="real" (abs, angle) write the dtype's real part type.
##
## Kernel names: <op>_<layout>_<pattern>. layout c: contiguous operands (a step flag per operand:
## 1 walks the buffer, 0 repeats its first element), r: rows of a contiguous result along which
## each operand has stride 1 or 0 (vector code; entries with vector code only), s: any strides
## (long8 strides, up to 8 dims after collapsing, walked as common.mako's walk() describes).
## pattern: t per tensor operand, s per operand passed as a host scalar.
<%namespace name="c" file="common.mako"/>
<%!
def mask_type(d):
    """the integer type comparisons of d's compute type yield (same element size)"""
    return {"float": "int", "double": "long", "int": "int", "long": "long", "uchar": "char", "char": "char",
            "short": "short", "float2": "int", "double2": "int"}[d.ct]

NAMES = ["x", "y", "z"]

def operand_dtype(kind, dt, bool_dt):
    return bool_dt if kind == "b" else dt

def out_dtype(e, dt, bool_dt):
    return bool_dt if e.out == "bool" else dt.real if e.out == "real" else dt
%>
${c.prelude([dt])}
## No multiply and add contracted into an fma, within an op's expression or across ops: a fused
## chain of ops (fused.mako, which includes this file) must compute the bits each op's own
## kernel computes, and NVIDIA's compiler contracts across statements wherever contraction is on
## (a multiply of one op and the add of the next: seen on an H200, driver 580), so the only
## setting both can share is off. numpy does not contract either.
#pragma OPENCL FP_CONTRACT OFF
## ---- per-context macros: vector (v) or scalar (s) ---------------------------------------------
<%def name="begin_ctx(ctx)">
<% CT = dt.ct; MT = mask_type(dt) %>
% if ctx == "v":
% if c.attr.operators_only([dt]):
#define SEL(cnd, a, b) (CAT(convert_${MT}, ${c.attr.width(dt)})(cnd) ? (a) : (b))
% else:
#define SEL(cnd, a, b) select((b), (a), CAT(convert_${MT}, ${c.attr.width(dt)})(cnd))
% endif
#define CV(v) ((CAT(${CT}, ${c.attr.width(dt)}))(v))
#define FALSE_ ((CAT(uchar, ${c.attr.width(dt)}))(0))
#define FLOORDIV floordiv_v
#define REMAINDER remainder_v
#define GELU_ERFC gelu_erfc_v
% elif dt.kind == "c":
#define SEL(cnd, a, b) ((cnd) ? (a) : (b))
#define CV(v) ((${CT})((${dt.rt})(v), (${dt.rt})0))
#define FALSE_ ((uchar)0)
% else:
#define SEL(cnd, a, b) ((cnd) ? (a) : (b))
#define CV(v) ((${CT})(v))
#define FALSE_ ((uchar)0)
#define FLOORDIV floordiv_s
#define REMAINDER remainder_s
#define GELU_ERFC gelu_erfc_s
% endif
</%def>
<%def name="end_ctx()">
#undef SEL
#undef CV
#undef FALSE_
#undef FLOORDIV
#undef REMAINDER
#undef GELU_ERFC
</%def>

## ---- helpers, rendered once for vectors and once for scalars -----------------------------------
<% CT = dt.ct %>
% if dt.kind == "c":
${c.complex_helpers(CT, dt.rt)}
% endif
% for ctx in (("v", "s") if dt.kind != "c" else ()):
<% T = f"CAT({CT}, {c.attr.width(dt)})" if ctx == "v" else CT %>
${begin_ctx(ctx)}
% if dt.kind == "f":
/* Python's floor division and remainder on floats, as torch computes them */
inline ${T} floordiv_${ctx}(${T} a, ${T} b) {
    ${T} m = fmod(a, b);
    ${T} d = (a - m) / b;
    d = SEL((m != CV(0)) & ((b < CV(0)) != (m < CV(0))), d - CV(1), d);
    ${T} f = floor(d);
    f = SEL(d - f > CV(0.5), f + CV(1), f);
    f = SEL(d != CV(0), f, copysign(CV(0), a / b));
    return SEL(b == CV(0), a / b, f);
}
inline ${T} remainder_${ctx}(${T} a, ${T} b) {
    ${T} m = fmod(a, b);
    return SEL((m != CV(0)) & ((m < CV(0)) != (b < CV(0))), m + b, m);
}
% if CT == "float":
/* erfc for GELU in float: t exp(-x^2 + poly(t)) with t = 1 / (1 + |x| / 2), relative error below
   1.2e-7 for every x (Numerical Recipes' erfcc, a Chebyshev fit). One exp and one division:
   PoCL's erfc is a scalar library call, 3.5x slower than this on whole vectors. erf and erfc
   themselves keep the built-ins (this form loses erf's relative accuracy near 0). */
inline ${T} gelu_erfc_${ctx}(${T} x) {
    ${T} z = fabs(x);
    ${T} t = CV(1.0f) / (CV(1.0f) + CV(0.5f) * z);
    ${T} p = CV(-1.26551223f) + t * (CV(1.00002368f) + t * (CV(0.37409196f) + t * (CV(0.09678418f)
             + t * (CV(-0.18628806f) + t * (CV(0.27886807f) + t * (CV(-1.13520398f)
             + t * (CV(1.48851587f) + t * (CV(-0.82215223f) + t * CV(0.17087277f)))))))));
    ${T} r = t * exp(p - z * z);
    return SEL(x >= CV(0.0f), r, CV(2.0f) - r);
}
% else:
inline ${T} gelu_erfc_${ctx}(${T} x) { return erfc(x); }
% endif
% elif dt.kind == "i":
/* integer division guarded against the two cases that trap on x86: by 0 and MIN / -1 */
inline ${T} floordiv_${ctx}(${T} a, ${T} b) {
    ${T} bb = SEL((b == CV(0)) | (b == CV(-1)), CV(1), b);
    ${T} q = a / bb;
    ${T} r = a - q * bb;
    q = SEL((r != CV(0)) & ((r < CV(0)) != (bb < CV(0))), q - CV(1), q);
    q = SEL(b == CV(-1), CV(0) - a, q);
    return SEL(b == CV(0), CV(0), q);
}
inline ${T} remainder_${ctx}(${T} a, ${T} b) {
    ${T} bb = SEL((b == CV(0)) | (b == CV(-1)), CV(1), b);
    ${T} r = a % bb;
    r = SEL((r != CV(0)) & ((r < CV(0)) != (bb < CV(0))), r + bb, r);
    return SEL((b == CV(0)) | (b == CV(-1)), CV(0), r);
}
% else:
inline ${T} floordiv_${ctx}(${T} a, ${T} b) {
    return SEL(b == CV(0), CV(0), a / SEL(b == CV(0), CV(1), b));
}
inline ${T} remainder_${ctx}(${T} a, ${T} b) {
    return SEL(b == CV(0), CV(0), a % SEL(b == CV(0), CV(1), b));
}
% endif
${end_ctx()}
% endfor
% if dt.kind == "f":
<%
    # constants in the compute type: float literals in float kernels (a double literal there
    # would need cl_khr_fp64 on a device without it)
    def num(v):
        return f"{v!r}f" if CT == "float" else repr(v)
    EPS = "FLT_EPSILON" if CT == "float" else "DBL_EPSILON"
    PI = "M_PI_F" if CT == "float" else "M_PI"
    ZETA_A = [12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9,
              7.47242496e10, -2.950130727918164224e12, 1.1646782814350067249e14,
              -4.5979787224074726105e15, 1.8152105401943546773e17, -7.1661652561756670113e18]
%>
/* digamma: -inf at 0, NaN at the negative integers (torch's values); reflection for x < 0
   (psi(x) = psi(1 - x) - pi / tan(pi x), tan taken of x's fraction), the recurrence
   psi(x) = psi(x + 1) - 1 / x up to x >= 10, then the asymptotic series to x^-10 */
inline ${CT} digamma_s(${CT} x) {
    if (x == ${num(0.0)})
        return copysign((${CT})INFINITY, -x);
    ${CT} r = ${num(0.0)};
    if (x < ${num(0.0)}) {
        if (x == floor(x))
            return (${CT})NAN;
        r = -${PI} / tan(${PI} * (x - floor(x)));
        x = ${num(1.0)} - x;
    }
    while (x < ${num(10.0)}) {
        r -= ${num(1.0)} / x;
        x += ${num(1.0)};
    }
    ${CT} z = ${num(1.0)} / (x * x);
    ${CT} tail = z * (${num(1 / 12)} - z * (${num(1 / 120)} - z * (${num(1 / 252)}
                 - z * (${num(1 / 240)} - z * ${num(1 / 132)}))));
    return r + log(x) - ${num(0.5)} / x - tail;
}

/* Hurwitz zeta(x, q) = sum over k >= 0 of (k + q)^-x, for x > 1: the first terms summed, the
   rest by the Euler-Maclaurin formula (Cephes' zeta) */
inline ${CT} zeta_s(${CT} x, ${CT} q) {
    const ${CT} A[12] = {${", ".join(num(a) for a in ZETA_A)}};
    if (x == ${num(1.0)})
        return (${CT})INFINITY;
    if (x < ${num(1.0)})
        return (${CT})NAN;
    if (q <= ${num(0.0)}) {
        if (q == floor(q))
            return (${CT})INFINITY;
        if (x != floor(x))
            return (${CT})NAN;          /* q^-x is not real */
    }
    ${CT} s = pow(q, -x), a = q, b = ${num(0.0)};
    int i = 0;
    while (i < 9 || a <= ${num(9.0)}) {
        i += 1;
        a += ${num(1.0)};
        b = pow(a, -x);
        s += b;
        if (fabs(b / s) < ${EPS})
            return s;
    }
    ${CT} w = a, k = ${num(0.0)};
    s += b * w / (x - ${num(1.0)}) - ${num(0.5)} * b;
    a = ${num(1.0)};
    for (i = 0; i < 12; ++i) {
        a *= x + k;
        b /= w;
        ${CT} t = a * b / A[i];
        s += t;
        if (fabs(t / s) < ${EPS})
            break;
        k += ${num(1.0)};
        a *= x + k;
        b /= w;
        k += ${num(1.0)};
    }
    return s;
}

/* polygamma(n, x): digamma for n = 0, else (-1)^(n+1) n! zeta(n + 1, x) */
inline ${CT} polygamma_s(int n, ${CT} x) {
    if (n == 0)
        return digamma_s(x);
    ${CT} f = tgamma((${CT})(n + 1));
    return ((n & 1) ? f : -f) * zeta_s((${CT})(n + 1), x);
}
% if special:
## the special group's helpers (its programs only: see Entry.group)

<%
    # switches between a series and an asymptotic expansion, per precision: the asymptotic
    # expansions' smallest term is about e^-2x, below the type's epsilon from there on
    BIG = num(1e100) if CT == "double" else num(1e15)
    SW_I = num(20.0) if CT == "double" else num(9.0)
    SW_J = num(25.0) if CT == "double" else num(12.0)
    MILLER = 30 if CT == "double" else 18
    SMALL = num(1e-8) if CT == "double" else num(1e-4)
    AIRY_ZETA = num(18.0) if CT == "double" else num(9.0)
    CF_TERMS = 60 if CT == "double" else 25
    EULER = num(0.5772156649015329)
%>
/* I0, I1 (scaled: times e^-|x|): the power series (positive terms) below SW_I, Hankel's expansion
   e^x / sqrt(2 pi x) sum_k (-1)^k a_k(nu) / x^k above it; torch's NaN at +-inf unscaled */
inline ${CT} bessel_i_s(int nu, ${CT} x, int scaled) {
    ${CT} ax = fabs(x), r;
    if (isinf(ax))
        return scaled ? (nu && x < ${num(0.0)} ? -${num(0.0)} : ${num(0.0)}) : (${CT})NAN;
    if (ax < ${SW_I}) {
        ${CT} q = ax * ax * ${num(0.25)}, t = nu ? ax * ${num(0.5)} : ${num(1.0)}, s = t;
        for (int k = 1; k < 200; ++k) {
            t *= q / ((${CT})k * (${CT})(k + nu));
            s += t;
            if (t <= s * ${EPS})
                break;
        }
        r = scaled ? s * exp(-ax) : s;
    } else {
        ${CT} mu = (${CT})(4 * nu * nu), t = ${num(1.0)}, s = ${num(1.0)};
        for (int k = 1; k < 80; ++k) {
            ${CT} d = (${CT})(2 * k - 1);
            ${CT} tn = -t * (mu - d * d) / ((${CT})(8 * k) * ax);
            if (fabs(tn) >= fabs(t))            /* the asymptotic series starts to diverge */
                break;
            t = tn;
            s += t;
            if (fabs(t) <= fabs(s) * ${EPS})
                break;
        }
        s /= sqrt(${num(2.0)} * ${PI} * ax);
        ${CT} h = exp(ax * ${num(0.5)});      /* e^x as h * h: I0 is finite a little past e^x */
        r = scaled ? s : h * s * h;
    }
    return (nu && x < ${num(0.0)}) ? -r : r;
}

/* exp(x^2) erfc(x): the built-ins below 2.5; above, Laplace's continued fraction
   erfc(x) = e^-x^2 / sqrt(pi) / (x + (1/2) / (x + 1 / (x + (3/2) / (x + ...)))) from its tail */
inline ${CT} erfcx_s(${CT} x) {
    if (x < ${num(2.5)})
        return exp(x * x) * erfc(x);
    if (isinf(x))
        return ${num(0.0)};
    ${CT} f = x;
    for (int n = ${CF_TERMS}; n >= 1; --n)
        f = x + (${CT})n * ${num(0.5)} / f;
    return ${num(1.0)} / (sqrt(${PI}) * f);
}

/* J0, J1, Y0, Y1 for |x| below SW_J: Miller's backward recurrence J_{n-1} = (2n / x) J_n - J_{n+1}
   from J_{N+1} = 0, normalised by 1 = J0 + 2 sum J_2k; Y0 and Y1 by Neumann's series
   Y0 = (2/pi)(log(x/2) + gamma) J0 - (4/pi) sum (-1)^k J_2k / k and its derivative
   Y1 = (2/pi)(log(x/2) + gamma) J1 - 2 / (pi x) J0 + (2/pi) sum (-1)^k (J_2k-1 - J_2k+1) / k.
   Above SW_J, Hankel's expansion. which: 0 J0, 1 J1, 2 Y0, 3 Y1. */
inline ${CT} bessel_jy_s(int which, ${CT} x) {
    int nu = which & 1, y = which >> 1;
    if (y) {
        if (x < ${num(0.0)} || isnan(x))
            return (${CT})NAN;
        if (x == ${num(0.0)})
            return -(${CT})INFINITY;
    }
    ${CT} ax = fabs(x);
    if (isinf(ax) || isnan(x))
        return (${CT})NAN;
    if (ax < ${SW_J}) {
        if (ax < ${SMALL}) {                   /* x^2 below epsilon: the series' first terms */
            ${CT} l = log(ax * ${num(0.5)}) + ${EULER};
            if (!y)
                return nu ? x * ${num(0.5)} : ${num(1.0)};
            return nu ? ${num(2.0)} / ${PI} * (l * ax * ${num(0.5)} - ${num(1.0)} / ax) : ${num(2.0)} / ${PI} * l;
        }
        int n = 2 * ((int)(ax * ${num(0.5)}) + ${MILLER // 2});
        ${CT} up = ${num(0.0)}, f = ${num(1e-30)}, norm = ${num(0.0)}, s0 = ${num(0.0)}, s1 = ${num(0.0)};
        ${CT} j1 = ${num(0.0)};
        for (; n >= 1; --n) {
            ${CT} down = (${CT})(2 * n) / ax * f - up;     /* J_{n-1} */
            if ((n & 1) == 0) {
                ${CT} sg = (n & 2) ? -${num(1.0)} : ${num(1.0)}, k = (${CT})(n / 2);
                norm += ${num(2.0)} * f;
                s0 += sg * f / k;
                s1 += sg * (down - up) / k;
            }
            if (n == 2)
                j1 = down;
            up = f;
            f = down;
            if (fabs(f) > ${BIG}) {                         /* rescale everything kept */
                up /= ${BIG}; f /= ${BIG}; norm /= ${BIG}; s0 /= ${BIG}; s1 /= ${BIG}; j1 /= ${BIG};
            }
        }
        norm += f;
        ${CT} j0 = f / norm;
        j1 /= norm;
        if (!y)
            return nu ? (x < ${num(0.0)} ? -j1 : j1) : j0;
        ${CT} l = log(ax * ${num(0.5)}) + ${EULER};
        if (!nu)
            return ${num(2.0)} / ${PI} * (l * j0 - ${num(2.0)} * s0 / norm);
        return ${num(2.0)} / ${PI} * (l * j1 - j0 / ax + s1 / norm);
    }
    /* Hankel: sqrt(2 / (pi x)) (P cos chi - Q sin chi) (J), (P sin chi + Q cos chi) (Y) */
    ${CT} mu = (${CT})(4 * nu * nu), t = ${num(1.0)}, p = ${num(1.0)}, q = ${num(0.0)};
    for (int k = 1; k < 80; ++k) {
        ${CT} d = (${CT})(2 * k - 1);
        ${CT} tn = t * (mu - d * d) / ((${CT})(8 * k) * ax);
        if (fabs(tn) >= fabs(t))
            break;
        t = tn;
        if (k & 1)
            q += (k & 2) ? -t : t;
        else
            p += (k & 2) ? -t : t;
        if (fabs(t) <= ${EPS} * fabs(p))
            break;
    }
    /* chi = x - (nu / 2 + 1 / 4) pi, expanded so that sin and cos reduce x itself */
    ${CT} sx = sin(ax), cx = cos(ax), r = sqrt(${num(2.0)} / (${PI} * ax)) * ${num(0.7071067811865476)};
    ${CT} cc = nu ? sx - cx : cx + sx, sc = nu ? -sx - cx : sx - cx;
    ${CT} v = y ? r * (p * sc + q * cc) : r * (p * cc - q * sc);
    return (nu && !y && x < ${num(0.0)}) ? -v : v;
}

/* e^x K_mu(x) for x >= 2 and |mu| <= 1/2 by Temme's continued fraction (Steed's algorithm, as in
   Numerical Recipes' bessik); e^x K_mu+1(x) into *k1 */
inline ${CT} k_cf2_s(${CT} mu, ${CT} x, ${CT} *k1) {
    ${CT} b = ${num(2.0)} * (${num(1.0)} + x), d = ${num(1.0)} / b, h = d, delh = d;
    ${CT} q1 = ${num(0.0)}, q2 = ${num(1.0)}, a1 = ${num(0.25)} - mu * mu, q = a1, c = a1, a = -a1;
    ${CT} s = ${num(1.0)} + q * delh;
    for (int i = 1; i < 500; ++i) {
        a -= (${CT})(2 * i);
        c = -a * c / (${CT})(i + 1);
        ${CT} qn = (q1 - b * q2) / a;
        q1 = q2;
        q2 = qn;
        q += c * qn;
        b += ${num(2.0)};
        d = ${num(1.0)} / (b + a * d);
        delh = (b * d - ${num(1.0)}) * delh;
        h += delh;
        ${CT} ds = q * delh;
        s += ds;
        if (fabs(ds) < fabs(s) * ${EPS})
            break;
    }
    ${CT} k = sqrt(${PI} / (${num(2.0)} * x)) / s;
    *k1 = k * (mu + x + ${num(0.5)} - a1 * h) / x;
    return k;
}

/* K0, K1 (scaled: times e^x): x <= 2 by the series K0 = -(log(x/2) + gamma) I0 + sum H_k t_k,
   K1 = 1/x + (log(x/2) + gamma) I1 - (x/4) sum (H_k + H_k+1) u_k (t_k = (x^2/4)^k / k!^2,
   u_k = t_k / (k + 1), H_k harmonic numbers); above, Temme's continued fraction (Steed's
   algorithm) for K0 and K1 together */
inline ${CT} bessel_k_s(int nu, ${CT} x, int scaled) {
    if (x < ${num(0.0)} || isnan(x))
        return (${CT})NAN;
    if (x == ${num(0.0)})
        return (${CT})INFINITY;
    if (isinf(x))
        return ${num(0.0)};
    if (x <= ${num(2.0)}) {
        ${CT} q = x * x * ${num(0.25)}, t = ${num(1.0)}, h = ${num(0.0)}, l = log(x * ${num(0.5)}) + ${EULER};
        ${CT} si = ${num(1.0)}, sh = ${num(0.0)};         /* sum t_k (or u_k), sum H t (or (H_k + H_k+1) u_k) */
        if (nu) {
            sh = ${num(1.0)};                               /* k = 0: H_0 + H_1 = 1 */
            for (int k = 1; k < 100; ++k) {
                t *= q / ((${CT})k * (${CT})(k + 1));
                ${CT} hn = h + ${num(1.0)} / (${CT})k;
                si += t;
                sh += t * (hn + hn + ${num(1.0)} / (${CT})(k + 1));
                h = hn;
                if (t <= si * ${EPS})
                    break;
            }
            ${CT} r = ${num(1.0)} / x + l * x * ${num(0.5)} * si - x * ${num(0.25)} * sh;
            return scaled ? r * exp(x) : r;
        }
        for (int k = 1; k < 100; ++k) {
            t *= q / ((${CT})k * (${CT})k);
            h += ${num(1.0)} / (${CT})k;
            si += t;
            sh += t * h;
            if (t <= si * ${EPS})
                break;
        }
        ${CT} r = -l * si + sh;
        return scaled ? r * exp(x) : r;
    }
    ${CT} k1;
    ${CT} k0 = k_cf2_s(${num(0.0)}, x, &k1);
    ${CT} r = nu ? k1 : k0;
    return scaled ? r : r * exp(-x);
}

/* Airy Ai: from 0 (Ai(0), Ai'(0) known) by Taylor steps of at most 1 along y'' = x y (the
   coefficients follow a_n+2 = (x0 a_n + a_n-1) / ((n + 1)(n + 2))) while zeta = 2/3 |x|^3/2 is
   small (below 1 for x > 0, where stepping away from Ai's decay loses accuracy; below 18, or 9
   in float, for x < 0, where the asymptotic expansion is not yet accurate); beyond, Ai(x) = sqrt(x / 3) / pi K_1/3(zeta) for x > 0 and the asymptotic expansion
   (P cos(zeta - pi/4) + Q sin(zeta - pi/4)) / (sqrt(pi) |x|^1/4) for x < 0 */
inline ${CT} airy_ai_s(${CT} x) {
    if (isinf(x) || isnan(x))
        return (${CT})NAN;
    ${CT} ax = fabs(x), zeta = ${num(2.0 / 3.0)} * ax * sqrt(ax);
    if (x > ${num(0.0)} && zeta >= ${num(1.0)}) {
        ${CT} k1;
        return sqrt(x / ${num(3.0)}) / ${PI} * k_cf2_s(${num(1.0 / 3.0)}, zeta, &k1) * exp(-zeta);
    }
    if (x < ${num(0.0)} && zeta >= ${AIRY_ZETA}) {
        ${CT} t = ${num(1.0)}, p = ${num(1.0)}, q = ${num(0.0)};
        for (int k = 1; k < 60; ++k) {
            ${CT} tn = t * (${CT})((6 * k - 5) * (6 * k - 3) * (6 * k - 1))
                       / ((${CT})((2 * k - 1) * 216 * k) * zeta);
            if (tn >= t)
                break;
            t = tn;
            if (k & 1)
                q += (k & 2) ? -t : t;
            else
                p += (k & 2) ? -t : t;
            if (t <= ${EPS} * fabs(p))
                break;
        }
        ${CT} sz = sin(zeta), cz = cos(zeta);     /* cos, sin of zeta - pi/4, times sqrt 2 */
        return (p * (cz + sz) + q * (sz - cz)) * ${num(0.7071067811865476)}
               / (sqrt(${PI}) * sqrt(sqrt(ax)));
    }
    int steps = (int)ceil(ax);
    ${CT} h = x / (${CT})(steps > 0 ? steps : 1), x0 = ${num(0.0)};
    ${CT} y = ${num(0.3550280538878172)}, dy = ${num(-0.2588194037928068)};
    for (int s = 0; s < steps; ++s) {
        /* a_n h^n and n a_n h^n-1, summed for y(x0 + h) and y'(x0 + h) */
        ${CT} am1 = ${num(0.0)}, a0 = y, a1 = dy * h, ny = a0 + a1, ndy = dy;
        ${CT} h2 = h * h, h3 = h2 * h;
        for (int n = 0; n < 60; ++n) {
            ${CT} a2 = (x0 * h2 * a0 + h3 * am1) / (${CT})((n + 1) * (n + 2));
            ny += a2;
            ndy += (${CT})(n + 2) * a2 / h;
            am1 = a0;
            a0 = a1;
            a1 = a2;
            if (fabs(a2) + fabs(am1) + fabs(a0) <= ${EPS} * ${num(1e-3)} * (fabs(ny) + fabs(ndy) + ${num(1e-300) if CT == "double" else num(1e-30)}))
                break;
        }
        y = ny;
        dy = ndy;
        x0 += h;
    }
    return y;
}

/* sin(x) / x, its Taylor polynomial near 0 */
inline ${CT} spherical_j0_s(${CT} x) {
    if (isinf(x))
        return ${num(0.0)};
    if (fabs(x) < ${num(0.5)}) {
        ${CT} z = x * x;
        return ${num(1.0)} - z / ${num(6.0)} * (${num(1.0)} - z / ${num(20.0)} * (${num(1.0)} - z / ${num(42.0)}
               * (${num(1.0)} - z / ${num(72.0)} * (${num(1.0)} - z / ${num(110.0)} * (${num(1.0)} - z / ${num(156.0)} * (${num(1.0)} - z / ${num(210.0)}))))));
    }
    return sin(x) / x;
}

/* regularized incomplete gamma P(a, x) (upper: Q = 1 - P) with torch's values at the edges: the
   series x^a e^-x / Gamma(a + 1) sum x^n / ((a + 1)...(a + n)) for x < a + 1, else the continued
   fraction of Q (modified Lentz); each gives the smaller of P and Q, the other is 1 minus it */
inline ${CT} igamma_s(${CT} a, ${CT} x, int upper) {
    if (a < ${num(0.0)} || x < ${num(0.0)} || isnan(a) || isnan(x))
        return (${CT})NAN;
    if (a == ${num(0.0)})
        return x > ${num(0.0)} ? (upper ? ${num(0.0)} : ${num(1.0)}) : (${CT})NAN;
    if (x == ${num(0.0)})
        return upper ? ${num(1.0)} : ${num(0.0)};
    if (isinf(a))
        return isinf(x) ? (${CT})NAN : (upper ? ${num(1.0)} : ${num(0.0)});
    if (isinf(x))
        return upper ? ${num(0.0)} : ${num(1.0)};
    ${CT} pre = exp(a * log(x) - x - lgamma(a));
    if (x < a + ${num(1.0)}) {
        ${CT} t = ${num(1.0)} / a, s = t, ap = a;
        for (int n = 1; n < 5000; ++n) {
            ap += ${num(1.0)};
            t *= x / ap;
            s += t;
            if (t <= s * ${EPS})
                break;
        }
        return upper ? ${num(1.0)} - pre * s : pre * s;
    }
    ${CT} tiny = ${num(1e-30)}, b = x + ${num(1.0)} - a, c = ${num(1.0)} / tiny, d = ${num(1.0)} / b, h = d;
    for (int i = 1; i < 5000; ++i) {
        ${CT} an = -(${CT})i * ((${CT})i - a);
        b += ${num(2.0)};
        d = an * d + b;
        d = fabs(d) < tiny ? tiny : d;
        c = b + an / c;
        c = fabs(c) < tiny ? tiny : c;
        d = ${num(1.0)} / d;
        ${CT} del = d * c;
        h *= del;
        if (fabs(del - ${num(1.0)}) <= ${EPS})
            break;
    }
    return upper ? pre * h : ${num(1.0)} - pre * h;
}

/* orthogonal polynomials of degree n (truncated to an integer, 0 for n < 0 or NaN, as torch):
   kind 0-3 Chebyshev T, U, V, W (for n past 6 and |x| < 1 by their trigonometric forms, as
   torch), 4 Hermite H, 5 Hermite He, 6 Laguerre L, 7 Legendre P; by the three-term recurrences */
inline ${CT} orthopoly_s(int kind, ${CT} x, ${CT} nf) {
    if (!(nf >= ${num(0.0)}))
        return ${num(0.0)};
    long n = (long)nf;
    if (n == 0)
        return ${num(1.0)};
    if (kind < 4 && n > 6 && fabs(x) < ${num(1.0)}) {
        ${CT} th = acos(x), m = (${CT})n;
        if (kind == 0)
            return cos(m * th);
        if (kind == 1)
            return sin((m + ${num(1.0)}) * th) / sin(th);
        if (kind == 2)
            return cos((m + ${num(0.5)}) * th) / cos(th * ${num(0.5)});
        return sin((m + ${num(0.5)}) * th) / sin(th * ${num(0.5)});
    }
    ${CT} p = ${num(1.0)}, q;
    switch (kind) {
        case 0: case 5: case 7: q = x; break;
        case 1: case 4: q = x + x; break;
        case 2: q = x + x - ${num(1.0)}; break;
        case 3: q = x + x + ${num(1.0)}; break;
        default: q = ${num(1.0)} - x; break;
    }
    for (long k = 1; k < n; ++k) {
        ${CT} kk = (${CT})k, r;
        switch (kind) {
            case 4: r = (x + x) * q - (kk + kk) * p; break;
            case 5: r = x * q - kk * p; break;
            case 6: r = ((kk + kk + ${num(1.0)} - x) * q - kk * p) / (kk + ${num(1.0)}); break;
            case 7: r = ((kk + kk + ${num(1.0)}) * x * q - kk * p) / (kk + ${num(1.0)}); break;
            default: r = (x + x) * q - p; break;
        }
        p = q;
        q = r;
    }
    return q;
}
% endif
% endif
% if dt.kind in "iu":
/* integer power by squaring; negative exponents are rejected on the host */
inline ${CT} ipow_s(${CT} b, ${CT} e) {
    ${CT} r = 1;
    while (e > 0) { if (e & 1) r *= b; b *= b; e >>= 1; }
    return r;
}
% endif

## ---- one kernel ---------------------------------------------------------------------------------
<%def name="store_result(e, ctx, idx)">\
<% od = out_dtype(e, dt, bool_dt) %>\
% if e.out == "bool":
% if ctx == "v":
${c.vstore(od, "out + oo", idx, "CAT(convert_uchar, " + c.attr.width(dt) + ")(-(r_))", c.attr.width(dt))};\
% else:
${c.store(od, "out", idx, "(uchar)((r_) & 1)")};\
% endif
% else:
% if ctx == "v":
${c.vstore(od, "out + oo", idx, "r_", c.attr.width(dt))};\
% else:
${c.store(od, "out", idx, "r_")};\
% endif
% endif
</%def>

<%def name="result_type(e, ctx)">\
<%
rt = mask_type(dt) if e.out == "bool" else dt.rt if e.out == "real" else dt.ct
%>\
% if ctx == "v":
CAT(${rt}, ${c.attr.width(dt)})\
% else:
${rt}\
% endif
</%def>

<%def name="contiguous_kernel(e, pattern)">
<% od = out_dtype(e, dt, bool_dt); CT = dt.ct %>
__kernel void ${e.name}_c_${pattern}(${c.ptr(od)} out, long oo,
% for k, kind in enumerate(e.operands):
<% d = operand_dtype(kind, dt, bool_dt); nm = NAMES[k] %>\
% if pattern[k] == "s":
    ${d.ct} ${nm}_a,
% else:
    ${c.cptr(d)} ${nm}_p, long ${nm}_o, int ${nm}_s,
% endif
% endfor
% for p in range(e.nparams):
    ${CT} p${p},
% endfor
    long n)
{
    long i = get_global_id(0);
% if e.vec:
<% W = c.attr.width(dt) %>
    if ((i + 1) * ${W} <= n) {
${begin_ctx("v")}
% for k, kind in enumerate(e.operands):
<% d = operand_dtype(kind, dt, bool_dt); nm = NAMES[k] %>\
% if pattern[k] == "s":
        CAT(${d.ct}, ${W}) ${nm} = (CAT(${d.ct}, ${W}))(${nm}_a);
% else:
        CAT(${d.ct}, ${W}) ${nm} = ${nm}_s ? ${c.vload(d, nm + "_p + " + nm + "_o", "i", W)} : (CAT(${d.ct}, ${W}))(${c.load(d, nm + "_p", nm + "_o")});
% endif
% endfor
        ${result_type(e, "v")} r_ = ${e.expr};
        ${store_result(e, "v", "i")}
${end_ctx()}
    } else {
        for (long j = i * ${W}; j < n; ++j) {
${scalar_body(e, pattern, "j")}
        }
    }
% else:
    if (i < n) {
        long j = i;
${scalar_body(e, pattern, "j")}
    }
% endif
}
</%def>

<%def name="scalar_body(e, pattern, j)">
${begin_ctx("s")}
% for k, kind in enumerate(e.operands):
<% d = operand_dtype(kind, dt, bool_dt); nm = NAMES[k] %>\
% if pattern[k] == "s":
            ${d.ct} ${nm} = ${nm}_a;
% else:
            ${d.ct} ${nm} = ${c.load(d, nm + "_p", nm + "_o + " + nm + "_s * " + j)};
% endif
% endfor
            ${result_type(e, "s")} r_ = ${e.expr};
            ${store_result(e, "s", "oo + " + j)}
${end_ctx()}
</%def>

<%def name="strided_kernel(e, pattern)">
<% od = out_dtype(e, dt, bool_dt); CT = dt.ct %>
__kernel void ${e.name}_s_${pattern}(${c.ptr(od)} out, long oo,
% for k, kind in enumerate(e.operands):
<% d = operand_dtype(kind, dt, bool_dt); nm = NAMES[k] %>\
% if pattern[k] == "s":
    ${d.ct} ${nm}_a,
% else:
    ${c.cptr(d)} ${nm}_p, long ${nm}_o, long8 ${nm}_st,
% endif
% endfor
% for p in range(e.nparams):
    ${CT} p${p},
% endfor
    long n, long chunk, int nd, long8 shp)
{
${begin_ctx("s")}
<%c:walk>
% for k, kind in enumerate(e.operands):
<% d = operand_dtype(kind, dt, bool_dt); nm = NAMES[k] %>\
% if pattern[k] == "s":
        ${d.ct} ${nm} = ${nm}_a;
% else:
        ${d.ct} ${nm} = ${c.load(d, nm + "_p", capture(c.at, nm + "_o", nm + "_st"))};
% endif
% endfor
        ${result_type(e, "s")} r_ = ${e.expr};
        ${store_result(e, "s", "oo + i")}
</%c:walk>
${end_ctx()}
}
</%def>

<%def name="rows_kernel(e, pattern)">
<% od = out_dtype(e, dt, bool_dt); CT = dt.ct; W = c.attr.width(dt) %>
/* Rows of a contiguous result along which every tensor operand walks (stride 1) or repeats one
   element (stride 0; a broadcast bias, a mean's gradient): dimension 0 takes W elements of a
   row, with vector loads, 1 numbers the rows (dim s6), 2 the other dims. */
__kernel void ${e.name}_r_${pattern}(${c.ptr(od)} out, long oo,
% for k, kind in enumerate(e.operands):
<% d = operand_dtype(kind, dt, bool_dt); nm = NAMES[k] %>\
% if pattern[k] == "s":
    ${d.ct} ${nm}_a,
% else:
    ${c.cptr(d)} ${nm}_p, long ${nm}_o, long8 ${nm}_st,
% endif
% endfor
% for p in range(e.nparams):
    ${CT} p${p},
% endfor
    int nd, long8 shp)
{
    long i = get_global_id(0), c6 = get_global_id(1), r = get_global_id(2);
    if (i * ${W} >= shp.s7 || c6 >= shp.s6) return;
    oo += (r * shp.s6 + c6) * shp.s7;
% for k, kind in enumerate(e.operands):
% if pattern[k] != "s":
    ${NAMES[k]}_o += c6 * ${NAMES[k]}_st.s6;
% endif
% endfor
% for j in range(5, -1, -1):
    if (nd > ${7 - j}) {
        long c_ = r % shp.s${j};
        r /= shp.s${j};
% for k, kind in enumerate(e.operands):
% if pattern[k] != "s":
        ${NAMES[k]}_o += c_ * ${NAMES[k]}_st.s${j};
% endif
% endfor
    }
% endfor
    if ((i + 1) * ${W} <= shp.s7) {
${begin_ctx("v")}
% for k, kind in enumerate(e.operands):
<% d = operand_dtype(kind, dt, bool_dt); nm = NAMES[k] %>\
% if pattern[k] == "s":
        CAT(${d.ct}, ${W}) ${nm} = (CAT(${d.ct}, ${W}))(${nm}_a);
% else:
        CAT(${d.ct}, ${W}) ${nm} = ${nm}_st.s7 ? ${c.vload(d, nm + "_p + " + nm + "_o", "i", W)} : (CAT(${d.ct}, ${W}))(${c.load(d, nm + "_p", nm + "_o")});
% endif
% endfor
        ${result_type(e, "v")} r_ = ${e.expr};
        ${store_result(e, "v", "i")}
${end_ctx()}
    } else {
        for (long j = i * ${W}; j < shp.s7; ++j) {
${begin_ctx("s")}
% for k, kind in enumerate(e.operands):
<% d = operand_dtype(kind, dt, bool_dt); nm = NAMES[k] %>\
% if pattern[k] == "s":
            ${d.ct} ${nm} = ${nm}_a;
% else:
            ${d.ct} ${nm} = ${c.load(d, nm + "_p", nm + "_o + " + nm + "_st.s7 * j")};
% endif
% endfor
            ${result_type(e, "s")} r_ = ${e.expr};
            ${store_result(e, "s", "oo + j")}
${end_ctx()}
        }
    }
}
</%def>

% for e in entries:
% for pattern in e.patterns:
${contiguous_kernel(e, pattern)}
${strided_kernel(e, pattern)}
% if e.vec:
${rows_kernel(e, pattern)}
% endif
% endfor
% endfor
