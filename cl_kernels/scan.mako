## Inclusive scans along the lines of an input of dtype `dt`, seen as [outer, L, inner] with strides
## (so, sl, si). A negative sl walks a line from its end: that is how reverse scans run, with out's
## stride osl negated likewise. One kernel pair per scan in `scans` (clgrad/ops/softmax.py says,
## per scan, the accumulator dtype, identity, combine and output dtype).
##
## A line is cut into B blocks of C elements, one work-item per block (B == 1: the whole line):
##   <scan>_blocks: the total of each block, into sums [outer, B, inner] (accumulator dtype);
##                  the host scans sums along B with this same family (blocked again if long);
##   <scan>_scan:   each block scanned from the scanned total of the blocks before it (carry).
## So a 16M-element line is no single sequential work-item. With `lanes`, a work-item of _scan
## takes VEC neighbouring lines (si == 1) as one vector: CPUs get SIMD that way (not cummax and
## cummin, whose int64 indices would need 512-bit vectors).
## cummax / cummin carry (value, index) pairs: BETTER(a, b) says whether the later value b
## replaces the running a. The index of an element is its position, or xi[...] when has_xi (the
## scan of block sums, whose indices were found inside the blocks).
<%namespace name="c" file="common.mako"/>
${c.prelude([dt] + [S.acc for S in scans] + [S.out for S in scans])}

% if dt.kind == "f":
/* log(exp(a) + exp(b)) for scalars and vectors (?: selects per component on vectors), as
   torch's _log_add_exp_helper: equal infinities give themselves, not inf - inf; a NaN goes
   through the arithmetic. No fmin / fmax: PoCL calls those out of line. */
#define LOGADDEXP(a, b) ((((a) == (b)) & isinf(a)) ? (a) : \
    log1p(exp(-fabs((a) - (b)))) + ((a) > (b) ? (a) : (b)))
% endif

## fold element value v, at position l, into the running a (and ia); selects, not branches, for
## cummax / cummin: twice as fast on random data
<%def name="take(S, v, l)">\
% if S.is_arg:
{
            ${S.acc.ct} v_ = ${v};
            int t_ = BETTER(a, v_);
            a = t_ ? v_ : a;
            ia = t_ ? (has_xi ? xi[xio + xb - xo + (${l}) * sl] : (${l})) : ia;
        }\
% else:
a = COMBINE(a, (${S.acc.ct})(${v}));\
% endif
</%def>

% for S in scans:
<%
    A = S.acc.ct
    W = c.attr.width(dt, S.acc, S.out)
    VA = f"CAT({A}, {W})"
%>
/* ---------------- ${S.name} ---------------- */
% if S.is_arg:
#define BETTER(a, b) (${S.better})
% else:
#define COMBINE(a, b) (${S.combine})
% endif

__kernel void ${S.name}_blocks(${c.cptr(dt)} x, long xo, long so, long sl, long si,
% if S.is_arg:
    __global const long *xi, long xio, int has_xi, __global long *sidx,
% endif
    __global ${A} *sums, long outer, long L, long inner, long C, long B)
{
    long gid = get_global_id(0);
    if (gid >= outer * B * inner) return;
    long i = gid % inner, b = (gid / inner) % B, o = gid / (inner * B);
    long xb = xo + o * so + i * si, l1 = min(L, b * C + C);
    ${A} a = ${S.identity};
% if S.is_arg:
    long ia = 0;
% endif
    for (long l = b * C; l < l1; ++l)
        ${take(S, capture(c.load, dt, "x", "xb + l * sl"), "l")}
    sums[gid] = a;
% if S.is_arg:
    sidx[gid] = ia;
% endif
}

__kernel void ${S.name}_scan(${c.cptr(dt)} x, long xo, long so, long sl, long si,
% if S.is_arg:
    __global const long *xi, long xio, int has_xi, __global long *oidx,
    __global const long *cidx,
% endif
    ${c.ptr(S.out)} out, long oo, long osl, __global const ${A} *carry,
    long outer, long L, long inner, long C, long B, int lanes)
{
    long gid = get_global_id(0);
    long nl = lanes ? (inner + ${W} - 1) / ${W} : inner;      /* work-items per block row */
    if (gid >= outer * B * nl) return;
    long il = gid % nl, b = (gid / nl) % B, o = gid / (nl * B);
    long l0 = b * C, l1 = min(L, l0 + C);
    long i0 = lanes ? il * ${W} : il, i1 = lanes ? min(inner, i0 + ${W}) : i0 + 1;
    long cb = (o * B + b - 1) * inner;          /* the carry into block b: sums[o, b - 1, :] */
% if not S.is_arg:
    if (lanes && i1 == i0 + ${W}) {
        long xb = xo + o * so + i0, ob = oo + o * L * inner + i0;
        ${VA} a = b > 0 ? CAT(vload, ${W})(0, carry + cb + i0) : (${VA})(${S.identity});
        for (long l = l0; l < l1; ++l) {
            a = COMBINE(a, CAT(convert_${A}, ${W})(${c.vload(dt, "(x + xb + l * sl)", "0", W)}));
<% cv = f"CAT(convert_{S.out.ct}, {W})(a)" %>\
            ${c.vstore(S.out, "(out + ob + l * osl)", "0", cv, W)};
        }
        return;
    }
% endif
    for (long i = i0; i < i1; ++i) {
        long xb = xo + o * so + i * si, ob = oo + o * L * inner + i;
        ${A} a = b > 0 ? carry[cb + i] : ${S.identity};
% if S.is_arg:
        long ia = b > 0 ? cidx[cb + i] : 0;
% endif
        for (long l = l0; l < l1; ++l) {
            ${take(S, capture(c.load, dt, "x", "xb + l * sl"), "l")}
            ${c.store(S.out, "out", "ob + l * osl", f"({S.out.ct})(a)")};
% if S.is_arg:
            oidx[ob + l * osl] = ia;
% endif
        }
    }
}
#undef ${"BETTER" if S.is_arg else "COMBINE"}
% endfor

% if dt.kind == "f":
/* ---------------- cummax / cummin backward ---------------- */
/* All contiguous [outer, L, inner]. Along a line the chosen indices never decrease, and element
   l is chosen exactly from position l to the end of its run, so its gradient is the sum of g
   over that run (zero when idx[l] != l): no atomics. */
__kernel void cumext_backward(${c.cptr(dt)} g, long go, __global const long *idx, long io,
                              ${c.ptr(dt)} out, long oo, long L, long inner, long n)
{
    long gid = get_global_id(0);
    if (gid >= n) return;
    long l = (gid / inner) % L, base = gid - l * inner;
    ${dt.ct} a = 0;
    for (long k = l; k < L && idx[io + base + k * inner] == l; ++k)
        a += ${c.load(dt, "g", "go + base + k * inner")};
    ${c.store(dt, "out", "oo + gid", "a")};
}

/* its adjoint: out[o, l, i] = x[o, idx[o, l, i], i] */
__kernel void cumext_gather(${c.cptr(dt)} x, long xo, __global const long *idx, long io,
                            ${c.ptr(dt)} out, long oo, long L, long inner, long n)
{
    long gid = get_global_id(0);
    if (gid >= n) return;
    long l = (gid / inner) % L, base = gid - l * inner;
<% v = capture(c.load, dt, "x", "xo + base + idx[io + gid] * inner") %>\
    ${c.store(dt, "out", "oo + gid", v)};
}
% endif
