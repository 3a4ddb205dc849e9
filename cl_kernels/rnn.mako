## The LSTM cell's pointwise part for float dtype `dt`, forward and backward, one work-item per
## (batch row b, hidden unit j). gates is [B, 4H] (the input and hidden projections already
## summed, torch's gate order i, f, g, o), c_prev [B, H]; all operands contiguous with element
## offsets. Forward writes h, c and the activated gates (act, [B, 4H]) that backward reads.
<%namespace name="c" file="common.mako"/>
${c.prelude([dt])}
<% CT = dt.ct %>
inline ${CT} sig(${CT} x) { return (${CT})1 / ((${CT})1 + exp(-x)); }

__kernel void lstm_cell(${c.cptr(dt)} gates, long go, ${c.cptr(dt)} cp, long cpo,
                        ${c.ptr(dt)} h, ${c.ptr(dt)} cn, ${c.ptr(dt)} act, long B, long H)
{
    long t = get_global_id(0);
    if (t >= B * H) return;
    long b = t / H, j = t - b * H, r = b * 4 * H + j;
    ${CT} i = sig(${c.load(dt, "gates", "go + r")});
    ${CT} f = sig(${c.load(dt, "gates", "go + r + H")});
    ${CT} g = tanh(${c.load(dt, "gates", "go + r + 2 * H")});
    ${CT} o = sig(${c.load(dt, "gates", "go + r + 3 * H")});
    ${CT} cv = f * ${c.load(dt, "cp", "cpo + t")} + i * g;
    ${c.store(dt, "cn", "t", "cv")};
    ${c.store(dt, "h", "t", "o * tanh(cv)")};
    ${c.store(dt, "act", "r", "i")};
    ${c.store(dt, "act", "r + H", "f")};
    ${c.store(dt, "act", "r + 2 * H", "g")};
    ${c.store(dt, "act", "r + 3 * H", "o")};
}

## dh, dc: the gradients of h and c ([B, H]; has_dc = 0 when c's gradient is zero)
__kernel void lstm_cell_bwd(${c.cptr(dt)} dh, long dho, ${c.cptr(dt)} dc, long dco, int has_dc,
                            ${c.cptr(dt)} act, ${c.cptr(dt)} cp, long cpo, ${c.cptr(dt)} cn,
                            ${c.ptr(dt)} dgates, ${c.ptr(dt)} dcp, long B, long H)
{
    long t = get_global_id(0);
    if (t >= B * H) return;
    long b = t / H, j = t - b * H, r = b * 4 * H + j;
    ${CT} i = ${c.load(dt, "act", "r")};
    ${CT} f = ${c.load(dt, "act", "r + H")};
    ${CT} g = ${c.load(dt, "act", "r + 2 * H")};
    ${CT} o = ${c.load(dt, "act", "r + 3 * H")};
    ${CT} tc = tanh(${c.load(dt, "cn", "t")});
    ${CT} gh = ${c.load(dt, "dh", "dho + t")};
    ${CT} gc = gh * o * ((${CT})1 - tc * tc);
    if (has_dc) gc += ${c.load(dt, "dc", "dco + t")};
    ${c.store(dt, "dgates", "r", "gc * g * i * ((" + CT + ")1 - i)")};
    ${CT} cprev = ${c.load(dt, "cp", "cpo + t")};
    ${c.store(dt, "dgates", "r + H", "gc * cprev * f * ((" + CT + ")1 - f)")};
    ${c.store(dt, "dgates", "r + 2 * H", "gc * i * ((" + CT + ")1 - g * g)")};
    ${c.store(dt, "dgates", "r + 3 * H", "gh * tc * o * ((" + CT + ")1 - o)")};
    ${c.store(dt, "dcp", "t", "gc * f")};
}
