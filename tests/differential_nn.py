"""Differential testing, the nn families (tests/differential.py runs them): conv1d/conv2d and
max/avg pooling (stride, padding, dilation, groups, ceil_mode), layer_norm/batch_norm (eval)/
group_norm with affine parameters, the losses (mse, l1, smooth_l1, huber, cross_entropy, nll,
bce, bce with logits; integer and bool inputs where torch takes or refuses them), and the rnn
cells' functional forms (rnn_tanh/relu, lstm, gru) with given weights. The inputs of a program of
one of these families are shaped for it (input, weight, bias); class targets and running
statistics are constants (Lit)."""
import numpy as np

import differential as D
from differential import Lit, _any, _raise, op

D.switch("loss_bool", "no bool inputs to mse_loss/smooth_l1_loss (issue 22: clgrad refuses)")
D.switch("target_out_of_range", "no class target out of range in cross_entropy/nll_loss (issue "
         "22: clgrad raises RuntimeError where torch raises IndexError)")


def _dt(rng, dtype):
    """Mostly float: an input of another dtype now and then (torch's refusals)."""
    d = dtype()
    return d if d in ("float32", "float64") or rng.random() < 0.25 else "float32"


def _arr(rng, shape, dt, scale=1.0):
    a = rng.standard_normal(shape) * scale
    if dt == "bool":
        return np.asarray(a > 0)
    if dt == "int64":
        return np.asarray(np.round(a * 2), dtype=np.int64)
    return np.asarray(a, dtype=dt)


def _sizes(rng):
    return int(rng.integers(1, 3)), int(rng.integers(1, 4))


# ---- conv and pooling --------------------------------------------------------------------------
def _conv_inputs(rng, dtype):
    n, c = _sizes(rng)
    g = 2 if rng.random() < 0.25 else 1
    c, o = c * g, int(rng.integers(1, 3)) * g
    two = rng.random() < 0.4
    sp = (int(rng.integers(1, 5)), int(rng.integers(1, 5))) if two else (int(rng.integers(1, 7)),)
    k = tuple(int(rng.integers(1, 4)) for _ in sp)
    xs = ((n,) if rng.random() < 0.85 else ()) + (c,) + sp
    return [_arr(rng, xs, _dt(rng, dtype)), _arr(rng, (o, c // g) + k, _dt(rng, dtype)),
            _arr(rng, (o,), _dt(rng, dtype))]


D.family("conv", _conv_inputs)


def _out_size(n, k, s, p, d, ceil):
    num = n + 2 * p - d * (k - 1) - 1
    o = (-(-num // s) if ceil else num // s) + 1
    if ceil and (o - 1) * s >= n + p:
        o -= 1
    return o


def _pick_conv(nd):
    def pick(rng, pool):
        x = _any(rng, pool, lambda v: v.ndim in (nd + 1, nd + 2))
        w = _any(rng, pool, lambda v: v.ndim == nd + 2)
        if x is None or w is None:
            return None
        c = pool[x].shape[-nd - 1]
        wc = pool[w].shape[1]
        groups = c // wc if wc and c % wc == 0 and pool[w].shape[0] % max(c // wc, 1) == 0 \
            else 1
        b = _any(rng, pool, lambda v: v.ndim == 1 and v.shape[0] == pool[w].shape[0] and
                 v.dtype == pool[x].dtype)  # another float's: torch casts it or not by path
        stride = int(rng.integers(1, 3))
        pad = [0, 1, "same", "valid"][int(rng.integers(4))]
        if pad == "same" and rng.random() < 0.9:
            stride = 1
        dil = int(rng.integers(1, 3))
        ids = [x, w] + ([b] if b is not None and rng.random() < 0.8 else [])
        return (ids, (stride, pad, dil, groups))
    return pick


def _conv_ref(nd):
    def r(x, w, *rest):
        b = rest[0] if len(rest) == 5 else None
        stride, pad, dil, groups = rest[-4:]
        if x.ndim not in (nd + 1, nd + 2) or w.ndim != nd + 2:
            _raise(RuntimeError)
        if x.dtype != bool and x.dtype != w.dtype or b is not None and (b.dtype.kind == "f") != (x.dtype.kind == "f"):
            _raise(RuntimeError)          # a float bias of another precision is cast
        unbatched = x.ndim == nd + 1
        xb = x[None] if unbatched else x
        n, c = xb.shape[:2]
        o = w.shape[0]
        if c != w.shape[1] * groups or o % groups or (b is not None and b.shape != (o,)) or \
                o == 0 or 0 in w.shape[2:]:
            _raise(RuntimeError)
        if pad == "same" and stride != 1:
            _raise(RuntimeError)
        ks = w.shape[2:]
        if pad in ("same", "valid"):
            pads = [((dil * (k - 1)) // 2, dil * (k - 1) - (dil * (k - 1)) // 2) if pad == "same"
                    else (0, 0) for k in ks]
        else:
            pads = [(pad, pad)] * nd
        sp = xb.shape[2:]
        outs = [(s + p0 + p1 - dil * (k - 1) - 1) // stride + 1
                for s, k, (p0, p1) in zip(sp, ks, pads)]
        if any(s + p0 + p1 < dil * (k - 1) + 1 for s, k, (p0, p1) in zip(sp, ks, pads)):
            _raise(RuntimeError)
        if x.dtype == bool:
            _raise(NotImplementedError)   # after the shapes, before the weight's dtype
        if x.dtype != w.dtype:
            _raise(RuntimeError)
        # integers as torch computes them: in int64, wrapping on overflow
        acc = np.int64 if x.dtype.kind in "iu" else np.float64
        xp = np.pad(xb.astype(acc), [(0, 0), (0, 0)] + pads)
        out = np.zeros((n, o) + tuple(outs), dtype=acc)
        cg, og = c // groups, o // groups
        for g in range(groups):
            wg = w[g * og:(g + 1) * og].astype(acc)
            for kpos in np.ndindex(*ks):
                sl = tuple(slice(kk * dil, kk * dil + (m - 1) * stride + 1, stride)
                           for kk, m in zip(kpos, outs))
                patch = xp[(slice(None), slice(g * cg, (g + 1) * cg)) + sl]
                out[:, g * og:(g + 1) * og] += np.einsum("nc...,oc->no...", patch,
                                                         wg[(Ellipsis,) + kpos])
        if b is not None:
            out += b.astype(acc).reshape((o,) + (1,) * nd)
        return (out[0] if unbatched else out).astype(x.dtype)
    return r


def _conv_run(nd):
    def run(T, x, w, *rest):
        b = rest[0] if len(rest) == 5 else None
        stride, pad, dil, groups = rest[-4:]
        f = T.nn.functional.conv1d if nd == 1 else T.nn.functional.conv2d
        return f(x, w, b, stride=stride, padding=pad, dilation=dil, groups=groups)
    return run


def _conv_src(nd):
    def src(out, x, w, *rest):
        b = rest[0] if len(rest) == 5 else "None"
        s, p, d, g = rest[-4:]
        return f"{out} = F.conv{nd}d({x}, {w}, {b}, stride={s}, padding={p}, dilation={d}, " \
               f"groups={g})"
    return src


for _nd in (1, 2):
    op(f"conv{_nd}d", _pick_conv(_nd), _conv_run(_nd), _conv_ref(_nd), _conv_src(_nd),
       family="conv")


def _pick_pool(nd, kind):
    def pick(rng, pool):
        x = _any(rng, pool, lambda v: v.ndim in (nd + 1, nd + 2))
        if x is None:
            return None
        k = int(rng.integers(1, 4))
        s = [None, 1, 2][int(rng.integers(3))]
        p = int(rng.integers(0, 2)) if rng.random() < 0.95 else 2
        ceil = bool(rng.random() < 0.3)
        if kind == "max":
            return ([x], (k, s, p, int(rng.integers(1, 3)), ceil))
        return ([x], (k, s, p, ceil, bool(rng.random() < 0.5)))
    return pick


def _pool_ref(nd, kind):
    def r(x, k, s, p, a, b):
        dil, ceil, incl = (a, b, True) if kind == "max" else (1, a, b)
        if x.ndim not in (nd + 1, nd + 2):
            _raise(RuntimeError)
        s = s or k
        if p > k // 2:
            _raise(RuntimeError)
        if any(n == 0 for n in x.shape[-nd - 1:-nd] if x.ndim == nd + 2) or \
                any(n == 0 for n in x.shape[-nd:]):
            _raise(RuntimeError)
        outs = [_out_size(n, k, s, p, dil, ceil) for n in x.shape[-nd:]]
        if any(o < 1 for o in outs):
            _raise(RuntimeError)
        if x.dtype == bool or kind == "max" and nd == 1 and x.dtype.kind != "f":
            _raise(NotImplementedError)
        fill = -np.inf if kind == "max" else 0
        v = x.astype(np.float64) if x.dtype.kind == "f" else x.astype(np.float64)
        lead = x.shape[:-nd]
        out = np.zeros(lead + tuple(outs))
        for opos in np.ndindex(*outs):
            lo = [o * s - p for o in opos]
            if kind == "max":
                idx = [[q for q in (l0 + j * dil for j in range(k)) if 0 <= q < n]
                       for l0, n in zip(lo, x.shape[-nd:])]
                win = v[(Ellipsis,) + np.ix_(*idx)] if all(idx) else None
                out[(Ellipsis,) + opos] = fill if win is None else \
                    win.reshape(lead + (-1,)).max(-1)
            else:
                hi = [min(l0 + k, n + p) for l0, n in zip(lo, x.shape[-nd:])]
                size = np.prod([h - l0 for l0, h in zip(lo, hi)])
                lo2 = [max(l0, 0) for l0 in lo]
                hi2 = [min(h, n) for h, n in zip(hi, x.shape[-nd:])]
                win = v[(Ellipsis,) + tuple(slice(a, b) for a, b in zip(lo2, hi2))]
                cnt = size if incl else np.prod([b - a for a, b in zip(lo2, hi2)])
                out[(Ellipsis,) + opos] = win.reshape(lead + (-1,)).sum(-1) / cnt
        return (np.trunc(out) if x.dtype.kind != "f" else out).astype(x.dtype)
    return r


def _pool_run(nd, kind):
    def run(T, x, k, s, p, a, b):
        f = getattr(T.nn.functional, f"{kind}_pool{nd}d")
        if kind == "max":
            return f(x, k, s, p, dilation=a, ceil_mode=b)
        return f(x, k, s, p, ceil_mode=a, count_include_pad=b)
    return run


for _nd in (1, 2):
    op(f"max_pool{_nd}d", _pick_pool(_nd, "max"), _pool_run(_nd, "max"),
       _pool_ref(_nd, "max"), f"F.max_pool{_nd}d({{0}}, {{1}}, {{2}}, {{3}}, dilation={{4}}, "
       "ceil_mode={5})", family="conv")
    op(f"avg_pool{_nd}d", _pick_pool(_nd, "avg"), _pool_run(_nd, "avg"),
       _pool_ref(_nd, "avg"), f"F.avg_pool{_nd}d({{0}}, {{1}}, {{2}}, {{3}}, ceil_mode={{4}}, "
       "count_include_pad={5})", family="conv")


# ---- normalisation -----------------------------------------------------------------------------
def _norm_inputs(rng, dtype):
    n, c = _sizes(rng)
    c *= int(rng.integers(1, 3))
    ln = int(rng.integers(1, 4))
    xs = (n, c) + ((ln,) if rng.random() < 0.8 else ())
    return [_arr(rng, xs, _dt(rng, dtype), 2), _arr(rng, (c,), _dt(rng, dtype)),
            _arr(rng, (c,), _dt(rng, dtype)), _arr(rng, xs[-1:], _dt(rng, dtype))]


D.family("norm", _norm_inputs)


def _pick_layer_norm(rng, pool):
    x = _any(rng, pool, lambda v: v.ndim >= 1)
    if x is None:
        return None
    m = 1 + int(rng.random() < 0.3 and pool[x].ndim >= 2)
    shape = pool[x].shape[-m:]
    w = _any(rng, pool, lambda v: v.shape == shape)
    b = _any(rng, pool, lambda v: v.shape == shape)
    ids = [x] + ([w] if w is not None and rng.random() < 0.7 else [])
    ids += [b] if len(ids) == 2 and b is not None and rng.random() < 0.7 else []
    return (ids, (m,))


def _affine(y, w, b, axis, nd):
    shape = [1] * nd
    if w is not None:
        y = y * w.astype(np.float64).reshape(shape[:axis] + [-1] + shape[axis + 1:]) \
            if axis is not None else y * w.astype(np.float64)
    if b is not None:
        y = y + b.astype(np.float64).reshape(shape[:axis] + [-1] + shape[axis + 1:]) \
            if axis is not None else y + b.astype(np.float64)
    return y


def _check_params(x, *ps):
    """torch's order: the first parameter of another dtype than the input's is a RuntimeError
    ("mixed dtype"), then an input not float NotImplementedError, then any other mismatch."""
    ps = [p for p in ps if p is not None]
    if ps and ps[0].dtype != x.dtype:
        _raise(RuntimeError)
    if x.dtype.kind != "f":
        _raise(NotImplementedError)
    if any(p.dtype != x.dtype for p in ps):
        _raise(RuntimeError)


def _layer_norm_ref(x, *rest):
    m = rest[-1]
    w = rest[0] if len(rest) >= 2 else None
    b = rest[1] if len(rest) == 3 else None
    shape = x.shape[-m:]
    if x.ndim < m:
        _raise(RuntimeError)
    if any(p is not None and p.shape != shape for p in (w, b)):
        _raise(RuntimeError)
    _check_params(x, w, b)
    if x.dtype.kind != "f":
        _raise(NotImplementedError)
    axes = tuple(range(x.ndim - m, x.ndim))
    if x.size == 0:
        return x.copy()
    v = x.astype(np.float64)
    v = v - v.reshape(v.shape[:x.ndim - m] + (-1,))[..., :1].reshape(
        v.shape[:x.ndim - m] + (1,) * m)
    mu = v.mean(axes, keepdims=True)
    var = ((v - mu) ** 2).mean(axes, keepdims=True)
    return _affine((v - mu) / np.sqrt(var + 1e-5), w, b, None, x.ndim).astype(x.dtype)


def _ln_run(T, x, *rest):
    m = rest[-1]
    w = rest[0] if len(rest) >= 2 else None
    b = rest[1] if len(rest) == 3 else None
    return T.nn.functional.layer_norm(x, x.shape[x.ndim - m:], w, b)


op("layer_norm_affine", _pick_layer_norm, _ln_run, _layer_norm_ref,
   lambda out, x, *r: f"{out} = F.layer_norm({x}, {x}.shape[{x}.ndim - {r[-1]}:], "
   f"{r[0] if len(r) >= 2 else None}, {r[1] if len(r) == 3 else None})", family="norm")


def _pick_cw(rng, pool):
    """x of 2+ dims and per-channel weight and bias (or None)."""
    x = _any(rng, pool, lambda v: v.ndim >= 2)
    if x is None:
        return None
    c = pool[x].shape[1]
    w = _any(rng, pool, lambda v: v.shape == (c,)) if rng.random() < 0.8 else None
    b = _any(rng, pool, lambda v: v.shape == (c,)) if rng.random() < 0.8 else None
    return x, w, b


def _pick_batch_norm(rng, pool):
    p = _pick_cw(rng, pool)
    if p is None:
        return None
    x, w, b = p
    c = pool[x].shape[1]
    dt = pool[x].dtype if pool[x].dtype.kind == "f" else np.float32
    rm = Lit(rng.standard_normal(c).astype(dt))
    rv = Lit((rng.random(c) + 0.5).astype(dt))
    return ([i for i in (x, w, b) if i is not None], (rm, rv, w is not None, b is not None))


def _batch_norm_ref(x, *rest):
    rm, rv, hw, hb = rest[-4:]
    ps = list(rest[:-4])
    w = ps.pop(0) if hw else None
    b = ps.pop(0) if hb else None
    c = x.shape[1]
    if x.size == 0:
        # torch: the input's copy, times weight[0] plus bias[0] (0-d operands: promotion)
        out = x.copy()
        for how, p in (("mul", w), ("add", b)):
            if p is not None:
                out = D.reference(how, [out, np.asarray(p[0])], ())
        return out
    if rm.a.shape != (c,) or any(p is not None and p.shape != (c,) for p in (w, b)):
        _raise(RuntimeError)
    if x.dtype.kind != "f":
        _raise(NotImplementedError)
    _check_params(x, w, b)
    if rm.a.dtype != x.dtype:
        _raise(RuntimeError)
    shape = (1, c) + (1,) * (x.ndim - 2)
    y = (x.astype(np.float64) - rm.a.astype(np.float64).reshape(shape)) / \
        np.sqrt(rv.a.astype(np.float64).reshape(shape) + 1e-5)
    return _affine(y, w, b, 1, x.ndim).astype(x.dtype)


def _bn_run(T, x, *rest):
    rm, rv, hw, hb = rest[-4:]
    ps = list(rest[:-4])
    w = ps.pop(0) if hw else None
    b = ps.pop(0) if hb else None
    return T.nn.functional.batch_norm(x, D.lit(T, rm, x), D.lit(T, rv, x), w, b, training=False)


def _bn_src(out, x, *rest):
    rm, rv, hw, hb = rest[-4:]
    ps = list(rest[:-4])
    w = ps.pop(0) if hw == "True" else None
    b = ps.pop(0) if hb == "True" else None
    return f"{out} = F.batch_norm({x}, {rm}, {rv}, {w}, {b}, training=False)"


op("batch_norm_eval", _pick_batch_norm, _bn_run, _batch_norm_ref, _bn_src, family="norm")


def _pick_group_norm(rng, pool):
    p = _pick_cw(rng, pool)
    if p is None:
        return None
    x, w, b = p
    c = pool[x].shape[1]
    gs = [g for g in range(1, c + 1) if c % g == 0] if c else [1]
    g = int(rng.choice(gs)) if rng.random() < 0.95 else c + 1
    if w is None:
        b = None          # torch's backward of group_norm with a bias and no weight fails
    return ([i for i in (x, w, b) if i is not None], (g, w is not None, b is not None))


def _group_norm_ref(x, *rest):
    g, hw, hb = rest[-3:]
    ps = list(rest[:-3])
    w = ps.pop(0) if hw else None
    b = ps.pop(0) if hb else None
    n, c = x.shape[:2]
    if (n * c) // g * int(np.prod(x.shape[2:])) == 1:
        _raise(ValueError)                # "Expected more than 1 value per channel"
    if c % g or any(p is not None and p.shape != (c,) for p in (w, b)):
        _raise(RuntimeError)
    _check_params(x, w, b)
    if x.dtype.kind != "f":
        _raise(NotImplementedError)
    if x.size == 0:
        raise D.Unsure()                  # torch's weight gradient of an empty input: garbage
    if c // g * int(np.prod(x.shape[2:])) == 1:
        raise D.Unsure()                  # groups of one: 0, up to torch's rounding
    v = x.astype(np.float64).reshape(n, g, -1)
    v = v - v[..., :1]
    mu = v.mean(-1, keepdims=True)
    var = ((v - mu) ** 2).mean(-1, keepdims=True)
    y = ((v - mu) / np.sqrt(var + 1e-5)).reshape(x.shape)
    return _affine(y, w, b, 1, x.ndim).astype(x.dtype)


def _gn_run(T, x, *rest):
    g, hw, hb = rest[-3:]
    ps = list(rest[:-3])
    w = ps.pop(0) if hw else None
    b = ps.pop(0) if hb else None
    return T.nn.functional.group_norm(x, g, w, b)


def _gn_src(out, x, *rest):
    g, hw, hb = rest[-3:]
    ps = list(rest[:-3])
    w = ps.pop(0) if hw == "True" else None
    b = ps.pop(0) if hb == "True" else None
    return f"{out} = F.group_norm({x}, {g}, {w}, {b})"


op("group_norm", _pick_group_norm, _gn_run, _group_norm_ref, _gn_src, family="norm")
