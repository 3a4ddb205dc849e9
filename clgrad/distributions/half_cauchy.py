"""HalfCauchy(scale) (torch.distributions.half_cauchy): |X| for X ~ Cauchy(0, scale).

>>> import clgrad
>>> from clgrad.distributions import HalfCauchy
>>> round(HalfCauchy(clgrad.tensor([1.0])).cdf(clgrad.tensor([1.0])).item(), 4)
0.5
"""
import math

import clgrad

from ._half import _HalfDistribution
from .cauchy import Cauchy

__all__ = ["HalfCauchy"]


class HalfCauchy(_HalfDistribution):
    """The absolute value of a zero-median Cauchy of scale `scale`."""

    def __init__(self, scale, validate_args=None):
        super().__init__(Cauchy(0, scale, validate_args=False), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(HalfCauchy, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def mean(self):
        return clgrad.full(self._extended_shape(), math.inf, dtype=self.scale.dtype,
                           device=self.scale.device)

    @property
    def variance(self):
        return self.base_dist.variance

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        # torch's HalfCauchy (unlike HalfNormal) takes the value in the scale's dtype
        return self._log_prob(clgrad.as_tensor(value, dtype=self.scale.dtype,
                                               device=self.scale.device))
