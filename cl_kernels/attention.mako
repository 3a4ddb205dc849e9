## Fused scaled dot-product attention for float dtype `dt` (flash-attention style), forward and
## backward. The host hands over contiguous q [N, L, E], k [Nk, S, E], v [Nk, S, Ev] (query batch
## n reads key/value batch n / groups: grouped-query attention), and an optional additive float
## mask read through strides (mso, msh, msl, mss) over (n / Hq, n % Hq, i, j), stride 0 where it
## is broadcast. Causal masking (j > i, top-left aligned) and dropout are computed in place.
##
## Every kernel gives each work-item one "own" row (a query row forward and for dQ, a key row for
## dK/dV) and walks tiles of BK rows of the other operand through local memory, the whole
## work-group loading each tile together (a barrier after the loads and before the next ones).
## Head dimensions of any size go through the tiles in chunks of EC columns: dot products sum
## over all chunks, while a work-item's accumulator (output, dQ, dK, dV) holds one chunk of EC
## columns: the host launches a kernel once per chunk (`c0`, its first column), so only heads
## wider than EC recompute the scores.
##
## Forward keeps a running max m and sum l of exp(score - m) per row (online softmax), writes
## out = acc / l and the row's logsumexp m + log(l); a row with every key masked has l = 0 and
## gets out = 0 and logsumexp = -inf (torch 2.13's CPU result: zeros, zero gradients). Backward
## recomputes p = exp(score - logsumexp) per tile; with D = rowsum(dO * out) from the host,
## dS = p * (dO . v * z - D) where z is the dropout factor (0 or 1 / (1 - p_drop)), regenerated
## from the same Philox counter (offset + (n * L + i) * S + j) the forward used.
<%namespace name="c" file="common.mako"/>
${c.prelude([dt])}
<%
    CT = dt.ct
    VW = 4 if CT == "double" else 8           # vector width of the inner loops
    BK = 16 if CT == "double" else 32          # rows of a local tile
    EC = 64                                    # columns of a chunk
    NV = EC // VW
    V = f"CAT({CT}, {VW})"
    lane_sum = " + ".join(f"a.s{i}" for i in range(VW))
%>
#define BK ${BK}
#define EC ${EC}
#define NV ${NV}

${c.philox()}
${c.dropout_keep(CT)}

/* tile[r][e] = x[base + (row0 + r) * ld + col0 + e], zero outside rows < nrows, cols < ncols;
   every work-item of the group takes part */
inline void load_tile(__local ${CT} *tile, ${c.cptr(dt)} x, long base, long row0, long nrows,
                      long ld, long col0, long ncols) {
    int ls = get_local_size(0);
    for (int t = get_local_id(0); t < BK * EC; t += ls) {
        int r = t / EC, e = t - r * EC;
        long row = row0 + r, col = col0 + e;
        tile[t] = (row < nrows && col < ncols) ? (${CT})(${c.load(dt, "x", "base + row * ld + col")})
                                               : (${CT})0;
    }
}

## own[] = EC columns from col0 of the row at x[base] (zero past ncols or when inactive)
<%def name="own_chunk(x, base, col0, ncols)">
        for (int e = 0; e < EC; ++e)
            ob[e] = (active && ${col0} + e < ${ncols}) ? (${CT})(${c.load(dt, x, f"{base} + {col0} + e")})
                                                      : (${CT})0;
        for (int w = 0; w < NV; ++w)
            ov[w] = LDV(${CT}, ${VW}, w, ob);
</%def>

## acc[r] += own . tile row r, for the BK rows of the tile
<%def name="dots(acc, tile)">
        for (int r = 0; r < BK; ++r) {
            ${V} a = (${V})0;
            for (int w = 0; w < NV; ++w)
                a += ov[w] * LDV(${CT}, ${VW}, r * NV + w, ${tile});
            ${acc}[r] += ${lane_sum};
        }
</%def>

## s[r] = the score of (i, j) (expressions of r) from its dot product: scaled, masked (-inf where
## attention is not allowed); `full`: no element of the tile is outside or causally masked.
## Whole vectors where possible: PoCL vectorises only explicit vectors.
<%def name="scores(i, j, ok, full)">
        for (int w = 0; w < BK / ${VW}; ++w)
            STV(${CT}, ${VW}, LDV(${CT}, ${VW}, w, s) * scale, w, s);
        if (!(${full}) || has_mask) {
            for (int r = 0; r < BK; ++r) {
                if (!(${ok}) || (causal && ${j} > ${i}))
                    s[r] = -INFINITY;
                else if (has_mask)
                    s[r] += (${CT})(${c.load(dt, "mask", f"mb + ({i}) * msl + ({j}) * mss")});
            }
        }
</%def>

<% common_args = f"""long L, long S, long E, long Ev, long groups, long Hq,
    __global const {dt.cl} *mask, long mo, long mso, long msh, long msl, long mss, int has_mask,
    int causal, {CT} scale, float p, {CT} dscale, ulong seed, ulong offset, long c0""" %>

/* one work-group: local-size query rows of one batch n; writes columns c0 .. c0 + EC of out */
__kernel void attn_fwd(${c.cptr(dt)} q, long qo, ${c.cptr(dt)} k, long ko, ${c.cptr(dt)} v,
                       long vo, ${c.ptr(dt)} out, long oo, __global ${CT} *lse, ${common_args})
{
    __local ${CT} kt[BK * EC];
    __local ${CT} vt[BK * EC];
    long ls = get_local_size(0), nb = (L + ls - 1) / ls, g = get_group_id(0);
    long n = g / nb, i0 = (g - n * nb) * ls, i = i0 + get_local_id(0);
    int active = i < L;
    long qb = qo + (n * L + i) * E, nk = n / groups;
    long kb = ko + nk * S * E, vb = vo + nk * S * Ev;
    long mb = mo + (n / Hq) * mso + (n % Hq) * msh;
    long last = min(L, i0 + ls) - 1;                 /* the group's last row */
    long jend = causal ? min(S, last + 1) : S;
    ${CT} ob[EC];
    ${V} ov[NV], acc[NV];
    for (int w = 0; w < NV; ++w)
        acc[w] = (${V})0;
    ${CT} m = -INFINITY, l = 0;
    for (long j0 = 0; j0 < jend; j0 += BK) {
        ${CT} s[BK];
        for (int r = 0; r < BK; ++r)
            s[r] = 0;
        for (long e0 = 0; e0 < E; e0 += EC) {
${own_chunk("q", "qb", "e0", "E")}
            barrier(CLK_LOCAL_MEM_FENCE);
            load_tile(kt, k, kb, j0, S, E, e0, E);
            barrier(CLK_LOCAL_MEM_FENCE);
${dots("s", "kt")}
        }
${scores("i", "(j0 + r)", "active && j0 + r < S", "active && j0 + BK <= S && (!causal || j0 + BK - 1 <= i)")}
        ${V} mv = (${V})(-INFINITY);
        for (int w = 0; w < BK / ${VW}; ++w)
            mv = fmax(mv, LDV(${CT}, ${VW}, w, s));
        ${CT} mn = m;
        for (int r = 0; r < ${VW}; ++r)
            mn = fmax(mn, ((${CT} *)&mv)[r]);
        if (mn != -INFINITY) {
            ${CT} alpha = exp(m - mn);              /* 0 while nothing was allowed yet */
            l *= alpha;
            for (int w = 0; w < NV; ++w)
                acc[w] *= alpha;
            ${V} lv = (${V})0;
            for (int w = 0; w < BK / ${VW}; ++w) {
                ${V} x = exp(LDV(${CT}, ${VW}, w, s) - mn);
                lv += x;                             /* the softmax sums before dropout */
                STV(${CT}, ${VW}, x, w, s);
            }
            for (int r = 0; r < ${VW}; ++r)
                l += ((${CT} *)&lv)[r];
            if (p > 0.0f)
                for (int r = 0; r < BK; ++r)
                    if (s[r] != 0)
                        s[r] *= keep(offset + (n * L + i) * S + j0 + r, seed, p, dscale);
            m = mn;
        } else {
            for (int r = 0; r < BK; ++r)
                s[r] = 0;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        load_tile(vt, v, vb, j0, S, Ev, c0, Ev);
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int w = 0; w < NV; ++w) {         /* the accumulator in a register */
            ${V} a = acc[w];
            for (int r = 0; r < BK; ++r)
                a += s[r] * LDV(${CT}, ${VW}, r * NV + w, vt);
            acc[w] = a;
        }
    }
    if (!active)
        return;
    ${CT} inv = l > 0 ? 1 / l : 0;                   /* a fully masked row gives zeros */
    for (int w = 0; w < NV; ++w)
        STV(${CT}, ${VW}, acc[w] * inv, w, ob);
    long ob0 = oo + (n * L + i) * Ev + c0;
    for (int e = 0; e < EC && c0 + e < Ev; ++e)
        ${c.store(dt, "out", "ob0 + e", "ob[e]")};
    if (c0 == 0)
        lse[n * L + i] = l > 0 ? m + log(l) : -INFINITY;
}

/* dQ: one work-group is local-size query rows of one batch n; writes columns c0 .. c0 + EC */
__kernel void attn_bwd_dq(${c.cptr(dt)} q, long qo, ${c.cptr(dt)} k, long ko, ${c.cptr(dt)} v,
                          long vo, ${c.cptr(dt)} dout, long doo, __global const ${CT} *lse,
                          __global const ${CT} *dd, ${c.ptr(dt)} dq, long dqo, ${common_args})
{
    __local ${CT} kt[BK * EC];
    __local ${CT} vt[BK * EC];
    long ls = get_local_size(0), nb = (L + ls - 1) / ls, g = get_group_id(0);
    long n = g / nb, i0 = (g - n * nb) * ls, i = i0 + get_local_id(0);
    int active = i < L;
    long qb = qo + (n * L + i) * E, db = doo + (n * L + i) * Ev, nk = n / groups;
    long kb = ko + nk * S * E, vb = vo + nk * S * Ev;
    long mb = mo + (n / Hq) * mso + (n % Hq) * msh;
    long last = min(L, i0 + ls) - 1;
    long jend = causal ? min(S, last + 1) : S;
    ${CT} ob[EC];
    ${V} ov[NV], acc[NV];
    for (int w = 0; w < NV; ++w)
        acc[w] = (${V})0;
    for (long j0 = 0; j0 < jend; j0 += BK) {
        ${CT} s[BK], dp[BK];
        for (int r = 0; r < BK; ++r)
            s[r] = dp[r] = 0;
        for (long e0 = 0; e0 < E; e0 += EC) {
${own_chunk("q", "qb", "e0", "E")}
            barrier(CLK_LOCAL_MEM_FENCE);
            load_tile(kt, k, kb, j0, S, E, e0, E);
            barrier(CLK_LOCAL_MEM_FENCE);
${dots("s", "kt")}
        }
        for (long e0 = 0; e0 < Ev; e0 += EC) {
${own_chunk("dout", "db", "e0", "Ev")}
            barrier(CLK_LOCAL_MEM_FENCE);
            load_tile(vt, v, vb, j0, S, Ev, e0, Ev);
            barrier(CLK_LOCAL_MEM_FENCE);
${dots("dp", "vt")}
        }
        /* read here, not once before the loop: Intel's CPU compiler lost di (kept from before
           the barriers) and computed dS as if D were 0 */
        ${CT} li = active ? lse[n * L + i] : -INFINITY, di = active ? dd[n * L + i] : 0;
${scores("i", "(j0 + r)", "active && j0 + r < S", "active && j0 + BK <= S && (!causal || j0 + BK - 1 <= i)")}
        /* dp becomes dS (times the scale of the scores); p = 0 in a row with nothing allowed */
        if (li == -INFINITY) {
            for (int r = 0; r < BK; ++r)
                dp[r] = 0;
        } else if (p > 0.0f) {
            for (int r = 0; r < BK; ++r) {
                ${CT} pr = exp(s[r] - li);
                ${CT} z = pr != 0 ? keep(offset + (n * L + i) * S + j0 + r, seed, p, dscale) : 1;
                dp[r] = pr * (dp[r] * z - di) * scale;
            }
        } else {
            for (int w = 0; w < BK / ${VW}; ++w)
                STV(${CT}, ${VW}, exp(LDV(${CT}, ${VW}, w, s) - li) * (LDV(${CT}, ${VW}, w, dp) - di)
                                  * scale, w, dp);
        }
        if (E > EC) {                                /* kt holds the last chunk, not c0's */
            barrier(CLK_LOCAL_MEM_FENCE);
            load_tile(kt, k, kb, j0, S, E, c0, E);
            barrier(CLK_LOCAL_MEM_FENCE);
        }
        for (int w = 0; w < NV; ++w) {         /* the accumulator in a register */
            ${V} a = acc[w];
            for (int r = 0; r < BK; ++r)
                a += dp[r] * LDV(${CT}, ${VW}, r * NV + w, kt);
            acc[w] = a;
        }
    }
    if (!active)
        return;
    for (int w = 0; w < NV; ++w)
        STV(${CT}, ${VW}, acc[w], w, ob);
    long o0 = dqo + (n * L + i) * E + c0;
    for (int e = 0; e < EC && c0 + e < E; ++e)
        ${c.store(dt, "dq", "o0 + e", "ob[e]")};
}

/* dK and dV: one work-group is local-size key rows of one key/value batch nk, summing over the
   `groups` query batches that read it; writes columns c0 .. c0 + EC of each (where they exist) */
__kernel void attn_bwd_dkdv(${c.cptr(dt)} q, long qo, ${c.cptr(dt)} k, long ko,
                            ${c.cptr(dt)} v, long vo, ${c.cptr(dt)} dout, long doo,
                            __global const ${CT} *lse, __global const ${CT} *dd,
                            ${c.ptr(dt)} dk, long dko, ${c.ptr(dt)} dv, long dvo, ${common_args})
{
    __local ${CT} qt[BK * EC];
    __local ${CT} dt_[BK * EC];
    long ls = get_local_size(0), nb = (S + ls - 1) / ls, g = get_group_id(0);
    long nk = g / nb, j0 = (g - nk * nb) * ls, j = j0 + get_local_id(0);
    int active = j < S;
    long kb = ko + (nk * S + j) * E, vb = vo + (nk * S + j) * Ev;
    /* causal: rows above the group's first key see none of its keys */
    long istart = causal ? (j0 / BK) * BK : 0;
    ${CT} ob[EC];
    ${V} ov[NV], ak[NV], av[NV];
    for (int w = 0; w < NV; ++w)
        ak[w] = av[w] = (${V})0;
    for (long n = nk * groups; n < (nk + 1) * groups; ++n) {
        long qb = qo + n * L * E, db = doo + n * L * Ev;
        long mb = mo + (n / Hq) * mso + (n % Hq) * msh;
        for (long i0 = istart; i0 < L; i0 += BK) {
            ${CT} s[BK], dp[BK];
            for (int r = 0; r < BK; ++r)
                s[r] = dp[r] = 0;
            for (long e0 = 0; e0 < E; e0 += EC) {
${own_chunk("k", "kb", "e0", "E")}
                barrier(CLK_LOCAL_MEM_FENCE);
                load_tile(qt, q, qb, i0, L, E, e0, E);
                barrier(CLK_LOCAL_MEM_FENCE);
${dots("s", "qt")}
            }
            for (long e0 = 0; e0 < Ev; e0 += EC) {
${own_chunk("v", "vb", "e0", "Ev")}
                barrier(CLK_LOCAL_MEM_FENCE);
                load_tile(dt_, dout, db, i0, L, Ev, e0, Ev);
                barrier(CLK_LOCAL_MEM_FENCE);
${dots("dp", "dt_")}
            }
${scores("(i0 + r)", "j", "active && i0 + r < L", "active && i0 + BK <= L && (!causal || j <= i0)")}
            ${CT} lr[BK], dr[BK];
            for (int r = 0; r < BK; ++r) {
                long i = i0 + r;
                lr[r] = i < L ? lse[n * L + i] : -INFINITY;
                dr[r] = i < L ? dd[n * L + i] : 0;
                if (lr[r] == -INFINITY) {            /* a row with nothing allowed: p = 0 */
                    lr[r] = 0;
                    s[r] = -INFINITY;
                }
            }
            for (int w = 0; w < BK / ${VW}; ++w)
                STV(${CT}, ${VW}, exp(LDV(${CT}, ${VW}, w, s) - LDV(${CT}, ${VW}, w, lr)), w, s);
            /* s becomes dS (times the scale), dp the weight that multiplied v */
            if (p > 0.0f) {
                for (int r = 0; r < BK; ++r) {
                    ${CT} z = s[r] != 0 ? keep(offset + (n * L + i0 + r) * S + j, seed, p, dscale) : 1;
                    ${CT} ds = s[r] * (dp[r] * z - dr[r]) * scale;
                    dp[r] = s[r] * z;
                    s[r] = ds;
                }
            } else {
                for (int w = 0; w < BK / ${VW}; ++w) {
                    ${V} pr = LDV(${CT}, ${VW}, w, s);
                    STV(${CT}, ${VW}, pr * (LDV(${CT}, ${VW}, w, dp) - LDV(${CT}, ${VW}, w, dr)) * scale, w, s);
                    STV(${CT}, ${VW}, pr, w, dp);
                }
            }
            if (c0 < Ev) {
                if (Ev > EC) {
                    barrier(CLK_LOCAL_MEM_FENCE);
                    load_tile(dt_, dout, db, i0, L, Ev, c0, Ev);
                    barrier(CLK_LOCAL_MEM_FENCE);
                }
                for (int w = 0; w < NV; ++w) {         /* the accumulator in a register */
                    ${V} a = av[w];
                    for (int r = 0; r < BK; ++r)
                        a += dp[r] * LDV(${CT}, ${VW}, r * NV + w, dt_);
                    av[w] = a;
                }
            }
            if (c0 < E) {
                if (E > EC) {
                    barrier(CLK_LOCAL_MEM_FENCE);
                    load_tile(qt, q, qb, i0, L, E, c0, E);
                    barrier(CLK_LOCAL_MEM_FENCE);
                }
                for (int w = 0; w < NV; ++w) {         /* the accumulator in a register */
                    ${V} a = ak[w];
                    for (int r = 0; r < BK; ++r)
                        a += s[r] * LDV(${CT}, ${VW}, r * NV + w, qt);
                    ak[w] = a;
                }
            }
        }
    }
    if (!active)
        return;
    if (c0 < E) {
        for (int w = 0; w < NV; ++w)
            STV(${CT}, ${VW}, ak[w], w, ob);
        long o0 = dko + (nk * S + j) * E + c0;
        for (int e = 0; e < EC && c0 + e < E; ++e)
            ${c.store(dt, "dk", "o0 + e", "ob[e]")};
    }
    if (c0 < Ev) {
        for (int w = 0; w < NV; ++w)
            STV(${CT}, ${VW}, av[w], w, ob);
        long o0 = dvo + (nk * S + j) * Ev + c0;
        for (int e = 0; e < EC && c0 + e < Ev; ++e)
            ${c.store(dt, "dv", "o0 + e", "ob[e]")};
    }
}

/* the dropout factors the kernels above use, as an [N, L, S] tensor (for double backward) */
__kernel void attn_dropout_mask(${c.ptr(dt)} z, long N, long L, long S, float p, ${CT} dscale,
                                ulong seed, ulong offset)
{
    long t = get_global_id(0);
    if (t >= N * L * S)
        return;
    ${c.store(dt, "z", "t", f"keep(offset + t, seed, p, dscale)")};
}
