"""LogisticNormal(loc, scale) (torch.distributions.logistic_normal): a Normal vector pushed to
the simplex by stick breaking.

>>> import clgrad
>>> from clgrad.distributions import LogisticNormal
>>> d = LogisticNormal(clgrad.zeros(3), clgrad.ones(3))
>>> d.event_shape, round(d.sample().sum().item(), 5)
(clgrad.Size([4]), 1.0)
"""
from . import constraints
from .normal import Normal
from .transformed_distribution import TransformedDistribution
from .transforms import StickBreakingTransform

__all__ = ["LogisticNormal"]


class LogisticNormal(TransformedDistribution):
    """StickBreakingTransform of Normal(loc, scale) over the last dim (K - 1 -> K)."""
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        base_dist = Normal(loc, scale, validate_args=validate_args)
        if not base_dist.batch_shape:
            base_dist = base_dist.expand([1])
        super().__init__(base_dist, StickBreakingTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LogisticNormal, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def loc(self):
        return self.base_dist.base_dist.loc

    @property
    def scale(self):
        return self.base_dist.base_dist.scale
