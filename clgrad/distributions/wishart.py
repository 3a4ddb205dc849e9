"""Wishart(df, covariance_matrix= | precision_matrix= | scale_tril=)
(torch.distributions.wishart): random positive-definite matrices, sampled by Bartlett's
decomposition (chi-squared diagonal through the device Gamma sampler, normal below it).

>>> import clgrad
>>> from clgrad.distributions import Wishart
>>> d = Wishart(clgrad.tensor(5.0), covariance_matrix=clgrad.eye(2))
>>> d.mean.tolist(), d.sample((3,)).shape
([[5.0, 0.0], [0.0, 5.0]], clgrad.Size([3, 2, 2]))
"""
import math
import warnings
from numbers import Number

import clgrad

from . import constraints
from .chi2 import Chi2
from .distribution import Distribution, _size
from .exp_family import ExponentialFamily
from .multivariate_normal import _precision_to_scale_tril
from .utils import lazy_property

__all__ = ["Wishart"]

_log_2 = math.log(2)


def _mvdigamma(x, p):
    if not bool(x.gt((p - 1) / 2).all()):
        raise AssertionError("Wrong domain for multivariate digamma function.")
    half = clgrad.arange(p, dtype=x.dtype, device=x.device) / 2
    return clgrad.digamma(x.unsqueeze(-1) - half).sum(-1)


class Wishart(ExponentialFamily):
    """The Wishart distribution of `df` degrees of freedom and scale matrix given by exactly one
    of its covariance, its precision or the covariance's lower Cholesky factor."""
    support = constraints.positive_definite
    has_rsample = True
    _mean_carrier_measure = 0

    @property
    def arg_constraints(self):
        return {"covariance_matrix": constraints.positive_definite,
                "precision_matrix": constraints.positive_definite,
                "scale_tril": constraints.lower_cholesky,
                "df": constraints.greater_than(self.event_shape[-1] - 1)}

    def __init__(self, df, covariance_matrix=None, precision_matrix=None, scale_tril=None,
                 validate_args=None):
        if (covariance_matrix is not None) + (scale_tril is not None) + \
                (precision_matrix is not None) != 1:
            raise AssertionError("Exactly one of covariance_matrix or precision_matrix or "
                                 "scale_tril may be specified.")
        param = next(p for p in (covariance_matrix, precision_matrix, scale_tril)
                     if p is not None)
        if param.dim() < 2:
            raise ValueError("scale_tril must be at least two-dimensional, with optional "
                             "leading batch dimensions")
        if isinstance(df, Number):
            batch_shape = _size(param.shape[:-2])
            self.df = clgrad.tensor(float(df), dtype=param.dtype, device=param.device)
        else:
            batch_shape = clgrad.broadcast_shapes(param.shape[:-2], df.shape)
            self.df = df.expand(batch_shape)
        event_shape = param.shape[-2:]
        if bool(self.df.le(event_shape[-1] - 1).any()):
            raise ValueError(f"Value of df={df} expected to be greater than ndim - 1 = "
                             f"{event_shape[-1] - 1}.")
        for name, m in (("scale_tril", scale_tril), ("covariance_matrix", covariance_matrix),
                        ("precision_matrix", precision_matrix)):
            if m is not None:
                setattr(self, name, m.expand(_size(batch_shape, (-1, -1))))
        if bool(self.df.lt(event_shape[-1]).any()):
            warnings.warn("Low df values detected. Singular samples are highly likely to occur "
                          "for ndim - 1 < df < ndim.")
        super().__init__(batch_shape, event_shape, validate_args=validate_args)
        if scale_tril is not None:
            self._unbroadcasted_scale_tril = scale_tril
        elif covariance_matrix is not None:
            self._unbroadcasted_scale_tril = clgrad.linalg.cholesky(covariance_matrix)
        else:
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(precision_matrix)
        self._dist_chi2 = self._chi2()

    def _chi2(self):
        """The Bartlett factor's squared diagonal: Chi2(df - i) for i = 0..p-1."""
        p = self._event_shape[-1]
        steps = clgrad.arange(p, dtype=self._unbroadcasted_scale_tril.dtype,
                              device=self._unbroadcasted_scale_tril.device)
        return Chi2(df=self.df.unsqueeze(-1) - steps.expand(_size(self._batch_shape, (-1,))))

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Wishart, _instance)
        batch_shape = _size(batch_shape)
        cov_shape = _size(batch_shape, self.event_shape)
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril.expand(cov_shape)
        new.df = self.df.expand(batch_shape)
        for name in ("covariance_matrix", "scale_tril", "precision_matrix"):
            if name in self.__dict__:
                setattr(new, name, getattr(self, name).expand(cov_shape))
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._dist_chi2 = new._chi2()
        new._validate_args = self._validate_args
        return new

    @lazy_property
    def scale_tril(self):
        return self._unbroadcasted_scale_tril.expand(_size(self._batch_shape, self._event_shape))

    @lazy_property
    def covariance_matrix(self):
        L = self._unbroadcasted_scale_tril
        return (L @ L.mT).expand(_size(self._batch_shape, self._event_shape))

    @lazy_property
    def precision_matrix(self):
        return clgrad.cholesky_inverse(self._unbroadcasted_scale_tril).expand(
            _size(self._batch_shape, self._event_shape))

    @property
    def mean(self):
        return self.df.reshape(_size(self._batch_shape, (1, 1))) * self.covariance_matrix

    @property
    def mode(self):
        factor = self.df - self.covariance_matrix.shape[-1] - 1
        factor = clgrad.where(factor <= 0, math.nan, factor)
        return factor.reshape(_size(self._batch_shape, (1, 1))) * self.covariance_matrix

    @property
    def variance(self):
        V = self.covariance_matrix
        diag_V = V.diagonal(dim1=-2, dim2=-1)
        return self.df.reshape(_size(self._batch_shape, (1, 1))) * (
            V.pow(2) + diag_V.unsqueeze(-1) * diag_V.unsqueeze(-2))

    def _bartlett_sampling(self, sample_shape=()):
        p = self._event_shape[-1]
        eps = clgrad.finfo(self.df.dtype).eps
        diag = self._dist_chi2.rsample(sample_shape).sqrt().clamp(min=eps)
        lower = clgrad.randn(*_size(sample_shape, self._batch_shape, (p, p)), dtype=diag.dtype,
                             device=diag.device).tril(-1)
        chol = self._unbroadcasted_scale_tril @ (lower + clgrad.diag_embed(diag))
        return chol @ chol.mT

    def rsample(self, sample_shape=(), max_try_correction=None):
        """Bartlett draws; a draw that is numerically singular is redrawn, at most
        `max_try_correction` (10) times, as torch's."""
        max_try_correction = 10 if max_try_correction is None else max_try_correction
        sample_shape = _size(sample_shape)
        sample = self._bartlett_sampling(sample_shape)
        bad = ~self.support.check(sample)
        for _ in range(max_try_correction):
            if not bool(bad.any()):
                break
            sample = clgrad.where(bad[..., None, None], self._bartlett_sampling(sample_shape),
                                  sample)
            bad = ~self.support.check(sample)
        return sample

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        nu = self.df
        p = self._event_shape[-1]
        L = self._unbroadcasted_scale_tril
        return (-nu * (p * _log_2 / 2 + L.diagonal(dim1=-2, dim2=-1).log().sum(-1))
                - clgrad.mvlgamma(nu / 2, p=p)
                + (nu - p - 1) / 2 * clgrad.linalg.slogdet(value).logabsdet
                - clgrad.cholesky_solve(value, L).diagonal(dim1=-2, dim2=-1).sum(dim=-1) / 2)

    def entropy(self):
        nu = self.df
        p = self._event_shape[-1]
        L = self._unbroadcasted_scale_tril
        return ((p + 1) * (p * _log_2 / 2 + L.diagonal(dim1=-2, dim2=-1).log().sum(-1))
                + clgrad.mvlgamma(nu / 2, p=p) - (nu - p - 1) / 2 * _mvdigamma(nu / 2, p=p)
                + nu * p / 2)

    @property
    def _natural_params(self):
        p = self._event_shape[-1]
        return -self.precision_matrix / 2, (self.df - p - 1) / 2

    def _log_normalizer(self, x, y):
        p = self._event_shape[-1]
        return ((y + (p + 1) / 2) * (-clgrad.linalg.slogdet(-2 * x).logabsdet + _log_2 * p)
                + clgrad.mvlgamma(y + (p + 1) / 2, p=p))
