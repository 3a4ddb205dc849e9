"""OneHotCategorical (torch.distributions.one_hot_categorical): a Categorical's draw as a
one-hot vector; OneHotCategoricalStraightThrough adds a straight-through gradient.

>>> import clgrad
>>> from clgrad.distributions import OneHotCategorical
>>> d = OneHotCategorical(probs=clgrad.tensor([0.25, 0.75]))
>>> d.sample().sum().item(), round(d.log_prob(clgrad.tensor([0.0, 1.0])).item(), 4)
(1.0, -0.2877)
"""
import clgrad
from clgrad.nn.functional import one_hot

from . import constraints
from .categorical import Categorical, _CategoricalParams
from .distribution import Distribution

__all__ = ["OneHotCategorical", "OneHotCategoricalStraightThrough"]


class OneHotCategorical(_CategoricalParams, Distribution):
    """One-hot vectors of K classes with probabilities `probs` or softmax(`logits`)."""
    arg_constraints = {"probs": constraints.simplex,
                       "logits": constraints.independent(constraints.real, 1)}
    support = constraints.one_hot
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        self._categorical = Categorical(probs, logits)
        batch_shape = self._categorical.batch_shape
        event_shape = self._categorical.param_shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._expand_params(OneHotCategorical, batch_shape, _instance, ())
        new._categorical = self._categorical.expand(batch_shape)
        return new

    @property
    def _param(self):
        return self._categorical._param

    @property
    def mean(self):
        return self._categorical.probs

    @property
    def mode(self):
        probs = self._categorical.probs
        return one_hot(probs.argmax(-1), probs.shape[-1]).to(probs)

    @property
    def variance(self):
        return self._categorical.probs * (1 - self._categorical.probs)

    def sample(self, sample_shape=()):
        probs = self._categorical.probs
        indices = self._categorical.sample(sample_shape)
        return one_hot(indices, self._categorical._num_events).to(probs)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        indices = value.max(-1)[1]
        return self._categorical.log_prob(indices)

    def entropy(self):
        return self._categorical.entropy()

    def enumerate_support(self, expand=True):
        n = self.event_shape[0]
        values = clgrad.eye(n, dtype=self._param.dtype, device=self._param.device)
        values = values.view((n,) + (1,) * len(self.batch_shape) + (n,))
        if expand:
            values = values.expand((n,) + tuple(self.batch_shape) + (n,))
        return values


class OneHotCategoricalStraightThrough(OneHotCategorical):
    """OneHotCategorical whose rsample passes the gradient of the probabilities straight
    through the one-hot sample (Bengio et al., 2013)."""
    has_rsample = True

    def rsample(self, sample_shape=()):
        samples = self.sample(sample_shape)
        probs = self._categorical.probs
        return samples + (probs - probs.detach())
