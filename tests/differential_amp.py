"""Differential testing, the autocast family (tests/differential.py runs it): small regions under
`torch.autocast("cpu", dtype=torch.bfloat16)`: ops of torch's lower-precision list (matmul,
linear, conv1d) cast their float32 arguments to bfloat16 (float64 and integer ones are left as
they are), ops of the float32 list (mse_loss, ...) cast back, the rest run in their arguments'
dtypes and promote. A bfloat16 result is compared as a Bf16 (float32 values, marked) and is
never an argument of a later step."""
import numpy as np

import differential as D
from differential import Bf16, _any, _raise, bf16, op
from differential_linalg import _matmul_ref
from differential_nn import _arr, _conv_ref, _dt


def _inputs(rng, dtype):
    n, k, m = (int(rng.integers(1, 4)) for _ in range(3))
    return [_arr(rng, (n, k), _dt(rng, dtype)), _arr(rng, (m, k), _dt(rng, dtype)),
            _arr(rng, (n, m), _dt(rng, dtype)), _arr(rng, (m,), _dt(rng, dtype))]


D.family("autocast", _inputs)
_WITH = 'with torch.autocast("cpu", dtype=torch.bfloat16): '


def _low(x):
    """Autocast's cast for an op of the lower-precision list: float32 to bfloat16."""
    return bf16(x) if isinstance(x, np.ndarray) and x.dtype == np.float32 else x


def _as_low(f):
    """f's reference on autocast's casts: a result from bfloat16 arguments is bfloat16."""
    def r(*args):
        cast = [_low(a) for a in args]
        low = [a for a in cast if isinstance(a, Bf16)]
        if low and any(isinstance(a, np.ndarray) and not isinstance(a, Bf16) for a in cast):
            _raise(RuntimeError)           # bfloat16 beside float64 or int64: dtypes differ
        out = f(*[np.asarray(a) for a in cast if a is not None])
        return bf16(out) if low else out
    return r


def _pick_mm(rng, pool):
    a = _any(rng, pool, lambda v: v.ndim >= 1)
    if a is None:
        return None
    k = pool[a].shape[-1]
    b = _any(rng, pool, lambda v: v.ndim == 2 and v.shape[-1] == k)
    if b is None or rng.random() < 0.1:
        b = _any(rng, pool)
    return ([a, b], ())


def _t(b):
    return np.swapaxes(b, -1, -2) if b.ndim >= 2 else _raise(RuntimeError)   # .mT of 2+ dims


op("autocast_matmul", _pick_mm, lambda T, a, b: _ac(T, lambda: T.matmul(a, b.mT)),
   _as_low(lambda a, b: _matmul_ref(a, _t(b)) if b.ndim >= 2 else _raise(RuntimeError)),
   _WITH + "{out} = torch.matmul({0}, {1}.mT)", family="autocast")


def _ac(T, f):
    with T.autocast("cpu", dtype=T.bfloat16):
        return f()


def _pick_linear(rng, pool):
    p = _pick_mm(rng, pool)
    if p is None:
        return None
    m = pool[p[0][1]].shape[0] if pool[p[0][1]].ndim else 0
    c = _any(rng, pool, lambda v: v.shape == (m,))
    return (p[0] + ([c] if c is not None and rng.random() < 0.7 else []), ())


def _linear_ref(x, w, b=None):
    if w.ndim > 2 or w.ndim < 2 and b is not None:
        _raise(RuntimeError)              # a 1-d weight with a bias: addmm's "mat2 must be a matrix"
    if b is not None and x.ndim == 2 and b.dtype != w.dtype:
        _raise(RuntimeError)              # addmm(bias, x, w.t()) checks the dtypes first
    y = _matmul_ref(x, w.T)
    if b is not None:
        if b.dtype != y.dtype:
            _raise(RuntimeError)
        y = (y.astype(np.float64) + b.astype(np.float64)).astype(y.dtype)
    return y


op("autocast_linear", _pick_linear,
   lambda T, x, w, *b: _ac(T, lambda: T.nn.functional.linear(x, w, *b)), _as_low(_linear_ref),
   lambda out, x, w, *b: _WITH + f"{out} = F.linear({x}, {w}{''.join(', ' + v for v in b)})",
   family="autocast")


def _pick_region(rng, pool):
    p = _pick_mm(rng, pool)
    if p is None:
        return None
    a, b = p[0]
    if pool[b].ndim != 2 or pool[a].ndim < 1:
        return None
    shape = pool[a].shape[:-1] + pool[b].shape[:1]
    c = _any(rng, pool, lambda v: D._broadcastable(v.shape, shape))
    return None if c is None else ([a, b, c], ())


def _mse_region(a, b, c):
    """mse_loss(a @ b.mT, c): the product in bfloat16, the loss (float32 list) in float32."""
    y = _as_low(lambda a, b: _matmul_ref(a, _t(b)))(a, b)
    y32 = np.asarray(y, dtype=np.float32) if isinstance(y, Bf16) else y
    c32 = c                               # float64 is no autocast's: it stays
    dt = D._promote(y32.dtype.name, c32.dtype.name)
    if D._CAT[dt] < 2:
        _raise(NotImplementedError)
    D._bshape(y32, c32)
    d = y32.astype(np.float64) - c32.astype(np.float64)
    return np.asarray((d * d).mean()).astype(dt)


op("autocast_mm_mse", _pick_region,
   lambda T, a, b, c: _ac(T, lambda: T.nn.functional.mse_loss(a @ b.mT, c)), _mse_region,
   _WITH + "{out} = F.mse_loss({0} @ {1}.mT, {2})", family="autocast")


def _add_region(a, b, c):
    """(a @ b.mT) + c: the product in bfloat16, the sum promotes as it would outside."""
    y = _as_low(lambda a, b: _matmul_ref(a, _t(b)))(a, b)
    shape = D._bshape(y, c)
    if isinstance(y, Bf16):
        if c.dtype.kind == "f" and (c.ndim or not y.ndim):   # a dimensioned float beside it
            return (np.broadcast_to(np.asarray(y, np.float64), shape) +
                    c.astype(np.float64)).astype(c.dtype)
        return bf16(np.asarray(y, np.float64) + c.astype(np.float64))
    r = D.reference("add", [y, c], ())
    return _raise(r.exc) if isinstance(r, D.Raises) else r


op("autocast_mm_add", _pick_region, lambda T, a, b, c: _ac(T, lambda: a @ b.mT + c),
   _add_region, _WITH + "{out} = {0} @ {1}.mT + {2}", family="autocast")


def _pick_conv(rng, pool):
    x = _any(rng, pool, lambda v: v.ndim == 2)
    w = _any(rng, pool, lambda v: v.ndim == 2 and v is not pool[x])
    if x is None or w is None:
        return None
    return ([x, w], ())


def _conv_region(x, w):
    """conv1d(x[None], w[:, :, None]...): a 1x1 convolution, in bfloat16."""
    if x.dtype == bool:                   # torch: the shapes first, then the bool input
        if w.ndim == 2 and x.shape[0] != w.shape[1]:
            _raise(RuntimeError)
        _raise(NotImplementedError)
    return _as_low(lambda x, w: _conv_ref(1)(x[None], w[..., None], 1, 0, 1, 1)[0])(x, w)


op("autocast_conv1d", _pick_conv,
   lambda T, x, w: _ac(T, lambda: T.nn.functional.conv1d(x[None], w[..., None])[0]),
   _conv_region, _WITH + "{out} = F.conv1d({0}[None], {1}[..., None])[0]", family="autocast")


def _pick_softmax(rng, pool):
    p = _pick_mm(rng, pool)
    return p and (p[0], (int(rng.integers(-1, 1)),))


def _softmax_region(a, b, d):
    y = _as_low(lambda a, b: _matmul_ref(a, _t(b)))(a, b)
    r = D.reference("softmax", [np.asarray(y, dtype=np.float32) if isinstance(y, Bf16) else y],
                    (d,))
    if isinstance(r, D.Raises):
        _raise(r.exc)
    return bf16(r) if isinstance(y, Bf16) else r


op("autocast_mm_softmax", _pick_softmax,
   lambda T, a, b, d: _ac(T, lambda: T.softmax(a @ b.mT, d)), _softmax_region,
   _WITH + "{out} = torch.softmax({0} @ {1}.mT, {2})", family="autocast")
