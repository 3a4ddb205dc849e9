"""ContinuousBernoulli(probs= | logits=) (torch.distributions.continuous_bernoulli): the
normalised Bernoulli density on [0, 1] (Loaiza-Ganem and Cunningham, 2019).

>>> import clgrad
>>> from clgrad.distributions import ContinuousBernoulli
>>> d = ContinuousBernoulli(probs=clgrad.tensor([0.2]))
>>> round(d.mean.item(), 4), round(d.cdf(clgrad.tensor([1.0])).item(), 4)
(0.388, 1.0)
"""
import math

import clgrad
from clgrad.nn.functional import binary_cross_entropy_with_logits

from . import constraints
from .exp_family import ExponentialFamily
from .utils import _ProbsLogitsParam, broadcast_all, clamp_probs, lazy_property, logits_to_probs

__all__ = ["ContinuousBernoulli"]


class ContinuousBernoulli(_ProbsLogitsParam, ExponentialFamily):
    """Density proportional to p^x (1 - p)^(1 - x) on [0, 1]; near p = 1/2 (inside `lims`)
    Taylor expansions keep the normaliser and moments stable."""
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    _mean_carrier_measure = 0
    has_rsample = True

    def __init__(self, probs=None, logits=None, lims=(0.499, 0.501), validate_args=None):
        self._init_param(probs, logits)
        if probs is not None:
            if validate_args is not None and \
                    not bool(self.arg_constraints["probs"].check(self.probs).all()):
                raise ValueError("The parameter probs has invalid values")
            self.probs = self._param = clamp_probs(self.probs)
        self._lims = lims
        super().__init__(self._param.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._expand_param(ContinuousBernoulli, batch_shape, _instance)
        new._lims = self._lims
        return new

    def _outside_unstable_region(self):
        return (self.probs <= self._lims[0]) | (self.probs > self._lims[1])

    def _cut_probs(self):
        return clgrad.where(self._outside_unstable_region(), self.probs, self._lims[0])

    def _cont_bern_log_norm(self):
        """The log normalising constant as a function of probs."""
        cut = self._cut_probs()
        below = clgrad.where(cut <= 0.5, cut, 0.0)
        above = clgrad.where(cut >= 0.5, cut, 1.0)
        log_norm = clgrad.log(clgrad.abs(clgrad.log1p(-cut) - clgrad.log(cut))) - clgrad.where(
            cut <= 0.5, clgrad.log1p(-2.0 * below), clgrad.log(2.0 * above - 1.0))
        x = (self.probs - 0.5).pow(2)
        taylor = math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * x) * x
        return clgrad.where(self._outside_unstable_region(), log_norm, taylor)

    @property
    def mean(self):
        cut = self._cut_probs()
        mus = cut / (2.0 * cut - 1.0) + 1.0 / (clgrad.log1p(-cut) - clgrad.log(cut))
        x = self.probs - 0.5
        taylor = 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * x.pow(2)) * x
        return clgrad.where(self._outside_unstable_region(), mus, taylor)

    @property
    def stddev(self):
        return self.variance.sqrt()

    @property
    def variance(self):
        cut = self._cut_probs()
        vs = (cut * (cut - 1.0) / (1.0 - 2.0 * cut).pow(2)
              + 1.0 / (clgrad.log1p(-cut) - clgrad.log(cut)).pow(2))
        x = (self.probs - 0.5).pow(2)
        taylor = 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * x) * x
        return clgrad.where(self._outside_unstable_region(), vs, taylor)

    @lazy_property
    def probs(self):
        return clamp_probs(logits_to_probs(self.logits, is_binary=True))

    def sample(self, sample_shape=()):
        with clgrad.no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        u = clgrad.rand(*shape, dtype=self.probs.dtype, device=self.probs.device)
        return self.icdf(u)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return (-binary_cross_entropy_with_logits(logits, value, reduction="none")
                + self._cont_bern_log_norm())

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        cut = self._cut_probs()
        cdfs = (cut.pow(value) * (1.0 - cut).pow(1.0 - value) + cut - 1.0) / (2.0 * cut - 1.0)
        unbounded = clgrad.where(self._outside_unstable_region(), cdfs, value)
        return clgrad.where(value <= 0.0, 0.0, clgrad.where(value >= 1.0, 1.0, unbounded))

    def icdf(self, value):
        cut = self._cut_probs()
        inv = ((clgrad.log1p(-cut + value * (2.0 * cut - 1.0)) - clgrad.log1p(-cut))
               / (clgrad.log(cut) - clgrad.log1p(-cut)))
        return clgrad.where(self._outside_unstable_region(), inv, value)

    def entropy(self):
        log_probs0 = clgrad.log1p(-self.probs)
        log_probs1 = clgrad.log(self.probs)
        return self.mean * (log_probs0 - log_probs1) - self._cont_bern_log_norm() - log_probs0

    @property
    def _natural_params(self):
        return (self.logits,)

    def _log_normalizer(self, x):
        """The log normalising constant as a function of the natural parameter."""
        out = (x <= self._lims[0] - 0.5) | (x > self._lims[1] - 0.5)
        cut = clgrad.where(out, x, self._lims[0] - 0.5)
        log_norm = clgrad.log(clgrad.abs(clgrad.expm1(cut))) - clgrad.log(clgrad.abs(cut))
        taylor = 0.5 * x + x.pow(2) / 24.0 - x.pow(4) / 2880.0
        return clgrad.where(out, log_norm, taylor)
