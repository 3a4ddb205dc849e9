"""Multinomial(total_count, probs= | logits=) (torch.distributions.multinomial): counts of
total_count Categorical draws.

>>> import clgrad
>>> from clgrad.distributions import Multinomial
>>> d = Multinomial(4, probs=clgrad.tensor([1.0, 1.0]))
>>> d.sample().sum().item(), round(d.log_prob(clgrad.tensor([2.0, 2.0])).exp().item(), 4)
(4.0, 0.375)
"""
import math

import clgrad
from clgrad.nn.functional import one_hot

from . import constraints
from .binomial import Binomial
from .categorical import Categorical, _CategoricalParams
from .distribution import Distribution, _size
from .utils import broadcast_all

__all__ = ["Multinomial"]


class Multinomial(_CategoricalParams, Distribution):
    """Counts over K classes of `total_count` independent Categorical draws."""
    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    total_count: int

    @property
    def mean(self):
        return self.probs * self.total_count

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        if not isinstance(total_count, int):
            raise NotImplementedError("inhomogeneous total_count is not supported")
        self.total_count = total_count
        self._categorical = Categorical(probs=probs, logits=logits)
        self._binomial = Binomial(total_count=total_count, probs=self.probs)
        batch_shape = self._categorical.batch_shape
        event_shape = self._categorical.param_shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._expand_params(Multinomial, batch_shape, _instance, ())
        new.total_count = self.total_count
        new._categorical = self._categorical.expand(batch_shape)
        new._binomial = self._binomial.expand(_size(batch_shape, self.event_shape))
        return new

    @constraints.dependent_property(is_discrete=True, event_dim=1)
    def support(self):
        return constraints.multinomial(self.total_count)

    def sample(self, sample_shape=()):
        sample_shape = _size(sample_shape)
        with clgrad.no_grad():
            idx = self._categorical.sample(_size((self.total_count,), sample_shape))
            return one_hot(idx, self._categorical._num_events).sum(0).type_as(self.probs)

    def entropy(self):
        n = clgrad.tensor(float(self.total_count), dtype=self.probs.dtype,
                          device=self.probs.device)
        cat_entropy = self._categorical.entropy()
        term1 = n * cat_entropy - clgrad.lgamma(n + 1)
        support = self._binomial.enumerate_support(expand=False)[1:]
        binomial_probs = clgrad.exp(self._binomial.log_prob(support))
        weights = clgrad.lgamma(support + 1)
        term2 = (binomial_probs * weights).sum([0, -1])
        return term1 + term2

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        log_factorial_n = clgrad.lgamma(value.sum(-1) + 1)
        log_factorial_xs = clgrad.lgamma(value + 1).sum(-1)
        # a class of probability 0 drawn 0 times contributes 0, not 0 * -inf
        logits = clgrad.where((value == 0) & (logits == -math.inf), 0.0, logits)
        log_powers = (logits * value).sum(-1)
        return log_factorial_n - log_factorial_xs + log_powers
