## cross_entropy over rows of class scores with class-index targets (clgrad/kernels/loss.py),
## float types. logp is log_softmax of the scores: contiguous [n, C]. A target t of row i counts
## unless it is ignore_index; the loss of a counted row is -logp[i, t].
##
##   nll_rows:     one work-group: the sum of the counted rows' losses, the number of counted
##                 rows, and whether a counted target lies outside [0, C) (its loss is left out;
##                 the host raises IndexError). No flag to clear first: the group writes it whole.
##   ce_backward:  the scores' gradient s_i (exp(logp[i, c]) - [c == t_i]) with s_i = g (over the
##                 count for a mean) for a counted row, 0 for an ignored one: one work-item per
##                 score (a work-group per row left most items of a short row idle: 146 us for
##                 256 rows of 10 on PoCL).
##   nll_backward: nll_loss's gradient, -s_i at each counted row's target, 0 elsewhere.
<%namespace name="c" file="common.mako"/>
${c.prelude([dt])}
<% T = dt.ct %>
/* nll_rows' work-group: a power of two, at most GROUP_MAX (loss.py's) */
#define GROUP_MAX 256

__kernel void nll_rows(${c.cptr(dt)} logp, long lo, long C, __global const long *t, long to,
                       long ts, long n, long ignore, int mean, ${c.ptr(dt)} out, long oo,
                       ${c.ptr(dt)} count, long co, __global int *flag)
{
    __local ${T} acc[GROUP_MAX], num[GROUP_MAX];
    __local int bad[GROUP_MAX];
    const int l = get_local_id(0), L = get_local_size(0);
    ${T} a = 0, k = 0;
    int b = 0;
    for (long i = l; i < n; i += L) {
        const long v = t[to + i * ts];
        if (v == ignore)
            continue;
        if (v < 0 || v >= C) {
            b = 1;
            continue;
        }
        a -= ${c.load(dt, "logp", "lo + i * C + v")};
        k += 1;
    }
    acc[l] = a;
    num[l] = k;
    bad[l] = b;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = L / 2; s > 0; s >>= 1) {
        if (l < s) {
            acc[l] += acc[l + s];
            num[l] += num[l + s];
            bad[l] |= bad[l + s];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (l == 0) {
        ${c.store(dt, "out", "oo", "mean ? acc[0] / num[0] : acc[0]")};
        ${c.store(dt, "count", "co", "num[0]")};
        flag[0] = bad[0];
    }
}

__kernel void ce_backward(${c.ptr(dt)} gx, long gxo, ${c.cptr(dt)} logp, long lo, long C,
                          __global const long *t, long to, long ts, long ignore,
                          ${c.cptr(dt)} g, long go, ${c.cptr(dt)} count, long co, int mean,
                          long total)
{
    const long e = get_global_id(0);
    if (e >= total)
        return;
    const long i = e / C, c = e - i * C;
    const long v = t[to + i * ts];
    ${T} s = (${T})0;
    if (v != ignore) {
        s = ${c.load(dt, "g", "go")};
        if (mean)
            s /= ${c.load(dt, "count", "co")};
    }
    const ${T} p = exp(${c.load(dt, "logp", "lo + e")});
    ${c.store(dt, "gx", "gxo + e", "s * (p - (c == v ? 1 : 0))")};
}

/* nll_loss's gradient: -g (over the count for a mean) at each counted row's target, 0 elsewhere */
__kernel void nll_backward(${c.ptr(dt)} gx, long gxo, long C, __global const long *t, long to,
                           long ts, long ignore, ${c.cptr(dt)} g, long go, ${c.cptr(dt)} count,
                           long co, int mean, long total)
{
    const long e = get_global_id(0);
    if (e >= total)
        return;
    const long i = e / C, c = e - i * C;
    const long v = t[to + i * ts];
    ${T} s = (${T})0;
    if (v == c && v != ignore) {
        s = -${c.load(dt, "g", "go")};
        if (mean)
            s /= ${c.load(dt, "count", "co")};
    }
    ${c.store(dt, "gx", "gxo + e", "s")};
}
