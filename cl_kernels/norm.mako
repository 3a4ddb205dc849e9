## layer_norm of an input of dtype `dt` (float types; 16-bit ones computed in float), forward and
## backward, over rows: the input is contiguous and seen as [rows, L], each row normalised on its
## own, then scaled by w[l] and shifted by b[l] (has_w / has_b say whether there are any).
##
## Each row is shifted by its first element f before its moments are taken (a constant row then
## gives exactly 0, as torch's Welford pass does): m = mean(x - f), v = mean((x - f - m)^2),
## r = 1 / sqrt(v + eps), y = (x - f - m) r w + b; mean = f + m and r are kept for backward.
## Backward: dx = r (g w - mean(g w) - xhat mean(g w xhat)) with xhat = (x - mean) r, and the
## column sums sum(g xhat), sum(g) for w and b in partial sums over chunks of rows.
##
##   ln_fwd_row, ln_bwd_row:     one work-item per row, VEC-wide loads (the CPU code paths).
##   ln_fwd_group, ln_bwd_group: a work-group per row, its items interleaved along the row,
##                               sums meeting in local memory (the GPU code paths).
##   ln_wgrad:                   one work-item per (chunk of rows, column).
##   ln_wgrad_v:                 one per (chunk of rows, VEC columns), vector loads (CPU paths).
<%namespace name="c" file="common.mako"/>
${c.prelude([dt])}
/* the most work-items of a *_group work-group (norm.py's GROUP_MAX) */
#define GROUP_MAX 256
<%
    T, W = dt.ct, c.attr.width(dt)
    VT = f"CAT({T}, {W})"
    SUM = "{a} + {b}"

    def ld(p, i):
        return capture(c.load, dt, p, i)

    def vld(p, i):
        return capture(c.vload, dt, p, i, W)
%>
/* w[l] and b[l] as a factor and a term, 1 and 0 without them */
#define WS(l) (has_w ? ${ld("w", "wo + (l)")} : (${T})1)
#define BS(l) (has_b ? ${ld("b", "bo + (l)")} : (${T})0)
#define WV(l) (has_w ? ${vld("(w + wo)", f"(l) / {W}")} : (${VT})1)
#define BV(l) (has_b ? ${vld("(b + bo)", f"(l) / {W}")} : (${VT})0)

__kernel void ln_fwd_row(${c.cptr(dt)} x, long xo, ${c.cptr(dt)} w, long wo, int has_w,
                         ${c.cptr(dt)} b, long bo, int has_b, ${c.ptr(dt)} out, long oo,
                         __global ${T} *mean, __global ${T} *rstd, long rows, long L, ${T} eps)
{
    long row = get_global_id(0);
    if (row >= rows) return;
    __global const ${dt.cl} *xr = x + xo + row * L;
    __global ${dt.cl} *orow = out + oo + row * L;
    ${T} f = ${ld("xr", "0")};
    ${VT} sv = 0;
    long l = 0;
    for (; l + ${W} <= L; l += ${W}) sv += ${vld("xr", f"l / {W}")} - f;
    ${T} s = 0;
    ${c.fold_vector(T, W, "sv", "s", SUM)}
    for (; l < L; ++l) s += ${ld("xr", "l")} - f;
    ${T} m = s / L;
    sv = 0;
    for (l = 0; l + ${W} <= L; l += ${W}) { ${VT} d = ${vld("xr", f"l / {W}")} - f - m; sv += d * d; }
    s = 0;
    ${c.fold_vector(T, W, "sv", "s", SUM)}
    for (; l < L; ++l) { ${T} d = ${ld("xr", "l")} - f - m; s += d * d; }
    ${T} r = rsqrt(s / L + eps);
    for (l = 0; l + ${W} <= L; l += ${W}) {
        ${VT} y = (${vld("xr", f"l / {W}")} - f - m) * r * WV(l) + BV(l);
        ${capture(c.vstore, dt, "orow", f"l / {W}", "y", W)};
    }
    for (; l < L; ++l) ${capture(c.store, dt, "orow", "l", f"({ld('xr', 'l')} - f - m) * r * WS(l) + BS(l)")};
    mean[row] = f + m;
    rstd[row] = r;
}

__kernel void ln_bwd_row(${c.cptr(dt)} g, long go, ${c.cptr(dt)} x, long xo, ${c.cptr(dt)} w,
                         long wo, int has_w, __global const ${T} *mean,
                         __global const ${T} *rstd, ${c.ptr(dt)} out, long oo, long rows, long L)
{
    long row = get_global_id(0);
    if (row >= rows) return;
    __global const ${dt.cl} *gr = g + go + row * L;
    __global const ${dt.cl} *xr = x + xo + row * L;
    __global ${dt.cl} *orow = out + oo + row * L;
    ${T} mu = mean[row], r = rstd[row];
    ${VT} av = 0, cv = 0;
    long l = 0;
    for (; l + ${W} <= L; l += ${W}) {
        ${VT} gw = ${vld("gr", f"l / {W}")} * WV(l);
        av += gw;
        cv += gw * (${vld("xr", f"l / {W}")} - mu);
    }
    ${T} a = 0, cs = 0;
    ${c.fold_vector(T, W, "av", "a", SUM)}
    ${c.fold_vector(T, W, "cv", "cs", SUM)}
    for (; l < L; ++l) {
        ${T} gw = ${ld("gr", "l")} * WS(l);
        a += gw;
        cs += gw * (${ld("xr", "l")} - mu);
    }
    a = a / L;
    cs = cs * r * r / L;
    for (l = 0; l + ${W} <= L; l += ${W}) {
        ${VT} dx = r * (${vld("gr", f"l / {W}")} * WV(l) - a - (${vld("xr", f"l / {W}")} - mu) * cs);
        ${capture(c.vstore, dt, "orow", f"l / {W}", "dx", W)};
    }
    for (; l < L; ++l)
        ${capture(c.store, dt, "orow", "l", f"r * ({ld('gr', 'l')} * WS(l) - a - ({ld('xr', 'l')} - mu) * cs)")};
}

__kernel void ln_fwd_group(${c.cptr(dt)} x, long xo, ${c.cptr(dt)} w, long wo, int has_w,
                           ${c.cptr(dt)} b, long bo, int has_b, ${c.ptr(dt)} out, long oo,
                           __global ${T} *mean, __global ${T} *rstd, long L, ${T} eps)
{
    __local ${T} red[GROUP_MAX];
    int lid = get_local_id(0), nl = get_local_size(0);
    long row = get_group_id(0);
    __global const ${dt.cl} *xr = x + xo + row * L;
    __global ${dt.cl} *orow = out + oo + row * L;
    ${T} f = ${ld("xr", "0")};
    ${T} s = 0;
    for (long l = lid; l < L; l += nl) s += ${ld("xr", "l")} - f;
    ${c.fold_group("s", "red", SUM)}
    ${T} m = s / L;
    s = 0;
    for (long l = lid; l < L; l += nl) { ${T} d = ${ld("xr", "l")} - f - m; s += d * d; }
    ${c.fold_group("s", "red", SUM)}
    ${T} r = rsqrt(s / L + eps);
    for (long l = lid; l < L; l += nl)
        ${capture(c.store, dt, "orow", "l", f"({ld('xr', 'l')} - f - m) * r * WS(l) + BS(l)")};
    if (lid == 0) {
        mean[row] = f + m;
        rstd[row] = r;
    }
}

__kernel void ln_bwd_group(${c.cptr(dt)} g, long go, ${c.cptr(dt)} x, long xo, ${c.cptr(dt)} w,
                           long wo, int has_w, __global const ${T} *mean,
                           __global const ${T} *rstd, ${c.ptr(dt)} out, long oo, long L)
{
    __local ${T} red[GROUP_MAX];
    int lid = get_local_id(0), nl = get_local_size(0);
    long row = get_group_id(0);
    __global const ${dt.cl} *gr = g + go + row * L;
    __global const ${dt.cl} *xr = x + xo + row * L;
    __global ${dt.cl} *orow = out + oo + row * L;
    ${T} mu = mean[row], r = rstd[row];
    ${T} a = 0, cs = 0;
    for (long l = lid; l < L; l += nl) {
        ${T} gw = ${ld("gr", "l")} * WS(l);
        a += gw;
        cs += gw * (${ld("xr", "l")} - mu);
    }
    ${c.fold_group("a", "red", SUM)}
    ${c.fold_group("cs", "red", SUM)}
    a = a / L;
    cs = cs * r * r / L;
    for (long l = lid; l < L; l += nl)
        ${capture(c.store, dt, "orow", "l", f"r * ({ld('gr', 'l')} * WS(l) - a - ({ld('xr', 'l')} - mu) * cs)")};
}

/* part[0][p][l] = sum of g xhat and part[1][p][l] = sum of g over rows p*chunk .. p*chunk+chunk-1:
   column l = global id 0, chunk p = global id 1. Columns along dimension 0, so that neighbouring
   work-items read neighbouring elements (Intel's CPU runtime then packs them into vector lanes:
   with l and p from one flat id it made gathers, 3x slower). */
__kernel void ln_wgrad(${c.cptr(dt)} g, long go, ${c.cptr(dt)} x, long xo,
                       __global const ${T} *mean, __global const ${T} *rstd,
                       __global ${T} *part, long rows, long L, long chunk, long parts)
{
    long l = get_global_id(0), p = get_global_id(1);
    if (l >= L) return;
    long r0 = p * chunk, r1 = min(rows, r0 + chunk);
    ${T} sw = 0, sb = 0;
    for (long row = r0; row < r1; ++row) {
        ${T} gv = ${ld("g", "go + row * L + l")};
        sw += gv * (${ld("x", "xo + row * L + l")} - mean[row]) * rstd[row];
        sb += gv;
    }
    part[p * L + l] = sw;
    part[(parts + p) * L + l] = sb;
}

/* ln_wgrad for rows of a multiple of ${W} elements (the CPU code paths): a work-item sums ${W}
   neighbouring columns (global id 0) over a chunk of rows with vector loads along each row.
   ln_wgrad's work-item per column reads down a column, one element of each cache line it loads,
   and PoCL does not pack neighbouring work-items into vector lanes (norm.py has the figures). */
__kernel void ln_wgrad_v(${c.cptr(dt)} g, long go, ${c.cptr(dt)} x, long xo,
                         __global const ${T} *mean, __global const ${T} *rstd,
                         __global ${T} *part, long rows, long L, long chunk, long parts)
{
    long v = get_global_id(0), p = get_global_id(1);
    if (v * ${W} >= L) return;
    long r0 = p * chunk, r1 = min(rows, r0 + chunk);
    ${VT} sw = (${VT})(0), sb = (${VT})(0);
    for (long row = r0; row < r1; ++row) {
        ${VT} gv = ${vld("(g + go + row * L)", "v")};
        sw += gv * (${vld("(x + xo + row * L)", "v")} - (${VT})(mean[row])) * (${VT})(rstd[row]);
        sb += gv;
    }
    STV(${T}, ${W}, sw, v, part + p * L);
    STV(${T}, ${W}, sb, v, part + (parts + p) * L);
}
