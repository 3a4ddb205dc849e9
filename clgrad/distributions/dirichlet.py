"""Dirichlet(concentration) (torch.distributions.dirichlet).

rsample normalises device Gamma draws, g / g.sum(-1): its gradient is the gamma sampler's
implicit one carried through the normalisation by autograd (torch computes the same
reparameterisation with its own Dirichlet approximation, _dirichlet_grad).

>>> import clgrad
>>> from clgrad.distributions import Dirichlet
>>> d = Dirichlet(clgrad.tensor([1.0, 2.0, 3.0]))
>>> x = d.sample(); round(x.sum().item(), 5), d.event_shape
(1.0, clgrad.Size([3]))
"""
import clgrad
from clgrad._sampling import _standard_gamma

from . import constraints
from .exp_family import ExponentialFamily

__all__ = ["Dirichlet"]


class Dirichlet(ExponentialFamily):
    """The Dirichlet distribution over the simplex, of concentration vectors (last dim)."""
    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration, validate_args=None):
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        batch_shape, event_shape = concentration.shape[:-1], concentration.shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Dirichlet, batch_shape, _instance, ("concentration",))

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        g = _standard_gamma(self.concentration.expand(shape))
        return g / g.sum(-1, True)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return (clgrad.xlogy(self.concentration - 1.0, value).sum(-1)
                + clgrad.lgamma(self.concentration.sum(-1))
                - clgrad.lgamma(self.concentration).sum(-1))

    @property
    def mean(self):
        return self.concentration / self.concentration.sum(-1, True)

    @property
    def mode(self):
        concm1 = (self.concentration - 1).clamp(min=0.0)
        mode = concm1 / concm1.sum(-1, True)
        # every concentration below 1: the mode is the corner of the largest one
        corner = clgrad.nn.functional.one_hot(concm1.argmax(-1), concm1.shape[-1]).to(mode)
        return clgrad.where((self.concentration < 1).all(-1, keepdim=True), corner, mode)

    @property
    def variance(self):
        con0 = self.concentration.sum(-1, True)
        return (self.concentration * (con0 - self.concentration)
                / (con0.pow(2) * (con0 + 1)))

    def entropy(self):
        k = self.concentration.size(-1)
        a0 = self.concentration.sum(-1)
        return (clgrad.lgamma(self.concentration).sum(-1) - clgrad.lgamma(a0)
                - (k - a0) * clgrad.digamma(a0)
                - ((self.concentration - 1.0) * clgrad.digamma(self.concentration)).sum(-1))

    @property
    def _natural_params(self):
        return (self.concentration,)

    def _log_normalizer(self, x):
        return x.lgamma().sum(-1) - clgrad.lgamma(x.sum(-1))
