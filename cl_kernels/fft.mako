## 1-d complex-to-complex discrete Fourier transforms of a batch of B rows, one program per float
## dtype (float32, float64). A complex number is a pair (re, im) of the dtype, interleaved in
## memory: the storage of clgrad's complex tensors, and of float tensors of shape [..., n, 2].
##
## Powers of two: Stockham autosort passes (Govindaraju et al., "High performance discrete Fourier
## transforms on graphics processors", SC 2008), one launch per pass, radix 4 (and one radix-2
## pass when log2 n is odd). A pass of radix R over sub-transforms of length Ns reads element
## j + r * N/R (r < R) of each row, turns them by the twiddles w^(r * (j % Ns)) of N = Ns * R,
## runs an R-point DFT and writes them to (j / Ns) * Ns * R + j % Ns + r * Ns: no bit reversal.
## The twiddles come from a table of e^(2 pi i k / N) (fft_twiddles, built once per N): `sign`
## -1 is the forward transform, +1 the inverse (unnormalised). The first pass reads its input
## with any row stride sb and element stride ss (in real elements; real_in: real numbers, the
## imaginary parts zero) and the last multiplies by `scale` (the normalisation).
##
## Other lengths n: Bluestein's chirp-z transform through a power-of-two FFT of length m >= 2n - 1:
## X_k = c_k sum_j (x_j c_j) conj(c_(k-j)) with the chirp c_j = e^(sign pi i j^2 / n), the sum a
## circular convolution computed as IFFT(FFT(a) * FFT(h)). chirp_in makes a (zero-padded),
## chirp_filter h (the filter's spectrum is kept per n), cmul_rows the product, chirp_out the
## result.
<%namespace name="c" file="common.mako"/>
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

% for R in (2, 4):
/* one Stockham pass of radix ${R}: B * N / ${R} work-items */
__kernel void fft_r${R}(__global const ${T} *x, long xo, long sb, long ss, int real_in,
                     __global ${T} *y, long yo, __global const ${T} *tw, long two, long N,
                     long Ns, long B, ${T} sign, ${T} scale)
{
    long gid = get_global_id(0);
    long Q = N / ${R};
    if (gid >= B * Q) return;
    y += yo;
    tw += two;
    long b = gid / Q, j = gid - b * Q;
    long k = j & (Ns - 1);                  /* Ns is a power of two */
    long step = N / (Ns * ${R});            /* the table's stride for twiddles of Ns * R */
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
% else:
    CPLX a0 = v0 + v2, a1 = v0 - v2, a2 = v1 + v3, d = v1 - v3;
    CPLX a3 = (CPLX)(-sign * d.y, sign * d.x);     /* (v1 - v3) * sign * i */
    CPLX u0 = a0 + a2, u1 = a1 + a3, u2 = a0 - a2, u3 = a1 - a3;
% endif
    long o = 2 * (b * N + (j - k) * ${R} + k);
% for r in range(R):
    st(y, o + ${2 * r} * Ns, u${r} * scale);
% endfor
}
% endfor

<% LMAX = 16384 // (4 * dt.itemsize) %>
#define LMAX ${LMAX}
/* The whole transform of one row of N <= LMAX (a power of two; the two local buffers take 16 KiB,
   half the least local memory OpenCL 1.2 promises) by one work-group: the same passes as
   fft_r2 / fft_r4 between two local buffers, a barrier after each; one launch instead of one per
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
            CPLX a0 = v0 + v2, a1 = v0 - v2, a2 = v1 + v3, e = v1 - v3;
            CPLX a3 = (CPLX)(-sign * e.y, sign * e.x);
            CPLX u0 = a0 + a2, u1 = a1 + a3, u2 = a0 - a2, u3 = a1 - a3;
            int o = 2 * ((j - k) * 4 + k);
            d[o] = u0.x; d[o + 1] = u0.y;
            d[o + 2 * Ns] = u1.x; d[o + 2 * Ns + 1] = u1.y;
            d[o + 4 * Ns] = u2.x; d[o + 4 * Ns + 1] = u2.y;
            d[o + 6 * Ns] = u3.x; d[o + 6 * Ns + 1] = u3.y;
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

/* y[b, j] = x[b, j] * c_j * scale for j < n, 0 for n <= j < m: B * m work-items. Without
   `chirped`, a scaled copy (the transform of length 1). */
__kernel void chirp_in(__global const ${T} *x, long xo, long sb, long ss, int real_in,
                       __global ${T} *y, long yo, long n, long m, long B, ${T} sign,
                       ${T} scale, int chirped)
{
    long gid = get_global_id(0);
    if (gid >= B * m) return;
    y += yo;
    long b = gid / m, j = gid - b * m;
    CPLX v = (CPLX)(0, 0);
    if (j < n) {
        v = ld(x + xo + b * sb, j * ss, real_in);
        if (chirped)
            v = cmul(v, chirp(j, n, sign));
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

/* y[b, k] *= f[k]: B * m work-items */
__kernel void cmul_rows(__global ${T} *y, long yo, __global const ${T} *f, long fo, long m,
                        long B)
{
    long gid = get_global_id(0);
    if (gid >= B * m) return;
    y += yo;
    f += fo;
    long k = gid % m;
    st(y, 2 * gid, cmul(ld(y, 2 * gid, 0), ld(f, 2 * k, 0)));
}

/* y[b, k] = x[b, k] * c_k * scale, k < n, for x of rows of m: B * n work-items */
__kernel void chirp_out(__global const ${T} *x, long xo, __global ${T} *y, long yo, long n,
                        long m, long B, ${T} sign, ${T} scale)
{
    long gid = get_global_id(0);
    if (gid >= B * n) return;
    x += xo;
    y += yo;
    long b = gid / n, k = gid - b * n;
    st(y, 2 * gid, cmul(ld(x, 2 * (b * m + k), 0), chirp(k, n, sign)) * scale);
}

/* The Hermitian extension of a one-sided spectrum: y[b, k] = x[b, k] for k < h, conj(x[b, n - k])
   after (h = n / 2 + 1 entries given, any strides): B * n work-items */
__kernel void hermitian(__global const ${T} *x, long xo, long sb, long ss, __global ${T} *y,
                        long yo, long n, long B)
{
    long gid = get_global_id(0);
    if (gid >= B * n) return;
    y += yo;
    long b = gid / n, k = gid - b * n;
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
