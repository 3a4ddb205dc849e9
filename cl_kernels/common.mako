## Shared pieces of every kernel family: the prelude (vector-width macros, 16-bit conversions) and
## loads/stores per dtype. A dtype `d` has fields cl (storage type), ct (compute type), kind, short.
## The elements a work-item handles in contiguous kernels come from the build options: VEC for
## compute types of up to 4 bytes, VEC8 for 8-byte ones (so that no vector is wider than the
## device's SIMD registers; PoCL mishandles 512-bit vectors on AVX2 machines). `w` below names
## the one a kernel uses; width() picks it.
<%!
def width(*dts):
    return "VEC8" if any(d.ct in ("double", "long") for d in dts) else "VEC"


def operators_only(dts):
    """Whether a program of dtypes `dts` (its own first) writes its selections and NaN tests
    with operators (a ? b : c on vectors, f != f) rather than the select() and isnan()
    built-ins: PoCL 3.0 compiles those two to out-of-line calls, which keep a kernel from being
    vectorised across work-items; so rounding a float to bfloat16 with them made PoCL's
    bfloat16 relu, add and mul 1.3-1.8x slower than float32's (they move half the bytes).
    The two forms compute the same (a vector a ? b : c selects on each lane's top bit, as
    select() does). Only the programs of bfloat16 take the operators so far: the built-ins'
    text is in every other program's prelude, and a change there rebuilds every kernel."""
    return dts[0].cl == "ushort" and dts[0].ct == "float"
%>

<%def name="prelude(dts)">
#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
% if any(d.cl == "double" or d.rt == "double" for d in dts):
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
% endif
/* Vector loads and stores built from scalar accesses: PoCL compiles vloadN/vstoreN to out-of-line
   calls (a quarter slower for a simple kernel), while scalar accesses assembled into a vector
   vectorise well; other compilers make the same code of both. LDV_n(T, i, p) reads elements
   n*i .. n*i+n-1 of p as a T##n; STV_n stores one. */
#define LDV_1(T, i, p) ((p)[(i)])
#define LDV_2(T, i, p) ((CAT(T, 2))((p)[2*(i)], (p)[2*(i)+1]))
#define LDV_4(T, i, p) ((CAT(T, 4))((p)[4*(i)], (p)[4*(i)+1], (p)[4*(i)+2], (p)[4*(i)+3]))
#define LDV_8(T, i, p) ((CAT(T, 8))((p)[8*(i)], (p)[8*(i)+1], (p)[8*(i)+2], (p)[8*(i)+3], \
                                    (p)[8*(i)+4], (p)[8*(i)+5], (p)[8*(i)+6], (p)[8*(i)+7]))
#define STV_1(T, v, i, p) do { (p)[(i)] = (v); } while (0)
#define STV_2(T, v, i, p) do { CAT(T, 2) stv_tmp_ = (v); (p)[2*(i)] = stv_tmp_.s0; \
                               (p)[2*(i)+1] = stv_tmp_.s1; } while (0)
#define STV_4(T, v, i, p) do { CAT(T, 4) stv_tmp_ = (v); (p)[4*(i)] = stv_tmp_.s0; (p)[4*(i)+1] = stv_tmp_.s1; \
                               (p)[4*(i)+2] = stv_tmp_.s2; (p)[4*(i)+3] = stv_tmp_.s3; } while (0)
#define STV_8(T, v, i, p) do { CAT(T, 8) stv_tmp_ = (v); (p)[8*(i)] = stv_tmp_.s0; (p)[8*(i)+1] = stv_tmp_.s1; \
                               (p)[8*(i)+2] = stv_tmp_.s2; (p)[8*(i)+3] = stv_tmp_.s3; (p)[8*(i)+4] = stv_tmp_.s4; \
                               (p)[8*(i)+5] = stv_tmp_.s5; (p)[8*(i)+6] = stv_tmp_.s6; (p)[8*(i)+7] = stv_tmp_.s7; \
                               } while (0)
#define LDV_16(T, i, p) ((CAT(T, 16))(LDV_8(T, 2*(i), p), LDV_8(T, 2*(i)+1, p)))
#define STV_16(T, v, i, p) do { CAT(T, 16) stv16_ = (v); STV_8(T, stv16_.lo, 2*(i), p); \
                                STV_8(T, stv16_.hi, 2*(i)+1, p); } while (0)
#ifdef NATIVE_VLOADS     /* drivers that compile vloadN well (Intel's CPU runtime): see
                            vector_widths in clgrad/runtime/device.py */
#define LDV(T, W, i, p) CAT(vload, W)((i), (p))
#define STV(T, W, v, i, p) CAT(vstore, W)((v), (i), (p))
#else
#define LDV(T, W, i, p) CAT(LDV_, W)(T, i, p)
#define STV(T, W, v, i, p) CAT(STV_, W)(T, v, i, p)
#endif

/* bfloat16 is the upper half of a float32; rounding to nearest even, NaN kept quiet. */
inline float bf2f(ushort b) { return as_float(((uint)b) << 16); }
inline ushort f2bf(float f) {
    uint u = as_uint(f);
% if operators_only(dts):
    if (f != f) return (ushort)((u >> 16) | 0x40u);
% else:
    if (isnan(f)) return (ushort)((u >> 16) | 0x40u);
% endif
    return (ushort)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}
% for w in ("VEC", "VEC8"):
${bf16_vectors(w, operators_only(dts))}
% endfor
</%def>

## EPI(v, i) / EPIV(v, i): what a product kernel (gemm.mako, conv.mako) stores for value v (of
## type T, or its vector type VT) at element i of its output buffer (the first of VW for EPIV): v
## itself, or in the builds a recording makes (clgrad/kernels/epilogue.py) the elementwise op it
## folds in, as the table computes it:
##   EPI_RELU  relu(v) (NaN and -0.0 kept);
##   EPI_MASK  threshold_backward(v, m) = m > 0 ? v : 0, with m element i + EPI_D of the extra
##             argument EPI_M (a relu's output; a NaN there gives 0), read with the template's
##             EPI_VLOAD(p) (VW elements at p) for vectors.
<%def name="epilogue_macros()">
#if defined(EPI_RELU)
#define EPI(v, i) ((v) < (T)0 ? (T)0 : (v))
#define EPIV(v, i) select((v), (VT)(0), (v) < (VT)(0))
#elif defined(EPI_MASK)
#define EPI(v, i) (EPI_M[(i) + EPI_D] > (T)0 ? (v) : (T)0)
#define EPIV(v, i) select((VT)(0), (v), EPI_VLOAD(EPI_M + (i) + EPI_D) > (VT)(0))
#else
#define EPI(v, i) (v)
#define EPIV(v, i) (v)
#endif
</%def>

## the end of a product kernel's parameter list: the EPI_MASK build's extra arguments (on lines
## of their own: clgrad.runtime.kernels.parse_signatures reads the #ifdef)
<%def name="epilogue_args()">
#ifdef EPI_MASK
    , __global const T *EPI_M, long EPI_D
#endif
</%def>

## bfloat16 vectors of the width macro `w` (VEC, VEC8, or a kernel's own VW > 1) to float and
## back, f2bf's rounding lane by lane: what vload / vstore below use for bfloat16 at that width
## (the prelude makes VEC's and VEC8's; the packed GEMM and the convolution add their VW's)
<%def name="bf16_vectors(w, operators=False)">
inline CAT(float, ${w}) bf2fv_${w}(CAT(ushort, ${w}) b) {
    return CAT(as_float, ${w})(CAT(convert_uint, ${w})(b) << 16);
}
inline CAT(ushort, ${w}) f2bfv_${w}(CAT(float, ${w}) f) {
    CAT(uint, ${w}) u = CAT(as_uint, ${w})(f);
    CAT(uint, ${w}) r = (u + (CAT(uint, ${w}))(0x7FFFu) + ((u >> 16) & (CAT(uint, ${w}))(1u))) >> 16;
% if operators:
    r = f != f ? (u >> 16) | (CAT(uint, ${w}))(0x40u) : r;
% else:
    r = select(r, (u >> 16) | (CAT(uint, ${w}))(0x40u), CAT(as_uint, ${w})(isnan(f)));
% endif
    return CAT(convert_ushort, ${w})(r);
}
</%def>

## Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3"), the one generator
## of every random draw: philox(counter, seed) is a pure function of its arguments, so that
## random.mako (rand, randn, bernoulli, dropout, ...) and attention.mako (its dropout, redrawn in
## backward) draw the same numbers from the same Philox counters on every device.
## philox_at(counter, stream, seed) puts `stream` in the counter's third word: a sampler that needs
## several draws per element (the rejection loops of gamma, poisson, binomial) takes draw k of
## element i from stream k at counter offset + i, so element i's numbers stay its own.
<%def name="philox()">
inline uint4 philox_at(ulong counter, uint stream, ulong seed) {
    uint4 ctr = (uint4)((uint)counter, (uint)(counter >> 32), stream, 0u);
    uint2 key = (uint2)((uint)seed, (uint)(seed >> 32));
    for (int round = 0; round < 10; ++round) {
        uint hi0 = mul_hi(0xD2511F53u, ctr.x), lo0 = 0xD2511F53u * ctr.x;
        uint hi1 = mul_hi(0xCD9E8D57u, ctr.z), lo1 = 0xCD9E8D57u * ctr.z;
        ctr = (uint4)(hi1 ^ ctr.y ^ key.x, lo1, hi0 ^ ctr.w ^ key.y, lo0);
        key.x += 0x9E3779B9u;
        key.y += 0xBB67AE85u;
    }
    return ctr;
}
inline uint4 philox(ulong counter, ulong seed) { return philox_at(counter, 0u, seed); }
</%def>

## keep(counter, seed, p, dscale): the attention kernels' dropout factor of element `counter` in
## compute type ct, 0 (dropped, with probability p) or dscale = 1 / (1 - p); the uniform is the
## one clgrad.rand draws at that counter (24 bits of philox's first word).
<%def name="dropout_keep(ct)">
inline ${ct} keep(ulong counter, ulong seed, float p, ${ct} dscale) {
    float u = (float)(philox(counter, seed).x >> 8) * 5.9604644775390625e-08f;
    return u < p ? (${ct})0 : dscale;
}
</%def>

## the C type of a pointer to storage of dtype d
<%def name="ptr(d)">__global ${d.cl} *</%def>
<%def name="cptr(d)">__global const ${d.cl} *</%def>


## scalar load of element `i` (an expression) of pointer `p`, converted to the compute type
## (complex32: the (re, im) pair of halves as a float2)
<%def name="load(d, p, i)">\
% if d.kind == "c" and d.cl == "half":
vload_half2(${i}, ${p})\
% elif d.cl == "half":
vload_half(${i}, ${p})\
% elif d.cl == "ushort" and d.ct == "float":
bf2f(${p}[${i}])\
% else:
${p}[${i}]\
% endif
</%def>

## vector load of vector-element `i` of pointer `p` (that is elements i*VEC .. i*VEC+VEC-1)
<%def name="vload(d, p, i, w)">\
% if d.cl == "half":
CAT(vload_half, ${w})(${i}, ${p})\
% elif d.cl == "ushort" and d.ct == "float":
## assembled from scalar loads even where vloadN is native: PoCL 3.1's vload16 / vstore16 of
## ushort took 2-3x the time (2^21 elements: a copy 160-285 us against 60-114, relu 265 / 78-86)
bf2fv_${w}(CAT(LDV_, ${w})(ushort, ${i}, ${p}))\
% elif d.itemsize < 4:
## 1- and 2-byte elements: assembled (as bfloat16 above; PoCL 3.1's native vloadN of them are slow)
CAT(LDV_, ${w})(${d.cl}, ${i}, ${p})\
% else:
LDV(${d.cl}, ${w}, ${i}, ${p})\
% endif
</%def>

## scalar store of compute-type value v
<%def name="store(d, p, i, v)">\
% if d.kind == "c" and d.cl == "half":
vstore_half2(${v}, ${i}, ${p})\
% elif d.cl == "half":
vstore_half(${v}, ${i}, ${p})\
% elif d.cl == "ushort" and d.ct == "float":
${p}[${i}] = f2bf(${v})\
% else:
${p}[${i}] = ${v}\
% endif
</%def>

<%def name="vstore(d, p, i, v, w)">\
% if d.cl == "half":
CAT(vstore_half, ${w})(${v}, ${i}, ${p})\
% elif d.cl == "ushort" and d.ct == "float":
CAT(STV_, ${w})(ushort, f2bfv_${w}(${v}), ${i}, ${p})\
% elif d.itemsize < 4:
CAT(STV_, ${w})(${d.cl}, ${v}, ${i}, ${p})\
% else:
STV(${d.cl}, ${w}, ${v}, ${i}, ${p})\
% endif
</%def>

## Strided kernels walk an iteration space of up to 8 dims: shape shp (a long8, collapsed by the
## host and right-aligned, so that the innermost dim is always s7; unused outer dims have size 1
## and stride 0). Work-item g takes elements [g * chunk, (g + 1) * chunk) in row-major order: the
## coordinates of the first come from nd divisions, the next ones by counting with carries
## (a division per element costs PoCL ~10x; GPUs get chunk 1, so that neighbouring work-items
## touch neighbouring elements). The innermost dim is an inner loop of its own, in which only c7
## changes: the compiler hoists the other seven terms of every address out of it (PoCL, float32
## x + y of (32, 64, 32, 32) with y expanded from (32, 64, 1, 1): 870 us when every element
## recomputed its addresses, 748 now). Kernels take `long n, long chunk, int nd, long8 shp`
## last; inside the walk, i is the flat index of the current element and at(base, strides) its
## address. A body must not break out of the walk.
<%!
def carry():
    """the next row: c6 + 1, carrying into c5, c4, ... when a dim is done (c7 restarts at 0)"""
    text = "++c0;"
    for k in range(1, 7):
        text = f"if (++c{k} == shp.s{k}) {{ c{k} = 0; {text} }}"
    return text
%>
<%def name="walk()">
    long i = get_global_id(0) * chunk;
    if (i >= n) return;
    long end = min(i + chunk, n);
    long c0 = 0, c1 = 0, c2 = 0, c3 = 0, c4 = 0, c5 = 0, c6 = 0, c7 = 0;
    {
        long r_ = i;
% for k in range(7, -1, -1):
        if (nd > ${7 - k}) { c${k} = r_ % shp.s${k}; r_ /= shp.s${k}; }
% endfor
    }
    for (;;) {
        const long stop_ = min(end, i + (shp.s7 - c7));      /* the rest of this row */
        for (; i < stop_; ++i, ++c7) {
        ${caller.body()}
        }
        if (i >= end) break;
        c7 = 0;
        ${carry()}
    }
</%def>

## address of the current element in an operand with strides st (a long8) from base
<%def name="at(base, st)">(${base} + c0 * ${st}.s0 + c1 * ${st}.s1 + c2 * ${st}.s2 + c3 * ${st}.s3 + c4 * ${st}.s4 + c5 * ${st}.s5 + c6 * ${st}.s6 + c7 * ${st}.s7)</%def>

## Folds a line's partial results into one, `comb` a combination written with {a} and {b}
## ("{a} + {b}"): fold_vector folds vector `v` of `w` lanes of type T into scalar `s` (through a
## private array: a lane can't be indexed by a variable); fold_group folds `s` of every item of a
## work-group (lid of nl items, any count: each step folds the upper half, rounded down, onto the
## lower one) through local buffer `red`, and leaves the result in `s` of every item. A barrier
## after the last read lets the caller reuse `red`.
<%def name="fold_vector(T, w, v, s, comb)">
    {
        ${T} h_[${w}];
        CAT(vstore, ${w})(${v}, 0, h_);
        for (int k_ = 0; k_ < ${w}; ++k_) ${s} = ${comb.format(a=s, b="h_[k_]")};
    }
</%def>
<%def name="fold_group(s, red, comb)">
    red[lid] = ${s};
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int n_ = nl; n_ > 1; ) {
        int h_ = (n_ + 1) / 2;
        if (lid < n_ - h_) red[lid] = ${comb.format(a="red[lid]", b="red[lid + h_]")};
        barrier(CLK_LOCAL_MEM_FENCE);
        n_ = h_;
    }
    ${s} = red[0];
    barrier(CLK_LOCAL_MEM_FENCE);
</%def>


## Complex arithmetic on (re, im) pairs: T is the compute type (float2 / double2), R its part
## (float / double). Families with a complex variant render these once per program; the
## elementwise table's "c" expressions call them. Division follows c10::complex (numpy's scaled
## form), so that |b| near the range limits neither overflows nor underflows.
<%def name="complex_helpers(T, R)">
<%
one = "1.0f" if R == "float" else "1.0"
half = "0.5f" if R == "float" else "0.5"
big = "20.0f" if R == "float" else "40.0"
%>
inline ${T} cconj(${T} a) { return (${T})(a.x, -a.y); }
inline ${T} cmul(${T} a, ${T} b) { return (${T})(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x); }
inline ${T} cdiv(${T} a, ${T} b) {
    ${R} ac = fabs(b.x), ad = fabs(b.y);
    if (ac >= ad) {
        if (ac == (${R})0 && ad == (${R})0)
            return (${T})(a.x / ac, a.y / ad);       /* a complex inf or NaN, as torch */
        ${R} rat = b.y / b.x, scl = ${one} / (b.x + b.y * rat);
        return (${T})((a.x + a.y * rat) * scl, (a.y - a.x * rat) * scl);
    }
    ${R} rat = b.x / b.y, scl = ${one} / (b.y + b.x * rat);
    return (${T})((a.x * rat + a.y) * scl, (a.y * rat - a.x) * scl);
}
inline ${T} crecip(${T} a) { return cdiv((${T})(${one}, (${R})0), a); }
inline ${R} cabs_(${T} a) { return hypot(a.x, a.y); }
inline ${R} carg(${T} a) { return atan2(a.y, a.x); }
inline ${T} csgn(${T} a) {
    ${R} r = hypot(a.x, a.y);
    return r == (${R})0 ? (${T})((${R})0, (${R})0) : (${T})(a.x / r, a.y / r);
}
inline int ceq(${T} a, ${T} b) { return (a.x == b.x) & (a.y == b.y); }
inline ${T} cexp(${T} a) {
    ${R} e = exp(a.x);
    if (a.y == (${R})0)
        return (${T})(e, a.y);                       /* real arguments stay exact */
    return (${T})(e * cos(a.y), e * sin(a.y));
}
inline ${T} clog(${T} a) { return (${T})(log(hypot(a.x, a.y)), atan2(a.y, a.x)); }
/* the principal square root, without cancellation in either part */
inline ${T} csqrt(${T} a) {
    if (a.x == (${R})0 && a.y == (${R})0)
        return (${T})((${R})0, a.y);
    if (isinf(a.y))
        return (${T})(INFINITY, a.y);
    ${R} t = sqrt((fabs(a.x) + hypot(a.x, a.y)) * ${half});
    if (a.x >= (${R})0)
        return (${T})(t, a.y / (t + t));
    return (${T})(fabs(a.y) / (t + t), copysign(t, a.y));
}
/* a ** b: whole real exponents up to 64 by repeated multiplication (exact where it can be, as
   torch's x ** 2), 0 ** b for b with a positive real part is 0, otherwise exp(b log a) */
inline ${T} cpow(${T} a, ${T} b) {
    if (b.x == (${R})0 && b.y == (${R})0)
        return (${T})(${one}, (${R})0);
    if (a.x == (${R})0 && a.y == (${R})0 && b.x > (${R})0)
        return (${T})((${R})0, (${R})0);
    if (b.y == (${R})0 && b.x == rint(b.x) && fabs(b.x) <= (${R})64) {
        int n = (int)fabs(b.x);
        ${T} r = (${T})(${one}, (${R})0), p = a;
        while (n) {
            if (n & 1) r = cmul(r, p);
            p = cmul(p, p);
            n >>= 1;
        }
        return b.x < (${R})0 ? crecip(r) : r;
    }
    return cexp(cmul(b, clog(a)));
}
inline ${T} csin(${T} a) { return (${T})(sin(a.x) * cosh(a.y), cos(a.x) * sinh(a.y)); }
inline ${T} ccos(${T} a) { return (${T})(cos(a.x) * cosh(a.y), -sin(a.x) * sinh(a.y)); }
inline ${T} csinh(${T} a) { return (${T})(sinh(a.x) * cos(a.y), cosh(a.x) * sin(a.y)); }
inline ${T} ccosh(${T} a) { return (${T})(cosh(a.x) * cos(a.y), sinh(a.x) * sin(a.y)); }
/* tanh(x + iy) = (sinh 2x + i sin 2y) / (cosh 2x + cos 2y); past |x| = ${big} the real part is
   +-1 and the imaginary part 4 sin y cos y e^-2|x| */
inline ${T} ctanh(${T} a) {
    if (fabs(a.x) > ${big})
        return (${T})(copysign(${one}, a.x), 4 * sin(a.y) * cos(a.y) * exp(-2 * fabs(a.x)));
    ${R} d = cosh(2 * a.x) + cos(2 * a.y);
    return (${T})(sinh(2 * a.x) / d, sin(2 * a.y) / d);
}
inline ${T} csigmoid(${T} a) { return crecip((${T})(${one}, (${R})0) + cexp(-a)); }
/* nan_to_num of each part (torch's complex nan_to_num); the replacements are the parameters'
   real parts */
inline ${R} rnan_to_num(${R} v, ${R} nan, ${R} pinf, ${R} ninf) {
    return isnan(v) ? nan : isinf(v) ? (v > (${R})0 ? pinf : ninf) : v;
}
inline ${T} cnan_to_num(${T} a, ${T} nan, ${T} pinf, ${T} ninf) {
    return (${T})(rnan_to_num(a.x, nan.x, pinf.x, ninf.x), rnan_to_num(a.y, nan.x, pinf.x, ninf.x));
}
</%def>
