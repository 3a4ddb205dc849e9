"""clgrad.nn.utils.parametrizations: weight_norm, spectral_norm and orthogonal, built on
clgrad.nn.utils.parametrize with torch's state_dict keys
(`parametrizations.weight.original0/1`, `parametrizations.weight.0._u/_v`,
`parametrizations.weight.0.base`).

>>> import clgrad
>>> from clgrad import nn
>>> m = nn.utils.parametrizations.weight_norm(nn.Linear(3, 2))
>>> sorted(m.state_dict())
['bias', 'parametrizations.weight.original0', 'parametrizations.weight.original1']
"""
from enum import Enum, auto

import numpy as np

from ... import linalg          # torch.linalg's namespace (the face): ops only
from ...autograd.grad_mode import no_grad
from ...ops.creation import eye, tensor, zeros_like
from ...ops.join import cat
from ...tensor import Tensor
from .. import functional as F
from ..modules.conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from ..modules.module import Module
from . import parametrize

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]


# ---- orthogonal ----------------------------------------------------------------------------------
def _is_orthogonal(Q):
    n, k = Q.size(-2), Q.size(-1)
    Id = eye(k, dtype=Q.dtype, device=Q.device)
    eps = 10.0 * n * float(np.finfo(Q.dtype.np).eps)
    return bool((Q.mH @ Q).sub(Id).abs().le(eps).all())


def _make_orthogonal(A):
    # the Q of A = QR with diag(R) >= 0 (torch goes through geqrf; QR then a sign fix is the same)
    Q, R = linalg.qr(A)
    return Q * R.diagonal(dim1=-2, dim2=-1).sgn().unsqueeze(-2)


def _geqrf(Q):
    """LAPACK's geqrf of a (batch of) tall matrix on the host, as numpy arrays: the reflectors
    below the diagonal, R on and above it, and tau (torch.geqrf's layout). Used only when
    assigning to a householder parametrization without trivialization: rare and small."""
    h, tau = np.linalg.qr(Q.detach().cpu().numpy().astype(np.float64), mode="raw")
    return np.ascontiguousarray(np.swapaxes(h, -1, -2)), tau


class _OrthMaps(Enum):
    matrix_exp = auto()
    cayley = auto()
    householder = auto()


class _Orthogonal(Module):
    def __init__(self, weight, orthogonal_map, *, use_trivialization=True):
        super().__init__()
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X):
        n, k = X.size(-2), X.size(-1)
        transposed = n < k
        if transposed:
            X = X.mT
            n, k = k, n
        if self.orthogonal_map in (_OrthMaps.matrix_exp, _OrthMaps.cayley):
            # a skew-symmetric n x n matrix from the lower triangle (padded when not square)
            X = X.tril()
            if n != k:
                X = cat([X, X.new_zeros(n, n - k).expand(*X.shape[:-2], -1, -1)], dim=-1)
            A = X - X.mH
            if self.orthogonal_map == _OrthMaps.matrix_exp:
                Q = linalg.matrix_exp(A)
            else:
                Id = eye(n, dtype=A.dtype, device=A.device)
                Q = linalg.solve(Id - A * 0.5, Id + A * 0.5)
            if n != k:
                Q = Q[..., :k]
        else:
            A = X.tril(diagonal=-1)
            tau = 2.0 / (1.0 + (A * A).sum(dim=-2))
            Q = linalg.householder_product(A, tau)
            # torch's sign rule: the diagonal of X, truncated to an integer, flips columns
            Q = Q * X.diagonal(dim1=-2, dim2=-1).int().unsqueeze(-2)
        if "base" in self._buffers:
            Q = self.base @ Q
        if transposed:
            Q = Q.mT
        return Q

    def right_inverse(self, Q):
        with no_grad():
            if Q.shape != self.shape:
                raise ValueError(f"Expected a matrix or batch of matrices of shape {self.shape}. "
                                 f"Got a tensor of shape {Q.shape}.")
            Q_init = Q
            n, k = Q.size(-2), Q.size(-1)
            transpose = n < k
            if transpose:
                Q = Q.mT
                n, k = k, n
            if "base" not in self._buffers:
                if self.orthogonal_map in (_OrthMaps.cayley, _OrthMaps.matrix_exp):
                    raise NotImplementedError("It is not possible to assign to the matrix "
                                              "exponential or the Cayley parametrizations when "
                                              "use_trivialization=False.")
                # the reflectors of Q's QR (geqrf), the diagonal carrying the signs that
                # forward multiplies back in
                A, tau = _geqrf(Q)
                sign = np.sign(np.diagonal(A, axis1=-2, axis2=-1)).copy()
                sign[tau == 0.0] *= -1
                i = np.arange(sign.shape[-1])
                A[..., i, i] = sign
                A = tensor(A, dtype=Q.dtype, device=Q.device)
                return A.mT if transpose else A
            if n == k:
                Q = Q.clone() if _is_orthogonal(Q) else _make_orthogonal(Q)
            else:
                # complete the columns to an orthonormal basis of the whole space
                N = Q.new_empty(*(tuple(Q.shape[:-2]) + (n, n - k))).normal_()
                Q = _make_orthogonal(cat([Q, N], dim=-1))
            self.base = Q
            # the parametrization of -I is I, so that forward gives back base (torch's choice)
            neg_Id = zeros_like(Q_init)
            neg_Id.diagonal(dim1=-2, dim2=-1).fill_(-1.0)
            return neg_Id


def orthogonal(module, name="weight", orthogonal_map=None, *, use_trivialization=True):
    """Constrain `module.<name>` (a matrix or batch of matrices) to orthonormal columns (rows
    if wide). orthogonal_map: "matrix_exp" or "cayley" of a skew-symmetric matrix, or
    "householder" (a product of reflectors); default "matrix_exp" for square matrices,
    "householder" otherwise. use_trivialization=True keeps a `base` buffer (torch's dynamic
    trivialization) and starts from the QR-orthogonalized weight.

    >>> import clgrad
    >>> from clgrad import nn
    >>> m = nn.utils.parametrizations.orthogonal(nn.Linear(3, 5))
    >>> W = m.weight
    >>> clgrad.allclose(W.T @ W, clgrad.eye(3), atol=1e-5)
    True
    """
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError(f"Expected a matrix or batch of matrices. Got a tensor of {weight.ndim} "
                         f"dimensions.")
    if orthogonal_map is None:
        orthogonal_map = "matrix_exp" if weight.size(-2) == weight.size(-1) else "householder"
    orth_enum = getattr(_OrthMaps, orthogonal_map, None)
    if orth_enum is None:
        raise ValueError(f'orthogonal_map has to be one of "matrix_exp", "cayley", '
                         f'"householder". Got: {orthogonal_map}')
    orth = _Orthogonal(weight, orth_enum, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module


# ---- weight norm ---------------------------------------------------------------------------------
def _norm_except_dim(v, dim):
    """The 2-norm of v over every dim but `dim` (kept, size 1 elsewhere); dim -1: the whole
    tensor's norm, 0-d (torch.norm_except_dim's convention)."""
    if dim == -1:
        return v.norm(2)
    dims = [d for d in range(v.dim()) if d != dim]
    return v.norm(2, dims, keepdim=True) if dims else v.abs()


def _weight_norm(v, g, dim):
    return v * (g / _norm_except_dim(v, dim))


class _WeightNorm(Module):
    def __init__(self, dim=0):
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g, weight_v):
        return _weight_norm(weight_v, weight_g, self.dim)

    def right_inverse(self, weight):
        return _norm_except_dim(weight, self.dim), weight


def weight_norm(module, name="weight", dim=0):
    """Reparametrize `module.<name>` as g * v / ||v|| (the norm over every dim but `dim`, or over
    the whole tensor for dim=None): g is stored as `parametrizations.<name>.original0`, v as
    `original1`. State dicts of the legacy nn.utils.weight_norm (`<name>_g`, `<name>_v`) load.

    >>> import clgrad
    >>> from clgrad import nn
    >>> m = nn.utils.parametrizations.weight_norm(nn.Linear(20, 40))
    >>> m.parametrizations.weight.original0.shape, m.parametrizations.weight.original1.shape
    (clgrad.Size([40, 1]), clgrad.Size([40, 20]))
    """
    if dim is not None and dim < -1:
        dim += getattr(module, name).dim()
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)

    def _weight_norm_compat_hook(state_dict, prefix):
        # checkpoints of the legacy nn.utils.weight_norm: <name>_g, <name>_v
        g_key, v_key = f"{prefix}{name}_g", f"{prefix}{name}_v"
        if g_key in state_dict and v_key in state_dict:
            state_dict[f"{prefix}parametrizations.{name}.original0"] = state_dict.pop(g_key)
            state_dict[f"{prefix}parametrizations.{name}.original1"] = state_dict.pop(v_key)
    module.__dict__.setdefault("_parametrize_load_hooks", []).append(_weight_norm_compat_hook)
    return module


# ---- spectral norm -------------------------------------------------------------------------------
class _SpectralNorm(Module):
    def __init__(self, weight, n_power_iterations=1, dim=0, eps=1e-12):
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of "
                             f"[-{ndim}, {ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError(f"Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            weight_mat = self._reshape_weight_to_matrix(weight)
            h, w = weight_mat.size()
            u = weight_mat.new_empty(h).normal_(0, 1)
            v = weight_mat.new_empty(w).normal_(0, 1)
            self.register_buffer("_u", F.normalize(u, dim=0, eps=self.eps))
            self.register_buffer("_v", F.normalize(v, dim=0, eps=self.eps))
            # start from good estimates of the singular vectors, as torch does
            self._power_method(weight_mat, 15)

    def _reshape_weight_to_matrix(self, weight):
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.dim()) if d != self.dim))
        return weight.flatten(1)

    def _power_method(self, weight_mat, n_power_iterations):
        # u and v change in place (they are buffers); no gradient flows through them
        with no_grad():
            for _ in range(n_power_iterations):
                self._u.copy_(F.normalize(weight_mat.mv(self._v), dim=0, eps=self.eps))
                self._v.copy_(F.normalize(weight_mat.mH.mv(self._u), dim=0, eps=self.eps))

    def forward(self, weight):
        if weight.ndim == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        weight_mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(weight_mat, self.n_power_iterations)
        # copies: later in-place updates of the buffers must not touch this graph's saved u, v
        u, v = self._u.clone(), self._v.clone()
        sigma = u.vdot(weight_mat.mv(v))
        return weight / sigma

    def right_inverse(self, value):
        return value


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """Divide `module.<name>` by its largest singular value, estimated by `n_power_iterations`
    steps of the power method at each access in training mode (the vectors are buffers
    `parametrizations.<name>.0._u` and `._v`). dim: the output dim (default 0, 1 for
    ConvTranspose).

    >>> import clgrad
    >>> from clgrad import nn
    >>> _ = clgrad.manual_seed(0)
    >>> m = nn.utils.parametrizations.spectral_norm(nn.Linear(4, 6))
    >>> round(clgrad.linalg.svdvals(m.weight)[0].item(), 3)
    1.0
    """
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        dim = 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)) else 0
    parametrize.register_parametrization(module, name,
                                         _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module
