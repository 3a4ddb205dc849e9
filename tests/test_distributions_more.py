"""The less common classes of clgrad.distributions (Pareto, Weibull, InverseGamma, Kumaraswamy,
LogisticNormal, NegativeBinomial, FisherSnedecor, GeneralizedPareto, ContinuousBernoulli,
VonMises, LKJCholesky, Wishart): densities against closed forms or numerical integrals computed
here with numpy and math, and sample moments at fixed seeds."""
import math

import numpy as np

import clgrad
import clgrad.distributions as D

F64 = clgrad.float64
lg = np.vectorize(math.lgamma)


def c(x):
    return clgrad.tensor(np.asarray(x, dtype=np.float64), dtype=F64)


def close(a, b, rtol=1e-6, atol=1e-9):
    a = a.detach().numpy() if isinstance(a, clgrad.Tensor) else np.asarray(a)
    np.testing.assert_allclose(a, np.asarray(b, dtype=np.float64), rtol=rtol, atol=atol)


def integral(f, lo, hi, n=200001):
    x = np.linspace(lo, hi, n)
    y = f(x)
    return float(((y[1:] + y[:-1]) / 2 * np.diff(x)).sum())


def test_heavy_tailed_and_positive(device):
    x = np.array([1.3, 2.5])
    sc, al = np.array([1.0, 2.0]), np.array([3.0, 1.5])
    close(D.Pareto(c(sc), c(al)).log_prob(c([1.3, 2.5])),
          np.log(al) + al * np.log(sc) - (al + 1) * np.log(x))
    close(D.Pareto(c(sc), c(al)).mean, [1.5, 6.0])
    lam, k = np.array([1.0, 2.0]), np.array([3.0, 1.5])
    d = D.Weibull(c(lam), c(k))
    close(d.log_prob(c(x)), np.log(k / lam) + (k - 1) * np.log(x / lam) - (x / lam) ** k)
    close(d.cdf(c(x)), 1 - np.exp(-(x / lam) ** k))
    a, b = np.array([3.0, 1.5]), np.array([1.0, 2.0])
    d = D.InverseGamma(c(a), c(b))
    close(d.log_prob(c(x)), a * np.log(b) - lg(a) - (a + 1) * np.log(x) - b / x)
    assert d.mean.tolist()[1] == 4.0 and d.variance.tolist()[1] == math.inf
    d1, d2 = np.array([3.0, 5.5]), np.array([6.0, 3.0])
    d = D.FisherSnedecor(c(d1), c(d2))
    close(d.log_prob(c(x)), lg((d1 + d2) / 2) - lg(d1 / 2) - lg(d2 / 2) + d1 / 2 * np.log(d1 / d2)
          + (d1 / 2 - 1) * np.log(x) - (d1 + d2) / 2 * np.log1p(d1 * x / d2))
    conc = np.array([-0.2, 0.3])
    loc, scale = np.array([0.0, 1.0]), np.array([1.0, 2.0])
    v = np.array([0.4, 1.7])
    d = D.GeneralizedPareto(c(loc), c(scale), c(conc))
    z = (v - loc) / scale
    close(d.log_prob(c(v)), -np.log(scale) - (1 / conc + 1) * np.log1p(conc * z))
    close(d.cdf(d.icdf(c([0.3, 0.7]))), [0.3, 0.7])
    close(D.GeneralizedPareto(0.0, 1.0, 0.0).log_prob(c(1.5)), -1.5)


def test_unit_interval_and_simplex(device):
    a, b, x = np.array([3.0, 0.5]), np.array([1.0, 2.0]), np.array([0.3, 0.7])
    close(D.Kumaraswamy(c(a), c(b)).log_prob(c(x)),
          np.log(a * b) + (a - 1) * np.log(x) + (b - 1) * np.log1p(-x ** a))
    for p in (0.2, 0.5, 0.9):
        d = D.ContinuousBernoulli(probs=c([p]))
        dens = lambda t: np.exp(d.log_prob(c(t[:, None])).numpy()[:, 0])  # noqa: E731
        assert abs(integral(dens, 1e-9, 1 - 1e-9) - 1) < 1e-6
        assert abs(integral(lambda t: t * dens(t), 1e-9, 1 - 1e-9) - d.mean.item()) < 1e-6
        close(d.cdf(d.icdf(c([0.25]))), [0.25])
    # LogisticNormal of one coordinate: y = (sigmoid(x), 1 - sigmoid(x)), x ~ Normal(m, s)
    m, s, y0 = 0.4, 1.5, 0.3
    d = D.LogisticNormal(c([m]), c([s]))
    xv = math.log(y0 / (1 - y0))
    want = (-((xv - m) ** 2) / (2 * s * s) - math.log(s * math.sqrt(2 * math.pi))
            - math.log(y0 * (1 - y0)))
    close(d.log_prob(c([y0, 1 - y0])), want)


def test_discrete_and_circular(device):
    r, p, k = np.array([3.0, 5.5]), np.array([0.3, 0.8]), np.array([2.0, 7.0])
    d = D.NegativeBinomial(c(r), probs=c(p))
    close(d.log_prob(c(k)), lg(r + k) - lg(k + 1) - lg(r) + r * np.log1p(-p) + k * np.log(p))
    close(d.mean, r * p / (1 - p))
    kappa, mu = np.array([1.0, 20.0]), np.array([0.5, -1.0])
    d = D.VonMises(c(mu), c(kappa))
    close(d.log_prob(c([0.3, 1.2])),
          kappa * np.cos(np.array([0.3, 1.2]) - mu) - np.log(2 * math.pi * np.i0(kappa)),
          rtol=1e-9)


def test_matrix_distributions(device):
    # LKJCholesky in 2-d: the free coordinate is L[1, 0] = r, and the density integrates to 1
    # (it is (1 - r^2)^(eta - 1) / B(eta, eta) / 2^(2 eta - 1))
    for eta in (0.5, 1.0, 3.0):
        d = D.LKJCholesky(2, c(eta))

        def dens_t(t):       # r = sin(t) takes away the endpoint singularity of eta < 1
            L = np.zeros((t.size, 2, 2))
            L[:, 0, 0] = 1
            L[:, 1, 0] = np.sin(t)
            L[:, 1, 1] = np.cos(t)
            return np.exp(d.log_prob(c(L)).numpy()) * np.cos(t)
        total = integral(dens_t, -math.pi / 2 + 1e-6, math.pi / 2 - 1e-6)
        assert abs(total - 1) < 1e-3, (eta, total)
    # 1-d Wishart(df, s2) is Gamma(df / 2, rate 1 / (2 s2))
    w = D.Wishart(c(5.0), covariance_matrix=c([[2.0]]))
    close(w.log_prob(c([[3.0]])), D.Gamma(c(2.5), c(0.25)).log_prob(c(3.0)).reshape(()))
    close(D.Wishart(c(5.0), precision_matrix=c([[0.5]])).log_prob(c([[3.0]])),
          w.log_prob(c([[3.0]])))


def test_sample_moments(device):
    clgrad.manual_seed(21)
    n = 40000

    def mean_of(d, want, tol=0.03):
        s = d.sample((n,)).numpy()
        np.testing.assert_allclose(s.mean(0), want, rtol=tol, atol=tol)
        return s

    mean_of(D.Pareto(c([1.0]), c([4.0])), [4 / 3])
    w = D.Weibull(c([1.0, 2.0]), c([3.0, 1.5]))
    mean_of(w, w.mean.numpy())
    mean_of(D.InverseGamma(c([4.0]), c([3.0])), [1.0])
    mean_of(D.Kumaraswamy(c([3.0, 0.5]), c([1.0, 2.0])),
            D.Kumaraswamy(c([3.0, 0.5]), c([1.0, 2.0])).mean.numpy())
    mean_of(D.NegativeBinomial(c([3.0, 5.5]), probs=c([0.3, 0.8])), [9 / 7, 22.0], tol=0.04)
    mean_of(D.FisherSnedecor(c([4.0]), c([10.0])), [1.25])
    mean_of(D.GeneralizedPareto(c([0.0]), c([1.0]), c([0.2])), [1.25])
    mean_of(D.ContinuousBernoulli(probs=c([0.2, 0.9])),
            D.ContinuousBernoulli(probs=c([0.2, 0.9])).mean.numpy())
    s = mean_of(D.LogisticNormal(c([0.0, 0.0]), c([0.3, 0.3])), [1 / 3] * 3, tol=0.05)
    np.testing.assert_allclose(s.sum(-1), 1, rtol=1e-5)
    # von Mises: the circular mean and 1 - |E e^{ix}| (the circular variance)
    d = D.VonMises(c([0.5, -1.0]), c([1.0, 20.0]))
    s = d.sample((n,)).numpy()
    z = np.exp(1j * s).mean(0)
    np.testing.assert_allclose(np.angle(z), [0.5, -1.0], atol=0.03)
    np.testing.assert_allclose(1 - np.abs(z), d.variance.numpy(), atol=0.01)
    # LKJ(eta) in 3-d: each correlation has variance 1 / (2 eta + 2)
    L = D.LKJCholesky(3, c([0.5, 2.0])).sample((8000,))
    r = (L @ L.mT).numpy()[:, :, 0, 1]
    np.testing.assert_allclose(r.var(0), [1 / 3, 1 / 6], rtol=0.06)
    w = D.Wishart(c([6.0]), covariance_matrix=c([[2.0, 0.5], [0.5, 1.0]]))
    np.testing.assert_allclose(w.sample((n,)).numpy().mean(0), w.mean.numpy(), rtol=0.03)
