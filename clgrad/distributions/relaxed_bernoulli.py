"""RelaxedBernoulli and LogitRelaxedBernoulli (torch.distributions.relaxed_bernoulli): the
Concrete / Gumbel-softmax relaxation of a Bernoulli, reparameterised.

>>> import clgrad
>>> from clgrad.distributions import RelaxedBernoulli
>>> d = RelaxedBernoulli(clgrad.tensor([0.5]), probs=clgrad.tensor([0.3]))
>>> x = d.rsample(); bool(((x > 0) & (x < 1)).all())
True
"""
import math
from numbers import Number

import clgrad

from . import constraints
from .distribution import Distribution
from .transformed_distribution import TransformedDistribution
from .transforms import SigmoidTransform
from .utils import _ProbsLogitsParam, broadcast_all, clamp_probs

__all__ = ["LogitRelaxedBernoulli", "RelaxedBernoulli"]


def _log(t):
    return math.log(t) if isinstance(t, Number) else t.log()


class LogitRelaxedBernoulli(_ProbsLogitsParam, Distribution):
    """The logit of a RelaxedBernoulli sample: (logistic noise + logits) / temperature."""
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.real

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        self.temperature = temperature
        self._init_param(probs, logits)
        super().__init__(self._param.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._expand_param(LogitRelaxedBernoulli, batch_shape, _instance)
        new.temperature = self.temperature
        return new

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        probs = clamp_probs(self.probs.expand(shape))
        uniforms = clamp_probs(clgrad.rand(*shape, dtype=probs.dtype, device=probs.device))
        return (uniforms.log() - (-uniforms).log1p() + probs.log()
                - (-probs).log1p()) / self.temperature

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        diff = logits - value.mul(self.temperature)
        return _log(self.temperature) + diff - 2 * diff.exp().log1p()


class _RelaxedParams:
    """temperature, logits and probs of a relaxed distribution: those of its base_dist."""

    @property
    def temperature(self):
        return self.base_dist.temperature

    @property
    def logits(self):
        return self.base_dist.logits

    @property
    def probs(self):
        return self.base_dist.probs


class RelaxedBernoulli(_RelaxedParams, TransformedDistribution):
    """A relaxed Bernoulli on (0, 1) of `temperature` (sigmoid of a LogitRelaxedBernoulli)."""
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        base_dist = LogitRelaxedBernoulli(temperature, probs, logits)
        super().__init__(base_dist, SigmoidTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(RelaxedBernoulli, _instance)
        return super().expand(batch_shape, _instance=new)
