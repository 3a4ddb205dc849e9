## Gathers and scatters of data of dtype `dt`: one kernel family for every indexing op (x[idx],
## x[idx] = v, index_select, gather, scatter, scatter_add, index_add/copy/fill, masked_select,
## masked_scatter, take, the overlapping as_strided backward), plus nonzero and tril/triu.
##
## The iteration space is walked as common.mako's walk() describes (up to 8 right-aligned dims,
## runs of `chunk` elements per work-item).
## A data operand is addressed as base + coords . strides (long8) plus, on the indexed side, up to
## SLOTS index tensors: slot k reads int64 value v from its own tensor at io_k + coords . is_k
## (strides 0 broadcast it), wraps it (v < 0: v + sz_k) and moves the address by v * mul_k (mul_k
## is the data stride of the dim it indexes). Bounds were checked before the launch (check_index),
## so the kernels trust every index.
##   gather:       out[out address] = x[x address + index terms]
##   scatter:      dst[dst address + index terms] = src[src address]
##   scatter_add:  the same with dst += src * alpha, atomically, so duplicates add up
<%namespace name="c" file="common.mako"/>
${c.prelude([dt])}
% if lines:
<% W = c.attr.width(dt); VT = f"CAT({dt.ct}, {W})" %>
/* index_add along a dim by lines: dst[o, idx[n], i] += alpha * src[o, n, i] for n = 0 .. N - 1
   in order, for lines contiguous across the dim in both tensors and inner a multiple of ${W}.
   A work-item owns ${W} neighbouring lines (one vector: PoCL does not vectorise across
   work-items whose body is a loop) and walks the N indices itself, so that duplicate indices
   add up without atomics and in index order (as torch's CPU index_add). Programs of their own
   (index.py's INDEX_LINES), CPU code paths. Indices are clamped as index_terms clamps them. */
__kernel void index_add_lines_v(${c.ptr(dt)} dst, long dof, long d_so, long d_sv,
                                ${c.cptr(dt)} src, long sof, long s_so, long s_sn,
                                __global const long *idx, long iof, long i_sn, long V,
                                long outer, long inner, long N, ${dt.ct} alpha)
{
    long gid = get_global_id(0), nv = inner / ${W};
    if (gid >= outer * nv) return;
    long o = gid / nv, i = (gid % nv) * ${W};
    long d0 = dof + o * d_so + i, s0 = sof + o * s_so + i;
    for (long n = 0; n < N; ++n) {
        long v = idx[iof + n * i_sn];
        v = v < 0 ? v + V : v;
        long d = d0 + (v < 0 ? 0 : v >= V ? V - 1 : v) * d_sv;
        ${VT} a = ${c.vload(dt, "(src + s0 + n * s_sn)", "0", W)};
        ${VT} b = ${c.vload(dt, "(dst + d)", "0", W)};
        ${c.vstore(dt, "(dst + d)", "0", "b + alpha * a", W)};
    }
}
% else:
% if dt.ct in ("double", "long"):
/* 64-bit accumulation needs 64-bit atomics; the host does not launch scatter_add without them */
#if defined(cl_khr_int64_base_atomics)
#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable
#define HAVE_ACC 1
#endif
% else:
#define HAVE_ACC 1
% endif

<%def name="index_params()">\
% for k in range(SLOTS):
, __global const long *i${k}, long io${k}, long8 is${k}, long mul${k}, long sz${k}\
% endfor
</%def>

## An index out of range is clamped into [0, sz): the host's check (check_index) raises for it,
## but a replay of a compiled step reads the check's flag after the launch, and an index past
## the tensor must not reach other memory meanwhile (a replayed index_add at 10^8 crashed PoCL).
<%def name="index_terms()">\
long ix_ = 0;
% for k in range(SLOTS):
    if (nidx > ${k}) {
        long v_ = i${k}[${c.at("io%d" % k, "is%d" % k)}];
        v_ = v_ < 0 ? v_ + sz${k} : v_;
        ix_ += (v_ < 0 ? 0 : v_ >= sz${k} ? sz${k} - 1 : v_) * mul${k};
    }
% endfor
</%def>

__kernel void gather(${c.ptr(dt)} out, long oo, long8 o_st, ${c.cptr(dt)} x, long xo,
                     long8 x_st, int nidx${index_params()}, long n, long chunk, int nd, long8 shp)
{
<%c:walk>
        ${index_terms()}
        ${dt.ct} v = ${c.load(dt, "x", capture(c.at, "xo", "x_st") + " + ix_")};
        ${c.store(dt, "out", capture(c.at, "oo", "o_st"), "v")};
</%c:walk>
}

__kernel void scatter(${c.ptr(dt)} dst, long dof, long8 d_st, ${c.cptr(dt)} src, long so,
                      long8 s_st, int nidx${index_params()}, long n, long chunk, int nd,
                      long8 shp)
{
<%c:walk>
        ${index_terms()}
        ${dt.ct} v = ${c.load(dt, "src", capture(c.at, "so", "s_st"))};
        ${c.store(dt, "dst", capture(c.at, "dof", "d_st") + " + ix_", "v")};
</%c:walk>
}

## Complex dtypes (stored as float2 / double2 pairs) have the moves here (gather, scatter, tri);
## their accumulation and nonzero go through the real parts on the host side (kernels/index.py).
% if dt.kind != "c":
## ---- atomic accumulation: acc_add(p, i, v) does p[i] += v for compute-type v --------------------
## 32- and 64-bit types: atomic add for ints, a compare-and-swap loop for floats. 16- and 8-bit
## types: a compare-and-swap loop on the aligned 32-bit word that holds the element (the pool hands
## out blocks of whole words, so that word is always inside the buffer). bool adds as logical or,
## uint8 wraps, as torch does. The loops start from a guess (all bits 0) rather than a plain
## read of the word: the first compare-and-swap reads it atomically, where a plain read would race
## with the other work-items' updates (Oclgrind reports it).
#ifdef HAVE_ACC
% if dt.cl == "float":
inline void acc_add(__global float *p, long i, float v) {
    volatile __global uint *w = (volatile __global uint *)(p + i);
    uint old = 0, seen;
    do {
        seen = old;
        old = atomic_cmpxchg(w, seen, as_uint(as_float(seen) + v));
    } while (old != seen);
}
% elif dt.cl == "double":
inline void acc_add(__global double *p, long i, double v) {
    volatile __global ulong *w = (volatile __global ulong *)(p + i);
    ulong old = 0, seen;
    do {
        seen = old;
        old = atom_cmpxchg(w, seen, as_ulong(as_double(seen) + v));
    } while (old != seen);
}
% elif dt.cl == "int":
inline void acc_add(__global int *p, long i, int v) {
    atomic_add((volatile __global int *)(p + i), v);
}
% elif dt.cl == "long":
inline void acc_add(__global long *p, long i, long v) {
    atom_add((volatile __global long *)(p + i), v);
}
% else:
<%
    bits = 16 if dt.itemsize == 2 else 8
    per_word = 32 // bits
    mask = "0xFFFFu" if bits == 16 else "0xFFu"
%>
inline void acc_add(${c.ptr(dt)} p, long i, ${dt.ct} v) {
    volatile __global uint *w = (volatile __global uint *)((__global uchar *)p +
                                                           (i * ${dt.itemsize} & ~(long)3));
    uint shift = (uint)(i & ${per_word - 1}) * ${bits};
    uint old = 0, seen;
    do {
        seen = old;
        uint e = (seen >> shift) & ${mask};
% if dt.cl == "half":
        ushort h = (ushort)e;
        float f = vload_half(0, (const __private half *)&h) + v;
        vstore_half(f, 0, (__private half *)&h);
        e = h;
% elif dt.name == "bfloat16":
        e = f2bf(bf2f((ushort)e) + v);
% elif dt.kind == "b":
        e = e | (v != 0);
% else:
        e = (e + v) & ${mask};
% endif
        old = atomic_cmpxchg(w, seen, (seen & ~(${mask} << shift)) | (e << shift));
    } while (old != seen);
}
% endif

## ---- atomic combination for scatter_reduce: op 0 product, 1 maximum, 2 minimum --------------
## The same compare-and-swap loops as acc_add (on the element's own word, or the aligned 32-bit
## word that holds a 16- or 8-bit element), with the combination in place of the sum. A NaN
## operand makes the maximum and minimum NaN, as torch's.
inline ${dt.ct} combine(${dt.ct} a, ${dt.ct} v, int op) {
    if (op == 0) return a * v;
% if dt.kind == "f":
    if (isnan(a) || isnan(v)) return a + v;
% endif
    if (op == 1) return a > v ? a : v;
    return a < v ? a : v;
}

% if dt.cl in ("float", "int"):
<% W = "uint" if dt.cl == "float" else "int"; AS = "as_float" if dt.cl == "float" else "" %>\
inline void acc_combine(__global ${dt.cl} *p, long i, ${dt.ct} v, int op) {
    volatile __global ${W} *w = (volatile __global ${W} *)(p + i);
    ${W} old = 0, seen;
    do {
        seen = old;
        old = atomic_cmpxchg(w, seen, as_${W}(combine(${AS}(seen), v, op)));
    } while (old != seen);
}
% elif dt.cl in ("double", "long"):
<% AS = "as_double" if dt.cl == "double" else "" %>\
inline void acc_combine(__global ${dt.cl} *p, long i, ${dt.ct} v, int op) {
    volatile __global long *w = (volatile __global long *)(p + i);
    long old = 0, seen;
    do {
        seen = old;
        old = atom_cmpxchg(w, seen, as_long(combine(${AS}(seen), v, op)));
    } while (old != seen);
}
% else:
<%
    bits = 16 if dt.itemsize == 2 else 8
    per_word = 32 // bits
    mask = "0xFFFFu" if bits == 16 else "0xFFu"
%>
inline void acc_combine(${c.ptr(dt)} p, long i, ${dt.ct} v, int op) {
    volatile __global uint *w = (volatile __global uint *)((__global uchar *)p +
                                                           (i * ${dt.itemsize} & ~(long)3));
    uint shift = (uint)(i & ${per_word - 1}) * ${bits};
    uint old = 0, seen;
    do {
        seen = old;
        uint e = (seen >> shift) & ${mask};
% if dt.cl == "half":
        ushort h = (ushort)e;
        float f = combine(vload_half(0, (const __private half *)&h), v, op);
        vstore_half(f, 0, (__private half *)&h);
        e = h;
% elif dt.name == "bfloat16":
        e = f2bf(combine(bf2f((ushort)e), v, op));
% else:
        e = ((uint)combine((${dt.ct})e, v, op)) & ${mask};
% endif
        old = atomic_cmpxchg(w, seen, (seen & ~(${mask} << shift)) | (e << shift));
    } while (old != seen);
}
% endif

__kernel void scatter_combine(${c.ptr(dt)} dst, long dof, long8 d_st, ${c.cptr(dt)} src,
                              long so, long8 s_st, int op, int nidx${index_params()}, long n,
                              long chunk, int nd, long8 shp)
{
<%c:walk>
        ${index_terms()}
        ${dt.ct} v = ${c.load(dt, "src", capture(c.at, "so", "s_st"))};
        acc_combine(dst, ${c.at("dof", "d_st")} + ix_, v, op);
</%c:walk>
}

__kernel void scatter_add(${c.ptr(dt)} dst, long dof, long8 d_st, ${c.cptr(dt)} src, long so,
                          long8 s_st, ${dt.ct} alpha, int nidx${index_params()}, long n,
                          long chunk, int nd, long8 shp)
{
<%c:walk>
        ${index_terms()}
        ${dt.ct} v = ${c.load(dt, "src", capture(c.at, "so", "s_st"))};
% if dt.kind != "b":
        v = v * alpha;
% endif
        acc_add(dst, ${c.at("dof", "d_st")} + ix_, v);
</%c:walk>
}
#endif
% endif

% if dt.name == "int64":
/* flag[0] = 1 when an index (any strides) lies outside [lo, hi) */
__kernel void check_index(__global const long *x, long xo, long8 x_st, long lo, long hi,
                          __global int *flag, long n, long chunk, int nd, long8 shp)
{
<%c:walk>
        long v = x[${c.at("xo", "x_st")}];
        if (v < lo || v >= hi) flag[0] = 1;
</%c:walk>
}
% endif

## ---- nonzero: a stream compaction without barriers. Work-item g owns elements
## [g * chunk, (g + 1) * chunk) of a contiguous x; nz_count counts its nonzeros, the host turns the
## counts into starting rows (an exclusive scan, which also gives the output size), and nz_write
## walks the same elements (x's own dims, not collapsed) and writes the coordinates of its
## nonzeros in order from its starting row. Deterministic.
% if dt.kind != "c":
__kernel void nz_count(${c.cptr(dt)} x, long xo, long n, long chunk, __global long *counts)
{
    long g = get_global_id(0);
    long start = g * chunk;
    if (start >= n) return;
    long end = min(start + chunk, n);
    long k = 0;
    for (long i = start; i < end; ++i)
        k += ${c.load(dt, "x", "xo + i")} != (${dt.ct})0;
    counts[g] = k;
}

__kernel void nz_write(${c.cptr(dt)} x, long xo, __global const long *starts,
                       __global long *out, long total, long n, long chunk, int nd, long8 shp)
{
    long row = get_global_id(0) * chunk < n ? starts[get_global_id(0)] : 0;
<%c:walk>
        /* no branch on the data (random masks make CPUs mispredict it): zeros write their
           coordinates to a spare row past the end, which nothing reads; one per work-item, as
           work-items writing one shared row would race */
        long hit = ${c.load(dt, "x", "xo + i")} != (${dt.ct})0;
        long r = hit ? row : total + (long)get_global_id(0);
% for k in range(8):
        if (nd > ${7 - k}) out[r * nd + nd - ${8 - k}] = c${k};
% endfor
        row += hit;
</%c:walk>
}
% endif

/* tril / triu: element i (row-major over the full shape, whose last two dims are rows x cols)
   keeps x where col - row <= diag (tril) or >= diag (triu), else 0. out may be x (in place). */
__kernel void tri(${c.ptr(dt)} out, long oo, long8 o_st, ${c.cptr(dt)} x, long xo, long8 x_st,
                  long rows, long cols, long diag, int upper, long n, long chunk, int nd,
                  long8 shp)
{
    long col = (get_global_id(0) * chunk) % cols, row = (get_global_id(0) * chunk / cols) % rows;
<%c:walk>
        int keep = upper ? (col - row >= diag) : (col - row <= diag);
        ${dt.ct} v = (${dt.ct})0;
        if (keep) v = ${c.load(dt, "x", capture(c.at, "xo", "x_st"))};
        ${c.store(dt, "out", capture(c.at, "oo", "o_st"), "v")};
        if (++col == cols) { col = 0; if (++row == rows) row = 0; }
</%c:walk>
}

% if dt.kind == "f":
/* cross-entropy and nll_loss targets in one pass: safe[i] = t[i], or 0 where t[i] is the
   ignore_index (so that the gather that follows stays in range), and w[i] = 1, or 0 where
   ignored; t contiguous from to */
__kernel void class_targets(__global const long *t, long to, long n, long ignore,
                            __global long *safe, ${c.ptr(dt)} w)
{
    long i = get_global_id(0);
    if (i >= n)
        return;
    long v = t[to + i];
    int keep = v != ignore;
    safe[i] = keep ? v : 0;
    ${c.store(dt, "w", "i", "(%s)(keep ? 1 : 0)" % dt.ct)};
}
% endif
% endif
