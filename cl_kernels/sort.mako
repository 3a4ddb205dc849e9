## Sorting along the rows of a contiguous [rows, n] input of dtype `dt`, and binary search.
##
## Sort is a bitonic network over rows padded to P = 2^m elements: sort_init copies a row into
## keys (the compute type) and idx (its positions 0..P-1; positions >= n are padding), then the
## host launches sort_step for every (k, j) stage of the network, each work-item ordering one
## pair. Elements are compared as (key, position) pairs, so the order is total: equal keys keep
## their input order (the sort is stable, ascending or descending), NaN sorts above every number
## (last ascending, first descending, as torch), and padding sorts after everything.
##
## searchsorted: one work-item per value, a binary search in its row of the sorted sequence
## (or in the one row every value shares).
<%namespace name="c" file="common.mako"/>
${c.prelude([dt])}
<% KT = dt.ct %>

/* whether element (ka, ia) comes after element (kb, ib) in the final order of a row of n */
inline int after(${KT} ka, long ia, ${KT} kb, long ib, long n, int desc)
{
    if (ia >= n || ib >= n)                      /* padding last, among itself by position */
        return ia >= n && (ib < n || ia > ib);
% if dt.kind == "f":
    int na = isnan(ka), nb = isnan(kb);
    if (na != nb)
        return desc ? nb : na;
    if (!na && ka != kb)
        return desc ? ka < kb : ka > kb;
% else:
    if (ka != kb)
        return desc ? ka < kb : ka > kb;
% endif
    return ia > ib;
}

__kernel void sort_init(${c.cptr(dt)} x, long xo, __global ${KT} *keys, __global long *idx,
                        long rows, long n, long P)
{
    long t = get_global_id(0);
    if (t >= rows * P)
        return;
    long r = t / P, j = t - r * P;
    idx[t] = j;
    keys[t] = j < n ? (${KT})(${c.load(dt, "x", "xo + r * n + j")}) : (${KT})0;
}

/* one stage (k, j) of the bitonic network: element i of a row against element i + j */
__kernel void sort_step(__global ${KT} *keys, __global long *idx, long rows, long n, long P,
                        long k, long j, int desc)
{
    long t = get_global_id(0);
    long hp = P >> 1;                            /* pairs per row */
    if (t >= rows * hp)
        return;
    long r = t / hp, q = t - r * hp;
    long i = (q / j) * 2 * j + (q % j);
    long a = r * P + i, b = a + j;
    ${KT} ka = keys[a], kb = keys[b];
    long ia = idx[a], ib = idx[b];
    int swap = (i & k) == 0 ? after(ka, ia, kb, ib, n, desc) : after(kb, ib, ka, ia, n, desc);
    if (swap) {
        keys[a] = kb; keys[b] = ka;
        idx[a] = ib; idx[b] = ia;
    }
}

/* out[t] = the insertion point of value t in its row of seq (nb sorted elements): the first
   position whose element is >= the value (right: > the value); NaN is above every number */
__kernel void searchsorted(${c.cptr(dt)} seq, long so, ${c.cptr(dt)} v, long vo,
                           __global long *out, long rows, long nv, long nb, int shared, int right)
{
    long t = get_global_id(0);
    if (t >= rows * nv)
        return;
    long base = so + (shared ? 0 : (t / nv) * nb);
    ${KT} x = ${c.load(dt, "v", "vo + t")};
    long lo = 0, hi = nb;
    while (lo < hi) {
        long mid = lo + ((hi - lo) >> 1);
        ${KT} s = ${c.load(dt, "seq", "base + mid")};
% if dt.kind == "f":
        int before = right ? (isnan(x) || (!isnan(s) && s <= x)) : (!isnan(s) && (isnan(x) || s < x));
% else:
        int before = right ? s <= x : s < x;
% endif
        if (before)
            lo = mid + 1;
        else
            hi = mid;
    }
    out[t] = lo;
}
