"""HalfNormal(scale) (torch.distributions.half_normal): |X| for X ~ Normal(0, scale).

>>> import clgrad
>>> from clgrad.distributions import HalfNormal
>>> d = HalfNormal(clgrad.tensor([1.0]))
>>> round(d.log_prob(clgrad.tensor([0.0])).item(), 4), round(d.cdf(clgrad.tensor([1.0])).item(), 4)
(-0.2258, 0.6827)
"""
import math

from ._half import _HalfDistribution
from .normal import Normal

__all__ = ["HalfNormal"]


class HalfNormal(_HalfDistribution):
    """The absolute value of a zero-mean normal of standard deviation `scale`."""

    def __init__(self, scale, validate_args=None):
        super().__init__(Normal(0, scale, validate_args=False), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(HalfNormal, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def mean(self):
        return self.scale * math.sqrt(2 / math.pi)

    @property
    def variance(self):
        return self.scale.pow(2) * (1 - 2 / math.pi)

