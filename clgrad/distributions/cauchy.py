"""Cauchy(loc, scale) (torch.distributions.cauchy).

>>> import clgrad
>>> from clgrad.distributions import Cauchy
>>> round(Cauchy(0.0, 1.0).log_prob(clgrad.tensor(0.0)).item(), 4)
-1.1447
"""
import math

import clgrad

from . import constraints
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["Cauchy"]


class Cauchy(Distribution):
    """The Cauchy (Lorentz) distribution; rsample is loc + scale * tan(pi (u - 1/2))."""
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(self.loc.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Cauchy, batch_shape, _instance, ("loc", "scale"))

    @property
    def mean(self):
        return clgrad.full(self._extended_shape(), math.nan, dtype=self.loc.dtype,
                           device=self.loc.device)

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return clgrad.full(self._extended_shape(), math.inf, dtype=self.loc.dtype,
                           device=self.loc.device)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        eps = clgrad.empty(*shape, dtype=self.loc.dtype, device=self.loc.device).cauchy_()
        return self.loc + eps * self.scale

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return (-math.log(math.pi) - self.scale.log()
                - (((value - self.loc) / self.scale) ** 2).log1p())

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return clgrad.atan((value - self.loc) / self.scale) / math.pi + 0.5

    def icdf(self, value):
        return clgrad.tan(math.pi * (value - 0.5)) * self.scale + self.loc

    def entropy(self):
        return math.log(4 * math.pi) + self.scale.log()
