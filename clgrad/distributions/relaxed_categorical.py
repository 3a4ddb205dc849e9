"""RelaxedOneHotCategorical and ExpRelaxedCategorical (torch.distributions.relaxed_categorical):
the Gumbel-softmax relaxation of a one-hot Categorical, reparameterised.

>>> import clgrad
>>> from clgrad.distributions import RelaxedOneHotCategorical
>>> d = RelaxedOneHotCategorical(clgrad.tensor([0.5]), logits=clgrad.zeros(3))
>>> round(d.rsample().sum().item(), 5)
1.0
"""
import math
from numbers import Number

import clgrad

from . import constraints
from .categorical import Categorical, _CategoricalParams
from .distribution import Distribution
from .relaxed_bernoulli import _RelaxedParams
from .transformed_distribution import TransformedDistribution
from .transforms import ExpTransform
from .utils import clamp_probs

__all__ = ["ExpRelaxedCategorical", "RelaxedOneHotCategorical"]


class ExpRelaxedCategorical(_CategoricalParams, Distribution):
    """The log of a RelaxedOneHotCategorical sample: log_softmax((logits + G) / temperature)."""
    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        self._categorical = Categorical(probs, logits)
        self.temperature = temperature
        batch_shape = self._categorical.batch_shape
        event_shape = self._categorical.param_shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._expand_params(ExpRelaxedCategorical, batch_shape, _instance, ())
        new.temperature = self.temperature
        new._categorical = self._categorical.expand(batch_shape)
        return new

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        uniforms = clamp_probs(clgrad.rand(*shape, dtype=self.logits.dtype,
                                           device=self.logits.device))
        gumbels = -((-(uniforms.log())).log())
        scores = (self.logits + gumbels) / self.temperature
        return scores - scores.logsumexp(dim=-1, keepdim=True)

    def log_prob(self, value):
        K = self._categorical._num_events
        if self._validate_args:
            self._validate_sample(value)
        logits, value = clgrad.broadcast_tensors(self.logits, value)
        t = self.temperature
        log_t = math.log(t) if isinstance(t, Number) else t.log()
        log_scale = math.lgamma(K) + (K - 1) * log_t
        score = logits - value.mul(t)
        score = (score - score.logsumexp(dim=-1, keepdim=True)).sum(-1)
        return score + log_scale


class RelaxedOneHotCategorical(_RelaxedParams, TransformedDistribution):
    """A relaxed one-hot vector on the simplex of `temperature` (exp of an
    ExpRelaxedCategorical)."""
    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        base_dist = ExpRelaxedCategorical(temperature, probs, logits,
                                          validate_args=validate_args)
        super().__init__(base_dist, ExpTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(RelaxedOneHotCategorical, _instance)
        return super().expand(batch_shape, _instance=new)
