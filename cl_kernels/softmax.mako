## softmax and log_softmax of an input of dtype `dt` (float types; 16-bit ones computed in float),
## forward and backward. The input is seen as [outer, L, inner]: each of the outer * inner lines
## of L elements is normalised on its own. Forward reads x with strides (so, sl, si) and writes a
## contiguous out; backward reads the contiguous output y and gradient g and writes a contiguous
## grad_in (the host makes them so).
##
##   <op>_line:  one work-item per line, no barriers. `mode` says how it walks:
##     ROW   (0)  the line is contiguous (inner == 1, stride 1): VEC-wide loads along it;
##     LANES (1)  neighbouring lines are neighbours in memory (si == 1): a work-item takes VEC of
##                them at once, one vector per position along L (PoCL does not vectorise across
##                work-items, so this is how CPUs get SIMD);
##     ONE   (2)  any strides, scalars.
##   softmax_causal_row: softmax of causal attention scores, a work-item per row (CPU paths).
##   softmax_group, softmax_bwd_group: a work-group per contiguous line, items interleaved,
##     reductions in local memory (GPUs, long lines). Both ops share one kernel (flag `logf`):
##     kernels with barriers are slow to compile on PoCL.
<%namespace name="c" file="common.mako"/>
<%!
INIT = {"max": "-INFINITY", "sum": "0"}
# a select rather than fmax, which PoCL calls out of line; a NaN it drops still reaches the sum
COMB = {"max": "({a} > {b} ? {a} : {b})", "sum": "{a} + {b}"}


def steps(op, dt):
    """What `op` does to a line, in order:
    (reduce, var, expr, store): var = max / sum of expr over the line; store: also write expr to
                                out (softmax keeps exp(x - m) there when out holds it exactly);
    ("set", statement):         per-line arithmetic between passes;
    ("map", expr):              out = expr, element by element.
    Expressions name the inputs {x} (forward), {g}, {y} (backward) and {o} (out as written)."""
    exact = dt.cl == dt.ct
    return {
        # a row of -inf gives m = -inf and NaNs, as torch does
        "softmax": [("max", "m", "{x}", False),
                    ("sum", "s", "EXP({x} - m)", exact),
                    ("set", "s = 1 / s"),
                    ("map", "{o} * s" if exact else "EXP({x} - m) * s")],
        "log_softmax": [("max", "m", "{x}", False),
                        ("sum", "s", "EXP({x} - m)", False),
                        ("set", "s = log(s)"),
                        ("map", "({x} - m) - s")],
        "softmax_bwd": [("sum", "s", "{g} * {y}", False),
                        ("map", "{y} * ({g} - s)")],
        "log_softmax_bwd": [("sum", "s", "{g}", False),
                            ("map", "{g} - EXP({y}) * s")],
    }[op]
%>
${c.prelude([dt])}
/* the most work-items of a *_group work-group (softmax.py's GROUP_MAX) */
#define GROUP_MAX 256
/* native_exp has no accuracy bound in OpenCL C: on PoCL it is as accurate as exp (0.7 ulp) at
   twice the speed, which is most of a softmax's time on a CPU, but Intel's CPU runtime gave
   relative errors of 8e-5 with it. So the full-precision exp, unless `fast_exp` (the host's
   probe found native_exp within a few ulp of exp on the device: softmax.native_exp_ok). */
#define EXP ${"native_exp" if fast_exp and dt.ct != "double" else "exp"}
<%
    T, W = dt.ct, c.attr.width(dt)

    # vector loads and stores (see VLD / VST)
    def vload(p, i):
        return f"VLD({i}, {p})" if dt.cl == T else capture(c.vload, dt, p, i, W)

    def vstore(p, i, v):
        return f"VST({v}, {i}, {p})" if dt.cl == T else capture(c.vstore, dt, p, i, v, W)

    # loads of the inputs `names` (a dict by name) and the store to out, at position l of a line
    # whose elements are `stride` apart (out's `ostride`), from bases <name>b and ob
    def scalar_io(names, stride, ostride):
        ld = {n: capture(c.load, dt, n, f"{n}b + l * {stride}") for n in names}
        ld["o"] = capture(c.load, dt, "out", f"ob + l * {ostride}")
        return ld, lambda v: capture(c.store, dt, "out", f"ob + l * {ostride}", v)

    # the same for VEC neighbouring lines, as vectors
    def lanes_io(names, stride):
        ld = {n: vload(f"({n} + {n}b + l * {stride})", "0") for n in names}
        ld["o"] = vload("(out + ob + l * inner)", "0")
        return ld, lambda v: vstore("(out + ob + l * inner)", "0", v)

    # vector loads at element l (a multiple of VEC) of a contiguous line, then scalar ones
    def row_io(names):
        ldv = {n: vload(f"({n} + {n}b)", f"l / {W}") for n in names}
        ldv["o"] = vload("(out + ob)", f"l / {W}")
        lds = {n: capture(c.load, dt, f"({n} + {n}b)", "l") for n in names}
        lds["o"] = capture(c.load, dt, "(out + ob)", "l")
        return (ldv, lambda v: vstore("(out + ob)", f"l / {W}", v),
                lds, lambda v: capture(c.store, dt, "(out + ob)", "l", v))
%>
% if dt.cl == dt.ct:
/* Vector loads and stores of float / double. PoCL compiles vloadn / vstoren inside a loop to
   scalar accesses (a 4096 x 1000 softmax took 1.7x as long); through a pointer to a vector type
   aligned like its elements they are plain unaligned vector moves. clang allows such a type;
   other compilers, and drivers that compile vloadn well (NATIVE_VLOADS), get vloadn / vstoren. */
#if defined(__clang__) && !defined(NATIVE_VLOADS)
typedef CAT(${T}, ${W}) __attribute__((aligned(sizeof(${T})))) vec_u;
#define VLD(i, p) (((__global const vec_u *)(p))[i])
#define VST(v, i, p) (((__global vec_u *)(p))[i] = (v))
#else
#define VLD(i, p) CAT(vload, ${W})(i, p)
#define VST(v, i, p) CAT(vstore, ${W})(v, i, p)
#endif
% endif

## Steps over one line, or over VEC neighbouring lines at once when V is a vector type.
## ld[name]: the load of input `name` at position l; st(v): the store of v to out at l.
<%def name="walk_line(op, V, ld, st)">
% for s in steps(op, dt):
%   if s[0] == "set":
    ${s[1]};
%   elif s[0] == "map":
    for (long l = 0; l < L; ++l) { ${st(s[1].format(**ld))}; }
%   else:
    ${V} ${s[1]} = (${V})(${INIT[s[0]]});
    for (long l = 0; l < L; ++l) {
        ${V} e_ = ${s[2].format(**ld)};
        ${s[1]} = ${COMB[s[0]].format(a=s[1], b="e_")};
%     if s[3]:
        ${st("e_")};
%     endif
    }
%   endif
% endfor
</%def>

## Steps over one contiguous line: VEC elements at a time (l stays a multiple of VEC), then the
## scalar tail. A reduction folds its vector into a scalar before the tail.
## ldv / stv: vector loads and store at element l; lds / sts: scalar ones.
<%def name="walk_row(op, ldv, stv, lds, sts)">
<% T, W = dt.ct, c.attr.width(dt) %>\
% for s in steps(op, dt):
%   if s[0] == "set":
    ${s[1]};
%   elif s[0] == "map":
    {
        long l = 0;
        for (; l + ${W} <= L; l += ${W}) { ${stv(s[1].format(**ldv))}; }
        for (; l < L; ++l) { ${sts(s[1].format(**lds))}; }
    }
%   else:
    ${T} ${s[1]} = ${INIT[s[0]]};
    {
        CAT(${T}, ${W}) a_ = (CAT(${T}, ${W}))(${INIT[s[0]]});
        long l = 0;
        for (; l + ${W} <= L; l += ${W}) {
            CAT(${T}, ${W}) e_ = ${s[2].format(**ldv)};
            a_ = ${COMB[s[0]].format(a="a_", b="e_")};
%     if s[3]:
            ${stv("e_")};
%     endif
        }
        ${c.fold_vector(T, W, "a_", s[1], COMB[s[0]])}
        for (; l < L; ++l) {
            ${T} e_ = ${s[2].format(**lds)};
            ${s[1]} = ${COMB[s[0]].format(a=s[1], b="e_")};
%     if s[3]:
            ${sts("e_")};
%     endif
        }
    }
%   endif
% endfor
</%def>

## Steps over one contiguous line by the nl items of a work-group, interleaved (neighbouring
## items read neighbouring elements); reductions meet in local memory `red`.
<%def name="walk_group(op, ld, st)">
<% T = dt.ct %>\
% for s in steps(op, dt):
%   if s[0] == "set":
    ${s[1]};
%   elif s[0] == "map":
    for (long l = lid; l < L; l += nl) { ${st(s[1].format(**ld))}; }
%   else:
    ${T} ${s[1]} = ${INIT[s[0]]};
    for (long l = lid; l < L; l += nl) {
        ${T} e_ = ${s[2].format(**ld)};
        ${s[1]} = ${COMB[s[0]].format(a=s[1], b="e_")};
%     if s[3]:
        ${st("e_")};
%     endif
    }
    ${c.fold_group(s[1], "red", COMB[s[0]])}
%   endif
% endfor
</%def>

% for op in ("softmax", "log_softmax", "softmax_bwd", "log_softmax_bwd"):
<% fwd = not op.endswith("_bwd") %>
/* ---------------- ${op} ---------------- */
__kernel void ${op}_line(
% if fwd:
    ${c.cptr(dt)} x, long xo, long so, long sl, long si,
% else:
    ${c.cptr(dt)} g, long go, ${c.cptr(dt)} y, long yo,
% endif
    ${c.ptr(dt)} out, long oo, long outer, long L, long inner, int mode)
{
    long gid = get_global_id(0);
% if fwd:
<%  names, lstride = ["x"], "sl" %>
#define BASES(o, i) long xb = xo + (o) * so + (i) * si, ob = oo + (o) * L * inner + (i);
% else:
<%  names, lstride = ["g", "y"], "inner" %>
#define BASES(o, i) long b_ = (o) * L * inner + (i), gb = go + b_, yb = yo + b_, ob = oo + b_;
% endif
    if (mode == 0) {
        if (gid >= outer) return;
        BASES(gid, 0)
        ${walk_row(op, *row_io(names))}
    } else if (mode == 1) {
        long nb = (inner + ${W} - 1) / ${W};
        if (gid >= outer * nb) return;
        long o = gid / nb, i0 = (gid % nb) * ${W};
        if (i0 + ${W} <= inner) {
            BASES(o, i0)
            ${walk_line(op, f"CAT({T}, {W})", *lanes_io(names, lstride))}
        } else {
            for (long i = i0; i < inner; ++i) {
                BASES(o, i)
                ${walk_line(op, T, *scalar_io(names, lstride, "inner"))}
            }
        }
    } else {
        if (gid >= outer * inner) return;
        BASES(gid / inner, gid % inner)
        ${walk_line(op, T, *scalar_io(names, lstride, "inner"))}
    }
#undef BASES
}
% endfor

/* ---------------- softmax of causal attention scores ---------------- */
/* Row r of contiguous rows of S scores belongs to query (r % rows) + first, which sees keys 0 up
   to itself (torch's is_causal: the mask is top-left aligned): the softmax of those, and 0 for
   the rest, as adding a -inf mask first would give, without the mask's own pass over the scores
   and its add. Backward is softmax_bwd_line's (y is 0 past the last key seen). CPU paths: a
   work-item per row; GPUs add the mask and take softmax_group. */
__kernel void softmax_causal_row(${c.cptr(dt)} x, long xo, long so, ${c.ptr(dt)} out, long oo,
                                 long outer, long S, long rows, long first)
{
    long gid = get_global_id(0);
    if (gid >= outer) return;
    long xb = xo + gid * so, ob = oo + gid * S;
    long L = min(S, gid % rows + first + 1);
<% ldv, stv, lds, sts = row_io(["x"]) %>
    ${walk_row("softmax", ldv, stv, lds, sts)}
    for (long l = L; l < S; ++l) { ${sts(f"({T})0")}; }
}

/* ---------------- work-group per row ---------------- */
__kernel void softmax_group(${c.cptr(dt)} x, long xo, long so, ${c.ptr(dt)} out, long oo, long L,
                            int logf)
{
    __local ${T} red[GROUP_MAX];
    int lid = get_local_id(0), nl = get_local_size(0);
    long xb = xo + get_group_id(0) * so, ob = oo + get_group_id(0) * L;
<% ld, st = scalar_io(["x"], "1", "1") %>
    if (logf) {
        ${walk_group("log_softmax", ld, st)}
    } else {
        ${walk_group("softmax", ld, st)}
    }
}

__kernel void softmax_bwd_group(${c.cptr(dt)} g, long go, ${c.cptr(dt)} y, long yo,
                                ${c.ptr(dt)} out, long oo, long L, int logf)
{
    __local ${T} red[GROUP_MAX];
    int lid = get_local_id(0), nl = get_local_size(0);
    long r = get_group_id(0) * L;
    long gb = go + r, yb = yo + r, ob = oo + r;
<% ld, st = scalar_io(["g", "y"], "1", "1") %>
    if (logf) {
        ${walk_group("log_softmax_bwd", ld, st)}
    } else {
        ${walk_group("softmax_bwd", ld, st)}
    }
}
