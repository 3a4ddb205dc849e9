"""LowRankMultivariateNormal(loc, cov_factor, cov_diag)
(torch.distributions.lowrank_multivariate_normal): covariance W W^T + diag(D), handled through
the m x m capacitance matrix.

>>> import clgrad
>>> from clgrad.distributions import LowRankMultivariateNormal
>>> d = LowRankMultivariateNormal(clgrad.zeros(3), clgrad.zeros(3, 1), clgrad.ones(3))
>>> round(d.log_prob(clgrad.zeros(3)).item(), 4)
-2.7568
"""
import math

import clgrad

from . import constraints
from .distribution import Distribution, _size
from .multivariate_normal import _batch_mahalanobis, _batch_mv
from .utils import _standard_normal, lazy_property

__all__ = ["LowRankMultivariateNormal"]


def _batch_capacitance_tril(W, D):
    """The Cholesky factor of I + W^T D^-1 W."""
    m = W.size(-1)
    Wt_Dinv = W.mT / D.unsqueeze(-2)
    K = clgrad.matmul(Wt_Dinv, W) + clgrad.eye(m, dtype=W.dtype, device=W.device)
    return clgrad.linalg.cholesky(K)


def _batch_lowrank_logdet(W, D, capacitance_tril):
    """log det(W W^T + D) by the matrix determinant lemma."""
    return (2 * capacitance_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
            + D.log().sum(-1))


def _batch_lowrank_mahalanobis(W, D, x, capacitance_tril):
    """x^T (W W^T + D)^-1 x by the Woodbury identity."""
    Wt_Dinv = W.mT / D.unsqueeze(-2)
    Wt_Dinv_x = _batch_mv(Wt_Dinv, x)
    return (x.pow(2) / D).sum(-1) - _batch_mahalanobis(capacitance_tril, Wt_Dinv_x)


class LowRankMultivariateNormal(Distribution):
    """A multivariate normal with covariance cov_factor @ cov_factor.T + diag(cov_diag)."""
    arg_constraints = {"loc": constraints.real_vector,
                       "cov_factor": constraints.independent(constraints.real, 2),
                       "cov_diag": constraints.independent(constraints.positive, 1)}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, cov_factor, cov_diag, validate_args=None):
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        event_shape = loc.shape[-1:]
        if cov_factor.dim() < 2:
            raise ValueError("cov_factor must be at least two-dimensional, with optional "
                             "leading batch dimensions")
        if tuple(cov_factor.shape[-2:-1]) != tuple(event_shape):
            raise ValueError(f"cov_factor must be a batch of matrices with shape "
                             f"{event_shape[0]} x m")
        if tuple(cov_diag.shape[-1:]) != tuple(event_shape):
            raise ValueError(f"cov_diag must be a batch of vectors with shape {event_shape}")
        loc_ = loc.unsqueeze(-1)
        cov_diag_ = cov_diag.unsqueeze(-1)
        try:
            loc_, self.cov_factor, cov_diag_ = clgrad.broadcast_tensors(loc_, cov_factor,
                                                                        cov_diag_)
        except (RuntimeError, ValueError) as e:
            raise ValueError(f"Incompatible batch shapes: loc {loc.shape}, cov_factor "
                             f"{cov_factor.shape}, cov_diag {cov_diag.shape}") from e
        self.loc = loc_[..., 0]
        self.cov_diag = cov_diag_[..., 0]
        batch_shape = self.loc.shape[:-1]
        self._unbroadcasted_cov_factor = cov_factor
        self._unbroadcasted_cov_diag = cov_diag
        self._capacitance_tril = _batch_capacitance_tril(cov_factor, cov_diag)
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._expand_params(LowRankMultivariateNormal, batch_shape, _instance,
                                  ("loc", "cov_diag", "cov_factor"))
        new._unbroadcasted_cov_factor = self._unbroadcasted_cov_factor
        new._unbroadcasted_cov_diag = self._unbroadcasted_cov_diag
        new._capacitance_tril = self._capacitance_tril
        return new

    def _matrix_shape(self):
        return _size(self._batch_shape, self._event_shape, self._event_shape)

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @lazy_property
    def variance(self):
        return (self._unbroadcasted_cov_factor.pow(2).sum(-1)
                + self._unbroadcasted_cov_diag).expand(_size(self._batch_shape,
                                                             self._event_shape))

    @lazy_property
    def scale_tril(self):
        n = self._event_shape[0]
        D_sqrt = self._unbroadcasted_cov_diag.sqrt().unsqueeze(-1)
        Dinvsqrt_W = self._unbroadcasted_cov_factor / D_sqrt
        K = clgrad.matmul(Dinvsqrt_W, Dinvsqrt_W.mT) + clgrad.eye(
            n, dtype=D_sqrt.dtype, device=D_sqrt.device)
        return (D_sqrt * clgrad.linalg.cholesky(K)).expand(self._matrix_shape())

    @lazy_property
    def covariance_matrix(self):
        W = self._unbroadcasted_cov_factor
        cov = clgrad.matmul(W, W.mT) + clgrad.diag_embed(self._unbroadcasted_cov_diag)
        return cov.expand(self._matrix_shape())

    @lazy_property
    def precision_matrix(self):
        W = self._unbroadcasted_cov_factor
        D = self._unbroadcasted_cov_diag
        Wt_Dinv = W.mT / D.unsqueeze(-2)
        A = clgrad.linalg.solve_triangular(self._capacitance_tril, Wt_Dinv, upper=False)
        precision = clgrad.diag_embed(D.reciprocal()) - A.mT @ A
        return precision.expand(self._matrix_shape())

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        W_shape = _size(shape[:-1], self.cov_factor.shape[-1:])
        eps_W = _standard_normal(W_shape, dtype=self.loc.dtype, device=self.loc.device)
        eps_D = _standard_normal(shape, dtype=self.loc.dtype, device=self.loc.device)
        return (self.loc + _batch_mv(self._unbroadcasted_cov_factor, eps_W)
                + self._unbroadcasted_cov_diag.sqrt() * eps_D)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        diff = value - self.loc
        M = _batch_lowrank_mahalanobis(self._unbroadcasted_cov_factor,
                                       self._unbroadcasted_cov_diag, diff,
                                       self._capacitance_tril)
        log_det = _batch_lowrank_logdet(self._unbroadcasted_cov_factor,
                                        self._unbroadcasted_cov_diag, self._capacitance_tril)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + log_det + M)

    def entropy(self):
        log_det = _batch_lowrank_logdet(self._unbroadcasted_cov_factor,
                                        self._unbroadcasted_cov_diag, self._capacitance_tril)
        H = 0.5 * (self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + log_det)
        if len(self._batch_shape) == 0:
            return H
        return H.expand(self._batch_shape)
