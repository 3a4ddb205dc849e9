"""Scans: cumsum, cumprod, cummax, cummin, logcumsumexp. Forward against numpy on every dtype,
dim, layout, 0-d, empty and extreme inputs; long lines through the blocked two-level scan
(naturally and forced, several levels deep); reverse scans; gradients and double gradients;
errors as torch raises them."""
import numpy as np
import pytest

import clgrad
from clgrad.kernels import scan as sm
from helpers import (LAYOUTS, all_dtypes, assert_close, float_dtypes, grad_dtype, grad_tols, make,
                     random_array, rounded, to_np)


def np_cumext(a, dim, which):
    """torch's cummax / cummin: NaN wins and stays, ties go to the later element, so the index
    is the last position so far holding the running value."""
    a = np.asarray(a)
    dim %= a.ndim
    vals = (np.maximum if which == "max" else np.minimum).accumulate(a, axis=dim)
    hit = a == vals
    if a.dtype.kind == "f":
        hit |= np.isnan(a) & np.isnan(vals)
    pos = np.arange(a.shape[dim]).reshape([-1 if i == dim else 1 for i in range(a.ndim)])
    return vals, np.maximum.accumulate(np.where(hit, pos, 0), axis=dim)


def np_scan(name, a, dim):
    a = np.asarray(a)
    if name == "logcumsumexp":
        return np.logaddexp.accumulate(a.astype(np.float64), axis=dim)
    if name in ("cummax", "cummin"):
        return np_cumext(a, dim, name[3:])
    wide = np.float64 if a.dtype.kind == "f" else np.int64
    return getattr(np, name)(a.astype(wide), axis=dim)


def check(name, x, a, dim, dt):
    """x's scan along dim against numpy on a (x's values)."""
    out = getattr(clgrad, name)(x, dim)
    if name in ("cummax", "cummin"):
        rv, ri = np_scan(name, a.reshape(x.shape) if a.ndim else a.reshape(1), dim if a.ndim else 0)
        values, indices = out
        assert values.dtype is dt and indices.dtype is clgrad.int64
        assert_close(values, rv.reshape(x.shape), dt)
        np.testing.assert_array_equal(to_np(indices), ri.reshape(x.shape))
        return
    ref = np_scan(name, a if a.ndim else a.reshape(1), dim if a.ndim else 0).reshape(x.shape)
    want = dt if dt.kind == "f" else clgrad.int64
    assert out.dtype is want and out.shape == x.shape
    tol = {}
    if dt.kind == "f":            # running totals are rounded (16-bit ones at every step)
        tol = dict(rtol=3e-2, atol=3e-2) if dt is clgrad.bfloat16 else \
            dict(rtol=4e-3, atol=4e-3) if dt is clgrad.float16 else \
            dict(rtol=1e-4 if x.numel() > 1000 else 1e-5, atol=1e-5)
    assert_close(out, ref, want, **tol)


SCANS = ["cumsum", "cumprod", "cummax", "cummin", "logcumsumexp"]


def _values(name, shape, dt, rng):
    if dt.kind in "iub":
        return random_array(shape, dt, rng, 0, 0.3) if name == "cumprod" else \
            random_array(shape, dt, rng)
    if name == "cumprod":
        return rounded(rng.uniform(0.5, 1.5, shape) * rng.choice([-1, 1], shape), dt)
    if name in ("cummax", "cummin"):
        return rounded(rng.integers(-4, 5, shape), dt)          # ties
    return rounded(rng.uniform(-3, 3, shape), dt)


# inner >= VEC takes the vector lanes, inner < VEC and strided lines the scalar path
CASES = [((9,), (0, -1)), ((4, 13), (0, 1)), ((3, 5, 17), (0, 1, -1)), ((40, 3), (0,))]


@pytest.mark.parametrize("name", SCANS)
def test_forward_matches_numpy(device, name):
    rng = np.random.default_rng(0)
    dts = float_dtypes(device) if name == "logcumsumexp" else all_dtypes(device)
    for dt in dts:
        for shape, dims in CASES:
            a = _values(name, shape, dt, rng)
            for layout in (LAYOUTS if len(shape) >= 2 else ("contiguous",)):
                x = make(a, dt, device, layout)
                for d in dims:
                    check(name, x, a, d, dt)
        check(name, make(a.reshape(-1)[0], dt, device), a.reshape(-1)[0], 0, dt)      # 0-d


@pytest.mark.parametrize("name", SCANS)
def test_blocked_scan(device, name, monkeypatch):
    """Long lines go through block totals, their scan and the scan of each block from its carry;
    small forced blocks give several levels."""
    rng = np.random.default_rng(1)
    for block in (None, 3, 16):
        if block is not None:
            monkeypatch.setattr(sm, "block_size", lambda dev, lines, L, b=block: b)
        for dt in (clgrad.float32, clgrad.int32) if name != "logcumsumexp" else (clgrad.float32,):
            shapes = [((3, 200), 1), ((50, 20), 0), ((2, 31, 3), 1)] if block else \
                [((1 << 17,), 0), ((2, 70000), 1)]
            for shape, d in shapes:
                # small integers: sums are exact whatever the order of additions
                a = rng.integers(-3, 4, shape).astype(dt.np)
                if name == "cumprod":
                    a = rng.choice([-1, 1, 1, 1], shape).astype(dt.np)
                if name == "logcumsumexp":
                    a = rng.uniform(-3, 3, shape).astype(np.float32)
                for layout in (("contiguous", "transposed") if block else ("contiguous",)):
                    check(name, make(a, dt, device, layout), a, d, dt)


def test_reverse_scans(device, monkeypatch):
    rng = np.random.default_rng(2)
    a = rng.uniform(-2, 2, (5, 37)).astype(np.float32)
    for block in (None, 4):
        if block:
            monkeypatch.setattr(sm, "block_size", lambda dev, lines, L: block)
        for layout in LAYOUTS:
            x = make(a, clgrad.float32, device, layout)
            for d in (0, 1):
                out, idx = sm.scan_raw("cumsum", x, d, reverse=True)
                assert idx is None
                assert_close(out, np.flip(np.cumsum(np.flip(a, d), d, dtype=np.float64), d),
                             rtol=1e-5, atol=1e-5)
                out = sm.scan_raw("logcumsumexp", x, d, reverse=True)[0]
                ref = np.flip(np.logaddexp.accumulate(np.flip(a.astype(np.float64), d), d), d)
                assert_close(out, ref)


def test_dtypes_and_dtype_argument(device):
    for dt in (clgrad.int32, clgrad.uint8, clgrad.bool, clgrad.int64):
        x = clgrad.tensor([1, 1, 0, 1], dtype=dt, device=device)
        assert x.cumsum(0).dtype is clgrad.int64 and x.cumsum(0).tolist() == [1, 2, 2, 3]
        assert clgrad.cumprod(x, 0).dtype is clgrad.int64
        assert x.cummax(0).values.dtype is dt
    b = clgrad.tensor([True, False, True], device=device)
    assert b.cummax(0).indices.tolist() == [0, 0, 2]
    assert b.cummin(0).values.tolist() == [True, False, False]
    i = clgrad.tensor([1, 2, 3], dtype=clgrad.int32, device=device)
    assert clgrad.cumsum(i, 0, dtype=clgrad.int32).dtype is clgrad.int32
    f = clgrad.cumsum(i, 0, dtype=clgrad.float32)
    assert f.dtype is clgrad.float32 and f.tolist() == [1.0, 3.0, 6.0]
    assert clgrad.cumprod(i, 0, dtype=clgrad.float64 if device.has_fp64 else clgrad.float32
                          ).tolist() == [1.0, 2.0, 6.0]
    big = clgrad.tensor([2**31 - 1, 2**31 - 1], dtype=clgrad.int32, device=device)
    assert big.cumsum(0).tolist() == [2**31 - 1, 2**32 - 2]          # no int32 overflow
    assert clgrad.cumsum(big, 0, dtype=clgrad.int32).tolist() == [2**31 - 1, -2]   # wraps
    r = clgrad.cummax(clgrad.tensor([1.0, 3.0], device=device), 0)
    assert type(r).__name__ == "cummax" and r.values.tolist() == [1.0, 3.0]
    vals, idx = clgrad.cummin(clgrad.tensor([2.0, 1.0], device=device), 0)
    assert idx.tolist() == [0, 1]


def test_zero_dim_and_empty(device):
    x = clgrad.tensor(2.5, device=device)
    for d in (0, -1):
        assert x.cumsum(d).item() == 2.5 and x.cumprod(d).item() == 2.5
        assert x.logcumsumexp(d).item() == 2.5
        v, i = x.cummax(d)
        assert v.shape == () and v.item() == 2.5 and i.item() == 0
    for shape, d in [((0,), 0), ((3, 0), 1), ((0, 4), 1), ((2, 0, 3), 0)]:
        e = clgrad.zeros(shape, device=device)
        for name in SCANS:
            out = getattr(clgrad, name)(e, d)
            for t in (out if isinstance(out, tuple) else (out,)):
                assert t.shape == shape


def test_extreme_values(device):
    inf, nan = float("inf"), float("nan")
    x = clgrad.tensor([-inf, -inf, 1e4, inf, 2.0, -inf], device=device)
    assert x.logcumsumexp(0).tolist() == [-inf, -inf, 1e4, inf, inf, inf]
    s = to_np(x.cumsum(0))
    assert s[:3].tolist() == [-inf, -inf, -inf] and np.isnan(s[3:]).all()     # -inf + inf
    y = clgrad.tensor([1e4, 1e4, -1e4], device=device).logcumsumexp(0)
    assert_close(y, [1e4, 1e4 + np.log(2), 1e4 + np.log(2)])
    z = clgrad.tensor([1.0, nan, 1.0], device=device).logcumsumexp(0)
    assert z.tolist()[0] == 1.0 and np.isnan(to_np(z)[1:]).all()
    p = clgrad.tensor([2.0, 0.0, inf, 3.0], device=device).cumprod(0)
    assert to_np(p)[:2].tolist() == [2.0, 0.0] and np.isnan(to_np(p)[2:]).all()
    m = clgrad.tensor([1.0, 3.0, 3.0, nan, 2.0, nan, 5.0], device=device)
    assert m.cummax(0).indices.tolist() == [0, 1, 2, 3, 3, 5, 5]
    assert m.cummin(0).indices.tolist() == [0, 0, 0, 3, 3, 5, 5]
    assert clgrad.tensor([-inf, -inf], device=device).cummax(0).indices.tolist() == [0, 1]
    h = clgrad.tensor([6e4, 6e4, -6e4], dtype=clgrad.float16, device=device)
    assert to_np(h.logcumsumexp(0))[1] == np.float16(6e4 + np.log(2))


def test_errors(device):
    x = clgrad.zeros(2, 3, device=device)
    for name in SCANS:
        f = getattr(clgrad, name)
        with pytest.raises(IndexError, match="Dimension out of range"):
            f(x, 2)
        with pytest.raises(IndexError):
            f(clgrad.tensor(1.0, device=device), 1)
        with pytest.raises(TypeError):
            f(x, None)
    with pytest.raises(NotImplementedError, match="logcumsumexp"):
        clgrad.tensor([1, 2], device=device).logcumsumexp(0)


# ---- gradients ------------------------------------------------------------------------------
def _grad_fns():
    return {"cumsum": lambda t, d: t.cumsum(d), "cumprod": lambda t, d: t.cumprod(d),
            "cummax": lambda t, d: t.cummax(d).values, "cummin": lambda t, d: t.cummin(d).values,
            "logcumsumexp": lambda t, d: t.logcumsumexp(d)}


@pytest.mark.parametrize("name", SCANS)
def test_gradients(device, name):
    dt = grad_dtype(device)
    tol = grad_tols(device)
    rng = np.random.default_rng(3)
    f = _grad_fns()[name]
    for shape, d, layout in [((3, 5), 1, "contiguous"), ((4, 3), 0, "transposed"),
                             ((2, 3, 4), -2, "strided"), ((), 0, "contiguous")]:
        a = rng.uniform(-2, 2, shape)
        if name in ("cummax", "cummin"):       # distinct values: the max is differentiable
            a = rng.permutation(np.arange(a.size, dtype=np.float64)).reshape(shape) * 0.37
        x = make(a, dt, device, layout, requires_grad=True)
        assert clgrad.autograd.gradcheck(lambda t: f(t, d), (x,), **tol)
        assert clgrad.autograd.gradgradcheck(lambda t: f(t, d), (x,), **tol)


def test_blocked_gradients(device, monkeypatch):
    monkeypatch.setattr(sm, "block_size", lambda dev, lines, L: 3)
    dt = grad_dtype(device)
    tol = grad_tols(device)
    rng = np.random.default_rng(4)
    for name, f in _grad_fns().items():
        a = rng.permutation(np.arange(20.0)).reshape(2, 10) * 0.1 + 0.5
        x = make(a, dt, device, requires_grad=True)
        assert clgrad.autograd.gradcheck(lambda t: f(t, 1), (x,), **tol), name


def test_cumprod_gradient_with_zeros(device):
    dt = grad_dtype(device)
    tol = grad_tols(device)
    a = np.array([[2.0, 0.0, 3.0, 0.5, 0.0, 1.5], [0.0, 1.2, -0.7, 2.0, 1.1, 0.9],
                  [1.3, -0.8, 0.6, 1.7, 0.4, 0.0]])
    x = make(a, dt, device, requires_grad=True)
    assert clgrad.autograd.gradcheck(lambda t: t.cumprod(1), (x,), **tol)
    assert clgrad.autograd.gradgradcheck(lambda t: t.cumprod(1), (x,), **tol)
    # the O(n) backward (no create_graph) and the differentiable one agree, on exact values
    g = np.arange(1.0, 7.0).reshape(1, 6).repeat(3, 0)
    want = np.zeros_like(a)
    for r in range(3):
        for i in range(6):
            want[r, i] = sum(g[r, k] * np.prod([a[r, j] for j in range(k + 1) if j != i])
                             for k in range(i, 6))
    gx, = clgrad.autograd.grad(x.cumprod(1), x, make(g, dt, device))
    assert_close(gx, want, dt)
    gx2, = clgrad.autograd.grad(x.cumprod(1), x, make(g, dt, device), create_graph=True)
    assert_close(gx2, want, dt)


def test_cummax_gradient_goes_to_chosen_index(device):
    x = clgrad.tensor([[1.0, 3.0, 2.0, 3.0, 0.0]], device=device, requires_grad=True)
    v, i = x.cummax(1)
    assert v.grad_fn.name() == "CummaxBackward0" and not i.requires_grad
    (v * clgrad.tensor([[1.0, 2.0, 4.0, 8.0, 16.0]], device=device)).sum().backward()
    assert x.grad.tolist() == [[1.0, 6.0, 0.0, 24.0, 0.0]]
    x = clgrad.tensor([5.0, 1.0, 6.0], device=device, requires_grad=True)
    x.cummin(0).values.sum().backward()
    assert x.grad.tolist() == [1.0, 2.0, 0.0]


def test_node_names(device):
    x = clgrad.ones(3, device=device, requires_grad=True)
    assert x.cumsum(0).grad_fn.name() == "CumsumBackward0"
    assert x.cumprod(0).grad_fn.name() == "CumprodBackward0"
    assert x.cummin(0).values.grad_fn.name() == "CumminBackward0"
    assert x.logcumsumexp(0).grad_fn.name() == "LogcumsumexpBackward0"


@pytest.mark.parametrize("name", SCANS)
def test_forward_mode(device, name):
    import clgrad.autograd.forward_ad as fwAD
    dt = grad_dtype(device)
    rng = np.random.default_rng(5)
    a = rng.permutation(np.arange(15.0)).reshape(3, 5) * 0.3 - 2
    v = rng.uniform(-1, 1, (3, 5))
    f = _grad_fns()[name]
    for d in (0, 1):
        with fwAD.dual_level():
            jv = fwAD.unpack_dual(f(fwAD.make_dual(make(a, dt, device), make(v, dt, device)),
                                    d)).tangent
        eps = 1e-6 if dt is clgrad.float64 else 1e-3
        num = (to_np(f(make(a + eps * v, dt, device), d)) -
               to_np(f(make(a - eps * v, dt, device), d))) / (2 * eps)
        assert_close(jv, num, dt, rtol=1e-5 if dt is clgrad.float64 else 1e-2,
                     atol=1e-7 if dt is clgrad.float64 else 1e-3)
