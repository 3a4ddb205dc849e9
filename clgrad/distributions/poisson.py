"""Poisson(rate) (torch.distributions.poisson), sampled on the device (clgrad.poisson).

>>> import clgrad
>>> from clgrad.distributions import Poisson
>>> round(Poisson(clgrad.tensor([2.0])).log_prob(clgrad.tensor([1.0])).item(), 4)
-1.3069
"""
import clgrad

from . import constraints
from .exp_family import ExponentialFamily
from .utils import broadcast_all

__all__ = ["Poisson"]


class Poisson(ExponentialFamily):
    """Counts of events at rate `rate`: P(k) = rate^k e^-rate / k!."""
    arg_constraints = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer

    @property
    def mean(self):
        return self.rate

    @property
    def mode(self):
        return self.rate.floor()

    @property
    def variance(self):
        return self.rate

    def __init__(self, rate, validate_args=None):
        (self.rate,) = broadcast_all(rate)
        super().__init__(self.rate.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Poisson, batch_shape, _instance, ("rate",))

    def sample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        with clgrad.no_grad():
            return clgrad.poisson(self.rate.expand(shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        rate, value = broadcast_all(self.rate, value)
        return clgrad.xlogy(value, rate) - rate - (value + 1).lgamma()

    @property
    def _natural_params(self):
        return (clgrad.log(self.rate),)

    def _log_normalizer(self, x):
        return clgrad.exp(x)
