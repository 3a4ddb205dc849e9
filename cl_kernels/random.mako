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
