"""Bernoulli(probs= | logits=) (torch.distributions.bernoulli).

>>> import clgrad
>>> from clgrad.distributions import Bernoulli
>>> d = Bernoulli(probs=clgrad.tensor([0.25]))
>>> round(d.log_prob(clgrad.tensor([1.0])).item(), 4), round(d.logits.item(), 4)
(-1.3863, -1.0986)
"""
import math

import clgrad
from clgrad.nn.functional import binary_cross_entropy_with_logits

from . import constraints
from .exp_family import ExponentialFamily
from .utils import _ProbsLogitsParam, broadcast_all

__all__ = ["Bernoulli"]


class Bernoulli(_ProbsLogitsParam, ExponentialFamily):
    """1 with probability `probs` (or sigmoid(`logits`)), else 0."""
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean
    has_enumerate_support = True
    _mean_carrier_measure = 0

    def __init__(self, probs=None, logits=None, validate_args=None):
        self._init_param(probs, logits)
        super().__init__(self._param.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_param(Bernoulli, batch_shape, _instance)

    @property
    def mean(self):
        return self.probs

    @property
    def mode(self):
        mode = (self.probs >= 0.5).to(self.probs)
        return clgrad.where(self.probs == 0.5, math.nan, mode)

    @property
    def variance(self):
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        with clgrad.no_grad():
            return clgrad.bernoulli(self.probs.expand(shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return -binary_cross_entropy_with_logits(logits, value, reduction="none")

    def entropy(self):
        return binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none")

    def enumerate_support(self, expand=True):
        values = clgrad.arange(2, dtype=self._param.dtype, device=self._param.device)
        values = values.view((-1,) + (1,) * len(self._batch_shape))
        if expand:
            values = values.expand((-1,) + tuple(self._batch_shape))
        return values

    @property
    def _natural_params(self):
        return (clgrad.logit(self.probs),)

    def _log_normalizer(self, x):
        return clgrad.log1p(clgrad.exp(x))
