"""The gamma family (lgamma, digamma, polygamma, mvlgamma: table kernels) and clgrad.special,
against Python's math module and series summed in numpy."""
import math

import numpy as np
import pytest

import clgrad
from clgrad.autograd import gradcheck, gradgradcheck

from helpers import assert_close, float_dtypes, make, to_np

POINTS = np.array([-3.7, -2.5, -0.3, 0.01, 0.5, 1.0, 2.0, 3.3, 9.99, 10.5, 47.0, 1e3])


def np_polygamma(n, x):
    """(-1)^(n+1) n! zeta(n+1, x) by direct summation to K terms plus the Euler-Maclaurin tail;
    n = 0 by the difference of math.lgamma."""
    if n == 0:
        h = 1e-6
        return np.array([(math.lgamma(v + h) - math.lgamma(v - h)) / (2 * h) for v in x])
    s, K = n + 1, 2000
    k = np.arange(K)[:, None]
    total = (1.0 / (x[None] + k) ** s).sum(0)
    a = x + K
    total += a ** (1 - s) / (s - 1) + 0.5 * a ** -s + s / 12 * a ** (-s - 1)
    return (-1) ** (n + 1) * math.factorial(n) * total


def test_values_against_references(device):
    dt = clgrad.float64 if device.has_fp64 else clgrad.float32
    x = clgrad.tensor(POINTS, dtype=dt)
    assert_close(clgrad.lgamma(x), [math.lgamma(v) for v in POINTS], dt)
    assert_close(x.digamma(), np_polygamma(0, POINTS), dt, rtol=1e-6, atol=1e-6)
    for n in (1, 2, 3):
        assert_close(clgrad.polygamma(n, x), np_polygamma(n, POINTS), dt, rtol=1e-6)
    assert_close(x.polygamma(0), x.digamma(), dt)
    # torch's values at the poles
    poles = clgrad.tensor([0.0, -0.0, -1.0, -2.0], dtype=dt)
    assert to_np(clgrad.lgamma(poles)).tolist() == [math.inf] * 4
    psi = to_np(clgrad.digamma(poles))
    assert psi[0] == -math.inf and psi[1] == math.inf and np.isnan(psi[2:]).all()
    p = clgrad.tensor([2.5, 3.0, 7.25], dtype=dt)
    ref = [sum(math.lgamma(v - i / 2) for i in range(3)) + 1.5 * math.log(math.pi)
           for v in (2.5, 3.0, 7.25)]
    assert_close(clgrad.mvlgamma(p, 3), ref, dt)


def test_dtypes_layouts_and_inplace(device):
    for dt in float_dtypes(device):
        tol = {clgrad.float16: 2e-2, clgrad.bfloat16: 5e-2}.get(dt, 1e-5)
        a = np.array([[0.5, 1.5, 2.5], [3.5, 4.5, 12.0]])
        for layout in ("contiguous", "transposed"):
            t = make(a, dt, device, layout)
            want = np.array([[math.lgamma(v) for v in row] for row in a])
            assert_close(clgrad.lgamma(t), want, dt, rtol=tol, atol=tol)
            assert clgrad.digamma(t).dtype is dt
    ints = clgrad.tensor([1, 2, 3])                          # promoted to the default float
    assert clgrad.lgamma(ints).dtype is clgrad.float32
    assert clgrad.digamma(clgrad.zeros(0)).shape == (0,)
    assert clgrad.lgamma(clgrad.tensor(4.0)).item() == pytest.approx(math.log(6))
    y = clgrad.tensor([1.0, 2.0])
    y.polygamma_(1)
    assert_close(y, np_polygamma(1, np.array([1.0, 2.0])), clgrad.float32)
    z = clgrad.tensor([2.0, 3.0])
    z.mvlgamma_(2)
    assert_close(z, [math.lgamma(2) + math.lgamma(1.5) + 0.5 * math.log(math.pi),
                     math.lgamma(3) + math.lgamma(2.5) + 0.5 * math.log(math.pi)], clgrad.float32)
    w = clgrad.tensor([3.0])
    w.lgamma_()
    assert w.item() == pytest.approx(math.log(2))


def test_gradients(device):
    dt = clgrad.float64 if device.has_fp64 else clgrad.float32
    tol = {} if device.has_fp64 else dict(eps=1e-2, atol=1e-2, rtol=1e-2)
    x = clgrad.tensor([0.7, 1.9, 4.2, -0.4], dtype=dt, requires_grad=True)
    for f in (clgrad.lgamma, clgrad.digamma, lambda t: clgrad.polygamma(2, t),
              lambda t: clgrad.mvlgamma(t.abs() + 2, 2)):
        assert gradcheck(f, (x,), **tol)
    assert gradgradcheck(clgrad.lgamma, (x,), **tol)


def test_errors():
    with pytest.raises(RuntimeError, match="negative n"):
        clgrad.polygamma(-1, clgrad.ones(2))
    with pytest.raises(RuntimeError, match=r"greater than \(p-1\)/2 = 1.0"):
        clgrad.mvlgamma(clgrad.tensor([0.9, 3.0]), 3)
    with pytest.raises(RuntimeError, match="p has to be greater"):
        clgrad.mvlgamma(clgrad.ones(1), 0)


def test_special_namespace(device):
    sp = clgrad.special
    x = np.array([-37.0, -21.0, -19.0, -3.0, 0.0, 2.5])
    t = clgrad.tensor(x, dtype=clgrad.float64 if device.has_fp64 else clgrad.float32)
    ndtr = [0.5 * math.erfc(-v / math.sqrt(2)) for v in x]
    assert_close(sp.ndtr(t)[3:], ndtr[3:], t.dtype)
    if device.has_fp64:
        assert_close(sp.log_ndtr(t), [math.log(v) for v in ndtr], t.dtype, rtol=1e-9)
    p = clgrad.tensor([0.025, 0.5, 0.975])
    assert_close(sp.ndtri(p), [-1.959964, 0.0, 1.959964], clgrad.float32, atol=1e-4)
    assert to_np(sp.entr(clgrad.tensor([0.0, 0.5, -1.0]))).tolist() == \
        [0.0, pytest.approx(0.5 * math.log(2)), -math.inf]
    e = clgrad.tensor([0.0, 0.5], requires_grad=True)
    sp.entr(e).sum().backward()                       # finite where the log is not taken
    assert np.isfinite(to_np(e.grad)).all()
    assert sp.xlog1py(clgrad.tensor([0.0, 2.0]), clgrad.tensor([-1.0, 1.0])).tolist() == \
        [0.0, pytest.approx(2 * math.log(2))]
    assert sp.gammaln is clgrad.lgamma and sp.psi is clgrad.digamma
    assert sp.expit(clgrad.tensor([0.0])).item() == 0.5
    assert sp.softmax(clgrad.tensor([1.0, 1.0]), 0).tolist() == [0.5, 0.5]
