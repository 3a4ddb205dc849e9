"""VonMises(loc, concentration) (torch.distributions.von_mises): a distribution of angles.

>>> import clgrad
>>> from clgrad.distributions import VonMises
>>> d = VonMises(clgrad.tensor([0.0]), clgrad.tensor([1.0]))
>>> round(d.log_prob(clgrad.tensor([0.0])).item(), 4), d.sample((5,)).shape
(-1.0738, clgrad.Size([5, 1]))
"""
import math

import clgrad

from . import constraints
from .distribution import Distribution
from .utils import broadcast_all, lazy_property

__all__ = ["VonMises"]


def _log_i0(x):
    """log of the modified Bessel function I0 for x >= 0, from the scaled i0e (no overflow)."""
    return clgrad.special.i0e(x).log() + x


class VonMises(Distribution):
    """The circular von Mises distribution; `loc` and values are angles (modulo 2 pi). Sampled by
    Best and Fisher's rejection method (1979), rounds of three uniforms for every element still
    rejected, bounded."""
    arg_constraints = {"loc": constraints.real, "concentration": constraints.positive}
    support = constraints.real
    has_rsample = False
    _MAX_ROUNDS = 100      # acceptance is above 0.65 per round for every concentration

    def __init__(self, loc, concentration, validate_args=None):
        self.loc, self.concentration = broadcast_all(loc, concentration)
        super().__init__(self.loc.shape, clgrad.Size(), validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(VonMises, batch_shape, _instance, ("loc", "concentration"))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return (self.concentration * clgrad.cos(value - self.loc) - math.log(2 * math.pi)
                - _log_i0(self.concentration))

    @lazy_property
    def _proposal_r(self):
        kappa = self.concentration
        tau = 1 + (1 + 4 * kappa ** 2).sqrt()
        rho = (tau - (2 * tau).sqrt()) / (2 * kappa)
        return clgrad.where(kappa < 1e-5, 1 / kappa + kappa, (1 + rho ** 2) / (2 * rho))

    def sample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        with clgrad.no_grad():
            loc, kappa, r = self.loc, self.concentration, self._proposal_r
            x = clgrad.zeros(*shape, dtype=loc.dtype, device=loc.device)
            done = clgrad.zeros(*shape, dtype=clgrad.bool, device=loc.device)
            for _ in range(self._MAX_ROUNDS):
                u = clgrad.rand(3, *shape, dtype=loc.dtype, device=loc.device)
                u1, u2, u3 = u.unbind()
                z = clgrad.cos(math.pi * u1)
                f = (1 + r * z) / (r + z)
                c = kappa * (r - f)
                accept = ((c * (2 - c) - u2) > 0) | ((c / u2).log() + 1 - c >= 0)
                new = accept & ~done
                x = clgrad.where(new, (u3 - 0.5).sign() * f.clamp(-1, 1).acos(), x)
                done = done | accept
                if bool(done.all()):
                    break
            return (x + math.pi + loc) % (2 * math.pi) - math.pi

    @property
    def mean(self):
        """The circular mean."""
        return self.loc

    @property
    def mode(self):
        return self.loc

    @lazy_property
    def variance(self):
        """The circular variance: 1 - I1(kappa) / I0(kappa)."""
        k = self.concentration
        return 1 - clgrad.special.i1e(k) / clgrad.special.i0e(k)
