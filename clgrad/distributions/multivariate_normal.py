"""MultivariateNormal(loc, covariance_matrix= | precision_matrix= | scale_tril=)
(torch.distributions.multivariate_normal).

>>> import clgrad
>>> from clgrad.distributions import MultivariateNormal
>>> d = MultivariateNormal(clgrad.zeros(2), covariance_matrix=clgrad.eye(2))
>>> round(d.log_prob(clgrad.zeros(2)).item(), 4), d.rsample((3,)).shape
(-1.8379, clgrad.Size([3, 2]))
"""
import math

import clgrad

from . import constraints
from .distribution import Distribution, _size
from .utils import _standard_normal, lazy_property

__all__ = ["MultivariateNormal"]


def _batch_mv(bmat, bvec):
    """Matrix-vector products over broadcast batch dims."""
    return clgrad.matmul(bmat, bvec.unsqueeze(-1)).squeeze(-1)


def _batch_mahalanobis(bL, bx):
    """x^T (L L^T)^-1 x for lower-triangular L, over broadcast batch dims."""
    sol = clgrad.linalg.solve_triangular(bL, bx.unsqueeze(-1), upper=False)
    return sol.squeeze(-1).pow(2).sum(-1)


def _precision_to_scale_tril(P):
    """The lower Cholesky factor of P^-1, from the Cholesky factor of P with its order flipped."""
    Lf = clgrad.linalg.cholesky(clgrad.flip(P, (-2, -1)))
    L_inv = clgrad.transpose(clgrad.flip(Lf, (-2, -1)), -2, -1)
    Id = clgrad.eye(P.shape[-1], dtype=P.dtype, device=P.device)
    return clgrad.linalg.solve_triangular(L_inv, Id, upper=False)


class MultivariateNormal(Distribution):
    """The multivariate normal of mean `loc`, parameterised by exactly one of its covariance
    matrix, its precision matrix or the lower Cholesky factor of its covariance (scale_tril);
    rsample is loc + L eps."""
    arg_constraints = {"loc": constraints.real_vector,
                       "covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite,
                       "scale_tril": constraints.lower_cholesky}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, covariance_matrix=None, precision_matrix=None, scale_tril=None,
                 validate_args=None):
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        if (covariance_matrix is not None) + (scale_tril is not None) + \
                (precision_matrix is not None) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or "
                             "scale_tril may be specified.")
        for name, m in (("scale_tril", scale_tril), ("covariance_matrix", covariance_matrix),
                        ("precision_matrix", precision_matrix)):
            if m is not None:
                if m.dim() < 2:
                    raise ValueError(f"{name} matrix must be at least two-dimensional, with "
                                     "optional leading batch dimensions")
                batch_shape = clgrad.broadcast_shapes(m.shape[:-2], loc.shape[:-1])
                setattr(self, name, m.expand(_size(batch_shape, (-1, -1))))
                given = m
        self.loc = loc.expand(_size(batch_shape, (-1,)))
        event_shape = self.loc.shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)
        if scale_tril is not None:
            self._unbroadcasted_scale_tril = given
        elif covariance_matrix is not None:
            self._unbroadcasted_scale_tril = clgrad.linalg.cholesky(given)
        else:
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(given)

    def expand(self, batch_shape, _instance=None):
        new = self._expand_params(MultivariateNormal, batch_shape, _instance,
                                  ("loc", "covariance_matrix", "scale_tril", "precision_matrix"))
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril
        return new

    def _matrix_shape(self):
        return _size(self._batch_shape, self._event_shape, self._event_shape)

    @lazy_property
    def scale_tril(self):
        return self._unbroadcasted_scale_tril.expand(self._matrix_shape())

    @lazy_property
    def covariance_matrix(self):
        L = self._unbroadcasted_scale_tril
        return clgrad.matmul(L, L.mT).expand(self._matrix_shape())

    @lazy_property
    def precision_matrix(self):
        return clgrad.cholesky_inverse(self._unbroadcasted_scale_tril).expand(self._matrix_shape())

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return self._unbroadcasted_scale_tril.pow(2).sum(-1).expand(
            _size(self._batch_shape, self._event_shape))

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        eps = _standard_normal(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + _batch_mv(self._unbroadcasted_scale_tril, eps)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        diff = value - self.loc
        M = _batch_mahalanobis(self._unbroadcasted_scale_tril, diff)
        half_log_det = self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + M) - half_log_det

    def entropy(self):
        half_log_det = self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        H = 0.5 * self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + half_log_det
        if len(self._batch_shape) == 0:
            return H
        return H.expand(self._batch_shape)
