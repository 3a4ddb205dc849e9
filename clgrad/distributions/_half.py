"""The base of HalfNormal and HalfCauchy: |X| for X of a zero-centred distribution of `scale`,
its density, cdf, icdf and entropy from X's (twice the density on x >= 0).

>>> import math, clgrad
>>> from clgrad.distributions import HalfNormal, Normal
>>> x = clgrad.tensor([0.5])
>>> bool(HalfNormal(1.0).log_prob(x) == Normal(0.0, 1.0).log_prob(x) + math.log(2))
True
"""
import math

import clgrad

from . import constraints
from .transformed_distribution import TransformedDistribution
from .transforms import AbsTransform


class _HalfDistribution(TransformedDistribution):
    """|X| for X ~ base_dist, a distribution symmetric about 0 with a `scale`."""
    arg_constraints = {"scale": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, base_dist, validate_args=None):
        super().__init__(base_dist, AbsTransform(), validate_args=validate_args)

    @property
    def scale(self):
        return self.base_dist.scale

    @property
    def mode(self):
        return clgrad.zeros_like(self.scale)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return self._log_prob(value)

    def _log_prob(self, value):
        log_prob = self.base_dist.log_prob(value) + math.log(2)
        return clgrad.where(value >= 0, log_prob, -math.inf)

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 2 * self.base_dist.cdf(value) - 1

    def icdf(self, prob):
        return self.base_dist.icdf((prob + 1) / 2)

    def entropy(self):
        return self.base_dist.entropy() - math.log(2)
