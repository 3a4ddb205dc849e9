"""GeneralizedPareto(loc, scale, concentration) (torch.distributions.generalized_pareto).

>>> import clgrad
>>> from clgrad.distributions import GeneralizedPareto
>>> d = GeneralizedPareto(clgrad.tensor([0.0]), clgrad.tensor([1.0]), clgrad.tensor([0.0]))
>>> round(d.log_prob(clgrad.tensor([1.0])).item(), 4)        # Exponential(1)
-1.0
"""
import math
from numbers import Real

import clgrad

from . import constraints
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["GeneralizedPareto"]


class GeneralizedPareto(Distribution):
    """Exponential (concentration 0), Pareto (> 0) and bounded (< 0) tails in one family;
    rsample inverts the cdf."""
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive,
                       "concentration": constraints.real}
    has_rsample = True

    def __init__(self, loc, scale, concentration, validate_args=None):
        self.loc, self.scale, self.concentration = broadcast_all(loc, scale, concentration)
        super().__init__(self.loc.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(GeneralizedPareto, batch_shape, _instance,
                                   ("loc", "scale", "concentration"))

    def _safe_conc(self):
        """(concentration == 0, the concentration with 1 where it is 0): the zero case takes its
        own (exponential) formula and must not divide by zero in the other branch."""
        eq_zero = clgrad.isclose(self.concentration, clgrad.zeros_like(self.concentration))
        return eq_zero, clgrad.where(eq_zero, 1.0, self.concentration)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        u = clgrad.rand(*shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.icdf(u)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = (value - self.loc) / self.scale
        eq_zero, safe_conc = self._safe_conc()
        y = 1 / safe_conc + clgrad.ones_like(z)
        where_nonzero = clgrad.where(y == 0, y, y * clgrad.log1p(safe_conc * z))
        log_scale = math.log(self.scale) if isinstance(self.scale, Real) else self.scale.log()
        return -log_scale - clgrad.where(eq_zero, z, where_nonzero)

    def log_survival_function(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = (value - self.loc) / self.scale
        eq_zero, safe_conc = self._safe_conc()
        return clgrad.where(eq_zero, -z, -clgrad.log1p(safe_conc * z) / safe_conc)

    def log_cdf(self, value):
        return clgrad.log1p(-clgrad.exp(self.log_survival_function(value)))

    def cdf(self, value):
        return clgrad.exp(self.log_cdf(value))

    def icdf(self, value):
        eq_zero, safe_conc = self._safe_conc()
        logu = clgrad.log1p(-value)
        where_nonzero = self.loc + self.scale / safe_conc * clgrad.expm1(-safe_conc * logu)
        return clgrad.where(eq_zero, self.loc - self.scale * logu, where_nonzero)

    @property
    def mean(self):
        valid = self.concentration < 1
        safe = clgrad.where(valid, self.concentration, 0.5)
        return clgrad.where(valid, self.loc + self.scale / (1 - safe), math.nan)

    @property
    def variance(self):
        valid = self.concentration < 0.5
        safe = clgrad.where(valid, self.concentration, 0.25)
        result = self.scale ** 2 / ((1 - safe) ** 2 * (1 - 2 * safe))
        return clgrad.where(valid, result, math.nan)

    def entropy(self):
        ans = clgrad.log(self.scale) + self.concentration + 1
        return ans.expand(self._batch_shape)

    @property
    def mode(self):
        return self.loc

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        lower = self.loc
        upper = clgrad.where(self.concentration < 0, lower - self.scale / self.concentration,
                             math.inf)
        return constraints.interval(lower, upper)
