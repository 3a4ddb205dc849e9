## Fused optimiser updates for parameters of float dtype `dt`: one launch per parameter and step
## reads the gradient and state and writes the new state and parameter, following torch's
## single-tensor update rules operation by operation (the optimizers' docstrings give the
## formulas). Every operand is contiguous with an element offset; a work-item handles W elements
## with vector loads (the scalar loop covers the tail). Options are kernel arguments, uniform
## across work-items, so one kernel serves every combination. Hyper-parameters arrive already
## combined on the host in double precision (1 - beta1, lr / bias_correction1, ...), as torch
## computes them.
##
## Each update also comes as <name>_x<K>: one launch for up to K parameters whose scalars are the
## same (the optimizers' multi-tensor form, as torch's foreach / fused updates): K sets of the
## operands, then the shared scalars, then per parameter its length and its first work-item.
## A work-item finds its parameter from those starts, then runs the single update's body.
## K comes from clgrad/kernels/optim.py (MULTI).
<%namespace name="c" file="common.mako"/>
${c.prelude([dt])}
<%
CT = dt.ct
W = c.attr.width(dt)
%>

## load/store of operand `nm` (pointer nm_, element offset nm_o) at the current position, as
## vectors (ctx "v", work-item i) or scalars (ctx "s", element j)
<%def name="ld(nm, ctx)">\
% if ctx == "v":
${c.vload(dt, nm + "_ + " + nm + "_o", "i", W)}\
% else:
${c.load(dt, nm + "_", nm + "_o + j")}\
% endif
</%def>
<%def name="st(nm, value, ctx)">\
% if ctx == "v":
${c.vstore(dt, nm + "_ + " + nm + "_o", "i", value, W)}\
% else:
${c.store(dt, nm + "_", nm + "_o + j", value)}\
% endif
</%def>
<%def name="T(ctx)">${f"CAT({CT}, {W})" if ctx == "v" else CT}</%def>

## ---- the multi-tensor form of an update: `body` over operands `bufs` ((name, read only)) ------
<%def name="multi(kname, body, bufs, scalars)">
__kernel void ${kname}_x${K}(
% for k in range(K):
    % for b, ro in bufs:
        ${c.cptr(dt) if ro else c.ptr(dt)} ${b}${k}_, long ${b}${k}_o,
    % endfor
% endfor
        ${scalars},
        ${", ".join(f"long n{k}, long first{k}" for k in range(K))})
{
    long gid = get_global_id(0);
% for b, ro in bufs:
    ${c.cptr(dt) if ro else c.ptr(dt)} ${b}_; long ${b}_o;
% endfor
    long n, i;
% for k in reversed(range(K)):
    ${"if" if k == K - 1 else "else if" if k else "else"}${f" (gid >= first{k})" if k else ""} {
        % for b, ro in bufs:
        ${b}_ = ${b}${k}_; ${b}_o = ${b}${k}_o;
        % endfor
        n = n${k}; i = gid - first${k};
    }
% endfor
    if ((i + 1) * ${W} <= n) {
${body("v")}
    } else {
        for (long j = i * ${W}; j < n; ++j) {
${body("s")}
        }
    }
}
</%def>

## ---- SGD ---------------------------------------------------------------------------------------
<%def name="sgd_body(ctx)">
        ${T(ctx)} g = ${ld("g", ctx)};
        ${T(ctx)} p = ${ld("p", ctx)};
        if (maximize) g = -g;
        if (weight_decay != 0) g = g + weight_decay * p;
        if (use_momentum) {
            ${T(ctx)} b = first ? g : ${ld("b", ctx)} * momentum + one_minus_dampening * g;
            ${st("b", "b", ctx)};
            g = nesterov ? g + momentum * b : b;
        }
        ${st("p", "p - lr * g", ctx)};
</%def>
__kernel void sgd(${c.ptr(dt)} p_, long p_o, ${c.cptr(dt)} g_, long g_o, ${c.ptr(dt)} b_,
                  long b_o, ${CT} lr, ${CT} weight_decay, ${CT} momentum, ${CT} one_minus_dampening,
                  int use_momentum, int nesterov, int maximize, int first, long n)
{
    long i = get_global_id(0);
    if ((i + 1) * ${W} <= n) {
${sgd_body("v")}
    } else {
        for (long j = i * ${W}; j < n; ++j) {
${sgd_body("s")}
        }
    }
}
${multi("sgd", sgd_body, [("p", False), ("g", True), ("b", False)],
        f"{CT} lr, {CT} weight_decay, {CT} momentum, {CT} one_minus_dampening, "
        "int use_momentum, int nesterov, int maximize, int first")}

## ---- Adam / AdamW ------------------------------------------------------------------------------
<%def name="adam_body(ctx)">
        ${T(ctx)} g = ${ld("g", ctx)};
        ${T(ctx)} p = ${ld("p", ctx)};
        ${T(ctx)} m = ${ld("m", ctx)};
        ${T(ctx)} v = ${ld("v", ctx)};
        if (maximize) g = -g;
        if (weight_decay != 0) {
            if (decoupled) p = p * decay;                 /* AdamW: p *= 1 - lr * wd */
            else g = g + weight_decay * p;
        }
        /* exp_avg.lerp_(grad, 1 - beta1), with lerp's two forms as torch evaluates them */
        m = one_minus_beta1 < (${CT})0.5 ? m + one_minus_beta1 * (g - m)
                                  : g - (g - m) * beta1;
        v = v * beta2 + one_minus_beta2 * g * g;
        ${st("m", "m", ctx)};
        ${st("v", "v", ctx)};
        ${T(ctx)} denom;
        if (amsgrad) {
            ${T(ctx)} vmax = fmax(${ld("vm", ctx)}, v);
            ${st("vm", "vmax", ctx)};
            denom = sqrt(vmax) / bias_correction2_sqrt + eps;
        } else {
            denom = sqrt(v) / bias_correction2_sqrt + eps;
        }
        ${st("p", "p - step_size * m / denom", ctx)};
</%def>
__kernel void adam(${c.ptr(dt)} p_, long p_o, ${c.cptr(dt)} g_, long g_o, ${c.ptr(dt)} m_,
                   long m_o, ${c.ptr(dt)} v_, long v_o, ${c.ptr(dt)} vm_, long vm_o,
                   ${CT} step_size, ${CT} beta1, ${CT} one_minus_beta1, ${CT} beta2,
                   ${CT} one_minus_beta2, ${CT} bias_correction2_sqrt, ${CT} eps,
                   ${CT} weight_decay, ${CT} decay, int decoupled, int amsgrad, int maximize,
                   long n)
{
    long i = get_global_id(0);
    if ((i + 1) * ${W} <= n) {
${adam_body("v")}
    } else {
        for (long j = i * ${W}; j < n; ++j) {
${adam_body("s")}
        }
    }
}
${multi("adam", adam_body, [("p", False), ("g", True), ("m", False), ("v", False),
                            ("vm", False)],
        f"{CT} step_size, {CT} beta1, {CT} one_minus_beta1, {CT} beta2, {CT} one_minus_beta2, "
        f"{CT} bias_correction2_sqrt, {CT} eps, {CT} weight_decay, {CT} decay, int decoupled, "
        "int amsgrad, int maximize")}

## ---- RMSprop -----------------------------------------------------------------------------------
<%def name="rmsprop_body(ctx)">
        ${T(ctx)} g = ${ld("g", ctx)};
        ${T(ctx)} p = ${ld("p", ctx)};
        ${T(ctx)} sq = ${ld("sq", ctx)};
        if (maximize) g = -g;
        if (weight_decay != 0) g = g + weight_decay * p;
        sq = sq * alpha + one_minus_alpha * g * g;
        ${st("sq", "sq", ctx)};
        ${T(ctx)} avg;
        if (centered) {
            ${T(ctx)} ga = ${ld("ga", ctx)};
            ga = one_minus_alpha < (${CT})0.5 ? ga + one_minus_alpha * (g - ga)
                                       : g - (g - ga) * alpha;
            ${st("ga", "ga", ctx)};
            avg = sqrt(sq - ga * ga) + eps;
        } else {
            avg = sqrt(sq) + eps;
        }
        if (use_momentum) {
            ${T(ctx)} b = ${ld("b", ctx)} * momentum + g / avg;
            ${st("b", "b", ctx)};
            ${st("p", "p - lr * b", ctx)};
        } else {
            ${st("p", "p - lr * g / avg", ctx)};
        }
</%def>
__kernel void rmsprop(${c.ptr(dt)} p_, long p_o, ${c.cptr(dt)} g_, long g_o, ${c.ptr(dt)} sq_,
                      long sq_o, ${c.ptr(dt)} ga_, long ga_o, ${c.ptr(dt)} b_, long b_o,
                      ${CT} lr, ${CT} alpha, ${CT} one_minus_alpha, ${CT} eps,
                      ${CT} weight_decay, ${CT} momentum, int centered, int use_momentum,
                      int maximize, long n)
{
    long i = get_global_id(0);
    if ((i + 1) * ${W} <= n) {
${rmsprop_body("v")}
    } else {
        for (long j = i * ${W}; j < n; ++j) {
${rmsprop_body("s")}
        }
    }
}
${multi("rmsprop", rmsprop_body, [("p", False), ("g", True), ("sq", False), ("ga", False),
                                  ("b", False)],
        f"{CT} lr, {CT} alpha, {CT} one_minus_alpha, {CT} eps, {CT} weight_decay, "
        f"{CT} momentum, int centered, int use_momentum, int maximize")}

## ---- GradScaler: unscale and check ------------------------------------------------------------
## g *= inv_scale in place, and found[0] = 1 when any element was inf or NaN before it (the check
## torch's _amp_foreach_non_finite_check_and_unscale_ makes). One launch per gradient, all of them
## writing the same device flag, which the host reads once per optimizer step. The flag is set
## with an atomic (core OpenCL 1.1 for 32-bit global ints) so that work-items never race on it.
__kernel void amp_unscale(${c.ptr(dt)} g_, long g_o, ${CT} inv_scale, __global int* found, long n)
{
    long i = get_global_id(0);
    long end = min((i + 1) * ${W}, n);
    int bad = 0;
    for (long j = i * ${W}; j < end; ++j) {
        ${CT} g = ${c.load(dt, "g_", "g_o + j")};
        bad |= !isfinite(g);
        ${c.store(dt, "g_", "g_o + j", "g * inv_scale")};
    }
    if (bad) atomic_or(found, 1);
}
