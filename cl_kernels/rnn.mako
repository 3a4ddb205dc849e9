## The recurrent cells' pointwise parts for float dtype `dt`, forward and backward: LSTM, GRU and
## the Elman RNN. The LSTM's: gates is [B, 4H] (the input and hidden projections already summed,
## torch's gate order i, f, g, o), the states [B, H]. Every operand is contiguous from its element
## offset, so that a step of a sequence reads and writes its slice of the layer's [T, B, *]
## buffers in place. Forward writes h (and c) and what backward reads (act).
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

## The GRU step (torch's gate order r, z, n). x: the step's input projection [B, 3H] (x W_ih^T +
## b_ih), gh: h_prev W_hh^T + b_hh [B, 3H], kept apart because n = tanh(x_n + r * gh_n) puts b_hn
## inside r's product; hp: h_prev [B, H]. Writes h and act [B, 4H] = (r, z, n, gh_n).
__kernel void gru_fwd${sfx}(${c.cptr(dt)} x, long xo, ${c.cptr(dt)} gh, long gho,
                            ${c.cptr(dt)} hp, long hpo, ${c.ptr(dt)} h, long ho,
                            ${c.ptr(dt)} act, long ao, long B, long H)
{
    long e = get_global_id(0) * ${W};
    if (e >= B * H) return;
    long b = e / H, r = e + b * 2 * H, a = e + b * 3 * H;  /* column j of row b: [B, 3H], [B, 4H] */
    ${VT} rg = SIG(${ld("(x + xo)", "r")} + ${ld("(gh + gho)", "r")});
    ${VT} z = SIG(${ld("(x + xo)", "r + H")} + ${ld("(gh + gho)", "r + H")});
    ${VT} hn = ${ld("(gh + gho)", "r + 2 * H")};
    ${VT} n = tanh(${ld("(x + xo)", "r + 2 * H")} + rg * hn);
    ${VT} hprev = ${ld("(hp + hpo)", "e")};
    ${st("(h + ho)", "e", "(ONE - z) * n + z * hprev")};
    ${st("(act + ao)", "a", "rg")};
    ${st("(act + ao)", "a + H", "z")};
    ${st("(act + ao)", "a + 2 * H", "n")};
    ${st("(act + ao)", "a + 3 * H", "hn")};
}

## dh (+ dh2) is h's gradient; writes dx (the input projection's gradient, [B, 3H]), dgh (that of
## h_prev W_hh^T + b_hh: the same but r * dn in the n part) and dhp = z * dh, the direct part of
## h_prev's gradient (the GEMM dgh W_hh adds the rest).
__kernel void gru_bwd${sfx}(${c.cptr(dt)} dh, long dho, int has_dh,
                            ${c.cptr(dt)} dh2, long dh2o, int has_dh2,
                            ${c.cptr(dt)} act, long ao, ${c.cptr(dt)} hp, long hpo,
                            ${c.ptr(dt)} dx, long dxo, ${c.ptr(dt)} dgh, long dgho,
                            ${c.ptr(dt)} dhp, long dhpo, long B, long H)
{
    long e = get_global_id(0) * ${W};
    if (e >= B * H) return;
    long b = e / H, r = e + b * 2 * H, a = e + b * 3 * H;
    ${VT} rg = ${ld("(act + ao)", "a")};
    ${VT} z = ${ld("(act + ao)", "a + H")};
    ${VT} n = ${ld("(act + ao)", "a + 2 * H")};
    ${VT} hn = ${ld("(act + ao)", "a + 3 * H")};
    ${VT} g = (${VT})(0);
    if (has_dh) g += ${ld("(dh + dho)", "e")};
    if (has_dh2) g += ${ld("(dh2 + dh2o)", "e")};
    ${VT} dn = g * (ONE - z) * (ONE - n * n);
    ${VT} dz = g * (${ld("(hp + hpo)", "e")} - n) * z * (ONE - z);
    ${VT} dr = dn * hn * rg * (ONE - rg);
    ${st("(dx + dxo)", "r", "dr")};
    ${st("(dx + dxo)", "r + H", "dz")};
    ${st("(dx + dxo)", "r + 2 * H", "dn")};
    ${st("(dgh + dgho)", "r", "dr")};
    ${st("(dgh + dgho)", "r + H", "dz")};
    ${st("(dgh + dgho)", "r + 2 * H", "dn * rg")};
    ${st("(dhp + dhpo)", "e", "g * z")};
}

## The Elman step: h = tanh(pre) or relu(pre), pre [B, H] = x W_ih^T + b_ih + h_prev W_hh^T + b_hh.
## relu keeps a NaN (as torch's relu): only a value below zero becomes zero.
<%
    zero = f"(({VT})(0))"
    relu = (lambda v: f"({v} < {zero} ? {zero} : {v})") if w is None else \
        (lambda v: f"select({v}, {zero}, {v} < {zero})")
    pos = (lambda v, g: f"({v} > {zero} ? {g} : {zero})") if w is None else \
        (lambda v, g: f"select({zero}, {g}, {v} > {zero})")
%>
__kernel void rnn_fwd${sfx}(${c.cptr(dt)} pre, long po, ${c.ptr(dt)} h, long ho, int is_relu,
                            long B, long H)
{
    long e = get_global_id(0) * ${W};
    if (e >= B * H) return;
    ${VT} v = ${ld("(pre + po)", "e")};
    ${st("(h + ho)", "e", "(is_relu ? " + relu("v") + " : tanh(v))")};
}

## dh (+ dh2) is h's gradient; writes pre's, from h itself (tanh' = 1 - h^2, relu' = [h > 0]).
__kernel void rnn_bwd${sfx}(${c.cptr(dt)} dh, long dho, int has_dh,
                            ${c.cptr(dt)} dh2, long dh2o, int has_dh2,
                            ${c.cptr(dt)} h, long ho, ${c.ptr(dt)} dpre, long dpo, int is_relu,
                            long B, long H)
{
    long e = get_global_id(0) * ${W};
    if (e >= B * H) return;
    ${VT} g = (${VT})(0);
    if (has_dh) g += ${ld("(dh + dho)", "e")};
    if (has_dh2) g += ${ld("(dh2 + dh2o)", "e")};
    ${VT} hv = ${ld("(h + ho)", "e")};
    ${st("(dpre + dpo)", "e", "(is_relu ? " + pos("hv", "g") + " : g * (ONE - hv * hv))")};
}
</%def>
${kernels("_s", None)}
${kernels("_v", "VEC8" if dt.ct == "double" else "VEC")}
