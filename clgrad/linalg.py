"""clgrad.linalg: torch.linalg's names. The factorizations run in OpenCL kernels
(cl_kernels/linalg.mako: LU with partial pivoting, Cholesky; cl_kernels/linalg_decomp.mako: Householder
QR, Jacobi eigh and SVD); the rest is composed of clgrad ops (clgrad/ops/linalg_lu.py,
clgrad/ops/linalg_decomp.py, and matmul from clgrad/ops/linalg.py).

>>> import clgrad
>>> A = clgrad.tensor([[4.0, 1.0], [1.0, 3.0]])
>>> round(clgrad.linalg.det(A).item(), 4), clgrad.linalg.solve(A, clgrad.tensor([5.0, 4.0])).tolist()
(11.0, [1.0, 1.0])
"""
from .ops.einsum import cross as _cross
from .ops.linalg import matmul
from .ops.linalg_lu import (LinAlgError, cholesky, cholesky_ex, det, inv, inv_ex, lu, lu_factor,
                            lu_factor_ex, lu_solve, matrix_exp, matrix_norm, matrix_power,
                            multi_dot, norm, slogdet, solve, solve_ex, solve_triangular,
                            tensorinv, tensorsolve, vecdot, vector_norm)
from .ops.linalg_decomp import (cond, eigh, eigvalsh, householder_product, lstsq, matrix_rank,
                                pinv, qr, svd, svdvals, vander)
from .ops.views import diagonal as _diagonal

__all__ = ["LinAlgError", "cholesky", "cholesky_ex", "cond", "cross", "det", "diagonal", "eigh",
           "eigvalsh", "inv", "inv_ex", "lstsq", "lu", "lu_factor", "lu_factor_ex", "lu_solve",
           "matmul", "matrix_exp", "matrix_norm", "matrix_power", "matrix_rank", "multi_dot",
           "norm", "pinv", "qr", "slogdet", "solve", "solve_ex", "solve_triangular", "svd",
           "svdvals", "tensorinv", "tensorsolve", "vander", "vecdot", "vector_norm",
           "householder_product"]


def cross(input, other, *, dim=-1, out=None):
    """The cross product of 3-vectors along dim (default -1, unlike torch.cross).

    >>> import clgrad
    >>> clgrad.linalg.cross(clgrad.tensor([1.0, 0.0, 0.0]), clgrad.tensor([0.0, 1.0, 0.0])).tolist()
    [0.0, 0.0, 1.0]
    """
    return _cross(input, other, dim=dim)


def diagonal(A, *, offset=0, dim1=-2, dim2=-1):
    """The diagonal of each matrix (a view), with linalg's defaults: the last two dims.

    >>> import clgrad
    >>> clgrad.linalg.diagonal(clgrad.eye(3)).tolist()
    [1.0, 1.0, 1.0]
    """
    return _diagonal(A, offset, dim1, dim2)
