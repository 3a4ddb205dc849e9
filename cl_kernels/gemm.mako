## Matrix products for one dtype `dt` (clgrad/kernels/gemm.py drives them):
##
##     C[b] = alpha * A[b] @ B[b]  (+ beta * D[b])       A: M x K, B: K x N, C and D: M x N
##
## accumulated in the compute type (float for float16 and bfloat16). A, B and D are read through
## element strides (batch, row, column), so transposed and broadcast views need no copy; C is a
## fresh contiguous tensor (row stride ldc, batch stride c_sb). D is the `input` of addmm and
## friends; it is not read when beta == 0 (torch ignores it then, NaNs included).
##
## Three kernels; which of the last two is built is chosen by the build options of the program
## (the tuned or per-vendor configuration, see linalg.py):
##   gemm_small   one work-item per element of C, any strides: small products, matrix-vector.
##                Rows of A and columns of B that are contiguous along K are read with
##                vectors (partial sums VEC wide).
##   gemm_packed  (defined when MR is) for CPUs. pack_a / pack_b first copy A and B into panels,
##                MR rows of A (resp. NR = NV * VW columns of B) interleaved along K and zero
##                padded, so that the inner loop reads both sequentially whatever the strides of
##                the input. Each work-item then keeps an MR x NR block of C in MR * NV vector
##                registers. Measured on PoCL: the same kernel reading unpacked 2048-wide
##                matrices is about 2.5x slower (power-of-two strides thrash the caches) while
##                packing costs a few per cent; no local memory or barriers are needed.
##   gemm_tiled   (defined when TM is) for GPUs. A work-group of (TN / WN) x (TM / WM) work-items
##                stages TM x TK tiles of A and TK x TN tiles of B in local memory, reading along
##                whichever stride is 1 so that neighbouring work-items read neighbouring words;
##                each work-item accumulates WM x WN elements of C in registers.
##
## PoCL does not inline its built-ins here: fma(), vloadN() and vstoreN() are function calls that
## spill every accumulator around them. Hence `a * b + c` (contracted to an FMA instruction by
## the compiler) and vectors assembled from scalar loads in the hot loops.
<%namespace name="c" file="common.mako"/>
<%namespace name="cell" file="rnn.mako"/>
${c.prelude([dt])}
<% T = dt.ct %>
#define T ${T}
#ifdef VW
#if VW == 1
#define VT T
#define VLOAD(p) (*(p))
#else
#define VT CAT(T, VW)
#if VW == 2
#define VLOAD(p) ((VT)((p)[0], (p)[1]))
#elif VW == 4
#define VLOAD(p) ((VT)((p)[0], (p)[1], (p)[2], (p)[3]))
#elif VW == 8
#define VLOAD(p) ((VT)((p)[0], (p)[1], (p)[2], (p)[3], (p)[4], (p)[5], (p)[6], (p)[7]))
#elif VW == 16
#define VLOAD(p) ((VT)((p)[0], (p)[1], (p)[2], (p)[3], (p)[4], (p)[5], (p)[6], (p)[7], \
                       (p)[8], (p)[9], (p)[10], (p)[11], (p)[12], (p)[13], (p)[14], (p)[15]))
#endif
#endif
/* VW elements from v at p (compute-type storage): scalar stores the compiler merges */
#define VSTORE(p_, x_) do { union { VT v; T s[VW]; } u_; u_.v = (x_); \
                            for (int e_ = 0; e_ < VW; ++e_) (p_)[e_] = u_.s[e_]; } while (0)
#endif

## a vector of VW elements of C's or D's storage type at pointer p, in the compute type, and its
## store (16-bit floats converted as whole vectors)
<%def name="vload_c(p)">\
% if dt.cl == dt.ct:
VLOAD(${p})\
% else:
${c.vload(dt, p, "0", "VW")}\
% endif
</%def>
<%def name="vstore_c(p, v)">\
% if dt.cl == dt.ct:
VSTORE(${p}, ${v})\
% else:
${c.vstore(dt, p, "0", v, "VW")}\
% endif
</%def>
% if dt.cl == "ushort" and dt.ct == "float":
#if defined(VW) && VW > 1
${c.bf16_vectors("VW", c.attr.operators_only([dt]))}
#endif
% endif

## arguments every product kernel takes: the output, the added matrix, sizes and scales
<%def name="out_args()">${c.ptr(dt)} C, long co, long c_sb, long ldc,</%def>
<%def name="tail_args()">
    ${c.cptr(dt)} D, long dof, long d_sb, long d_sm, long d_sn,
    int M, int N, int K, ${T} alpha, ${T} beta${c.epilogue_args()}</%def>

${c.epilogue_macros()}
#define EPI_VLOAD(p) VLOAD(p)

## store element (m, n) of batch b of C from accumulator value `acc`
<%def name="epilogue(acc)">{
        ${T} v_ = alpha * (${acc});
        if (beta != 0) v_ += beta * ${c.load(dt, "D", "dof + b * d_sb + m * d_sm + n * d_sn")};
        const long cn_ = co + b * c_sb + m * ldc + n;
        ${c.store(dt, "C", "cn_", "EPI(v_, cn_)")};
    }</%def>

## gemm_small's vectors: VEC (VEC8 for 8-byte types) elements, loaded one by one
<% W = c.attr.width(dt) %>
#define SVT CAT(${T}, ${W})
% for w in (2, 4, 8, 16):
#if ${W} == ${w}
#define SVLOAD(p, i) ((SVT)(${", ".join(capture(c.load, dt, "p", f"(i) + {e}") for e in range(w))}))
#endif
% endfor

__kernel void gemm_small(${out_args()}
    ${c.cptr(dt)} A, long ao, long a_sb, long a_sm, long a_sk,
    ${c.cptr(dt)} B, long bo, long b_sb, long b_sk, long b_sn,${tail_args()})
{
    const long n = get_global_id(0), m = get_global_id(1), b = get_global_id(2);
    if (n >= N || m >= M) return;
    const long a0 = ao + b * a_sb + m * a_sm, b0 = bo + b * b_sb + n * b_sn;
    ${T} acc = 0;
    long k = 0;
    if (a_sk == 1 && b_sk == 1) {
        /* both rows contiguous: ${W}-wide partial sums */
        SVT s = 0;
        for (; k + ${W} <= K; k += ${W}) s = SVLOAD(A, a0 + k) * SVLOAD(B, b0 + k) + s;
        union { SVT v; ${T} e[${W}]; } u;
        u.v = s;
        for (int i = 0; i < ${W}; ++i) acc += u.e[i];
    }
    for (; k < K; ++k)
        acc = ${c.load(dt, "A", "a0 + k * a_sk")} * ${c.load(dt, "B", "b0 + k * b_sk")} + acc;
    ${epilogue("acc")}
}

#ifdef MR
/* P[b][mb][k][i] = A[b][mb * MR + i][k] (0 past the last row), in the compute type. A work-item
   packs PACK_K values of k of one block of rows, neighbouring work-items neighbouring blocks:
   a work-group reads whole stretches of A's columns. One work-item per k, as before, read a
   column-major A with a power-of-two stride (a layer's gradient transposed) one row per
   work-item, every line in one cache set: PoCL packed a 1024 x 2048 one in 605-928 us, and
   237-469 this way (768 x 2048: 216-222 and 168-285) */
#define PACK_K 16
__kernel void pack_a(__global ${T} *P, long p_sb,
                     ${c.cptr(dt)} A, long ao, long a_sb, long a_sm, long a_sk, int M, int K)
{
    const int mb = get_global_id(0), k0 = get_global_id(1) * PACK_K;
    const long b = get_global_id(2);
    if (mb * MR >= M || k0 >= K) return;
    const int rows = min(MR, M - mb * MR), k1 = min(k0 + PACK_K, K);
    __global ${T} *dst = P + b * p_sb + (long)mb * K * MR;
    const long src = ao + b * a_sb + (long)mb * MR * a_sm;
    for (int k = k0; k < k1; ++k)
        for (int i = 0; i < MR; ++i)
            dst[k * MR + i] = i < rows ? ${c.load(dt, "A", "src + k * a_sk + i * a_sm")} : (${T})0;
}

/* pack_a for an A whose rows run along k (a_sk < a_sm: row-major, a layer's input): a work-item
   packs PACK_KA values of k of one block of rows, each row's in one stretch; neighbouring
   work-items neighbouring stretches. pack_a's walk, a work-group across blocks of rows, reads
   MR rows one column at a time and PoCL gathers it across the group. PoCL 3.0 (2-core Xeon),
   float32, best of 20 interleaved, two runs, us, pack_a / this: 256 x 784 196 / 102 and
   324 / 187, 1024 x 512 882 / 372 and 636 / 332, 2048 x 1024 3587 / 1335 and 2654 / 1157.
   A column-major A keeps pack_a (1024 x 2048: 2067 us against 2900-3300 read this way). */
#define PACK_KA 32
__kernel void pack_a_rows(__global ${T} *P, long p_sb,
                          ${c.cptr(dt)} A, long ao, long a_sb, long a_sm, long a_sk, int M, int K)
{
    const int k0 = get_global_id(0) * PACK_KA, mb = get_global_id(1);
    const long b = get_global_id(2);
    if (k0 >= K) return;
    const int rows = min(MR, M - mb * MR), k1 = min(k0 + PACK_KA, K);
    __global ${T} *dst = P + b * p_sb + (long)mb * K * MR;
    const long src = ao + b * a_sb + (long)mb * MR * a_sm;
    if (rows == MR) {
        for (int i = 0; i < MR; ++i)
            for (int k = k0; k < k1; ++k)
                dst[k * MR + i] = ${c.load(dt, "A", "src + k * a_sk + i * a_sm")};
    } else {
        for (int i = 0; i < MR; ++i)
            for (int k = k0; k < k1; ++k)
                dst[k * MR + i] = i < rows ? ${c.load(dt, "A", "src + k * a_sk + i * a_sm")} : (${T})0;
    }
}

/* P[b][nb][k][j] = B[b][k][nb * NR + j] (0 past the last column), in the compute type. A
   work-item packs PACK_KB values of k of one panel (PACK_KB * NR contiguous values of P), going
   down B's columns when they are contiguous along k (a Linear weight in forward, W^T) and
   along its rows otherwise; full panels without the test for the last column. One work-item
   per k, as before, read NR columns for NR values. PoCL 3.0 (2-core Xeon), float32, best of 20
   interleaved, two runs, us, before / after: W^T of a 784 x 512 weight 372 / 365 and
   322 / 212, of 512 x 512 428 / 323 and 408 / 265; a contiguous 512 x 512 B 184 / 87 and
   136 / 104, 256 x 784 107 / 70 and 99 / 80. Intel's CPU runtime: W^T the same (175 / 183,
   283 / 256), contiguous 512 x 512 119 / 67 and 224 / 111. */
#define PACK_KB 32
__kernel void pack_b(__global ${T} *P, long p_sb,
                     ${c.cptr(dt)} B, long bo, long b_sb, long b_sk, long b_sn, int K, int N)
{
    const int k0 = get_global_id(0) * PACK_KB, nb = get_global_id(1);
    const long b = get_global_id(2);
    if (k0 >= K) return;
    const int cols = min(NR, N - nb * NR), k1 = min(k0 + PACK_KB, K);
    __global ${T} *dst = P + b * p_sb + (long)nb * K * NR;
    const long src = bo + b * b_sb + (long)nb * NR * b_sn;
    if (cols == NR && b_sk < b_sn) {
        for (int j = 0; j < NR; ++j)
            for (int k = k0; k < k1; ++k)
                dst[k * NR + j] = ${c.load(dt, "B", "src + k * b_sk + j * b_sn")};
    } else if (cols == NR) {
        for (int k = k0; k < k1; ++k)
            for (int j = 0; j < NR; ++j)
                dst[k * NR + j] = ${c.load(dt, "B", "src + k * b_sk + j * b_sn")};
    } else {
        for (int k = k0; k < k1; ++k)
            for (int j = 0; j < NR; ++j)
                dst[k * NR + j] = j < cols ? ${c.load(dt, "B", "src + k * b_sk + j * b_sn")} : (${T})0;
    }
}

#ifdef VW
## tiled: the body of a loop over the blocks of C (the multi-step kernels below), which gives
## nb and mb, instead of one block per work-item
<%def name="packed_body(direct_a, store=None, tiled=False)">
{
% if tiled:
    const long b = 0;
    const int m0 = mb * MR, n0 = nb * NR;
    if (m0 >= M || n0 >= N) continue;
% else:
    const int nb = get_global_id(0), mb = get_global_id(1);
    const long b = get_global_id(2);
    const int m0 = mb * MR, n0 = nb * NR;
    if (m0 >= M || n0 >= N) return;
% endif
% if direct_a:
    long arow[MR];                      /* rows past M read the last one; never stored */
#pragma unroll
    for (int i = 0; i < MR; ++i) arow[i] = ao + b * a_sb + (long)min(m0 + i, M - 1) * a_sm;
% else:
    __global const ${T} *pa = PA + b * pa_sb + (long)mb * K * MR;
% endif
    __global const ${T} *pb = PB + b * pb_sb + (long)nb * K * NR;
    VT acc[MR][NV];
#pragma unroll
    for (int i = 0; i < MR; ++i)
#pragma unroll
        for (int j = 0; j < NV; ++j) acc[i][j] = (VT)(0);
    for (int k = 0; k < K; ++k) {
        VT bv[NV];
#pragma unroll
        for (int j = 0; j < NV; ++j) bv[j] = VLOAD(pb + j * VW);
#pragma unroll
        for (int i = 0; i < MR; ++i) {
% if direct_a:
            const VT av = (VT)(${c.load(dt, "A", "arow[i] + k * a_sk")});
% else:
            const VT av = (VT)(pa[i]);
% endif
#pragma unroll
            for (int j = 0; j < NV; ++j) acc[i][j] = av * bv[j] + acc[i][j];
        }
% if not direct_a:
        pa += MR;
% endif
        pb += NR;
    }
    ${(store or packed_store)()}
}
</%def>
__kernel void gemm_packed(${out_args()}
    __global const ${T} *PA, long pa_sb, __global const ${T} *PB, long pb_sb,${tail_args()})
${packed_body(False)}

/* gemm_packed reading A where it lies (any strides) instead of from a packed copy: for a few
   rows of A (a recurrent layer's state, step by step) the pack was a launch as long as the
   product */
__kernel void gemm_packed_da(${out_args()}
    ${c.cptr(dt)} A, long ao, long a_sb, long a_sm, long a_sk,
    __global const ${T} *PB, long pb_sb,${tail_args()})
${packed_body(True)}

## The body of a kernel that runs steps s = 0 .. S - 1 of a range (the *_steps_* kernels below)
## in one work-group: `strides` declares what the steps move by, the caller's body each step's
## operands (the names `store`'s packed_body reads); the work-items share the step's blocks of
## the product, and a barrier between steps makes a step's results visible to the next.
<%def name="step_range(store, strides)">
{
    const long a_sb = 0, a_sk = 1, pb_sb = 0, a_sm = K;
    const int nbs = (N + NR - 1) / NR, blocks = nbs * ((M + MR - 1) / MR);
    ${strides}
    for (int s = 0; s < S; ++s) {
${caller.body()}
        for (int blk = get_local_id(0); blk < blocks; blk += get_local_size(0)) {
            const int nb = blk % nbs, mb = blk / nbs;
${packed_body(True, store, tiled=True)}
        }
        barrier(CLK_GLOBAL_MEM_FENCE);
    }
}
</%def>
#if defined(LSTM_STEPS) || defined(GRU_STEPS)
/* A recurrent layer's steps with the cell in the GEMM's epilogue (clgrad/kernels/rnn.py,
   driven by clgrad/ops/rnn_cell.py): one launch per step instead of a product and a cell
   kernel. Built with NV == the gates (LSTM 4, GRU 3) and H % VW == 0.
   Forward, step t: the product h_{t-1} W_hh^T. The NV vectors of a work-item are the gates of
   VW neighbouring hidden units (pack_b_gates orders W_hh^T's columns so), so the cell runs on
   its accumulators: writes h_t (LSTM: and c_t) and what backward reads (act).
   Backward, at step t: dh_{t-1} = dgates_t W_hh (GRU: plus z * dh_t), whose VW-unit vectors go
   straight into the cell's backward of step t-1, so dh_{t-1} is never stored.
   The arithmetic is the cell kernels' own (rnn.mako's cell defs) on the product's values. */
#define ONE ((T)1)
#if VW == 1
#define VI int
#else
#define VI CAT(int, VW)
#endif
${cell.cell_math("VT", "VI", "vw")}

/* P[nb][k][g * VW + e] = B[k][g * H + nb * VW + e]: the gates of VW units side by side */
__kernel void pack_b_gates(__global T *P, ${c.cptr(dt)} B, long bo, long b_sk, long b_sn,
                           int K, int H)
{
    const int k = get_global_id(0), nb = get_global_id(1);
    if (k >= K) return;
    __global T *dst = P + ((long)nb * K + k) * NR;
    for (int g = 0; g < NV; ++g)
        for (int e = 0; e < VW; ++e)
            dst[g * VW + e] = B[bo + k * b_sk + (long)(g * H + nb * VW + e) * b_sn];
}
#endif

#ifdef LSTM_STEPS
/* LSTM: gates i, f, g, o; the step's input projection (both biases) is added in the epilogue */
<%def name="lstm_fwd_store()">
    const int u = nb * VW, H = N / 4;
#pragma unroll
    for (int i = 0; i < MR; ++i) {
        const long m = m0 + i;
        if (m >= M) break;
        __global const T *pg = D + dof + m * N + u;     /* proj_t: both biases, x W_ih^T */
        __global T *pa = ACT + ao2 + m * N + u;
<%
    out = {"c": "CN + cno + m * H + u", "h": "C + co + m * H + u",
           **{f"act{k}": f"pa + {k} * H" for k in range(4)}}
%>
${cell.lstm_fwd("VT", "vw", lambda k: f"acc[i][{k}] + VLOAD(pg + {k} * H)", "VLOAD(CP + cpo + m * H + u)",
                lambda slot, v: f"VSTORE({out[slot]}, {v})")}
    }
</%def>
<%def name="lstm_bwd_store()">
    const int H = N;
    /* continue, not break, past the last row and unit: with a break, PoCL 3.1 did not unroll
       these loops in the multi-step kernel ("loop not unrolled" in the build log) */
#pragma unroll
    for (int i = 0; i < MR; ++i) {
        const long m = m0 + i;
        if (m >= M) continue;
#pragma unroll
        for (int j = 0; j < NV; ++j) {
            if (n0 + j * VW >= N) continue;          /* H % VW == 0, not H % NR */
            const long e = m * H + n0 + j * VW, r = m * 4 * H + n0 + j * VW;
            __global const T *pa = ACT + ao2 + r;
            __global T *pd = DG + dgo + r;
<% out = {"dcp": "DCP + dcpo + e", **{f"dg{k}": f"pd + {k} * H" for k in range(4)}} %>
${cell.lstm_bwd("VT", "vw", lambda k: f"VLOAD(pa + {k} * H)", "VLOAD(CN + cno + e)",
                "VLOAD(CP + cpo + e)",
                [(None, "acc[i][j]"), ("has_dout", "VLOAD(DOUT + douto + e)")],
                (None, "VLOAD(DC + dco + e)"), lambda slot, v: f"VSTORE({out[slot]}, {v})")}
        }
    }
</%def>
/* Forward step: A = h_{t-1} [M = batch, K = H], D = proj_t [M, N = 4H], C = h_t, CP / CN the
   cell state before and after, ACT the activated gates [M, 4H]. All rows contiguous. */
__kernel void lstm_step_fwd(__global T *C, long co, ${c.cptr(dt)} A, long ao, long a_sm,
    __global const T *PB, ${c.cptr(dt)} D, long dof, ${c.cptr(dt)} CP, long cpo,
    __global T *CN, long cno, __global T *ACT, long ao2, int M, int N, int K)
{
    const long a_sb = 0, a_sk = 1, pb_sb = 0;
${packed_body(True, lstm_fwd_store)}
}

/* The forward steps s = 0 .. S - 1 of a range in one launch of one work-group (PoCL's CPU
   devices, where a chain of small kernels runs on one core anyway: the range saves S - 1
   launches). Step s is lstm_step_fwd on h_{s-1} (H0 at h0o for s = 0, else the step before in
   C) and c_{s-1} (C0 at c0o, else the step before in CN); C, CN, D and ACT move a step's rows
   each step, on in time (dir 1) or back (-1, a reverse layer). The work-items share the step's
   blocks of C; a barrier between steps makes the step's h and c visible to the next. */
__kernel void lstm_steps_fwd(__global T *C, long co0, ${c.cptr(dt)} H0, long h0o,
    __global const T *PB, ${c.cptr(dt)} D, long dof0, ${c.cptr(dt)} C0, long c0o,
    __global T *CN, long cno0, __global T *ACT, long ao20, int M, int N, int K, int S, int dir)
<%call expr="step_range(lstm_fwd_store, 'const long hstep = (long)dir * M * K, gstep = (long)dir * M * N;')">
        const long co = co0 + s * hstep, cno = cno0 + s * hstep;
        const long dof = dof0 + s * gstep, ao2 = ao20 + s * gstep;
        __global const T *A = s ? C : H0;
        __global const T *CP = s ? CN : C0;
        const long ao = s ? co - hstep : h0o, cpo = s ? cno - hstep : c0o;
</%call>

/* Backward at step t: A = dgates_t [M, K = 4H], PB = W_hh [4H, N = H] packed; the cell's
   backward of step t-1 from the product (dh_{t-1}), DOUT (the output's gradient, if has_dout)
   and DC (dc_{t-1}); ACT, CP and CN are step t-1's activated gates and cell states before and
   after. Writes DG = dgates_{t-1} and DCP = dc_{t-2}. */
__kernel void lstm_step_bwd(${c.cptr(dt)} A, long ao, long a_sm, __global const T *PB,
    ${c.cptr(dt)} DOUT, long douto, int has_dout, ${c.cptr(dt)} DC, long dco,
    ${c.cptr(dt)} ACT, long ao2, ${c.cptr(dt)} CP, long cpo, ${c.cptr(dt)} CN, long cno,
    __global T *DG, long dgo, __global T *DCP, long dcpo, int M, int N, int K)
{
    const long a_sb = 0, a_sk = 1, pb_sb = 0;
${packed_body(True, lstm_bwd_store)}
}

/* The backward steps s = 0 .. S - 1 of a range in one launch of one work-group (as
   lstm_steps_fwd), against the forward's order: step s is lstm_step_bwd with A = dgates of the
   step run after it (DG a step's rows on in the forward's direction dir, for s = 0 too), DG,
   ACT, CN and DOUT a step's rows back each step; CP is CN's step run before, or C0 (at c0o) at
   step s_c0 (the forward's first). dc comes from DC0 at s = 0, then from DCP, which each
   work-item reads and rewrites in place (its own elements only). */
__kernel void lstm_steps_bwd(__global T *DG, long dgo0, __global const T *PB,
    ${c.cptr(dt)} DOUT, long douto0, int has_dout, ${c.cptr(dt)} DC0, long dco0,
    ${c.cptr(dt)} ACT, long ao20, ${c.cptr(dt)} C0, long c0o, int s_c0,
    ${c.cptr(dt)} CN, long cno0, __global T *DCP, long dcpo, int M, int N, int K, int S, int dir)
<%call expr="step_range(lstm_bwd_store, 'const long gstep = (long)dir * M * K, hstep = (long)dir * M * N;')">
        const long dgo = dgo0 - s * gstep, ao2 = ao20 - s * gstep;
        const long cno = cno0 - s * hstep, douto = douto0 - s * hstep;
        __global const T *A = DG;
        const long ao = dgo + gstep;
        __global const T *CP = s == s_c0 ? C0 : CN;
        const long cpo = s == s_c0 ? c0o : cno - hstep;
        __global const T *DC = s ? DCP : DC0;
        const long dco = s ? dcpo : dco0;
</%call>
#endif

#ifdef GRU_STEPS
/* GRU: gates r, z, n; b_hh stays apart from the input projection (n = tanh(x_n + r * (W_hn h +
   b_hn))), added to the product as the unfused GEMM adds it */
<%def name="gru_fwd_store()">
    const int u = nb * VW, H = N / 3;
#pragma unroll
    for (int i = 0; i < MR; ++i) {
        const long m = m0 + i;
        if (m >= M) break;
        VT ghr = acc[i][0], ghz = acc[i][1], ghn = acc[i][2];
        if (has_b) {
            ghr += VLOAD(BH + bho + u);
            ghz += VLOAD(BH + bho + H + u);
            ghn += VLOAD(BH + bho + 2 * H + u);
        }
        __global const T *px = X + xo + m * N + u;
        __global T *pa = ACT + ao2 + m * 4 * H + u;
<% out = {"h": "C + co + m * H + u", **{f"act{k}": f"pa + {k} * H" for k in range(4)}} %>
${cell.gru_fwd("VT", "vw", lambda k: f"VLOAD(px + {k} * H)", lambda k: ("ghr", "ghz", "ghn")[k],
               "VLOAD(A + ao + m * a_sm + u)", lambda slot, v: f"VSTORE({out[slot]}, {v})")}
    }
</%def>
<%def name="gru_bwd_store()">
    const int H = N;
#pragma unroll
    for (int i = 0; i < MR; ++i) {
        const long m = m0 + i;
        if (m >= M) continue;                       /* continue: see lstm_bwd_store */
#pragma unroll
        for (int j = 0; j < NV; ++j) {
            if (n0 + j * VW >= N) continue;          /* H % VW == 0, not H % NR */
            const long e = m * H + n0 + j * VW, r = m * 3 * H + n0 + j * VW,
                       a = m * 4 * H + n0 + j * VW;
            __global const T *pa = ACT + ao2 + a;
<%
    out = {"dhp": "DHP + dhpo + e", **{f"dx{k}": f"DX + dxo + r + {k} * H" for k in range(3)},
           **{f"dgh{k}": f"DG + dgo + r + {k} * H" for k in range(3)}}
%>
${cell.gru_bwd("VT", "vw", lambda k: f"VLOAD(pa + {k} * H)", "VLOAD(HP + hpo + e)",
               [(None, "acc[i][j] + VLOAD(D + dof + e)"), ("has_dout", "VLOAD(DOUT + douto + e)")],
               lambda slot, v: f"VSTORE({out[slot]}, {v})")}
        }
    }
</%def>
/* Forward step: A = h_{t-1} [M = batch, K = H], BH = b_hh [3H] (if has_b), X = the step's
   input projection [M, N = 3H], C = h_t, ACT = r, z, n and W_hn h + b_hn [M, 4H]. */
__kernel void gru_step_fwd(__global T *C, long co, ${c.cptr(dt)} A, long ao, long a_sm,
    __global const T *PB, ${c.cptr(dt)} BH, long bho, int has_b, ${c.cptr(dt)} X, long xo,
    __global T *ACT, long ao2, int M, int N, int K)
{
    const long a_sb = 0, a_sk = 1, pb_sb = 0;
${packed_body(True, gru_fwd_store)}
}

/* gru_step_fwd's steps s = 0 .. S - 1 of a range in one launch of one work-group (as
   lstm_steps_fwd): A is H0 (at h0o) at s = 0, then C's step before; C, X and ACT move a step's
   rows each step, on in time (dir 1) or back (-1). */
__kernel void gru_steps_fwd(__global T *C, long co0, ${c.cptr(dt)} H0, long h0o,
    __global const T *PB, ${c.cptr(dt)} BH, long bho, int has_b, ${c.cptr(dt)} X, long xo0,
    __global T *ACT, long ao20, int M, int N, int K, int S, int dir)
<%call expr="step_range(gru_fwd_store, 'const long hstep = (long)dir * M * K, xstep = (long)dir * M * N;')">
        const long co = co0 + s * hstep, xo = xo0 + s * xstep;
        const long ao2 = ao20 + s * (long)dir * M * 4 * K;
        __global const T *A = s ? C : H0;
        const long ao = s ? co - hstep : h0o;
</%call>

/* Backward at step t: A = dgh_t [M, K = 3H], PB = W_hh [3H, N = H] packed, D = z_t * dh_t; the
   cell's backward of step t-1 from dh_{t-1} = A W_hh + D and DOUT (the output's gradient, if
   has_dout), with ACT and HP (h_{t-2}) of step t-1. Writes DX (the projection's gradient), DG
   (dgh_{t-1}) and DHP (z_{t-1} * dh_{t-1}). */
__kernel void gru_step_bwd(${c.cptr(dt)} A, long ao, long a_sm, __global const T *PB,
    ${c.cptr(dt)} D, long dof, ${c.cptr(dt)} DOUT, long douto, int has_dout,
    ${c.cptr(dt)} ACT, long ao2, ${c.cptr(dt)} HP, long hpo, __global T *DX, long dxo,
    __global T *DG, long dgo, __global T *DHP, long dhpo, int M, int N, int K)
{
    const long a_sb = 0, a_sk = 1, pb_sb = 0;
${packed_body(True, gru_bwd_store)}
}

/* gru_step_bwd's steps s = 0 .. S - 1 of a range in one launch of one work-group (as
   lstm_steps_bwd): A = the dgh of the step run after (DG a step's rows on in the forward's
   direction dir); DG, DX, ACT and DOUT a step's rows back each step; HP is C's step run before,
   or H0 (at h0o) at step s_h0 (the forward's first). D (z * dh of the step after) comes from D0
   at s = 0, then from DHP, which each work-item reads and rewrites in place. */
__kernel void gru_steps_bwd(__global T *DG, long dgo0, __global const T *PB,
    ${c.cptr(dt)} D0, long dof0, ${c.cptr(dt)} DOUT, long douto0, int has_dout,
    ${c.cptr(dt)} ACT, long ao20, ${c.cptr(dt)} H0, long h0o, int s_h0, ${c.cptr(dt)} C,
    long co0, __global T *DX, long dxo0, __global T *DHP, long dhpo, int M, int N, int K, int S,
    int dir)
<%call expr="step_range(gru_bwd_store, 'const long gstep = (long)dir * M * K, hstep = (long)dir * M * N;')">
        const long dgo = dgo0 - s * gstep, dxo = dxo0 - s * gstep;
        const long ao2 = ao20 - s * (long)dir * M * 4 * N;
        const long co = co0 - s * hstep, douto = douto0 - s * hstep;
        __global const T *A = DG;
        const long ao = dgo + gstep;
        __global const T *HP = s == s_h0 ? H0 : C;
        const long hpo = s == s_h0 ? h0o : co - hstep;
        __global const T *D = s ? DHP : D0;
        const long dof = s ? dhpo : dof0;
</%call>
#endif

<%def name="packed_store()">
#pragma unroll
    for (int i = 0; i < MR; ++i) {
        const long m = m0 + i;
#pragma unroll
        for (int j = 0; j < NV; ++j) {
            /* a whole vector inside C (and D's row contiguous): one vector, not VW scalar
               stores with their tests, which cost a small product (16 x 512 x 128) half its
               time on PoCL; half types convert the vector at once */
            if (m < M && n0 + (j + 1) * VW <= N && (beta == 0 || d_sn == 1)) {
                VT v_ = alpha * acc[i][j];
                const long dn = dof + b * d_sb + m * d_sm + n0 + j * VW;
                if (beta != 0) v_ += beta * ${vload_c("D + dn")};
                const long cn = co + b * c_sb + m * ldc + n0 + j * VW;
                ${vstore_c("C + cn", "EPIV(v_, cn)")};
                continue;
            }
            union { VT v; ${T} s[VW]; } u;
            u.v = acc[i][j];
            for (int e = 0; e < VW; ++e) {
                const long n = n0 + j * VW + e;
                if (m < M && n < N) ${epilogue("u.s[e]")}
            }
        }
    }
</%def>
#endif
#endif

#ifdef NJ
/* For compilers that vectorise across work-items (Intel's CPU runtime packs LX neighbouring
   work-items of dimension 0 into SIMD lanes, and gives explicit vectors poor code): scalar code,
   lane l of group nb computing C[mb * MR + i][nb * NR + j * LX + l] for i < MR, j < NJ. Its loads
   of the B panel (NR = LX * NJ columns) are contiguous across lanes, those of A the same for
   every lane (one broadcast), so each SIMD register holds LX columns of one row. A is read where
   it lies, any strides: a uniform load needs no packing, and packing A took as long as the
   product itself for a transformer's shapes on Intel's runtime. */
<%def name="lanes_kernel(name, direct_b)">
__kernel __attribute__((reqd_work_group_size(LX, LY, 1)))
void ${name}(${out_args()}
    ${c.cptr(dt)} A, long ao, long a_sb, long a_sm, long a_sk,
% if direct_b:
    ${c.cptr(dt)} B, long bo, long b_sb, long b_sk,${tail_args()})
% else:
    __global const ${T} *PB, long pb_sb,${tail_args()})
% endif
{
    const int l = get_local_id(0), nb = get_group_id(0), mb = get_global_id(1);
    const long b = get_global_id(2);
    const int m0 = mb * MR, n0 = nb * NR + l;
    if (m0 >= M) return;
    long arow[MR];                      /* rows past M read the last one; never stored */
#pragma unroll
    for (int i = 0; i < MR; ++i) arow[i] = ao + b * a_sb + (long)min(m0 + i, M - 1) * a_sm;
% if direct_b:
    const long bcol = bo + b * b_sb + n0;     /* B's rows are contiguous and N % NR == 0 */
% else:
    __global const ${T} *pb = PB + b * pb_sb + (long)nb * K * NR;
% endif
    ${T} acc[MR][NJ];
#pragma unroll
    for (int i = 0; i < MR; ++i)
#pragma unroll
        for (int j = 0; j < NJ; ++j) acc[i][j] = 0;
    /* indices as (uniform) + local id, not a per-lane pointer: Intel's vectoriser then sees
       consecutive loads instead of gathers */
    for (int k = 0; k < K; ++k) {
        ${T} bv[NJ];
#pragma unroll
% if direct_b:
        for (int j = 0; j < NJ; ++j) bv[j] = ${c.load(dt, "B", "bcol + k * b_sk + j * LX")};
% else:
        for (int j = 0; j < NJ; ++j) bv[j] = pb[k * NR + j * LX + l];
% endif
#pragma unroll
        for (int i = 0; i < MR; ++i) {
            const ${T} av = ${c.load(dt, "A", "arow[i] + k * a_sk")};
#pragma unroll
            for (int j = 0; j < NJ; ++j) acc[i][j] = av * bv[j] + acc[i][j];
        }
    }
#pragma unroll
    for (int i = 0; i < MR; ++i) {
        const long m = m0 + i;
#pragma unroll
        for (int j = 0; j < NJ; ++j) {
            const long n = n0 + j * LX;
            if (m < M && n < N) ${epilogue("acc[i][j]")}
        }
    }
}
</%def>
${lanes_kernel("gemm_lanes", False)}
/* gemm_lanes reading B where it lies: for a B whose rows are contiguous and whose columns fill
   whole panels, the lanes' loads are already consecutive and the pack is a pass for nothing */
${lanes_kernel("gemm_lanes_db", True)}
#endif

#ifdef TM
#define RM (TM / WM)
#define RN (TN / WN)
__kernel __attribute__((reqd_work_group_size(RN, RM, 1)))
void gemm_tiled(${out_args()}
    ${c.cptr(dt)} A, long ao, long a_sb, long a_sm, long a_sk,
    ${c.cptr(dt)} B, long bo, long b_sb, long b_sk, long b_sn,${tail_args()})
{
    /* +1: rows of the tiles fall in different local-memory banks */
    __local ${T} As[TK][TM + 1];
    __local ${T} Bs[TK][TN + 1];
    const int tx = get_local_id(0), ty = get_local_id(1), lid = ty * RN + tx;
    const long m0 = (long)get_group_id(1) * TM, n0 = (long)get_group_id(0) * TN;
    const long b = get_group_id(2);
    const long a0 = ao + b * a_sb, b0 = bo + b * b_sb;
    ${T} acc[WM][WN];
#pragma unroll
    for (int i = 0; i < WM; ++i)
#pragma unroll
        for (int j = 0; j < WN; ++j) acc[i][j] = 0;
    for (int k0 = 0; k0 < K; k0 += TK) {
        for (int e = lid; e < TM * TK; e += RM * RN) {
            int r, kk;
            if (a_sk == 1) { r = e / TK; kk = e % TK; } else { kk = e / TM; r = e % TM; }
            const long m = m0 + r, k = k0 + kk;
            As[kk][r] = (m < M && k < K) ? ${c.load(dt, "A", "a0 + m * a_sm + k * a_sk")} : (${T})0;
        }
        for (int e = lid; e < TN * TK; e += RM * RN) {
            int q, kk;
            if (b_sn == 1) { kk = e / TN; q = e % TN; } else { q = e / TK; kk = e % TK; }
            const long n = n0 + q, k = k0 + kk;
            Bs[kk][q] = (n < N && k < K) ? ${c.load(dt, "B", "b0 + k * b_sk + n * b_sn")} : (${T})0;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
#pragma unroll
        for (int kk = 0; kk < TK; ++kk) {
            ${T} av[WM], bv[WN];
#pragma unroll
            for (int i = 0; i < WM; ++i) av[i] = As[kk][ty + i * RM];
#pragma unroll
            for (int j = 0; j < WN; ++j) bv[j] = Bs[kk][tx + j * RN];
#pragma unroll
            for (int i = 0; i < WM; ++i)
#pragma unroll
                for (int j = 0; j < WN; ++j) acc[i][j] = av[i] * bv[j] + acc[i][j];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
#pragma unroll
    for (int i = 0; i < WM; ++i) {
        const long m = m0 + ty + i * RM;
#pragma unroll
        for (int j = 0; j < WN; ++j) {
            const long n = n0 + tx + j * RN;
            if (m < M && n < N) ${epilogue("acc[i][j]")}
        }
    }
}
#endif
