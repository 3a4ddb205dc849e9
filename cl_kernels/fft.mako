## 1-d complex-to-complex discrete Fourier transforms of a batch of B rows, one program per float
## dtype (float32, float64). A complex number is a pair (re, im) of the dtype, interleaved in
## memory: the storage of clgrad's complex tensors, and of float tensors of shape [..., n, 2].
##
## Lengths whose prime factors are 2, 3, 5 and 7: Stockham autosort passes (Govindaraju et al.,
## "High performance discrete Fourier transforms on graphics processors", SC 2008), one launch
## per pass: radix 8 (and one radix-2 or radix-4 pass for the rest of the power of two), then
## radices 3, 5 and 7 (their DFTs by definition); a power of two may instead take all its passes
## in one launch in local memory (fft_local, the GPU paths' way for rows of up to 16 KiB).
## A pass of radix R over sub-transforms of length Ns reads element j + r * N/R (r < R) of each
## row, turns them by the twiddles w^(r * (j % Ns)) of N = Ns * R, runs an R-point DFT and
## writes them to (j / Ns) * Ns * R + j % Ns + r * Ns: no bit reversal.
## The twiddles come from a table of e^(2 pi i k / N) (fft_twiddles, built once per N): `sign`
## -1 is the forward transform, +1 the inverse (unnormalised). The first pass reads its input
## with any row stride sb and element stride ss (in real elements; real_in: real numbers, the
## imaginary parts zero) and the last multiplies by `scale` (the normalisation).
##
## Other lengths n (a prime factor above 7): Bluestein's chirp-z transform through a power-of-two
## FFT of length m >= 2n - 1: X_k = c_k sum_j (x_j c_j) conj(c_(k-j)) with the chirp
## c_j = e^(sign pi i j^2 / n), the sum a circular convolution computed as IFFT(FFT(a) * FFT(h)).
## chirp_in makes a (zero-padded), chirp_filter h (the filter's spectrum is kept per n),
## cmul_rows the product, chirp_out the result; the chirp itself is a table kept per n.
<%namespace name="c" file="common.mako"/>
<%!
import math

COMP = "0123456789abcdef"          # OpenCL's names of vector components


def dft_row(R, q, T):
    """Entry q of an R-point DFT of v0 .. v(R-1): v0 + sum_r v_r w^(rq), w = e^(sign 2 pi i / R),
    the powers of w as literals."""
    terms = ["v0"]
    for r in range(1, R):
        m = r * q % R
        if m == 0:
            terms.append(f"v{r}")
        else:
            c, s = repr(math.cos(2 * math.pi * m / R)), repr(math.sin(2 * math.pi * m / R))
            terms.append(f"cmul(v{r}, (CPLX)(({T}){c}, sign * ({T}){s}))")
    return " + ".join(terms)
%>
${c.prelude([dt])}
<% T = dt.ct %>
#define CPLX ${T}2

inline CPLX cmul(CPLX a, CPLX b)
{
    return (CPLX)(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
}

/* element i (the index of its real part) of x: a complex pair, or a real number */
inline CPLX ld(__global const ${T} *x, long i, int real_in)
{
    CPLX v;
    if (real_in)
        v = (CPLX)(x[i], 0);
    else
        v = (CPLX)(x[i], x[i + 1]);
    return v;
}

inline void st(__global ${T} *y, long i, CPLX v)
{
    y[i] = v.x;
    y[i + 1] = v.y;
}

/* c_j = e^(sign pi i j^2 / n), with j^2 reduced modulo 2n first (the period) */
inline CPLX chirp(long j, long n, ${T} sign)
{
    long q = (j * j) % (2 * n);
    ${T} a = (${T})q / (${T})n;
    return (CPLX)(cospi(a), sign * sinpi(a));
}

/* tw[k] = e^(2 pi i k / N), k < N */
__kernel void fft_twiddles(__global ${T} *tw, long two, long N)
{
    long k = get_global_id(0);
    if (k >= N) return;
    tw += two;
    ${T} a = (${T})(2 * k) / (${T})N;
    tw[2 * k] = cospi(a);
    tw[2 * k + 1] = sinpi(a);
}

/* the 4-point DFT (sign -1 forward) of a0..a3, in place */
#define DFT4(a0, a1, a2, a3) do { \
        CPLX s02_ = a0 + a2, d02_ = a0 - a2, s13_ = a1 + a3, d13_ = a1 - a3; \
        d13_ = (CPLX)(-sign * d13_.y, sign * d13_.x);  /* (a1 - a3) * sign * i */ \
        a0 = s02_ + s13_; a1 = d02_ + d13_; a2 = s02_ - s13_; a3 = d02_ - d13_; \
    } while (0)

% for R in (2, 4, 8, 3, 5, 7):
/* One Stockham pass of radix ${R}: N / ${R} work-items along dimension 0 (j) per row, the rows
   along dimension 1 (no division by the row length: Intel's compiler vectorises across j). */
__kernel void fft_r${R}(__global const ${T} *x, long xo, long sb, long ss, int real_in,
                     __global ${T} *y, long yo, __global const ${T} *tw, long two, long N,
                     long Ns, long Q, long step, ${T} sign, ${T} scale)
{
    /* Q = N / R, step = N / (Ns * R) (the table's stride for twiddles of Ns * R) come from the
       host: a 64-bit division per work-item cost as much as the pass */
    long j = get_global_id(0), b = get_global_id(1);
    if (j >= Q) return;
    y += yo;
    tw += two;
% if R in (2, 4, 8):
    long k = j & (Ns - 1);                  /* Ns is a power of two here (radices 2, 4, 8 first) */
% else:
    long k = (uint)j % (uint)Ns;           /* 32-bit: a 64-bit division costs far more */
% endif
    __global const ${T} *xb = x + xo + b * sb;
% for r in range(R):
    CPLX v${r} = ld(xb, (j + ${r} * Q) * ss, real_in);
% endfor
    if (Ns > 1) {
% for r in range(1, R):
        long t${r} = ${r} * k * step;
        v${r} = cmul(v${r}, (CPLX)(tw[2 * t${r}], sign * tw[2 * t${r} + 1]));
% endfor
    }
% if R == 2:
    CPLX u0 = v0 + v1, u1 = v0 - v1;
% elif R == 4:
    DFT4(v0, v1, v2, v3);
    CPLX u0 = v0, u1 = v1, u2 = v2, u3 = v3;
% elif R == 8:
    /* two 4-point DFTs of the even and odd entries, joined by w^k, w = e^(sign 2 pi i / 8) */
    DFT4(v0, v2, v4, v6);
    DFT4(v1, v3, v5, v7);
    const ${T} h = (${T})0.70710678118654752440;
    CPLX w1 = h * (CPLX)(v3.x - sign * v3.y, sign * v3.x + v3.y);
    CPLX w2 = (CPLX)(-sign * v5.y, sign * v5.x);
    CPLX w3 = h * (CPLX)(-v7.x - sign * v7.y, sign * v7.x - v7.y);
    CPLX u0 = v0 + v1, u4 = v0 - v1, u1 = v2 + w1, u5 = v2 - w1;
    CPLX u2 = v4 + w2, u6 = v4 - w2, u3 = v6 + w3, u7 = v6 - w3;
% else:
    /* the ${R}-point DFT by its definition: u_q = sum_r v_r w^(rq), w = e^(sign 2 pi i / ${R}) */
% for q in range(R):
    CPLX u${q} = ${dft_row(R, q, T)};
% endfor
% endif
    long o = 2 * (b * N + (j - k) * ${R} + k);
% for r in range(R):
    st(y, o + ${2 * r} * Ns, u${r} * scale);
% endfor
}
% endfor

<% W = c.attr.width(dt) %>
/* ---- radix 8 on vectors: W = ${W} neighbouring j per work-item (PoCL vectorises nothing across
   work-items by itself). Used for the passes whose sub-transforms are at least W long (Ns >= W),
   where the W lanes' inputs and outputs are contiguous: (re, im) pairs are loaded as two
   W-vectors and split into a vector of real and one of imaginary parts. The twiddles come from
   the pass's own table pt (e^(2 pi i r k / (Ns * 8)) at (r - 1) * Ns + k), contiguous in k
   too. ---- */
typedef CAT(${T}, ${W}) vreal;
% for w in (2, 4, 8, 16):
#if ${W} == ${w}
/* the real / imaginary parts of W pairs held in a (first W reals) and b (the next W) */
#define VRE(a, b) ((vreal)(${", ".join(f"a.s{COMP[2*l]}" for l in range(w // 2))}, ${", ".join(f"b.s{COMP[2*l]}" for l in range(w // 2))}))
#define VIM(a, b) ((vreal)(${", ".join(f"a.s{COMP[2*l+1]}" for l in range(w // 2))}, ${", ".join(f"b.s{COMP[2*l+1]}" for l in range(w // 2))}))
/* and back: the first W reals of the pairs (re, im), the next W */
#define VLO(re, im) ((vreal)(${", ".join(f"re.s{COMP[l]}, im.s{COMP[l]}" for l in range(w // 2))}))
#define VHI(re, im) ((vreal)(${", ".join(f"re.s{COMP[l]}, im.s{COMP[l]}" for l in range(w // 2, w))}))
#endif
% endfor

/* a 4-point DFT of vector pairs (r0, i0) .. (r3, i3), in place */
#define VDFT4(r0, i0, r1, i1, r2, i2, r3, i3) do { \
        vreal sr_ = r0 + r2, si_ = i0 + i2, dr_ = r0 - r2, di_ = i0 - i2; \
        vreal tr_ = r1 + r3, ti_ = i1 + i3, er_ = -sign * (i1 - i3), ei_ = sign * (r1 - r3); \
        r0 = sr_ + tr_; i0 = si_ + ti_; r2 = sr_ - tr_; i2 = si_ - ti_; \
        r1 = dr_ + er_; i1 = di_ + ei_; r3 = dr_ - er_; i3 = di_ - ei_; \
    } while (0)

% for first in (False, True):
% if first:
/* the first pass (Ns = 1: no twiddles, k = 0): lane l's eight outputs are consecutive, at
   (j0 + l) * 8; stored lane by lane */
% endif
__kernel void fft_r8v${"1" if first else ""}(__global const ${T} *x, long xo, __global ${T} *y, long yo,
                      __global const ${T} *pt, long pto, long N, long Ns, long Q, long step,
                      ${T} sign, ${T} scale)
{
    long j0 = get_global_id(0) * ${W}, b = get_global_id(1);
    if (j0 >= Q) return;
    __global const ${T} *xb = x + xo + 2 * b * N;
    long k0 = j0 & (Ns - 1);
% for r in range(8):
    vreal r${r}, i${r};
    {
        __global const ${T} *p = xb + 2 * (j0 + ${r} * Q);
        vreal a = LDV(${T}, ${W}, 0, p), c = LDV(${T}, ${W}, 0, p + ${W});
        r${r} = VRE(a, c);
        i${r} = VIM(a, c);
    }
% endfor
% for r in range(1, 8 if not first else 1):
    {
        __global const ${T} *p = pt + pto + 2 * (${r - 1} * Ns + k0);
        vreal a = LDV(${T}, ${W}, 0, p), c = LDV(${T}, ${W}, 0, p + ${W});
        vreal cr = VRE(a, c), ci = sign * VIM(a, c);
        vreal nr = r${r} * cr - i${r} * ci;
        i${r} = r${r} * ci + i${r} * cr;
        r${r} = nr;
    }
% endfor
    VDFT4(r0, i0, r2, i2, r4, i4, r6, i6);
    VDFT4(r1, i1, r3, i3, r5, i5, r7, i7);
    const ${T} h = (${T})0.70710678118654752440;
    vreal w1r = h * (r3 - sign * i3), w1i = h * (sign * r3 + i3);
    vreal w2r = -sign * i5, w2i = sign * r5;
    vreal w3r = h * (-r7 - sign * i7), w3i = h * (sign * r7 - i7);
    vreal ur[8], ui[8];
    ur[0] = r0 + r1; ui[0] = i0 + i1; ur[4] = r0 - r1; ui[4] = i0 - i1;
    ur[1] = r2 + w1r; ui[1] = i2 + w1i; ur[5] = r2 - w1r; ui[5] = i2 - w1i;
    ur[2] = r4 + w2r; ui[2] = i4 + w2i; ur[6] = r4 - w2r; ui[6] = i4 - w2i;
    ur[3] = r6 + w3r; ui[3] = i6 + w3i; ur[7] = r6 - w3r; ui[7] = i6 - w3i;
% if not first:
    __global ${T} *yb = y + yo + 2 * (b * N + (j0 - k0) * 8 + k0);
% for r in range(8):
    {
        vreal re = ur[${r}] * scale, im = ui[${r}] * scale;
        STV(${T}, ${W}, VLO(re, im), 0, yb + 2 * ${r} * Ns);
        STV(${T}, ${W}, VHI(re, im), 0, yb + 2 * ${r} * Ns + ${W});
    }
% endfor
% else:
    __global ${T} *yb = y + yo + 2 * (b * N + j0 * 8);
% for r in range(8):
    ur[${r}] *= scale;
    ui[${r}] *= scale;
% endfor
% for w in (2, 4, 8, 16):
#if ${W} == ${w}
% for l in range(w):
% for r in range(8):
    yb[${16 * l + 2 * r}] = ur[${r}].s${COMP[l]};
    yb[${16 * l + 2 * r + 1}] = ui[${r}].s${COMP[l]};
% endfor
% endfor
#endif
% endfor
% endif
}
% endfor

<% LMAX = 16384 // (4 * dt.itemsize) %>
#define LMAX ${LMAX}
/* The whole transform of one row of N <= LMAX (a power of two; the two local buffers take 16 KiB,
   half the least local memory OpenCL 1.2 promises) by one work-group: the same passes as
   fft_r2 / fft_r4 (radix 4, one radix 2 first for odd powers) between two local buffers, a barrier after each; one launch instead of one per
   pass, and the row stays in local memory. */
__kernel void fft_local(__global const ${T} *x, long xo, long sb, long ss, int real_in,
                        __global ${T} *y, long yo, __global const ${T} *tw, long two, int N,
                        ${T} sign, ${T} scale)
{
    __local ${T} lbuf[4 * LMAX];
    int b = get_group_id(0), lid = get_local_id(0), L = get_local_size(0);
    __global const ${T} *xb = x + xo + b * sb;
    __local ${T} *s = lbuf, *d = lbuf + 2 * LMAX, *t;
    tw += two;
    for (int i = lid; i < N; i += L) {
        CPLX v = ld(xb, i * ss, real_in);
        s[2 * i] = v.x;
        s[2 * i + 1] = v.y;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    int Ns = 1;
    if ((31 - clz(N)) & 1) {                    /* an odd power of two: one radix-2 pass first */
        for (int j = lid; j < N / 2; j += L) {
            CPLX v0 = (CPLX)(s[2 * j], s[2 * j + 1]);
            CPLX v1 = (CPLX)(s[2 * (j + N / 2)], s[2 * (j + N / 2) + 1]);
            CPLX u0 = v0 + v1, u1 = v0 - v1;
            d[4 * j] = u0.x; d[4 * j + 1] = u0.y;
            d[4 * j + 2] = u1.x; d[4 * j + 3] = u1.y;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        t = s; s = d; d = t;
        Ns = 2;
    }
    for (; Ns < N; Ns *= 4) {
        int Q = N / 4, step = N / (Ns * 4);
        for (int j = lid; j < Q; j += L) {
            int k = j & (Ns - 1);
            CPLX v0 = (CPLX)(s[2 * j], s[2 * j + 1]);
            CPLX v1 = (CPLX)(s[2 * (j + Q)], s[2 * (j + Q) + 1]);
            CPLX v2 = (CPLX)(s[2 * (j + 2 * Q)], s[2 * (j + 2 * Q) + 1]);
            CPLX v3 = (CPLX)(s[2 * (j + 3 * Q)], s[2 * (j + 3 * Q) + 1]);
            if (Ns > 1) {
                int t1 = k * step, t2 = 2 * k * step, t3 = 3 * k * step;
                v1 = cmul(v1, (CPLX)(tw[2 * t1], sign * tw[2 * t1 + 1]));
                v2 = cmul(v2, (CPLX)(tw[2 * t2], sign * tw[2 * t2 + 1]));
                v3 = cmul(v3, (CPLX)(tw[2 * t3], sign * tw[2 * t3 + 1]));
            }
            DFT4(v0, v1, v2, v3);
            int o = 2 * ((j - k) * 4 + k);
            d[o] = v0.x; d[o + 1] = v0.y;
            d[o + 2 * Ns] = v1.x; d[o + 2 * Ns + 1] = v1.y;
            d[o + 4 * Ns] = v2.x; d[o + 4 * Ns + 1] = v2.y;
            d[o + 6 * Ns] = v3.x; d[o + 6 * Ns + 1] = v3.y;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        t = s; s = d; d = t;
    }
    __global ${T} *yb = y + yo + 2 * (long)b * N;
    for (int i = lid; i < N; i += L) {
        yb[2 * i] = s[2 * i] * scale;
        yb[2 * i + 1] = s[2 * i + 1] * scale;
    }
}

/* y[b, j] = x[b, j] * c_j * scale for j < n, 0 for n <= j < m: m work-items (dimension 0) per
   row (dimension 1), as in the kernels below. The chirp comes from the table ct of
   e^(pi i j^2 / n) (j < n), conjugated for sign -1. Without `chirped`, a scaled copy (the
   transform of length 1; ct is not read). */
__kernel void chirp_in(__global const ${T} *x, long xo, long sb, long ss, int real_in,
                       __global ${T} *y, long yo, __global const ${T} *ct, long cto, long n,
                       long m, long B, ${T} sign, ${T} scale, int chirped)
{
    long j = get_global_id(0), b = get_global_id(1);
    if (j >= m) return;
    y += yo;
    long gid = b * m + j;
    CPLX v = (CPLX)(0, 0);
    if (j < n) {
        v = ld(x + xo + b * sb, j * ss, real_in);
        if (chirped)
            v = cmul(v, (CPLX)(ct[cto + 2 * j], sign * ct[cto + 2 * j + 1]));
        v *= scale;
    }
    st(y, 2 * gid, v);
}

/* the filter conj(c_t) for |t| < n, laid out circularly over m and divided by m (the inverse
   FFT's normalisation): m work-items */
__kernel void chirp_filter(__global ${T} *h, long ho, long n, long m, ${T} sign)
{
    long t = get_global_id(0);
    if (t >= m) return;
    h += ho;
    CPLX v = (CPLX)(0, 0);
    if (t < n)
        v = chirp(t, n, -sign);
    else if (t > m - n)
        v = chirp(m - t, n, -sign);
    st(h, 2 * t, v / (${T})m);
}

/* y[b, k] *= f[k] */
__kernel void cmul_rows(__global ${T} *y, long yo, __global const ${T} *f, long fo, long m,
                        long B)
{
    long k = get_global_id(0), b = get_global_id(1);
    if (k >= m) return;
    y += yo;
    f += fo;
    long gid = b * m + k;
    st(y, 2 * gid, cmul(ld(y, 2 * gid, 0), ld(f, 2 * k, 0)));
}

/* y[b, k] = x[b, k] * c_k * scale, k < n, for x of rows of m (c_k from the table, as above) */
__kernel void chirp_out(__global const ${T} *x, long xo, __global ${T} *y, long yo,
                        __global const ${T} *ct, long cto, long n, long m, long B, ${T} sign,
                        ${T} scale)
{
    long k = get_global_id(0), b = get_global_id(1);
    if (k >= n) return;
    x += xo;
    y += yo;
    long gid = b * n + k;
    CPLX c = (CPLX)(ct[cto + 2 * k], sign * ct[cto + 2 * k + 1]);
    st(y, 2 * gid, cmul(ld(x, 2 * (b * m + k), 0), c) * scale);
}

/* Real transforms of even length n = 2h through a complex one of length h. r2c: the real row x
   read as h pairs z_m = x_2m + i x_(2m+1) is transformed to Z; then X_k = E_k + w^k O_k with
   E_k = (Z_k + conj Z_(h-k)) / 2 and O_k = (Z_k - conj Z_(h-k)) / 2i (the transforms of the even
   and odd samples), w = e^(sign 2 pi i / n). r2c_post makes X_k, k < nout, from Z: a
   work-item per k (dimension 0) and row (dimension 1). */
__kernel void r2c_post(__global const ${T} *z, long zo, __global ${T} *y, long yo,
                       __global const ${T} *tw, long two, long n, long nout, ${T} sign,
                       ${T} scale)
{
    long k = get_global_id(0), b = get_global_id(1);
    if (k >= nout) return;
    long h = n / 2, i = k < h ? k : k - h;      /* k < n: no division */
    __global const ${T} *zb = z + zo + 2 * b * h;
    CPLX zk = ld(zb, 2 * i, 0), zc = ld(zb, 2 * (i ? h - i : 0), 0);
    zc.y = -zc.y;
    CPLX e = (zk + zc) * (${T})0.5, d = (zk - zc) * (${T})0.5;
    CPLX o = (CPLX)(d.y, -d.x);                 /* d / i */
    long t = two + 2 * k;                       /* w^k from the table of e^(2 pi i k / n) */
    CPLX w = (CPLX)(tw[t], sign * tw[t + 1]);
    st(y, yo + 2 * (b * nout + k), (e + cmul(w, o)) * scale);
}

/* c2r's inverse of that: from the one-sided spectrum X (h + 1 entries, any strides; the
   imaginary parts of X_0 and X_h ignored, as c2r does) the h pairs
   Y_k = (X_k + conj X_(h-k)) + i w^k (X_k - conj X_(h-k)), whose transform of length h holds the
   real result's even and odd samples as its real and imaginary parts: h work-items per row. */
__kernel void c2r_pre(__global const ${T} *x, long xo, long sb, long ss, __global ${T} *y,
                      long yo, __global const ${T} *tw, long two, long n, ${T} sign)
{
    long k = get_global_id(0), b = get_global_id(1);
    long h = n / 2;
    if (k >= h) return;
    __global const ${T} *xb = x + xo + b * sb;
    CPLX xk = ld(xb, k * ss, 0), xc = ld(xb, (h - k) * ss, 0);
    xc.y = -xc.y;
    if (k == 0) {
        xk.y = 0;
        xc.y = 0;
    }
    CPLX s = xk + xc, d = xk - xc;
    CPLX wd = cmul((CPLX)(tw[two + 2 * k], sign * tw[two + 2 * k + 1]), d);
    st(y, yo + 2 * (b * h + k), s + (CPLX)(-wd.y, wd.x));
}

/* The Hermitian extension of a one-sided spectrum: y[b, k] = x[b, k] for k < h, conj(x[b, n - k])
   after (h = n / 2 + 1 entries given, any strides) */
__kernel void hermitian(__global const ${T} *x, long xo, long sb, long ss, __global ${T} *y,
                        long yo, long n, long B)
{
    long k = get_global_id(0), b = get_global_id(1);
    if (k >= n) return;
    y += yo;
    long gid = b * n + k;
    __global const ${T} *xb = x + xo + b * sb;
    CPLX v;
    if (k < n / 2 + 1) {
        v = ld(xb, k * ss, 0);
    } else {
        v = ld(xb, (n - k) * ss, 0);
        v.y = -v.y;
    }
    st(y, 2 * gid, v);
}
