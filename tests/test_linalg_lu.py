"""clgrad.linalg: the LU and Cholesky kernels and what is built on them (solve, inv, det,
slogdet, cholesky) against numpy.linalg, batched and strided; gradients by finite differences;
the composed norms and products; errors."""
import math

import numpy as np
import pytest

import clgrad
from clgrad import linalg as LA
from clgrad.autograd import gradcheck, gradgradcheck

DT = [("float64", 1e-10), ("float32", 2e-4)]


def _np(t):
    return t.detach().numpy()


@pytest.mark.parametrize("dtype,tol", DT)
def test_lu_based_ops_match_numpy(device, dtype, tol):
    rng = np.random.default_rng(0)
    for shape in ((1, 1), (5, 5), (3, 7, 7), (2, 2, 33, 33)):   # 33 rows cross a group of 32
        a = rng.standard_normal(shape)
        A = clgrad.tensor(a, dtype=getattr(clgrad, dtype))
        b = rng.standard_normal(shape[:-1] + (3,))
        X = LA.solve(A, clgrad.tensor(b, dtype=A.dtype))
        np.testing.assert_allclose(_np(X), np.linalg.solve(a, b), rtol=tol * 10, atol=tol * 10)
        np.testing.assert_allclose(_np(LA.inv(A)), np.linalg.inv(a), rtol=tol * 10,
                                   atol=tol * 10)
        np.testing.assert_allclose(_np(LA.det(A)), np.linalg.det(a), rtol=tol * 10, atol=tol)
        sign, logabs = LA.slogdet(A)
        s2, l2 = np.linalg.slogdet(a)
        np.testing.assert_array_equal(_np(sign), s2)
        np.testing.assert_allclose(_np(logabs), l2, rtol=tol, atol=tol)
    # a vector right-hand side, broadcasting, a strided A, left=False
    a = rng.standard_normal((2, 4, 4))
    A = clgrad.tensor(a.transpose(0, 2, 1).copy()).transpose(1, 2)       # strided view of a
    assert not A.is_contiguous()
    v = rng.standard_normal(4)
    np.testing.assert_allclose(_np(LA.solve(A, clgrad.tensor(v))), np.linalg.solve(a, v),
                               rtol=1e-9)
    m = rng.standard_normal((3, 4))
    np.testing.assert_allclose(_np(LA.solve(A, clgrad.tensor(m), left=False)),
                               np.linalg.solve(a.transpose(0, 2, 1), m.T).transpose(0, 2, 1),
                               rtol=1e-9)


def test_pivoting_determinant_sign_and_lu_factor(device):
    A = clgrad.tensor([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 2.0]], dtype=clgrad.float64)
    assert LA.det(A).item() == -2.0                     # one row swap
    LU, piv = LA.lu_factor(A)
    assert piv.dtype == clgrad.int32 and piv.tolist() == [2, 2, 3]
    X = LA.lu_solve(LU, piv, clgrad.tensor([[1.0], [2.0], [4.0]], dtype=clgrad.float64))
    assert X.reshape(-1).tolist() == [2.0, 1.0, 2.0]
    S = clgrad.tensor([[1.0, 2.0], [2.0, 4.0]], dtype=clgrad.float64)   # singular
    assert LA.det(S).item() == 0.0 and LA.lu_factor_ex(S).info.item() == 2
    assert LA.slogdet(S).logabsdet.item() == -math.inf
    assert LA.inv_ex(S).info.item() == 2
    assert math.isnan(clgrad.logdet(-clgrad.eye(3, dtype=clgrad.float64)).item())


def test_empty_and_zero_size(device):
    assert LA.det(clgrad.zeros(0, 0, dtype=clgrad.float64)).item() == 1.0
    assert LA.inv(clgrad.zeros(2, 0, 0)).shape == (2, 0, 0)
    assert LA.det(clgrad.zeros(0, 3, 3)).shape == (0,)
    assert LA.solve(clgrad.zeros(0, 3, 3), clgrad.zeros(0, 3, 2)).shape == (0, 3, 2)


@pytest.mark.parametrize("dtype,tol", DT)
def test_cholesky_matches_numpy(device, dtype, tol):
    rng = np.random.default_rng(1)
    for n in (1, 4, 40):
        a = rng.standard_normal((2, n, n))
        spd = a @ a.transpose(0, 2, 1) + n * np.eye(n)
        A = clgrad.tensor(spd, dtype=getattr(clgrad, dtype))
        np.testing.assert_allclose(_np(LA.cholesky(A)), np.linalg.cholesky(spd), rtol=tol,
                                   atol=tol * 10)
        np.testing.assert_allclose(_np(LA.cholesky(A, upper=True)),
                                   np.linalg.cholesky(spd).transpose(0, 2, 1), rtol=tol,
                                   atol=tol * 10)
    bad = clgrad.tensor([[1.0, 2.0], [2.0, 1.0]])
    assert LA.cholesky_ex(bad).info.item() == 2
    with pytest.raises(LA.LinAlgError, match="order 2 is not positive-definite"):
        LA.cholesky(bad)


def test_gradients(device):
    rng = np.random.default_rng(2)
    a = rng.standard_normal((2, 3, 3)) + 3 * np.eye(3)
    A = clgrad.tensor(a, requires_grad=True)
    B = clgrad.tensor(rng.standard_normal((2, 3, 2)), requires_grad=True)
    assert gradcheck(LA.solve, (A, B))
    assert gradgradcheck(LA.solve, (A, B))
    assert gradcheck(LA.inv, (A,))
    assert gradcheck(LA.det, (A,))
    assert gradgradcheck(LA.det, (A,))
    assert gradcheck(lambda A: LA.slogdet(A).logabsdet, (A,))
    spd = a @ a.transpose(0, 2, 1) + np.eye(3)
    S = clgrad.tensor(spd, requires_grad=True)
    # the factor of the symmetric part, as torch's gradient assumes a symmetric input
    assert gradcheck(lambda S: LA.cholesky((S + S.mT) / 2), (S,))
    assert gradcheck(lambda A: LA.matrix_exp(A * 0.3), (A,))


def test_composed_norms_and_products(device):
    rng = np.random.default_rng(3)
    a = rng.standard_normal((2, 3, 4))
    A = clgrad.tensor(a)
    for ord in (2, 1, math.inf, -math.inf, 0, 3.5):
        np.testing.assert_allclose(_np(LA.vector_norm(A, ord, dim=-1)),
                                   np.linalg.norm(a, ord, axis=-1), rtol=1e-10)
    for ord in ("fro", 1, -1, math.inf, -math.inf):
        np.testing.assert_allclose(_np(LA.matrix_norm(A, ord)), np.linalg.norm(a, ord,
                                                                               axis=(-2, -1)),
                                   rtol=1e-10)
    np.testing.assert_allclose(LA.norm(A).item(), np.linalg.norm(a.reshape(-1)), rtol=1e-10)
    np.testing.assert_allclose(_np(LA.norm(A[0], 1)), np.linalg.norm(a[0], 1), rtol=1e-10)
    assert LA.matrix_norm(A, keepdim=True).shape == (2, 1, 1)
    np.testing.assert_allclose(_np(LA.vecdot(A, A)), (a * a).sum(-1), rtol=1e-10)
    m = [rng.standard_normal(s) for s in ((3,), (3, 4), (4, 2), (2,))]
    np.testing.assert_allclose(LA.multi_dot([clgrad.tensor(x) for x in m]).item(),
                               np.linalg.multi_dot(m), rtol=1e-10)
    sq = rng.standard_normal((3, 3)) + 3 * np.eye(3)
    np.testing.assert_allclose(_np(LA.matrix_power(clgrad.tensor(sq), -2)),
                               np.linalg.matrix_power(sq, -2), rtol=1e-9)
    # exp of a nilpotent and of a diagonal matrix, in closed form
    np.testing.assert_allclose(_np(LA.matrix_exp(clgrad.tensor([[0.0, 2.0], [0.0, 0.0]],
                                                               dtype=clgrad.float64))),
                               [[1.0, 2.0], [0.0, 1.0]], atol=1e-12)
    np.testing.assert_allclose(_np(LA.matrix_exp(clgrad.tensor(np.diag([1.0, -3.0, 5.0])))),
                               np.diag(np.exp([1.0, -3.0, 5.0])), rtol=1e-10)
    U = clgrad.tensor(np.triu(sq))
    np.testing.assert_allclose(_np(LA.solve_triangular(U, clgrad.tensor(np.eye(3)),
                                                       upper=True)),
                               np.linalg.inv(np.triu(sq)), rtol=1e-9)


def test_errors_name_the_op_and_the_shapes():
    with pytest.raises(RuntimeError, match="linalg.inv: A must be batches of square matrices, "
                                           "but they are 2 by 3 matrices"):
        LA.inv(clgrad.zeros(2, 3))
    with pytest.raises(LA.LinAlgError, match="singular"):
        LA.inv(clgrad.zeros(2, 2))
    with pytest.raises(RuntimeError, match="Incompatible shapes"):
        LA.solve(clgrad.eye(3), clgrad.ones(2, 1))
    with pytest.raises(RuntimeError, match="Expected a floating point"):
        LA.det(clgrad.ones(2, 2, dtype=clgrad.int64))
    with pytest.raises(RuntimeError, match="Order 3 not supported"):
        LA.matrix_norm(clgrad.eye(2), 3)


def test_lu_unpacked_and_legacy_forms(device):
    rng = np.random.default_rng(3)
    a = rng.standard_normal((2, 5, 5))
    A = clgrad.tensor(a, dtype=clgrad.float64, device=device)
    P, L, U = LA.lu(A)
    LU, piv = LA.lu_factor(A)
    p, l, u = _np(P), _np(L), _np(U)
    np.testing.assert_allclose(p @ l @ u, a, atol=1e-12)
    np.testing.assert_allclose(np.triu(u), u)
    np.testing.assert_allclose(np.diagonal(l, axis1=-2, axis2=-1), 1.0)
    np.testing.assert_allclose(np.tril(l, -1) + np.triu(u), _np(LU))
    assert sorted(p.sum(-1).ravel()) == [1.0] * 10 and sorted(p.sum(-2).ravel()) == [1.0] * 10
    # partial pivoting: every multiplier is at most 1 in magnitude
    assert np.abs(l).max() <= 1 + 1e-12
    P2, L2, U2 = clgrad.lu_unpack(LU, piv)
    np.testing.assert_array_equal(_np(P2), p)
    # the deprecated torch forms
    lu_, piv_, info = A.lu(get_infos=True)
    np.testing.assert_array_equal(_np(lu_), _np(LU))
    np.testing.assert_array_equal(piv_.numpy(), piv.numpy())
    assert info.tolist() == [0, 0]
    b = rng.standard_normal((2, 5, 3))
    B = clgrad.tensor(b, dtype=clgrad.float64, device=device)
    np.testing.assert_allclose(_np(clgrad.lu_solve(B, LU, piv)), np.linalg.solve(a, b),
                               atol=1e-10)
    T = np.triu(a) + 4 * np.eye(5)
    for upper, transpose in ((True, False), (True, True), (False, False)):
        t = T if upper else T.swapaxes(-1, -2)
        X, C = clgrad.triangular_solve(B, clgrad.tensor(t, device=device), upper=upper,
                                       transpose=transpose)
        np.testing.assert_allclose(_np(X), np.linalg.solve(t.swapaxes(-1, -2) if transpose
                                                           else t, b), atol=1e-10)
        np.testing.assert_array_equal(_np(C), t)


def test_lu_gradients(device):
    rng = np.random.default_rng(4)
    A = clgrad.tensor(rng.standard_normal((2, 4, 4)), dtype=clgrad.float64, device=device,
                      requires_grad=True)
    B = clgrad.tensor(rng.standard_normal((2, 4, 2)), dtype=clgrad.float64, device=device,
                      requires_grad=True)
    assert gradcheck(lambda a: LA.lu_factor(a).LU, (A,))
    assert gradcheck(lambda a: LA.lu(a).L, (A,)) and gradcheck(lambda a: LA.lu(a).U, (A,))
    assert gradcheck(lambda a, b: LA.lu_solve(*LA.lu_factor(a), b), (A, B))
    assert gradgradcheck(lambda a: LA.lu_factor(a).LU, (A,))
    assert LA.lu_factor(A).pivots.requires_grad is False


def test_lu_solve_adjoint_and_right(device):
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal((2, 4, 4)), rng.standard_normal((2, 4, 3))
    LU, piv = LA.lu_factor(clgrad.tensor(a, device=device))
    B = clgrad.tensor(b, device=device)
    np.testing.assert_allclose(_np(LA.lu_solve(LU, piv, B, adjoint=True)),
                               np.linalg.solve(a.swapaxes(-1, -2), b), atol=1e-10)
    bt = b.swapaxes(-1, -2)                     # X A = B^T
    np.testing.assert_allclose(_np(LA.lu_solve(LU, piv, clgrad.tensor(bt, device=device),
                                               left=False)),
                               np.linalg.solve(a.swapaxes(-1, -2), b).swapaxes(-1, -2),
                               atol=1e-10)
    np.testing.assert_allclose(_np(LA.lu_solve(LU, piv, clgrad.tensor(bt, device=device),
                                               left=False, adjoint=True)),
                               np.linalg.solve(a, b).swapaxes(-1, -2), atol=1e-10)


def test_norm_dims_and_orders_as_torch(device):
    # torch.norm hands 'fro' over more than two dims, 'nuc' and unknown names to
    # linalg.matrix_norm, which checks dtype, rank, order and the pair of dims in that order; a
    # numeric p over any number of dims is a vector norm
    a = np.random.default_rng(2).standard_normal((2, 3, 4))
    x = clgrad.tensor(a, dtype=clgrad.float32, device=device)
    with pytest.raises(RuntimeError, match="linalg.matrix_norm: dim must be a 2-tuple. Got 0 1 2"):
        clgrad.norm(x, dim=(0, 1, 2))
    with pytest.raises(RuntimeError, match="linalg.matrix_norm: dim must be a 2-tuple. Got -1 0 1"):
        clgrad.norm(x, "fro", dim=(-1, 0, 1))
    with pytest.raises(RuntimeError, match="dim must be a 2-tuple. Got 0 1 2"):
        clgrad.norm(x, "nuc")
    with pytest.raises(RuntimeError, match="dim must be a 2-tuple. Got 1"):
        clgrad.norm(x, "nuc", dim=1)
    with pytest.raises(RuntimeError, match="linalg.matrix_norm: Order abc not supported"):
        clgrad.norm(x, "abc", dim=1)
    with pytest.raises(RuntimeError, match="must have at least 2 dimensions"):
        clgrad.norm(x[0, 0], "fro", dim=(0, 0, 0))
    with pytest.raises(RuntimeError, match="matrix_norm: Expected a floating point or complex "
                                           "tensor as input. Got Int"):
        clgrad.norm(x.int(), "fro", dim=(0, 1, 2))
    with pytest.raises(RuntimeError, match="matrix_norm: dim must be a 2-tuple. Got 0 1 2"):
        clgrad.linalg.matrix_norm(x, dim=(0, 1, 2))
    with pytest.raises(RuntimeError, match=r"linalg.norm: If dim is specified, it must be of "
                                           r"length 1 or 2. Got \[0, 1, 2\]"):
        clgrad.linalg.norm(x, 2, dim=(0, 1, 2))
    assert abs(clgrad.norm(x, 3, dim=(0, 1, 2)).item() -
               (np.abs(a) ** 3).sum() ** (1 / 3)) < 1e-4
    assert clgrad.norm(x, "fro", keepdim=True).shape == (1, 1, 1)
    assert abs(clgrad.norm(x[0], "nuc").item() - np.linalg.norm(a[0], "nuc")) < 1e-4


def _np_cofactors(a):
    n = a.shape[-1]
    c = np.zeros_like(a)
    for i in range(n):
        for j in range(n):
            minor = np.delete(np.delete(a, i, -2), j, -1)
            c[..., i, j] = (-1) ** (i + j) * np.linalg.det(minor) if n > 1 else 1.0
    return c


def test_linalg_edges_follow_torch(device):
    """The linalg family's findings (issue 22), each checked against torch 2.13: det's gradient
    at singular matrices (the cofactors), matrix_norm of integer and empty matrices, solve of a
    singular matrix or a 0-d B, the negative and infinite vector norms of empty tensors."""
    t = lambda a, dt=clgrad.float64: clgrad.tensor(a, dtype=dt, device=device)  # noqa: E731
    for a in (np.zeros((1, 1)), np.array([[1.0, 2.0], [2.0, 4.0]]), np.zeros((3, 3)),
              np.array([[[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]],
                        [[2.0, 1.0, 0.0], [1.0, 3.0, 1.0], [0.0, 1.0, 4.0]]])):
        A = t(a).requires_grad_()
        LA.det(A).sum().backward()                   # was: LinAlgError from inv
        np.testing.assert_allclose(_np(A.grad), _np_cofactors(a), atol=1e-12)
    A = t([[1.0, 2.0], [2.0, 4.0]]).requires_grad_()
    gr, = clgrad.autograd.grad(LA.det(A), A, create_graph=True)
    gg, = clgrad.autograd.grad(gr.sum(), A)          # twice: through the minors' det
    np.testing.assert_allclose(_np(gg), [[1.0, -1.0], [-1.0, 1.0]], atol=1e-12)
    ints = t([[[1, 0], [1, 1]]], clgrad.int64)
    for o in ("fro", "nuc", 2, 1, -math.inf, math.inf):
        with pytest.raises(RuntimeError, match="Expected a floating point"):
            LA.matrix_norm(ints, o, dtype=clgrad.float64)    # A's dtype, before the cast
    for shape in ((0, 0), (0, 3), (3, 0), (2, 3, 0), (2, 0, 3)):
        e = clgrad.zeros(shape, device=device)
        for o in (1, math.inf, 2, "nuc", "fro"):     # the largest of nothing is 0
            r = LA.matrix_norm(e, o)
            assert r.shape == shape[:-2] and not r.any().item()
        with pytest.raises(IndexError):
            LA.matrix_norm(clgrad.zeros(3, 0, device=device), -1)
    assert LA.matrix_norm(clgrad.zeros(0, 3, device=device), math.inf, keepdim=True).shape == \
        (1, 1)
    with pytest.raises(LA.LinAlgError, match="singular"):
        LA.solve(clgrad.zeros(2, 2, device=device), clgrad.ones(2, device=device))
    with pytest.raises(LA.LinAlgError, match=r"singular \(batch element 1\)"):
        LA.solve(clgrad.stack([clgrad.eye(2, device=device), clgrad.zeros(2, 2, device=device)]),
                 clgrad.ones(2, 2, 1, device=device))
    with pytest.raises(LA.LinAlgError, match="singular"):
        LA.solve(clgrad.zeros(2, 2, device=device), clgrad.ones(1, 2, device=device), left=False)
    assert LA.solve_ex(clgrad.zeros(2, 2, device=device), clgrad.ones(2, device=device)) \
        .info.item() == 1                            # solve_ex reports, as torch's
    x = LA.solve_triangular(clgrad.zeros(2, 2, device=device), clgrad.ones(2, 1, device=device),
                            upper=True)
    assert not np.isfinite(_np(x)).all()             # torch: inf / nan, no error
    with pytest.raises(RuntimeError, match="B must have at least 2 dimensions"):
        LA.solve(t(np.ones((2, 1, 1, 1))), t(np.array(1.0)))
    for o in (-1, -0.5, -math.inf, math.inf):
        with pytest.raises(RuntimeError, match="does not have an identity"):
            LA.vector_norm(clgrad.zeros(0, device=device), o)
        with pytest.raises(RuntimeError, match="dimension 1"):
            LA.vector_norm(clgrad.zeros(2, 0, device=device), o, dim=1)
        assert LA.vector_norm(clgrad.zeros(0, 3, device=device), o, dim=1).shape == (0,)
    assert LA.vector_norm(clgrad.zeros(2, 0, device=device), 0, dim=1).tolist() == [0.0, 0.0]
