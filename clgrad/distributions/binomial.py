"""Binomial(total_count, probs= | logits=) (torch.distributions.binomial), sampled on the
device (clgrad.binomial).

>>> import clgrad
>>> from clgrad.distributions import Binomial
>>> d = Binomial(10, probs=clgrad.tensor([0.5]))
>>> round(d.log_prob(clgrad.tensor([5.0])).exp().item(), 4), d.mean.item()
(0.2461, 5.0)
"""
import clgrad

from . import constraints
from .distribution import Distribution
from .utils import _ProbsLogitsParam

__all__ = ["Binomial"]


def _clamp_by_zero(x):
    # max(x, 0) with a gradient of 1/2 at 0
    return (x.clamp(min=0) + x - x.clamp(max=0)) / 2


class Binomial(_ProbsLogitsParam, Distribution):
    """The number of successes in `total_count` independent trials of probability `probs`."""
    arg_constraints = {"total_count": constraints.nonnegative_integer,
                       "probs": constraints.unit_interval, "logits": constraints.real}
    has_enumerate_support = True

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        (total_count,) = self._init_param(probs, logits, total_count)
        self.total_count = total_count.type_as(self._param)
        super().__init__(self._param.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_param(Binomial, batch_shape, _instance, ("total_count",))

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self.total_count)

    @property
    def mean(self):
        return self.total_count * self.probs

    @property
    def mode(self):
        return ((self.total_count + 1) * self.probs).floor().clamp(max=self.total_count)

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        with clgrad.no_grad():
            return clgrad.binomial(self.total_count.expand(shape), self.probs.expand(shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        log_factorial_n = clgrad.lgamma(self.total_count + 1)
        log_factorial_k = clgrad.lgamma(value + 1)
        log_factorial_nmk = clgrad.lgamma(self.total_count - value + 1)
        # log(1 + exp(logits)) * n in a form that neither overflows nor loses precision
        normalize_term = (self.total_count * _clamp_by_zero(self.logits)
                          + self.total_count * clgrad.log1p(clgrad.exp(-clgrad.abs(self.logits)))
                          - log_factorial_n)
        return value * self.logits - log_factorial_k - log_factorial_nmk - normalize_term

    def entropy(self):
        total_count = int(self.total_count.max())
        if not self.total_count.min() == total_count:
            raise NotImplementedError("Inhomogeneous total count not supported by `entropy`.")
        log_prob = self.log_prob(self.enumerate_support(False))
        return -(clgrad.exp(log_prob) * log_prob).sum(0)

    def enumerate_support(self, expand=True):
        total_count = int(self.total_count.max())
        if not self.total_count.min() == total_count:
            raise NotImplementedError(
                "Inhomogeneous total count not supported by `enumerate_support`.")
        values = clgrad.arange(1 + total_count, dtype=self._param.dtype,
                               device=self._param.device)
        values = values.view((-1,) + (1,) * len(self._batch_shape))
        if expand:
            values = values.expand((-1,) + tuple(self._batch_shape))
        return values
