"""StudentT(df, loc, scale) (torch.distributions.studentT).

>>> import clgrad
>>> from clgrad.distributions import StudentT
>>> round(StudentT(clgrad.tensor([3.0])).log_prob(clgrad.tensor([0.0])).item(), 4)
-1.0009
"""
import math

import clgrad

from . import constraints
from .chi2 import Chi2
from .distribution import Distribution
from .utils import _standard_normal, broadcast_all

__all__ = ["StudentT"]


class StudentT(Distribution):
    """Student's t of `df` degrees of freedom, shifted by loc and scaled by scale; rsample is
    loc + scale * X / sqrt(Z / df), X normal and Z chi-squared (reparameterised in df too)."""
    arg_constraints = {"df": constraints.positive, "loc": constraints.real,
                       "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    @property
    def mean(self):
        return clgrad.where(self.df > 1, self.loc, math.nan)

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        df = self.df
        finite = self.scale.pow(2) * df / (df - 2).clamp(min=1e-30)
        return clgrad.where(df > 2, finite, clgrad.where(df > 1, math.inf, math.nan))

    def __init__(self, df, loc=0.0, scale=1.0, validate_args=None):
        self.df, self.loc, self.scale = broadcast_all(df, loc, scale)
        self._chi2 = Chi2(self.df)
        batch_shape = self.df.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._expand_params(StudentT, batch_shape, _instance, ("df", "loc", "scale"))
        new._chi2 = self._chi2.expand(batch_shape)
        return new

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        X = _standard_normal(shape, dtype=self.df.dtype, device=self.df.device)
        Z = self._chi2.rsample(sample_shape)
        Y = X * clgrad.rsqrt(Z / self.df)
        return self.loc + self.scale * Y

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        y = (value - self.loc) / self.scale
        Z = (self.scale.log() + 0.5 * self.df.log() + 0.5 * math.log(math.pi)
             + clgrad.lgamma(0.5 * self.df) - clgrad.lgamma(0.5 * (self.df + 1.0)))
        return -0.5 * (self.df + 1.0) * clgrad.log1p(y ** 2.0 / self.df) - Z

    def entropy(self):
        lbeta = (clgrad.lgamma(0.5 * self.df) + math.lgamma(0.5)
                 - clgrad.lgamma(0.5 * (self.df + 1)))
        return (self.scale.log()
                + 0.5 * (self.df + 1) * (clgrad.digamma(0.5 * (self.df + 1))
                                         - clgrad.digamma(0.5 * self.df))
                + 0.5 * self.df.log() + lbeta)
