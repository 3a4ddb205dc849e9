"""Exponential(rate) (torch.distributions.exponential).

>>> import clgrad
>>> from clgrad.distributions import Exponential
>>> d = Exponential(clgrad.tensor([2.0]))
>>> round(d.log_prob(clgrad.tensor([1.0])).item(), 4), d.mean.item()
(-1.3069, 0.5)
"""
import clgrad

from . import constraints
from .exp_family import ExponentialFamily
from .utils import broadcast_all

__all__ = ["Exponential"]


class Exponential(ExponentialFamily):
    """The exponential distribution of rate `rate`; rsample is -log(1 - u) / rate."""
    arg_constraints = {"rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _mean_carrier_measure = 0

    @property
    def mean(self):
        return self.rate.reciprocal()

    @property
    def mode(self):
        return clgrad.zeros_like(self.rate)

    @property
    def stddev(self):
        return self.rate.reciprocal()

    @property
    def variance(self):
        return self.rate.pow(-2)

    def __init__(self, rate, validate_args=None):
        (self.rate,) = broadcast_all(rate)
        super().__init__(self.rate.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Exponential, batch_shape, _instance, ("rate",))

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        e = clgrad.empty(*shape, dtype=self.rate.dtype, device=self.rate.device).exponential_()
        return e / self.rate

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return self.rate.log() - self.rate * value

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 1 - clgrad.exp(-self.rate * value)

    def icdf(self, value):
        return -clgrad.log1p(-value) / self.rate

    def entropy(self):
        return 1.0 - clgrad.log(self.rate)

    @property
    def _natural_params(self):
        return (-self.rate,)

    def _log_normalizer(self, x):
        return -clgrad.log(-x)
