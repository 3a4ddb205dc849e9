"""clgrad.distributions against closed forms computed here with numpy and math (scipy is not
installed): log_prob, entropy, cdf, icdf and moments; sample moments at fixed seeds; rsample
gradients (gradcheck in float64, the gamma sampler's implicit gradient against the cdf's);
KL against closed forms and Monte Carlo; torch's validation errors; shapes; transforms."""
import math

import numpy as np
import pytest

import clgrad
import clgrad.distributions as D
from clgrad.distributions import constraints, transforms as T

F64 = clgrad.float64


def c(x, dtype=F64):
    return clgrad.tensor(np.asarray(x, dtype=np.float64), dtype=dtype)


def close(a, b, rtol=1e-6, atol=1e-9):
    a = a.detach().numpy() if isinstance(a, clgrad.Tensor) else np.asarray(a)
    np.testing.assert_allclose(a, np.asarray(b, dtype=np.float64), rtol=rtol, atol=atol)


lg = np.vectorize(math.lgamma)
erf = np.vectorize(math.erf)


def digamma(x):
    x = np.asarray(x, dtype=np.float64)
    acc = np.zeros_like(x)
    while (x < 8).any():
        acc -= np.where(x < 8, 1 / x, 0)
        x = np.where(x < 8, x + 1, x)
    z = 1 / (x * x)
    return acc + np.log(x) - 0.5 / x - z * (1 / 12 - z * (1 / 120 - z * (1 / 252 - z / 240)))


# ---- densities, entropies, cdfs against closed forms --------------------------------------------
def test_continuous_closed_forms(device):
    loc, scale, v = np.array([0.5, -1.0]), np.array([1.0, 2.0]), np.array([0.3, 1.2])
    d = D.Normal(c(loc), c(scale))
    close(d.log_prob(c(v)), -((v - loc) ** 2) / (2 * scale ** 2) - np.log(scale)
          - 0.5 * math.log(2 * math.pi))
    close(d.entropy(), 0.5 + 0.5 * math.log(2 * math.pi) + np.log(scale))
    close(d.cdf(c(v)), 0.5 * (1 + erf((v - loc) / (scale * math.sqrt(2)))))
    close(d.cdf(d.icdf(c([0.3, 0.8]))), [0.3, 0.8])
    d = D.LogNormal(c(loc), c(scale))
    close(d.log_prob(c(v)), -((np.log(v) - loc) ** 2) / (2 * scale ** 2) - np.log(scale * v)
          - 0.5 * math.log(2 * math.pi))
    close(d.mean, np.exp(loc + scale ** 2 / 2))
    d = D.Laplace(c(loc), c(scale))
    close(d.log_prob(c(v)), -np.log(2 * scale) - np.abs(v - loc) / scale)
    close(d.icdf(d.cdf(c(v))), v)
    d = D.Cauchy(c(loc), c(scale))
    close(d.log_prob(c(v)), -np.log(math.pi * scale * (1 + ((v - loc) / scale) ** 2)))
    close(d.cdf(c(v)), np.arctan((v - loc) / scale) / math.pi + 0.5)
    d = D.Gumbel(c(loc), c(scale))
    z = (v - loc) / scale
    close(d.log_prob(c(v)), -np.log(scale) - z - np.exp(-z))
    close(d.mean, loc + scale * 0.5772156649015329)
    d = D.Uniform(c([0.0, -1.0]), c([1.0, 2.0]))
    close(d.log_prob(c(v)), -np.log([1.0, 3.0]))
    close(d.cdf(c(v)), [0.3, 2.2 / 3])
    out = D.Uniform(c([0.0]), c([1.0]), validate_args=False).log_prob(c([-0.5]))
    assert out.item() == -math.inf
    d = D.Exponential(c([0.5, 2.0]))
    close(d.log_prob(c(v)), np.log([0.5, 2.0]) - np.array([0.5, 2.0]) * v)
    close(d.icdf(d.cdf(c(v))), v)
    d = D.HalfNormal(c(scale))
    close(d.log_prob(c(v)), 0.5 * math.log(2 / math.pi) - np.log(scale) - v ** 2 / (2 * scale ** 2))


def test_gamma_family_closed_forms(device):
    a, r, v = np.array([0.5, 3.0]), np.array([1.0, 2.0]), np.array([0.3, 1.2])
    d = D.Gamma(c(a), c(r))
    close(d.log_prob(c(v)), a * np.log(r) + (a - 1) * np.log(v) - r * v - lg(a))
    close(d.entropy(), a - np.log(r) + lg(a) + (1 - a) * digamma(a), rtol=1e-6)
    close(d.mean, a / r)
    close(d.variance, a / r ** 2)
    close(D.Chi2(c([3.0])).log_prob(c([2.0])),
          [0.5 * math.log(2) - 1.5 * math.log(2) - 1 - math.lgamma(1.5)])
    b = np.array([1.5, 2.0])
    d = D.Beta(c(a), c(b))
    x = np.array([0.3, 0.8])
    close(d.log_prob(c(x)), (a - 1) * np.log(x) + (b - 1) * np.log1p(-x) + lg(a + b) - lg(a)
          - lg(b))
    close(d.variance, a * b / ((a + b) ** 2 * (a + b + 1)))
    conc = np.array([0.5, 1.0, 2.0])
    p = np.array([0.2, 0.3, 0.5])
    d = D.Dirichlet(c(conc))
    close(d.log_prob(c(p)), ((conc - 1) * np.log(p)).sum() + lg(conc.sum()) - lg(conc).sum())
    close(d.entropy(), lg(conc).sum() - lg(conc.sum()) - (3 - conc.sum()) * digamma(conc.sum())
          - ((conc - 1) * digamma(conc)).sum(), rtol=1e-6)
    df, lo, sc = np.array([2.5, 3.0]), np.array([0.1, 0.2]), np.array([1.0, 3.0])
    d = D.StudentT(c(df), c(lo), c(sc))
    y = (v - lo) / sc
    close(d.log_prob(c(v)), lg((df + 1) / 2) - lg(df / 2) - 0.5 * np.log(df * math.pi) - np.log(sc)
          - (df + 1) / 2 * np.log1p(y ** 2 / df))
    assert math.isnan(D.StudentT(c([0.5])).mean.item())
    assert D.StudentT(c([1.5])).variance.item() == math.inf


def test_discrete_closed_forms(device):
    p = np.array([0.3, 0.9])
    d = D.Bernoulli(probs=c(p))
    close(d.log_prob(c([0.0, 1.0])), [math.log(0.7), math.log(0.9)])
    close(d.entropy(), -(p * np.log(p) + (1 - p) * np.log1p(-p)))
    close(D.Bernoulli(logits=c([0.0])).probs, [0.5])
    d = D.Geometric(probs=c(p))
    close(d.log_prob(c([2.0, 3.0])), 2 * np.log1p(-p) * np.array([1, 1.5]) + np.log(p))
    d = D.Binomial(10, probs=c(p))
    k = np.array([2.0, 9.0])
    close(d.log_prob(c(k)),
          lg(11) - lg(k + 1) - lg(11 - k) + k * np.log(p) + (10 - k) * np.log1p(-p))
    pmf = np.exp(d.log_prob(d.enumerate_support()).numpy())
    np.testing.assert_allclose(pmf.sum(0), [1, 1], rtol=1e-9)
    d = D.Poisson(c([0.5, 3.0]))
    close(d.log_prob(c([0.0, 2.0])), [-0.5, 2 * math.log(3) - 3 - math.log(2)])
    probs = np.array([[0.2, 0.3, 0.5], [0.1, 0.1, 0.8]])
    for d in (D.Categorical(probs=c(probs)), D.Categorical(logits=c(np.log(probs) + 1.0))):
        close(d.log_prob(clgrad.tensor([2, 0])), np.log([0.5, 0.1]))
        close(d.entropy(), -(probs * np.log(probs)).sum(-1))
        close(d.probs, probs)
    d = D.OneHotCategorical(probs=c(probs))
    close(d.log_prob(c([[0, 0, 1.0], [1, 0, 0]])), np.log([0.5, 0.1]))
    d = D.Multinomial(5, probs=c(probs))
    close(d.log_prob(c([[1, 1, 3.0], [5, 0, 0]])),
          [math.log(20 * 0.2 * 0.3 * 0.125), math.log(1e-5)])
    assert d.support.upper_bound == 5


def test_multivariate_normal(device):
    rng = np.random.default_rng(0)
    A = rng.standard_normal((2, 3, 3))
    cov = A @ A.transpose(0, 2, 1) + np.eye(3)
    loc, x = rng.standard_normal((2, 3)), rng.standard_normal((4, 2, 3))
    diff = x - loc
    m = np.einsum("...i,...ij,...j->...", diff, np.linalg.inv(cov), diff)
    want = -0.5 * (3 * math.log(2 * math.pi) + np.log(np.linalg.det(cov)) + m)
    for kw, mat in (("covariance_matrix", cov), ("precision_matrix", np.linalg.inv(cov)),
                    ("scale_tril", np.linalg.cholesky(cov))):
        d = D.MultivariateNormal(c(loc), **{kw: c(mat)})
        close(d.log_prob(c(x)), want, rtol=1e-8)
        close(d.covariance_matrix, cov, rtol=1e-8)
        close(d.entropy(), 0.5 * (3 * (1 + math.log(2 * math.pi)) + np.log(np.linalg.det(cov))))
    W, Dg = rng.standard_normal((2, 3, 2)), rng.random((2, 3)) + 0.5
    lr = D.LowRankMultivariateNormal(c(loc), c(W), c(Dg))
    full = D.MultivariateNormal(c(loc), covariance_matrix=lr.covariance_matrix)
    close(lr.log_prob(c(x)), full.log_prob(c(x)), rtol=1e-8)
    close(lr.entropy(), full.entropy(), rtol=1e-8)
    close(lr.precision_matrix, np.linalg.inv(lr.covariance_matrix.numpy()), rtol=1e-7, atol=1e-9)


def test_mixture_same_family(device):
    w, mu, sd = np.array([0.2, 0.8]), np.array([0.0, 2.0]), np.array([1.0, 0.5])
    gmm = D.MixtureSameFamily(D.Categorical(probs=c(w)), D.Normal(c(mu), c(sd)))
    x = np.array([0.3, 1.9])
    dens = (w * np.exp(-((x[:, None] - mu) ** 2) / (2 * sd ** 2))
            / (sd * math.sqrt(2 * math.pi))).sum(1)
    close(gmm.log_prob(c(x)), np.log(dens))
    close(gmm.mean, (w * mu).sum())
    close(gmm.variance, (w * (sd ** 2 + mu ** 2)).sum() - (w * mu).sum() ** 2)
    clgrad.manual_seed(3)
    s = gmm.sample((20000,)).numpy()
    assert abs(s.mean() - 1.6) < 0.05 and s.shape == (20000,)


# ---- samplers ---------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [clgrad.float32, F64])
def test_sample_moments(device, dtype):
    clgrad.manual_seed(7)
    n = 40000

    def moments(d, mean, var, tol=0.04):
        s = d.sample((n,)).to(F64).numpy()
        assert s.shape[0] == n
        np.testing.assert_allclose(s.mean(0), mean, rtol=tol, atol=tol)
        np.testing.assert_allclose(s.var(0), var, rtol=2 * tol, atol=tol)

    a = np.array([0.3, 1.0, 4.0, 30.0])
    moments(D.Gamma(c(a, dtype), c([1.0, 2.0, 0.5, 3.0], dtype)), a / [1, 2, .5, 3],
            a / np.array([1, 2, .5, 3]) ** 2)
    moments(D.Beta(c([0.5, 2.0], dtype), c([1.5, 5.0], dtype)), [0.25, 2 / 7],
            [0.5 * 1.5 / (4 * 3), 10 / (49 * 8)])
    conc = np.array([0.5, 1.0, 2.5])
    a0 = conc.sum()
    moments(D.Dirichlet(c(conc, dtype)), conc / a0, conc * (a0 - conc) / (a0 ** 2 * (a0 + 1)))
    moments(D.StudentT(c([5.0], dtype), c([1.0], dtype), c([2.0], dtype)), [1.0], [4 * 5 / 3],
            tol=0.08)
    moments(D.Normal(c([1.0, -2.0], dtype), c([0.5, 3.0], dtype)), [1.0, -2.0], [0.25, 9.0])
    moments(D.Laplace(c([1.0], dtype), c([2.0], dtype)), [1.0], [8.0])
    moments(D.Exponential(c([2.0], dtype)), [0.5], [0.25])
    moments(D.Geometric(probs=c([0.3], dtype)), [0.7 / 0.3], [0.7 / 0.09])
    moments(D.Poisson(c([0.7, 25.0], dtype)), [0.7, 25.0], [0.7, 25.0])
    moments(D.Binomial(c([20.0, 300.0], dtype), probs=c([0.3, 0.6], dtype)), [6.0, 180.0],
            [4.2, 72.0])
    probs = np.array([0.1, 0.2, 0.7])
    counts = np.bincount(D.Categorical(probs=c(probs, dtype)).sample((n,)).numpy(), minlength=3)
    np.testing.assert_allclose(counts / n, probs, atol=0.01)
    moments(D.Multinomial(10, probs=c(probs, dtype)), 10 * probs, 10 * probs * (1 - probs))


def test_gamma_sampler_matches_cdf(device):
    """Kolmogorov-Smirnov distance of device Gamma draws from the regularised incomplete gamma."""
    clgrad.manual_seed(11)
    for alpha in (0.2, 1.0, 7.5):
        x = clgrad._standard_gamma(clgrad.full((20000,), alpha, dtype=F64))
        x = x.sort().values
        cdf = clgrad.special.gammainc(clgrad.full_like(x, alpha), x).numpy()
        emp = np.arange(1, x.numel() + 1) / x.numel()
        # 1.63 / sqrt(n) is the 1% critical value of the KS distance
        assert np.abs(cdf - emp).max() < 1.5 * 1.63 / math.sqrt(x.numel())
    # the same seed gives the same draws; the stream moves on
    clgrad.manual_seed(1)
    a = clgrad._standard_gamma(clgrad.full((5,), 2.0))
    b = clgrad._standard_gamma(clgrad.full((5,), 2.0))
    clgrad.manual_seed(1)
    assert clgrad._standard_gamma(clgrad.full((5,), 2.0)).tolist() == a.tolist() != b.tolist()


# ---- gradients --------------------------------------------------------------------------------
@pytest.mark.parametrize("name,params", [
    ("Normal", ([0.5, -1.0], [1.0, 2.0])), ("LogNormal", ([0.5, -1.0], [1.0, 2.0])),
    ("Laplace", ([0.5, -1.0], [1.0, 2.0])), ("Cauchy", ([0.5, -1.0], [1.0, 2.0])),
    ("Uniform", ([0.0, -1.0], [1.0, 2.0])), ("Exponential", ([0.5, 2.0],)),
    ("Gumbel", ([0.5, -1.0], [1.0, 2.0])), ("HalfNormal", ([0.5, 2.0],))])
def test_rsample_gradcheck(device, name, params):
    ps = [c(p).requires_grad_() for p in params]

    def f(*ps):
        clgrad.manual_seed(5)       # the same noise at every evaluation
        return getattr(D, name)(*ps).rsample((3,))
    assert clgrad.autograd.gradcheck(f, ps)


def test_log_prob_gradcheck(device):
    x = c([0.3, 0.6])
    # (not at a concentration of exactly 1: there xlogy's gradient in its first argument is
    # 0, as torch's, where the finite difference sees log(x))
    a, b = c([0.5, 3.0]).requires_grad_(), c([1.5, 2.0]).requires_grad_()
    assert clgrad.autograd.gradcheck(lambda a, b: D.Gamma(a, b).log_prob(x), (a, b))
    assert clgrad.autograd.gradcheck(lambda a, b: D.Beta(a, b).log_prob(x), (a, b))
    L = c([[1.0, 0.0], [0.5, 2.0]])
    assert clgrad.autograd.gradcheck(
        lambda m, s: D.MultivariateNormal(m, scale_tril=s.tril()).log_prob(x),
        (c([0.1, -0.2]).requires_grad_(), L.requires_grad_()))


def test_standard_gamma_grad_is_the_implicit_gradient(device):
    """d x / d alpha = -(dF/dalpha)(x; alpha) / pdf(x; alpha), F the regularised incomplete gamma,
    in the three regions of the approximation."""
    alpha = np.array([0.3, 2.0, 5.0, 12.0, 12.0, 40.0, 3.0])
    x = np.array([0.5, 0.3, 4.0, 12.5, 6.0, 45.0, 0.9])
    h = 1e-6
    F = lambda a: clgrad.special.gammainc(c(a), c(x)).numpy()  # noqa: E731
    pdf = np.exp((alpha - 1) * np.log(x) - x - lg(alpha))
    want = -(F(alpha + h) - F(alpha - h)) / (2 * h) / pdf
    close(clgrad._standard_gamma_grad(c(alpha), c(x)), want, rtol=2e-3)


def test_gamma_beta_rsample_gradients_in_expectation(device):
    """The reparameterised gradient of a sample mean is the gradient of the mean."""
    clgrad.manual_seed(2)
    a = c([0.5, 3.0]).requires_grad_()
    r = c([2.0, 1.0]).requires_grad_()
    D.Gamma(a, r).rsample((40000,)).mean(0).sum().backward()
    close(a.grad, [0.5, 1.0], rtol=0.03)              # d(a / r) / da = 1 / r
    close(r.grad, [-0.125, -3.0], rtol=0.03)          # d(a / r) / dr = -a / r^2
    c1, c0 = c([2.0]).requires_grad_(), c([3.0]).requires_grad_()
    D.Beta(c1, c0).rsample((40000,)).mean().backward()
    close(c1.grad, [3.0 / 25], rtol=0.05)             # d(c1 / (c1 + c0)) / dc1
    conc = c([1.0, 2.0, 3.0]).requires_grad_()
    D.Dirichlet(conc).rsample((40000,))[:, 0].mean().backward()
    close(conc.grad, [5 / 36, -1 / 36, -1 / 36], rtol=0.1, atol=3e-3)
    df = c([4.0]).requires_grad_()
    D.Chi2(df).rsample((40000,)).mean().backward()
    close(df.grad, [1.0], rtol=0.03)


# ---- KL -----------------------------------------------------------------------------------------
def test_kl_closed_forms_and_monte_carlo(device):
    p, q = D.Normal(c([0.5]), c([1.0])), D.Normal(c([-1.0]), c([2.0]))
    close(D.kl_divergence(p, q), [math.log(2) + (1 + 2.25) / 8 - 0.5])
    clgrad.manual_seed(4)
    pairs = [
        (D.Normal(c([0.5]), c([1.0])), D.Normal(c([-1.0]), c([2.0]))),
        (D.Gamma(c([2.0]), c([1.5])), D.Gamma(c([3.0]), c([1.0]))),
        (D.Beta(c([2.0]), c([3.0])), D.Beta(c([1.5]), c([1.0]))),
        (D.Dirichlet(c([1.0, 2.0, 3.0])), D.Dirichlet(c([2.0, 2.0, 2.0]))),
        (D.Exponential(c([2.0])), D.Exponential(c([0.5]))),
        (D.Laplace(c([0.0]), c([1.0])), D.Laplace(c([1.0]), c([2.0]))),
        (D.Poisson(c([3.0])), D.Poisson(c([5.0]))),
        (D.Bernoulli(probs=c([0.3])), D.Bernoulli(probs=c([0.6]))),
        (D.Categorical(probs=c([0.2, 0.3, 0.5])), D.Categorical(probs=c([0.5, 0.25, 0.25]))),
        (D.Uniform(c([0.0]), c([1.0])), D.Uniform(c([-1.0]), c([2.0]))),
        (D.MultivariateNormal(c([0.0, 1.0]), c([[2.0, 0.5], [0.5, 1.0]])),
         D.MultivariateNormal(c([1.0, 0.0]), c([[1.0, 0.0], [0.0, 3.0]]))),
        (D.Independent(D.Normal(c([0.0, 1.0]), 1.0), 1),
         D.Independent(D.Normal(c([1.0, 0.0]), 2.0), 1)),
        (D.Gumbel(c([0.0]), c([1.0])), D.Gumbel(c([1.0]), c([2.0]))),
        (D.Geometric(probs=c([0.3])), D.Geometric(probs=c([0.5]))),
        (D.Binomial(10, probs=c([0.3])), D.Binomial(10, probs=c([0.6]))),
        (D.LogNormal(c([0.0]), c([1.0])), D.LogNormal(c([0.5]), c([2.0]))),
        (D.Exponential(c([2.0])), D.Gamma(c([2.0]), c([3.0]))),
    ]
    for p, q in pairs:
        x = p.sample((60000,))
        mc = (p.log_prob(x) - q.log_prob(x)).mean(0)
        kl = D.kl_divergence(p, q)
        assert kl.shape == p.batch_shape
        np.testing.assert_allclose(kl.numpy(), mc.numpy(), atol=0.03, rtol=0.03,
                                   err_msg=type(p).__name__)
    assert D.kl_divergence(D.Uniform(c([0.0]), c([2.0])), D.Uniform(c([0.0]), c([1.0]))).item() \
        == math.inf


def test_kl_cross_family_pairs(device):
    """The pairs of different families torch registers, against Monte Carlo; pairs whose p puts
    mass outside q's support are infinite."""
    clgrad.manual_seed(6)
    pairs = [
        (D.Normal(c([0.3]), c([1.2])), D.Gumbel(c([0.0]), c([2.0]))),
        (D.Gumbel(c([0.3]), c([1.2])), D.Normal(c([0.0]), c([2.0]))),
        (D.Laplace(c([0.3]), c([1.2])), D.Normal(c([0.0]), c([2.0]))),
        (D.Gamma(c([2.5]), c([1.5])), D.Normal(c([1.0]), c([2.0]))),
        (D.Gamma(c([2.5]), c([1.5])), D.Gumbel(c([1.0]), c([2.0]))),
        (D.Exponential(c([1.5])), D.Normal(c([1.0]), c([2.0]))),
        (D.Exponential(c([1.5])), D.Gumbel(c([1.0]), c([2.0]))),
        (D.Beta(c([2.5]), c([1.5])), D.Normal(c([0.5]), c([1.0]))),
        (D.Beta(c([2.5]), c([1.5])), D.Gamma(c([2.0]), c([1.0]))),
        (D.Beta(c([2.5]), c([1.5])), D.Exponential(c([2.0]))),
        (D.Beta(c([2.5]), c([1.5])), D.Uniform(c([-0.5]), c([1.5]))),
        (D.Uniform(c([0.1]), c([0.7])), D.Beta(c([2.0]), c([3.0]))),
        (D.Uniform(c([0.1]), c([0.7])), D.Gamma(c([2.0]), c([3.0]))),
        (D.Uniform(c([0.1]), c([0.7])), D.Gumbel(c([0.0]), c([1.0]))),
        (D.Uniform(c([1.1]), c([1.7])), D.Pareto(c([1.0]), c([2.0]))),
        (D.Pareto(c([1.0]), c([3.5])), D.Pareto(c([0.5]), c([2.0]))),
        (D.Pareto(c([1.0]), c([3.5])), D.Exponential(c([2.0]))),
        (D.Pareto(c([1.0]), c([3.5])), D.Normal(c([1.0]), c([2.0]))),
        (D.Bernoulli(probs=c([0.3])), D.Poisson(c([0.8]))),
        (D.ContinuousBernoulli(probs=c([0.3])), D.Normal(c([0.5]), c([1.0]))),
        (D.ContinuousBernoulli(probs=c([0.3])), D.ContinuousBernoulli(probs=c([0.8]))),
        (D.MultivariateNormal(c([0.0, 1.0]), c([[2.0, 0.5], [0.5, 1.0]])),
         D.LowRankMultivariateNormal(c([1.0, 0.0]), c([[1.0], [0.5]]), c([1.0, 2.0]))),
    ]
    for p, q in pairs:
        x = p.sample((80000,))
        mc = (p.log_prob(x) - q.log_prob(x)).mean(0)
        np.testing.assert_allclose(D.kl_divergence(p, q).numpy(), mc.numpy(), atol=0.03,
                                   rtol=0.03, err_msg=f"{type(p).__name__} {type(q).__name__}")
    for p, q in [(D.Normal(c([0.0]), c([1.0])), D.Exponential(c([1.0]))),
                 (D.Gamma(c([2.0]), c([1.0])), D.Beta(c([2.0]), c([1.0]))),
                 (D.Poisson(c([2.0])), D.Bernoulli(probs=c([0.5]))),
                 (D.Pareto(c([1.0]), c([0.8])), D.Exponential(c([1.0])))]:   # no finite mean
        assert D.kl_divergence(p, q).item() == math.inf


def test_register_kl_dispatch(device):
    class N1(D.Normal):
        pass

    class N2(N1):
        pass

    @D.register_kl(N1, D.Normal)
    def _a(p, q):
        return clgrad.tensor(1.0)

    @D.register_kl(D.Normal, N2)
    def _b(p, q):
        return clgrad.tensor(2.0)

    assert D.kl_divergence(N1(0.0, 1.0), D.Normal(0.0, 1.0)).item() == 1.0
    assert D.kl_divergence(D.Normal(0.0, 1.0), N2(0.0, 1.0)).item() == 2.0
    with pytest.warns(RuntimeWarning, match="Ambiguous kl_divergence"):
        D.kl_divergence(N2(0.0, 1.0), N2(0.0, 1.0))
    with pytest.raises(NotImplementedError, match="No KL"):
        D.kl_divergence(D.Normal(0.0, 1.0), D.Cauchy(0.0, 1.0))
    with pytest.raises(NotImplementedError, match="different exponential families"):
        D.kl_divergence(D.Normal(0.0, 1.0), D.Poisson(1.0))
    with pytest.raises(TypeError):
        D.register_kl(int, D.Normal)


# ---- validation errors and shapes ----------------------------------------------------------
def test_validate_args_errors(device):
    with pytest.raises(ValueError, match=r"Expected parameter scale \(Tensor of shape \(1,\)\) of "
                                         r"distribution Normal\(loc: tensor\(\[0.\]\), scale: "
                                         r"tensor\(\[-1.\]\)\) to satisfy the constraint "
                                         r"GreaterThan\(lower_bound=0.0\)"):
        D.Normal(clgrad.zeros(1), -clgrad.ones(1))
    with pytest.raises(ValueError, match="to be within the support"):
        D.Exponential(clgrad.ones(1)).log_prob(-clgrad.ones(1))
    with pytest.raises(ValueError, match="Either `probs` or `logits` must be specified"):
        D.Categorical(probs=clgrad.ones(2), logits=clgrad.ones(2))
    with pytest.raises(ValueError, match="The right-most size of value must match event_shape"):
        D.Dirichlet(clgrad.ones(3)).log_prob(clgrad.ones(4) / 4)
    with pytest.raises(ValueError, match="Value is not broadcastable"):
        D.Normal(clgrad.zeros(3), 1.0).log_prob(clgrad.zeros(2))
    with pytest.raises(ValueError, match="The value argument to log_prob must be a Tensor"):
        D.Normal(0.0, 1.0).log_prob(1.0)
    with pytest.raises(ValueError, match="Exactly one of covariance_matrix"):
        D.MultivariateNormal(clgrad.zeros(2))
    with pytest.raises(ValueError, match="positive_definite|PositiveDefinite"):
        D.MultivariateNormal(clgrad.zeros(2), -clgrad.eye(2))
    with pytest.raises(ValueError, match="Uniform is not defined when low>= high"):
        D.Uniform(clgrad.ones(1), clgrad.zeros(1))
    # validate_args=False and the process-wide default turn the checks off
    assert math.isnan(D.Normal(c([0.0]), c([-1.0]), validate_args=False).log_prob(c([0.0])).item())
    D.Distribution.set_default_validate_args(False)
    try:
        D.Normal(clgrad.zeros(1), -clgrad.ones(1))
    finally:
        D.Distribution.set_default_validate_args(True)
    with pytest.raises(ValueError):
        D.Distribution.set_default_validate_args(3)


def test_shapes_expand_independent(device):
    d = D.Normal(clgrad.zeros(3, 1), clgrad.ones(1, 2))
    assert d.batch_shape == (3, 2) and d.event_shape == ()
    assert d.sample().shape == (3, 2) and d.rsample((4, 5)).shape == (4, 5, 3, 2)
    e = d.expand((6, 3, 2))
    assert e.batch_shape == (6, 3, 2) and e.log_prob(clgrad.zeros(6, 3, 2)).shape == (6, 3, 2)
    ind = D.Independent(d, 1)
    assert ind.batch_shape == (3,) and ind.event_shape == (2,)
    assert ind.log_prob(clgrad.zeros(3, 2)).shape == (3,)
    cat = D.Categorical(logits=clgrad.zeros(2, 5))
    assert cat.sample((7,)).shape == (7, 2) and cat.sample().dtype == clgrad.int64
    assert cat.enumerate_support().shape == (5, 2)
    assert cat.expand((4, 2)).sample().shape == (4, 2)
    mvn = D.MultivariateNormal(clgrad.zeros(4, 3), scale_tril=clgrad.eye(3))
    assert mvn.batch_shape == (4,) and mvn.event_shape == (3,)
    assert mvn.sample((2,)).shape == (2, 4, 3)
    assert mvn.expand((5, 4)).log_prob(clgrad.zeros(3)).shape == (5, 4)
    oh = D.OneHotCategorical(logits=clgrad.zeros(2, 3))
    assert oh.sample((4,)).shape == (4, 2, 3) and oh.event_shape == (3,)
    assert D.Multinomial(6, logits=clgrad.zeros(3)).sample((2,)).sum(-1).tolist() == [6.0, 6.0]
    b = D.Bernoulli(0.3)
    assert b.batch_shape == () and b.sample((3,)).shape == (3,)
    assert D.Dirichlet(clgrad.ones(2, 3)).expand((4, 2)).sample().shape == (4, 2, 3)
    assert D.Beta(2.0, 3.0).rsample((3,)).shape == (3,)
    with pytest.warns(UserWarning):
        assert D.Normal(0.0, 1.0).sample_n(3).shape == (3,)
    assert repr(D.Normal(0.0, 1.0)) == "Normal(loc: 0.0, scale: 1.0)"


def test_relaxed(device):
    clgrad.manual_seed(0)
    t = c([0.5]).requires_grad_()
    logits = c([0.1, 0.4, -0.3]).requires_grad_()
    d = D.RelaxedOneHotCategorical(t, logits=logits)
    x = d.rsample((5,))
    assert x.shape == (5, 3)
    close(x.sum(-1), np.ones(5))
    (x[:, 0] * d.log_prob(x)).sum().backward()
    assert logits.grad is not None and t.grad is not None
    b = D.RelaxedBernoulli(c([0.2]), probs=c([0.3, 0.8]))
    y = b.rsample((2000,))
    assert bool(((y > 0) & (y < 1)).all()) and abs(y.mean(0)[1].item() - 0.8) < 0.05


# ---- transforms and constraints ---------------------------------------------------------------
# factories, not transforms: a transform holding a tensor (PowerTransform's exponent) is made on
# the device under test, not on the default device at collection
@pytest.mark.parametrize("make", [T.ExpTransform, T.SigmoidTransform, T.TanhTransform,
                                  T.SoftplusTransform, lambda: T.AffineTransform(1.0, -2.0),
                                  lambda: T.PowerTransform(c([2.5])),
                                  lambda: T.ExpTransform().inv],
                         ids=["exp", "sigmoid", "tanh", "softplus", "affine", "power", "log"])
def test_elementwise_transforms(device, make):
    """Round trip, and log|dy/dx| against the derivative autograd gives."""
    t = make()
    x = c([0.2, 0.7, 1.3]).requires_grad_()
    y = t(x)
    close(t.inv(y), x.detach(), rtol=1e-7)
    (dydx,) = clgrad.autograd.grad(y.sum(), x)
    close(t.log_abs_det_jacobian(x, y), np.log(np.abs(dydx.numpy())), rtol=1e-7)


def test_vector_transforms(device):
    x = c([[0.3, -1.2, 0.5], [1.0, 0.0, -0.4]])
    t = T.StickBreakingTransform()
    y = t(x)
    assert y.shape == (2, 4) and constraints.simplex.check(y).all()
    close(t.inv(y), x, rtol=1e-7)
    # log|det J| of x -> y[:-1] (the free coordinates) by a numerical Jacobian
    h = 1e-6
    for row in range(2):
        J = np.stack([(t(x[row] + h * clgrad.eye(3, dtype=F64)[k]).numpy()
                       - t(x[row] - h * clgrad.eye(3, dtype=F64)[k]).numpy())[:3] / (2 * h)
                      for k in range(3)])
        close(t.log_abs_det_jacobian(x[row], y[row]), math.log(abs(np.linalg.det(J))), rtol=1e-5)
    s = T.SoftmaxTransform()(x)
    close(s.sum(-1), [1.0, 1.0])
    comp = T.ComposeTransform([T.AffineTransform(c([1.0, 2.0, 3.0, 4.0]), 2.0, event_dim=1),
                               T.ReshapeTransform((4,), (2, 2)),
                               T.IndependentTransform(T.ExpTransform(), 2)])
    z = c([[0.1, 0.2, 0.3, 0.4]])
    assert comp(z).shape == (1, 2, 2) and comp.domain.event_dim == 1
    close(comp.log_abs_det_jacobian(z, comp(z)), [4 * math.log(2) + (1 + 2 + 3 + 4) + 2 * 1.0])
    close(comp.inv(comp(z)), z)
    L = T.LowerCholeskyTransform()(c([[0.5, 9.0], [0.3, -0.2]]))
    assert constraints.lower_cholesky.check(L).item()
    pd = T.PositiveDefiniteTransform()(c([[0.5, 9.0], [0.3, -0.2]]))
    assert constraints.positive_definite.check(pd).item()
    for con in (constraints.positive, constraints.interval(-1.0, 3.0), constraints.simplex,
                constraints.greater_than(2.0), constraints.unit_interval):
        v = D.biject_to(con)(c([[0.3, -2.0, 1.5]]))
        assert bool(con.check(v).all()), con


def test_constraints(device):
    v = clgrad.tensor([-1.0, 0.0, 0.5, 1.0, 2.0])
    assert constraints.positive.check(v).tolist() == [False, False, True, True, True]
    assert constraints.nonnegative.check(v).tolist() == [False, True, True, True, True]
    assert constraints.unit_interval.check(v).tolist() == [False, True, True, True, False]
    assert constraints.boolean.check(v).tolist() == [False, True, False, True, False]
    assert constraints.nonnegative_integer.check(v).tolist() == [False, True, False, True, True]
    assert constraints.integer_interval(0, 1).check(v).tolist() == [False, True, False, True, False]
    assert constraints.real.check(clgrad.tensor([math.nan, 1.0])).tolist() == [False, True]
    assert constraints.independent(constraints.positive, 1).check(
        clgrad.tensor([[1.0, 2.0], [1.0, -1.0]])).tolist() == [True, False]
    assert constraints.lower_cholesky.check(clgrad.tensor([[1.0, 0.0], [2.0, 1.0]])).item()
    assert not constraints.lower_cholesky.check(clgrad.tensor([[1.0, 1.0], [2.0, 1.0]])).item()
    assert constraints.is_dependent(D.Uniform(0.0, 1.0).arg_constraints["low"])
    assert repr(constraints.interval(0, 1)) == "Interval(lower_bound=0, upper_bound=1)"
