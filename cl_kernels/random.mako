## Random numbers for tensors of dtype `dt` from Philox4x32-10, a counter-based generator: element
## i of a draw is a pure function of (seed, offset + i), so every device gives the same bits.
<%namespace name="c" file="common.mako"/>
${c.prelude([dt])}

${c.philox()}
/* a uniform in [0, 1) with as many random bits as the dtype's mantissa holds (so that rounding
   to a 16-bit float cannot reach 1), and one in (0, 1] for logarithms */
<% bits = {"half": 11, "ushort": 8}.get(dt.cl, 24) %>
#define U01(r) ((float)((r) >> ${32 - bits}) * ${repr(2.0 ** -bits)}f)
#define U01_OPEN(r) (((float)((r) >> 8) + 1.0f) * 5.9604644775390625e-08f)

% if dt.kind == "f":
__kernel void uniform(${c.ptr(dt)} out, long oo, long n, ulong seed, ulong offset, ${dt.ct} lo,
                      ${dt.ct} hi)
{
    long i = get_global_id(0);
    if (i >= n) return;
    uint4 r = philox(offset + i, seed);
% if dt.cl == "double":
    double u = (double)(((ulong)r.x << 21) ^ ((ulong)r.y >> 11)) * 1.1102230246251565e-16;
% else:
    float u = U01(r.x);
% endif
    ${dt.ct} v = lo + (hi - lo) * u;
    /* rounding of lo + (hi - lo) * u may reach hi: keep the interval half-open */
    if (v >= hi) v = lo;
    ${c.store(dt, "out", "oo + i", "v")};
}

__kernel void normal(${c.ptr(dt)} out, long oo, long n, ulong seed, ulong offset, ${dt.ct} mean,
                     ${dt.ct} std)
{
    long i = get_global_id(0);
    if (i >= n) return;
    uint4 r = philox(offset + i, seed);
% if dt.cl == "double":
    double u1 = ((double)(((ulong)r.x << 21) ^ ((ulong)r.y >> 11)) + 1.0) * 1.1102230246251565e-16;
    double u2 = (double)(((ulong)r.z << 21) ^ ((ulong)r.w >> 11)) * 1.1102230246251565e-16;
    double z = sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
% else:
    float u1 = U01_OPEN(r.x);
    float u2 = U01(r.y);
    float z = sqrt(-2.0f * log(u1)) * cos(6.2831853071795865f * u2);
% endif
    ${c.store(dt, "out", "oo + i", "mean + std * z")};
}

__kernel void bernoulli(${c.ptr(dt)} out, long oo, long n, ulong seed, ulong offset, float p)
{
    long i = get_global_id(0);
    if (i >= n) return;
    uint4 r = philox(offset + i, seed);
    ${c.store(dt, "out", "oo + i", "(" + dt.ct + ")(U01(r.x) < p ? 1 : 0)")};
}
% endif

/* integers uniform in [lo, lo + range), range < 2^63 */
__kernel void randint(${c.ptr(dt)} out, long oo, long n, ulong seed, ulong offset, long lo,
                      ulong range)
{
    long i = get_global_id(0);
    if (i >= n) return;
    uint4 r = philox(offset + i, seed);
    ulong v;
    if (range <= 0xFFFFFFFFul) {
        v = ((ulong)r.x * range) >> 32;
    } else {
        v = (((ulong)r.x << 32) | r.y) % range;
    }
    ${c.store(dt, "out", "oo + i", "(" + dt.ct + ")(lo + (long)v)")};
}

/* random keys for a permutation: sorting them on the host gives randperm */
__kernel void random_bits(__global uint *out, long n, ulong seed, ulong offset)
{
    long i = get_global_id(0);
    if (i >= n) return;
    out[i] = philox(offset + i, seed).x;
}

% if dt.kind == "f":
<% CT = "double" if dt.cl == "double" else "float" %>
/* ---- samplers with rejection loops: draw k of element i is philox_at(offset + i, k + 1, seed);
   each loop is bounded (MAX_TRIES draws), far beyond what acceptance rates of 0.9 and more ever
   need, so a work-item always ends ---- */
#define MAX_TRIES 64
/* a uniform in (0, 1) from word `a` (and `b` for double's 53 bits): never 0, so logs are finite */
% if CT == "double":
inline double unif_open(uint a, uint b) {
    return ((double)(((ulong)a << 21) ^ ((ulong)b >> 11)) + 0.5) * 1.1102230246251565e-16;
}
% else:
inline float unif_open(uint a, uint b) { return ((float)(a >> 8) + 0.5f) * 5.9604644775390625e-08f; }
% endif
/* the j-th of the NUNIF uniforms one Philox draw gives (4 floats, or 2 doubles) */
% if CT == "double":
#define NUNIF 2
#define UNIF_J(r, j) ((j) == 0 ? unif_open((r).x, (r).y) : unif_open((r).z, (r).w))
% else:
#define NUNIF 4
#define UNIF_J(r, j) unif_open((j) == 0 ? (r).x : (j) == 1 ? (r).y : (j) == 2 ? (r).z : (r).w, 0u)
% endif

/* Gamma(alpha, 1) by Marsaglia and Tsang (2000); alpha < 1 draws Gamma(alpha + 1) and scales it by
   u^(1/alpha). Results are at least the smallest normal number, as torch's. */
__kernel void standard_gamma(${c.ptr(dt)} out, long oo, ${c.cptr(dt)} a, long ao, long n,
                             ulong seed, ulong offset)
{
    long i = get_global_id(0);
    if (i >= n) return;
    ${CT} alpha = ${c.load(dt, "a", "ao + i")};
    ${CT} scale = 1;
    ulong ctr = offset + i;
    if (alpha < 1) {
        if (alpha <= 0 || isnan(alpha)) {
            ${c.store(dt, "out", "oo + i", "(alpha == 0 ? (" + CT + ")0 : NAN)")};
            return;
        }
        uint4 r0 = philox_at(ctr, 0u, seed);
        scale = pow(unif_open(r0.x, r0.y), 1 / alpha);
        alpha += 1;
    }
    ${CT} d = alpha - (${CT})1 / 3, cc = 1 / sqrt(9 * d);
    ${CT} v = 1;                               /* the mean, if no draw were accepted */
    for (uint k = 0; k < MAX_TRIES; ++k) {
        uint4 r = philox_at(ctr, 2 * k + 1, seed);
        ${CT} x = sqrt(-2 * log(unif_open(r.x, r.y))) * cos((${CT})6.283185307179586 * unif_open(r.z, r.w));
        ${CT} y = 1 + cc * x;
        if (y <= 0) continue;
% if CT == "double":
        uint4 q = philox_at(ctr, 2 * k + 2, seed);
        ${CT} u = unif_open(q.x, q.y);
% else:
        ${CT} u = unif_open(r.y, 0u);    /* float uniforms take one word: r.y is still unused */
% endif
        ${CT} y3 = y * y * y, xx = x * x;
        if (u < 1 - (${CT})0.0331 * xx * xx || log(u) < (${CT})0.5 * xx + d * (1 - y3 + log(y3))) {
            v = y3;
            break;
        }
    }
    ${CT} g = fmax(scale * d * v, ${"DBL_MIN" if CT == "double" else "FLT_MIN"});
    ${c.store(dt, "out", "oo + i", "g")};
}

/* digamma for x > 0: the recurrence up to 6, then the asymptotic series */
inline ${CT} digamma_pos(${CT} x) {
    ${CT} acc = 0;
    while (x < 6) { acc -= 1 / x; x += 1; }
    ${CT} z = 1 / (x * x);
    return acc + log(x) - (${CT})0.5 / x
        - z * ((${CT})(1.0 / 12) - z * ((${CT})(1.0 / 120) - z * ((${CT})(1.0 / 252) - z * ((${CT})(1.0 / 240) - z * (${CT})(1.0 / 132)))));
}

/* d x / d alpha of a Gamma(alpha, 1) sample x held at its quantile: -(dF/dalpha) / pdf. Three
   regions as torch's _standard_gamma_grad: a series in x for x < 0.8, Rice's saddle-point
   expansion for alpha > 8, and a bivariate rational fit in log(x / alpha), log(alpha) between. */
__kernel void standard_gamma_grad(${c.ptr(dt)} out, long oo, ${c.cptr(dt)} a, long ao,
                                  ${c.cptr(dt)} xs, long xo, long n)
{
    long i = get_global_id(0);
    if (i >= n) return;
    ${CT} alpha = ${c.load(dt, "a", "ao + i")}, x = ${c.load(dt, "xs", "xo + i")}, g;
    if (x < (${CT})0.8) {
        ${CT} numer = 1, denom = alpha, s1 = 1 / alpha, s2 = 1 / (alpha * alpha);
        for (int k = 1; k <= 5; ++k) {
            numer *= -x / k;
            denom += 1;
            s1 += numer / denom;
            s2 += numer / (denom * denom);
        }
        ${CT} xa = pow(x, alpha), pdf = pow(x, alpha - 1) * exp(-x);
        ${CT} dcdf = (log(x) - digamma_pos(alpha)) * xa * s1 - xa * s2;
        g = -dcdf / pdf;
        if (isnan(g)) g = 0;
    } else if (alpha > 8) {
        if (x >= (${CT})0.9 * alpha && x <= (${CT})1.1 * alpha) {
            ${CT} n1 = 1 + 24 * alpha * (1 + 12 * alpha);
            ${CT} n2 = 1440 * alpha * alpha + 6 * x * (53 - 120 * x) - 65 * x * x / alpha
                       + alpha * (107 + 3600 * x);
            g = n1 * n2 / (1244160 * alpha * alpha * alpha * alpha);
        } else {
            ${CT} den = sqrt(8 * alpha), lr = log(x / alpha);
            ${CT} t2 = den / (alpha - x), t3 = pow(x - alpha - alpha * lr, (${CT})-1.5);
            ${CT} t23 = x < alpha ? t2 - t3 : t2 + t3;
            ${CT} t1 = lr * t23 - sqrt(2 / alpha) * (alpha + x) / ((alpha - x) * (alpha - x));
            ${CT} stirling = 1 + 1 / (12 * alpha) * (1 + 1 / (24 * alpha));
            g = -stirling * x * t1 / den;
        }
    } else {
        ${CT} u = log(x / alpha), v = log(alpha);
        const ${CT} c0[8] = {0.16009398, -0.094634809, 0.025146376, -0.0030648343,
                             1, 0.32668115, 0.10406089, 0.0014179084};
        const ${CT} c1[8] = {0.53487893, 0.1298071, 0.065735949, -0.0015649758,
                             0.16639465, 0.020070113, -0.0035938915, -0.00058392623};
        const ${CT} c2[8] = {0.040121004, -0.0065914022, -0.0026286047, -0.0013441777,
                             0.017050642, -0.0021309326, 0.00085092367, -1.5247877e-07};
        ${CT} cv[8];
        for (int k = 0; k < 8; ++k) cv[k] = c0[k] + u * (c1[k] + u * c2[k]);
        ${CT} p = cv[0] + v * (cv[1] + v * (cv[2] + v * cv[3]));
        ${CT} q = cv[4] + v * (cv[5] + v * (cv[6] + v * cv[7]));
        g = exp(p / q);
    }
    ${c.store(dt, "out", "oo + i", "g")};
}

/* Poisson(rate): for rate >= 10 Hormann's transformed rejection (PTRS, 1993), below it the count
   of uniforms whose running product stays above exp(-rate) */
__kernel void poisson(${c.ptr(dt)} out, long oo, ${c.cptr(dt)} a, long ao, long n, ulong seed,
                      ulong offset)
{
    long i = get_global_id(0);
    if (i >= n) return;
    ${CT} lam = ${c.load(dt, "a", "ao + i")}, k = 0;
    ulong ctr = offset + i;
    if (lam == 0) {
        k = 0;
    } else if (isinf(lam)) {
        k = lam;
    } else if (lam < 10) {
        ${CT} lim = exp(-lam), prod = 1;
        /* NUNIF * MAX_TRIES uniforms (128 or more): P(N >= 128) for a rate below 10 is below 1e-80 */
        for (uint s = 0; s < MAX_TRIES; ++s) {
            uint4 r = philox_at(ctr, s + 1, seed);
            int done = 0;
            for (int j = 0; j < NUNIF; ++j) {
                prod *= UNIF_J(r, j);
                if (prod <= lim) { done = 1; break; }
                k += 1;
            }
            if (done) break;
        }
    } else {
        ${CT} slam = sqrt(lam), loglam = log(lam);
        ${CT} b = (${CT})0.931 + (${CT})2.53 * slam, aa = (${CT})-0.059 + (${CT})0.02483 * b;
        ${CT} inva = (${CT})1.1239 + (${CT})1.1328 / (b - (${CT})3.4), vr = (${CT})0.9277 - (${CT})3.6224 / (b - 2);
        k = floor(lam);
        for (uint s = 0; s < MAX_TRIES; ++s) {
            uint4 r = philox_at(ctr, s + 1, seed);
            ${CT} u = unif_open(r.x, r.y) - (${CT})0.5, v = unif_open(r.z, r.w);
            ${CT} us = (${CT})0.5 - fabs(u);
            ${CT} kk = floor((2 * aa / us + b) * u + lam + (${CT})0.43);
            if (us >= (${CT})0.07 && v <= vr) { k = kk; break; }
            if (kk < 0 || (us < (${CT})0.013 && v > us)) continue;
            if (log(v) + log(inva) - log(aa / (us * us) + b) <= -lam + kk * loglam - lgamma(kk + 1)) {
                k = kk;
                break;
            }
        }
    }
    ${c.store(dt, "out", "oo + i", "k")};
}

/* log(k!) - [(k + 1/2) log(k + 1) - (k + 1) + log(2 pi) / 2]: Stirling's tail, for BTRS */
inline ${CT} stirling_tail(${CT} k) {
    /* k < 10 from a table (the series below is not yet accurate there) */
    const ${CT} small[10] = {0.08106146679532733, 0.04134069595540946, 0.027677925684997717,
        0.02079067210376584, 0.01664469118982126, 0.013876128823072875, 0.011896709945893313,
        0.010411265261973668, 0.00925546218270945, 0.008330563433359472};
    if (k < 10) return small[(int)k];
    ${CT} kp = k + 1, z = 1 / (kp * kp);
    return ((${CT})(1.0 / 12) - ((${CT})(1.0 / 360) - (${CT})(1.0 / 1260) * z) * z) / kp;
}

/* Binomial(count, p) of p <= 1/2 (the caller flips p > 1/2): BTRS (Hormann 1993) where
   count * p >= 10, else counting geometric waiting times until they pass count */
__kernel void binomial(${c.ptr(dt)} out, long oo, ${c.cptr(dt)} cnt, long co, ${c.cptr(dt)} pr,
                       long po, long n, ulong seed, ulong offset)
{
    long i = get_global_id(0);
    if (i >= n) return;
    ${CT} m_n = floor(${c.load(dt, "cnt", "co + i")}), p = ${c.load(dt, "pr", "po + i")}, k = 0;
    int flip = p > (${CT})0.5;
    if (flip) p = 1 - p;
    ulong ctr = offset + i;
    if (m_n <= 0 || p <= 0) {
        k = 0;
    } else if (m_n * p < 10) {
        ${CT} lq = log1p(-p), total = 0;
        int done = 0;
        ${CT} c_ = 0;     /* count * p < 10: 128 or more waiting times are never all used */
        for (uint s = 0; s < MAX_TRIES && !done; ++s) {
            uint4 r = philox_at(ctr, s + 1, seed);
            for (int j = 0; j < NUNIF; ++j) {
                total += ceil(log(UNIF_J(r, j)) / lq);
                if (total > m_n) { done = 1; break; }
                c_ += 1;
            }
        }
        k = fmin(c_, m_n);
    } else {
        ${CT} sd = sqrt(m_n * p * (1 - p)), b = (${CT})1.15 + (${CT})2.53 * sd;
        ${CT} aa = (${CT})-0.0873 + (${CT})0.0248 * b + (${CT})0.01 * p, c_ = m_n * p + (${CT})0.5;
        ${CT} vr = (${CT})0.92 - (${CT})4.2 / b, r_ = p / (1 - p), al = ((${CT})2.83 + (${CT})5.1 / b) * sd;
        ${CT} m = floor((m_n + 1) * p);
        /* the terms of the acceptance bound that depend on the mode only */
        ${CT} mode_term = (m + (${CT})0.5) * log((m + 1) / (r_ * (m_n - m + 1)))
            + stirling_tail(m) + stirling_tail(m_n - m);
        k = floor(m_n * p);
        for (uint s = 0; s < MAX_TRIES; ++s) {
            uint4 r = philox_at(ctr, s + 1, seed);
            ${CT} u = unif_open(r.x, r.y) - (${CT})0.5, v = unif_open(r.z, r.w);
            ${CT} us = (${CT})0.5 - fabs(u);
            ${CT} kk = floor((2 * aa / us + b) * u + c_);
            if (kk < 0 || kk > m_n) continue;
            if (us >= (${CT})0.07 && v <= vr) { k = kk; break; }
            /* log(pmf(kk) / pmf(m)) by Stirling's formula and its tail */
            ${CT} lv = log(v * al / (aa / (us * us) + b));
            ${CT} bound = mode_term + (m_n + 1) * log((m_n - m + 1) / (m_n - kk + 1))
                + (kk + (${CT})0.5) * log(r_ * (m_n - kk + 1) / (kk + 1))
                - stirling_tail(kk) - stirling_tail(m_n - kk);
            if (lv <= bound) { k = kk; break; }
        }
    }
    if (flip) k = m_n - k;
    ${c.store(dt, "out", "oo + i", "k")};
}
% endif
