"""FisherSnedecor(df1, df2) (torch.distributions.fishersnedecor): the F distribution, a ratio
of scaled chi-squared draws (reparameterised through Gamma).

>>> import clgrad
>>> from clgrad.distributions import FisherSnedecor
>>> FisherSnedecor(clgrad.tensor([4.0]), clgrad.tensor([6.0])).mean.item()
1.5
"""
import math

import clgrad

from . import constraints
from .distribution import Distribution
from .gamma import Gamma
from .utils import broadcast_all

__all__ = ["FisherSnedecor"]


class FisherSnedecor(Distribution):
    """F(df1, df2) = (X1 / df1) / (X2 / df2) for chi-squared X1, X2."""
    arg_constraints = {"df1": constraints.positive, "df2": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, df1, df2, validate_args=None):
        self.df1, self.df2 = broadcast_all(df1, df2)
        self._gamma1 = Gamma(self.df1 * 0.5, self.df1)
        self._gamma2 = Gamma(self.df2 * 0.5, self.df2)
        super().__init__(self.df1.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._expand_params(FisherSnedecor, batch_shape, _instance, ("df1", "df2"))
        new._gamma1 = self._gamma1.expand(batch_shape)
        new._gamma2 = self._gamma2.expand(batch_shape)
        return new

    @property
    def mean(self):
        df2 = self.df2
        return clgrad.where(df2 > 2, df2 / (df2 - 2), math.nan)

    @property
    def mode(self):
        mode = (self.df1 - 2) / self.df1 * self.df2 / (self.df2 + 2)
        return clgrad.where(self.df1 > 2, mode, math.nan)

    @property
    def variance(self):
        df1, df2 = self.df1, self.df2
        var = (2 * df2.pow(2) * (df1 + df2 - 2)
               / (df1 * (df2 - 2).pow(2) * (df2 - 4)))
        return clgrad.where(df2 > 4, var, math.nan)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        tiny = clgrad.finfo(self.df1.dtype).tiny
        X1 = self._gamma1.rsample(sample_shape).reshape(shape)
        X2 = self._gamma2.rsample(sample_shape).reshape(shape).clamp(min=tiny)
        return (X1 / X2).clamp(min=tiny)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        ct1 = self.df1 * 0.5
        ct2 = self.df2 * 0.5
        ct3 = self.df1 / self.df2
        t1 = (ct1 + ct2).lgamma() - ct1.lgamma() - ct2.lgamma()
        t2 = ct1 * ct3.log() + (ct1 - 1) * clgrad.log(value)
        t3 = (ct1 + ct2) * clgrad.log1p(ct3 * value)
        return t1 + t2 - t3
