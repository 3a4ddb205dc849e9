"""LKJCholesky(dim, concentration) (torch.distributions.lkj_cholesky): Cholesky factors of
random correlation matrices, by the onion method (Lewandowski, Kurowicka and Joe, 2009).

>>> import clgrad
>>> from clgrad.distributions import LKJCholesky
>>> L = LKJCholesky(3, 0.5).sample()
>>> L.shape, [round(v, 5) for v in (L @ L.mT).diagonal().tolist()]
(clgrad.Size([3, 3]), [1.0, 1.0, 1.0])
"""
import math

import clgrad

from . import constraints
from .beta import Beta
from .distribution import Distribution, _size
from .utils import broadcast_all

__all__ = ["LKJCholesky"]


class LKJCholesky(Distribution):
    """The LKJ distribution over lower Cholesky factors of dim x dim correlation matrices, of
    density proportional to det(L L^T)^(concentration - 1)."""
    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky

    def __init__(self, dim, concentration=1.0, validate_args=None):
        if dim < 2:
            raise ValueError(f"Expected dim to be an integer greater than or equal to 2. "
                             f"Found dim={dim}.")
        self.dim = dim
        (self.concentration,) = broadcast_all(concentration)
        batch_shape = self.concentration.size()
        event_shape = clgrad.Size((dim, dim))
        # the squared norms of the rows' off-diagonal parts are Beta-distributed
        marginal_conc = self.concentration + 0.5 * (self.dim - 2)
        offset = clgrad.arange(self.dim - 1, dtype=self.concentration.dtype,
                               device=self.concentration.device)
        offset = clgrad.cat([offset.new_zeros((1,)), offset])
        self._beta = Beta(offset + 0.5, marginal_conc.unsqueeze(-1) - 0.5 * offset)
        super().__init__(batch_shape, event_shape, validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LKJCholesky, _instance)
        batch_shape = _size(batch_shape)
        new.dim = self.dim
        new.concentration = self.concentration.expand(batch_shape)
        new._beta = self._beta.expand(_size(batch_shape, (self.dim,)))
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def sample(self, sample_shape=()):
        with clgrad.no_grad():
            y = self._beta.sample(sample_shape).unsqueeze(-1)
            u_normal = clgrad.randn(*self._extended_shape(sample_shape), dtype=y.dtype,
                                    device=y.device).tril(-1)
            norm = u_normal.norm(dim=-1, keepdim=True)
            # row 0 has no off-diagonal part: its direction is zero, not 0 / 0
            u_hypersphere = u_normal / clgrad.where(norm > 0, norm, 1.0)
            w = clgrad.sqrt(y) * u_hypersphere
            eps = clgrad.finfo(w.dtype).tiny
            diag_elems = clgrad.clamp(1 - clgrad.sum(w ** 2, dim=-1), min=eps).sqrt()
            return w + clgrad.diag_embed(diag_elems)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        diag_elems = value.diagonal(dim1=-1, dim2=-2)[..., 1:]
        order = clgrad.arange(2, self.dim + 1, device=self.concentration.device).to(
            self.concentration.dtype)
        order = 2 * (self.concentration - 1).unsqueeze(-1) + self.dim - order
        unnormalized_log_pdf = clgrad.sum(order * diag_elems.log(), dim=-1)
        dm1 = self.dim - 1
        alpha = self.concentration + 0.5 * dm1
        denominator = clgrad.lgamma(alpha) * dm1
        numerator = clgrad.mvlgamma(alpha - 0.5, dm1)
        pi_constant = 0.5 * dm1 * math.log(math.pi)
        return unnormalized_log_pdf - (pi_constant + numerator - denominator)
