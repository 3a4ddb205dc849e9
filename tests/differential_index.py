"""Differential testing, the indexing families (tests/differential.py runs them): subscripts with
every index kind (ints, slices, None, Ellipsis, bool masks, integer tensors; a negative step is
torch's ValueError), setitem through them, index_put, gather/scatter, sort/argsort/topk/
kthvalue/unique. Index tensors are constants (Lit): gradients flow into the indexed values."""
import numpy as np

import differential as D
from differential import Lit, _any, _raise, op, ref_arr

D.switch("setitem_none", "no None in the subscripts of setitem (issue 22: clgrad's IndexError)")
D.switch("index_bool_scalar", "no Python bool or 0-d bool tensor in subscripts (clgrad adds a "
         "dim for it but does not index it together with the other tensors)")
D.switch("unique_dim", "no torch.unique(x, dim=d) (issue 22: clgrad refuses it)")


def _inputs(rng, dtype):
    return [D._random_input(rng, dtype()) for _ in range(int(rng.integers(1, 3)))]


D.family("index", _inputs)
D.family("scatter", _inputs)
D.family("sort", _inputs)


# ---- subscripts --------------------------------------------------------------------------------
def _rand_index(rng, shape, unique=False, allow_none=True):
    """A random subscript for a tensor of `shape`: a tuple of ints, slices, None, Ellipsis,
    Python bools, and Lit bool masks and integer tensors; now and then an invalid one."""
    kinds = []
    for _ in range(int(rng.integers(1, 4))):
        r = rng.random()
        kinds.append("none" if r < 0.12 else "ellipsis" if r < 0.22 else "int" if r < 0.42 else
                     "slice" if r < 0.67 else "tensor" if r < 0.85 else
                     "mask" if r < 0.97 else "bool")
    if not allow_none:
        kinds = [k for k in kinds if k not in ("none", "bool")] or ["slice"]
    if D.avoiding("index_bool_scalar"):
        kinds = [k for k in kinds if k != "bool"] or ["slice"]
    if kinds.count("ellipsis") > 1:
        first = kinds.index("ellipsis")
        kinds = [k for i, k in enumerate(kinds) if k != "ellipsis" or i == first]
    # which dims each item takes: those before the Ellipsis from the front, the rest from the back
    width = {"int": 1, "slice": 1, "tensor": 1, "mask": 1 + int(rng.random() < 0.3)}
    nd = len(shape)
    if "ellipsis" in kinds:
        e = kinds.index("ellipsis")
        front, back = kinds[:e], kinds[e + 1:]
    else:
        front, back = kinds, []
    dims, d = [], 0
    for k in front:
        dims.append(d)
        d += width.get(k, 0)
    tail = sum(width.get(k, 0) for k in back)
    d = nd - tail
    for k in back:
        dims.append(d)
        d += width.get(k, 0)
    if "ellipsis" in kinds:
        dims.insert(kinds.index("ellipsis"), None)
    out = []
    for k, d in zip(kinds, dims):
        size = shape[d] if d is not None and 0 <= d < nd else 2
        bad = rng.random() < 0.05
        if k == "none":
            out.append(None)
        elif k == "ellipsis":
            out.append(Ellipsis)
        elif k == "bool":
            out.append(bool(rng.random() < 0.7))
        elif k == "int":
            out.append(size if bad else int(rng.integers(-size, size)) if size else 0)
        elif k == "slice":
            def end():
                return None if rng.random() < 0.3 else int(rng.integers(-size - 1, size + 2))
            step = [None, 1, 2, 3, -1][int(rng.integers(5))] if rng.random() < 0.97 else 0
            if step == -1 and rng.random() < 0.5:
                step = 1                  # a negative step: torch's ValueError, now and then
            out.append(slice(end(), end(), step))
        elif k == "tensor":
            shp = [(int(rng.integers(0, 4)),), (2, 2), (1, 3)][int(rng.integers(3))]
            n = int(np.prod(shp))
            if unique:
                if n > size:
                    shp, n = (size,), size
                vals = rng.permutation(size)[:n] - size * (rng.random(n) < 0.3)
            else:
                vals = rng.integers(-size, size, n) if size else np.zeros(n, dtype=np.int64)
            if bad and n:
                vals[0] = size
            out.append(Lit(np.asarray(vals, dtype=np.int64).reshape(shp)))
        elif k == "mask":
            w = width["mask"]
            mshape = tuple(shape[d:d + w]) if d is not None else (size,)
            if not mshape and D.avoiding("index_bool_scalar"):
                mshape = (size,)
            if bad:
                mshape = tuple(s + 1 for s in mshape)
            out.append(Lit(rng.random(mshape) < 0.5))
    return tuple(out)


def _apply(x, idx, bounds=True):
    """torch's subscript, item by item: ints select, slices narrow, None and Python bools add a
    dim (a bool then indexes it with [0] or []), tensors and masks index together at the end as
    numpy's advanced indexing does (ints are no part of it, unlike numpy's). Returns the view
    that the basic items give and the advanced subscript of it (None: there is none)."""
    items = ref_arr(idx)
    used = sum(1 if isinstance(i, (int, slice)) and not isinstance(i, bool) else
               i.ndim if isinstance(i, np.ndarray) and i.dtype == bool else
               1 if isinstance(i, np.ndarray) else 0 for i in items)
    if used > x.ndim:
        _raise(IndexError)                # too many indices
    v, d, adv = x, 0, []
    for i in items:
        if i is Ellipsis:
            d += x.ndim - used
        elif i is None or isinstance(i, bool) or \
                isinstance(i, np.ndarray) and i.dtype == bool and i.ndim == 0:
            v = np.expand_dims(v, d)
            if i is not None:
                adv.append((d, np.arange(int(bool(i))), 1))
            d += 1
        elif isinstance(i, int):
            n = v.shape[d]
            if not -n <= i < n:
                _raise(IndexError)
            v = v[(slice(None),) * d + (i, Ellipsis)]       # a view, even of a 1-d array
        elif isinstance(i, slice):
            if i.step is not None and i.step <= 0:
                _raise(ValueError)        # torch: "step must be greater than zero"
            v = v[(slice(None),) * d + (i,)]
            d += 1
        elif i.dtype == bool:
            k = i.ndim
            if i.shape != v.shape[d:d + k]:
                _raise(IndexError)
            adv.append((d, i, k))
            d += k
        else:
            adv.append((d, i, 1))
            d += 1
    if not adv:
        return v, None, adv
    sub, starts, d = [], {a[0]: a for a in adv}, 0
    while d < v.ndim:
        if d in starts:
            sub.append(starts[d][1])
            d += starts[d][2]
        else:
            sub.append(slice(None))
            d += 1
    _empty_dims(v, adv)
    if bounds:
        _bounds(v, adv)
    return v, tuple(sub), adv


def _result_size(v, adv):
    """The number of elements of v[adv] (the index tensors broadcast; a mask: its count)."""
    try:
        n = int(np.prod(np.broadcast_shapes(*[(int(a.sum()),) if a.dtype == bool else a.shape
                                              for _, a, _ in adv])))
    except ValueError:
        _raise(IndexError)                # torch: "indexing tensors could not be broadcast"
    covered = {dd + j for dd, _, k in adv for j in range(k)}
    return n, n * int(np.prod([m for d, m in enumerate(v.shape) if d not in covered]))


def _empty_dims(v, adv):
    """torch (before the values' dtype, in writes): a dim of size 0 indexed by a non-empty
    broadcast index is an IndexError."""
    n, _ = _result_size(v, adv)
    if n and any(a.dtype != bool and v.shape[dd] == 0 for dd, a, _ in adv):
        _raise(IndexError)


def _bounds(v, adv):
    if not _result_size(v, adv)[1]:       # torch checks the indices of the elements it makes
        return
    for dd, a, _ in adv:                  # out of range: torch's IndexError, numpy's too
        if a.dtype != bool and a.size and (a.max() >= v.shape[dd] or a.min() < -v.shape[dd]):
            _raise(IndexError)


def _getitem_ref(x, idx):
    v, sub, _ = _apply(x, idx)
    return v if sub is None else v[sub]


def _target(v, sub):
    """The shape x[idx] would have, before the index tensors' bounds are checked."""
    if sub is None:
        return v
    safe = tuple(np.zeros(s.shape, np.int64) if isinstance(s, np.ndarray) and s.dtype != bool
                 else s for s in sub)
    try:
        return v[safe]
    except IndexError:                    # an empty dim: the bounds will say so
        return v[sub]


def _pick_getitem(rng, pool):
    i = _any(rng, pool)
    return ([i], (_rand_index(rng, pool[i].shape),))


def _fmt_index(idx):
    return "[" + ", ".join("..." if i is Ellipsis else _fmt_slice(i) if isinstance(i, slice)
                           else repr(i) for i in idx) + ("," if len(idx) == 1 else "") + "]"


def _fmt_slice(s):
    a, b, c = ("" if v is None else repr(v) for v in (s.start, s.stop, s.step))
    return f"{a}:{b}" + (f":{c}" if c else "")


op("getitem", _pick_getitem, lambda T, x, idx: x[D.lit(T, idx, x)], _getitem_ref,
   lambda out, x, idx: f"{out} = {x}{_fmt_index(eval(idx, _EVAL))}", family="index")
_EVAL = {"torch": None, "np": np, "Lit": Lit}


class _TorchStub:
    """Turns the repr of a Lit back into one while reproducers are formatted."""

    @staticmethod
    def tensor(a):
        return Lit(a)


_EVAL["torch"] = _TorchStub


def _value_for(rng, pool, target_shape, x):
    """A value for x[idx] = value: a pool tensor that (mostly) broadcasts to the target, or a
    Python number."""
    if rng.random() < 0.25:
        return None, [1.5, -2, True, 0][int(rng.integers(4))]
    j = _any(rng, pool, lambda v: D._broadcastable(v.shape, target_shape) and
             (pool[x] is not v) and v.ndim <= len(target_shape) + 1)
    if j is None or rng.random() < 0.05:
        j = _any(rng, pool)
    return j, None


def _pick_setitem(rng, pool, inplace):
    i = _any(rng, pool, (lambda v: v.dtype.kind == "f") if not inplace else (lambda v: True))
    if i is None:
        return None
    idx = _rand_index(rng, pool[i].shape, unique=True,
                      allow_none=not D.avoiding("setitem_none"))
    try:
        target = _getitem_ref(pool[i], idx).shape
    except (D._Stop, IndexError):
        target = ()
    j, number = _value_for(rng, pool, target, i)
    if j is not None and inplace and (np.shares_memory(pool[i], pool[j]) or pool[i] is pool[j]):
        return None
    return ([i, j], (idx,)) if j is not None else ([i], (idx, number))


def _set_ref(x, y, idx):
    v, sub, adv_dims = _apply(x, idx, bounds=False)
    t = _target(v, sub)
    adv = [i for i in idx if isinstance(i, (Lit, bool))]
    single_mask = len(adv) == 1 and isinstance(adv[0], Lit) and adv[0].a.dtype == bool and \
        adv[0].a.ndim
    if sub is not None and isinstance(y, np.ndarray) and y.dtype != x.dtype and \
            not (single_mask and y.size == 1):          # that one is masked_fill_: cast
        _raise(RuntimeError)              # index_put_: "requires the source and destination
    if isinstance(y, np.ndarray):         # dtypes match"
        while y.ndim > t.ndim and y.shape[0] == 1:      # torch drops the value's leading 1s
            y = y[0]
        if D._bshape(t, y) != t.shape:
            _raise(RuntimeError)
        if np.shares_memory(t, x):
            D._check_write(t, y)
    if sub is not None:                   # the index tensors' bounds: after the value's shape
        _bounds(v, adv_dims)
        if not t.size:                    # nothing written, no bounds checked
            return x
    if sub is None:
        v[...] = np.asarray(y).astype(x.dtype)
    else:
        v[sub] = np.asarray(y).astype(x.dtype)
    return x


def _setitem_ref(x, *rest):
    y, idx = (rest[0], rest[1]) if len(rest) == 2 and isinstance(rest[1], tuple) else \
        (rest[1], rest[0])
    return _set_ref(x, y, idx)


def _setitem_run(T, x, *rest):
    y, idx = (rest[0], rest[1]) if len(rest) == 2 and isinstance(rest[1], tuple) else \
        (rest[1], rest[0])
    x[D.lit(T, idx, x)] = y
    return x


def _setitem_src(out, x, *rest):
    y, idx = (rest[0], rest[1]) if len(rest) == 2 and rest[1].startswith("(") else \
        (rest[1], rest[0])
    return f"{x}{_fmt_index(eval(idx, _EVAL))} = {y}; {out} = {x}"


def _clone_set_ref(x, *rest):
    return _setitem_ref(x.copy(), *rest)


def _clone_set_run(T, x, *rest):
    return _setitem_run(T, x.clone(), *rest)


def _clone_set_src(out, x, *rest):
    return f"{out} = {x}.clone(); " + _setitem_src(out, out, *rest).split(";")[0]


op("setitem_index", lambda rng, pool: _pick_setitem(rng, pool, True), _setitem_run,
   _setitem_ref, _setitem_src, inplace=True, family="index")
op("clone_setitem", lambda rng, pool: _pick_setitem(rng, pool, False), _clone_set_run,
   _clone_set_ref, _clone_set_src, family="index")


def _pick_index_put(rng, pool):
    i = _any(rng, pool, lambda v: v.ndim >= 1)
    if i is None:
        return None
    shape = pool[i].shape
    k = 1 + int(rng.random() < 0.4 and len(shape) >= 2)
    acc = bool(rng.random() < 0.5)
    n = int(rng.integers(0, 4))
    idx = []
    for d in range(k):
        s = shape[d]
        if acc:
            v = rng.integers(-s, s, n) if s else np.zeros(n, np.int64)
        else:
            v = rng.permutation(s)[:n] if d == 0 else rng.integers(0, max(s, 1), min(n, s))
        idx.append(Lit(np.asarray(v, dtype=np.int64)))
    if len({c.a.shape for c in idx}) > 1:
        idx = idx[:1]
    target = (idx[0].a.shape[0],) + shape[len(idx):]
    j = _any(rng, pool, lambda v: D._broadcastable(v.shape, target) and v.ndim <= len(target))
    if j is None:
        return None
    return ([i, j], (tuple(idx), acc))


def _index_put_ref(x, v, idx, acc):
    idx = ref_arr(idx)
    adv = [(d, a, 1) for d, a in enumerate(idx)]
    _empty_dims(x, adv)                   # torch: before the dtype, then the values' shape,
    if v.dtype != x.dtype:                # then the bounds (where the result has elements)
        _raise(RuntimeError)
    t = x[tuple(np.zeros(a.shape, np.int64) for a in idx)] if _result_size(x, adv)[1] else \
        np.zeros(np.broadcast_shapes(*[a.shape for a in idx]) + x.shape[len(idx):], x.dtype)
    if D._bshape(t, v) != t.shape:
        _raise(RuntimeError)
    _bounds(x, adv)
    if not t.size:
        return x.copy()
    out = x.copy()
    if acc:
        if x.dtype == bool:
            np.logical_or.at(out, idx, np.broadcast_to(v, t.shape))
        else:
            np.add.at(out, idx, np.broadcast_to(v, t.shape))
    else:
        out[idx] = v
    return out


op("index_put", _pick_index_put,
   lambda T, x, v, idx, acc: x.index_put(D.lit(T, idx, x), v, accumulate=acc), _index_put_ref,
   "{0}.index_put({2}, {1}, accumulate={3})", family="index")


def _pick_masked_select(rng, pool):
    i = _any(rng, pool)
    shape = pool[i].shape
    if rng.random() < 0.5 and shape:
        shape = shape[-1:]
    return ([i], (Lit(rng.random(shape) < 0.5),))


def _masked_select_ref(x, m):
    m = m.a
    shape = D._bshape(x, m)
    return np.broadcast_to(x, shape)[np.broadcast_to(m, shape)]


op("masked_select", _pick_masked_select, lambda T, x, m: x.masked_select(D.lit(T, m, x)),
   _masked_select_ref, "{0}.masked_select({1})", family="index")


# ---- gather / scatter --------------------------------------------------------------------------
def _gather_index(rng, shape, d, unique=False, shape_of=None):
    """An int64 index for gather/scatter along d: sizes up to x's, values in range (rarely not).
    unique: no two elements of one line along d point to the same place (scatter's result is
    then defined)."""
    nd = len(shape)
    ishape = tuple(int(rng.integers(0, s + 1)) if s else 0 for s in shape) if nd else ()
    if rng.random() < 0.3:
        ishape = tuple(shape)
    if shape_of is not None:
        ishape = tuple(shape_of)
    n = shape[d] if nd else 1
    if unique and nd:
        ishape = ishape[:d] + (min(ishape[d], n),) + ishape[d + 1:]
        lines = np.moveaxis(np.zeros(ishape, dtype=np.int64), d, -1)
        for pos in np.ndindex(lines.shape[:-1]):
            lines[pos] = rng.permutation(n)[:lines.shape[-1]]
        idx = np.moveaxis(lines, -1, d)
    else:
        idx = rng.integers(0, max(n, 1), ishape) if n else np.zeros(ishape, dtype=np.int64)
    idx = np.array(idx, dtype=np.int64)
    if rng.random() < 0.05 and idx.size:
        idx.flat[0] = [n, -1][int(rng.integers(2))]
    return Lit(idx)


def _pick_gather(rng, pool):
    i = _any(rng, pool)
    nd = pool[i].ndim
    d = int(rng.integers(-nd, nd)) if nd else 0
    return ([i], (d, _gather_index(rng, pool[i].shape, d % nd if nd else 0)))


def _check_index(x, d, idx, what_bigger=None, bounds=True):
    if idx.ndim != x.ndim and not (idx.ndim <= 1 and x.ndim <= 1):
        _raise(RuntimeError)
    nd = max(x.ndim, 1)
    d0 = d % nd
    xs = x.shape if x.ndim else (1,)
    ix = idx.shape if idx.ndim else (1,)
    for k in range(len(ix)):
        if k != d0 and ix[k] > xs[k]:
            _raise(RuntimeError)
        if what_bigger is not None and ix[k] > (what_bigger.shape or (1,))[k]:
            _raise(RuntimeError)
    if bounds and idx.size and (idx.min() < 0 or idx.max() >= xs[d0]):
        _raise(RuntimeError)
    return d0


def _gather_ref(x, d, idx):
    idx = idx.a
    if not -max(x.ndim, 1) <= d < max(x.ndim, 1):
        _raise(IndexError)
    d0 = _check_index(x, d, idx)
    xs = x.reshape(x.shape or (1,))
    ix = idx.reshape(idx.shape or (1,))
    sl = tuple(slice(0, s) if k != d0 else slice(None) for k, s in enumerate(ix.shape))
    return np.take_along_axis(xs[sl], ix, axis=d0).reshape(idx.shape)


op("gather", _pick_gather, lambda T, x, d, idx: T.gather(x, d, D.lit(T, idx, x)), _gather_ref,
   "torch.gather({0}, {1}, {2})", family="scatter")


def _pick_scatter(rng, pool, kind):
    i = _any(rng, pool)
    nd = pool[i].ndim
    d = int(rng.integers(-nd, nd)) if nd else 0
    if kind == "value":
        idx = _gather_index(rng, pool[i].shape, d % nd if nd else 0)
        return ([i], (d, idx, [0.5, -2, True][int(rng.integers(3))]))
    return _pick_scatter_src(rng, pool, i, d, kind)


def _pick_scatter_src(rng, pool, i, d, kind):
    """A src, and an index of its shape: torch's backward of scatter and scatter_reduce fails
    for a src larger than the index (or takes src's elements past it for ties). amax/amin: a
    src other than self (their gradient splits between self and src by equal values, even
    where include_self=False leaves self out)."""
    x = pool[i]
    d0 = d % x.ndim if x.ndim else 0
    n = x.shape[d0] if x.ndim else 1
    j = _any(rng, pool, lambda v: v.ndim == x.ndim and v.dtype == x.dtype and all(
        a <= b for k, (a, b) in enumerate(zip(v.shape, x.shape)) if k != d0 or
        kind == "scatter") and v is not x)
    if j is None:
        return None
    if kind == "reduce" and rng.random() < 0.4 and np.intersect1d(x, pool[j]).size == 0:
        how = ["amax", "amin"][int(rng.integers(2))]
    else:
        how = ["sum", "prod", "mean"][int(rng.integers(3))]
    idx = _gather_index(rng, x.shape, d0, unique=kind == "scatter", shape_of=pool[j].shape)
    if kind == "reduce":
        return ([i, j], (d, idx, how, bool(rng.random() < 0.5)))
    return ([i, j], (d, idx))


def _scatter_ref(kind):
    def r(x, *a):
        if kind == "value":
            d, idx, src = a
        elif kind == "reduce":
            src, d, idx, how, incl = a
        else:
            src, d, idx = a
        idx = idx.a
        if not -max(x.ndim, 1) <= d < max(x.ndim, 1):
            _raise(IndexError)
        if kind != "value" and src.dtype != x.dtype:
            _raise(RuntimeError)
        d0 = _check_index(x, d, idx, None if kind == "value" else src, bounds=False)
        # scatter_reduce's mean of bool: with self, torch picks the kernel by dtype before its
        # loop checks the bounds; without, index_fill_ checks them first
        if kind == "reduce" and how == "mean" and x.dtype == bool and incl:
            _raise(NotImplementedError)
        _check_index(x, d, idx, None if kind == "value" else src)
        out = x.copy().reshape(x.shape or (1,))
        ix = idx.reshape(idx.shape or (1,))
        if kind == "value":
            vals = np.full(ix.shape, src).astype(x.dtype)
        else:
            s = src.reshape(src.shape or (1,))
            vals = s[tuple(slice(0, n) for n in ix.shape)]
        if kind == "reduce":
            return _reduce_into(out, d0, ix, vals, how, incl).reshape(x.shape)
        for pos in np.ndindex(ix.shape):
            tgt = list(pos)
            tgt[d0] = ix[pos]
            if kind == "add":
                out[tuple(tgt)] = out[tuple(tgt)] + vals[pos] if x.dtype != bool else \
                    out[tuple(tgt)] | vals[pos]
            else:
                out[tuple(tgt)] = vals[pos]
        return out.reshape(x.shape)
    return r


def _reduce_into(out, d0, ix, vals, how, incl):
    if how == "mean" and out.dtype == bool:
        _raise(NotImplementedError)
    groups = {}
    for pos in np.ndindex(ix.shape):
        tgt = list(pos)
        tgt[d0] = ix[pos]
        groups.setdefault(tuple(tgt), []).append(vals[pos])
    res = out.copy()
    for tgt, vs in groups.items():
        items = ([out[tgt]] if incl else []) + vs
        a = np.array(items, dtype=np.float64 if out.dtype.kind == "f" else out.dtype)
        if how == "sum":
            v = a.sum()
        elif how == "prod":
            v = a.prod()
        elif how == "amax":
            v = a.max()
        elif how == "amin":
            v = a.min()
        else:
            v = a.sum() / len(a) if out.dtype.kind == "f" else \
                np.floor_divide(a.sum(), len(a))
        res[tgt] = v
    return res


op("scatter", lambda rng, pool: _pick_scatter(rng, pool, "scatter"),
   lambda T, x, s, d, idx: x.scatter(d, D.lit(T, idx, x), s), _scatter_ref("scatter"),
   "{0}.scatter({2}, {3}, {1})", family="scatter")
op("scatter_value", lambda rng, pool: _pick_scatter(rng, pool, "value"),
   lambda T, x, d, idx, v: x.scatter(d, D.lit(T, idx, x), v), _scatter_ref("value"),
   "{0}.scatter({1}, {2}, {3})", family="scatter")
op("scatter_add", lambda rng, pool: _pick_scatter(rng, pool, "add"),
   lambda T, x, s, d, idx: x.scatter_add(d, D.lit(T, idx, x), s), _scatter_ref("add"),
   "{0}.scatter_add({2}, {3}, {1})", family="scatter")
op("scatter_reduce", lambda rng, pool: _pick_scatter(rng, pool, "reduce"),
   lambda T, x, s, d, idx, how, incl: x.scatter_reduce(d, D.lit(T, idx, x), s, how,
                                                       include_self=incl),
   _scatter_ref("reduce"), "{0}.scatter_reduce({2}, {3}, {1}, {4}, include_self={5})",
   family="scatter")


# ---- sort, topk, unique ------------------------------------------------------------------------
def _order(x, axis, descending):
    """torch's stable sort order along axis (NaN the largest)."""
    v = np.moveaxis(x, axis, -1)
    f = v.astype(np.float64)
    nan = np.isnan(f)
    key = np.where(nan, 0, f)
    if descending:
        order = np.lexsort((-key, ~nan), axis=-1) if v.size else np.zeros(v.shape, np.int64)
    else:
        order = np.lexsort((key, nan), axis=-1) if v.size else np.zeros(v.shape, np.int64)
    return np.moveaxis(order, -1, axis)


def _pick_sort(rng, pool):
    i = _any(rng, pool)
    nd = pool[i].ndim
    return ([i], (int(rng.integers(-nd, nd)) if nd else 0, bool(rng.random() < 0.5)))


def _sort_ref(which):
    def r(x, d, desc):
        if not -max(x.ndim, 1) <= d < max(x.ndim, 1):
            _raise(IndexError)
        if x.ndim == 0:
            return x.copy() if which == "values" else np.zeros((), np.int64)
        d0 = d % x.ndim
        o = _order(x, d0, desc).astype(np.int64)
        return np.take_along_axis(x, o, axis=d0) if which == "values" else o
    return r


op("sort", _pick_sort, lambda T, x, d, desc: T.sort(x, dim=d, descending=desc, stable=True)[0],
   _sort_ref("values"), "torch.sort({0}, dim={1}, descending={2}, stable=True)[0]",
   family="sort")
op("sort_indices", _pick_sort,
   lambda T, x, d, desc: T.sort(x, dim=d, descending=desc, stable=True)[1],
   _sort_ref("indices"), "torch.sort({0}, dim={1}, descending={2}, stable=True)[1]",
   family="sort")
op("argsort", _pick_sort, lambda T, x, d, desc: T.argsort(x, dim=d, descending=desc, stable=True),
   _sort_ref("indices"), "torch.argsort({0}, dim={1}, descending={2}, stable=True)",
   family="sort")


def _pick_topk(rng, pool):
    i = _any(rng, pool)
    nd = pool[i].ndim
    d = int(rng.integers(-nd, nd)) if nd else 0
    n = pool[i].shape[d] if nd else 1
    return ([i], (int(rng.integers(0, n + 1)) + int(rng.random() < 0.05), d,
                  bool(rng.random() < 0.7)))


def _topk_ref(x, k, d, largest):
    if not -max(x.ndim, 1) <= d < max(x.ndim, 1):
        _raise(IndexError)
    n = x.shape[d] if x.ndim else 1
    if k > n:
        _raise(RuntimeError)
    if x.dtype == bool:
        _raise(RuntimeError)
    if x.ndim == 0:
        return x.copy()
    d0 = d % x.ndim
    o = _order(x, d0, largest)
    return np.take_along_axis(x, np.take(o, np.arange(k), axis=d0), axis=d0)


op("topk", _pick_topk, lambda T, x, k, d, largest: T.topk(x, k, dim=d, largest=largest)[0],
   _topk_ref, "torch.topk({0}, {1}, dim={2}, largest={3})[0]", family="sort")


def _pick_kth(rng, pool):
    i = _any(rng, pool)
    nd = pool[i].ndim
    d = int(rng.integers(-nd, nd)) if nd else 0
    n = pool[i].shape[d] if nd else 1
    return ([i], (int(rng.integers(1, n + 1)) if n and rng.random() < 0.95 else
                  int(rng.integers(0, n + 2)), d))


def _kth_ref(x, k, d):
    if not -max(x.ndim, 1) <= d < max(x.ndim, 1):
        _raise(IndexError)
    n = x.shape[d] if x.ndim else 1
    if not 1 <= k <= n:
        _raise(IndexError if n == 0 else RuntimeError)
    if x.ndim == 0:
        return x.copy()
    if x.dtype == bool:
        _raise(NotImplementedError)
    d0 = d % x.ndim
    o = _order(x, d0, False)
    s = np.take_along_axis(x, o, axis=d0)
    kth = np.take(s, [k - 1], axis=d0)
    if x.dtype.kind == "f" and np.any(np.sum(s == kth, axis=d0) > 1):
        raise D.Unsure()                  # a tie: torch's gradient goes to one of them
    return np.take(s, k - 1, axis=d0)


op("kthvalue", _pick_kth, lambda T, x, k, d: T.kthvalue(x, k, dim=d)[0], _kth_ref,
   "torch.kthvalue({0}, {1}, dim={2})[0]", family="sort")


def _pick_unique(rng, pool):
    i = _any(rng, pool)
    which = ["values", "inverse", "counts"][int(rng.integers(3))]
    nd = pool[i].ndim
    if not D.avoiding("unique_dim") and rng.random() < 0.3 and nd:
        return ([i], (which, int(rng.integers(-nd, nd))))
    return ([i], (which, None))


def _unique_ref(x, which, dim):
    if dim is None:
        f = x.reshape(-1)
        key = f.astype(np.float64) if f.dtype.kind == "f" else f
        vals, inv, counts = np.unique(key, return_inverse=True, return_counts=True) \
            if f.size else (f[:0], np.zeros(0, np.int64), np.zeros(0, np.int64))
        vals = vals.astype(x.dtype)
        inv = np.asarray(inv, dtype=np.int64).reshape(x.shape)
    else:
        if not -x.ndim <= dim < x.ndim:
            _raise(IndexError)
        d0 = dim % x.ndim
        if any(n == 0 for k, n in enumerate(x.shape) if k != d0):
            _raise(RuntimeError)
        vals, inv, counts = np.unique(x, axis=d0, return_inverse=True, return_counts=True)
        inv = np.asarray(inv, dtype=np.int64).reshape(-1)
    return {"values": vals, "inverse": inv, "counts": np.asarray(counts, dtype=np.int64)}[which]


def _unique_run(T, x, which, dim):
    out = T.unique(x, sorted=True, return_inverse=True, return_counts=True, dim=dim)
    return out[["values", "inverse", "counts"].index(which)]


op("unique", _pick_unique, _unique_run, _unique_ref,
   lambda out, x, which, dim: f"{out} = torch.unique({x}, sorted=True, return_inverse=True, "
   f"return_counts=True, dim={dim})[{['values', 'inverse', 'counts'].index(eval(which))}]",
   family="sort", grad=False)             # torch: "the derivative for '_unique2' is not implemented"
