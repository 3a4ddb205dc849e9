"""NegativeBinomial(total_count, probs= | logits=) (torch.distributions.negative_binomial):
successes before total_count failures; sampled as a Gamma-Poisson mixture on the device.

>>> import clgrad
>>> from clgrad.distributions import NegativeBinomial
>>> d = NegativeBinomial(clgrad.tensor([3.0]), probs=clgrad.tensor([0.5]))
>>> d.mean.item(), round(d.log_prob(clgrad.tensor([0.0])).exp().item(), 4)
(3.0, 0.125)
"""
import clgrad
import clgrad.nn.functional as F

from . import constraints
from .distribution import Distribution
from .gamma import Gamma
from .utils import _ProbsLogitsParam, lazy_property

__all__ = ["NegativeBinomial"]


class NegativeBinomial(_ProbsLogitsParam, Distribution):
    """The number of successes (probability `probs`) before `total_count` failures."""
    arg_constraints = {"total_count": constraints.greater_than_eq(0),
                       "probs": constraints.half_open_interval(0.0, 1.0),
                       "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, total_count, probs=None, logits=None, validate_args=None):
        (total_count,) = self._init_param(probs, logits, total_count)
        self.total_count = total_count.type_as(self._param)
        super().__init__(self._param.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_param(NegativeBinomial, batch_shape, _instance, ("total_count",))

    @property
    def mean(self):
        return self.total_count * clgrad.exp(self.logits)

    @property
    def mode(self):
        return ((self.total_count - 1) * self.logits.exp()).floor().clamp(min=0.0)

    @property
    def variance(self):
        return self.mean / clgrad.sigmoid(-self.logits)

    @lazy_property
    def _gamma(self):
        return Gamma(concentration=self.total_count, rate=clgrad.exp(-self.logits),
                     validate_args=False)

    def sample(self, sample_shape=()):
        with clgrad.no_grad():
            rate = self._gamma.sample(sample_shape=sample_shape)
            return clgrad.poisson(rate)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        log_unnormalized_prob = (self.total_count * F.logsigmoid(-self.logits)
                                 + value * F.logsigmoid(self.logits))
        log_normalization = (-clgrad.lgamma(self.total_count + value) + clgrad.lgamma(1.0 + value)
                             + clgrad.lgamma(self.total_count))
        # the pmf of NegativeBinomial(0, p) is 1 at 0
        log_normalization = clgrad.where(self.total_count + value == 0.0, 0.0, log_normalization)
        return log_unnormalized_prob - log_normalization
