## Fused scaled dot-product attention for the CPU code paths, float32 / float64: the same results
## as attention.mako's kernels (the same online softmax, masking, Philox dropout counters and
## logsumexp), computed the way a CPU is fast at. attention.mako gives each work-item one row and
## takes dot products along the head (a horizontal sum of a vector per score) behind barriers, so
## PoCL keeps every work-item's state in memory across them. Here a work-item owns MR rows and
## keeps its sums in explicit vectors, with no local memory and no barrier:
##
## - scores come BK = NB * VW at a time as vectors over keys, from a transposed copy of the other
##   operand (kt [Nk, E, Sp]: column j of K is row j of kt), each element of the own rows
##   broadcast: MR * NB vector multiply-adds per loaded vector, no horizontal sums;
## - the products with V (and K, Q, dO in backward) take a vector of NO * VW output columns per
##   own row, each probability broadcast;
## - a launch handles NO * VW columns from c0 (heads wider than that take several launches, each
##   recomputing the scores, as attention.mako's chunks do).
##
## Transposed copies are padded with zeros to Sp (Lp) rows, a multiple of BK, so that every tile
## loads whole vectors; keys (queries) past S (L) are masked to -inf before the softmax. The host
## (clgrad/kernels/attention.py) uses these kernels when the head widths are multiples of VW.
##
## Every array of sums is indexed by constants only (its loops unrolled), so that the compiler
## keeps it in registers; per-lane work (a mask's elements, dropout factors, the weights of a
## tile's rows) goes through small arrays of its own. VW is at least 2 (the CPU paths' widths).
<%namespace name="c" file="common.mako"/>
${c.prelude([dt])}
<%
    CT = dt.ct
    V = f"{CT}{vw}"
    IV = f"int{vw}" if CT == "float" else f"long{vw}"
    BK = nb * vw

    def folds(op):
        """statements folding vector x (type V) in halves with op ("max" or "sum"), returning
        the scalar"""
        out, w, cur = [], vw, "x"
        while w > 1:
            w //= 2
            t = f"{CT}{w}" if w > 1 else CT
            expr = f"fmax({cur}.lo, {cur}.hi)" if op == "max" else f"{cur}.lo + {cur}.hi"
            out.append(f"{t} f{w} = {expr};")
            cur = f"f{w}"
        out.append(f"return {cur};")
        return " ".join(out)

    def vec(items):
        """a vector of the expressions `items`"""
        return f"(({V})({', '.join(items)}))"
    iota = f"(({IV})({', '.join(str(u) for u in range(vw))}))"
%>
#define BK ${BK}
#define NB ${nb}
#define NO ${no}
#define VW ${vw}
#define MR_F ${mr[0]}
#define MR_Q ${mr[1]}
#define MR_K ${mr[2]}
#define V ${V}
#define IV ${IV}
/* VW elements at p as a vector, and back: scalar accesses the compiler merges (common.mako) */
#define VLD(p) CAT(LDV_, VW)(${CT}, 0, (p))
#define VST(p_, x_) CAT(STV_, VW)(${CT}, (x_), 0, (p_))

/* the max and the sum of a vector's lanes, folded in halves */
inline ${CT} lanes_max(V x) { ${folds("max")} }
inline ${CT} lanes_sum(V x) { ${folds("sum")} }

${c.philox()}
${c.dropout_keep(CT)}

<% common_args = f"""long L, long S, long E, long Ev, long groups, long Hq,
    __global const {CT} *mask, long mo, long mso, long msh, long msl, long mss, int has_mask,
    int causal, {CT} scale, float p, {CT} dscale, ulong seed, ulong offset, long c0""" %>

/* dst[b][c][r] = src[so + (b * R + r) * C + c] for r < R, 0 for R <= r < Rp: the transposed,
   padded copy the kernels below read their other operand from. A work-item transposes a block
   of VW x VW elements through a private array (C and Rp are multiples of VW) */
__kernel void attn_rows_t(__global ${CT} *dst, long dso, __global const ${CT} *src, long so,
                          long R, long C, long Rp)
{
    long r0 = get_global_id(0) * VW, c0 = get_global_id(1) * VW, b = get_global_id(2);
    if (r0 >= Rp || c0 >= C)
        return;
    ${CT} t[VW][VW];
    for (int u = 0; u < VW; ++u) {
        V x = r0 + u < R ? VLD(src + so + (b * R + r0 + u) * C + c0) : (V)0;
        VST(t[u], x);
    }
    for (int cc = 0; cc < VW; ++cc)
        VST(dst + dso + (b * C + c0 + cc) * Rp + r0, ${vec([f"t[{u}][cc]" for u in range(vw)])});
}

## s[m][w] = sum over e < `n` of own[row m][e] * t[e][tb + w * VW ..]: rows of `own` start at
## base[m], the transposed operand `t` has rows of `ld` elements
<%def name="scores_t(s, own, base, t, tb, ld, n, rows)">
#pragma unroll
        for (int m = 0; m < ${rows}; ++m)
#pragma unroll
            for (int w = 0; w < NB; ++w)
                ${s}[m][w] = (V)0;
        for (long e = 0; e < ${n}; ++e) {
            V tv[NB];
#pragma unroll
            for (int w = 0; w < NB; ++w)
                tv[w] = VLD(${t} + ${tb} + e * ${ld} + w * VW);
#pragma unroll
            for (int m = 0; m < ${rows}; ++m) {
                ${CT} x = ${own}[${base}[m] + e];
#pragma unroll
                for (int w = 0; w < NB; ++w)
                    ${s}[m][w] = x * tv[w] + ${s}[m][w];
            }
        }
</%def>

## Scale the scores; where the tile is not wholly allowed (`full` false) or a mask is added, -inf
## where (i, j) is outside the operands or causally masked, else the mask's element added.
## `along_j`: lanes are keys (row m is query row i0 + m), else query rows (row m is key j0 + m).
<%def name="mask_scores(s, rows, along_j, full)">
#pragma unroll
        for (int m = 0; m < ${rows}; ++m)
#pragma unroll
            for (int w = 0; w < NB; ++w)
                ${s}[m][w] *= scale;
        if (!(${full}) || has_mask) {
#pragma unroll
            for (int m = 0; m < ${rows}; ++m)
#pragma unroll
                for (int w = 0; w < NB; ++w) {
% if along_j:
                    long i = i0 + m, jb = j0 + w * VW;
                    IV j = (IV)(jb) + ${iota};
                    IV bad = j >= (IV)(S);
                    if (causal)
                        bad |= j > (IV)(i);
                    if (i >= L)
                        bad = (IV)(-1);
% else:
                    long j = j0 + m, ib = i0 + w * VW;
                    IV i = (IV)(ib) + ${iota};
                    IV bad = i >= (IV)(L);
                    if (causal)
                        bad |= (IV)(j) > i;
                    if (j >= S)
                        bad = (IV)(-1);
% endif
                    V x = ${s}[m][w];
                    if (has_mask) {
% if along_j:
                        long mr = mb + min(i, L - 1) * msl;
                        x += ${vec([f"mask[mr + min(jb + {u}, S - 1) * mss]" for u in range(vw)])};
% else:
                        long mr = mb + min(j, S - 1) * mss;
                        x += ${vec([f"mask[mr + min(ib + {u}, L - 1) * msl]" for u in range(vw)])};
% endif
                    }
                    ${s}[m][w] = select(x, (V)(-INFINITY), bad);
                }
        }
</%def>

## for each of the BK lanes u of a tile (row `first` + u of `src`, clamped to `count` rows: lanes
## past it weigh 0), acc[m][o] += the weight of row m and lane u times that row's vectors. The
## weights go through a private array: a scalar load broadcast to a vector is one instruction,
## taking a lane out of a register three.
<%def name="weigh_rows(acc, weights, rows, src, base, first, count, ld, nvec)">
        {
            ${CT} wt[${rows}][BK];
#pragma unroll
            for (int m = 0; m < ${rows}; ++m)
#pragma unroll
                for (int w = 0; w < NB; ++w)
                    VST(wt[m] + w * VW, ${weights}[m][w]);
% for u in range(nb * vw):
            {
                long r = min(${first} + ${u}, ${count} - 1);
                V rv[NO];
#pragma unroll
                for (int o = 0; o < NO; ++o)
                    rv[o] = VLD(${src} + ${base} + r * ${ld} + min(o, ${nvec} - 1) * VW);
#pragma unroll
                for (int m = 0; m < ${rows}; ++m) {
                    ${CT} x = wt[m][${u}];
#pragma unroll
                    for (int o = 0; o < NO; ++o)
                        ${acc}[m][o] = x * rv[o] + ${acc}[m][o];
                }
            }
% endfor
        }
</%def>

/* Forward. One work-item: MR_F query rows i0 .. of query batch n (rows past L repeat row L - 1
   and are not stored); out columns c0 .. c0 + NO * VW. Writes each row's logsumexp (c0 == 0). */
__kernel void attn_rows_fwd(__global const ${CT} *q, long qo, __global const ${CT} *kt, long kto,
                            __global const ${CT} *v, long vo, __global ${CT} *out, long oo,
                            __global ${CT} *lse, ${common_args}, long Sp, long total)
{
    long g = get_global_id(0);
    if (g >= total)
        return;
    long nbl = (L + MR_F - 1) / MR_F, n = g / nbl, i0 = (g - n * nbl) * MR_F, nk = n / groups;
    long ktb = kto + nk * E * Sp, vb = vo + nk * S * Ev + c0;
    long mb = mo + (n / Hq) * mso + (n % Hq) * msh;
    long qrow[MR_F];
#pragma unroll
    for (int m = 0; m < MR_F; ++m)
        qrow[m] = qo + (n * L + min(i0 + m, L - 1)) * E;
    /* the vectors of columns this launch has (a last one repeats: never stored) */
    int nov = (int)min((long)NO, (Ev - c0) / VW);
    long last = min(L, i0 + MR_F) - 1;
    long jend = causal ? min(S, last + 1) : S;
    V acc[MR_F][NO];
    ${CT} mx[MR_F], l[MR_F];
#pragma unroll
    for (int m = 0; m < MR_F; ++m) {
        mx[m] = -INFINITY;
        l[m] = 0;
#pragma unroll
        for (int o = 0; o < NO; ++o)
            acc[m][o] = (V)0;
    }
    for (long j0 = 0; j0 < jend; j0 += BK) {
        V s[MR_F][NB];
${scores_t("s", "q", "qrow", "kt", "ktb + j0", "Sp", "E", "MR_F")}
${mask_scores("s", "MR_F", True, "j0 + BK <= S && (!causal || j0 + BK - 1 <= i0) && last == i0 + MR_F - 1")}
#pragma unroll
        for (int m = 0; m < MR_F; ++m) {
            V t = s[m][0];
#pragma unroll
            for (int w = 1; w < NB; ++w)
                t = fmax(t, s[m][w]);
            ${CT} mn = fmax(mx[m], lanes_max(t));
            if (mn == -INFINITY) {                   /* nothing allowed yet in this row */
#pragma unroll
                for (int w = 0; w < NB; ++w)
                    s[m][w] = (V)0;
            } else {
                V sum = (V)0;
#pragma unroll
                for (int w = 0; w < NB; ++w) {
                    s[m][w] = exp(s[m][w] - mn);
                    sum += s[m][w];
                }
                if (mn > mx[m]) {        /* a new maximum: rescale what was summed so far */
                    ${CT} alpha = exp(mx[m] - mn);  /* 0 while nothing was allowed */
                    l[m] *= alpha;
#pragma unroll
                    for (int o = 0; o < NO; ++o)
                        acc[m][o] *= alpha;
                    mx[m] = mn;
                }
                l[m] += lanes_sum(sum);              /* the softmax sums before dropout */
            }
        }
        if (p > 0.0f) {
#pragma unroll
            for (int m = 0; m < MR_F; ++m) {
                ${CT} z[BK];
                for (int u = 0; u < BK; ++u)
                    z[u] = keep(offset + (n * L + i0 + m) * S + j0 + u, seed, p, dscale);
#pragma unroll
                for (int w = 0; w < NB; ++w)
                    s[m][w] *= VLD(z + w * VW);
            }
        }
${weigh_rows("acc", "s", "MR_F", "v", "vb", "j0", "S", "Ev", "nov")}
    }
#pragma unroll
    for (int m = 0; m < MR_F; ++m) {
        long i = i0 + m;
        if (i < L) {
            ${CT} inv = l[m] > 0 ? 1 / l[m] : 0;     /* a fully masked row gives zeros */
#pragma unroll
            for (int o = 0; o < NO; ++o)
                if (o < nov)
                    VST(out + oo + (n * L + i) * Ev + c0 + o * VW, acc[m][o] * inv);
            if (c0 == 0)
                lse[n * L + i] = l[m] > 0 ? mx[m] + log(l[m]) : -INFINITY;
        }
    }
}

/* dQ. One work-item: MR_Q query rows of query batch n; dq columns c0 .. c0 + NO * VW.
   dS = p * (dO . v * z - D) * scale with p = exp(score - lse), as attention.mako's. */
__kernel void attn_rows_dq(__global const ${CT} *q, long qo, __global const ${CT} *kt, long kto,
                           __global const ${CT} *vt, long vto, __global const ${CT} *k, long ko,
                           __global const ${CT} *dout, long doo, __global const ${CT} *lse,
                           __global const ${CT} *dd, __global ${CT} *dq, long dqo, ${common_args},
                           long Sp, long kbeg, long kend, int add, long total)
{
    long g = get_global_id(0);
    if (g >= total)
        return;
    long nbl = (L + MR_Q - 1) / MR_Q, n = g / nbl, i0 = (g - n * nbl) * MR_Q, nk = n / groups;
    long ktb = kto + nk * E * Sp, vtb = vto + nk * Ev * Sp, kb = ko + nk * S * E + c0;
    long mb = mo + (n / Hq) * mso + (n % Hq) * msh;
    long qrow[MR_Q], drow[MR_Q];
    ${CT} li[MR_Q], di[MR_Q];
#pragma unroll
    for (int m = 0; m < MR_Q; ++m) {
        long i = min(i0 + m, L - 1);
        qrow[m] = qo + (n * L + i) * E;
        drow[m] = doo + (n * L + i) * Ev;
        li[m] = lse[n * L + i];
        di[m] = dd[n * L + i];
    }
    int nov = (int)min((long)NO, (E - c0) / VW);
    long last = min(L, i0 + MR_Q) - 1;
    long jend = causal ? min(S, last + 1) : S;
    V acc[MR_Q][NO];
#pragma unroll
    for (int m = 0; m < MR_Q; ++m)
#pragma unroll
        for (int o = 0; o < NO; ++o)
            acc[m][o] = (V)0;
    jend = min(jend, kend);
    for (long j0 = kbeg; j0 < jend; j0 += BK) {
        V s[MR_Q][NB], dp[MR_Q][NB];
${scores_t("s", "q", "qrow", "kt", "ktb + j0", "Sp", "E", "MR_Q")}
${scores_t("dp", "dout", "drow", "vt", "vtb + j0", "Sp", "Ev", "MR_Q")}
${mask_scores("s", "MR_Q", True, "j0 + BK <= S && (!causal || j0 + BK - 1 <= i0) && last == i0 + MR_Q - 1")}
        /* dp becomes dS (times the scale of the scores); p = 0 in a row with nothing allowed */
#pragma unroll
        for (int m = 0; m < MR_Q; ++m) {
            if (li[m] == -INFINITY) {
#pragma unroll
                for (int w = 0; w < NB; ++w)
                    dp[m][w] = (V)0;
            } else {
                if (p > 0.0f) {
                    ${CT} z[BK];
                    for (int u = 0; u < BK; ++u)
                        z[u] = keep(offset + (n * L + i0 + m) * S + j0 + u, seed, p, dscale);
#pragma unroll
                    for (int w = 0; w < NB; ++w)
                        dp[m][w] *= VLD(z + w * VW);
                }
#pragma unroll
                for (int w = 0; w < NB; ++w)
                    dp[m][w] = exp(s[m][w] - li[m]) * (dp[m][w] - di[m]) * scale;
            }
        }
${weigh_rows("acc", "dp", "MR_Q", "k", "kb", "j0", "S", "E", "nov")}
    }
#pragma unroll
    for (int m = 0; m < MR_Q; ++m)
        if (i0 + m < L)
#pragma unroll
            for (int o = 0; o < NO; ++o)
                if (o < nov)
                {
                    __global ${CT} *d = dq + dqo + (n * L + i0 + m) * E + c0 + o * VW;
                    VST(d, add ? VLD(d) + acc[m][o] : acc[m][o]);
                }
}

/* dK and dV. One work-item: MR_K key rows j0 .. of key/value batch nk, summing over the `groups`
   query batches that read it; columns c0 .. c0 + NO * VW of dk (where c0 < E) and dv (c0 < Ev).
   Scores come as vectors over query rows, from transposed copies of q and dO ([N, E, Lp]). */
__kernel void attn_rows_dkdv(__global const ${CT} *qt, long qto, __global const ${CT} *dot_t,
                             long doto, __global const ${CT} *q, long qo,
                             __global const ${CT} *k, long ko, __global const ${CT} *v, long vo,
                             __global const ${CT} *dout, long doo, __global const ${CT} *lse,
                             __global const ${CT} *dd, __global ${CT} *dk, long dko,
                             __global ${CT} *dv, long dvo, ${common_args}, long Lp, long qbeg,
                             long qend, int add, long total)
{
    long g = get_global_id(0);
    if (g >= total)
        return;
    long nbl = (S + MR_K - 1) / MR_K, nk = g / nbl, j0 = (g - nk * nbl) * MR_K;
    long krow[MR_K], vrow[MR_K];
#pragma unroll
    for (int m = 0; m < MR_K; ++m) {
        long j = min(j0 + m, S - 1);
        krow[m] = ko + (nk * S + j) * E;
        vrow[m] = vo + (nk * S + j) * Ev;
    }
    /* column vectors of dk and dv in this launch (none where c0 is past the head) */
    int nok = (int)min((long)NO, (E - c0) / VW), nov = (int)min((long)NO, (Ev - c0) / VW);
    V ak[MR_K][NO], av[MR_K][NO];
#pragma unroll
    for (int m = 0; m < MR_K; ++m)
#pragma unroll
        for (int o = 0; o < NO; ++o)
            ak[m][o] = av[m][o] = (V)0;
    /* causal: query rows before the first own key see none of the own keys */
    long istart = max(qbeg, causal ? (j0 / BK) * BK : 0), iend = min(L, qend);
    long jlast = min(S, j0 + MR_K) - 1;
    for (long n = nk * groups; n < (nk + 1) * groups; ++n) {
        long qtb = qto + n * E * Lp, dtb = doto + n * Ev * Lp;
        long qb = qo + n * L * E + c0, db = doo + n * L * Ev + c0;
        long mb = mo + (n / Hq) * mso + (n % Hq) * msh;
        for (long i0 = istart; i0 < iend; i0 += BK) {
            V s[MR_K][NB], dp[MR_K][NB];
${scores_t("s", "k", "krow", "qt", "qtb + i0", "Lp", "E", "MR_K")}
${scores_t("dp", "v", "vrow", "dot_t", "dtb + i0", "Lp", "Ev", "MR_K")}
${mask_scores("s", "MR_K", False, "i0 + BK <= L && (!causal || jlast <= i0) && jlast == j0 + MR_K - 1")}
            ${CT} lr[BK], dr[BK];
            for (int u = 0; u < BK; ++u) {
                long i = i0 + u;
                /* p = 0 in a row with nothing allowed (its logsumexp is -inf) */
                lr[u] = i < L ? lse[n * L + i] : -INFINITY;
                dr[u] = i < L ? dd[n * L + i] : 0;
            }
#pragma unroll
            for (int m = 0; m < MR_K; ++m) {
#pragma unroll
                for (int w = 0; w < NB; ++w) {
                    V lv = VLD(lr + w * VW);
                    IV none = lv == (V)(-INFINITY);
                    V pr = select(exp(s[m][w] - lv), (V)0, none);
                    s[m][w] = pr;
                }
                if (p > 0.0f) {
                    ${CT} z[BK];
                    for (int u = 0; u < BK; ++u)
                        z[u] = keep(offset + (n * L + i0 + u) * S + j0 + m, seed, p, dscale);
#pragma unroll
                    for (int w = 0; w < NB; ++w)
                        dp[m][w] *= VLD(z + w * VW);
                    /* s becomes dS (times the scale), dp the weight that multiplied v */
#pragma unroll
                    for (int w = 0; w < NB; ++w) {
                        V pr = s[m][w], zw = VLD(z + w * VW);
                        s[m][w] = pr * (dp[m][w] - VLD(dr + w * VW)) * scale;
                        dp[m][w] = pr * zw;
                    }
                } else {
#pragma unroll
                    for (int w = 0; w < NB; ++w) {
                        V pr = s[m][w];
                        s[m][w] = pr * (dp[m][w] - VLD(dr + w * VW)) * scale;
                        dp[m][w] = pr;
                    }
                }
            }
            if (c0 < Ev) {
${weigh_rows("av", "dp", "MR_K", "dout", "db", "i0", "L", "Ev", "nov")}
            }
            if (c0 < E) {
${weigh_rows("ak", "s", "MR_K", "q", "qb", "i0", "L", "E", "nok")}
            }
        }
    }
#pragma unroll
    for (int m = 0; m < MR_K; ++m) {
        if (j0 + m < S) {
            long j = nk * S + j0 + m;
#pragma unroll
            for (int o = 0; o < NO; ++o) {
                __global ${CT} *d = dk + dko + j * E + c0 + o * VW;
                if (o < nok)
                    VST(d, add ? VLD(d) + ak[m][o] : ak[m][o]);
                d = dv + dvo + j * Ev + c0 + o * VW;
                if (o < nov)
                    VST(d, add ? VLD(d) + av[m][o] : av[m][o]);
            }
        }
    }
}
