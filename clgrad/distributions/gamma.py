"""Gamma(concentration, rate) (torch.distributions.gamma), sampled on the device
(clgrad._standard_gamma) with implicit reparameterisation gradients.

>>> import clgrad
>>> from clgrad.distributions import Gamma
>>> d = Gamma(clgrad.tensor([2.0]), clgrad.tensor([1.0]))
>>> round(d.log_prob(clgrad.tensor([1.0])).item(), 4), d.mean.item()
(-1.0, 2.0)
"""
import clgrad
from clgrad._sampling import _standard_gamma

from . import constraints
from .exp_family import ExponentialFamily
from .utils import broadcast_all

__all__ = ["Gamma"]


class Gamma(ExponentialFamily):
    """The gamma distribution of shape `concentration` and inverse scale `rate`."""
    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _mean_carrier_measure = 0

    @property
    def mean(self):
        return self.concentration / self.rate

    @property
    def mode(self):
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self):
        return self.concentration / self.rate.pow(2)

    def __init__(self, concentration, rate, validate_args=None):
        self.concentration, self.rate = broadcast_all(concentration, rate)
        super().__init__(self.concentration.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Gamma, batch_shape, _instance, ("concentration", "rate"))

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        return _standard_gamma(self.concentration.expand(shape)) / self.rate.expand(shape)

    def log_prob(self, value):
        value = clgrad.as_tensor(value, dtype=self.rate.dtype, device=self.rate.device)
        if self._validate_args:
            self._validate_sample(value)
        return (clgrad.xlogy(self.concentration, self.rate)
                + clgrad.xlogy(self.concentration - 1, value)
                - self.rate * value - clgrad.lgamma(self.concentration))

    def entropy(self):
        return (self.concentration - clgrad.log(self.rate) + clgrad.lgamma(self.concentration)
                + (1.0 - self.concentration) * clgrad.digamma(self.concentration))

    @property
    def _natural_params(self):
        return (self.concentration - 1, -self.rate)

    def _log_normalizer(self, x, y):
        return clgrad.lgamma(x + 1) + (x + 1) * clgrad.log(-y.reciprocal())

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return clgrad.special.gammainc(self.concentration, self.rate * value)
