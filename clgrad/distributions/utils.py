"""Helpers of clgrad.distributions (torch.distributions.utils): broadcasting parameters,
probabilities to and from logits, cached properties.

>>> import clgrad
>>> from clgrad.distributions.utils import broadcast_all, logits_to_probs
>>> a, b = broadcast_all(clgrad.zeros(2, 1), 1.0)
>>> b.shape, logits_to_probs(clgrad.zeros(2), is_binary=True).tolist()
(clgrad.Size([2, 1]), [0.5, 0.5])
"""
from functools import update_wrapper
from numbers import Number

import clgrad

__all__ = ["broadcast_all", "clamp_probs", "lazy_property", "logits_to_probs", "probs_to_logits",
           "tril_matrix_to_vec", "vec_to_tril_matrix"]

euler_constant = 0.57721566490153286060  # Euler Mascheroni Constant


def broadcast_all(*values):
    """The arguments (tensors or numbers) as tensors broadcast to one shape; numbers take the
    dtype and device of the first tensor, else the default dtype."""
    if not all(isinstance(v, (clgrad.Tensor, Number)) or hasattr(v, "__torch_function__")
               for v in values):
        raise ValueError("Input arguments must all be instances of numbers.Number, "
                         "torch.Tensor or objects implementing __torch_function__.")
    ref = next((v for v in values if isinstance(v, clgrad.Tensor)), None)
    if ref is None:
        dt = clgrad.get_default_dtype()
        values = [clgrad.tensor(float(v), dtype=dt) for v in values]
    else:
        values = [v if isinstance(v, clgrad.Tensor) else
                  clgrad.tensor(v, dtype=ref.dtype, device=ref.device) for v in values]
    return clgrad.broadcast_tensors(*values)


def _standard_normal(shape, dtype, device):
    return clgrad.randn(*shape, dtype=dtype, device=device)


def _sum_rightmost(value, dim):
    """Sum out the `dim` rightmost dimensions of value."""
    if dim == 0:
        return value
    return value.reshape(value.shape[:-dim] + (-1,)).sum(-1)


def logits_to_probs(logits, is_binary=False):
    """Probabilities from logits: sigmoid for binary ones, softmax over the last dim else."""
    if is_binary:
        return clgrad.sigmoid(logits)
    return clgrad.softmax(logits, dim=-1)


def clamp_probs(probs):
    """Probabilities clamped into [eps, 1 - eps] of their dtype."""
    eps = clgrad.finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs, is_binary=False):
    """Logits from probabilities: log(p) - log1p(-p) for binary ones, log(p) else."""
    ps_clamped = clamp_probs(probs)
    if is_binary:
        return clgrad.log(ps_clamped) - clgrad.log1p(-ps_clamped)
    return clgrad.log(ps_clamped)


class lazy_property:
    """A property computed on first access and then stored on the instance (torch's)."""

    def __init__(self, wrapped):
        self.wrapped = wrapped
        update_wrapper(self, wrapped)

    def __get__(self, instance, obj_type=None):
        if instance is None:
            return _lazy_property_and_property(self.wrapped)
        with clgrad.enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


class _lazy_property_and_property(lazy_property, property):
    def __init__(self, wrapped):
        property.__init__(self, wrapped)


class _ProbsLogits:
    """`probs` and `logits` of a distribution given by either one: the other is computed from
    it on first access. `_is_binary`: one probability per trial (sigmoid and log-odds), else
    probabilities of classes along the last dim (softmax and log)."""
    _is_binary = True

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=self._is_binary)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=self._is_binary)


class _ProbsLogitsParam(_ProbsLogits):
    """_ProbsLogits with `_param`, the one of the two given (its size is `param_shape`, its
    `new` is `_new`); __init__ stores it with `_init_param`, expand with `_expand_param`."""

    def _init_param(self, probs, logits, *others):
        """Stores `probs` or `logits`, whichever is given (ValueError unless exactly one is),
        broadcast with the parameters `others` (returned broadcast, as tensors)."""
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            *others, self.probs = broadcast_all(*others, probs)
            self._param = self.probs
        else:
            *others, self.logits = broadcast_all(*others, logits)
            self._param = self.logits
        return others

    def _expand_param(self, cls, batch_shape, _instance, others=()):
        """expand()'s body: Distribution._expand_params of probs / logits and `others`."""
        new = self._expand_params(cls, batch_shape, _instance, others + ("probs", "logits"))
        new._param = new.probs if "probs" in self.__dict__ else new.logits
        return new

    def _new(self, *args, **kwargs):
        return self._param.new(*args, **kwargs)

    @property
    def param_shape(self):
        return self._param.size()


def tril_matrix_to_vec(mat, diag=0):
    """The lower triangle (below diagonal `diag`) of the last two dims, row by row, as a vector."""
    n = mat.shape[-1]
    if not (-n <= diag < n):
        raise ValueError(f"diag ({diag}) provided is outside [{-n}, {n - 1}].")
    idx = clgrad.tril_indices(n, n, offset=diag, device=mat.device)
    return mat[..., idx[0], idx[1]]


def vec_to_tril_matrix(vec, diag=0):
    """The inverse of tril_matrix_to_vec: a lower-triangular matrix from its entries."""
    n = (-(1 + 2 * diag) + ((1 + 2 * diag) ** 2 + 8 * vec.shape[-1] + 4 * abs(diag) *
                             (diag + 1)) ** 0.5) / 2
    eps = clgrad.finfo(vec.dtype).eps
    if not round(n) - n < eps:
        raise ValueError(f"The size of last dimension is {vec.shape[-1]} which cannot be "
                         "expressed as the lower triangular part of a square D x D matrix.")
    n = round(n.item()) if isinstance(n, clgrad.Tensor) else round(n)
    mat = vec.new_zeros(vec.shape[:-1] + (n, n))
    idx = clgrad.tril_indices(n, n, offset=diag, device=vec.device)
    mat[..., idx[0], idx[1]] = vec
    return mat
