"""Kumaraswamy(concentration1, concentration0) (torch.distributions.kumaraswamy).

>>> import clgrad
>>> from clgrad.distributions import Kumaraswamy
>>> Kumaraswamy(clgrad.tensor([1.0]), clgrad.tensor([1.0])).mean.item()   # Uniform(0, 1)
0.5
"""
import math

import clgrad

from . import constraints
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, PowerTransform
from .uniform import Uniform
from .utils import broadcast_all, euler_constant

__all__ = ["Kumaraswamy"]


def _moments(a, b, n):
    """The n-th moment of Kumaraswamy(a, b): b * B(1 + n / a, b), by log-gammas."""
    arg1 = 1 + n / a
    log_value = clgrad.lgamma(arg1) + clgrad.lgamma(b) - clgrad.lgamma(arg1 + b)
    return b * clgrad.exp(log_value)


class Kumaraswamy(TransformedDistribution):
    """(1 - U^(1 / concentration0))^(1 / concentration1) for U ~ Uniform(0, 1)."""
    arg_constraints = {"concentration1": constraints.positive,
                       "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args=None):
        self.concentration1, self.concentration0 = broadcast_all(concentration1, concentration0)
        base_dist = Uniform(clgrad.zeros_like(self.concentration0),
                            clgrad.ones_like(self.concentration0), validate_args=validate_args)
        transforms = [PowerTransform(exponent=self.concentration0.reciprocal()),
                      AffineTransform(loc=1.0, scale=-1.0),
                      PowerTransform(exponent=self.concentration1.reciprocal())]
        super().__init__(base_dist, transforms, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Kumaraswamy, _instance)
        new.concentration1 = self.concentration1.expand(batch_shape)
        new.concentration0 = self.concentration0.expand(batch_shape)
        return super().expand(batch_shape, _instance=new)

    @property
    def mean(self):
        return _moments(self.concentration1, self.concentration0, 1)

    @property
    def mode(self):
        c1, c0 = self.concentration1, self.concentration0
        log_mode = c0.reciprocal() * (-c0).log1p() - (-c0 * c1).log1p()
        return clgrad.where((c0 < 1) | (c1 < 1), math.nan, log_mode).exp()

    @property
    def variance(self):
        return (_moments(self.concentration1, self.concentration0, 2)
                - self.mean.pow(2))

    def entropy(self):
        t1 = 1 - self.concentration1.reciprocal()
        t0 = 1 - self.concentration0.reciprocal()
        H0 = clgrad.digamma(self.concentration0 + 1) + euler_constant
        return t0 + t1 * H0 - clgrad.log(self.concentration1) - clgrad.log(self.concentration0)
