"""The orthogonal decompositions of torch.linalg: QR (Householder), the symmetric eigenproblem
(cyclic Jacobi) and the SVD (one-sided Jacobi), in OpenCL kernels (the linalg_decomp family,
clgrad.kernels.linalg_decomp: one work-group per matrix); and what is composed on them: pinv,
matrix_rank, lstsq, cond and the matrix norms that need singular values. clgrad.linalg
re-exports them with torch.linalg's names.

Gradients are torch's formulas, written in clgrad ops, so they differentiate again.
"""
import collections
import math

from .. import dtypes
from ..autograd.op import Op
from ..autograd.grad_mode import no_grad
from ..kernels.linalg_decomp import eigh_jacobi_raw, householder_qr_raw, svd_jacobi_raw
from ..tensor import Tensor, empty_tensor
from ._base import check_fp64, copy_into, broadcast_shapes
from .linalg_lu import _count, solve_triangular, inv_ex, matrix_norm
from .creation import eye, ones, zeros, full, randn
from .join import cat
from .pointwise import maximum, where

QRResult = collections.namedtuple("linalg_qr", ["Q", "R"])
LegacyQR = collections.namedtuple("qr", ["Q", "R"])
EighResult = collections.namedtuple("linalg_eigh", ["eigenvalues", "eigenvectors"])
SVDResult = collections.namedtuple("linalg_svd", ["U", "S", "Vh"])
LegacySVD = collections.namedtuple("svd", ["U", "S", "V"])
LstsqResult = collections.namedtuple("linalg_lstsq",
                                     ["solution", "residuals", "rank", "singular_values"])


def _mT(t):
    return t.transpose(-2, -1)


def _mH(t):
    return t.transpose(-2, -1).conj() if t.dtype.is_complex else t.transpose(-2, -1)


def _matrix(op, A, arg="A", complex_ok=False):
    """torch's checks of a float matrix (batch) argument; complex_ok: complex64 / complex128
    taken too (through _real_embedding)."""
    if not isinstance(A, Tensor):
        raise TypeError(f"linalg.{op}(): argument '{arg}' must be Tensor, not {type(A).__name__}")
    if A.dim() < 2:
        raise RuntimeError(f"linalg.{op}: The input tensor {arg} must have at least 2 dimensions.")
    if A.dtype in (dtypes.complex64, dtypes.complex128) and not complex_ok:
        raise RuntimeError(f"linalg.{op}: complex matrices are not supported yet: the "
                           f"{op} kernels take float32 and float64 (docs/linalg.md, 'Complex "
                           f"matrices')")
    if A.dtype not in (dtypes.float32, dtypes.float64) and not (
            complex_ok and A.dtype in (dtypes.complex64, dtypes.complex128)):
        raise RuntimeError(f"linalg.{op}: Expected a floating point or complex tensor as input. "
                           f"Got {A.dtype.name.capitalize()}" if not A.dtype.is_floating_point
                           else f"linalg.{op}: Low precision dtypes not supported. Got "
                                f"{A.dtype.name.capitalize()}")
    check_fp64(A.dtype, A._storage.device)


def _square(op, A, complex_ok=False):
    _matrix(op, A, complex_ok=complex_ok)
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"linalg.{op}: A must be batches of square matrices, but they are "
                           f"{A.shape[-2]} by {A.shape[-1]} matrices")


def _real_embedding(A):
    """[[Re A, -Im A], [Im A, Re A]]: the real (2m, 2n) matrix of complex (m, n) A (the map
    x + iy -> A (x + iy) on (x, y)). Its singular values are A's, each twice, and for Hermitian A
    it is symmetric with A's eigenvalues, each twice; differentiable (real / imag views, cat)."""
    re, im = A.real, A.imag
    return cat([cat([re, -im], -1), cat([im, re], -1)], -2)


def _complex(re, im):
    from .complexes import complex as complex_   # function-level: complexes is a leaf module
    return complex_(re, im)


def _default_rtol(A, atol, rtol):
    """torch's default rtol for A (eps * max(m, n)), kept for its embedding (2m x 2n)."""
    if rtol is None and (atol is None or (not isinstance(atol, Tensor) and atol <= 0)):
        return _eps(A.dtype.to_real()) * max(A.shape[-2], A.shape[-1])
    return rtol


def _pairs(w):
    """A's values from the embedding's sorted ones (each twice, side by side): the mean of each
    pair, so that the gradient treats the pair's 2-d space alike whatever basis the kernel
    found for it."""
    return (w[..., 0::2] + w[..., 1::2]) / 2


def _hermitian(A, UPLO):
    """The Hermitian matrix that A's UPLO triangle describes (the diagonal's real part), as
    eigvalsh reads A."""
    T = A.tril(-1) if UPLO == "L" else A.triu(1)
    return T + _mT(T).conj() + A.diagonal(0, -2, -1).real.diag_embed()


def _work_copy(A):
    """A contiguous [count, m, n] copy of A (the kernels work in place) and the batch shape."""
    batch = tuple(A.shape[:-2])
    m, n = A.shape[-2], A.shape[-1]
    flat = empty_tensor(tuple(A.shape), A.dtype, A._storage.device)
    copy_into(flat, A)
    return flat.reshape((_count(batch), m, n)), batch


def _out(res, out):
    """res, or res written into out (a tensor, or a tuple of them for a tuple result), resized
    to the result's shape as torch does; returns what the caller returns."""
    if out is None:
        return res
    if isinstance(res, tuple):
        if not isinstance(out, (tuple, list)) or len(out) != len(res):
            raise TypeError(f"out must be a tuple of {len(res)} tensors")
        for o, r in zip(out, res):
            _out(r, o)
        return type(res)(*out)
    if tuple(out.shape) != tuple(res.shape):
        out.resize_(tuple(res.shape))
    with no_grad():
        out.copy_(res)
    return out


# ---- raw decompositions (no autograd; the kernels are clgrad.kernels.linalg_decomp's) ---------
def qr_raw(A, mode="reduced"):
    """(Q or None, R) of a float A [..., m, n]: Householder QR with LAPACK's signs."""
    dev, dt = A._storage.device, A.dtype
    m, n = A.shape[-2], A.shape[-1]
    k = min(m, n)
    a, batch = _work_copy(A)
    count = a.shape[0]
    mq = m if mode == "complete" else k
    want_q = mode != "r"
    Q = householder_qr_raw(a, mq, want_q)
    if count and want_q and mq and not (m and n):     # n == 0: Q is the identity's first columns
        copy_into(Q, eye(m, mq, dtype=dt, device=dev).expand((count, m, mq)))
    rows = m if mode == "complete" else k
    R = a[:, :rows, :].triu()
    Q = Q.reshape(batch + (m, mq)) if want_q else empty_tensor((0,), dt, dev)
    return Q, R.reshape(batch + (rows, n))


def _symmetric(A, UPLO):
    """The symmetric (complex: Hermitian) matrix that A's lower (or upper) triangle defines."""
    if A.dtype.is_complex:
        return _hermitian(A, UPLO)
    T = A.tril() if UPLO == "L" else A.triu()
    return T + _mT(T.tril(-1) if UPLO == "L" else T.triu(1))


def eigh_raw(A, UPLO="L"):
    """(eigenvalues ascending, eigenvectors as columns) of the symmetric matrices that A's
    UPLO triangle defines."""
    n = A.shape[-1]
    a, batch = _work_copy(_symmetric(A, UPLO))
    count = a.shape[0]
    V = eigh_jacobi_raw(a)
    d = a.diagonal(0, -2, -1)
    w, idx = (d.real if d.dtype.is_complex else d).sort(-1)
    V = V.gather(-1, idx.unsqueeze(-2).expand((count, n, n)))
    return w.reshape(batch + (n,)), V.reshape(batch + (n, n))


def _svd_tall(A):
    """One-sided Jacobi on A [count, m, n], m >= n: (U S unsorted [count, m, n], S sorted
    descending, V sorted [count, n, n], the order)."""
    dev, dt = A._storage.device, A.dtype
    count, m, n = A.shape
    u = empty_tensor((count, m, n), dt, dev)
    copy_into(u, A)
    V = svd_jacobi_raw(u)
    S, idx = (u * u).sum(-2).sqrt().sort(-1, descending=True)
    order = idx.unsqueeze(-2)
    return u.gather(-1, order.expand((count, m, n))), S, V.gather(-1, order.expand((count, n, n)))


def _orthonormal(US, full):
    """The left singular vectors from the sorted columns U S (orthogonal, any norms): their QR,
    signed so that R's diagonal is not negative. Householder QR keeps Q orthonormal where some
    columns are zero (rank-deficient A) and completes it to a square Q for full_matrices."""
    Q, R = qr_raw(US, "complete" if full else "reduced")
    k = US.shape[-1]
    d = R.diagonal(0, -2, -1)
    sign = 1 - 2 * (d < 0).to(US.dtype)
    if Q.shape[-1] > k:
        sign = cat([sign, ones(tuple(sign.shape[:-1]) + (Q.shape[-1] - k,), dtype=US.dtype,
                                device=US.device)], -1)
    return Q * sign.unsqueeze(-2)


def svd_raw(A, full_matrices=True, compute_uv=True):
    """(U, S, Vh) of a float A [..., m, n], S descending; U, Vh None unless compute_uv."""
    m, n = A.shape[-2], A.shape[-1]
    batch = tuple(A.shape[:-2])
    k = min(m, n)
    wide = m < n
    work, _ = _work_copy(_mT(A) if wide else A)        # [count, max, min]
    US, S, V = _svd_tall(work)
    S_out = S.reshape(batch + (k,))
    if not compute_uv:
        return None, S_out, None
    U = _orthonormal(US, full_matrices)
    if wide:                                            # A^T = U S V^T: A = V S U^T
        U, V = V, U
    return U.reshape(batch + tuple(U.shape[-2:])), S_out, _mT(V).reshape(
        batch + (V.shape[-1], V.shape[-2]))


# ---- autograd ops ---------------------------------------------------------------------------------
def _syminvadj(X):
    """X + X^T with the diagonal once: the adjoint of X -> triu(X) made symmetric."""
    return X + _mT(X) - X.diagonal(0, -2, -1).diag_embed()


def _qr_backward_tall(gQ, gR, Q, R):
    """torch's QR gradient for m >= n: gA = [gQ + Q syminvadj(triu(gR R^T - Q^T gQ))] R^-T."""
    M = gR @ _mT(R) - _mT(Q) @ gQ
    gA = Q @ _syminvadj(M.triu()) + gQ
    return solve_triangular(_mT(R), gA, upper=False, left=False)


class QR(Op):
    @staticmethod
    def forward(ctx, A, mode):
        Q, R = qr_raw(A, mode)
        ctx.mode = mode
        if mode != "r":
            ctx.save_for_backward(Q, R)
        return Q, R

    @staticmethod
    def backward(ctx, gQ, gR):
        if ctx.mode == "r":
            raise RuntimeError("The derivative of linalg.qr depends on Q, which is not computed "
                               "when mode='r'. Please use linalg.qr(A, mode='reduced') if you are "
                               "going to differentiate through linalg.qr.")
        Q, R = ctx.saved_tensors
        m, n = Q.shape[-2], R.shape[-1]
        if ctx.mode == "complete" and m > n:
            raise RuntimeError("The QR decomposition is not differentiable when mode='complete' "
                               "and nrows > ncols.")
        if m >= n:
            return _qr_backward_tall(gQ, gR, Q, R), None
        # m < n: A = [X | Y], X = Q R1, Y = Q R2; Y's gradient is Q gR2 and it moves gQ
        R1, R2 = R[..., :m], R[..., m:]
        Y = Q @ R2
        gX = _qr_backward_tall(gQ + Y @ _mT(gR[..., m:]), gR[..., :m], Q, R1)
        return cat([gX, Q @ gR[..., m:]], -1), None


def qr(A, mode="reduced", *, out=None):
    """The QR decomposition A = Q R (Householder reflections in a kernel), as torch.linalg.qr:
    mode 'reduced' (Q [m, k], R [k, n], k = min(m, n)), 'complete' (Q [m, m], R [m, n]) or 'r'
    (R only; Q is empty). R's diagonal has LAPACK's signs.

    >>> import clgrad
    >>> Q, R = clgrad.linalg.qr(clgrad.tensor([[3.0, 1.0], [4.0, 2.0]], dtype=clgrad.float64))
    >>> [[round(x, 12) for x in row] for row in R.tolist()]
    [[-5.0, -2.2], [0.0, 0.4]]
    >>> round(clgrad.linalg.norm(Q @ R - clgrad.tensor([[3.0, 1.0], [4.0, 2.0]],
    ...                                                dtype=clgrad.float64)).item(), 12)
    0.0
    """
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of "
                           f"'reduced' (default), 'r', or 'complete'")
    _matrix("qr", A)
    return _out(QRResult(*QR.apply(A, mode)), out)


def _legacy_qr(A, some=True, *, out=None):
    """torch.qr (deprecated in torch for linalg.qr): the reduced QR, or the complete one with
    some=False.

    >>> import clgrad
    >>> clgrad.tensor([[0.0, 2.0], [1.0, 0.0]]).qr().R.abs().tolist()
    [[1.0, 0.0], [0.0, 2.0]]
    """
    return _out(LegacyQR(*qr(A, "reduced" if some else "complete")), out)


class Eigh(Op):
    @staticmethod
    def forward(ctx, A, UPLO):
        w, V = eigh_raw(A, UPLO)
        ctx.save_for_backward(w, V)
        return w, V

    @staticmethod
    def backward(ctx, gw, gV):
        # torch's formula: gA = V (diag(gw) + skew(V^T gV) / 2E) V^T, E_ij = w_j - w_i
        # (complex: V^H for V^T, skew-Hermitian)
        w, V = ctx.saved_tensors
        VgV = _mH(V) @ gV
        E = w.unsqueeze(-2) - w.unsqueeze(-1)
        n = w.shape[-1]
        I = eye(n, dtype=w.dtype, device=w.device)
        inner = 0.5 * (VgV - _mH(VgV)) / (E + I) * (1 - I) + gw.diag_embed()
        return V @ inner @ _mH(V), None


class Eigvalsh(Op):
    @staticmethod
    def forward(ctx, A, UPLO):
        w, V = eigh_raw(A, UPLO)
        ctx.save_for_backward(V)
        return w

    @staticmethod
    def backward(ctx, gw):
        (V,) = ctx.saved_tensors
        return (V * gw.unsqueeze(-2)) @ _mH(V), None


def _check_uplo(UPLO):
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")


def eigh(A, UPLO="L", *, out=None):
    """Eigenvalues (ascending) and orthonormal eigenvectors (columns) of symmetric matrices, as
    torch.linalg.eigh; only the UPLO ('L' or 'U') triangle of A is read. Cyclic Jacobi in a
    kernel; each eigenvector's largest component is positive.

    >>> import clgrad
    >>> w, V = clgrad.linalg.eigh(clgrad.tensor([[2.0, 1.0], [1.0, 2.0]], dtype=clgrad.float64))
    >>> [round(x, 12) for x in w.tolist()], [round(x, 6) for x in V[:, 1].tolist()]
    ([1.0, 3.0], [0.707107, 0.707107])
    """
    _check_uplo(UPLO)
    _square("eigh", A, complex_ok=True)
    return _out(EighResult(*Eigh.apply(A, UPLO)), out)


def eigvalsh(A, UPLO="L", *, out=None):
    """The eigenvalues (ascending) of symmetric matrices, as torch.linalg.eigvalsh.

    >>> import clgrad
    >>> [round(x, 5) for x in clgrad.linalg.eigvalsh(clgrad.tensor([[1.0, 2.0], [2.0, 1.0]])).tolist()]
    [-1.0, 3.0]
    """
    _check_uplo(UPLO)
    _square("eigvalsh", A, complex_ok=True)
    return _out(Eigvalsh.apply(A, UPLO), out)


def _svd_backward(gU, gS, gVh, U, S, Vh):
    """torch's gradient of the reduced SVD (U [m, k], S [k], Vh [k, n])."""
    m, n, k = U.shape[-2], Vh.shape[-1], S.shape[-1]
    V, gV = _mT(Vh), _mT(gVh)
    I = eye(k, dtype=S.dtype, device=S.device)
    S2 = S * S
    E = S2.unsqueeze(-2) - S2.unsqueeze(-1) + I            # E_jk = S_k^2 - S_j^2, 1 on the diagonal
    UgU = _mT(U) @ gU
    VgV = _mT(V) @ gV
    gA = ((UgU - _mT(UgU)) * S.unsqueeze(-2) + S.unsqueeze(-1) * (VgV - _mT(VgV))) / E
    gA = gA + gS.diag_embed()
    if m > k:                                               # (I - U U^T) gU S^-1 V^T
        gA = U @ gA
        gUS = gU / S.unsqueeze(-2)
        return (gA + gUS - U @ (_mT(U) @ gUS)) @ Vh
    if n > k:                                               # U S^-1 gV^T (I - V V^T)
        gA = gA @ Vh
        SgVh = gVh / S.unsqueeze(-1)
        return U @ (gA + SgVh - (SgVh @ V) @ Vh)
    return U @ gA @ Vh


class SVD(Op):
    @staticmethod
    def forward(ctx, A, full_matrices):
        U, S, Vh = svd_raw(A, full_matrices)
        ctx.save_for_backward(U, S, Vh)
        return U, S, Vh

    @staticmethod
    def backward(ctx, gU, gS, gVh):
        U, S, Vh = ctx.saved_tensors
        k = S.shape[-1]
        # full_matrices: the extra columns are arbitrary; torch narrows them away
        return _svd_backward(gU[..., :k], gS, gVh[..., :k, :], U[..., :k], S,
                             Vh[..., :k, :]), None


class SVDvals(Op):
    @staticmethod
    def forward(ctx, A):
        U, S, Vh = svd_raw(A, False)
        ctx.save_for_backward(U, Vh)
        return S

    @staticmethod
    def backward(ctx, gS):
        U, Vh = ctx.saved_tensors
        return (U * gS.unsqueeze(-2)) @ Vh


def svd(A, full_matrices=True, *, driver=None, out=None):
    """The singular value decomposition A = U diag(S) Vh, S descending, as torch.linalg.svd
    (full_matrices: U [m, m] and Vh [n, n], else [m, k] and [k, n]). One-sided Jacobi in a
    kernel; the signs of singular vectors are arbitrary, as torch's.

    >>> import clgrad
    >>> U, S, Vh = clgrad.linalg.svd(clgrad.tensor([[3.0, 0.0], [0.0, -4.0]], dtype=clgrad.float64))
    >>> S.tolist(), round(clgrad.linalg.norm(U @ S.diag_embed() @ Vh
    ...                                       - clgrad.tensor([[3.0, 0.0], [0.0, -4.0]])).item(), 12)
    ([4.0, 3.0], 0.0)
    """
    _matrix("svd", A)
    return _out(SVDResult(*SVD.apply(A, bool(full_matrices))), out)


def svdvals(A, *, driver=None, out=None):
    """The singular values of A, descending, as torch.linalg.svdvals.

    >>> import clgrad
    >>> clgrad.linalg.svdvals(clgrad.tensor([[0.0, 2.0], [1.0, 0.0]])).tolist()
    [2.0, 1.0]
    """
    _matrix("svdvals", A, complex_ok=True)
    if A.dtype.is_complex:             # real results, through the real embedding
        return _out(_pairs(SVDvals.apply(_real_embedding(A))), out)
    return _out(SVDvals.apply(A), out)


def _legacy_svd(A, some=True, compute_uv=True, *, out=None):
    """torch.svd (deprecated in torch for linalg.svd): (U, S, V) with V, not Vh; the reduced
    decomposition unless some=False; zeros for U and V with compute_uv=False.

    >>> import clgrad
    >>> U, S, V = clgrad.svd(clgrad.tensor([[2.0, 0.0], [0.0, 1.0]]))
    >>> S.tolist(), V.abs().tolist()
    ([2.0, 1.0], [[1.0, 0.0], [0.0, 1.0]])
    """
    _matrix("svd", A)
    if not compute_uv:
        m, n = A.shape[-2], A.shape[-1]
        batch = tuple(A.shape[:-2])
        S = svdvals(A)
        return _out(LegacySVD(zeros(batch + (m, m), dtype=A.dtype, device=A.device), S,
                              zeros(batch + (n, n), dtype=A.dtype, device=A.device)), out)
    U, S, Vh = svd(A, full_matrices=not some)
    return _out(LegacySVD(U, S, _mT(Vh)), out)


# ---- composed on the decompositions ---------------------------------------------------------------
def _eps(dt):
    return 2.220446049250313e-16 if dt is dtypes.float64 else 1.1920928955078125e-07


def _as_tol(x, like):
    """A Python number or tensor tolerance, as a tensor that broadcasts over the batch."""
    if isinstance(x, Tensor):
        return x.to(like.dtype)
    return full((), float(x), dtype=like.dtype, device=like.device)


def _threshold(S_max, atol, rtol, m, n):
    """max(atol, rtol * S_max) with torch's defaults: rtol = eps * max(m, n) when neither is
    given, 0 when only a positive atol is."""
    if rtol is None:
        if atol is None or (not isinstance(atol, Tensor) and atol <= 0):
            rtol = _eps(S_max.dtype) * max(m, n)
        else:
            rtol = 0.0
    if atol is None:
        atol = 0.0
    return maximum(_as_tol(atol, S_max), _as_tol(rtol, S_max) * S_max)


class ComplexPinv(Op):
    """pinv of complex A: the real embedding respects products and adjoints, so its
    pseudoinverse is the embedding of A's, [[Re X, -Im X], [Im X, Re X]]. The gradient is
    torch's pinv_backward (where the rank is locally constant): the embedding's SVD has each
    singular value twice, which its singular vectors' gradient cannot take."""

    @staticmethod
    def forward(ctx, A, atol, rtol):
        m, n = A.shape[-2], A.shape[-1]
        P = pinv(_real_embedding(A), atol=atol, rtol=rtol)
        X = _complex(P[..., :n, :m], P[..., n:, :m])
        ctx.save_for_backward(A, X)
        return X

    @staticmethod
    def backward(ctx, g):
        A, X = ctx.saved_tensors
        Xh, gh = _mT(X).conj(), _mT(g).conj()
        if A.shape[-2] <= A.shape[-1]:
            K = gh @ X
            KXh = K @ Xh
            gA = -_mT(X @ K).conj() + KXh - (A @ X) @ KXh + (Xh @ X) @ (gh - K @ A)
        else:
            K = X @ gh
            XhK = Xh @ K
            gA = -_mT(K @ X).conj() + XhK - XhK @ (X @ A) + (gh - A @ K) @ X @ Xh
        return gA, None, None


def pinv(A, *, atol=None, rtol=None, hermitian=False, out=None):
    """The Moore-Penrose pseudoinverse through the SVD (through eigh with hermitian=True):
    singular values at most max(atol, rtol * largest) count as zero, as torch.linalg.pinv.

    >>> import clgrad
    >>> clgrad.linalg.pinv(clgrad.tensor([[2.0, 0.0], [0.0, 0.0]])).tolist()
    [[0.5, 0.0], [0.0, 0.0]]
    """
    if not isinstance(A, Tensor) or A.dim() < 2 or not (
            A.dtype.is_floating_point or A.dtype in (dtypes.complex64, dtypes.complex128)):
        what = f"{A.dtype.name.capitalize()}{list(A.shape)}" if isinstance(A, Tensor) else "?"
        raise RuntimeError(f"linalg.pinv({what}): expected a tensor with 2 or more dimensions "
                           f"of float, double, cfloat or cdouble types")
    m, n = A.shape[-2], A.shape[-1]
    if A.numel() == 0:
        return _out(zeros(tuple(A.shape[:-2]) + (n, m), dtype=A.dtype, device=A.device), out)
    if A.dtype.is_complex:
        # the real embedding respects products and adjoints, so its pseudoinverse is the
        # embedding of A's: [[Re X, -Im X], [Im X, Re X]]
        if hermitian:
            _square("pinv", A, complex_ok=True)
        return _out(ComplexPinv.apply(A, atol, _default_rtol(A, atol, rtol)), out)
    if hermitian:
        _square("pinv", A)
        w, V = eigh(A)
        aw = w.abs()
        keep = aw > _threshold(aw.amax(-1, keepdim=True), atol, rtol, m, n)
        winv = where(keep, 1 / where(keep, w, 1.0), 0.0)
        return _out((V * winv.unsqueeze(-2)) @ _mT(V), out)
    _matrix("pinv", A)
    U, S, Vh = svd(A, full_matrices=False)
    keep = S > _threshold(S[..., :1], atol, rtol, m, n)
    Sinv = where(keep, 1 / where(keep, S, 1.0), 0.0)
    return _out((_mT(Vh) * Sinv.unsqueeze(-2)) @ _mT(U), out)


def matrix_rank(A, *, atol=None, rtol=None, hermitian=False, tol=None, out=None):
    """The number of singular values (absolute eigenvalues with hermitian=True) above
    max(atol, rtol * the largest), as torch.linalg.matrix_rank (int64); tol is torch's older
    spelling of atol.

    >>> import clgrad
    >>> clgrad.linalg.matrix_rank(clgrad.ones(3, 3)).item()
    1
    """
    if tol is not None:
        atol, rtol = tol, 0.0
    _matrix("matrix_rank", A, complex_ok=True)
    m, n = A.shape[-2], A.shape[-1]
    with no_grad():
        if hermitian:
            _square("matrix_rank", A, complex_ok=True)
            S = eigvalsh(A.detach()).abs()
        else:
            S = svdvals(A.detach())
        if S.shape[-1] == 0:
            return _out(zeros(tuple(A.shape[:-2]), dtype=dtypes.int64, device=A.device), out)
        thr = _threshold(S.amax(-1, keepdim=True), atol, rtol, m, n)
        return _out((S > thr).sum(-1).to(dtypes.int64), out)


def lstsq(A, B, rcond=None, *, driver=None):
    """The least-squares solution of A X = B, as torch.linalg.lstsq: (solution, residuals, rank,
    singular_values). driver 'gels' goes through QR (A of full rank: the least-squares solution
    of a tall A, the least-norm one of a wide A); 'gelsy' (the default), 'gelsd' and 'gelss'
    through the SVD, with singular values below rcond * the largest (default eps * max(m, n))
    taken as zero. residuals (the squared residual of each column) come where m > n, the driver
    is not 'gelsy' and every A has full rank; rank with every driver but 'gels'; singular_values
    with 'gelsd' and 'gelss'.

    >>> import clgrad
    >>> A = clgrad.tensor([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]], dtype=clgrad.float64)
    >>> r = clgrad.linalg.lstsq(A, clgrad.tensor([[1.0], [2.0], [3.0]], dtype=clgrad.float64),
    ...                         driver="gelsd")
    >>> r.solution.tolist(), r.residuals.tolist(), r.rank.item()
    ([[1.0], [2.0]], [9.0], 2)
    """
    if driver not in (None, "gels", "gelsy", "gelsd", "gelss"):
        raise RuntimeError("torch.linalg.lstsq: parameter `driver` should be one of (gels, "
                           "gelsy, gelsd, gelss)")
    driver = driver or "gelsy"
    _matrix("lstsq", A, complex_ok=True)
    if not isinstance(B, Tensor):
        raise TypeError(f"linalg.lstsq(): argument 'B' must be Tensor, not {type(B).__name__}")
    if B.dtype is not A.dtype:
        raise RuntimeError(f"torch.linalg.lstsq: Expected input and other to have the same "
                           f"dtype, but got input's dtype {A.dtype.name.capitalize()} and "
                           f"other's dtype {B.dtype.name.capitalize()}")
    if not (A.dim() >= B.dim() and A.dim() - B.dim() <= 1):
        raise RuntimeError("torch.linalg.lstsq: input.dim() must be greater or equal to "
                           "other.dim() and (input.dim() - other.dim()) <= 1")
    vector = B.dim() == A.dim() - 1
    Bm = B.unsqueeze(-1) if vector else B
    m, n = A.shape[-2], A.shape[-1]
    if Bm.shape[-2] != m:
        raise RuntimeError("torch.linalg.lstsq: input.size(-2) should match other.size(-2)")
    batch = broadcast_shapes(tuple(A.shape[:-2]), tuple(Bm.shape[:-2]))
    A = A.expand(batch + (m, n))
    Bm = Bm.expand(batch + tuple(Bm.shape[-2:]))
    if A.dtype.is_complex:
        # the real embedding: [[Re A, -Im A], [Im A, Re A]] [Re X; Im X] = [Re B; Im B]
        if rcond is None or rcond < 0:
            rcond = _eps(A.dtype.to_real()) * max(m, n)
        if driver == "gels":           # QR of the embedding: its gradient goes through
            r = lstsq(_real_embedding(A), cat([Bm.real, Bm.imag], -2), rcond, driver=driver)
            X = _complex(r.solution[..., :n, :], r.solution[..., n:, :])
        else:                          # the SVD drivers: pinv(A) B, rank and values as torch's
            with no_grad():
                r = lstsq(_real_embedding(A.detach()), cat([Bm.real, Bm.imag], -2).detach(),
                          rcond, driver=driver)
            X = ComplexPinv.apply(A, 0.0, rcond) @ Bm
        res = r.residuals
        if res.numel():
            res = (A @ X - Bm).abs().square().sum(-2)
            res = res.squeeze(-1) if vector else res
        S = _pairs(r.singular_values) if r.singular_values.numel() else r.singular_values
        return LstsqResult(X.squeeze(-1) if vector else X, res, r.rank // 2, S)
    empty_f = zeros((0,), dtype=A.dtype, device=A.device)
    rank, S = zeros((0,), dtype=dtypes.int64, device=A.device), empty_f
    if driver == "gels":
        if m >= n:
            Q, R = qr(A)
            X = solve_triangular(R, _mT(Q) @ Bm, upper=True)
        else:                                        # least norm: A^T = Q R, X = Q R^-T B
            Q, R = qr(_mT(A))
            X = Q @ solve_triangular(_mT(R), Bm, upper=False)
        full_rank = True
    else:
        U, S, Vh = svd(A, full_matrices=False)
        if S.shape[-1]:
            tol = (_eps(A.dtype) * max(m, n) if rcond is None or rcond < 0 else rcond)
            keep = S > tol * S[..., :1]
        else:
            keep = S > 0
        Sinv = where(keep, 1 / where(keep, S, 1.0), 0.0)
        X = (_mT(Vh) * Sinv.unsqueeze(-2)) @ (_mT(U) @ Bm)
        rank = keep.sum(-1).to(dtypes.int64)
        with no_grad():
            full_rank = bool((rank == min(m, n)).all().item()) if rank.numel() else True
        if driver == "gelsy":
            S = empty_f
        else:
            S = S.detach()
    residuals = empty_f
    if m > n and driver != "gelsy" and full_rank:
        residuals = ((A @ X - Bm) ** 2).sum(-2)
        if vector:
            residuals = residuals.squeeze(-1)
    return LstsqResult(X.squeeze(-1) if vector else X, residuals, rank, S)


def singular_norm(A, ord, d0, d1, keepdim):
    """The matrix norms that need singular values: 'nuc' (their sum), 2 (the largest), -2 (the
    smallest), over dims d0, d1 (non-negative, distinct)."""
    M = A.movedim((d0, d1), (-2, -1))
    S = svdvals(M)
    # torch: the largest of no singular values (an empty matrix) is 0, the smallest an error
    r = S.sum(-1) if ord == "nuc" or ord == 2 and not S.shape[-1] else \
        S.amax(-1) if ord == 2 else S.amin(-1)
    if keepdim:
        for d in sorted((d0, d1)):
            r = r.unsqueeze(d)
    return r


def cond(A, p=None, *, out=None):
    """The condition number of A in the norm p, as torch.linalg.cond: with p None, 2 or -2 the
    ratio of the extreme singular values (any shape); with 'fro', 'nuc', inf, -inf, 1, -1
    norm(A, p) * norm(inv(A), p) (square A; inf where A is singular).

    >>> import clgrad
    >>> round(clgrad.linalg.cond(clgrad.tensor([[4.0, 0.0], [0.0, 2.0]])).item(), 5)
    2.0
    """
    _matrix("cond", A, complex_ok=True)
    if p in (None, 2, -2):
        S = svdvals(A)
        return _out(S[..., 0] / S[..., -1] if p != -2 else S[..., -1] / S[..., 0], out)
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"linalg.cond(ord={p}): A must be batches of square matrices, but "
                           f"they are {A.shape[-2]} by {A.shape[-1]} matrices")
    Ainv, info = inv_ex(A)
    c = matrix_norm(A, p) * matrix_norm(Ainv, p)
    return _out(where(info > 0, math.inf, c), out)


def pinverse(input, rcond=1e-15):
    """torch.pinverse: linalg.pinv with rtol=rcond.

    >>> import clgrad
    >>> clgrad.tensor([[4.0]]).pinverse().item()
    0.25
    """
    return pinv(input, rtol=rcond)


def householder_product(A, tau, *, out=None):
    """The first n columns of H_1 H_2 ... H_k, H_i = I - tau_i v_i v_i^T with v_i column i of A
    below the diagonal and 1 on it (LAPACK's orgqr), as torch.linalg.householder_product;
    composed of ops, so it differentiates in A and tau.

    >>> import clgrad
    >>> A = clgrad.tensor([[1.0, 0.0], [1.0, 1.0]]); tau = clgrad.tensor([1.0, 0.0])
    >>> clgrad.linalg.householder_product(A, tau).tolist()
    [[0.0, -1.0], [-1.0, 0.0]]
    """
    m, n, k = A.shape[-2], A.shape[-1], tau.shape[-1]
    if m < n:
        raise RuntimeError("torch.linalg.householder_product: input.shape[-2] must be greater "
                           "than or equal to input.shape[-1]")
    if n < k:
        raise RuntimeError("torch.linalg.householder_product: input.shape[-1] must be greater "
                           "than or equal to tau.shape[-1]")
    V = A.tril(-1) + eye(m, n, dtype=A.dtype, device=A.device)   # column i is v_i
    Q = eye(m, n, dtype=A.dtype, device=A.device).expand(tuple(A.shape[:-2]) + (m, n))
    # Q = H_1 (H_2 (... (H_k I[:, :n]))): apply the last reflector first
    for i in reversed(range(k)):
        v = V[..., :, i:i + 1]
        vH = _mT(v).conj() if v.dtype.is_complex else _mT(v)     # H_i = I - tau_i v_i v_i^H
        Q = Q - tau[..., i:i + 1].unsqueeze(-1) * (v @ (vH @ Q))
    return _out(Q, out)


def vander(x, *, N=None):
    """The Vandermonde matrix of x's last dim: column j is x ** j, j < N (default: len(x)), as
    torch.linalg.vander (increasing powers; built by a cumulative product, as torch's).

    >>> import clgrad
    >>> clgrad.linalg.vander(clgrad.tensor([1, 2, 3])).tolist()
    [[1, 1, 1], [1, 2, 4], [1, 3, 9]]
    """
    n = x.shape[-1] if x.dim() else 1
    N = n if N is None else N
    if N <= 1:
        raise RuntimeError("N must be greater than 1.")
    ones = x.unsqueeze(-1).new_ones(tuple(x.shape) + (1,))
    return cat([ones, x.unsqueeze(-1).expand(tuple(x.shape) + (N - 1,)).cumprod(-1)], -1)


def _approximate_basis(A, q, niter):
    """An orthonormal basis Q (m x q) of A's dominant column space by randomized subspace
    iteration (Halko, Martinsson and Tropp, algorithm 4.4): Q of A R for a Gaussian R, then
    niter rounds of Q of A^T Q and Q of A Q."""
    R = randn(A.shape[-1], q, dtype=A.dtype, device=A.device)
    Q = qr(A @ R).Q
    for _ in range(niter):
        Q = qr(A @ qr(_mT(A) @ Q).Q).Q
    return Q


def svd_lowrank(A, q=6, niter=2, M=None):
    """(U, S, V) of a rank-q approximation of A - M by randomized SVD, as torch.svd_lowrank:
    A ~ U diag(S) V^T with U (m x q), S (q,), V (n x q). Composed of the QR and SVD kernels, so
    it differentiates as they do.

    >>> import clgrad
    >>> A = clgrad.ones(4, 1, dtype=clgrad.float64) @ clgrad.ones(1, 3, dtype=clgrad.float64)
    >>> U, S, V = clgrad.svd_lowrank(A, q=2)
    >>> round(S[0].item(), 6)
    3.464102
    """
    q = 6 if q is None else q
    niter = 2 if niter is None else niter
    if M is not None:
        A = A - M
    m, n = A.shape[-2], A.shape[-1]
    if m < n:                      # work on the tall side: A^T = V S U^T
        U, S, V = svd_lowrank(_mT(A), q, niter)
        return V, S, U
    Q = _approximate_basis(A, q, niter)
    Ub, S, Vh = svd(_mT(Q) @ A, full_matrices=False)
    return Q @ Ub, S, _mT(Vh)


def pca_lowrank(A, q=None, center=True, niter=2):
    """(U, S, V) of the principal components of A's rows (its columns centred first), as
    torch.pca_lowrank: svd_lowrank of A - mean with q = min(6, m, n) by default; the projections
    onto the first k components are A @ V[:, :k].

    >>> import clgrad
    >>> x = clgrad.tensor([[1.0, 1.0], [2.0, 2.0], [3.0, 3.0]], dtype=clgrad.float64)
    >>> U, S, V = clgrad.pca_lowrank(x, q=1)
    >>> [round(abs(v), 4) for v in V[:, 0].tolist()]
    [0.7071, 0.7071]
    """
    m, n = A.shape[-2], A.shape[-1]
    q = min(6, m, n) if q is None else q
    if not 0 <= q <= min(m, n):
        raise ValueError(f"q(={q}) must be non-negative integer and not greater than "
                         f"min(m, n)={min(m, n)}")
    M = A.mean(-2, keepdim=True) if center else None
    return svd_lowrank(A, q, niter, M)


def _removed(name, instead):
    def fn(*args, **kwargs):
        raise RuntimeError(f"torch.{name} was deprecated in torch 1.9 and removed; use {instead} "
                           f"(clgrad has it under the same name)")
    fn.__name__ = name
    fn.__doc__ = f"Removed from torch (1.9): raises, pointing to {instead}."
    return fn


FUNCTIONS = {"qr": _legacy_qr, "svd": _legacy_svd, "pinverse": pinverse,
             "orgqr": householder_product, "svd_lowrank": svd_lowrank,
             "pca_lowrank": pca_lowrank,
             "solve": _removed("solve", "torch.linalg.solve (its arguments are reversed)"),
             "lstsq": _removed("lstsq", "torch.linalg.lstsq (its arguments are reversed)"),
             "symeig": _removed("symeig", "torch.linalg.eigh or eigvalsh (UPLO='L' by default)"),
             "eig": _removed("eig", "torch.linalg.eig"),
             "matrix_rank": _removed("matrix_rank", "torch.linalg.matrix_rank")}
METHODS = {"qr": _legacy_qr, "svd": _legacy_svd, "pinverse": pinverse,
           "orgqr": householder_product,
           **{n: FUNCTIONS[n] for n in ("solve", "lstsq", "symeig", "eig")}}
