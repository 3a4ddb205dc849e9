## 2-D pooling of one dtype `dt`, forward and backward (clgrad/kernels/pool.py drives them).
## Inputs x are (N, C, H, W) with any strides, outputs and gradients contiguous (N, C, OH, OW);
## values are computed in the compute type T (float for float16 / bfloat16).
##
## Forward kernels take one output row (n, c, oh) per work-item. Backward kernels take one row of
## the input gradient (n, c, ih) and, for each of its elements, add up the output gradients of the
## windows that hold it: it walks the output rows whose windows cover its input row (found by
## inverting the window formulas) and adds their gradients into its own row. No atomics, no
## division per element, the same sums in the same order on every run.
##   max_pool_fwd   max over the window, torch's rule: the first maximum in row-major order wins,
##                  a NaN beats everything (the last NaN wins); idx = ih * W + iw (int64)
##   max_pool_bwd   gx[ih, iw] = sum of g[oh, ow] over the windows whose idx is ih * W + iw
##   avg_pool_*     torch's avg_pool2d: the divisor is the window's size within the padded input
##                  (count_include_pad) or within the input; divisor_override (> 0) replaces it
##   adaptive_*     window [floor(o * H / OH), ceil((o + 1) * H / OH)) per dim
<%namespace name="c" file="common.mako"/>
${c.prelude([dt])}
<% T = dt.ct %>
#define T ${T}

/* min / max as expressions: with PoCL's integer built-ins these kernels measured 1.4-2x slower */
#define IMIN(a, b) ((a) < (b) ? (a) : (b))
#define IMAX(a, b) ((a) > (b) ? (a) : (b))


<%def name="row_of(n_rows)">
    const long row = get_global_id(0);
    if (row >= ${n_rows}) return;
</%def>

/* Two passes: the max, then (only when asked for) where it is. Measured on PoCL: tracking the
   index in the same loop as the value costs 2.5x the two passes together. */
__kernel void max_pool_fwd(${c.ptr(dt)} out, __global long *idx, int want_idx,
                           ${c.cptr(dt)} x, long xo, long x_sn, long x_sc, long x_sh, long x_sw,
                           int C, int H, int W, int OH, int OW, int KH, int KW, int sh, int sw,
                           int ph, int pw, int dh, int dw, long rows)
{
    ${row_of("rows")}
    const long nc = row / OH;
    const int oh = row - nc * OH;
    const long n = nc / C;
    ${c.cptr(dt)} xb = x + xo + n * x_sn + (nc - n * C) * x_sc;
    /* the window's rows inside the input: ih0 + t * dh for t < nh */
    int ih0 = oh * sh - ph;
    const int ih1 = IMIN(ih0 + (KH - 1) * dh + 1, H);
    while (ih0 < 0) ih0 += dh;
    const int nh = IMAX(0, (ih1 - ih0 + dh - 1) / dh);
    int iw0 = -pw;
    for (int ow = 0; ow < OW; ++ow, iw0 += sw) {
        int j0 = iw0;
        const int j1 = IMIN(iw0 + (KW - 1) * dw + 1, W);
        while (j0 < 0) j0 += dw;
        const int nw = IMAX(0, (j1 - j0 + dw - 1) / dw);
        T m = -INFINITY;
        for (int th = 0; th < nh; ++th) {
            ${c.cptr(dt)} xr = xb + (ih0 + th * dh) * x_sh;
            for (int tw = 0; tw < nw; ++tw) {
                const T v = ${c.load(dt, "xr", "(j0 + tw * dw) * x_sw")};
                /* torch's rule: strictly greater replaces (the first max stays), a NaN too */
                if (v > m || v != v) m = v;
            }
        }
        ${c.store(dt, "out", "row * OW + ow", "m")};
        if (!want_idx) continue;
        /* torch's index for an empty window (which torch allows with ceil_mode) */
        long mi = (long)ih0 * W + j0;
        if (m == m) {           /* the first maximum in row-major order: scan backwards */
            for (int th = nh - 1; th >= 0; --th) {
                ${c.cptr(dt)} xr = xb + (ih0 + th * dh) * x_sh;
                for (int tw = nw - 1; tw >= 0; --tw)
                    if (${c.load(dt, "xr", "(j0 + tw * dw) * x_sw")} == m)
                        mi = (long)(ih0 + th * dh) * W + j0 + tw * dw;
            }
        } else {                /* a NaN: the last one */
            for (int th = 0; th < nh; ++th) {
                ${c.cptr(dt)} xr = xb + (ih0 + th * dh) * x_sh;
                for (int tw = 0; tw < nw; ++tw) {
                    const T v = ${c.load(dt, "xr", "(j0 + tw * dw) * x_sw")};
                    if (v != v) mi = (long)(ih0 + th * dh) * W + j0 + tw * dw;
                }
            }
        }
        idx[row * OW + ow] = mi;
    }
}

__kernel void max_pool_bwd(${c.ptr(dt)} gx, ${c.cptr(dt)} g, __global const long *idx,
                           int H, int W, int OH, int OW, int KH, int KW, int sh, int sw, int ph,
                           int pw, int dh, int dw, long rows)
{
    ${row_of("rows")}
    const long nc = row / H;
    const int ih = row - nc * H;
    ${c.ptr(dt)} gr = gx + row * W;
    for (int iw = 0; iw < W; ++iw) ${c.store(dt, "gr", "iw", "(T)0")};
    /* the output rows whose windows hold input row ih; of their maxima, those in this row */
    const long lo = (long)ih * W;
    for (int kh = 0; kh < KH; ++kh) {
        const int a = ih + ph - kh * dh;
        if (a < 0 || a % sh || a / sh >= OH) continue;
        const long o0 = (nc * OH + a / sh) * OW;
        for (int ow = 0; ow < OW; ++ow) {
            const long v = idx[o0 + ow] - lo;
            if (v >= 0 && v < W) {
                const T add = ${c.load(dt, "g", "o0 + ow")};
                ${c.store(dt, "gr", "v", capture(c.load, dt, "gr", "v") + " + add")};
            }
        }
    }
}

/* avg_pool2d's window of output o along one dim, as torch computes it: [s, e) clipped to the
   padded input has `full` elements (the count with count_include_pad), then [s, e) is clipped to
   the input itself */
#define WINDOW(o, st, p, k, n, s, e, full) \
    s = (o) * (st) - (p); e = IMIN(s + (k), (n) + (p)); full = e - s; \
    s = IMAX(s, 0); e = IMIN(e, n);

/* the divisor of a window: divisor_override, else its count with or without the padding */
#define DIVISOR(hs, he, fh, ws, we, fw) \
    ((T)(divisor ? divisor : include_pad ? (fh) * (fw) : ((he) - (hs)) * ((we) - (ws))))

__kernel void avg_pool_fwd(${c.ptr(dt)} out, ${c.cptr(dt)} x, long xo, long x_sn, long x_sc,
                           long x_sh, long x_sw, int C, int H, int W, int OH, int OW, int KH,
                           int KW, int sh, int sw, int ph, int pw, int include_pad, int divisor,
                           long rows)
{
    ${row_of("rows")}
    const long nc = row / OH;
    const int oh = row - nc * OH;
    const long n = nc / C;
    ${c.cptr(dt)} xb = x + xo + n * x_sn + (nc - n * C) * x_sc;
    int hs, he, fh;
    WINDOW(oh, sh, ph, KH, H, hs, he, fh)
    for (int ow = 0; ow < OW; ++ow) {
        int ws, we, fw;
        WINDOW(ow, sw, pw, KW, W, ws, we, fw)
        T acc = 0;
        for (int ih = hs; ih < he; ++ih) {
            ${c.cptr(dt)} xr = xb + ih * x_sh;
            for (int iw = ws; iw < we; ++iw) acc += ${c.load(dt, "xr", "iw * x_sw")};
        }
        /* a window that misses the input (possible with ceil_mode) averages to 0, as in torch */
        const T v = (hs < he && ws < we) ? acc / DIVISOR(hs, he, fh, ws, we, fw) : (T)0;
        ${c.store(dt, "out", "row * OW + ow", "v")};
    }
}

__kernel void avg_pool_bwd(${c.ptr(dt)} gx, ${c.cptr(dt)} g, int H, int W, int OH, int OW,
                           int KH, int KW, int sh, int sw, int ph, int pw, int include_pad,
                           int divisor, long rows)
{
    ${row_of("rows")}
    const long nc = row / H;
    const int ih = row - nc * H;
    ${c.ptr(dt)} gr = gx + row * W;
    for (int iw = 0; iw < W; ++iw) ${c.store(dt, "gr", "iw", "(T)0")};
    /* the windows oh * sh - ph <= ih < oh * sh - ph + KH, each spread over its columns */
    const int oh0 = IMAX(0, (ih + ph - KH + sh) / sh), oh1 = IMIN(OH - 1, (ih + ph) / sh);
    for (int oh = oh0; oh <= oh1; ++oh) {
        int hs, he, fh;
        WINDOW(oh, sh, ph, KH, H, hs, he, fh)
        if (hs >= he) continue;
        ${c.cptr(dt)} go = g + (nc * OH + oh) * OW;
        for (int ow = 0; ow < OW; ++ow) {
            int ws, we, fw;
            WINDOW(ow, sw, pw, KW, W, ws, we, fw)
            if (ws >= we) continue;
            const T v = ${c.load(dt, "go", "ow")} / DIVISOR(hs, he, fh, ws, we, fw);
            for (int iw = ws; iw < we; ++iw)
                ${c.store(dt, "gr", "iw", capture(c.load, dt, "gr", "iw") + " + v")};
        }
    }
}

__kernel void adaptive_avg_fwd(${c.ptr(dt)} out, ${c.cptr(dt)} x, long xo, long x_sn, long x_sc,
                               long x_sh, long x_sw, int C, int H, int W, int OH, int OW, long rows)
{
    ${row_of("rows")}
    const long nc = row / OH;
    const int oh = row - nc * OH;
    const long n = nc / C;
    const long base = xo + n * x_sn + (nc - n * C) * x_sc;
    const int hs = (long)oh * H / OH, he = ((long)(oh + 1) * H + OH - 1) / OH;
    for (int ow = 0; ow < OW; ++ow) {
        const int ws = (long)ow * W / OW, we = ((long)(ow + 1) * W + OW - 1) / OW;
        T acc = 0;
        for (int ih = hs; ih < he; ++ih)
            for (int iw = ws; iw < we; ++iw)
                acc += ${c.load(dt, "x", "base + ih * x_sh + iw * x_sw")};
        ${c.store(dt, "out", "row * OW + ow", "acc / (T)((he - hs) * (we - ws))")};
    }
}

__kernel void adaptive_avg_bwd(${c.ptr(dt)} gx, ${c.cptr(dt)} g, int H, int W, int OH, int OW,
                               long rows)
{
    ${row_of("rows")}
    const long nc = row / H;
    const int ih = row - nc * H;
    ${c.ptr(dt)} gr = gx + row * W;
    for (int iw = 0; iw < W; ++iw) ${c.store(dt, "gr", "iw", "(T)0")};
    /* the output rows whose windows hold ih: floor(ih * OH / H) .. ceil((ih + 1) * OH / H) - 1 */
    const int oh0 = (long)ih * OH / H, oh1 = ((long)(ih + 1) * OH + H - 1) / H;
    for (int oh = oh0; oh < oh1; ++oh) {
        const int hs = (long)oh * H / OH, he = ((long)(oh + 1) * H + OH - 1) / OH;
        if (ih < hs || ih >= he) continue;
        const long o0 = (nc * OH + oh) * OW;
        for (int ow = 0; ow < OW; ++ow) {
            const int ws = (long)ow * W / OW, we = ((long)(ow + 1) * W + OW - 1) / OW;
            const T v = ${c.load(dt, "g", "o0 + ow")} / (T)((he - hs) * (we - ws));
            for (int iw = ws; iw < we; ++iw)
                ${c.store(dt, "gr", "iw", capture(c.load, dt, "gr", "iw") + " + v")};
        }
    }
}
