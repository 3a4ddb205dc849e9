## Elementwise kernels of one arity for one dtype, generated from the op table in
## clgrad/ops/elementwise.py. Each table entry gives an expression over operands x, y, z and
## parameters p0, p1, p2 written with SEL(cond, a, b), CV(value) and FALSE_ (a bool zero), so that the same text is valid
## on VEC-wide vectors (contiguous kernels) and on scalars (tails and strided kernels).
##
## Kernel names: <op>_<layout>_<pattern>. layout c: contiguous operands (a step flag per operand:
## 1 walks the buffer, 0 repeats its first element), s: any strides (long8 strides, up to 8 dims
## after collapsing, walked as common.mako's walk() describes). pattern: t per tensor operand, s per
## operand passed as a host scalar.
<%namespace name="c" file="common.mako"/>
<%!
def mask_type(d):
    """the integer type comparisons of d's compute type yield (same element size)"""
    return {"float": "int", "double": "long", "int": "int", "long": "long", "uchar": "char", "char": "char",
            "short": "short"}[d.ct]

NAMES = ["x", "y", "z"]

def operand_dtype(kind, dt, bool_dt):
    return bool_dt if kind == "b" else dt

def out_dtype(e, dt, bool_dt):
    return bool_dt if e.out == "bool" else dt
%>
${c.prelude([dt])}
## ---- per-context macros: vector (v) or scalar (s) ---------------------------------------------
<%def name="begin_ctx(ctx)">
<% CT = dt.ct; MT = mask_type(dt) %>
% if ctx == "v":
#define SEL(cnd, a, b) select((b), (a), CAT(convert_${MT}, ${c.attr.width(dt)})(cnd))
#define CV(v) ((CAT(${CT}, ${c.attr.width(dt)}))(v))
#define FALSE_ ((CAT(uchar, ${c.attr.width(dt)}))(0))
#define FLOORDIV floordiv_v
#define REMAINDER remainder_v
#define GELU_ERFC gelu_erfc_v
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
% for ctx in ("v", "s"):
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
rt = mask_type(dt) if e.out == "bool" else dt.ct
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

% for e in entries:
% for pattern in e.patterns:
${contiguous_kernel(e, pattern)}
${strided_kernel(e, pattern)}
% endfor
% endfor
