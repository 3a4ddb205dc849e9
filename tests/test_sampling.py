"""clgrad.poisson and clgrad.binomial: moments and chi-square at a fixed seed against the exact
distributions (scipy-free: the pmfs are computed here), reproducibility, errors as torch's."""
import math

import numpy as np
import pytest

import clgrad


def _chi2(samples, pmf, kmax):
    """Pearson's statistic over bins 0..kmax-1 and a tail bin, and its degrees of freedom."""
    n = samples.size
    obs = np.array([(samples == k).sum() for k in range(kmax)] + [(samples >= kmax).sum()])
    p = np.array([pmf(k) for k in range(kmax)])
    exp = n * np.append(p, max(1 - p.sum(), 0))
    keep = exp > 5
    return float(((obs[keep] - exp[keep]) ** 2 / exp[keep]).sum()), int(keep.sum()) - 1


@pytest.mark.parametrize("rate", [0.3, 4.0, 60.0])
def test_poisson_distribution(device, rate):
    clgrad.manual_seed(1234)
    x = clgrad.poisson(clgrad.full((20000,), rate)).numpy()
    assert x.dtype == np.float32 and (x == np.round(x)).all() and (x >= 0).all()
    assert abs(x.mean() - rate) < 5 * math.sqrt(rate / x.size)
    assert abs(x.var() - rate) < 0.1 * rate + 0.02
    pmf = lambda k: math.exp(-rate + k * math.log(rate) - math.lgamma(k + 1))  # noqa: E731
    stat, dof = _chi2(x, pmf, int(rate * 2 + 10))
    assert stat < dof + 5 * math.sqrt(2 * dof)      # far below any plausible failure


@pytest.mark.parametrize("n,p", [(10.0, 0.3), (200.0, 0.9), (1.0, 0.5)])
def test_binomial_distribution(device, n, p):
    clgrad.manual_seed(99)
    x = clgrad.binomial(clgrad.full((20000,), n), clgrad.full((20000,), p)).numpy()
    assert (x >= 0).all() and (x <= n).all() and (x == np.round(x)).all()
    mean, var = n * p, n * p * (1 - p)
    assert abs(x.mean() - mean) < 5 * math.sqrt(var / x.size)
    assert abs(x.var() - var) < 0.1 * var
    pmf = lambda k: math.comb(int(n), k) * p ** k * (1 - p) ** (int(n) - k)  # noqa: E731
    stat, dof = _chi2(x, pmf, int(n) + 1)
    assert stat < dof + 5 * math.sqrt(2 * dof)


def test_reproducible_and_stream_moves(device):
    rates = clgrad.tensor([0.5, 3.0, 20.0] * 50)
    clgrad.manual_seed(5)
    a = clgrad.poisson(rates).tolist()
    b = clgrad.poisson(rates).tolist()
    clgrad.manual_seed(5)
    assert clgrad.poisson(rates).tolist() == a and a != b
    g = clgrad.Generator().manual_seed(7)
    c = clgrad.binomial(rates * 2, clgrad.full((150,), 0.5), generator=g).tolist()
    g.manual_seed(7)
    assert clgrad.binomial(rates * 2, clgrad.full((150,), 0.5), generator=g).tolist() == c


def test_edges_and_broadcast(device):
    assert clgrad.poisson(clgrad.zeros(3)).tolist() == [0.0, 0.0, 0.0]
    assert clgrad.poisson(clgrad.tensor([clgrad.inf])).item() == math.inf
    out = clgrad.binomial(clgrad.tensor([4.0, 6.0]), clgrad.tensor([[1.0], [0.0]]))
    assert out.tolist() == [[4.0, 6.0], [0.0, 0.0]]
    assert clgrad.poisson(clgrad.ones(2, 3, dtype=clgrad.float16)).dtype == clgrad.float16


def test_errors_as_torch(device):
    with pytest.raises(RuntimeError, match="non-negative"):
        clgrad.poisson(clgrad.tensor([-1.0]))
    with pytest.raises(RuntimeError, match="non-negative"):
        clgrad.poisson(clgrad.tensor([clgrad.nan]))
    with pytest.raises(NotImplementedError):
        clgrad.poisson(clgrad.tensor([1, 2]))
    with pytest.raises(ValueError, match="floating-point dtypes for count"):
        clgrad.binomial(clgrad.tensor([10]), clgrad.tensor([0.5]))


def test_gradient_is_zero(device):
    r = clgrad.full((3,), 2.0, requires_grad=True)
    y = clgrad.poisson(r)
    assert y.requires_grad
    y.sum().backward()
    assert r.grad.tolist() == [0.0, 0.0, 0.0]
