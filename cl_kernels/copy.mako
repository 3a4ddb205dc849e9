## Copies into tensors of dtype `dt` from every source dtype (casting on the way), and fills.
##   copy_c_<src>: contiguous source to contiguous destination, VEC elements per work-item
##   copy_s_<src>: any strides on both sides (common.mako's walk)
##   copy_t_<src>: the last two dims transposed (the destination's rows contiguous, the
##                 source's along the dim before), a tile per work-item
##   copy_r_<src>: rows contiguous on both sides (a permutation that keeps the last dim, as
##                 attention's head split and merge): dimension 0 walks a row VEC elements at a
##                 time, dimension 1 numbers the rows
##   fill_c / fill_s: a value into a contiguous / strided destination
<%namespace name="c" file="common.mako"/>
${c.prelude([dt] + list(srcs))}
<%
def conv(v, s, ctx, w="VEC"):
    """convert value v of source compute type to the destination's compute type"""
    if s is dt or (s.ct == dt.ct and dt.kind != "b"):
        return v
    if dt.kind == "b":              # any non-zero is True, stored as 1 (uint8 has bool's ct)
        # a vector comparison gives -1 per true lane in a mask type as wide as the operand
        return f"CAT(convert_uchar, {w})(-({v} != (CAT({s.ct}, {w}))(0)))" if ctx == "v" \
            else f"(uchar)({v} != ({s.ct})0)"
    return f"CAT(convert_{dt.ct}, {w})({v})" if ctx == "v" else f"({dt.ct})({v})"
%>


## the offsets of the dims before the last two (dims 5..0 of the long8s, the rows kernels'
## dimension 2: index r) added to oo and xo
<%def name="outer_dims()">
% for k in range(5, -1, -1):
    if (nd > ${7 - k}) { long c_ = r % shp.s${k}; r /= shp.s${k}; oo += c_ * o_st.s${k}; xo += c_ * x_st.s${k}; }
% endfor
</%def>

% for s in srcs:
<% w = c.attr.width(dt, s) %>
__kernel void copy_c_${s.short}(${c.ptr(dt)} out, long oo, ${c.cptr(s)} x, long xo, long n)
{
    long i = get_global_id(0);
    if ((i + 1) * ${w} <= n) {
        CAT(${s.ct}, ${w}) v = ${c.vload(s, "x + xo", "i", w)};
        ${c.vstore(dt, "out + oo", "i", conv("v", s, "v", w), w)};
    } else {
        for (long j = i * ${w}; j < n; ++j) {
            ${s.ct} v = ${c.load(s, "x", "xo + j")};
            ${c.store(dt, "out", "oo + j", conv("v", s, "s"))};
        }
    }
}

__kernel void copy_r_${s.short}(${c.ptr(dt)} out, long oo, long8 o_st, ${c.cptr(s)} x, long xo,
                               long8 x_st, int nd, long8 shp)
{
    /* dimension 0: VEC-element pieces of a row (s7), 1: the next dim out (s6), 2: the others */
    long i = get_global_id(0), c6 = get_global_id(1), r = get_global_id(2);
    if (i * ${w} >= shp.s7 || c6 >= shp.s6) return;
    oo += c6 * o_st.s6;
    xo += c6 * x_st.s6;
${outer_dims()}
    if ((i + 1) * ${w} <= shp.s7) {
        CAT(${s.ct}, ${w}) v = ${c.vload(s, "x + xo", "i", w)};
        ${c.vstore(dt, "out + oo", "i", conv("v", s, "v", w), w)};
    } else {
        for (long j = i * ${w}; j < shp.s7; ++j) {
            ${s.ct} v = ${c.load(s, "x", "xo + j")};
            ${c.store(dt, "out", "oo + j", conv("v", s, "s"))};
        }
    }
}

/* A transpose of the last two dims: the destination's rows (dim s7, stride 1) run across the
   source's rows, which run along dim s6 (stride 1 in the source). Each work-item copies a
   TT x TT tile: its TT source rows stay in the cache while it writes TT destination rows
   (the walk read a new line for every element: PoCL, float32 2048 x 1024, 5.5 ms) */
#define TT 16
__kernel void copy_t_${s.short}(${c.ptr(dt)} out, long oo, long8 o_st, ${c.cptr(s)} x, long xo,
                               long8 x_st, int nd, long8 shp)
{
    long jt = get_global_id(0), it = get_global_id(1), r = get_global_id(2);
    if (jt * TT >= shp.s7 || it * TT >= shp.s6) return;
${outer_dims()}
    const long i0 = it * TT, j0 = jt * TT;
    const long ni = min((long)TT, shp.s6 - i0), nj = min((long)TT, shp.s7 - j0);
    for (long i = 0; i < ni; ++i) {
        const long o = oo + (i0 + i) * o_st.s6 + j0, xi = xo + i0 + i;
        for (long j = 0; j < nj; ++j) {
            ${s.ct} v = ${c.load(s, "x", "xi + (j0 + j) * x_st.s7")};
            ${c.store(dt, "out", "o + j", conv("v", s, "s"))};
        }
    }
}

__kernel void copy_s_${s.short}(${c.ptr(dt)} out, long oo, long8 o_st, ${c.cptr(s)} x, long xo,
                               long8 x_st, long n, long chunk, int nd, long8 shp)
{
<%c:walk>
    ${s.ct} v = ${c.load(s, "x", capture(c.at, "xo", "x_st"))};
    ${c.store(dt, "out", capture(c.at, "oo", "o_st"), conv("v", s, "s"))};
</%c:walk>
}
% endfor

<% w = c.attr.width(dt) %>
__kernel void fill_c(${c.ptr(dt)} out, long oo, ${dt.ct} value, long n)
{
    long i = get_global_id(0);
    if ((i + 1) * ${w} <= n) {
        ${c.vstore(dt, "out + oo", "i", "(CAT(" + dt.ct + ", " + w + "))(value)", w)};
    } else {
        for (long j = i * ${w}; j < n; ++j) {
            ${c.store(dt, "out", "oo + j", "value")};
        }
    }
}

__kernel void fill_s(${c.ptr(dt)} out, long oo, long8 o_st, ${dt.ct} value, long n, long chunk,
                     int nd, long8 shp)
{
<%c:walk>
    ${c.store(dt, "out", capture(c.at, "oo", "o_st"), "value")};
</%c:walk>
}

/* arange and linspace: element i computed from its index alone */
__kernel void iota(${c.ptr(dt)} out, long oo, ${dt.ct} start, ${dt.ct} step, long n)
{
    long i = get_global_id(0);
    if (i >= n) return;
    ${c.store(dt, "out", "oo + i", "(" + dt.ct + ")(start + (" + dt.ct + ")i * step)")};
}

% if dt.kind == "f":
__kernel void linspace(${c.ptr(dt)} out, long oo, ${dt.ct} start, ${dt.ct} end, ${dt.ct} step,
                       long n)
{
    long i = get_global_id(0);
    if (i >= n) return;
    ${dt.ct} v = i < n / 2 ? start + step * (${dt.ct})i : end - step * (${dt.ct})(n - 1 - i);
    ${c.store(dt, "out", "oo + i", "v")};
}
% endif
