## Direct 2-D convolution for one dtype `dt` (clgrad/kernels/conv.py drives these kernels; 1-D
## convolutions are 2-D ones with a height of 1, transposed ones a few stride-1 ones).
##
## Everything is computed in the compute type T (float for float16 / bfloat16). The host first
## copies the input into a zero-padded buffer `xp` of T (N, C, Hq, Wq) (kernel `pad`) and the
## weight into panels `wp` of T (kernel `pack_w`), so the hot loops read neither padding tests
## nor 16-bit conversions:
##
##   conv_fwd_*   out[n, g*Cog + co, oh, ow] = bias + sum over (ci, kh, kw) of
##                    wp[g][co][ci, kh, kw] * xp[n, g*Cig + ci, oh*sh + kh*dh, ow*sw + kw*dw]
##                an implicit GEMM: each work-item keeps an MR (output channels) x NR = NV * VW
##                (output pixels) block of sums in vector registers, like gemm_packed, but reads
##                its pixel vectors straight from xp: for tap (ci, kh, kw) the NR pixels of a
##                block are NR consecutive elements of xp (stride-1 convolutions) instead of an
##                im2col copy nine times the input's size plus its packed copy.
##                With stride 1 the output rows may be walked "flat": pixel q of a virtual image
##                of width Wq reads xp at q + tap offset, so one block spans row ends; the columns
##                ow >= OW of that virtual image are computed and thrown away (2 of 34 for a
##                3x3 kernel on 32 columns), and a vector across a row end is stored lane by
##                lane. conv.py walks flat only where that computes fewer lanes than walking each
##                row separately (rows of 30 in tiles of 32), as strided convolutions always do.
##   conv_wgrad_* dW[g][co][ci, kh, kw] = sum over (n, oh, ow) of
##                    gv[n, g*Cog + co, oh, ow] * xp[n, g*Cig + ci, oh*sh + kh*dh, ow*sw + kw*dw]
##                each work-item keeps MW (output channels) x TJ (taps) sums, vectors along ow
##                (summed across lanes at the end); lanes past the end of a row are masked, so
##                that an inf in the data never meets a zero. The batch can be split into NC
##                chunks whose partial sums the host adds.
##
## The _1 kernels are for a unit stride along the width (contiguous vector loads), the _s ones
## for any stride. No barriers, no local memory: on PoCL a work-group of these runs its
## work-items one after the other on one core, which then finds the shared input in its cache.
## PoCL does not inline vloadN (a call that spills the accumulators), hence vectors assembled
## from scalar loads (VLOAD), which its compiler turns into vector loads.
<%namespace name="c" file="common.mako"/>
${c.prelude([dt])}
<% T = dt.ct %>
#define T ${T}
#ifndef VW              /* conv.py always sets these; defaults keep the source buildable alone */
#define VW 4
#define NV 1
#define MR 1
#define MW 1
#define TJ 1
#endif
#define VT CAT(T, VW)
#define NR (NV * VW)
% if dt.cl == "ushort" and dt.ct == "float":
#if VW > 1
${c.bf16_vectors("VW", c.attr.operators_only([dt]))}
#endif
% endif
${c.epilogue_macros()}
/* the relu gradient's mask, read at the store: vloadN there, where no accumulator is left to
   spill around its call (PoCL 3.1, Zen 5: the masked 3x3 32 -> 64 convolution on 32x32x32x32
   took 2.47-2.59 ms, 2.65-2.73 with VLOAD's scalar loads, 2.39 unmasked) */
#define EPI_VLOAD(p) CAT(vload, VW)(0, p)
% if T == "double":
#define IVT CAT(long, VW)
% else:
#define IVT CAT(int, VW)
% endif
#if VW == 2
#define LANES (IVT)(0, 1)
#define VLOAD(p, s) ((VT)((p)[0], (p)[s]))
#elif VW == 4
#define LANES (IVT)(0, 1, 2, 3)
#define VLOAD(p, s) ((VT)((p)[0], (p)[s], (p)[2 * (s)], (p)[3 * (s)]))
#elif VW == 8
#define LANES (IVT)(0, 1, 2, 3, 4, 5, 6, 7)
#define VLOAD(p, s) ((VT)((p)[0], (p)[s], (p)[2 * (s)], (p)[3 * (s)], (p)[4 * (s)], \
                          (p)[5 * (s)], (p)[6 * (s)], (p)[7 * (s)]))
#elif VW == 16
#define LANES (IVT)(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15)
#define VLOAD(p, s) ((VT)((p)[0], (p)[s], (p)[2 * (s)], (p)[3 * (s)], (p)[4 * (s)], \
                          (p)[5 * (s)], (p)[6 * (s)], (p)[7 * (s)], (p)[8 * (s)], \
                          (p)[9 * (s)], (p)[10 * (s)], (p)[11 * (s)], (p)[12 * (s)], \
                          (p)[13 * (s)], (p)[14 * (s)], (p)[15 * (s)]))
#endif

/* xp[r, i, j] = x[n, c, i - top, j - left] (0 outside x) for the planes r = n * C + c; one
   work-item per row of xp. x has any strides; top and left may be negative (a crop). */
__kernel void pad(__global T *xp, long plane, ${c.cptr(dt)} x, long xo, long x_sn, long x_sc,
                  long x_sh, long x_sw, int C, int H, int W, int Hq, int Wq, int top, int left,
                  long rows)
{
    const long row = get_global_id(0);
    if (row >= rows) return;
    const long r = row / Hq;
    const int i = row - r * Hq;
    __global T *dst = xp + r * plane + (long)i * Wq;
    const int ih = i - top;
    if (ih < 0 || ih >= H) {
        int j = 0;
#if VW > 1
        for (; j + VW <= Wq; j += VW) STV(T, VW, (VT)(0), 0, dst + j);
#endif
        for (; j < Wq; ++j) dst[j] = (T)0;
        return;
    }
    const long n = r / C;
    const long src = xo + n * x_sn + (r - n * C) * x_sc + ih * x_sh;
    const int j0 = clamp(left, 0, Wq), j1 = clamp(left + W, j0, Wq);
    for (int j = 0; j < j0; ++j) dst[j] = (T)0;
    if (x_sw == 1) {
        int j = j0;
#if VW > 1
        /* whole vectors (unaligned: elements, not vectors, are aligned), then the tail */
        for (; j + VW <= j1; j += VW)
            STV(T, VW, ${c.vload(dt, "(x + src + j - left)", "0", "VW")}, 0, dst + j);
#endif
        for (; j < j1; ++j) dst[j] = ${c.load(dt, "x", "src + j - left")};
    } else
        for (int j = j0; j < j1; ++j) dst[j] = ${c.load(dt, "x", "src + (j - left) * x_sw")};
    for (int j = j1; j < Wq; ++j) dst[j] = (T)0;
}

/* wp[g][mb][k][i] = weight (g, mb * R + i, k = (ci * KH + kh) * KW + kw), 0 past Cog, for
   R output channels per panel. The weight is read through strides (negative ones flip it). */
__kernel void pack_w(__global T *wp, ${c.cptr(dt)} w, long wo, long w_sg, long w_sco, long w_sci,
                     long w_skh, long w_skw, int Cog, int Cig, int KH, int KW, int MB, int R,
                     long total)
{
    /* one work-item per (g, output channel co < MB * R), walking its taps k in order: the reads
       follow the weight's layout and the divisions are per channel, not per element (one
       work-item per element, with 64-bit divisions, took 71 us for a 64 x 32 x 3 x 3 weight on
       PoCL; this 8) */
    const int gco = get_global_id(0);
    const int K = Cig * KH * KW, CB = MB * R;
    if ((long)gco * K >= total) return;
    const int co = gco % CB, g = gco / CB, mb = co / R, i = co - mb * R;
    __global T *dst = wp + ((long)g * MB + mb) * K * R + i;
    if (co >= Cog) {
        for (int k = 0; k < K; ++k) dst[k * R] = (T)0;
        return;
    }
    const long base = wo + g * w_sg + co * w_sco;
    int k = 0;
    for (int ci = 0; ci < Cig; ++ci)
        for (int kh = 0; kh < KH; ++kh)
            for (int kw = 0; kw < KW; ++kw, ++k)
                dst[k * R] = ${c.load(dt, "w", "base + ci * w_sci + kh * w_skh + kw * w_skw")};
}

% for sfx, LS in (("1", "1"), ("s", "sw")):
/* Work-item (tile, mb, n * G + g). Tile t covers lanes q0 .. q0 + NR - 1 of virtual row
   r = t / tiles of length VL; lane q is output pixel (oh, ow) = (r + q / wrap, q % wrap) and
   reads xp at origin + r * rowstep + q * sw + tap offset. */
__kernel void conv_fwd_${sfx}(${c.ptr(dt)} out, long oo, long o_sn, long o_sc, long o_sh, long o_sw,
                        __global const T *xp, long xo, long plane, int Wq,
                        __global const T *wp, ${c.cptr(dt)} bias, long bo, long bs, int has_bias,
                        int Cig, int Cog, int G, int KH, int KW, int dh, int dw, int OH, int OW,
                        int VL, int tiles, int ntiles, int wrap, long rowstep, int sw,
                        int MB${c.epilogue_args()})
{
    const int t = get_global_id(0), mb = get_global_id(1), ng = get_global_id(2);
    const int r = t / tiles, q0 = (t - r * tiles) * NR;
    if (t >= ntiles || mb >= MB) return;
    const int n = ng / G, g = ng - n * G;
    __global const T *x0 = xp + xo + (long)ng * Cig * plane + r * rowstep + (long)q0 * ${LS};
    __global const T *w = wp + ((long)g * MB + mb) * (Cig * KH * KW) * MR;
    VT acc[MR][NV];
#pragma unroll
    for (int i = 0; i < MR; ++i)
#pragma unroll
        for (int j = 0; j < NV; ++j) acc[i][j] = (VT)(0);
    for (int ci = 0; ci < Cig; ++ci) {
        for (int kh = 0; kh < KH; ++kh) {
            __global const T *xr = x0 + ci * plane + (long)kh * dh * Wq;
            for (int kw = 0; kw < KW; ++kw) {
                VT bv[NV];
#pragma unroll
                for (int j = 0; j < NV; ++j) bv[j] = VLOAD(xr + j * VW * ${LS}, ${LS});
#pragma unroll
                for (int i = 0; i < MR; ++i) {
                    const VT av = (VT)(w[i]);
#pragma unroll
                    for (int j = 0; j < NV; ++j) acc[i][j] = av * bv[j] + acc[i][j];
                }
                w += MR;
                xr += dw;
            }
        }
    }
    T b[MR];
    for (int i = 0; i < MR; ++i) {
        const int co = min(mb * MR + i, Cog - 1);
        b[i] = has_bias ? ${c.load(dt, "bias", "bo + ((long)g * Cog + co) * bs")} : (T)0;
    }
    const long obase = oo + n * o_sn + ((long)g * Cog + mb * MR) * o_sc;
    const int rows = min(MR, Cog - mb * MR);
    /* the pixel of lane q0, then of the next lanes by counting (no division per lane) */
    int oh = r + q0 / wrap, ow = q0 % wrap;
#pragma unroll
    for (int j = 0; j < NV; ++j) {
        union { VT v; T s[VW]; } u[MR];
#pragma unroll
        for (int i = 0; i < MR; ++i) u[i].v = acc[i][j];
        if (o_sw == 1 && ow + VW <= OW && oh < OH && q0 + (j + 1) * VW <= VL) {
            /* VW pixels of one row: plain consecutive stores, which the compiler merges (16-bit
               floats: converted as one vector) */
            for (int i = 0; i < rows; ++i) {
                const long o = obase + i * o_sc + oh * o_sh + ow;
% if dt.cl == dt.ct:
                union { VT v; T s[VW]; } r_;
                r_.v = EPIV(u[i].v + (VT)(b[i]), o);
#pragma unroll
                for (int e = 0; e < VW; ++e)
                    ${c.store(dt, "out", "o + e", "r_.s[e]")};
% else:
                ${c.vstore(dt, "out + o", "0", "EPIV(u[i].v + (VT)(b[i]), o)", "VW")};
% endif
            }
            ow += VW;
            while (ow >= wrap) { ow -= wrap; ++oh; }
            continue;
        }
        for (int e = 0; e < VW; ++e) {
            if (q0 + j * VW + e < VL && oh < OH && ow < OW) {
                const long o = obase + oh * o_sh + ow * o_sw;
                for (int i = 0; i < rows; ++i)
                    ${c.store(dt, "out", "o + i * o_sc", "EPI(u[i].s[e] + b[i], o + i * o_sc)")};
            }
            if (++ow == wrap) { ow = 0; ++oh; }
        }
    }
}

## gv is in the compute type, or (the _st kernels of the 16-bit programs) in the storage type: a
## gradient whose rows are whole vectors, read and converted as it is rather than through a
## converted copy (the 16-bit programs' other kernels keep their text, and the others' sources
## do not change)
% for st in ((False, True) if dt.cl != dt.ct else (False,)):
/* Work-item (jb, cb, chunk * G + g): taps jb * TJ .. + TJ - 1 of output channels
   cb * MW .. + MW - 1, summed over the batch chunk; writes part[chunk][g][co][tap]. */
<%
    name = f"conv_wgrad_{sfx}_st" if st else f"conv_wgrad_{sfx}"
    gptr = f"__global const {dt.cl} *" if st else "__global const T *"
%>\
__kernel void ${name}(__global T *part, ${gptr}gv, long go, long g_sn,
                          long g_sc, long g_sh, __global const T *xp, long plane, int Wq,
                          int Cig, int Cog, int G, int KH, int KW, int dh, int dw, int OH, int OW,
                          long rowstep, int sw, int N, int NC)
{
    const int jb = get_global_id(0), cb = get_global_id(1), z = get_global_id(2);
    const int K = Cig * KH * KW;
    if (jb * TJ >= K || cb * MW >= Cog) return;
    const int g = z % G, chunk = z / G;
    const int n0 = (long)chunk * N / NC, n1 = (long)(chunk + 1) * N / NC;
    /* A pointer per gradient channel and per tap, walked row by row; within a row one index
       (ow) addresses them all, so that each load is one instruction. (A flat loop over (n, oh,
       vector) with offsets from two bases ran at 100-120 GFLOP/s on PoCL, 3x3 conv 32 -> 64 on
       32 x 32 x 32 x 32: the compiler kept the offsets on the stack and reloaded one for every
       load. This: 7.1-7.7 ms, ~160 GFLOP/s.) */
    ${gptr}gp[MW];
    __global const T *xq[TJ];
    const long gbase = go + (long)n0 * g_sn + (long)g * Cog * g_sc;
    const long xbase = ((long)n0 * G + g) * Cig * plane;
#pragma unroll
    for (int i = 0; i < MW; ++i) gp[i] = gv + gbase + min(cb * MW + i, Cog - 1) * g_sc;
#pragma unroll
    for (int t = 0; t < TJ; ++t) {
        const int j = min(jb * TJ + t, K - 1);
        const int ci = j / (KH * KW), kk = j - ci * KH * KW, kh = kk / KW, kw = kk - kh * KW;
        xq[t] = xp + xbase + ci * plane + (long)kh * dh * Wq + kw * dw;
    }
    VT acc[MW][TJ];
#pragma unroll
    for (int i = 0; i < MW; ++i)
#pragma unroll
        for (int t = 0; t < TJ; ++t) acc[i][t] = (VT)(0);
    const int full = OW / VW * VW;
    const IVT tail = LANES < (IVT)(OW - full);
    const long gnext = g_sn - (long)OH * g_sh, xnext = (long)G * Cig * plane - OH * rowstep;
    const long rows = (long)(n1 - n0) * OH;
    int oh = 0;
    for (long row = 0; row < rows; ++row) {
% for masked in ((False,) if st else (False, True)):
        ## the row's whole vectors, then its last, partial one with the lanes past OW masked (none
        ## in the _st kernels, whose rows are whole vectors)
<% ow = "full" if masked else "ow" %>\
        ${"if (full < OW) {" if masked else "for (int ow = 0; ow < full; ow += VW) {"}
            VT gvec[MW];
#pragma unroll
% if st:
            for (int i = 0; i < MW; ++i) gvec[i] = ${c.vload(dt, f"(gp[i] + {ow})", "0", "VW")};
% else:
            for (int i = 0; i < MW; ++i) gvec[i] = VLOAD(gp[i] + ${ow}, 1);
% endif
#pragma unroll
            for (int t = 0; t < TJ; ++t) {
<% xv = f"VLOAD(xq[t] + {ow} * {LS}, {LS})" %>\
                const VT xv = ${f"select((VT)(0), {xv}, tail)" if masked else xv};
#pragma unroll
                for (int i = 0; i < MW; ++i) acc[i][t] = gvec[i] * xv + acc[i][t];
            }
        }
% endfor
        long gs = g_sh, xs = rowstep;
        if (++oh == OH) { oh = 0; gs += gnext; xs += xnext; }
#pragma unroll
        for (int i = 0; i < MW; ++i) gp[i] += gs;
#pragma unroll
        for (int t = 0; t < TJ; ++t) xq[t] += xs;
    }
    /* unrolled, with constant indices: a loop that indexed acc at run time would keep the
       sums in memory, stored at every multiply-add of the main loop */
#pragma unroll
    for (int i = 0; i < MW; ++i) {
#pragma unroll
        for (int t = 0; t < TJ; ++t) {
            const int co = cb * MW + i, j = jb * TJ + t;
            if (co < Cog && j < K) {
                union { VT v; T s[VW]; } u;
                u.v = acc[i][t];
                T sum = 0;
                for (int e = 0; e < VW; ++e) sum += u.s[e];
                part[(((long)chunk * G + g) * Cog + co) * K + j] = sum;
            }
        }
    }
}
% endfor
% endfor
