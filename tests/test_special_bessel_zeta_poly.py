"""Bessel functions, erfcx, Hurwitz zeta, the incomplete gamma functions and the orthogonal
polynomials (table kernels), against references computed here in float64 by other means:
quadrature of integral representations, closed forms, numpy's polynomial module."""
import math

import numpy as np
import pytest
from numpy.polynomial import chebyshev as C, hermite as H, hermite_e as HE, laguerre as LA
from numpy.polynomial import legendre as LE

import clgrad
from clgrad.autograd import gradcheck, gradgradcheck

from helpers import assert_close, float_dtypes, make, to_np

sp = clgrad.special
NODES, WEIGHTS = np.polynomial.legendre.leggauss(400)


def _gauss(f, a, b):
    """Gauss-Legendre quadrature of f over [a, b] (f smooth: converges exponentially)."""
    t = 0.5 * (b - a) * NODES + 0.5 * (b + a)
    return 0.5 * (b - a) * (WEIGHTS * f(t)).sum()


def _periodic(f, m=400):
    """(1/pi) times the integral of f over [0, pi] for f smooth and even about 0 and pi: the
    trapezoid rule, exact to rounding for such integrands."""
    t = np.linspace(0, np.pi, m + 1)
    v = f(t)
    return (v.sum() - 0.5 * (v[0] + v[-1])) / m


def ref_i(n, x, scaled=False):
    ax = abs(x)
    v = _periodic(lambda t: np.exp(ax * (np.cos(t) - (1 if scaled else 0))) * np.cos(n * t))
    return -v if n and x < 0 else v


def ref_j(n, x):
    return _periodic(lambda t: np.cos(n * t - x * np.sin(t)))


def ref_y(n, x):
    first = _gauss(lambda t: np.sin(x * np.sin(t) - n * t), 0.0, math.pi) / math.pi
    end = math.asinh(60.0 / x) + 1
    second = _gauss(lambda t: (np.exp(n * t) + (-1) ** n * np.exp(-n * t))
                    * np.exp(-x * np.sinh(t)), 0.0, end)
    return first - second / math.pi


def ref_k(n, x, scaled=False):
    end = math.acosh(1 + 60.0 / x) + 1
    return _gauss(lambda t: np.exp(-x * (np.cosh(t) - (1 if scaled else 0))) * np.cosh(n * t),
                  0.0, end)


def ref_jnu(nu, z):
    """Bessel J of any real order: Schlaefli's integral."""
    first = _gauss(lambda t: np.cos(nu * t - z * np.sin(t)), 0.0, math.pi) / math.pi
    end = math.asinh(60.0 / z) + 1
    return first - math.sin(nu * math.pi) / math.pi * _gauss(
        lambda t: np.exp(-z * np.sinh(t) - nu * t), 0.0, end)


def ref_airy(x):
    """Ai through Bessel functions of order 1/3 of zeta = 2/3 |x|^3/2."""
    if x == 0:
        return 1 / (3 ** (2 / 3) * math.gamma(2 / 3))
    z = 2 / 3 * abs(x) ** 1.5
    if x > 0:
        end = math.acosh(1 + 60.0 / z) + 1
        k = _gauss(lambda t: np.exp(-z * np.cosh(t)) * np.cosh(t / 3), 0.0, end)
        return math.sqrt(x / 3) / math.pi * k
    return math.sqrt(-x) / 3 * (ref_jnu(1 / 3, z) + ref_jnu(-1 / 3, z))


def ref_erfcx(x):
    if x < 8:
        return math.exp(x * x) * math.erfc(x)
    # the asymptotic series 1 / (x sqrt(pi)) sum (-1)^k (2k - 1)!! / (2 x^2)^k
    s, t = 1.0, 1.0
    for k in range(1, 30):
        t *= -(2 * k - 1) / (2 * x * x)
        s += t
    return s / (x * math.sqrt(math.pi))


def ref_zeta(s, q, K=400):
    """Direct sum of K terms and the Euler-Maclaurin tail to the fifth derivative."""
    k = np.arange(K)
    a = q + K
    tail = (a ** (1 - s) / (s - 1) + 0.5 * a ** -s + s / 12 * a ** (-s - 1)
            - s * (s + 1) * (s + 2) / 720 * a ** (-s - 3)
            + s * (s + 1) * (s + 2) * (s + 3) * (s + 4) / 30240 * a ** (-s - 5))
    return (1.0 / (k + q) ** s).sum() + tail


def ref_igammac(a, x):
    """Q(a, x) for a integer or half-integer: Q(1, x) = e^-x, Q(1/2, x) = erfc(sqrt(x)), and
    Q(a + 1, x) = Q(a, x) + x^a e^-x / Gamma(a + 1)."""
    b = 0.5 if a != int(a) else 1.0
    q = math.erfc(math.sqrt(x)) if b == 0.5 else math.exp(-x)
    while b < a:
        q += math.exp(b * math.log(x) - x - math.lgamma(b + 1))
        b += 1
    return q


def ref_poly(name, x, n):
    x = np.asarray(x, dtype=np.float64)
    if name.startswith("shifted_"):
        return ref_poly(name[len("shifted_"):], 2 * x - 1, n)
    e = [0.0] * n + [1.0]
    if name == "chebyshev_polynomial_t":
        return C.chebval(x, e)
    if name == "chebyshev_polynomial_u":      # U_n = 2 (T_n + T_n-2 + ...) - [n even]
        return 2 * C.chebval(x, [1.0 if (n - j) % 2 == 0 else 0.0 for j in range(n + 1)]) - \
            (n % 2 == 0)
    if name in ("chebyshev_polynomial_v", "chebyshev_polynomial_w"):   # V, W = U_n -+ U_n-1
        u = ref_poly("chebyshev_polynomial_u", x, n)
        prev = ref_poly("chebyshev_polynomial_u", x, n - 1) if n else 0
        return u - prev if name.endswith("v") else u + prev
    return {"hermite_polynomial_h": H.hermval, "hermite_polynomial_he": HE.hermeval,
            "laguerre_polynomial_l": LA.lagval, "legendre_polynomial_p": LE.legval}[name](x, e)


def _dt(device):
    return clgrad.float64 if device.has_fp64 else clgrad.float32


def _tol(dt, r64=1e-12):
    return dict(rtol=r64, atol=r64) if dt is clgrad.float64 else dict(rtol=2e-6, atol=2e-6)


X = np.array([-31.0, -12.5, -3.7, -0.6, -1e-3, 0.0, 2e-9, 0.3, 1.0, 2.0, 4.9, 9.5, 11.0, 19.5,
              20.5, 24.0, 26.0, 40.0])
POS = X[X > 0]


def test_modified_bessel_i(device):
    dt = _dt(device)
    x = clgrad.tensor(X, dtype=dt, device=device)
    for n in (0, 1):
        for scaled in (False, True):
            want = [ref_i(n, v, scaled) for v in X]
            f = {(0, False): clgrad.i0, (0, True): sp.i0e, (1, False): sp.i1,
                 (1, True): sp.i1e}[(n, scaled)]
            got = f(x)
            assert got.dtype is dt
            assert_close(got, want, dt, **_tol(dt))
    assert_close(sp.modified_bessel_i0(x), to_np(clgrad.i0(x)), dt, rtol=0, atol=0)
    assert_close(sp.modified_bessel_i1(x), to_np(sp.i1(x)), dt, rtol=0, atol=0)
    # torch's values at the infinities and NaN
    edge = clgrad.tensor([math.inf, -math.inf, math.nan], dtype=dt, device=device)
    assert np.isnan(to_np(clgrad.i0(edge))).all() and np.isnan(to_np(sp.i1(edge))).all()
    assert to_np(sp.i0e(edge))[:2].tolist() == [0.0, 0.0]


def test_bessel_j_y_k(device):
    dt = _dt(device)
    x = clgrad.tensor(X, dtype=dt, device=device)
    p = clgrad.tensor(POS, dtype=dt, device=device)
    # absolute error on the oscillating ones (their zeros make relative error meaningless)
    assert_close(sp.bessel_j0(x), [ref_j(0, v) for v in X], dt, rtol=0, atol=_tol(dt)["atol"])
    assert_close(sp.bessel_j1(x), [ref_j(1, v) for v in X], dt, rtol=0, atol=_tol(dt)["atol"])
    y0 = [ref_y(0, v) for v in POS]
    y1 = [ref_y(1, v) for v in POS]
    assert_close(sp.bessel_y0(p), y0, dt, **_tol(dt))
    assert_close(sp.bessel_y1(p), y1, dt, **_tol(dt))
    for n, f, fs in ((0, sp.modified_bessel_k0, sp.scaled_modified_bessel_k0),
                     (1, sp.modified_bessel_k1, sp.scaled_modified_bessel_k1)):
        assert_close(f(p), [ref_k(n, v) for v in POS], dt, **_tol(dt, 1e-11))
        assert_close(fs(p), [ref_k(n, v, True) for v in POS], dt, **_tol(dt, 1e-11))
    with np.errstate(all="ignore"):
        assert_close(sp.spherical_bessel_j0(x), np.where(X == 0, 1.0, np.sin(X) / X), dt,
                     **_tol(dt))
    # torch's values at the edges: Y and K are -inf / inf at 0 and NaN below
    edge = clgrad.tensor([0.0, -1.0, math.inf], dtype=dt, device=device)
    assert to_np(sp.bessel_y0(edge))[0] == -math.inf and np.isnan(to_np(sp.bessel_y1(edge))[1])
    assert to_np(sp.modified_bessel_k1(edge)).tolist()[::2] == [math.inf, 0.0]
    assert np.isnan(to_np(sp.scaled_modified_bessel_k0(edge))[1])


def test_airy_ai(device):
    dt = _dt(device)
    xs = np.array([-12.0, -8.5, -8.1, -5.5, -5.2, -1.3, 0.0, 0.7, 1.0, 1.1, 2.5, 6.0, 10.0])
    got = sp.airy_ai(clgrad.tensor(xs, dtype=dt, device=device))
    want = [ref_airy(v) for v in xs]
    if dt is clgrad.float64:   # relative where Ai decays (x > 0), absolute where it oscillates
        assert_close(got[xs > 0], np.array(want)[xs > 0], dt, rtol=1e-12, atol=0)
        assert_close(got, want, dt, rtol=0, atol=1e-13)
    else:
        assert_close(got, want, dt, rtol=5e-6, atol=2e-6)
    edge = clgrad.tensor([math.inf, -math.inf, math.nan], dtype=dt, device=device)
    assert np.isnan(to_np(sp.airy_ai(edge))).all()                # torch's values
    assert not sp.airy_ai(edge.requires_grad_()).requires_grad


def test_erfcx_zeta_igamma(device):
    dt = _dt(device)
    xs = np.array([-5.0, -1.0, 0.0, 0.5, 2.4, 2.6, 7.0, 30.0, 1e4])
    assert_close(sp.erfcx(clgrad.tensor(xs, dtype=dt, device=device)),
                 [ref_erfcx(v) for v in xs], dt, **_tol(dt))
    s = np.array([1.01, 1.5, 2.0, 3.3, 7.0, 25.0])
    q = np.array([0.05, 1.0, 2.5, 0.7, 40.0, 3.0])
    got = sp.zeta(clgrad.tensor(s, dtype=dt, device=device),
                  clgrad.tensor(q, dtype=dt, device=device))
    assert_close(got, [ref_zeta(a, b) for a, b in zip(s, q)], dt, **_tol(dt))
    one = clgrad.tensor([1.0], dtype=dt, device=device)
    assert sp.zeta(2.0, one).item() == pytest.approx(math.pi ** 2 / 6)
    # torch's values outside x > 1, q > 0: inf at x = 1 and at integer q <= 0, NaN for x < 1
    edge = sp.zeta(clgrad.tensor([1.0, 0.5, 2.0, 2.5], dtype=dt, device=device),
                   clgrad.tensor([1.0, 1.0, -2.0, -1.5], dtype=dt, device=device))
    e = to_np(edge)
    assert e[0] == math.inf and np.isnan(e[1]) and e[2] == math.inf and np.isnan(e[3])
    a = np.array([0.5, 1.0, 1.5, 3.0, 4.5, 10.0, 12.5, 2.0])
    x = np.array([0.2, 3.0, 1.0, 2.0, 9.0, 8.0, 14.0, 30.0])
    qs = np.array([ref_igammac(u, v) for u, v in zip(a, x)])
    ta, tx = clgrad.tensor(a, dtype=dt, device=device), clgrad.tensor(x, dtype=dt, device=device)
    assert_close(clgrad.igammac(ta, tx), qs, dt, **_tol(dt))
    assert_close(sp.gammainc(ta, tx), 1 - qs, dt, **_tol(dt))
    assert_close(ta.igamma(tx) + sp.gammaincc(ta, tx), np.ones(len(a)), dt, **_tol(dt))
    # torch's edge values
    ea = clgrad.tensor([0.0, 0.0, 1.0, -1.0, math.inf, 2.0], dtype=dt, device=device)
    ex = clgrad.tensor([0.0, 1.0, 0.0, 1.0, 1.0, math.inf], dtype=dt, device=device)
    lo = to_np(clgrad.igamma(ea, ex))
    assert np.isnan(lo[[0, 3]]).all() and lo[[1, 2, 4, 5]].tolist() == [1.0, 0.0, 0.0, 1.0]


POLYS = ["chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
         "chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
         "laguerre_polynomial_l", "legendre_polynomial_p", "shifted_chebyshev_polynomial_t",
         "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
         "shifted_chebyshev_polynomial_w"]


def test_orthogonal_polynomials(device):
    dt = _dt(device)
    xs = np.array([-1.0, -0.7, 0.0, 0.3, 0.9, 1.0, 1.6])
    ns = np.array([0, 1, 2, 3, 5, 9, 12, 2.7, -1.0])       # 2.7 is truncated, n < 0 gives 0
    gx, gn = np.meshgrid(xs, ns, indexing="ij")
    x, n = clgrad.tensor(gx, dtype=dt, device=device), clgrad.tensor(gn, dtype=dt, device=device)
    tol = 1e-11 if dt is clgrad.float64 else 2e-5
    for name in POLYS:
        got = to_np(getattr(sp, name)(x, n))
        want = np.stack([ref_poly(name, xs, int(v)) if v >= 0 else 0 * xs for v in ns], 1)
        assert np.all(np.abs(got - want) <= tol * np.maximum(1.0, np.abs(want))), name
    # n a number; x a number and n a tensor
    assert_close(sp.legendre_polynomial_p(x[:, 0], 3), ref_poly("legendre_polynomial_p", xs, 3),
                 dt, **_tol(dt))
    three = clgrad.tensor([3.0], dtype=dt, device=device)
    assert sp.chebyshev_polynomial_t(0.5, three).item() == -1.0
    assert sp.legendre_polynomial_p(clgrad.tensor([1, 2], device=device), 2).dtype is clgrad.float32


def test_dtypes_layouts_inplace(device):
    a = np.array([[0.5, 1.5, 2.5], [3.5, 4.5, 12.0]])
    # every float dtype (16-bit ones computed in float32), contiguous and strided kernels; a few
    # functions only: each kernel's first launch is compiled, which costs more than the test
    for dt in float_dtypes(device):
        tol = {clgrad.float16: 2e-2, clgrad.bfloat16: 5e-2}.get(dt, 1e-5)
        for layout in ("contiguous", "transposed") if dt is clgrad.float32 else ("contiguous",):
            t = make(a, dt, device, layout)
            got = sp.i1(t)
            assert got.dtype is dt and got.shape == t.shape
            assert_close(got, [[ref_i(1, v) for v in row] for row in a], dt, rtol=tol, atol=tol)
            got = sp.chebyshev_polynomial_t(t, 3)
            assert_close(got, ref_poly("chebyshev_polynomial_t", a, 3), dt, rtol=tol, atol=tol)
    assert sp.erfcx(clgrad.zeros(0, device=device)).shape == (0,)
    assert sp.zeta(clgrad.zeros(0, device=device) + 2, 1.0).shape == (0,)
    assert clgrad.i0(clgrad.tensor(0.0, device=device)).item() == 1.0
    assert clgrad.i0(clgrad.tensor([1, 2], device=device)).dtype is clgrad.float32
    y = clgrad.tensor([1.0, 2.0], device=device)
    y.i0_()
    assert_close(y, [ref_i(0, 1.0), ref_i(0, 2.0)], clgrad.float32)
    z = clgrad.tensor([1.0, 2.0], device=device)
    z.igammac_(clgrad.tensor([1.0, 1.0], device=device))
    assert_close(z, [ref_igammac(1.0, 1.0), ref_igammac(2.0, 1.0)], clgrad.float32)


def test_gradients(device):
    dt = _dt(device)
    tol = {} if device.has_fp64 else dict(eps=1e-2, atol=1e-2, rtol=1e-2)
    x = clgrad.tensor([-2.5, -0.3, 0.0, 0.7, 3.1, 22.0], dtype=dt, device=device,
                      requires_grad=True)
    for f in (clgrad.i0, sp.i0e, sp.i1, sp.i1e, sp.erfcx):
        assert gradcheck(f, (x,), **tol)
    xn = x.detach()[x.detach() != 0].requires_grad_()     # i0e, i1e: |x| has a kink at 0
    for f in (clgrad.i0, sp.i1e):
        assert gradgradcheck(f, (xn,), **tol)
    # i1's gradient at 0 is 0.5, as torch's formula gives it there
    z = clgrad.tensor([0.0], dtype=dt, device=device, requires_grad=True)
    sp.i1(z).sum().backward()
    assert z.grad.item() == 0.5
    q = clgrad.tensor([0.5, 1.3, 4.0], dtype=dt, device=device, requires_grad=True)
    s = clgrad.tensor([2.0, 3.5, 1.5], dtype=dt, device=device)
    assert gradcheck(lambda t: sp.zeta(s, t), (q,), **tol)
    assert gradcheck(lambda t: sp.zeta(2.5, t), (q,), **tol)
    a = clgrad.tensor([0.5, 2.0, 7.5], dtype=dt, device=device)
    xx = clgrad.tensor([0.3, 2.5, 12.0], dtype=dt, device=device, requires_grad=True)
    assert gradcheck(lambda t: clgrad.igamma(a, t), (xx,), **tol)
    assert gradcheck(lambda t: clgrad.igammac(a, t), (xx,), **tol)
    assert gradgradcheck(lambda t: clgrad.igamma(a, t), (xx,), **tol)


def test_torch_gradient_rules_and_errors(device):
    dt = _dt(device)
    a = clgrad.tensor([1.5, 2.0], dtype=dt, device=device, requires_grad=True)
    x = clgrad.tensor([2.0, 3.0], dtype=dt, device=device)
    out = clgrad.igamma(a, x)
    assert out.grad_fn.name() == "IgammaBackward0"
    with pytest.raises(NotImplementedError, match="derivative for 'igamma: input'"):
        out.sum().backward()
    with pytest.raises(NotImplementedError, match="derivative for 'igammac: input'"):
        clgrad.igammac(a, x).sum().backward()
    with pytest.raises(NotImplementedError, match="derivative for 'zeta' is not"):
        sp.zeta(a + 1, x).sum().backward()
    # no gradient at all in torch: the result does not require grad
    for f in (sp.bessel_j0, sp.bessel_y1, sp.modified_bessel_k0, sp.modified_bessel_i0,
              sp.spherical_bessel_j0):
        assert not f(a).requires_grad
    assert not sp.hermite_polynomial_h(a, 3).requires_grad
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        clgrad.igamma(clgrad.tensor([1, 2], device=device), clgrad.tensor([1, 2], device=device))
    with pytest.raises(TypeError, match="igamma.*must be Tensor"):
        clgrad.igamma(a, 2.0)
    with pytest.raises(TypeError, match="must be Tensor"):
        sp.bessel_j0(1.0)
    with pytest.raises(TypeError, match="at least one Tensor"):
        sp.zeta(2.0, 1.0)
