## Reductions of an input of dtype `dt`, one kernel family per reduction in `reductions`
## (clgrad/ops/reduce.py describes them: accumulator dtype, identity, combine, output dtype).
##
## The input is seen as M outputs x N reduced elements: output m sits at offset base(m) given by
## the kept dimensions (knd dims, shape ksh, strides kst); element r of its row at base(m) plus the
## offset of r in the reduced dimensions (rnd dims, shape rsh, strides rst).
##   <op>_c:   rows that are contiguous (rnd == 1, stride 1): VEC-wide loads on CPUs.
##   <op>_r:   any strides.
##   <op>_col: one work-item per output walking its row: for reductions over a leading dimension,
##             where neighbouring outputs are neighbours in memory.
## A row may be split in `parts` pieces of `chunk` elements, one work-group each, whose partial
## results (accumulator dtype, in `part`) a second launch reduces. The L items of a work-group
## combine in local memory. Arg reductions carry (value, index) pairs and always use parts == 1.
<%namespace name="c" file="common.mako"/>
${c.prelude([dt] + [r.acc for r in reductions] + [r.out for r in reductions])}
/* the most work-items of a <op>_c / <op>_r work-group (reduce.py's GROUP_MAX) */
#define GROUP_MAX 256

<%def name="kept_base()">
    long base = xo;
    { long r_ = m; long sh_[8] = {ksh.s0, ksh.s1, ksh.s2, ksh.s3, ksh.s4, ksh.s5, ksh.s6, ksh.s7};
      long st_[8] = {kst.s0, kst.s1, kst.s2, kst.s3, kst.s4, kst.s5, kst.s6, kst.s7};
      for (int d_ = knd - 1; d_ >= 0; --d_) { base += (r_ % sh_[d_]) * st_[d_]; r_ /= sh_[d_]; } }
</%def>

## fold element value v (at flat reduced index rr) into acc (and idx)
<%def name="take(R, v, rr)">\
% if R.is_arg:
{ ${R.acc.ct} v_ = ${v}; if (BETTER(acc, idx, v_, ${rr})) { acc = v_; idx = ${rr}; } }\
% else:
acc = COMBINE(acc, (${R.acc.ct})(${v}));\
% endif
</%def>

<%def name="init(R)">
    ${R.acc.ct} acc = ${R.identity};
% if R.is_arg:
    long idx = 0x7fffffffffffffffL;
% endif
</%def>

## tree reduction across the work-group (sv / si, declared by group_start), then the write of
## output (or partial) g. L need not be a power of two: each step folds the upper half (rounded
## down) onto the lower one, so an odd count keeps its middle element for the next step.
<%def name="finish(R)">
% if R.is_arg:
    si[lid] = idx;
% endif
    sv[lid] = acc;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int n_ = L; n_ > 1; ) {
        int h_ = (n_ + 1) / 2;
        if (lid < n_ - h_) {
% if R.is_arg:
            if (BETTER(sv[lid], si[lid], sv[lid + h_], si[lid + h_])) { sv[lid] = sv[lid + h_]; si[lid] = si[lid + h_]; }
% else:
            sv[lid] = COMBINE(sv[lid], sv[lid + h_]);
% endif
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        n_ = h_;
    }
    if (lid == 0) {
% if R.is_arg:
        out[oo + g] = si[0];
% else:
        if (parts == 1) { ${c.store(R.out, "out", "oo + g", "(" + R.out.ct + ")(" + R.post("sv[0]") + ")")}; }
        else { ${c.store(R.acc, "part", "g", "sv[0]")}; }
% endif
    }
</%def>

<%def name="signature(R, kind)">
__kernel void ${R.name}_${kind}(
% if R.is_arg:
    __global long *out,
% else:
    ${c.ptr(R.out)} out,
% endif
    long oo, ${c.ptr(R.acc)} part, ${c.cptr(dt)} x, long xo,
    long M, long N, int knd, long8 ksh, long8 kst, int rnd, long8 rsh, long8 rst,
    long chunk, int parts, ${R.acc.ct} scale)
</%def>

## The local buffers open the kernel (OpenCL C wants __local variables at kernel function scope);
## they hold GROUP_MAX items, and the host keeps L within it.
<%def name="group_start(R)">
    __local ${R.acc.ct} sv[GROUP_MAX];
% if R.is_arg:
    __local long si[GROUP_MAX];
% endif
    long g = get_group_id(0);
    long m = g / parts;
    long part_i = g % parts;
    int lid = get_local_id(0);
    int L = get_local_size(0);
    ${kept_base()}
    long r0 = part_i * chunk;
    long r1 = min(N, r0 + chunk);
</%def>

% for R in reductions:
/* ---------------- ${R.name} ---------------- */
#define COMBINE(a, b) (${R.combine})
% if R.is_arg:
#define BETTER(va, ia, vb, ib) (${R.better})
% endif

${signature(R, "c")}
{
    ${group_start(R)}
    ${init(R)}
    __global const ${dt.cl} *row = x + base;
#if REDUCE_BLOCKED
<% W = c.attr.width(dt, R.acc); VA = f"CAT({R.acc.ct}, {W})" %>
    /* CPU: each work-item takes one contiguous block: a scalar head up to an address aligned to
       a whole vector, then whole vectors through a vector pointer (the fastest loop PoCL makes
       of it), then a scalar tail */
    long per = (r1 - r0 + L - 1) / L;
    long b0 = r0 + lid * per;
    long b1 = min(r1, b0 + per);
    long r = b0;
% if not R.is_arg:
% if dt.cl == dt.ct:
    while (r < b1 && ((ulong)(row + r) % sizeof(CAT(${dt.cl}, ${W}))) != 0) {
        ${take(R, capture(c.load, dt, "row", "r"), "r")}
        ++r;
    }
% endif
    if (b1 - r >= ${W}) {
        long m = (b1 - r) / ${W};
        ${VA} vacc = (${VA})(${R.identity});
% if dt.cl == dt.ct:
        __global const CAT(${dt.cl}, ${W}) *p = (__global const CAT(${dt.cl}, ${W}) *)(row + r);
        for (long q = 0; q < m; ++q) vacc = COMBINE(vacc, CAT(convert_${R.acc.ct}, ${W})(p[q]));
% else:
        for (long q = 0; q < m; ++q)
            vacc = COMBINE(vacc, CAT(convert_${R.acc.ct}, ${W})(${c.vload(dt, "row + r", "q", W)}));
% endif
        r += m * ${W};
        ${R.acc.ct} h[${W}];
        CAT(vstore, ${W})(vacc, 0, h);
        for (int k = 0; k < ${W}; ++k) acc = COMBINE(acc, h[k]);
    }
% endif
    for (; r < b1; ++r) ${take(R, capture(c.load, dt, "row", "r"), "r")}
#else
    /* GPU: work-items interleave, neighbours read neighbours */
    for (long r = r0 + lid; r < r1; r += L) ${take(R, capture(c.load, dt, "row", "r"), "r")}
#endif
    ${finish(R)}
}

${signature(R, "r")}
{
    ${group_start(R)}
    ${init(R)}
    /* One loop, the uniform test of rnd inside it: Intel's CPU compiler (driver 2026.22)
       miscompiled the two loops this was before (one for rnd == 1, one for the general walk) in
       work-groups of fewer than 8 items, dropping all but item 0's partial sums. */
    long sh_[8] = {rsh.s0, rsh.s1, rsh.s2, rsh.s3, rsh.s4, rsh.s5, rsh.s6, rsh.s7};
    long st_[8] = {rst.s0, rst.s1, rst.s2, rst.s3, rst.s4, rst.s5, rst.s6, rst.s7};
    for (long r = r0 + lid; r < r1; r += L) {
        long off = base;
        if (rnd == 1) {
            off += r * st_[0];
        } else {
            long q_ = r;
            for (int d_ = rnd - 1; d_ >= 0; --d_) { off += (q_ % sh_[d_]) * st_[d_]; q_ /= sh_[d_]; }
        }
        ${take(R, capture(c.load, dt, "x", "off"), "r")}
    }
    ${finish(R)}
}

${signature(R, "col")}
{
    long m = get_global_id(0);
    if (m >= M) return;
    ${kept_base()}
    ${init(R)}
    long s0 = rst.s0;
    for (long r = 0; r < N; ++r) ${take(R, capture(c.load, dt, "x", "base + r * s0"), "r")}
% if R.is_arg:
    out[oo + m] = idx;
% else:
    ${c.store(R.out, "out", "oo + m", "(" + R.out.ct + ")(" + R.post("acc") + ")")};
% endif
}
% if not R.is_arg:
<% W = c.attr.width(dt, R.acc); VA = f"CAT({R.acc.ct}, {W})"; U = 4; UW = f"({U} * {W})" %>
/* one kept dim of stride 1 and one reduced dim (column sums of a row-major matrix): a work-item
   reduces ${U} x ${W} neighbouring outputs with vector loads along each row, so that every cache
   line it touches is used whole */
${signature(R, "colv")}
{
    long m0 = get_global_id(0) * ${UW};
    if (m0 >= M) return;
    long s0 = rst.s0;
    __global const ${dt.cl} *col = x + xo + m0;
    if (m0 + ${UW} <= M) {
% for u in range(U):
        ${VA} a${u} = (${VA})(${R.identity});
% endfor
        for (long r = 0; r < N; ++r) {
            __global const ${dt.cl} *rowp = col + r * s0;
% for u in range(U):
            a${u} = COMBINE(a${u}, CAT(convert_${R.acc.ct}, ${W})(${c.vload(dt, "rowp", str(u), W)}));
% endfor
        }
        ${R.acc.ct} h[${UW}];
% for u in range(U):
        CAT(vstore, ${W})(a${u}, ${u}, h);
% endfor
        for (int k = 0; k < ${UW}; ++k)
            ${c.store(R.out, "out", "oo + m0 + k", "(" + R.out.ct + ")(" + R.post("h[k]") + ")")};
    } else {
        for (long m = m0; m < M; ++m) {
            ${R.acc.ct} acc = ${R.identity};
            for (long r = 0; r < N; ++r) ${take(R, capture(c.load, dt, "x", "xo + m + r * s0"), "r")}
            ${c.store(R.out, "out", "oo + m", "(" + R.out.ct + ")(" + R.post("acc") + ")")};
        }
    }
}
% endif
#undef COMBINE
% if R.is_arg:
#undef BETTER
% endif
% endfor
