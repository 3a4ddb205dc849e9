"""Differential testing, the loss and rnn-cell families (tests/differential.py runs them): mse,
l1, smooth_l1, huber, cross_entropy (class and probability targets, label smoothing), nll,
binary_cross_entropy (with logits), each with every reduction and with integer and bool inputs
where torch takes or refuses them; rnn_tanh/rnn_relu/lstm/gru cells with given weights."""
import numpy as np

import differential as D
from differential import Lit, _any, _raise, op
from differential_nn import _arr, _dt, _sizes

_RED = ("mean", "sum", "none")


def _loss_inputs(rng, dtype):
    n, c = _sizes(rng)
    c += 1
    xs = [(n, c), (c,), (n, c, 2)][int(rng.integers(3))] if rng.random() < 0.9 else (n,)
    dt = _dt(rng, dtype)
    p = (rng.random(xs) * 0.9 + 0.05).astype(dt if dt in ("float32", "float64") else "float32")
    return [_arr(rng, xs, dt, 2), _arr(rng, xs, _dt(rng, dtype)), p]


D.family("loss", _loss_inputs)


def _reduce(v, red, dt):
    with np.errstate(all="ignore"):
        r = v.mean() if red == "mean" else v.sum() if red == "sum" else v
    return np.asarray(r).astype(dt)


def _pick_pair(rng, pool, name):
    x = _any(rng, pool)
    y = _any(rng, pool, lambda v: v.shape == pool[x].shape and v is not pool[x])
    if y is None or rng.random() < 0.1:
        y = _any(rng, pool)
    if D.avoiding("loss_bool") and (pool[x].dtype == bool or pool[y].dtype == bool):
        return None
    if name == "huber_loss" and bool in (pool[x].dtype, pool[y].dtype):
        return None       # torch's backward fails on it ("Found dtype Bool but expected Double")
    return ([x, y], (_RED[int(rng.integers(3))],))


def _pointwise_loss(name, f, beta=False):
    def r(x, y, red, *k):
        shape = D._bshape(x, y)
        dt = D._promote(x.dtype.name, y.dtype.name)     # after broadcast_tensors: both dimensioned
        if k and (k[0] < 0 or k[0] == 0 and name == "huber_loss"):
            _raise(RuntimeError)
        if name == "l1_loss" or name == "smooth_l1_loss" and k[0] == 0:
            # abs(x - y) and a reduction (smooth_l1 with beta 0 is l1): no bool operand of
            # sub, no mean of integers
            if bool in (x.dtype, y.dtype) or D._CAT[dt] < 2 and red == "mean":
                _raise(RuntimeError)
            v = np.abs(np.broadcast_to(x, shape).astype(np.float64) -
                       np.broadcast_to(y, shape).astype(np.float64))
            return _reduce(v, red, dt)
        if name == "huber_loss":          # computed into the input's dtype
            if D._CAT[dt] > D._CAT[x.dtype.name]:
                _raise(RuntimeError)
            dt = x.dtype.name
        if D._CAT[dt] < 2:
            _raise(NotImplementedError)
        with np.errstate(all="ignore"):
            v = f(np.broadcast_to(x, shape).astype(np.float64) -
                  np.broadcast_to(y, shape).astype(np.float64), *k)
        if dt == "bool":
            dt = "bool"
        return _reduce(v, red, dt)

    def pick(rng, pool):
        p = _pick_pair(rng, pool, name)
        return p and (p[0], p[1] + ((float(rng.choice([1.0, 0.5, 0.0])),) if beta else ()))
    kw = {"smooth_l1_loss": "beta", "huber_loss": "delta"}.get(name)
    op(name, pick,
       (lambda T, x, y, red, *k: getattr(T.nn.functional, name)(x, y, reduction=red,
                                                                **({kw: k[0]} if k else {}))),
       r, f"F.{name}({{0}}, {{1}}, reduction={{2}}" + (f", {kw}={{3}})" if kw else ")"),
       family="loss")


def _smooth_l1(d, beta):
    a = np.abs(d)
    return np.where(a < beta, 0.5 * d * d / (beta if beta else 1), a - 0.5 * beta)


def _huber(d, delta):
    a = np.abs(d)
    return np.where(a < delta, 0.5 * d * d, delta * (a - 0.5 * delta))


_pointwise_loss("mse_loss", lambda d: d * d)
_pointwise_loss("l1_loss", np.abs)
_pointwise_loss("smooth_l1_loss", _smooth_l1, beta=True)
_pointwise_loss("huber_loss", _huber, beta=True)


def _targets(rng, shape, c):
    """Class targets for an input of shape (N, C, ...) or (C,): in range, some ignore_index."""
    tshape = () if len(shape) == 1 else (shape[0],) + tuple(shape[2:])
    t = rng.integers(0, max(c, 1), tshape)
    if rng.random() < 0.2 and t.size:
        t.flat[0] = -100
    if rng.random() < 0.05 and t.size and not D.avoiding("target_out_of_range"):
        t.flat[-1] = c
    return Lit(np.asarray(t, dtype=np.int64))


def _pick_ce(rng, pool, nll=False):
    x = _any(rng, pool, lambda v: v.ndim >= 1)
    if x is None:
        return None
    shape = pool[x].shape
    c = shape[0] if len(shape) == 1 else shape[1]
    red = _RED[int(rng.integers(3))]
    ls = 0.0 if nll or rng.random() < 0.6 else 0.2
    if not nll and rng.random() < 0.3:
        y = _any(rng, pool, lambda v: v.shape == shape and v.dtype.kind == "f")
        if y is not None:
            return ([x, y], (red, ls))
    return ([x], (_targets(rng, shape, c), red, ls))


def _ce_ref(nll):
    def r(x, *rest):
        if isinstance(rest[0], np.ndarray):
            y, red, ls = rest
            t = None
        else:
            t, red, ls = rest
            t = t.a
        if x.dtype.kind != "f":
            _raise(NotImplementedError)
        c = x.shape[0] if x.ndim == 1 else x.shape[1]
        axis = 0 if x.ndim == 1 else 1
        v = x.astype(np.float64)
        logp = v if nll else v - v.max(axis, keepdims=True) - np.log(
            np.exp(v - v.max(axis, keepdims=True)).sum(axis, keepdims=True))
        if t is None:                     # probabilities
            yy = y.astype(np.float64) * (1 - ls) + ls / c
            loss = -(yy * logp).sum(axis)
            if red == "mean":             # torch: the sum over the batch's positions
                with np.errstate(all="ignore"):
                    return np.asarray(loss.sum() / (x.size // c if c else 0)).astype(
                        D._promote(x.dtype.name, y.dtype.name))
            return _reduce(loss, red, D._promote(x.dtype.name, y.dtype.name))
        valid = t != -100
        if np.any((t[valid] < 0) | (t[valid] >= c)):
            _raise(IndexError)
        tt = np.where(valid, t, 0)
        picked = np.take_along_axis(logp, np.expand_dims(tt, axis), axis).squeeze(axis)
        loss = -picked
        if ls and not nll:
            loss = (1 - ls) * loss - ls / c * logp.sum(axis)
        loss = np.where(valid, loss, 0.0)
        if red == "mean":
            with np.errstate(all="ignore"):
                return np.asarray(loss.sum() / valid.sum()).astype(x.dtype)
        return _reduce(loss, red, x.dtype)
    return r


def _ce_run(nll):
    def run(T, x, *rest):
        F = T.nn.functional
        if nll:
            t, red, ls = rest
            return F.nll_loss(x, D.lit(T, t, x), reduction=red)
        t, red, ls = rest
        return F.cross_entropy(x, D.lit(T, t, x), reduction=red, label_smoothing=ls)
    return run


op("cross_entropy", _pick_ce, _ce_run(False), _ce_ref(False),
   "F.cross_entropy({0}, {1}, reduction={2}, label_smoothing={3})", family="loss")
op("nll_loss", lambda rng, pool: _pick_ce(rng, pool, nll=True), _ce_run(True), _ce_ref(True),
   "F.nll_loss({0}, {1}, reduction={2})", family="loss")


def _bce_ref(logits):
    def r(x, y, red):
        if x.shape != y.shape:
            _raise(ValueError)
        dt = y.dtype.name if logits else x.dtype.name     # with logits: in place on the target's
        if logits and x.dtype.kind != "f":
            _raise(NotImplementedError)
        if x.dtype.kind != "f" or y.dtype.kind != "f" or (not logits and x.dtype != y.dtype):
            _raise(NotImplementedError if not logits and x.dtype == y.dtype else RuntimeError)
        v, t = x.astype(np.float64), y.astype(np.float64)
        if not logits and not np.all((t >= 0) & (t <= 1)):        # NaN is outside too
            _raise(RuntimeError)
        with np.errstate(all="ignore"):
            if logits:
                loss = np.maximum(v, 0) - v * t + np.log1p(np.exp(-np.abs(v)))
            else:
                if not np.all((v >= 0) & (v <= 1)):
                    _raise(RuntimeError)
                loss = -(t * np.maximum(np.log(v), -100) + (1 - t) * np.maximum(np.log1p(-v),
                                                                                 -100))
        return _reduce(loss, red, dt)
    return r


def _pick_bce(rng, pool, logits):
    x = _any(rng, pool, lambda v: logits or np.all((v > 0) & (v < 1)))
    if x is None or rng.random() < 0.05:  # probabilities 0 and 1 are edges of the domain
        x = _any(rng, pool)
    y = _any(rng, pool, lambda v: v.shape == pool[x].shape)
    if y is None or rng.random() < 0.05:
        y = _any(rng, pool)
    return ([x, y], (_RED[int(rng.integers(3))],))


op("binary_cross_entropy", lambda rng, pool: _pick_bce(rng, pool, False),
   lambda T, x, y, red: T.nn.functional.binary_cross_entropy(x, y, reduction=red),
   _bce_ref(False), "F.binary_cross_entropy({0}, {1}, reduction={2})", family="loss")
op("bce_with_logits", lambda rng, pool: _pick_bce(rng, pool, True),
   lambda T, x, y, red: T.nn.functional.binary_cross_entropy_with_logits(x, y, reduction=red),
   _bce_ref(True), "F.binary_cross_entropy_with_logits({0}, {1}, reduction={2})",
   family="loss")


# ---- rnn cells ---------------------------------------------------------------------------------
_GATES = {"rnn_tanh_cell": 1, "rnn_relu_cell": 1, "lstm_cell": 4, "lstm_cell_c": 4,
          "gru_cell": 3}


def _rnn_inputs(rng, dtype):
    g = [1, 4, 3][int(rng.integers(3))]
    n, i = _sizes(rng)
    h = int(rng.integers(1, 4))
    batch = (n,) if rng.random() < 0.85 else ()
    dt = _dt(rng, dtype)
    if dt not in ("float32", "float64"):
        dt = "float32"
    out = [_arr(rng, batch + (i,), dt), _arr(rng, batch + (h,), dt)]
    if g == 4:
        out.append(_arr(rng, batch + (h,), dt))
    out += [_arr(rng, (g * h, i), dt, 0.5), _arr(rng, (g * h, h), dt, 0.5),
            _arr(rng, (g * h,), dt, 0.5), _arr(rng, (g * h,), dt, 0.5)]
    return out


D.family("rnn", _rnn_inputs)


def _pick_cell(name):
    g = _GATES[name]

    def pick(rng, pool):
        ok = []
        for wh in range(len(pool)):
            v = pool[wh]
            if v.ndim != 2 or v.shape[0] != g * v.shape[1]:
                continue
            hs = v.shape[1]
            for wi in range(len(pool)):
                u = pool[wi]
                if wi == wh or u.ndim != 2 or u.shape[0] != g * hs or u is v:
                    continue
                for x in range(len(pool)):
                    if pool[x].ndim in (1, 2) and pool[x].shape[-1] == u.shape[1] and \
                            x not in (wi, wh):
                        ok.append((x, wi, wh, hs))
        if not ok:
            return None
        x, wi, wh, hs = ok[int(rng.integers(len(ok)))]
        hshape = pool[x].shape[:-1] + (hs,)
        hsel = [k for k, v in enumerate(pool) if v.shape == hshape and k not in (x, wi, wh)]
        if len(hsel) < (2 if g == 4 else 1):
            return None
        h = [int(k) for k in rng.choice(hsel, 2 if g == 4 else 1, replace=False)]
        bs = [k for k, v in enumerate(pool) if v.shape == (g * hs,)]
        b = [int(k) for k in rng.choice(bs, 2)] if bs and rng.random() < 0.8 else []
        return ([x] + h + [wi, wh] + b, ())
    return pick


def _sig(v):
    return 1 / (1 + np.exp(-v))


def _cell_ref(name):
    g = _GATES[name]

    def r(x, *a):
        a = list(a)
        h = a.pop(0)
        c = a.pop(0) if g == 4 else None
        wi, wh = a[0], a[1]
        bi, bh = (a[2], a[3]) if len(a) == 4 else (None, None)
        if x.ndim == 1:
            _raise(IndexError)            # the unbatched form is nn's RNNCell's, not the op's
        ts = [v for v in (x, h, wi, wh, bi, bh) if v is not None]    # c: promotes
        if any(v.dtype.kind != "f" for v in ts):
            _raise(RuntimeError)
        if len({v.dtype for v in ts}) > 1:
            _raise(RuntimeError)
        f = [v.astype(np.float64) if v is not None else 0.0 for v in (x, h, c, wi, wh, bi, bh)]
        x64, h64, c64, wi64, wh64, bi64, bh64 = f
        with np.errstate(all="ignore"):
            gi = x64 @ wi64.T + bi64
            gh = h64 @ wh64.T + bh64
            if name == "rnn_tanh_cell":
                out = np.tanh(gi + gh)
            elif name == "rnn_relu_cell":
                out = np.maximum(gi + gh, 0)
            elif name == "gru_cell":
                H = h.shape[-1]
                r_ = _sig(gi[..., :H] + gh[..., :H])
                z = _sig(gi[..., H:2 * H] + gh[..., H:2 * H])
                n = np.tanh(gi[..., 2 * H:] + r_ * gh[..., 2 * H:])
                out = (1 - z) * n + z * h64
            else:
                H = h.shape[-1]
                gates = gi + gh
                i_, f_ = _sig(gates[..., :H]), _sig(gates[..., H:2 * H])
                gg, o = np.tanh(gates[..., 2 * H:3 * H]), _sig(gates[..., 3 * H:])
                cn = f_ * c64 + i_ * gg
                out = o * np.tanh(cn) if name == "lstm_cell" else cn
        return np.asarray(out).astype(x.dtype)
    return r


def _cell_run(name):
    g = _GATES[name]

    def run(T, x, *a):
        a = list(a)
        h = a.pop(0)
        if g == 4:
            c = a.pop(0)
            return T.lstm_cell(x, (h, c), *a)[0 if name == "lstm_cell" else 1]
        return getattr(T, name)(x, h, *a)
    return run


def _cell_src(name):
    g = _GATES[name]

    def src(out, x, *a):
        a = list(a)
        if g == 4:
            h, c = a.pop(0), a.pop(0)
            return f"{out} = torch.lstm_cell({x}, ({h}, {c}), {', '.join(a)})" \
                   f"[{0 if name == 'lstm_cell' else 1}]"
        return f"{out} = torch.{name}({x}, {', '.join(a)})"
    return src


for _n in _GATES:
    op(_n, _pick_cell(_n), _cell_run(_n), _cell_ref(_n), _cell_src(_n), family="rnn")
