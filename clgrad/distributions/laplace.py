"""Laplace(loc, scale) (torch.distributions.laplace).

>>> import clgrad
>>> from clgrad.distributions import Laplace
>>> round(Laplace(0.0, 1.0).log_prob(clgrad.tensor(1.0)).item(), 4)
-1.6931
"""
import clgrad

from . import constraints
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["Laplace"]


class Laplace(Distribution):
    """The Laplace (double exponential) distribution; rsample inverts its cdf."""
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return 2 * self.scale.pow(2)

    @property
    def stddev(self):
        return (2 ** 0.5) * self.scale

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(self.loc.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Laplace, batch_shape, _instance, ("loc", "scale"))

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        finfo = clgrad.finfo(self.loc.dtype)
        u = clgrad.rand(*shape, dtype=self.loc.dtype, device=self.loc.device) * 2 - 1
        u = u.clamp(min=finfo.eps - 1, max=1)    # keep log1p(-|u|) finite
        return self.loc - self.scale * u.sign() * clgrad.log1p(-u.abs())

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return -clgrad.log(2 * self.scale) - clgrad.abs(value - self.loc) / self.scale

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 0.5 - 0.5 * (value - self.loc).sign() * clgrad.expm1(
            -(value - self.loc).abs() / self.scale)

    def icdf(self, value):
        term = value - 0.5
        return self.loc - self.scale * term.sign() * clgrad.log1p(-2 * term.abs())

    def entropy(self):
        return 1 + clgrad.log(2 * self.scale)
