"""The linalg family (cl_kernels/linalg.mako): dense factorizations of small and medium float32 /
float64 matrices (and complex64 / complex128: the same kernels in complex arithmetic), batched, in place on contiguous [count, n, n] batches: LU with partial pivoting
and Cholesky (one work-group per matrix, its size a power of two), and the solves with LU
factors (one work-item per right-hand side column). The kernels take bare buffers: every
operand is a fresh contiguous batch at element offset 0. Raw launches: no autograd.

>>> import clgrad
>>> a = clgrad.tensor([[[4.0, 2.0], [2.0, 3.0]]])
>>> cholesky_inplace_raw(a).tolist(), a.tolist()[0][1]
([0], [1.0, 1.4142135381698608])
"""
from .. import dtypes
from ..runtime.family import KernelFamily
from ..runtime.kernels import group_limit
from ..tensor import empty_tensor
from .copy import copy_into, dense_raw, fill_raw

# complex dtypes: the same kernels from the same template, in complex arithmetic
LINALG_DTYPES = (dtypes.float32, dtypes.float64, dtypes.complex64, dtypes.complex128)


def _params(dt):
    return dict(dt=dt)


LINALG = KernelFamily("linalg", _params, LINALG_DTYPES)


def pow2_group(dev, kernel, n):
    """The work-group size of a one-group-per-matrix kernel: the largest power of two within
    the kernel's limit (at most 256, the kernels' local arrays) and n (at least 1)."""
    most = group_limit(dev, kernel, 256)
    L = 1
    while L * 2 <= min(most, max(n, 1)):
        L *= 2
    return L


def _per_matrix(dev, dt, name, count, n, *args):
    """Launch `name` with one work-group per matrix of the batch."""
    L = pow2_group(dev, LINALG.kernel(dev, dt, name), n)
    LINALG.launch(dev, dt, name, ((count * L,), (L,)), *args)


def lu_factor_inplace_raw(lu):
    """LU-factor with partial pivoting, in place, each matrix of the contiguous [count, n, n]
    batch `lu`; returns (pivots int32 [count, n], 1-based; info int32 [count], the first zero
    pivot, 1-based, 0 when none)."""
    dev, dt = lu._storage.device, lu._dtype
    count, n = lu._shape[0], lu._shape[-1]
    piv = empty_tensor((count, n), dtypes.int32, dev)
    info = empty_tensor((count,), dtypes.int32, dev)
    if count and n:
        _per_matrix(dev, dt, "lu_factor", count, n, lu._storage.buf, piv._storage.buf,
                    info._storage.buf, n)
    elif count:
        fill_raw(info, 0)
    return piv, info


def lu_solve_raw(LU, piv, B):
    """X with A X = B from A's LU factors; LU [b, n, n], piv [b, n], B [b, n, k] (same batch,
    contiguous); B is not changed."""
    dev, dt = LU._storage.device, LU._dtype
    n, k = B._shape[-2], B._shape[-1]
    X = empty_tensor(tuple(B._shape), dt, dev)
    copy_into(X, B)
    count = X.numel() // max(n * k, 1) * k if n else 0
    if count:
        # held in names until the launch: a temporary's buffer taken with ._storage.buf goes back
        # to the pool at once, and the next temporary may be handed the same memory
        lu, pv = dense_raw(LU), dense_raw(piv)
        LINALG.launch(dev, dt, "lu_solve", count, lu._storage.buf, pv._storage.buf,
                      X._storage.buf, n, k, count)
    return X


def cholesky_inplace_raw(a):
    """A = L L^T for each symmetric positive-definite matrix of the contiguous [count, n, n]
    batch `a`, in place: L in the lower triangle (only A's lower triangle is read; the upper one
    is left as it was). Returns info int32 [count]: the first column whose pivot is not
    positive, 1-based (0: none)."""
    dev, dt = a._storage.device, a._dtype
    count, n = a._shape[0], a._shape[-1]
    info = empty_tensor((count,), dtypes.int32, dev)
    if count and n:
        _per_matrix(dev, dt, "cholesky", count, n, a._storage.buf, info._storage.buf, n)
    elif count:
        fill_raw(info, 0)
    return info
