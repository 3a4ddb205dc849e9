"""clgrad.linalg's decompositions (the kernels of cl_kernels/linalg_decomp.mako: Householder QR,
Jacobi eigh, one-sided Jacobi SVD) against numpy.linalg: reconstruction, orthonormality, values,
batched, empty and strided; gradients by finite differences; what is composed on them (pinv,
matrix_rank, lstsq, cond, the singular-value norms); torch's errors."""
import numpy as np
import pytest

import clgrad
from clgrad import linalg as LA
from clgrad.autograd import gradcheck, gradgradcheck

DT = [("float64", 1e-12), ("float32", 2e-5)]


def _np(t):
    return t.detach().numpy()


def _orthonormal_cols(q, tol):
    k = q.shape[-1]
    np.testing.assert_allclose(np.swapaxes(q, -1, -2) @ q, np.broadcast_to(np.eye(k), q.shape[:-2]
                                                                          + (k, k)), atol=tol)


@pytest.mark.parametrize("dtype,tol", DT)
def test_qr_matches_numpy(device, dtype, tol):
    rng = np.random.default_rng(0)
    dt = getattr(clgrad, dtype)
    # sizes keep to work-groups of 4 and 16 (PoCL generates code per group size: test time);
    # 17 rows cross a group of 16
    for shape in ((4, 3), (3, 5), (2, 3, 6, 6), (17, 5)):
        a = rng.standard_normal(shape)
        A = clgrad.tensor(a, dtype=dt)
        for mode in ("reduced", "complete"):
            Q, R = LA.qr(A, mode=mode)
            q, r = np.linalg.qr(a, mode=mode)
            assert Q.shape == q.shape and R.shape == r.shape
            # LAPACK's reflectors, so numpy's signs too
            np.testing.assert_allclose(_np(Q), q, atol=tol * 100)
            np.testing.assert_allclose(_np(R), r, atol=tol * 100)
            np.testing.assert_allclose(_np(Q @ R), a, atol=tol * 100)
            _orthonormal_cols(_np(Q), tol * 100)
        Q, R = LA.qr(A, mode="r")
        assert Q.shape == (0,)
        np.testing.assert_allclose(_np(R), np.linalg.qr(a, mode="r"), atol=tol * 100)
    # strided input, a zero column (tau = 0), the legacy spellings
    a = rng.standard_normal((2, 5, 4))
    a[:, :, 1] = 0
    A = clgrad.tensor(np.swapaxes(a, 1, 2).copy(), dtype=dt).transpose(1, 2)
    assert not A.is_contiguous()
    Q, R = LA.qr(A)
    np.testing.assert_allclose(_np(Q @ R), a, atol=tol * 100)
    _orthonormal_cols(_np(Q), tol * 100)
    assert clgrad.qr(A, some=False).Q.shape == (2, 5, 5)
    np.testing.assert_allclose(_np(A.qr().R), _np(R), atol=tol)


def test_qr_empty():
    assert [tuple(t.shape) for t in LA.qr(clgrad.zeros(0, 3, 2))] == [(0, 3, 2), (0, 2, 2)]
    Q, R = LA.qr(clgrad.zeros(3, 0), mode="complete")
    assert Q.tolist() == np.eye(3).tolist() and R.shape == (3, 0)
    assert [tuple(t.shape) for t in LA.qr(clgrad.zeros(3, 0))] == [(3, 0), (0, 0)]


def test_qr_gradients_and_errors(device):
    rng = np.random.default_rng(1)
    for shape in ((4, 3), (4, 4), (2, 4)):
        A = clgrad.tensor(rng.standard_normal(shape) + np.eye(*shape), requires_grad=True)
        assert gradcheck(lambda A: LA.qr(A), (A,))
    assert gradgradcheck(lambda A: LA.qr(A), (A,))
    A = clgrad.tensor(rng.standard_normal((4, 3)), requires_grad=True)
    with pytest.raises(RuntimeError, match="not computed when mode='r'"):
        LA.qr(A, mode="r").R.sum().backward()
    with pytest.raises(RuntimeError, match="not differentiable when mode='complete' and nrows "
                                           "> ncols"):
        LA.qr(A, mode="complete").Q.sum().backward()
    with pytest.raises(RuntimeError, match="unrecognized mode 'x'"):
        LA.qr(A, mode="x")
    with pytest.raises(RuntimeError, match="linalg.qr: The input tensor A must have at least 2 "
                                           "dimensions"):
        LA.qr(clgrad.ones(3))
    with pytest.raises(RuntimeError, match="Expected a floating point or complex tensor as "
                                           "input. Got Int"):
        LA.qr(clgrad.ones(3, 3, dtype=clgrad.int32))


@pytest.mark.parametrize("dtype,tol", DT)
def test_eigh_matches_numpy(device, dtype, tol):
    rng = np.random.default_rng(2)
    dt = getattr(clgrad, dtype)
    for shape in ((1, 1), (5, 5), (2, 3, 17, 17)):               # 17 crosses a group of 16
        a = rng.standard_normal(shape)
        a = a + np.swapaxes(a, -1, -2)
        junk = np.triu(rng.standard_normal(shape), 1)            # only the lower triangle counts
        w, V = LA.eigh(clgrad.tensor(a + junk, dtype=dt))
        w, V = _np(w), _np(V)
        scale = tol * 10 * max(1.0, np.abs(a).max())
        np.testing.assert_allclose(w, np.linalg.eigvalsh(a), atol=scale)
        assert (np.diff(w, axis=-1) >= 0).all()
        _orthonormal_cols(V, tol * 100)
        np.testing.assert_allclose((V * w[..., None, :]) @ np.swapaxes(V, -1, -2), a,
                                   atol=scale * 10)
        # the sign: each eigenvector's largest component is positive
        big = np.take_along_axis(V, np.abs(V).argmax(-2)[..., None, :], -2)
        assert (big > 0).all()
        w2 = LA.eigvalsh(clgrad.tensor(a + np.swapaxes(junk, -1, -2), dtype=dt), UPLO="U")
        np.testing.assert_allclose(_np(w2), w, atol=scale)
    # repeated eigenvalues, a strided input, an empty batch
    w, V = LA.eigh(clgrad.eye(4, dtype=dt) * 2)
    assert _np(w).tolist() == [2.0] * 4
    _orthonormal_cols(_np(V), tol)
    a = rng.standard_normal((4, 4))
    A = clgrad.tensor(a @ a.T, dtype=dt).t()
    np.testing.assert_allclose(_np(LA.eigvalsh(A)), np.linalg.eigvalsh(a @ a.T), atol=tol * 100)
    w, V = LA.eigh(clgrad.zeros(0, 3, 3, dtype=dt))
    assert w.shape == (0, 3) and V.shape == (0, 3, 3)
    assert LA.eigvalsh(clgrad.zeros(0, 0, dtype=dt)).shape == (0,)


def test_eigh_gradients_and_errors(device):
    rng = np.random.default_rng(3)
    a = rng.standard_normal((2, 4, 4)) + np.diag([0.0, 3.0, 6.0, 9.0])   # distinct eigenvalues
    A = clgrad.tensor(a, requires_grad=True)
    # torch's gradient assumes a symmetric input: differentiate through A + A^T
    assert gradcheck(lambda A: LA.eigh(A + A.mT), (A,))
    assert gradgradcheck(lambda A: LA.eigh(A + A.mT), (A,))
    assert gradcheck(lambda A: LA.eigvalsh(A + A.mT, UPLO="U"), (A,))
    with pytest.raises(RuntimeError, match="linalg.eigh: A must be batches of square matrices, "
                                           "but they are 2 by 3 matrices"):
        LA.eigh(clgrad.ones(2, 3))
    with pytest.raises(RuntimeError, match="Expected UPLO argument to be 'L' or 'U', but got X"):
        LA.eigvalsh(clgrad.eye(2), UPLO="X")


@pytest.mark.parametrize("dtype,tol", DT)
def test_svd_matches_numpy(device, dtype, tol):
    rng = np.random.default_rng(4)
    dt = getattr(clgrad, dtype)
    rank2 = rng.standard_normal((6, 2)) @ rng.standard_normal((2, 4))
    for a in (rng.standard_normal((5, 3)), rng.standard_normal((3, 5)),
              rng.standard_normal((2, 2, 4, 4)), rank2, rng.standard_normal((20, 17))):
        A = clgrad.tensor(a, dtype=dt)
        s = np.linalg.svd(a, compute_uv=False)
        for full in (True, False):
            U, S, Vh = LA.svd(A, full_matrices=full)
            u, _, vh = np.linalg.svd(a, full_matrices=full)
            assert U.shape == u.shape and Vh.shape == vh.shape
            U, S, Vh = _np(U), _np(S), _np(Vh)
            np.testing.assert_allclose(S, s, atol=tol * 100)
            _orthonormal_cols(U, tol * 100)
            _orthonormal_cols(np.swapaxes(Vh, -1, -2), tol * 100)
            k = S.shape[-1]
            np.testing.assert_allclose((U[..., :k] * S[..., None, :]) @ Vh[..., :k, :], a,
                                       atol=tol * 100)
        np.testing.assert_allclose(_np(LA.svdvals(A)), s, atol=tol * 100)
    # torch.svd gives V; strided; empty
    a = rng.standard_normal((4, 3))
    A = clgrad.tensor(a.T.copy(), dtype=dt).t()
    U, S, V = clgrad.svd(A)
    assert V.shape == (3, 3)
    np.testing.assert_allclose(_np(U @ S.diag_embed() @ V.t()), a, atol=tol * 100)
    U, S, V = A.svd(compute_uv=False)
    assert not U.numpy().any() and U.shape == (4, 4)
    U, S, Vh = LA.svd(clgrad.zeros(2, 0, 3, dtype=dt))
    assert (U.shape, S.shape, Vh.shape) == ((2, 0, 0), (2, 0), (2, 3, 3))
    assert _np(Vh).tolist() == [np.eye(3).tolist()] * 2


def test_svd_gradients(device):
    rng = np.random.default_rng(5)
    for shape in ((4, 3), (4, 4), (2, 4)):
        a = rng.standard_normal(shape)
        A = clgrad.tensor(a, requires_grad=True)
        c = clgrad.tensor(rng.standard_normal(min(shape)))

        def f(A):                  # invariant under the singular vectors' signs
            U, S, Vh = LA.svd(A, full_matrices=False)
            return (U * c) @ Vh, S
        assert gradcheck(f, (A,))
        assert gradcheck(LA.svdvals, (A,))
    assert gradgradcheck(f, (A,))
    U, S, Vh = LA.svd(A)                          # full_matrices: the extra columns get none
    ((U[:, :2] * c) @ Vh[:2]).sum().backward()
    assert A.grad.shape == (2, 4)


def test_composed(device):
    rng = np.random.default_rng(6)
    a = rng.standard_normal((2, 5, 4))
    A = clgrad.tensor(a)
    np.testing.assert_allclose(_np(LA.pinv(A)), np.linalg.pinv(a), atol=1e-12)
    s = a[0].T @ a[0]
    np.testing.assert_allclose(_np(LA.pinv(clgrad.tensor(s), hermitian=True)), np.linalg.pinv(s),
                               atol=1e-12)
    d = clgrad.tensor(np.diag([1.0, 1e-3, 1e-9, 0.5]))
    assert LA.matrix_rank(d).item() == 4 and LA.matrix_rank(d, atol=1e-4).item() == 3
    assert LA.matrix_rank(d, rtol=1e-2).item() == 2
    assert LA.matrix_rank(d, hermitian=True, tol=1e-4).item() == 3
    r = LA.matrix_rank(clgrad.tensor(rng.standard_normal((3, 4, 2)) @ rng.standard_normal((2, 5))))
    assert r.dtype == clgrad.int64 and r.tolist() == [2, 2, 2]
    np.testing.assert_allclose(_np(LA.pinv(d, atol=1e-4)), np.diag([1.0, 1e3, 0.0, 2.0]),
                               rtol=1e-12)
    b = rng.standard_normal((2, 5, 2))
    x, res = np.linalg.lstsq(a[0], b[0], rcond=None)[:2]
    for driver in ("gels", "gelsd"):
        out = LA.lstsq(A, clgrad.tensor(b), driver=driver)
        np.testing.assert_allclose(_np(out.solution[0]), x, atol=1e-12)
        np.testing.assert_allclose(_np(out.residuals[0]), res, atol=1e-12)
    out = LA.lstsq(A, clgrad.tensor(b))                     # gelsy: no residuals
    assert out.residuals.shape == (0,) and out.rank.tolist() == [4, 4]
    assert out.singular_values.shape == (0,)
    w = rng.standard_normal((4, 5))                          # wide: the least-norm solution
    y = rng.standard_normal(4)
    for driver in ("gels", "gelss"):
        np.testing.assert_allclose(_np(LA.lstsq(clgrad.tensor(w), clgrad.tensor(y),
                                                driver=driver).solution),
                                   np.linalg.lstsq(w, y, rcond=None)[0], atol=1e-12)
    for ord in ("nuc", 2, -2):
        np.testing.assert_allclose(_np(LA.matrix_norm(A, ord)), np.linalg.norm(a, ord, (-2, -1)),
                                   rtol=1e-12)
        np.testing.assert_allclose(_np(LA.norm(A, ord, dim=(0, 2))), np.linalg.norm(a, ord, (0, 2)),
                                   rtol=1e-12)
    assert LA.matrix_norm(A, 2, keepdim=True).shape == (2, 1, 1)
    sq = rng.standard_normal((2, 4, 4))
    for p in (None, -2, "fro", 1):
        np.testing.assert_allclose(_np(LA.cond(clgrad.tensor(sq), p)), np.linalg.cond(sq, p),
                                   rtol=1e-10)
    assert LA.cond(clgrad.zeros(2, 2), "fro").item() == float("inf")
    o = clgrad.empty(0, dtype=clgrad.float64)                 # out=, resized as torch does
    assert LA.svdvals(A, out=o) is o and o.shape == (2, 4)
    q, r = clgrad.empty(0, dtype=clgrad.float64), clgrad.empty(0, dtype=clgrad.float64)
    res = LA.qr(A, out=(q, r))
    assert res.Q is q and q.shape == (2, 5, 4)
    np.testing.assert_allclose(_np(q @ r), a, atol=1e-12)
    with pytest.raises(RuntimeError, match="parameter `driver` should be one of"):
        LA.lstsq(A, clgrad.tensor(b), driver="x")
    # gradients through the SVD and QR
    P = clgrad.tensor(a[0], requires_grad=True)
    assert gradcheck(LA.pinv, (P,))
    assert gradcheck(lambda P: LA.lstsq(P, clgrad.tensor(b[0]), driver="gels").solution, (P,))
    assert gradcheck(lambda P: LA.matrix_norm(P, "nuc"), (P,))


def test_householder_product_vander_tensorinv_tensorsolve(device):
    rng = np.random.default_rng(11)
    a, tau = rng.normal(size=(2, 5, 3)), rng.normal(size=(2, 2))
    want = []
    for b in range(2):                         # the product of the reflectors, one by one
        H = np.eye(5)
        for i in range(2):
            v = np.concatenate([np.zeros(i), [1.0], a[b, i + 1:, i]])
            H = H @ (np.eye(5) - tau[b, i] * np.outer(v, v))
        want.append(H[:, :3])
    A = clgrad.tensor(a, device=device, requires_grad=True)
    T = clgrad.tensor(tau, device=device, requires_grad=True)
    np.testing.assert_allclose(_np(LA.householder_product(A, T)), np.array(want), atol=1e-12)
    np.testing.assert_allclose(_np(A.orgqr(T)), np.array(want), atol=1e-12)
    assert gradcheck(LA.householder_product, (A, T))
    with pytest.raises(RuntimeError, match="greater than or equal to tau"):
        LA.householder_product(A, clgrad.ones(2, 4, dtype=A.dtype, device=device))
    x = rng.normal(size=(2, 4))
    X = clgrad.tensor(x, device=device, requires_grad=True)
    np.testing.assert_allclose(_np(LA.vander(X, N=3)), x[..., None] ** np.arange(3), rtol=1e-12)
    assert LA.vander(clgrad.tensor([1, 2, 3], device=device)).tolist() == np.vander(
        [1, 2, 3], increasing=True).tolist()
    assert gradcheck(LA.vander, (X,))
    with pytest.raises(RuntimeError, match="N must be greater than 1"):
        LA.vander(X, N=1)
    m = rng.normal(size=(2, 3, 6))
    np.testing.assert_allclose(_np(LA.tensorinv(clgrad.tensor(m, device=device))),
                               np.linalg.tensorinv(m, ind=2), atol=1e-10)
    b = rng.normal(size=(2, 3))
    np.testing.assert_allclose(_np(LA.tensorsolve(clgrad.tensor(m, device=device),
                                                  clgrad.tensor(b, device=device))),
                               np.linalg.tensorsolve(m, b), atol=1e-10)
    m4 = rng.normal(size=(2, 3, 6, 1))
    np.testing.assert_allclose(
        _np(LA.tensorsolve(clgrad.tensor(m4, device=device), clgrad.tensor(b.reshape(6, 1),
                                                                           device=device),
                           dims=(0, 1))),
        np.linalg.tensorsolve(m4, b.reshape(6, 1), axes=(0, 1)), atol=1e-10)
    with pytest.raises(RuntimeError, match="prod"):
        LA.tensorinv(clgrad.ones(2, 3, 5, device=device))


def test_svd_lowrank_and_pca_lowrank(device):
    rng = np.random.default_rng(12)
    a = rng.normal(size=(30, 4)) @ rng.normal(size=(4, 18))          # rank 4
    for m in (a, a.T):
        U, S, V = clgrad.svd_lowrank(clgrad.tensor(m, device=device), q=6)
        assert tuple(U.shape) == (m.shape[0], 6) and tuple(V.shape) == (m.shape[1], 6)
        np.testing.assert_allclose(_np(S)[:4], np.linalg.svd(m, compute_uv=False)[:4],
                                   rtol=1e-10)
        np.testing.assert_allclose(_np(U @ S.diag_embed() @ V.mT), m, atol=1e-10)
        _orthonormal_cols(_np(U), 1e-10)
    c = a - a.mean(0)
    U, S, V = clgrad.pca_lowrank(clgrad.tensor(a, device=device), q=4)
    np.testing.assert_allclose(_np(S), np.linalg.svd(c, compute_uv=False)[:4], rtol=1e-10)
    with pytest.raises(ValueError, match="min"):
        clgrad.pca_lowrank(clgrad.tensor(a, device=device), q=40)
    with pytest.raises(RuntimeError, match="linalg.solve"):
        clgrad.solve(clgrad.eye(2), clgrad.eye(2))
