"""The linalg_decomp family (cl_kernels/linalg_decomp.mako): orthogonal decompositions of small and
medium float32 / float64 matrices (and the Jacobi eigh of complex Hermitian ones), batched, in place on contiguous [count, m, n] batches, one
work-group per matrix (its size a power of two): Householder QR with LAPACK's signs, the cyclic
Jacobi eigenvalue algorithm on symmetric matrices and one-sided Jacobi (Hestenes) for the SVD.
The kernels take bare buffers: every operand is a fresh contiguous batch at element offset 0.
Raw launches: no autograd (sorting and signs are the ops' work).

>>> import clgrad
>>> a = clgrad.tensor([[[2.0, 1.0], [1.0, 2.0]]])
>>> V = eigh_jacobi_raw(a)
>>> sorted(round(v, 4) for v in (a.tolist()[0][0][0], a.tolist()[0][1][1]))
[1.0, 3.0]
"""
from .. import dtypes
from ..runtime.family import KernelFamily
from ..tensor import empty_tensor
from .linalg import pow2_group

# Sweeps at most (Jacobi converges quadratically: 5 to 10 sweeps reach rounding level)
MAX_SWEEPS = 40


def _params(dt):
    return dict(dt=dt)


# complex dtypes: eigh_jacobi only (Hermitian matrices); the other complex decompositions reach
# these kernels through their real embedding (clgrad/ops/linalg_decomp.py)
DECOMP = KernelFamily("linalg_decomp", _params, (dtypes.float32, dtypes.float64,
                                                 dtypes.complex64, dtypes.complex128))


def _per_matrix(dev, dt, name, count, size, *args):
    """Launch `name` with one work-group per matrix of the batch, sized for `size` rows."""
    L = pow2_group(dev, DECOMP.kernel(dev, dt, name), size)
    DECOMP.launch(dev, dt, name, ((count * L,), (L,)), *args)


def householder_qr_raw(a, mq, want_q):
    """Householder QR in place of each matrix of the contiguous [count, m, n] batch `a`: R in
    its upper triangle, the reflectors below. Returns Q [count, m, mq], its first mq columns,
    when want_q ([count, m, 0] otherwise); Q is left unwritten when m or n is 0."""
    dev, dt = a._storage.device, a._dtype
    count, m, n = a._shape
    Q = empty_tensor((count, m, mq if want_q else 0), dt, dev)
    tau = empty_tensor((count, min(m, n)), dt, dev)
    if count and m and n:
        _per_matrix(dev, dt, "qr", count, max(m, n), a._storage.buf, tau._storage.buf,
                    Q._storage.buf if Q.numel() else tau._storage.buf, m, n, mq, int(want_q))
    return Q


def eigh_jacobi_raw(a):
    """The cyclic Jacobi eigenvalue algorithm in place on each symmetric matrix of the
    contiguous [count, n, n] batch `a`: its diagonal ends as the eigenvalues, unsorted. Returns
    the eigenvectors as the columns of V [count, n, n] (each one's largest component positive)."""
    dev, dt = a._storage.device, a._dtype
    count, n = a._shape[0], a._shape[-1]
    V = empty_tensor((count, n, n), dt, dev)
    if count and n:
        sweeps = empty_tensor((count,), dtypes.int32, dev)
        _per_matrix(dev, dt, "eigh_jacobi", count, n, a._storage.buf, V._storage.buf,
                    sweeps._storage.buf, n, MAX_SWEEPS)
    return V


def svd_jacobi_raw(u):
    """One-sided Jacobi in place on each matrix of the contiguous [count, m, n] batch `u`, m >=
    n: its columns end as U * S (unsorted). Returns the right singular vectors as the columns
    of V [count, n, n]."""
    dev, dt = u._storage.device, u._dtype
    count, m, n = u._shape
    V = empty_tensor((count, n, n), dt, dev)
    if count and n:
        sweeps = empty_tensor((count,), dtypes.int32, dev)
        _per_matrix(dev, dt, "svd_jacobi", count, m, u._storage.buf, V._storage.buf,
                    sweeps._storage.buf, m, n, MAX_SWEEPS)
    return V
