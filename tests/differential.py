"""Differential testing of clgrad against numpy and a table of torch's rules: random short op
programs, run in clgrad and in a numpy reference, values, errors and gradients compared.

Shared by tests/test_differential.py (a small fixed budget in CI) and tools/fuzz.py (long local
campaigns). A program is a few input tensors and a list of steps; each step applies one op of
OPS to earlier values and appends its result. The reference is numpy: views are numpy views, so
in-place writes alias the same way, and an op that torch refuses returns the exception class
torch raises (`Raises`), from the rules written beside each op. Gradients: float64 programs
without in-place steps are differentiated in clgrad and by central differences of the numpy
reference.

    >>> import numpy as np
    >>> p = generate(np.random.default_rng(0))
    >>> print(p.source())                                 # doctest: +SKIP
"""
import math
import warnings

import numpy as np

DTYPES = ("float32", "float64", "int64", "bool")
_CAT = {"bool": 0, "int64": 1, "float32": 2, "float64": 2}


class Raises:
    """The reference's answer where torch raises: the exception class."""

    def __init__(self, exc):
        self.exc = exc

    def __repr__(self):
        return f"raises {self.exc.__name__}"


class Unsure(Exception):
    """Raised by a reference that cannot tell what torch gives (the inverse of a nearly singular
    matrix): the generator leaves such a step out."""


class _Stop(Exception):
    def __init__(self, exc):
        self.exc = exc


def _raise(exc):
    raise _Stop(exc)


# ---- torch's type promotion (dimensioned tensors, 0-d tensors, Python numbers) ----------------
def _promote(a, b):
    if a is None:
        return b
    if b is None:
        return a
    if _CAT[a] != _CAT[b]:
        return a if _CAT[a] > _CAT[b] else b
    return "float64" if "float64" in (a, b) else a


def _combine(higher, lower):
    if higher is None:
        return lower
    if lower is None or _CAT[higher] == 2:
        return higher
    if higher == "bool" or _CAT[lower] == 2:
        return _promote(higher, lower)
    return higher


def result_type(*xs):
    dim = zero = wrapped = None
    for x in xs:
        if isinstance(x, np.ndarray):
            if x.ndim:
                dim = _promote(dim, x.dtype.name)
            else:
                zero = _promote(zero, x.dtype.name)
        else:
            wrapped = _promote(wrapped, "bool" if isinstance(x, bool) else
                               "int64" if isinstance(x, int) else "float32")
    return _combine(dim, _combine(zero, wrapped))


def _bshape(*xs):
    try:
        return np.broadcast_shapes(*[np.shape(x) for x in xs])
    except ValueError:
        _raise(RuntimeError)


def _f64(x):
    return np.asarray(x, dtype=np.float64)


# ---- the op table ------------------------------------------------------------------------------
class Op:
    """name, how to pick its arguments from the pool, how clgrad runs it, the numpy reference,
    and the family it belongs to (the subject modules beside this one register theirs)."""

    def __init__(self, name, pick, run, ref, inplace=False, src=None, family="core", grad=True):
        self.name, self.pick, self.run, self.ref = name, pick, run, ref
        self.inplace = inplace
        self.grad = grad and not inplace   # False: never in a program whose gradients are checked
        self.family = family
        # for reproducers: a format string of one Python line ("v3 = " is put before it), or a
        # function (out, *args) -> the line(s) that set `out`
        self.src = src


OPS = {}


def op(name, pick, run, ref, src, inplace=False, family="core", grad=True):
    OPS[name] = Op(name, pick, run, ref, inplace, src, family, grad)


class Family:
    """A subject's ops share one: `inputs(rng, dtype)` makes a program's inputs shaped for them
    (a conv's input, weight and bias), `dtype()` drawing each input's dtype; None: random ones."""

    def __init__(self, name, inputs=None):
        self.name, self.inputs = name, inputs


FAMILIES = {"core": Family("core")}


def family(name, inputs=None):
    FAMILIES[name] = Family(name, inputs)


# Switches that keep the generator away from one kind of program (a known finding's, until its
# fix lands): generate(avoid=...) sets them for the picks, which read them with avoiding().
SWITCHES = {}
_avoid = frozenset()


def switch(name, doc):
    SWITCHES[name] = doc


def avoiding(name):
    assert name in SWITCHES, name
    return name in _avoid


class Lit:
    """A constant tensor argument (an index, a target, running statistics): numpy in the
    reference, `lit(T, c, like)` in clgrad, `torch.tensor(...)` in reproducers."""

    def __init__(self, a):
        self.a = np.asarray(a)

    def __repr__(self):
        a = self.a
        return (f"torch.tensor(np.array({a.tolist()!r}, dtype=np.{a.dtype.name})"
                f".reshape({a.shape}))")


def lit(T, c, like=None):
    """clgrad's (or torch's) tensor for a Lit (other constants pass through), on like's device."""
    if isinstance(c, Lit):
        return T.tensor(c.a, device=None if like is None else like.device)
    if isinstance(c, tuple):
        return tuple(lit(T, x, like) for x in c)
    return c


def ref_arr(c):
    """The numpy value of a Lit (and of the Lits in a tuple)."""
    if isinstance(c, Lit):
        return c.a
    if isinstance(c, tuple):
        return tuple(ref_arr(x) for x in c)
    return c


class Bf16(np.ndarray):
    """A bfloat16 result (numpy has none): its values as float32, marked. Steps never take one
    as an argument (a rounding of one ulp would move what follows past the tolerances)."""


def bf16(x):
    """x rounded to bfloat16 (to nearest even), as a Bf16."""
    b = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    r = ((b + 0x7FFF + ((b >> 16) & 1)) & 0xFFFF0000).astype(np.uint32)
    out = np.where(np.isnan(x), np.float32(np.nan), r.view(np.float32)).astype(np.float32)
    return np.asarray(out).reshape(np.shape(x)).view(Bf16)


class Inexact(np.ndarray):
    """A result whose last bits depend on the algorithm (a factorisation's pivoting and order of
    sums: solve, inv): exact zeros in one library are 1e-17 in another. Steps never take one as
    an argument, where a discontinuous op (logical_not, sign, atan2, an ord-0 norm) would turn
    that rounding into another answer."""


def _any(rng, pool, pred=lambda v: True):
    ids = [i for i, v in enumerate(pool) if not isinstance(v, (Bf16, Inexact)) and pred(v)]
    return int(rng.choice(ids)) if ids else None


def _pick1(rng, pool):
    return ([_any(rng, pool)], ())


def _pick_float(rng, pool):
    i = _any(rng, pool, lambda v: v.dtype.kind == "f")
    return None if i is None else ([i], ())


def _pick2(rng, pool):
    a = _any(rng, pool)
    if rng.random() < 0.3:          # a Python number as the other operand
        s = [1.5, -2, True, 0.25, 3][int(rng.integers(5))]
        return ([a], (s,))
    b = _any(rng, pool, lambda v: _broadcastable(v.shape, pool[a].shape)) \
        if rng.random() < 0.9 else _any(rng, pool)
    return ([a, b], ())


def _broadcastable(s, t):
    try:
        np.broadcast_shapes(s, t)
        return True
    except ValueError:
        return False


def _pick_dim(rng, pool, need_dims=True):
    i = _any(rng, pool, lambda v: v.ndim > 0) if need_dims else _any(rng, pool)
    if i is None:
        return None
    nd = pool[i].ndim
    return ([i], (int(rng.integers(-nd, nd)),) if nd else (0,))


def _unary(name, ref, bool_exc=None, int_exc=None, to_float=False):
    """An elementwise unary op: ref computes in float64 (or the dtype); torch's dtype rules."""
    def r(x, *p):
        dt = x.dtype.name
        if dt == "bool" and bool_exc:
            _raise(bool_exc)
        if dt == "int64" and int_exc:
            _raise(int_exc)
        out_dt = "float32" if to_float and _CAT[dt] < 2 else dt
        with np.errstate(all="ignore"):
            return np.asarray(ref(x.astype(np.float64) if out_dt != "bool" else x)).astype(out_dt)
    op(name, _pick1, lambda T, x: getattr(T, name)(x), r, f"{{0}}.{name}()")


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _erf(x):
    return np.vectorize(math.erf, otypes=[np.float64])(x)


_unary("neg", lambda x: -x, bool_exc=RuntimeError)
_unary("abs", np.abs, bool_exc=NotImplementedError)
_unary("floor", np.floor, bool_exc=NotImplementedError)
_unary("round", np.round, bool_exc=NotImplementedError)
_unary("exp", np.exp, to_float=True)
_unary("sigmoid", _sigmoid, to_float=True)
_unary("tanh", np.tanh, to_float=True)
_unary("relu", lambda x: np.maximum(x, 0), bool_exc=RuntimeError)
op("logical_not", _pick1, lambda T, x: x.logical_not(), lambda x: x == 0, "{0}.logical_not()")


def _square_ref(x):
    if x.dtype == bool:
        return x.astype(np.int64)           # torch: pow(x, 2), bool promotes to int64
    return (x.astype(np.float64) ** 2).astype(x.dtype) if x.dtype.kind == "f" else x * x


op("square", _pick1, lambda T, x: T.square(x), _square_ref, "{0}.square()")


def _act(name, f):
    def r(x):
        if x.dtype.kind != "f":
            _raise(NotImplementedError)
        with np.errstate(all="ignore"):
            return f(x.astype(np.float64)).astype(x.dtype)
    op(name, _pick1, lambda T, x: getattr(T.nn.functional, name)(x), r,
       f"F.{name}({{0}})")


_act("gelu", lambda x: 0.5 * x * (1 + _erf(x / np.sqrt(2))))
_act("silu", lambda x: x * _sigmoid(x))
_act("softplus", lambda x: np.where(x > 20, x, np.log1p(np.exp(np.minimum(x, 20)))))
_act("leaky_relu", lambda x: np.where(x < 0, 0.01 * x, x))


def _binary(name, f, bool_rule=None, out=None, on_bools=None):
    """Elementwise binary op with a tensor or a Python number as the other operand."""
    def r(x, y):
        dt = result_type(x, y)
        _bshape(x, y)
        bools = [v for v in (x, y) if (isinstance(v, np.ndarray) and v.dtype == bool) or
                 isinstance(v, bool)]
        if bool_rule and bools:
            _raise(bool_rule)
        odt = out or ("float32" if name in ("div", "atan2") and _CAT[dt] < 2 else dt)
        with np.errstate(all="ignore"):
            if dt == "bool" and on_bools is not None:
                res = on_bools(np.asarray(x), np.asarray(y))
            else:
                res = f(_f64(x), _f64(y))
        return np.asarray(res).astype(odt)

    def run(T, x, y):
        return getattr(T, name)(x, y)
    op(name, _pick2, run, r, f"torch.{name}({{0}}, {{1}})")


_binary("add", lambda x, y: x + y, on_bools=lambda x, y: x | y)
_binary("sub", lambda x, y: x - y, bool_rule=RuntimeError)
_binary("mul", lambda x, y: x * y, on_bools=lambda x, y: x & y)
_binary("div", lambda x, y: x / y)
_binary("maximum", np.maximum, on_bools=np.maximum)
_binary("lt", lambda x, y: x < y, out="bool")
_binary("eq", lambda x, y: x == y, out="bool")
_binary("atan2", np.arctan2)
for _n in ("maximum", "atan2"):      # torch.maximum and atan2 take tensors only
    OPS[_n].pick = lambda rng, pool: (lambda p: p if len(p[0]) == 2 else None)(_pick2(rng, pool))


def _pick_masked(rng, pool):
    x = _any(rng, pool)
    m = _any(rng, pool, lambda v: v.dtype == bool and _broadcastable(v.shape, pool[x].shape))
    if m is None:
        m = _any(rng, pool, lambda v: _broadcastable(v.shape, pool[x].shape))
    return ([x, m], ([0.32, -1.5, 0, 2][int(rng.integers(4))],))


def _masked_fill_ref(x, m, v):
    if m.dtype != bool:
        _raise(RuntimeError)
    shape = _bshape(x, m)
    dt = x.dtype
    fill = np.asarray(v).astype(dt)            # bool: any nonzero fill is True
    return np.where(np.broadcast_to(m, shape), fill, np.broadcast_to(x, shape)).astype(dt)


op("masked_fill", _pick_masked, lambda T, x, m, v: x.masked_fill(m, v), _masked_fill_ref,
   "{0}.masked_fill({1}, {2!r})")


# reductions
def _reduce_ref(kind):
    def r(x, d):
        if x.ndim == 0:
            d0 = None
        else:
            d0 = d % x.ndim
        n = x.shape[d0] if d0 is not None else 1
        if kind == "sum":
            if x.dtype.kind != "f":
                return np.sum(x.astype(np.int64), axis=d0)
            return np.sum(x.astype(np.float64), axis=d0).astype(x.dtype)
        if kind == "mean":
            if x.dtype.kind != "f":
                _raise(RuntimeError)
            with np.errstate(all="ignore"):
                return np.mean(x.astype(np.float64), axis=d0).astype(x.dtype)
        if kind in ("argmax", "argmin") and x.dtype == bool:
            _raise(RuntimeError)
        if kind in ("amax", "argmax", "amin", "argmin"):
            if n == 0:
                _raise(IndexError)
            out_shape = tuple(s for i, s in enumerate(x.shape) if i != d0)
            if 0 in out_shape:
                return np.zeros(out_shape, dtype=x.dtype if kind[0] == "a" and kind[1] == "m"
                                else np.int64)
            f = {"amax": np.max, "amin": np.min, "argmax": np.argmax, "argmin": np.argmin}[kind]
            return f(x, axis=d0) if kind[1] == "m" else f(x, axis=d0).astype(np.int64)
        if kind in ("std", "var"):
            if x.dtype.kind != "f":
                _raise(RuntimeError)
            with np.errstate(all="ignore"):
                f = np.std if kind == "std" else np.var
                return f(_shifted(x, d0), axis=d0, ddof=1).astype(x.dtype) \
                    if n > 1 else np.full(np.sum(x, axis=d0).shape, np.nan, dtype=x.dtype)
        if kind == "norm":
            if x.dtype.kind != "f":
                _raise(RuntimeError)
            return np.sqrt(np.sum(x.astype(np.float64) ** 2, axis=d0)).astype(x.dtype)
        if kind == "softmax":
            if x.dtype.kind != "f":
                _raise(RuntimeError)
            if x.size == 0:
                return x.copy()
            e = np.exp(x.astype(np.float64) - np.max(x, axis=d0, keepdims=True))
            return (e / e.sum(axis=d0, keepdims=True)).astype(x.dtype)
    return r


for _k in ("sum", "mean", "amax", "amin", "argmax", "argmin", "std", "var", "norm", "softmax"):
    op(_k, (lambda rng, pool: _pick_dim(rng, pool, need_dims=False)),
       (lambda k: (lambda T, x, d: getattr(x, k)(d)))(_k), _reduce_ref(_k), f"{{0}}.{_k}({{1}})")
OPS["norm"].run = lambda T, x, d: x.norm(dim=d)
OPS["norm"].src = "{0}.norm(dim={1})"
OPS["softmax"].run = lambda T, x, d: T.softmax(x, d)
OPS["softmax"].src = "torch.softmax({0}, {1})"
# torch: no kernel for integer softmax, but an empty tensor never reaches the kernel
OPS["softmax"].ref = (lambda r: lambda x, d: x.copy() if x.size == 0 and x.ndim else
                      _raise(NotImplementedError) if x.dtype.kind != "f" else r(x, d))(
    OPS["softmax"].ref)


def _shifted(x, axis):
    """x - its first element along axis, in float64: a constant row is then exactly 0, as in
    torch's Welford pass (a plain float mean is off by an ulp)."""
    v = x.astype(np.float64)
    if axis is None or v.ndim == 0 or v.shape[axis] == 0:
        return v
    return v - np.take(v, [0], axis=axis)


def _layer_norm_ref(x):
    if x.ndim == 0:
        _raise(RuntimeError)
    if x.dtype.kind != "f":
        _raise(NotImplementedError)
    if x.size == 0:
        return x.copy()
    v = _shifted(x, -1)
    m = v.mean(-1, keepdims=True)
    var = ((v - m) ** 2).mean(-1, keepdims=True)
    return ((v - m) / np.sqrt(var + 1e-5)).astype(x.dtype)


op("layer_norm", _pick1, lambda T, x: T.nn.functional.layer_norm(x, x.shape[-1:]),
   _layer_norm_ref, "F.layer_norm({0}, {0}.shape[-1:])")


# views: numpy views alias the way clgrad's do
def _pick_transpose(rng, pool):
    i = _any(rng, pool, lambda v: v.ndim >= 2)
    if i is None:
        return None
    nd = pool[i].ndim
    a, b = rng.choice(nd, 2, replace=False)
    return ([i], (int(a), int(b)))


op("transpose", _pick_transpose, lambda T, x, a, b: x.transpose(a, b),
   lambda x, a, b: np.swapaxes(x, a, b), "{0}.transpose({1}, {2})")


def _pick_slice(rng, pool):
    i = _any(rng, pool, lambda v: v.ndim >= 1)
    if i is None:
        return None
    d = int(rng.integers(pool[i].ndim))
    n = pool[i].shape[d]
    start = int(rng.integers(0, n + 1))
    stop = int(rng.integers(start, n + 1))
    return ([i], (d, start, stop, int(rng.integers(1, 3))))


def _slice_run(T, x, d, a, b, s):
    return x[(slice(None),) * d + (slice(a, b, s),)]


op("slice", _pick_slice, _slice_run, lambda x, d, a, b, s: x[(slice(None),) * d + (slice(a, b, s),)],
   "{0}[(slice(None),) * {1} + (slice({2}, {3}, {4}),)]")


def _pick_expand(rng, pool):
    i = _any(rng, pool, lambda v: v.ndim < 4)
    return ([i], (int(rng.integers(0, 4)),))


op("expand", _pick_expand, lambda T, x, n: x.unsqueeze(0).expand(n, *x.shape),
   lambda x, n: np.broadcast_to(x[None], (n,) + x.shape), "{0}.unsqueeze(0).expand({1}, *{0}.shape)")


def _pick_permute(rng, pool):
    i = _any(rng, pool)
    return ([i], tuple(int(d) for d in rng.permutation(pool[i].ndim)))


op("permute", _pick_permute, lambda T, x, *dims: x.permute(*dims) if dims else x.permute(()),
   lambda x, *dims: np.transpose(x, dims), None)           # formatted by Program.source


def _pick_index_select(rng, pool):
    i = _any(rng, pool)
    nd = pool[i].ndim
    d = int(rng.integers(nd)) if nd else 0
    n = pool[i].shape[d] if nd else 1
    high = max(n + int(rng.random() < 0.1), 1)        # now and then one out of range
    idx = [int(v) for v in rng.integers(0, high, int(rng.integers(0, 4)))]
    return ([i], (d, idx))


def _index_select_ref(x, d, idx):
    if x.ndim == 0:
        if len(idx) != 1:
            _raise(RuntimeError)
        if idx[0] != 0:
            _raise(IndexError)
        return x.copy()
    if idx and x.shape[d] == 0 and x.ndim > 1:
        _raise(RuntimeError)            # "self indexing axis dim should be positive"
    if any(v >= x.shape[d] for v in idx):
        _raise(IndexError)
    return np.take(x, np.array(idx, dtype=np.int64), axis=d)


op("index_select", _pick_index_select,
   lambda T, x, d, idx: x.index_select(d, T.tensor(idx, dtype=T.int64, device=x.device)),
   _index_select_ref, "{0}.index_select({1}, torch.tensor({2}, dtype=torch.int64))")


def _pick_where(rng, pool):
    c = _any(rng, pool, lambda v: v.dtype == bool)
    if c is None:
        return None
    return ([c, _any(rng, pool), _any(rng, pool)], ())


def _where_ref(c, x, y):
    shape = _bshape(c, x, y)
    dt = result_type(x, y)
    return np.where(np.broadcast_to(c, shape), np.broadcast_to(x, shape).astype(dt),
                    np.broadcast_to(y, shape).astype(dt))


op("where", _pick_where, lambda T, c, x, y: T.where(c, x, y), _where_ref,
   "torch.where({0}, {1}, {2})")


def _pick_clamp(rng, pool):
    i = _any(rng, pool)
    lo = [-1, -0.5, 0][int(rng.integers(3))]
    return ([i], (lo, lo + [1, 2.5][int(rng.integers(2))]))


def _clamp_ref(x, lo, hi):
    dt = result_type(x, lo, hi)
    if dt == "bool":
        dt = "int64"
    return np.clip(x.astype(np.float64), lo, hi).astype(dt) if _CAT[dt] == 2 else \
        np.clip(x.astype(np.int64), lo, hi).astype(dt)


op("clamp", _pick_clamp, lambda T, x, lo, hi: x.clamp(lo, hi), _clamp_ref, "{0}.clamp({1}, {2})")


def _reshape_ref(x):
    return x.reshape(-1)           # a view where numpy (and torch) can, else a copy


op("flatten", _pick1, lambda T, x: x.reshape(-1), _reshape_ref, "{0}.reshape(-1)")


def _chunk_ref(x, d, k):
    n = x.shape[d]
    if n == 0:
        return x
    size = -(-n // 2)
    pieces = [x[(slice(None),) * d + (slice(s, s + size),)] for s in range(0, n, size)]
    return pieces[k if k < len(pieces) else -1]


op("chunk", lambda rng, pool: (lambda r: r and (r[0], (r[1][0] % pool[r[0][0]].ndim,
                                                      int(rng.integers(2)))))(_pick_dim(rng, pool)),
   lambda T, x, d, k: (lambda c: c[k if k < len(c) else -1])(x.chunk(2, d)), _chunk_ref,
   "(lambda c: c[{2} if {2} < len(c) else -1])({0}.chunk(2, {1}))")


# in-place steps (float values only, so that only the overlap and shape rules decide)
def _check_write(out, *ins):
    """torch's overlap rules on numpy arrays (see clgrad.ops._base.check_inplace_overlap)."""
    if out.size and any(st == 0 and n > 1 for n, st in zip(out.shape, out.strides)):
        _raise(RuntimeError)
    for t in ins:
        if isinstance(t, np.ndarray) and t is not out and out.size and t.size and \
                np.shares_memory(out, t) and _dense(out) and _dense(t):
            a0 = out.__array_interface__["data"][0]
            b0 = t.__array_interface__["data"][0]
            if not (a0 == b0 and out.size == t.size and out.strides == t.strides):
                _raise(RuntimeError)


def _dense(a):
    expected = a.itemsize
    for st, n in sorted((st, n) for n, st in zip(a.shape, a.strides) if n != 1):
        if st != expected:
            return False
        expected *= n
    return True


def _add_(x, y):
    _check_write(x, y)
    if _bshape(x, y) != x.shape:
        _raise(RuntimeError)
    x[...] = (x.astype(np.float64) + _f64(y)).astype(x.dtype)
    return x


def _mul_(x, y):
    _check_write(x, y)
    if _bshape(x, y) != x.shape:
        _raise(RuntimeError)
    x[...] = (x.astype(np.float64) * _f64(y)).astype(x.dtype)
    return x


def _floor_(x):
    _check_write(x)
    x[...] = np.floor(x)
    return x


def _pick_inplace2(rng, pool):
    i = _any(rng, pool, lambda v: v.dtype.kind == "f")
    if i is None:
        return None
    if rng.random() < 0.3:
        return ([i], (0.5,))
    j = _any(rng, pool, lambda v: v.dtype.kind == "f" and _broadcastable(v.shape, pool[i].shape))
    return ([i, j], ())


def _pick_setitem(rng, pool):
    i = _any(rng, pool, lambda v: v.ndim >= 1)
    if i is None:
        return None
    picked = _pick_slice(rng, [pool[i]])
    d, a, b, st = picked[1]
    target = pool[i][(slice(None),) * d + (slice(a, b, st),)]
    j = _any(rng, pool, lambda v: _CAT[v.dtype.name] <= _CAT[pool[i].dtype.name] and
             _broadcastable(v.shape, target.shape))
    return None if j is None else ([i, j], (d, a, b, st))


def _setitem_ref(x, y, d, a, b, s):
    t = x[(slice(None),) * d + (slice(a, b, s),)]
    _check_write(t, y)
    while y.ndim > t.ndim and y.shape[0] == 1:      # torch drops the value's leading 1s
        y = y[0]
    if _bshape(t, y) != t.shape:
        _raise(RuntimeError)
    t[...] = np.broadcast_to(y, t.shape).astype(x.dtype)
    return x


def _setitem_run(T, x, y, d, a, b, s):
    x[(slice(None),) * d + (slice(a, b, s),)] = y
    return x


op("setitem", _pick_setitem, _setitem_run, _setitem_ref, None,   # formatted by Program.source
   inplace=True)


op("add_", _pick_inplace2, lambda T, x, y: x.add_(y), _add_, "{0}.add_({1})", inplace=True)
op("mul_", _pick_inplace2, lambda T, x, y: x.mul_(y), _mul_, "{0}.mul_({1})", inplace=True)
op("floor_", _pick_float, lambda T, x: x.floor_(), _floor_, "{0}.floor_()", inplace=True)


# ---- programs ----------------------------------------------------------------------------------
class Program:
    """Inputs (numpy arrays) and steps (op name, value indices, constants)."""

    def __init__(self, inputs, steps):
        self.inputs = inputs
        self.steps = steps

    def source(self):
        """The program as a Python snippet that reproduces it with `import clgrad as torch`."""
        lines = ["import numpy as np, clgrad as torch, clgrad.nn.functional as F"]
        for i, a in enumerate(self.inputs):
            lines.append(f"v{i} = torch.tensor(np.array({a.tolist()!r}, dtype=np.{a.dtype.name})"
                         f".reshape({a.shape}))")
        k = len(self.inputs)
        for name, ids, consts in self.steps:
            o = OPS[name]
            args = [f"v{i}" for i in ids] + [_src_repr(c) for c in consts]
            if callable(o.src):
                lines.append(o.src(f"v{k}", *args))
            elif name == "permute":
                lines.append(f"v{k} = {args[0]}.permute({', '.join(args[1:]) or '()'})")
            elif name == "setitem":
                lines.append(f"{args[0]}[(slice(None),) * {args[2]} + (slice({args[3]}, "
                             f"{args[4]}, {args[5]}),)] = {args[1]}; v{k} = {args[0]}")
            elif "{out}" in o.src:
                lines.append(o.src.format(*args, out=f"v{k}"))
            else:
                lines.append(f"v{k} = " + o.src.format(*args))
            k += 1
        return "\n".join(lines)

    def __len__(self):
        return len(self.steps)


def _src_repr(c):
    return f"float({repr(c)!r})" if isinstance(c, float) and not math.isfinite(c) else repr(c)


def _random_input(rng, dtype):
    nd = int(rng.integers(0, 4))
    shape = tuple(int(rng.choice([0, 1, 1, 2, 3, 4])) if rng.random() < 0.25 else
                  int(rng.integers(1, 5)) for _ in range(nd))
    if dtype == "bool":
        return np.asarray(rng.random(shape) < 0.5)
    if dtype == "int64":
        return np.asarray(rng.integers(-5, 6, shape), dtype=np.int64)
    a = np.asarray(rng.standard_normal(shape) * 2)
    if rng.random() < 0.2 and a.ndim:      # a constant row now and then (std, layer_norm)
        a[...] = np.take(a, [0], axis=-1) if a.shape[-1] else a
    return a.astype(dtype)


def generate(rng, n_steps=None, grad=False, max_steps=5, families=None, avoid=()):
    """A random program: its inputs (those of one family, drawn among `families`, default all),
    2 to max_steps steps, most of that family's ops, the rest of the core table (float64
    inputs and no in-place steps when `grad`); `avoid`: SWITCHES the picks keep away from."""
    global _avoid
    unknown = set(avoid) - set(SWITCHES)
    assert not unknown, f"unknown switches {unknown}"
    fams = [f for f in FAMILIES if families is None or f in families]
    fam = FAMILIES[fams[int(rng.integers(len(fams)))]]

    def dtype():
        return "float64" if grad else DTYPES[int(rng.integers(len(DTYPES)))]
    if fam.inputs is None:
        inputs = [_random_input(rng, dtype()) for _ in range(int(rng.integers(1, 3)))]
    else:
        inputs = fam.inputs(rng, dtype)
    pool = list(inputs)
    steps = []
    usable = [n for n, o in OPS.items() if o.grad or not grad]
    own = [n for n in usable if OPS[n].family == fam.name]
    core = [n for n in usable if OPS[n].family == "core"]
    n_steps = n_steps or int(rng.integers(2, max_steps + 1))
    tries = 0
    _avoid, was = frozenset(avoid), _avoid
    try:
        while len(steps) < n_steps and tries < 50:
            tries += 1
            names = own if own is not core and rng.random() < 0.75 else core
            name = names[int(rng.integers(len(names)))]
            picked = OPS[name].pick(rng, pool)
            if picked is None or picked[0][0] is None or None in picked[0]:
                continue
            ids, consts = picked
            try:
                res = reference(name, [pool[i] for i in ids], consts)
            except Exception:
                continue
            if isinstance(res, Raises):
                if rng.random() < 0.7:
                    continue          # keep some error steps; an error ends the program
                steps.append((name, list(ids), tuple(consts)))
                break
            steps.append((name, list(ids), tuple(consts)))
            pool.append(res)
    finally:
        _avoid = was
    return Program(inputs, steps)


def reference(name, args, consts):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")         # numpy on empty slices
            r = OPS[name].ref(*args, *consts)
    except _Stop as s:
        return Raises(s.exc)
    return r if isinstance(r, np.ndarray) else np.asarray(r)     # numpy reductions give scalars


def run_reference(prog, inputs=None):
    """Values of every step (numpy) or a Raises ending the list."""
    pool = [a.copy() for a in (inputs if inputs is not None else prog.inputs)]
    out = []
    for name, ids, consts in prog.steps:
        r = reference(name, [pool[i] for i in ids], consts)
        out.append(r)
        if isinstance(r, Raises):
            break
        pool.append(r)
    return pool, out


class Mismatch(AssertionError):
    pass


def _dtype_name(a):
    return "bfloat16" if isinstance(a, Bf16) else a.dtype.name


def _close(actual, expected, what, loose=False):
    if actual.shape != expected.shape:
        raise Mismatch(f"{what}: shape {actual.shape} != reference {expected.shape}")
    if _dtype_name(actual) != _dtype_name(expected):
        raise Mismatch(f"{what}: dtype {_dtype_name(actual)} != reference "
                       f"{_dtype_name(expected)}")
    if expected.dtype.kind == "f":
        # bfloat16: one rounding apart (of an accumulation in another order) is agreement
        tol = 1e-2 if isinstance(expected, Bf16) else \
            1e-4 if expected.dtype == np.float32 or loose else 1e-9
        actual, expected = np.asarray(actual), np.asarray(expected)
        with np.errstate(all="ignore"):
            # dividing by what should be 0 (the mean of a normalised row) overflows in one and
            # not in the other: past 1e12 only the sign is compared
            huge = (np.abs(actual) > 1e12) & (np.abs(expected) > 1e12) & \
                (np.sign(actual) == np.sign(expected))
            ok = np.all(huge | np.isclose(actual, expected, rtol=tol, atol=tol, equal_nan=True))
    else:
        ok = np.array_equal(actual, expected)
    if not ok:
        raise Mismatch(f"{what}: values differ\n  clgrad:    {actual.tolist()}\n"
                       f"  reference: {expected.tolist()}")


def run_clgrad(T, prog, device, requires_grad=False):
    pool = [T.tensor(a, device=device, requires_grad=requires_grad) for a in prog.inputs]
    leaves = list(pool)
    out = []
    for name, ids, consts in prog.steps:
        try:
            r = OPS[name].run(T, *[pool[i] for i in ids], *consts)
        except Exception as e:            # noqa: BLE001 - the class is what is compared
            out.append(e)
            break
        out.append(r)
        pool.append(r)
    return leaves, pool, out


def check(T, prog, device, grads=True):
    """Run prog in clgrad and in the reference and raise Mismatch on any difference. A program
    the reference cannot judge (Unsure: a shrunk or re-run program whose inverse is now of a
    nearly singular matrix) passes."""
    try:
        ref_pool, ref_out = run_reference(prog)
    except Unsure:
        return
    # a float32 value anywhere: float64 results downstream carry its rounding
    loose = any(v.dtype == np.float32 for v in ref_pool)
    _, pool, out = run_clgrad(T, prog, device)
    for k, (a, e) in enumerate(zip(out, ref_out)):
        what = f"step {k} ({prog.steps[k][0]})"
        if isinstance(e, Raises):
            if not isinstance(a, BaseException):
                raise Mismatch(f"{what}: torch raises {e.exc.__name__}, clgrad returned "
                               f"{_np(a).tolist()}")
            if type(a) is not e.exc and not (_named(e.exc) and
                                             type(a).__name__.lstrip("_") == e.exc.__name__):
                raise Mismatch(f"{what}: torch raises {e.exc.__name__}, clgrad raised "
                               f"{type(a).__name__}: {a}")
            return
        if isinstance(a, BaseException):
            raise Mismatch(f"{what}: clgrad raised {type(a).__name__}: {a}; torch computes it")
        _close(_np(a), e, what, loose)
    # values after all steps (in-place writes through views must agree too)
    for k, (a, e) in enumerate(zip(pool, ref_pool)):
        _close(_np(a), e, f"value v{k} at the end", loose)
    if grads and all(a.dtype == np.float64 for a in prog.inputs) and \
            all(OPS[s[0]].grad for s in prog.steps):
        check_grads(T, prog, device)


def _named(exc):
    """An exception class of torch's own (LinAlgError): the reference's stand-in has its name."""
    return exc.__module__ != "builtins"


def _np(t):
    if hasattr(t, "detach"):
        if str(t.dtype).endswith("bfloat16"):
            return np.asarray(t.detach().float().cpu().numpy()).view(Bf16)
        return np.asarray(t.detach().cpu().numpy())
    return np.asarray(t)


def _loss_weights(prog, pool):
    rng = np.random.default_rng(1234)
    return [rng.standard_normal(np.shape(v)) for v in pool]


def check_grads(T, prog, device, h=1e-6):
    """clgrad's gradients of a weighted sum of every float value against central differences."""
    ref_pool, _ = run_reference(prog)
    n_in = len(prog.inputs)
    if any(not np.all(np.isfinite(v)) for v in ref_pool if v.dtype.kind == "f") or \
            not any(v.dtype.kind == "f" and v.size for v in ref_pool[n_in:]):
        return
    weights = _loss_weights(prog, ref_pool)
    # rounding error of a difference quotient: about eps * |terms of the loss| / h
    atol = 1e-5 + 1e-6 * sum(float(np.abs(w * v).sum()) for v, w in
                             zip(ref_pool[n_in:], weights[n_in:]) if v.dtype.kind == "f")

    def loss_np(inputs):
        pool, _ = run_reference(prog, inputs)
        return sum(float((w * v).sum()) for v, w in zip(pool[n_in:], weights[n_in:])
                   if v.dtype.kind == "f")

    leaves, pool, _ = run_clgrad(T, prog, device, requires_grad=True)
    loss = None
    for v, w in zip(pool[n_in:], weights[n_in:]):
        if v.dtype.is_floating_point and v.requires_grad:
            term = (v * T.tensor(w, device=device)).sum()
            loss = term if loss is None else loss + term
    if loss is None:
        return
    got = T.autograd.grad(loss, leaves, allow_unused=True)
    for k, (a, g) in enumerate(zip(prog.inputs, got)):
        fd = np.zeros(a.shape)
        smooth = np.ones(a.shape, dtype=bool)
        base = loss_np(prog.inputs)
        for j in range(a.size):
            plus = [x.copy() for x in prog.inputs]
            minus = [x.copy() for x in prog.inputs]
            plus[k].flat[j] += h
            minus[k].flat[j] -= h
            right = (loss_np(plus) - base) / h
            left = (base - loss_np(minus)) / h
            fd.flat[j] = (right + left) / 2
            plus[k].flat[j] += 9 * h
            minus[k].flat[j] -= 9 * h
            wide = (loss_np(plus) - loss_np(minus)) / (20 * h)
            # a kink (ties of max, relu at 0, a jump of floor) or derivatives so large that the
            # difference quotient is off (layer_norm of a near-constant row): nothing to compare
            smooth.flat[j] = abs(right - left) <= 1e-5 * (1 + abs(right)) + atol and \
                abs(wide - fd.flat[j]) <= 1e-5 * (1 + abs(wide)) + atol
        ga = np.zeros(a.shape) if g is None else _np(g)
        if not np.allclose(ga[smooth], fd[smooth], rtol=1e-4, atol=atol):
            raise Mismatch(f"gradient of input v{k}\n  clgrad:             {ga.tolist()}\n"
                           f"  finite differences: {fd.tolist()}")


# ---- shrinking ---------------------------------------------------------------------------------
def shrink(T, prog, device, fails):
    """Delta reduction: drop steps (and the steps that used them) while `fails(prog)` holds."""
    changed = True
    while changed:
        changed = False
        for k in range(len(prog.steps) - 1, -1, -1):
            cand = _drop_step(prog, k)
            if cand is not None and len(cand.steps) and fails(cand):
                prog = cand
                changed = True
                break
    return _drop_unused_inputs(prog, fails)


def _drop_unused_inputs(prog, fails):
    used = {i for _, ids, _ in prog.steps for i in ids}
    n_in = len(prog.inputs)
    keep = [i for i in range(n_in) if i in used]
    if len(keep) == n_in:
        return prog
    remap = {old: new for new, old in enumerate(keep)}
    for s in range(len(prog.steps)):
        remap[n_in + s] = len(keep) + s
    cand = Program([prog.inputs[i] for i in keep],
                   [(name, [remap[i] for i in ids], c) for name, ids, c in prog.steps])
    return cand if fails(cand) else prog


def _drop_step(prog, k):
    n_in = len(prog.inputs)
    dropped = {n_in + k}
    steps = []
    remap = {i: i for i in range(n_in)}
    nxt = n_in
    for s, (name, ids, consts) in enumerate(prog.steps):
        v = n_in + s
        if v in dropped or any(i in dropped for i in ids):
            dropped.add(v)
            continue
        steps.append((name, [remap[i] for i in ids], consts))
        remap[v] = nxt
        nxt += 1
    if len(steps) == len(prog.steps):
        return None
    return Program(prog.inputs, steps)


# ---- the other families' tables, by subject; each registers its ops into OPS -----------------
import differential_index  # noqa: E402,F401
import differential_linalg  # noqa: E402,F401
import differential_nn  # noqa: E402,F401
import differential_loss  # noqa: E402,F401
import differential_amp  # noqa: E402,F401
