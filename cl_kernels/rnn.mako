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
${cell_math(CT, "int", "s")}
${cell_math(f"CAT({CT}, VEC)", "CAT(int, VEC)", "v") if CT == "float" else cell_math(f"CAT({CT}, VEC8)", "", "v")}

## The cells' exp (for the sigmoid, SIG_<m>) and tanh on values of type VT (VI: the int type of
## the same shape), named for `m`. In float, written with operators: PoCL 3.0 calls the exp()
## and tanh() built-ins out of line, and in the fused steps (gemm.mako) each call spilled the
## product's accumulators: the steps of tools/bench_compile.py's LSTM took 40-58 us, 32-41 with
## these. exp: n = round(x / ln 2), exp(r) on r = x - n ln 2 by a degree-6 polynomial, 2^n put
## in the exponent (Cephes' expf; within 1 ulp of float64's exp where the result is normal);
## tanh: Eigen's rational fit p(x) / q(x) on [-7.9053, 7.9053], +-1 past it (within 4 ulp).
## double keeps the built-ins.
<%def name="cell_math(VT, VI, m)">
% if dt.ct == "float":
inline ${VT} cell_exp_${m}(${VT} x) {
    x = x < (${VT})(-87.3f) ? (${VT})(-87.3f) : x;
    x = x > (${VT})(88.3f) ? (${VT})(88.3f) : x;
    const ${VT} k = x * (${VT})(1.44269504089f) + (${VT})(12582912.0f);   /* n + 1.5 * 2^23 */
    const ${VT} n = k - (${VT})(12582912.0f);
    ${VT} r = x - n * (${VT})(0.693145751953125f);
    r = r - n * (${VT})(1.428606765330187e-06f);
    ${VT} p = (${VT})(1.9875691500e-4f);
    p = p * r + (${VT})(1.3981999507e-3f);
    p = p * r + (${VT})(8.3334519073e-3f);
    p = p * r + (${VT})(4.1665795894e-2f);
    p = p * r + (${VT})(1.6666665459e-1f);
    p = p * r + (${VT})(5.0000001201e-1f);
    p = p * (r * r) + r + (${VT})(1.0f);
    return p * CAT(as_, ${VT})((CAT(as_, ${VI})(k) - CAT(as_, ${VI})((${VT})(12582912.0f)) + 127) << 23);
}
inline ${VT} cell_tanh_${m}(${VT} x) {
    x = x < (${VT})(-7.90531110763549805f) ? (${VT})(-7.90531110763549805f) : x;
    x = x > (${VT})(7.90531110763549805f) ? (${VT})(7.90531110763549805f) : x;
    const ${VT} x2 = x * x;
    ${VT} p = x2 * (${VT})(-2.76076847742355e-16f) + (${VT})(2.00018790482477e-13f);
    p = p * x2 + (${VT})(-8.60467152213735e-11f);
    p = p * x2 + (${VT})(5.12229709037114e-08f);
    p = p * x2 + (${VT})(1.48572235717979e-05f);
    p = p * x2 + (${VT})(6.37261928875436e-04f);
    p = p * x2 + (${VT})(4.89352455891786e-03f);
    ${VT} q = x2 * (${VT})(1.19825839466702e-06f) + (${VT})(1.18534705686654e-04f);
    q = q * x2 + (${VT})(2.26843463243900e-03f);
    q = q * x2 + (${VT})(4.89352518554385e-03f);
    return p * x / q;
}
% else:
inline ${VT} cell_exp_${m}(${VT} x) { return exp(x); }
inline ${VT} cell_tanh_${m}(${VT} x) { return tanh(x); }
% endif
#define SIG_${m}(x) (ONE / (ONE + cell_exp_${m}(-(x))))
</%def>

## The cells' arithmetic, shared by the cell kernels below and the fused steps of gemm.mako (a
## step's GEMM with the cell in its epilogue), so that both compute each value alike. VT: the
## value type; m: the cell_math that serves it; inputs are expressions; put(slot, value) gives
## the statement storing an output. Locals end in _ (the callers' names stay free). Needs ONE.
<%def name="lstm_fwd(VT, m, pre, cprev, put)">
## pre(k): gate k's pre-activation (i, f, g, o). Outputs: "c", "h", "act0".."act3".
    const ${VT} ig_ = SIG_${m}(${pre(0)});
    const ${VT} fg_ = SIG_${m}(${pre(1)});
    const ${VT} gg_ = cell_tanh_${m}(${pre(2)});
    const ${VT} og_ = SIG_${m}(${pre(3)});
    const ${VT} cv_ = fg_ * ${cprev} + ig_ * gg_;
    ${put("c", "cv_")};
    ${put("h", "og_ * cell_tanh_" + m + "(cv_)")};
% for k, v in enumerate(("ig_", "fg_", "gg_", "og_")):
    ${put(f"act{k}", v)};
% endfor
</%def>
<%def name="lstm_bwd(VT, m, act, cn, cprev, dh, dc, put)">
## act(k): activated gate k; cn, cprev: c_t, c_{t-1}; dh: [(flag or None, expression)] added
## to h's gradient from 0 in order; dc: c's gradient as (flag or None, expression). Outputs:
## "dg0".."dg3" (the gates' gradient), "dcp" (c_{t-1}'s).
    const ${VT} ig_ = ${act(0)}, fg_ = ${act(1)}, gg_ = ${act(2)}, og_ = ${act(3)};
    const ${VT} tc_ = cell_tanh_${m}(${cn});
    ${VT} gh_ = (${VT})(0);
% for flag, term in dh:
    ${f"if ({flag}) " if flag else ""}gh_ += ${term};
% endfor
    ${VT} gc_ = gh_ * og_ * (ONE - tc_ * tc_);
    ${f"if ({dc[0]}) " if dc[0] else ""}gc_ += ${dc[1]};
    const ${VT} cp_ = ${cprev};
    ${put("dg0", "gc_ * gg_ * ig_ * (ONE - ig_)")};
    ${put("dg1", "gc_ * cp_ * fg_ * (ONE - fg_)")};
    ${put("dg2", "gc_ * ig_ * (ONE - gg_ * gg_)")};
    ${put("dg3", "gh_ * tc_ * og_ * (ONE - og_)")};
    ${put("dcp", "gc_ * fg_")};
</%def>
<%def name="gru_fwd(VT, m, x, gh, hprev, put)">
## x(k), gh(k): gate k's input projection and h_prev W_hh^T + b_hh (r, z, n). Outputs: "h",
## "act0".."act3" (r, z, n, gh_n).
    const ${VT} rg_ = SIG_${m}(${x(0)} + ${gh(0)});
    const ${VT} z_ = SIG_${m}(${x(1)} + ${gh(1)});
    const ${VT} hn_ = ${gh(2)};
    const ${VT} n_ = cell_tanh_${m}(${x(2)} + rg_ * hn_);
    const ${VT} hp_ = ${hprev};
    ${put("h", "(ONE - z_) * n_ + z_ * hp_")};
% for k, v in enumerate(("rg_", "z_", "n_", "hn_")):
    ${put(f"act{k}", v)};
% endfor
</%def>
<%def name="gru_bwd(VT, m, act, hprev, dh, put)">
## act(k): r, z, n, gh_n; dh: [(flag or None, expression)] added to h's gradient from 0 in
## order. Outputs: "dx0".."dx2" (the input projection's gradient), "dgh0".."dgh2" (that of
## h_prev W_hh^T + b_hh: r * dn in the n part), "dhp" (z * dh, h_prev's direct part).
    const ${VT} rg_ = ${act(0)}, z_ = ${act(1)}, n_ = ${act(2)}, hn_ = ${act(3)};
    ${VT} g_ = (${VT})(0);
% for flag, term in dh:
    ${f"if ({flag}) " if flag else ""}g_ += ${term};
% endfor
    const ${VT} dn_ = g_ * (ONE - z_) * (ONE - n_ * n_);
    const ${VT} dz_ = g_ * (${hprev} - n_) * z_ * (ONE - z_);
    const ${VT} dr_ = dn_ * hn_ * rg_ * (ONE - rg_);
% for k, v in enumerate(("dr_", "dz_", "dn_")):
    ${put(f"dx{k}", v)};
% endfor
% for k, v in enumerate(("dr_", "dz_", "dn_ * rg_")):
    ${put(f"dgh{k}", v)};
% endfor
    ${put("dhp", "g_ * z_")};
</%def>

<%def name="kernels(sfx, w)">
<%
    W = "1" if w is None else w
    VT = dt.ct if w is None else f"CAT({dt.ct}, {w})"
    m = "s" if w is None else "v"
    # element e (a multiple of the width) of pointer p
    ld = (lambda p, e: c.load(dt, p, e)) if w is None else \
        (lambda p, e: c.vload(dt, p, f"({e}) / {w}", w))
    st = (lambda p, e, v: c.store(dt, p, e, v)) if w is None else \
        (lambda p, e, v: c.vstore(dt, p, f"({e}) / {w}", v, w))
    L = lambda p, e: capture(ld, p, e)       # the load as text: an argument of a cell def
%>
__kernel void lstm_fwd${sfx}(${c.cptr(dt)} gates, long go, ${c.cptr(dt)} cp, long cpo,
                             ${c.ptr(dt)} h, long ho, ${c.ptr(dt)} cn, long cno,
                             ${c.ptr(dt)} act, long ao, long B, long H)
{
    long e = get_global_id(0) * ${W};
    if (e >= B * H) return;
    long b = e / H, r = e + b * 3 * H;          /* r: column j of row b of a [B, 4H] array */
<%
    out = {"c": ("(cn + cno)", "e"), "h": ("(h + ho)", "e"),
           **{f"act{k}": ("(act + ao)", f"r + {k} * H") for k in range(4)}}
%>
${lstm_fwd(VT, m, lambda k: L("(gates + go)", f"r + {k} * H"), L("(cp + cpo)", "e"),
           lambda slot, v: st(*out[slot], v))}
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
<%
    out = {"dcp": ("(dcp + dcpo)", "e"),
           **{f"dg{k}": ("(dgates + dgo)", f"r + {k} * H") for k in range(4)}}
%>
${lstm_bwd(VT, m, lambda k: L("(act + ao)", f"r + {k} * H"), L("(cn + cno)", "e"),
           L("(cp + cpo)", "e"),
           [("has_dh", L("(dh + dho)", "e")), ("has_dh2", L("(dh2 + dh2o)", "e"))],
           ("has_dc", L("(dc + dco)", "e")), lambda slot, v: st(*out[slot], v))}
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
<%
    out = {"h": ("(h + ho)", "e"), **{f"act{k}": ("(act + ao)", f"a + {k} * H") for k in range(4)}}
%>
${gru_fwd(VT, m, lambda k: L("(x + xo)", f"r + {k} * H"), lambda k: L("(gh + gho)", f"r + {k} * H"),
          L("(hp + hpo)", "e"), lambda slot, v: st(*out[slot], v))}
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
<%
    out = {"dhp": ("(dhp + dhpo)", "e"),
           **{f"dx{k}": ("(dx + dxo)", f"r + {k} * H") for k in range(3)},
           **{f"dgh{k}": ("(dgh + dgho)", f"r + {k} * H") for k in range(3)}}
%>
${gru_bwd(VT, m, lambda k: L("(act + ao)", f"a + {k} * H"), L("(hp + hpo)", "e"),
          [("has_dh", L("(dh + dho)", "e")), ("has_dh2", L("(dh2 + dh2o)", "e"))],
          lambda slot, v: st(*out[slot], v))}
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
    ${st("(h + ho)", "e", "(is_relu ? " + relu("v") + " : cell_tanh_" + m + "(v))")};
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
