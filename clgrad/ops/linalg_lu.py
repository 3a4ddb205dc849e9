"""Linear systems, inverses and determinants through an LU factorization on the device, and the
Cholesky factorization (the linalg kernel family: clgrad.kernels.linalg); the products of
torch.linalg composed from clgrad ops (its norms: clgrad/ops/linalg_norm.py). clgrad.linalg re-exports them with torch.linalg's
names.

Gradients are the standard adjoint formulas, written in clgrad ops (solve's backward calls
solve), so they differentiate again.
"""
import collections
import math

from .. import dtypes
from ..autograd.op import Op
from ..autograd.grad_mode import no_grad, is_grad_enabled
from ..kernels.linalg import cholesky_inplace_raw, lu_factor_inplace_raw, lu_solve_raw
from ..tensor import Tensor, empty_tensor
from ._base import check_fp64, contiguous_raw, copy_into, broadcast_shapes
# the norms live by themselves; torch.linalg's namespace takes them from here too
from .linalg_norm import _check_matrix_dims, matrix_norm, norm, vector_norm  # noqa: F401
from .creation import arange, tensor, eye
from .pointwise import where
from .methods import matrix_power as _power

LUFactor = collections.namedtuple("linalg_lu_factor", ["LU", "pivots"])
LUFactorEx = collections.namedtuple("linalg_lu_factor_ex", ["LU", "pivots", "info"])
SolveEx = collections.namedtuple("linalg_solve_ex", ["result", "info"])
InvEx = collections.namedtuple("linalg_inv_ex", ["inverse", "info"])
SlogDet = collections.namedtuple("linalg_slogdet", ["sign", "logabsdet"])
CholeskyEx = collections.namedtuple("linalg_cholesky_ex", ["L", "info"])


class LinAlgError(RuntimeError):
    """A matrix that the operation cannot handle (singular, not positive-definite): torch's
    torch.linalg.LinAlgError, a RuntimeError.

    >>> import clgrad
    >>> issubclass(clgrad.linalg.LinAlgError, RuntimeError)
    True
    """


# ---- checks ---------------------------------------------------------------------------------------
def _square(op, A, complex_ok=False):
    """complex_ok: the op takes complex64 / complex128 (the LU kernels' complex variant)."""
    if not isinstance(A, Tensor):
        raise TypeError(f"linalg.{op}(): argument 'A' must be Tensor, not {type(A).__name__}")
    if A.dim() < 2:
        raise RuntimeError(f"linalg.{op}: The input tensor A must have at least 2 dimensions.")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"linalg.{op}: A must be batches of square matrices, but they are "
                           f"{A.shape[-2]} by {A.shape[-1]} matrices")
    if A.dtype not in (dtypes.float32, dtypes.float64) and not (
            complex_ok and A.dtype in (dtypes.complex64, dtypes.complex128)):
        raise RuntimeError(f"linalg.{op}: Expected a floating point or complex tensor as input. "
                           f"Got {A.dtype.name.capitalize()}" if not A.dtype.is_floating_point
                           else f"linalg.{op}: Low precision dtypes not supported. Got "
                                f"{A.dtype.name.capitalize()}")
    check_fp64(A.dtype, A._storage.device)


def _batch_copy(A):
    """A contiguous [batch, n, n] copy of A (the kernels work in place) and the batch shape."""
    n = A.shape[-1]
    batch = tuple(A.shape[:-2])
    flat = empty_tensor(tuple(A.shape), A.dtype, A._storage.device)
    copy_into(flat, A)
    return flat.reshape((_count(batch), n, n)), batch


def _count(batch):
    c = 1
    for b in batch:
        c *= b
    return c


# ---- factorizations (no autograd; the kernels are clgrad.kernels.linalg's) ----------------------
def lu_factor_raw(A):
    """(LU [..., n, n], pivots int32 [..., n] 1-based, info int32 [...]) of a square float A."""
    n = A.shape[-1]
    lu, batch = _batch_copy(A)
    piv, info = lu_factor_inplace_raw(lu)
    return lu.reshape(batch + (n, n)), piv.reshape(batch + (n,)), info.reshape(batch)


def cholesky_raw(A):
    """(L, info): the lower Cholesky factor of each symmetric positive-definite matrix (only
    A's lower triangle is read) and the first failing column, 1-based (0: none)."""
    n = A.shape[-1]
    a, batch = _batch_copy(A)
    info = cholesky_inplace_raw(a)
    return a.reshape(batch + (n, n)).tril(), info.reshape(batch)


def _swaps_sign(piv):
    """(-1) ** (number of row swaps) of each pivot row, as piv's float dtype is not known: int."""
    n = piv.shape[-1]
    moved = (piv != arange(1, n + 1, dtype=dtypes.int32, device=piv.device)).sum(-1)
    return 1 - 2 * (moved % 2)


def _raise_info(op, info, what):
    bad = info.reshape(-1).tolist()
    for b, v in enumerate(bad):
        if v:
            where = f" (batch element {b})" if info.dim() else ""
            raise LinAlgError(f"linalg.{op}: {what.format(v)}{where}.")


# ---- autograd ops --------------------------------------------------------------------------------
def _mT(t):
    return t.transpose(-2, -1)


def _conj(t):
    return t.conj() if t.dtype.is_complex else t


def _mH(t):
    """The conjugate transpose (the transpose for real t): complex gradients are torch's
    conjugate Wirtinger ones, whose formulas are the real ones with A^H for A^T."""
    return t.transpose(-2, -1).conj() if t.dtype.is_complex else t.transpose(-2, -1)


class LUFactorOp(Op):
    """(LU, pivots, info) of square A; the gradient reaches A through LU (torch's formula for
    A = P L U: gA = P L^-T (tril(L^T gL, -1) + triu(gU U^T)) U^-T, with gL and gU the strictly
    lower and the upper part of gLU; it needs an invertible A, as torch's)."""

    @staticmethod
    def forward(ctx, A):
        lu, piv, info = lu_factor_raw(A)
        ctx.mark_non_differentiable(piv, info)
        ctx.save_for_backward(lu, piv)
        return lu, piv, info

    @staticmethod
    def backward(ctx, gLU, gpiv=None, ginfo=None):
        lu, piv = ctx.saved_tensors
        P, L, U = lu_unpack(lu, piv)
        phi = (_mH(L) @ gLU.tril(-1)).tril(-1) + (gLU.triu() @ _mH(U)).triu()
        X = solve_triangular(_mH(L), phi, upper=True, unitriangular=True)
        return P @ solve_triangular(_mH(U), X, upper=False, left=False)


def _permutation(pivots, dtype):
    """The permutation matrices P of LAPACK-style 1-based row swaps (row i was swapped with row
    pivots[i] - 1, in order), so that A = P L U. Built on the host: pivots are n small ints."""
    import numpy as np
    piv = np.asarray(pivots.detach().cpu().numpy(), dtype=np.int64).reshape(-1, pivots.shape[-1])
    n = piv.shape[-1]
    P = np.zeros((piv.shape[0], n, n))
    for b, row in enumerate(piv):
        perm = np.arange(n)
        for i, p in enumerate(row):
            perm[i], perm[p - 1] = perm[p - 1], perm[i]
        P[b, perm, np.arange(n)] = 1.0       # (P^T A)[i] = A[perm[i]]
    return tensor(P.reshape(tuple(pivots.shape[:-1]) + (n, n)), dtype=dtype,
                  device=pivots.device)


LUUnpack = collections.namedtuple("lu_unpack", ["P", "L", "U"])


def lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True, *, out=None):
    """(P, L, U) from lu_factor's compact (LU, pivots), as torch.lu_unpack: A = P @ L @ U with
    L unit lower triangular. Differentiable in LU_data.

    >>> import clgrad
    >>> A = clgrad.tensor([[1.0, 2.0], [3.0, 4.0]])
    >>> P, L, U = clgrad.lu_unpack(*clgrad.linalg.lu_factor(A))
    >>> (P @ L @ U).tolist(), P.tolist()
    ([[1.0, 2.0], [3.0, 4.0]], [[0.0, 1.0], [1.0, 0.0]])
    """
    m, n = LU_data.shape[-2], LU_data.shape[-1]
    k = min(m, n)
    L = U = P = None
    if unpack_data:
        I = eye(m, k, dtype=LU_data.dtype, device=LU_data.device)
        L = LU_data[..., :, :k].tril(-1) + I
        U = LU_data[..., :k, :].triu()
    if unpack_pivots:
        if m != n:
            raise NotImplementedError("lu_unpack: clgrad factors square matrices only")
        P = _permutation(LU_pivots, LU_data.dtype)
    return LUUnpack(P, L, U)


LU = collections.namedtuple("linalg_lu", ["P", "L", "U"])


def lu(A, *, pivot=True, out=None):
    """(P, L, U) with A = P L U, as torch.linalg.lu (square A; differentiable).

    >>> import clgrad
    >>> P, L, U = clgrad.linalg.lu(clgrad.tensor([[1.0, 2.0], [3.0, 4.0]]))
    >>> L.tolist(), U.tolist()
    ([[1.0, 0.0], [0.3333333432674408, 1.0]], [[3.0, 4.0], [0.0, 0.6666666269302368]])
    """
    return LU(*lu_unpack(*lu_factor(A, pivot=pivot)))


def _legacy_lu(A, pivot=True, get_infos=False, out=None):
    """torch.lu / Tensor.lu (deprecated in torch for linalg.lu_factor): (LU, pivots) and, with
    get_infos, info.

    >>> import clgrad
    >>> LU, piv = clgrad.tensor([[1.0, 2.0], [3.0, 4.0]]).lu()
    >>> piv.tolist()
    [2, 2]
    """
    r = lu_factor_ex(A, pivot=pivot)
    return (r.LU, r.pivots, r.info) if get_infos else (r.LU, r.pivots)


def _legacy_lu_solve(b, LU_data, LU_pivots, *, out=None):
    """torch.lu_solve / Tensor.lu_solve: linalg.lu_solve(LU_data, LU_pivots, b).

    >>> import clgrad
    >>> A = clgrad.tensor([[3.0, 1.0], [1.0, 2.0]])
    >>> clgrad.tensor([[9.0], [8.0]]).lu_solve(*clgrad.linalg.lu_factor(A)).tolist()
    [[2.0], [3.0]]
    """
    return lu_solve(LU_data, LU_pivots, b)


TriangularSolve = collections.namedtuple("triangular_solve", ["solution", "cloned_coefficient"])


def triangular_solve(b, A, upper=True, transpose=False, unitriangular=False, *, out=None):
    """(X, A.clone()) with A X = b (A^T X = b with transpose) for triangular A, as the
    deprecated torch.triangular_solve.

    >>> import clgrad
    >>> U = clgrad.tensor([[2.0, 1.0], [0.0, 4.0]])
    >>> clgrad.triangular_solve(clgrad.tensor([[4.0], [8.0]]), U).solution.tolist()
    [[1.0], [2.0]]
    """
    T = _mT(A) if transpose else A
    X = solve_triangular(T, b, upper=upper != transpose, unitriangular=unitriangular)
    return TriangularSolve(X, A.clone())


class Solve(Op):
    """X = A^-1 B for matrices B [..., n, k] (batch dims already broadcast)."""

    @staticmethod
    def forward(ctx, A, B, check=None):
        lu, piv, info = lu_factor_raw(A)
        if check:                         # torch.linalg.solve's error (one host read)
            _raise_info(check, info, "The solver failed because the input matrix is singular")
        batch = tuple(A.shape[:-2])
        n, k = B.shape[-2], B.shape[-1]
        c = _count(batch)
        X = lu_solve_raw(lu.reshape((c, n, n)), piv.reshape((c, n)),
                         contiguous_raw(B).reshape((c, n, k)))
        X = X.reshape(batch + (n, k))
        ctx.save_for_backward(A, X)
        ctx.info = info
        return X

    @staticmethod
    def backward(ctx, g):
        A, X = ctx.saved_tensors
        gB = solve(_mH(A), g, _check=None)
        return -(gB @ _mH(X)), gB, None


def _as_matrix_rhs(A, B, left):
    """torch's rule: B is a batch of vectors when B.ndim == 1 or B is [..., n] with A's batch."""
    vector = B.dim() == 1 or (B.dim() == A.dim() - 1 and tuple(B.shape) == tuple(A.shape[:-1]))
    return vector


def solve(A, B, *, left=True, out=None, _check="solve"):
    """X with A @ X = B (or X @ A = B with left=False), batched and broadcast, as
    torch.linalg.solve; B may be a vector (or a batch of them).

    >>> import clgrad
    >>> A = clgrad.tensor([[3.0, 1.0], [1.0, 2.0]])
    >>> clgrad.linalg.solve(A, clgrad.tensor([9.0, 8.0])).tolist()
    [2.0, 3.0]
    """
    _square("solve", A, True)
    if not isinstance(B, Tensor):
        raise TypeError(f"linalg.solve(): argument 'B' must be Tensor, not {type(B).__name__}")
    if B.dtype is not A.dtype:
        raise RuntimeError(f"linalg.solve: Expected A and B to have the same dtype, but found "
                           f"A of type {A.dtype.name.capitalize()} and B of type "
                           f"{B.dtype.name.capitalize()} instead")
    if B.dim() == 0:
        raise RuntimeError(f"linalg.solve: The input tensor B must have at least 2 dimensions "
                           f"(a 0-d B, A of shape {list(A.shape)}).")
    if not left:
        return _mT(solve(_mT(A), _mT(B), _check=_check))
    vector = _as_matrix_rhs(A, B, left)
    Bm = B.unsqueeze(-1) if vector else B
    n = A.shape[-1]
    if Bm.shape[-2] != n:
        raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation AX = "
                           f"B ({tuple(A.shape[-2:])} and {tuple(Bm.shape[-2:])})")
    batch = broadcast_shapes(tuple(A.shape[:-2]), tuple(Bm.shape[:-2]))
    A_ = A.expand(batch + (n, n))
    B_ = Bm.expand(batch + tuple(Bm.shape[-2:]))
    X = Solve.apply(A_, B_, _check)       # _check None: the callers that report info or
    X = X.squeeze(-1) if vector else X    # have checked (solve_ex, inv, ...) or give inf
    if out is not None:
        out.copy_(X)
        return out
    return X


def solve_ex(A, B, *, left=True, check_errors=False, out=None):
    """(result, info) of solve; info says which pivot was zero (0: none).

    >>> import clgrad
    >>> clgrad.linalg.solve_ex(clgrad.eye(2), clgrad.ones(2)).info.tolist()
    0
    """
    X = solve(A, B, left=left, _check=None)
    info = lu_factor_raw(A.detach())[2]
    if check_errors:
        _raise_info("solve_ex", info, "The solver failed because the input matrix is singular")
    return SolveEx(X, info)


def inv(A, *, out=None):
    """The inverse of each square matrix, as torch.linalg.inv (LinAlgError when singular).

    >>> import clgrad
    >>> clgrad.linalg.inv(clgrad.tensor([[2.0, 0.0], [0.0, 4.0]])).tolist()
    [[0.5, 0.0], [0.0, 0.25]]
    """
    _square("inv", A, True)
    with no_grad():
        info = lu_factor_raw(A.detach())[2]
    _raise_info("inv", info, "The diagonal element {} is zero, the inversion could not be "
                             "completed because the input matrix is singular")
    n = A.shape[-1]
    X = solve(A, eye(n, dtype=A.dtype, device=A.device).expand(tuple(A.shape)), _check=None)
    if out is not None:
        out.copy_(X)
        return out
    return X


def inv_ex(A, *, check_errors=False, out=None):
    """(inverse, info): info is the first zero pivot, 1-based (0: invertible).

    >>> import clgrad
    >>> clgrad.linalg.inv_ex(clgrad.zeros(2, 2)).info.item()
    1
    """
    _square("inv_ex", A, True)
    info = lu_factor_raw(A.detach())[2]
    if check_errors:
        _raise_info("inv_ex", info, "The diagonal element {} is zero, the inversion could not "
                                    "be completed because the input matrix is singular")
    n = A.shape[-1]
    X = solve(A, eye(n, dtype=A.dtype, device=A.device).expand(tuple(A.shape)), _check=None)
    return InvEx(X, info)


def lu_factor(A, *, pivot=True, out=None):
    """(LU, pivots): the compact LU factorization with partial pivoting (pivots 1-based,
    int32), as torch.linalg.lu_factor.

    >>> import clgrad
    >>> LU, piv = clgrad.linalg.lu_factor(clgrad.tensor([[1.0, 2.0], [3.0, 4.0]]))
    >>> piv.tolist(), LU.tolist()
    ([2, 2], [[3.0, 4.0], [0.3333333432674408, 0.6666666269302368]])
    """
    if not pivot:
        raise RuntimeError("linalg.lu_factor: LU without pivoting is not implemented on the "
                           "CPU")
    _square("lu_factor", A, True)
    lu, piv, _ = LUFactorOp.apply(A)
    return LUFactor(lu, piv)


def lu_factor_ex(A, *, pivot=True, check_errors=False, out=None):
    """(LU, pivots, info) of lu_factor; info is the first zero pivot, 1-based.

    >>> import clgrad
    >>> clgrad.linalg.lu_factor_ex(clgrad.eye(3)).info.item()
    0
    """
    _square("lu_factor_ex", A, True)
    lu, piv, info = LUFactorOp.apply(A)
    if check_errors:
        _raise_info("lu_factor_ex", info, "U[{0},{0}] is zero and using it on lu_solve would "
                                          "result in a division by zero")
    return LUFactorEx(lu, piv, info)


def lu_solve(LU, pivots, B, *, left=True, adjoint=False, out=None):
    """X with A X = B from lu_factor's (LU, pivots) (A^T X = B with adjoint, X A = B with
    left=False), as torch.linalg.lu_solve.

    >>> import clgrad
    >>> A = clgrad.tensor([[3.0, 1.0], [1.0, 2.0]])
    >>> LU, piv = clgrad.linalg.lu_factor(A)
    >>> clgrad.linalg.lu_solve(LU, piv, clgrad.tensor([[9.0], [8.0]])).tolist()
    [[2.0], [3.0]]
    """
    if not left or adjoint or (is_grad_enabled() and (LU.requires_grad or B.requires_grad)):
        # through the triangular solves in ops (differentiable): A = P L U, so
        # A^-1 B = U^-1 L^-1 P^T B and A^-T B = P L^-T U^-T B; X A = B is A^T X^T = B^T
        P, L, U = lu_unpack(LU, pivots)

        def solve_with(rhs, transposed):
            if not transposed:
                Y = solve_triangular(L, _mT(P) @ rhs, upper=False, unitriangular=True)
                return solve_triangular(U, Y, upper=True)
            Y = solve_triangular(_mH(U), rhs, upper=False)      # adjoint: A^H for complex
            return P @ solve_triangular(_mH(L), Y, upper=True, unitriangular=True)
        if left:
            return solve_with(B, adjoint)
        return _mT(solve_with(_mT(B), not adjoint))
    n = LU.shape[-1]
    batch = broadcast_shapes(tuple(LU.shape[:-2]), tuple(B.shape[:-2]))
    k = B.shape[-1]
    with no_grad():
        c = _count(batch)
        lu = LU.expand(batch + (n, n)).contiguous().reshape((c, n, n))
        pv = pivots.expand(batch + (n,)).contiguous().reshape((c, n))
        b = B.expand(batch + (n, k)).contiguous().reshape((c, n, k))
        X = lu_solve_raw(lu, pv, b).reshape(batch + (n, k))
    return X


def _cofactors(A):
    """The cofactor matrix of each square matrix (the adjugate's transpose), from the
    determinants of its (n-1) x (n-1) minors: defined at singular matrices too, and
    differentiable again (through det). O(n^5): for the singular case only."""
    import numpy as np
    n = A.shape[-1]
    keep = tensor(np.array([[r for r in range(n) if r != i] for i in range(n)],
                           dtype=np.int64).reshape(n, n - 1), device=A.device)
    minors = A[..., keep[:, None, :, None], keep[None, :, None, :]]   # [..., n, n, n-1, n-1]
    sign = tensor(np.array([[(-1.0) ** (i + j) for j in range(n)] for i in range(n)]),
                  dtype=A.dtype, device=A.device)
    return det(minors) * sign


class Det(Op):
    @staticmethod
    def forward(ctx, A):
        lu, piv, info = lu_factor_raw(A)
        d = lu.diagonal(0, -2, -1).prod(-1) * _swaps_sign(piv).to(A.dtype)
        ctx.save_for_backward(A, d)
        ctx.info = info
        return d

    @staticmethod
    def backward(ctx, g):
        A, d = ctx.saved_tensors
        with no_grad():                   # one host read (inv would make it anyway)
            singular = A.numel() and bool((ctx.info != 0).any().item())
        if singular:                      # the cofactors: det's derivative everywhere
            return g.unsqueeze(-1).unsqueeze(-1) * _conj(_cofactors(A))
        # d det / dA = det * A^-T (A invertible): the cofactor matrix; complex: g times its
        # conjugate, g conj(det) A^-H (torch's convention)
        return (g * _conj(d)).unsqueeze(-1).unsqueeze(-1) * _mH(inv(A))


def det(A, *, out=None):
    """The determinant of each square matrix (from its LU factors), as torch.linalg.det. The
    gradient is the cofactor matrix: det * A^-T where A is invertible, from the minors where it
    is singular (there torch 2.13 returns zeros for n >= 2, which its own gradcheck rejects;
    clgrad gives the derivative, as finite differences do).

    >>> import clgrad
    >>> round(clgrad.linalg.det(clgrad.tensor([[1.0, 2.0], [3.0, 4.0]])).item(), 5)
    -2.0
    """
    _square("det", A, True)
    return Det.apply(A)


class LogAbsDet(Op):
    @staticmethod
    def forward(ctx, A):
        lu, piv, _ = lu_factor_raw(A)
        diag = lu.diagonal(0, -2, -1)
        ctx.save_for_backward(A)
        return diag.abs().log().sum(-1)

    @staticmethod
    def backward(ctx, g):
        (A,) = ctx.saved_tensors
        return g.unsqueeze(-1).unsqueeze(-1) * _mT(inv(A))


class ComplexSlogDet(Op):
    """(sign, logabsdet) of complex A: sign = det / |det| (complex), logabsdet real. Both carry
    gradients, as torch's: with G = g_logabsdet - i Im(conj(g_sign) sign), the gradient of the
    holomorphic log det = logabsdet + i angle(sign) in torch's convention is G A^-H."""

    @staticmethod
    def forward(ctx, A):
        lu, piv, _ = lu_factor_raw(A)
        diag = lu.diagonal(0, -2, -1)
        sign = diag.sgn().prod(-1) * _swaps_sign(piv).to(A.dtype)
        ctx.save_for_backward(A, sign)
        return sign, diag.abs().log().sum(-1)

    @staticmethod
    def backward(ctx, gsign, glog):
        A, sign = ctx.saved_tensors
        G = glog.to(A.dtype) if glog is not None else sign * 0
        if gsign is not None:
            G = G - 1j * (gsign.conj() * sign).imag
        return G.unsqueeze(-1).unsqueeze(-1) * _mH(inv(A))


def slogdet(A, *, out=None):
    """(sign, logabsdet) of each square matrix: det = sign * exp(logabsdet), without overflow.

    >>> import clgrad
    >>> s, l = clgrad.linalg.slogdet(clgrad.tensor([[2.0, 0.0], [0.0, -3.0]]))
    >>> s.item(), round(l.item(), 4)
    (-1.0, 1.7918)
    """
    _square("slogdet", A, True)
    if A.dtype.is_complex:
        return SlogDet(*ComplexSlogDet.apply(A))
    with no_grad():
        lu, piv, _ = lu_factor_raw(A.detach())
        diag = lu.diagonal(0, -2, -1)
        sign = diag.sign().prod(-1) * _swaps_sign(piv).to(A.dtype)
    return SlogDet(sign, LogAbsDet.apply(A))


def logdet(A):
    """log(det(A)): nan where det < 0, -inf where det == 0, as torch.logdet.

    >>> import clgrad
    >>> round(clgrad.logdet(clgrad.tensor([[2.0, 0.0], [0.0, 3.0]])).item(), 4)
    1.7918
    """
    sign, logabs = slogdet(A)
    if A.dtype.is_complex:             # log(sign) is i angle(det); -inf where det is 0
        return logabs + sign.log()
    return where(sign < 0, logabs * math.nan, logabs)


class Cholesky(Op):
    @staticmethod
    def forward(ctx, A):
        L, info = cholesky_raw(A)
        ctx.save_for_backward(L)
        ctx.info = info
        return L

    @staticmethod
    def backward(ctx, g):
        # gA = 1/2 (S + S^T), S = L^-T Phi(L^T gL) L^-1, Phi: the lower triangle, half diagonal
        # (complex: ^H for ^T)
        (L,) = ctx.saved_tensors
        P = (_mH(L) @ g).tril()
        P = P - 0.5 * P.diagonal(0, -2, -1).diag_embed()
        Linv = inv(L)
        S = _mH(Linv) @ P @ Linv
        return 0.5 * (S + _mH(S))


def cholesky_ex(A, *, upper=False, check_errors=False, out=None):
    """(L, info): the Cholesky factor and the order of the first leading minor that is not
    positive-definite (0: A is positive-definite).

    >>> import clgrad
    >>> clgrad.linalg.cholesky_ex(clgrad.tensor([[4.0, 2.0], [2.0, 3.0]])).L.tolist()
    [[2.0, 0.0], [1.0, 1.4142135381698608]]
    """
    _square("cholesky_ex", A, True)
    L = Cholesky.apply(A)
    info = L.grad_fn.info if L.grad_fn is not None else cholesky_raw(A.detach())[1]
    if check_errors:
        _raise_info("cholesky_ex", info, "The factorization could not be completed because the "
                                         "input is not positive-definite (the leading minor of "
                                         "order {} is not positive-definite)")
    return CholeskyEx(_mH(L) if upper else L, info)


def cholesky(A, *, upper=False, out=None):
    """The lower (or upper) Cholesky factor L of symmetric positive-definite A = L L^T, as
    torch.linalg.cholesky; LinAlgError when A is not positive-definite.

    >>> import clgrad
    >>> clgrad.linalg.cholesky(clgrad.tensor([[4.0, 2.0], [2.0, 3.0]]))[0].tolist()
    [2.0, 0.0]
    """
    L, info = cholesky_ex(A)
    _raise_info("cholesky", info, "The factorization could not be completed because the input "
                                  "is not positive-definite (the leading minor of order {} is "
                                  "not positive-definite)")
    return _mH(L) if upper else L


# ---- composed from clgrad ops ---------------------------------------------------------------------
def vecdot(x, y, *, dim=-1, out=None):
    """The dot product of vectors along dim, broadcasting the rest; x is conjugated when
    complex, as torch's.

    >>> import clgrad
    >>> clgrad.linalg.vecdot(clgrad.tensor([1.0, 2.0]), clgrad.tensor([[3.0, 4.0]])).tolist()
    [11.0]
    """
    return (_conj(x) * y).sum(dim)


def multi_dot(tensors, *, out=None):
    """The product of a chain of matrices (the first and last may be vectors), as
    torch.linalg.multi_dot.

    >>> import clgrad
    >>> clgrad.linalg.multi_dot([clgrad.ones(2), clgrad.ones(2, 3), clgrad.ones(3)]).item()
    6.0
    """
    if len(tensors) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(tensors)}")
    for i, t in enumerate(tensors):
        if t.dim() not in ((1, 2) if i in (0, len(tensors) - 1) else (2,)):
            raise RuntimeError(f"multi_dot(): tensor {i} must be 2D{' or 1D' if i in (0, len(tensors) - 1) else ''} but got {t.dim()}D")
    result = tensors[0]
    for t in tensors[1:]:
        result = result @ t
    return result


def matrix_power(A, n, *, out=None):
    """A multiplied by itself n times; a negative n uses the inverse.

    >>> import clgrad
    >>> clgrad.linalg.matrix_power(clgrad.tensor([[2.0, 0.0], [0.0, 4.0]]), -1).tolist()
    [[0.5, 0.0], [0.0, 0.25]]
    """
    if n < 0:
        return _power(inv(A), -n)
    return _power(A, n)


def matrix_exp(A):
    """exp(A) of each square matrix: scaling and squaring with a Taylor series of degree 18 on
    A / 2^s, where s makes the largest 1-norm of the batch at most 1/2 (composed of matmuls, so
    it differentiates).

    >>> import clgrad
    >>> [round(v, 4) for v in clgrad.linalg.matrix_exp(clgrad.tensor([[0.0, 1.0], [0.0, 0.0]]))
    ...  .reshape(-1).tolist()]
    [1.0, 1.0, 0.0, 1.0]
    """
    if A.dim() < 2 or A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"linalg.matrix_exp: A must be batches of square matrices, got "
                           f"shape {tuple(A.shape)}")
    n = A.shape[-1]
    if A.numel() == 0:
        return A.clone()
    with no_grad():
        norm1 = float(A.detach().abs().sum(-2).amax().item())
    s = max(0, int(math.ceil(math.log2(norm1))) + 1) if norm1 > 0.5 and math.isfinite(norm1) else 0
    X = A / (2.0 ** s)
    I = eye(n, dtype=A.dtype, device=A.device).expand(tuple(A.shape))
    result, term = I, I
    for k in range(1, 19):
        term = (term @ X) / k
        result = result + term
    for _ in range(s):
        result = result @ result
    return result


def solve_triangular(A, B, *, upper, left=True, unitriangular=False, out=None):
    """X with A X = B (X A = B with left=False) for triangular A; only A's triangle (and not its
    diagonal, with unitriangular) is read. Solved through the general solver.

    >>> import clgrad
    >>> U = clgrad.tensor([[2.0, 1.0], [0.0, 4.0]])
    >>> clgrad.linalg.solve_triangular(U, clgrad.tensor([[4.0], [8.0]]), upper=True).tolist()
    [[1.0], [2.0]]
    """
    T = A.triu() if upper else A.tril()
    if unitriangular:
        n = A.shape[-1]
        I = eye(n, dtype=A.dtype, device=A.device)
        T = T * (1 - I) + I
    return solve(T, B, left=left, _check=None)      # torch: inf where T is singular


def cholesky_solve(B, L, upper=False, *, out=None):
    """X with A X = B where A = L L^T (or U^T U with upper), as torch.cholesky_solve.

    >>> import clgrad
    >>> L = clgrad.tensor([[2.0, 0.0], [1.0, 1.0]])
    >>> clgrad.cholesky_solve(clgrad.tensor([[4.0], [3.0]]), L).tolist()
    [[0.5], [1.0]]
    """
    A = _mH(L) @ L if upper else L @ _mH(L)
    return solve(A, B, _check=None)


def cholesky_inverse(L, upper=False, *, out=None):
    """The inverse of A = L L^T (or U^T U) from its Cholesky factor, as torch.cholesky_inverse.

    >>> import clgrad
    >>> clgrad.cholesky_inverse(clgrad.tensor([[2.0, 0.0], [0.0, 1.0]])).tolist()
    [[0.25, 0.0], [0.0, 1.0]]
    """
    return inv(_mH(L) @ L if upper else L @ _mH(L))


def _legacy_cholesky(A, upper=False, *, out=None):
    """torch.cholesky (deprecated in torch for linalg.cholesky): the factor of A.

    >>> import clgrad
    >>> clgrad.cholesky(clgrad.tensor([[4.0, 0.0], [0.0, 9.0]])).tolist()
    [[2.0, 0.0], [0.0, 3.0]]
    """
    return cholesky(A, upper=upper)


def _inverse(A, *, out=None):
    """torch.inverse: linalg.inv.

    >>> import clgrad
    >>> clgrad.tensor([[4.0]]).inverse().item()
    0.25
    """
    return inv(A)


def _prod(shape):
    return math.prod(int(d) for d in shape)


def tensorinv(A, ind=2, *, out=None):
    """The inverse of A as a linear map from its last dims to its first `ind` dims, as
    torch.linalg.tensorinv: inv of A reshaped to a square matrix, reshaped back.

    >>> import clgrad
    >>> A = clgrad.eye(6).reshape(6, 2, 3)
    >>> clgrad.linalg.tensorinv(A, ind=1).shape
    clgrad.Size([2, 3, 6])
    """
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    shape = tuple(A.shape)
    p, q = _prod(shape[:ind]), _prod(shape[ind:])
    if p != q:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                           f"prod(self.shape[:ind]), but got {q} != {p}")
    return inv(A.reshape(p, q)).reshape(shape[ind:] + shape[:ind])


def tensorsolve(A, B, dims=None, *, out=None):
    """X with tensordot(A, X, X.ndim) = B, as torch.linalg.tensorsolve; `dims` of A are moved
    to the end first. Solved as one square system.

    >>> import clgrad
    >>> A = clgrad.eye(6).reshape(2, 3, 6)
    >>> clgrad.linalg.tensorsolve(A, clgrad.ones(2, 3)).tolist()
    [1.0, 1.0, 1.0, 1.0, 1.0, 1.0]
    """
    if dims is not None:
        dims = [d % A.dim() for d in dims]
        A = A.movedim(dims, list(range(A.dim() - len(dims), A.dim())))
    shape = tuple(A.shape)
    p, q = _prod(shape[:B.dim()]), _prod(shape[B.dim():])
    if p != q:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[other.ndim:])"
                           f" == prod(self.shape[:other.ndim]), but got {q} != {p}")
    return solve(A.reshape(p, q), B.reshape(p)).reshape(shape[B.dim():])


FUNCTIONS = {"lu": _legacy_lu, "lu_solve": _legacy_lu_solve, "lu_unpack": lu_unpack,
             "triangular_solve": triangular_solve,
             "det": det, "logdet": logdet, "slogdet": slogdet, "inverse": _inverse,
             "cholesky": _legacy_cholesky, "cholesky_solve": cholesky_solve,
             "cholesky_inverse": cholesky_inverse, "matrix_exp": matrix_exp}
METHODS = {"lu": _legacy_lu, "lu_solve": _legacy_lu_solve, "triangular_solve": triangular_solve,
           "det": det, "logdet": logdet, "slogdet": slogdet, "inverse": _inverse,
           "cholesky": _legacy_cholesky, "cholesky_solve": cholesky_solve,
           "cholesky_inverse": cholesky_inverse, "matrix_exp": matrix_exp}
