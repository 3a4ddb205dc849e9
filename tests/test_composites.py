"""Functions made of other ops (clgrad/ops/special.py, arrange.py, stats.py) against numpy, with
gradients by gradcheck."""
import math

import numpy as np
import pytest

import clgrad
from clgrad.autograd import gradcheck, gradgradcheck
from helpers import grad_dtype, grad_tols


def _t(a, device, dt=None, grad=False):
    return clgrad.tensor(a, dtype=dt, device=device, requires_grad=grad)


# ---- special ---------------------------------------------------------------------------------
def test_special_values(device):
    a = np.array([1.0, np.inf, -np.inf, -3.0, 1000.0, 0.0])
    b = np.array([2.0, np.inf, -np.inf, 5.0, 1000.0, -np.inf])
    dt = grad_dtype(device)
    np.testing.assert_allclose(clgrad.logaddexp(_t(a, device, dt), _t(b, device, dt)).numpy(),
                               np.logaddexp(a, b))
    np.testing.assert_allclose(clgrad.logaddexp2(_t(a, device, dt), _t(b, device, dt)).numpy(),
                               np.logaddexp2(a, b), rtol=1e-12)
    x = np.array([0.0, 0.0, 2.0, 0.0, 3.0])
    y = np.array([0.0, np.inf, 3.0, np.nan, 0.0])
    got = clgrad.xlogy(_t(x, device, dt), _t(y, device, dt)).numpy()
    np.testing.assert_array_equal(np.isnan(got), [False, False, False, True, False])
    np.testing.assert_allclose(got[[0, 1, 2, 4]], [0.0, 0.0, 2 * np.log(3), -np.inf])
    p = np.array([0.1, 0.5, 0.9])
    np.testing.assert_allclose(clgrad.logit(_t(p, device, dt)).numpy(), np.log(p / (1 - p)))
    np.testing.assert_allclose(clgrad.logit(_t([0.0, 1.0], device, dt), eps=0.1).numpy(),
                               [np.log(1 / 9), np.log(9)])
    s = np.array([0.0, 0.5, -1.5, 2.0])
    np.testing.assert_allclose(clgrad.sinc(_t(s, device, dt)).numpy(), np.sinc(s), atol=1e-15)
    np.testing.assert_allclose(clgrad.deg2rad(_t([180.0], device, dt)).numpy(), [np.pi])
    np.testing.assert_allclose(clgrad.rad2deg(_t([np.pi], device, dt)).numpy(), [180.0])
    h = clgrad.heaviside(_t([-1.0, 0.0, 3.0], device), _t([0.5], device))
    assert h.tolist() == [0.0, 0.5, 1.0]
    assert clgrad.logaddexp(_t([1, 2], device), _t([1, 2], device)).dtype is clgrad.float32


def test_erfinv(device):
    x = np.linspace(-0.9999, 0.9999, 999)
    y = clgrad.erfinv(_t(x, device, grad_dtype(device))).numpy()
    back = np.array([math.erf(v) for v in y])
    tol = 1e-14 if device.has_fp64 else 1e-6
    np.testing.assert_allclose(back, x, atol=tol)
    y32 = clgrad.erfinv(_t(x.astype(np.float32), device)).numpy()
    np.testing.assert_allclose([math.erf(v) for v in y32], x.astype(np.float32), atol=1e-6)
    edge = clgrad.erfinv(_t([1.0, -1.0, 1.5, 0.0], device)).numpy()
    assert edge[0] == np.inf and edge[1] == -np.inf and np.isnan(edge[2]) and edge[3] == 0


@pytest.mark.parametrize("fn", ["logaddexp", "logaddexp2", "xlogy", "erfinv", "logit", "sinc"])
def test_special_gradients(device, fn):
    dt = grad_dtype(device)
    rng = np.random.default_rng(0)
    a = _t(rng.uniform(0.1, 0.9, 6), device, dt, True)
    b = _t(rng.uniform(0.1, 0.9, 6), device, dt, True)
    f = {"logaddexp": lambda u, v: clgrad.logaddexp(u, v),
         "logaddexp2": lambda u, v: clgrad.logaddexp2(u, v * 3),
         "xlogy": lambda u, v: clgrad.xlogy(u, v),
         "erfinv": lambda u, v: clgrad.erfinv(u - v),
         "logit": lambda u, v: clgrad.logit(u) * v,
         "sinc": lambda u, v: clgrad.sinc(u - v)}[fn]
    tol = grad_tols(device)
    assert gradcheck(f, (a, b), **tol)
    assert gradgradcheck(f, (a, b), **tol)
    if fn == "logaddexp":                       # equal arguments: half each, as torch
        u = _t([2.0], device, dt, True)
        clgrad.logaddexp(u, u.detach()).backward()
        assert u.grad.item() == 0.5


# ---- arrange ---------------------------------------------------------------------------------
def test_movedim_rot90_diff(device):
    a = np.arange(24).reshape(2, 3, 4)
    x = _t(a, device)
    for src, dst in ((0, -1), ((0, 1), (2, 0)), (-1, 0)):
        np.testing.assert_array_equal(x.movedim(src, dst).numpy(), np.moveaxis(a, src, dst))
    assert clgrad.moveaxis(x, 1, 0).shape == (3, 2, 4)
    with pytest.raises(RuntimeError, match="repeated dim"):
        x.movedim((0, 0), (1, 2))
    for k in range(-1, 5):
        np.testing.assert_array_equal(x.rot90(k, (1, 2)).numpy(), np.rot90(a, k, (1, 2)))
    with pytest.raises(RuntimeError, match="different"):
        x.rot90(1, (1, 1))
    for n in (1, 2, 5):
        np.testing.assert_array_equal(x.diff(n, dim=2).numpy(), np.diff(a, n, axis=2))
    np.testing.assert_array_equal(
        x.diff(dim=1, prepend=_t(np.zeros((2, 1, 4), int), device),
               append=_t(np.ones((2, 2, 4), int), device)).numpy(),
        np.diff(a, axis=1, prepend=np.zeros((2, 1, 4), int), append=np.ones((2, 2, 4), int)))
    assert _t([True, True, False], device).diff().tolist() == [False, True]
    dt = grad_dtype(device)
    g = _t(np.random.default_rng(1).standard_normal((3, 4)), device, dt, True)
    assert gradcheck(lambda t: t.rot90().movedim(0, 1).diff(), (g,), **grad_tols(device))


def test_meshgrid_cartesian_tri_vander_logspace(device):
    xs, ys = np.array([1, 2]), np.array([3, 4, 5])
    for ind in ("ij", "xy"):
        got = clgrad.meshgrid(_t(xs, device), _t(ys, device), indexing=ind)
        for g, r in zip(got, np.meshgrid(xs, ys, indexing=ind)):
            np.testing.assert_array_equal(g.numpy(), r)
    assert clgrad.meshgrid([_t(xs, device)])[0].tolist() == [1, 2]
    np.testing.assert_array_equal(clgrad.cartesian_prod(_t(xs, device), _t(ys, device)).numpy(),
                                  np.array([[a, b] for a in xs for b in ys]))
    for off in (-1, 0, 2):
        np.testing.assert_array_equal(clgrad.tril_indices(4, 3, off).numpy(),
                                      np.stack(np.tril_indices(4, off, 3)))
        np.testing.assert_array_equal(clgrad.triu_indices(4, 3, off).numpy(),
                                      np.stack(np.triu_indices(4, off, 3)))
    v = np.array([1.0, 2.0, 4.0])
    np.testing.assert_array_equal(clgrad.vander(_t(v, device)).numpy(), np.vander(v))
    np.testing.assert_array_equal(clgrad.vander(_t(v, device), 2, increasing=True).numpy(),
                                  np.vander(v, 2, increasing=True))
    np.testing.assert_allclose(clgrad.logspace(-1, 2, 4, base=2.0).numpy(),
                               np.logspace(-1, 2, 4, base=2.0), rtol=1e-6)


# ---- stats -----------------------------------------------------------------------------------
def test_nan_reductions_count_aminmax(device):
    a = np.array([[1.0, np.nan, 2.0], [np.nan, np.nan, 4.0]])
    x = _t(a, device)
    assert x.nansum().item() == 7.0
    np.testing.assert_array_equal(x.nansum(1).numpy(), np.nansum(a, 1))
    np.testing.assert_allclose(x.nanmean(0).numpy()[[0, 2]], np.nanmean(a[:, [0, 2]], 0))
    assert np.isnan(x.nanmean(0).numpy()[1])
    with pytest.raises(RuntimeError, match="floating point"):
        _t([1, 2], device).nanmean()
    z = _t([[0, 1, 2], [0, 0, 3]], device)
    assert z.count_nonzero().item() == 3 and z.count_nonzero(1).tolist() == [2, 1]
    mn, mx = _t([[3, 1], [5, 2]], device).aminmax(dim=1)
    assert mn.tolist() == [1, 2] and mx.tolist() == [3, 5]


@pytest.mark.parametrize("interpolation", ["linear", "lower", "higher", "midpoint", "nearest"])
def test_quantile(device, interpolation):
    dt = grad_dtype(device)
    a = np.random.default_rng(2).standard_normal((4, 7))
    x = _t(a, device, dt)
    q = [0.0, 0.1, 0.5, 0.9, 1.0]
    got = x.quantile(_t(q, device, dt), dim=1, interpolation=interpolation).numpy()
    np.testing.assert_allclose(got, np.quantile(a, q, axis=1, method=interpolation), rtol=1e-6)
    assert abs(x.quantile(0.3, interpolation=interpolation).item()
               - np.quantile(a, 0.3, method=interpolation)) < 1e-6
    assert x.quantile(0.5, dim=0, keepdim=True).shape == (1, 7)
    b = a.copy()
    b[0, 2] = np.nan
    y = _t(b, device, dt)
    assert np.isnan(y.quantile(0.5, dim=1).numpy()[0])
    np.testing.assert_allclose(y.nanquantile(0.5, dim=1).numpy(), np.nanquantile(b, 0.5, axis=1),
                               rtol=1e-6)
    with pytest.raises(RuntimeError, match=r"in the range \[0, 1\]"):
        x.quantile(1.5)
    g = _t(np.random.default_rng(3).permutation(12).reshape(3, 4) / 5, device, dt, True)
    assert gradcheck(lambda t: t.quantile(0.3, dim=1), (g,), **grad_tols(device))


def test_bincount_histc_trapezoid(device):
    v = np.array([0, 1, 1, 3, 7])
    np.testing.assert_array_equal(_t(v, device).bincount().numpy(), np.bincount(v))
    np.testing.assert_array_equal(_t(v, device).bincount(minlength=10).numpy(),
                                  np.bincount(v, minlength=10))
    w = np.array([0.5, 1.0, 2.0, 0.25, 1.0])
    np.testing.assert_allclose(_t(v, device).bincount(_t(w, device)).numpy(), np.bincount(v, w))
    with pytest.raises(RuntimeError, match="non-negative"):
        _t([-1, 2], device).bincount()
    d = np.random.default_rng(4).standard_normal(200).astype(np.float32)
    np.testing.assert_array_equal(_t(d, device).histc(10, -2, 2).numpy(),
                                  np.histogram(d[(d >= -2) & (d <= 2)], 10, (-2, 2))[0])
    y = np.array([[1.0, 2.0, 4.0], [0.0, 3.0, 1.0]])
    xs = np.array([0.0, 1.0, 3.0])
    Y = _t(y, device)
    np.testing.assert_allclose(clgrad.trapezoid(Y).numpy(), np.trapezoid(y) if
                               hasattr(np, "trapezoid") else np.trapz(y))
    np.testing.assert_allclose(clgrad.trapezoid(Y, _t(xs, device)).numpy(),
                               (y[:, 1:] + y[:, :-1]).dot(np.diff(xs)) / 2)
    np.testing.assert_allclose(clgrad.trapezoid(Y, dx=0.5, dim=0).numpy(), (y[0] + y[1]) / 4)
    np.testing.assert_allclose(clgrad.cumulative_trapezoid(Y).numpy(),
                               np.cumsum((y[:, 1:] + y[:, :-1]) / 2, axis=1))
