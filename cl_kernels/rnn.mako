## The LSTM cell's pointwise part for float dtype `dt`, forward and backward. gates is [B, 4H]
## (the input and hidden projections already summed, torch's gate order i, f, g, o), the states
## [B, H]; every operand is contiguous from its element offset, so that a step of a sequence
## reads and writes its slice of the layer's [T, B, *] buffers in place. Forward writes h, c and
## the activated gates (act, [B, 4H]) that backward reads.
##
## Each kernel comes twice: `_s` with one work-item per (batch row, hidden unit), and `_v` with
## one per VEC (VEC8 for double) neighbouring hidden units, for H a multiple of that width: PoCL
## vectorises only explicit vectors, and exp/tanh in scalar code cost it 5x.
<%namespace name="c" file="common.mako"/>
${c.prelude([dt])}
<% CT = dt.ct %>
#define ONE ((${CT})1)
#define SIG(x) (ONE / (ONE + exp(-(x))))

<%def name="kernels(sfx, w)">
<%
    W = "1" if w is None else w
    VT = dt.ct if w is None else f"CAT({dt.ct}, {w})"
    # element e (a multiple of the width) of pointer p
    ld = (lambda p, e: c.load(dt, p, e)) if w is None else \
        (lambda p, e: c.vload(dt, p, f"({e}) / {w}", w))
    st = (lambda p, e, v: c.store(dt, p, e, v)) if w is None else \
        (lambda p, e, v: c.vstore(dt, p, f"({e}) / {w}", v, w))
%>
__kernel void lstm_fwd${sfx}(${c.cptr(dt)} gates, long go, ${c.cptr(dt)} cp, long cpo,
                             ${c.ptr(dt)} h, long ho, ${c.ptr(dt)} cn, long cno,
                             ${c.ptr(dt)} act, long ao, long B, long H)
{
    long e = get_global_id(0) * ${W};
    if (e >= B * H) return;
    long b = e / H, r = e + b * 3 * H;          /* r: column j of row b of a [B, 4H] array */
    ${VT} i = SIG(${ld("(gates + go)", "r")});
    ${VT} f = SIG(${ld("(gates + go)", "r + H")});
    ${VT} g = tanh(${ld("(gates + go)", "r + 2 * H")});
    ${VT} o = SIG(${ld("(gates + go)", "r + 3 * H")});
    ${VT} cv = f * ${ld("(cp + cpo)", "e")} + i * g;
    ${st("(cn + cno)", "e", "cv")};
    ${st("(h + ho)", "e", "o * tanh(cv)")};
    ${st("(act + ao)", "r", "i")};
    ${st("(act + ao)", "r + H", "f")};
    ${st("(act + ao)", "r + 2 * H", "g")};
    ${st("(act + ao)", "r + 3 * H", "o")};
}

## dh (and dh2, summed: the output's gradient and the next step's) and dc are the gradients of
## h and c, each present when its flag is set; writes the gates' gradient and c_prev's.
__kernel void lstm_bwd${sfx}(${c.cptr(dt)} dh, long dho, int has_dh,
                             ${c.cptr(dt)} dh2, long dh2o, int has_dh2,
                             ${c.cptr(dt)} dc, long dco, int has_dc,
                             ${c.cptr(dt)} act, long ao, ${c.cptr(dt)} cp, long cpo,
                             ${c.cptr(dt)} cn, long cno, ${c.ptr(dt)} dgates, long dgo,
                             ${c.ptr(dt)} dcp, long dcpo, long B, long H)
{
    long e = get_global_id(0) * ${W};
    if (e >= B * H) return;
    long b = e / H, r = e + b * 3 * H;
    ${VT} i = ${ld("(act + ao)", "r")};
    ${VT} f = ${ld("(act + ao)", "r + H")};
    ${VT} g = ${ld("(act + ao)", "r + 2 * H")};
    ${VT} o = ${ld("(act + ao)", "r + 3 * H")};
    ${VT} tc = tanh(${ld("(cn + cno)", "e")});
    ${VT} gh = (${VT})(0);
    if (has_dh) gh += ${ld("(dh + dho)", "e")};
    if (has_dh2) gh += ${ld("(dh2 + dh2o)", "e")};
    ${VT} gc = gh * o * (ONE - tc * tc);
    if (has_dc) gc += ${ld("(dc + dco)", "e")};
    ${VT} cprev = ${ld("(cp + cpo)", "e")};
    ${st("(dgates + dgo)", "r", "gc * g * i * (ONE - i)")};
    ${st("(dgates + dgo)", "r + H", "gc * cprev * f * (ONE - f)")};
    ${st("(dgates + dgo)", "r + 2 * H", "gc * i * (ONE - g * g)")};
    ${st("(dgates + dgo)", "r + 3 * H", "gh * tc * o * (ONE - o)")};
    ${st("(dcp + dcpo)", "e", "gc * f")};
}
</%def>
${kernels("_s", None)}
${kernels("_v", "VEC8" if dt.ct == "double" else "VEC")}
