"""Differential testing, the linalg family (tests/differential.py runs it): matmul in every rank,
linalg.inv/det/solve on well-conditioned matrices (and singular ones that core steps make), and
vector/matrix norms with torch's dtype and shape rules."""
import numpy as np

import differential as D
from differential import _any, _raise, op


class LinAlgError(RuntimeError):
    """Stands for torch.linalg.LinAlgError (compared by name)."""


LinAlgError.__module__ = "torch.linalg"


def _inputs(rng, dtype):
    def dt():
        d = dtype()
        return d if d in ("float32", "float64") or rng.random() < 0.3 else "float32"
    n = int(rng.integers(0, 4)) if rng.random() < 0.1 else int(rng.integers(1, 4))
    batch = [(), (2,), (1,), (2, 1)][int(rng.integers(4))]
    a = rng.standard_normal(batch + (n, n)) + 2.5 * np.eye(n)
    k = int(rng.integers(1, 3))
    b = rng.standard_normal([(n,), (n, k), batch + (n, k), batch + (n,)][int(rng.integers(4))])
    out = [a.astype(dt()), b.astype(dt())]
    if rng.random() < 0.5:
        out.append(D._random_input(rng, dt()))
    return [np.asarray(v) if v.dtype != bool else np.asarray(v > 0) for v in out]


D.family("linalg", _inputs)


def _float_only(*xs):
    for x in xs:
        if x.dtype.kind != "f":
            _raise(RuntimeError)


def _square(a):
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        _raise(RuntimeError)


def _pick_a(rng, pool):
    i = _any(rng, pool, lambda v: v.ndim >= 2 and v.shape[-1] == v.shape[-2])
    if i is None or rng.random() < 0.05:
        i = _any(rng, pool)
    return ([i], ())


def _conditioned(a):
    """torch's LinAlgError for an exactly singular matrix (a zero row or column: a zero pivot);
    Unsure for a nearly singular one (what comes out is rounding)."""
    v = a.astype(np.float64)
    if not a.size:
        return
    if np.any(np.all(v == 0, axis=-1)) or np.any(np.all(v == 0, axis=-2)):
        _raise(LinAlgError)
    with np.errstate(all="ignore"):
        try:
            cond = np.linalg.cond(v)
        except np.linalg.LinAlgError:         # non-finite entries: no SVD to judge by
            raise D.Unsure() from None
        if not np.all(cond < (1e4 if a.dtype == np.float32 else 1e8)):
            raise D.Unsure()


def _inv_ref(a):
    _square(a)
    _float_only(a)
    v = a.astype(np.float64)
    _conditioned(a)
    return (np.linalg.inv(v).astype(a.dtype) if a.size else a.copy()).view(D.Inexact)


def _det_ref(a):
    _square(a)
    _float_only(a)
    return np.asarray(np.linalg.det(a.astype(np.float64))).astype(a.dtype)


D.switch("det_singular", "no det of a singular matrix (clgrad's gradient of det inverts it and "
         "raises LinAlgError; torch's gives the adjugate)")


def _pick_det(rng, pool):
    p = _pick_a(rng, pool)
    a = pool[p[0][0]]
    if D.avoiding("det_singular") and a.dtype.kind == "f" and a.ndim >= 2 and \
            a.shape[-1] == a.shape[-2] and a.size and \
            np.any(np.abs(np.linalg.det(a.astype(np.float64))) < 1e-6):
        return None
    return p


op("inv", _pick_a, lambda T, a: T.linalg.inv(a), _inv_ref, "torch.linalg.inv({0})",
   family="linalg")
op("det", _pick_det, lambda T, a: T.linalg.det(a), _det_ref, "torch.linalg.det({0})",
   family="linalg")


def _pick_solve(rng, pool):
    i = _pick_a(rng, pool)[0][0]
    n = pool[i].shape[-1] if pool[i].ndim >= 2 else 0
    j = _any(rng, pool, lambda v: v.ndim >= 1 and (v.shape[0] == n if v.ndim == 1 else
                                                    v.shape[-2] == n))
    if j is None or rng.random() < 0.05:
        j = _any(rng, pool)
    return ([i, j], ())


def _solve_ref(a, b):
    _square(a)
    _float_only(a, b)
    if a.dtype != b.dtype:
        _raise(RuntimeError)
    vector = b.ndim == 1 or (b.ndim == a.ndim - 1 and b.shape == a.shape[:-1])
    bm = b[..., None] if vector else b
    if bm.ndim < 2 or bm.shape[-2] != a.shape[-1]:
        _raise(RuntimeError)
    batch = D._bshape(np.empty(a.shape[:-2]), np.empty(bm.shape[:-2]))
    A = np.broadcast_to(a, batch + a.shape[-2:]).astype(np.float64)
    B = np.broadcast_to(bm, batch + bm.shape[-2:]).astype(np.float64)
    _conditioned(a)
    x = np.linalg.solve(A, B) if A.size and B.size else np.zeros(B.shape)
    return (x[..., 0] if vector else x).astype(a.dtype).view(D.Inexact)


op("solve", _pick_solve, lambda T, a, b: T.linalg.solve(a, b), _solve_ref,
   "torch.linalg.solve({0}, {1})", family="linalg")


def _pick_matmul(rng, pool):
    i = _any(rng, pool, lambda v: v.ndim >= 1)
    if i is None:
        return None
    n = pool[i].shape[-1]
    j = _any(rng, pool, lambda v: v.ndim >= 1 and (v.shape[0] if v.ndim == 1 else v.shape[-2]) == n)
    if j is None or rng.random() < 0.1:
        j = _any(rng, pool)
    return ([i, j], ())


def _bmm_path(a, b):
    """Whether torch's matmul runs bmm rather than dot/mv/mm on these operands (no gradient):
    a batch that folds into rows without a copy (torch's should_fold) runs mm / mv."""
    if a.ndim <= 2 and b.ndim <= 2:
        return False
    larger = a.ndim >= b.ndim
    big, small = (a, b) if larger else (b, a)
    if not (big.ndim >= 3 and small.ndim <= 2) or a.ndim == 2:
        return True
    if not big.size:
        return False
    shape, strides = list(big.shape), [s // big.itemsize for s in big.strides]
    if not larger:                        # the larger one is b, seen transposed
        shape[-2:], strides[-2:] = shape[-1:-3:-1], strides[-1:-3:-1]
    return not all(strides[i] == strides[i + 1] * shape[i + 1] for i in range(len(shape) - 2))


def _matmul_ref(a, b):
    if a.ndim == 0 or b.ndim == 0:
        _raise(RuntimeError)
    ka = a.shape[-1]
    kb = b.shape[0] if b.ndim == 1 else b.shape[-2]
    if ka != kb:
        _raise(RuntimeError)
    if a.ndim > 2 or b.ndim > 2:
        D._bshape(np.empty(a.shape[:-2] if a.ndim > 2 else ()),
                  np.empty(b.shape[:-2] if b.ndim > 2 else ()))
    empty = not (a.size and b.size)       # torch needs no kernel then (checked with torch)
    if a.dtype != b.dtype:
        if not _bmm_path(a, b):           # dot / mv / mm: "expected ... the same dtype"
            _raise(RuntimeError)
        if not empty:                     # bmm: dispatched on a's dtype, then compared
            _raise(NotImplementedError if a.dtype == bool else RuntimeError)
        return np.zeros(np.matmul(np.zeros(a.shape), np.zeros(b.shape)).shape, b.dtype)
    if a.dtype == bool and (a.ndim == b.ndim == 1 or not empty):
        _raise(NotImplementedError)       # no bool kernel (dot: not even for empty vectors)
    r = np.matmul(a.astype(np.float64) if a.dtype.kind == "f" else a,
                  b.astype(np.float64) if b.dtype.kind == "f" else b)
    return np.asarray(r).astype(a.dtype)


op("matmul", _pick_matmul, lambda T, a, b: T.matmul(a, b), _matmul_ref,
   "torch.matmul({0}, {1})", family="linalg")

_INF = float("inf")


def _pick_vnorm(rng, pool):
    i = _any(rng, pool)
    nd = pool[i].ndim
    ordv = [2, 1, _INF, -_INF, 0, 3, 0.5, -1][int(rng.integers(8))]
    r = rng.random()
    dim = None if r < 0.4 or not nd else int(rng.integers(-nd, nd)) if r < 0.8 else \
        tuple(int(d) for d in rng.choice(nd, min(nd, 2), replace=False))
    return ([i], (ordv, dim, bool(rng.random() < 0.3)))


def _vnorm_ref(x, ordv, dim, keepdim):
    _float_only(x)
    dims = tuple(range(x.ndim)) if dim is None else (dim,) if isinstance(dim, int) else dim
    try:
        axes = tuple(d % x.ndim if x.ndim else d for d in dims) if x.ndim else ()
    except ZeroDivisionError:
        axes = ()
    if any(not -max(x.ndim, 1) <= d < max(x.ndim, 1) for d in dims):
        _raise(IndexError)
    v = np.abs(x.astype(np.float64))
    if (ordv < 0 or ordv == _INF) and any(x.shape[a] == 0 for a in axes if x.ndim) or \
            (ordv < 0 or ordv == _INF) and x.size == 0 and dim is None:
        _raise(RuntimeError)
    with np.errstate(all="ignore"):
        if ordv == _INF:
            r = v.max(axis=axes, keepdims=keepdim)
        elif ordv == -_INF:
            r = v.min(axis=axes, keepdims=keepdim)
        elif ordv == 0:
            r = (v != 0).sum(axis=axes, keepdims=keepdim).astype(np.float64)
        else:
            r = (v ** ordv).sum(axis=axes, keepdims=keepdim) ** (1 / ordv)
    return np.asarray(r).astype(x.dtype)


op("vector_norm", _pick_vnorm,
   lambda T, x, o, dim, keep: T.linalg.vector_norm(x, o, dim=dim, keepdim=keep), _vnorm_ref,
   "torch.linalg.vector_norm({0}, {1}, dim={2}, keepdim={3})", family="linalg")


D.switch("matrix_norm_edges", "no matrix_norm of an integer or empty matrix (clgrad: another "
         "error class; amax of an empty dim raises where torch gives 0)")


def _pick_mnorm(rng, pool):
    i = _pick_a(rng, pool)[0][0] if rng.random() < 0.7 else _any(rng, pool)
    if i is not None and D.avoiding("matrix_norm_edges") and (
            pool[i].dtype.kind != "f" or pool[i].size == 0):
        return None
    return ([i], (["fro", "nuc", 1, -1, _INF, -_INF, 2][int(rng.integers(7))],
                  bool(rng.random() < 0.3)))


def _mnorm_ref(x, ordv, keepdim):
    if x.ndim < 2:
        _raise(RuntimeError)
    _float_only(x)
    v = x.astype(np.float64)
    if ordv == -1 and x.shape[-1] == 0 or ordv == -_INF and x.shape[-2] == 0:
        _raise(IndexError)                # amin over an empty dim (amax gives 0 there)

    if ordv == "fro":
        r = np.sqrt((v ** 2).sum(axis=(-2, -1)))
    elif ordv in (1, -1):
        s = np.abs(v).sum(axis=-2)
        r = (s.max(-1) if s.shape[-1] else s.sum(-1)) if ordv == 1 else s.min(-1)
    elif ordv in (_INF, -_INF):
        s = np.abs(v).sum(axis=-1)
        r = (s.max(-1) if s.shape[-1] else s.sum(-1)) if ordv > 0 else s.min(-1)
    elif 0 in x.shape[-2:]:
        r = np.zeros(x.shape[:-2])
    else:
        sv = np.linalg.svd(v, compute_uv=False)
        r = sv.sum(-1) if ordv == "nuc" else sv.max(-1)
    r = np.asarray(r)
    if keepdim:
        r = r[..., None, None]
    return r.astype(x.dtype)


op("matrix_norm", _pick_mnorm,
   lambda T, x, o, keep: T.linalg.matrix_norm(x, o, keepdim=keep), _mnorm_ref,
   "torch.linalg.matrix_norm({0}, {1}, keepdim={2})", family="linalg")
