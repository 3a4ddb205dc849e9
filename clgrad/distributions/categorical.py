"""Categorical(probs= | logits=) (torch.distributions.categorical): class indices.

>>> import clgrad
>>> from clgrad.distributions import Categorical
>>> d = Categorical(logits=clgrad.zeros(2, 4))
>>> lp = d.log_prob(clgrad.tensor([1, 3]))
>>> d.sample().shape, round(lp.tolist()[0], 4), round(d.entropy()[0].item(), 4)
(clgrad.Size([2]), -1.3863, 1.3863)
"""
import math

import clgrad

from . import constraints
from .distribution import Distribution, _size
from .utils import _ProbsLogitsParam

__all__ = ["Categorical"]


class _CategoricalParams:
    """probs, logits, param_shape and _new of a distribution made from the Categorical
    `self._categorical` (OneHotCategorical, ExpRelaxedCategorical, Multinomial)."""

    @property
    def probs(self):
        return self._categorical.probs

    @property
    def logits(self):
        return self._categorical.logits

    @property
    def param_shape(self):
        return self._categorical.param_shape

    def _new(self, *args, **kwargs):
        return self._categorical._new(*args, **kwargs)


class Categorical(_ProbsLogitsParam, Distribution):
    """A class index in 0..K-1 with probabilities `probs` (normalised along the last dim) or
    softmax(`logits`). Samples are drawn on the device by the Gumbel-max rule."""
    arg_constraints = {"probs": constraints.simplex,
                       "logits": constraints.independent(constraints.real, 1)}
    has_enumerate_support = True
    _is_binary = False

    def __init__(self, probs=None, logits=None, validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            if probs.dim() < 1:
                raise ValueError("`probs` parameter must be at least one-dimensional.")
            self.probs = probs / probs.sum(-1, keepdim=True)
        else:
            if logits.dim() < 1:
                raise ValueError("`logits` parameter must be at least one-dimensional.")
            self.logits = logits - logits.logsumexp(dim=-1, keepdim=True)
        self._param = self.probs if probs is not None else self.logits
        self._num_events = self._param.size()[-1]
        batch_shape = self._param.size()[:-1] if self._param.dim() > 1 else clgrad.Size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._expand_param(Categorical, batch_shape, _instance)
        new._num_events = self._num_events
        return new

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self._num_events - 1)

    @property
    def mean(self):
        return clgrad.full(self._extended_shape(), math.nan, dtype=self.probs.dtype,
                           device=self.probs.device)

    @property
    def mode(self):
        return self.probs.argmax(-1)

    @property
    def variance(self):
        return clgrad.full(self._extended_shape(), math.nan, dtype=self.probs.dtype,
                           device=self.probs.device)

    def sample(self, sample_shape=()):
        # Gumbel-max: argmax(log p + G) with G = -log(-log u) is a draw of p, all on the device
        with clgrad.no_grad():
            shape = _size(self._extended_shape(sample_shape), (self._num_events,))
            logits = self.logits if "logits" in self.__dict__ else self.probs.log()
            u = clgrad.rand(*shape, dtype=logits.dtype, device=logits.device)
            u = u.clamp(min=clgrad.finfo(logits.dtype).tiny)
            return (logits - (-u.log()).log()).argmax(-1)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value = value.long().unsqueeze(-1)
        value, log_pmf = clgrad.broadcast_tensors(value, self.logits)
        value = value[..., :1]
        return log_pmf.gather(-1, value).squeeze(-1)

    def entropy(self):
        min_real = clgrad.finfo(self.logits.dtype).min
        logits = clgrad.clamp(self.logits, min=min_real)
        p_log_p = logits * self.probs
        return -p_log_p.sum(-1)

    def enumerate_support(self, expand=True):
        values = clgrad.arange(self._num_events, dtype=clgrad.long, device=self._param.device)
        values = values.view((-1,) + (1,) * len(self._batch_shape))
        if expand:
            values = values.expand((-1,) + tuple(self._batch_shape))
        return values
