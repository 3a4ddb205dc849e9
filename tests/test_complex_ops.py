"""Complex tensors in the families built after the first complex work: var / std (real results),
cumprod and the ordering scans' errors, nan_to_num, complex indices refused, scatter_reduce and
linear algebra of complex matrices; values against numpy's complex numbers, gradients with
gradcheck on complex128, torch's errors."""
import numpy as np
import pytest

import clgrad
from clgrad.autograd import gradcheck, gradgradcheck


def _cdtypes(device):
    return [clgrad.complex64] + ([clgrad.complex128] if device.has_fp64 else [])


def _rand(shape, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


def _close(t, expect, dt):
    tol = 1e-5 if dt in (clgrad.complex64, clgrad.float32) else 1e-10
    got = t.numpy()
    assert got.shape == np.shape(expect)
    np.testing.assert_allclose(got, expect, rtol=tol, atol=tol)


@pytest.fixture
def c128(device):
    if not device.has_fp64:
        pytest.skip("gradcheck wants complex128: the device has no fp64")
    return clgrad.complex128


def _z(a, dt, grad=True):
    return clgrad.tensor(a, dtype=dt, requires_grad=grad)


# ---- var / std ----------------------------------------------------------------------------------
@pytest.mark.parametrize("dim", [None, 0, -1, (0, 2)])
def test_var_std_are_real(device, dim):
    a = _rand((3, 4, 5))
    for dt in _cdtypes(device):
        z = clgrad.tensor(a, dtype=dt)
        for corr in (0, 1, 2):
            expect = np.var(a, axis=dim, ddof=corr)
            v, s = z.var(dim, correction=corr), clgrad.std(z, dim, correction=corr)
            assert v.dtype is dt.to_real() and s.dtype is dt.to_real()
            _close(v, expect, dt.to_real())
            _close(s, np.sqrt(expect), dt.to_real())
        v, m = clgrad.var_mean(z, dim, keepdim=True)
        s, m2 = clgrad.std_mean(z, dim, unbiased=False, keepdim=True)
        _close(v, np.var(a, axis=dim, ddof=1, keepdims=True), dt.to_real())
        _close(s, np.std(a, axis=dim, keepdims=True), dt.to_real())
        _close(m, np.mean(a, axis=dim, keepdims=True), dt)
        _close(m2, np.mean(a, axis=dim, keepdims=True), dt)


def test_var_std_strided_and_edge_cases(device):
    a = _rand((4, 6), 1)
    z = clgrad.tensor(a, dtype=clgrad.complex64)
    _close(z.t().var(1), np.var(a.T, axis=1, ddof=1), clgrad.float32)
    _close(z[:, ::2].std(0), np.std(a[:, ::2], axis=0, ddof=1), clgrad.float32)
    assert np.isnan(clgrad.tensor(1 + 1j).var().item())                  # 0-d: no degrees
    assert clgrad.tensor(1 + 1j).var(correction=0).item() == 0.0
    assert clgrad.zeros(0, 3, dtype=clgrad.complex64).var(1).shape == (0,)
    assert clgrad.full((3,), 2 - 1j).std().item() == 0.0                 # constant: exactly 0
    with pytest.raises(RuntimeError, match="std and var only support floating point and complex"):
        clgrad.tensor([1, 2]).var()


def test_var_std_gradients(c128):
    z = _z(_rand((3, 4), 2), c128)
    assert gradcheck(lambda t: t.var(1), (z,))
    assert gradcheck(lambda t: t.std(0, keepdim=True), (z,), check_forward_ad=True)
    assert gradgradcheck(lambda t: t.std(), (z,))
    assert gradcheck(lambda t: clgrad.var_mean(t, 0, correction=0)[0], (z,))
    # a constant slice: torch's std backward gives 0 there, not NaN
    c = _z(np.full(3, 1 + 2j), c128)
    c.std().backward()
    assert c.grad.tolist() == [0j, 0j, 0j]


# ---- scans ----------------------------------------------------------------------------------------
def test_cumprod(device):
    a = _rand((3, 9), 3)
    for dt in _cdtypes(device):
        z = clgrad.tensor(a, dtype=dt)
        for d in (0, 1, -1):
            _close(z.cumprod(d), np.cumprod(a, axis=d), dt)
        _close(clgrad.cumprod(z.t(), 1), np.cumprod(a.T, axis=1), dt)      # strided
        _close(z[:, 1::3].cumprod(1), np.cumprod(a[:, 1::3], axis=1), dt)
    assert clgrad.tensor(1 + 2j).cumprod(0).item() == 1 + 2j
    assert clgrad.zeros(0, 3, dtype=clgrad.complex64).cumprod(0).shape == (0, 3)
    assert clgrad.tensor([1, 2, 3]).cumprod(0, dtype=clgrad.complex64).tolist() == [1, 2, 6]


def test_cumprod_gradients(c128):
    z = _z(_rand((2, 5), 4), c128)
    assert gradcheck(lambda t: t.cumprod(1), (z,))
    assert gradgradcheck(lambda t: t.cumprod(1), (z,))
    b = _rand((2, 5), 5)
    b[0, 1] = b[1, 2] = b[1, 4] = 0                        # zeros: one, and two in a line
    zb = _z(b, c128)
    assert gradcheck(lambda t: t.cumprod(1), (zb,))
    assert gradgradcheck(lambda t: t.cumprod(1), (zb,))


@pytest.mark.parametrize("op", ["cummax", "cummin"])
def test_ordering_scans_refuse_complex(device, op):
    with pytest.raises(NotImplementedError, match=f"^\"{op}_cpu\" not implemented for "
                                                  f"'ComplexFloat'$"):
        getattr(clgrad.tensor([1j, 2]), op)(0)


# ---- nan_to_num ---------------------------------------------------------------------------------
def test_nan_to_num(device):
    inf, nan = float("inf"), float("nan")
    vals = np.array([complex(nan, 1), complex(2, inf), complex(-inf, nan), complex(inf, -inf),
                     1 + 2j, complex(nan, nan)])
    for dt in _cdtypes(device):
        big = float(np.finfo(np.float32 if dt is clgrad.complex64 else np.float64).max)
        z = clgrad.tensor(vals, dtype=dt)
        _close(clgrad.nan_to_num(z), np.nan_to_num(vals, posinf=big, neginf=-big), dt)
        _close(z.nan_to_num(nan=1.5, posinf=7.0, neginf=-3.0),
               np.nan_to_num(vals, nan=1.5, posinf=7.0, neginf=-3.0), dt)
        z[1::2].nan_to_num_(0.25, neginf=-1)
        expect = vals.copy()
        expect[1::2] = np.nan_to_num(vals[1::2], nan=0.25, posinf=big, neginf=-1)
        _close(z, expect, dt)
    # as torch: no derivative for complex outputs
    with pytest.raises(RuntimeError, match="nan_to_num does not support automatic "
                                           "differentiation for outputs with complex dtype"):
        clgrad.nan_to_num(clgrad.tensor([1j], requires_grad=True))
    with clgrad.no_grad():
        assert clgrad.nan_to_num(clgrad.tensor([1j], requires_grad=True)).tolist() == [1j]


# ---- complex indices ------------------------------------------------------------------------------
def test_complex_index_is_refused(device):
    x = clgrad.arange(3)
    msg = "^tensors used as indices must be long, int, byte or bool tensors$"
    for idx in (clgrad.tensor([1j]), clgrad.tensor(1 + 0j), (clgrad.tensor([1j]),)):
        with pytest.raises(IndexError, match=msg):
            x[idx]
        with pytest.raises(IndexError, match=msg):
            x[idx] = 5
    with pytest.raises(IndexError, match=msg):
        x.index_put_((clgrad.tensor([1j]),), clgrad.tensor(5))
    assert x.tolist() == [0, 1, 2]


# ---- scatter_reduce -----------------------------------------------------------------------------
def _np_scatter(x, dim, idx, src, reduce, include_self):
    out, cnt = x.copy(), np.ones(x.shape)
    src = src[tuple(slice(0, n) for n in idx.shape)]
    if not include_self:
        for c in np.ndindex(idx.shape):
            t = list(c)
            t[dim] = idx[c]
            out[tuple(t)], cnt[tuple(t)] = (1 if reduce == "prod" else 0), 0
    for c in np.ndindex(idx.shape):
        t = list(c)
        t[dim] = idx[c]
        t = tuple(t)
        out[t] = out[t] * src[c] if reduce == "prod" else out[t] + src[c]
        cnt[t] += 1
    return out / np.maximum(cnt, 1) if reduce == "mean" else out


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean"])
def test_scatter_reduce(device, reduce):
    rng = np.random.default_rng(6)
    x, src = _rand((3, 5), 7), _rand((4, 9), 8)
    idx = rng.integers(0, 5, (3, 7))                 # src is larger than index: its corner counts
    for dt in _cdtypes(device):
        for inc in (True, False):
            got = clgrad.tensor(x, dtype=dt).scatter_reduce(
                1, clgrad.tensor(idx), clgrad.tensor(src, dtype=dt), reduce, include_self=inc)
            _close(got, _np_scatter(x, 1, idx, src, reduce, inc), dt)
    # a strided input, and scatter's reduce="multiply"
    xs = clgrad.tensor(x.T.copy(), dtype=clgrad.complex64).t()
    i0 = rng.integers(0, 3, (3, 5))
    got = xs.scatter_reduce(0, clgrad.tensor(i0), clgrad.tensor(src, dtype=clgrad.complex64),
                            reduce)
    _close(got, _np_scatter(x, 0, i0, src, reduce, True), clgrad.complex64)
    if reduce == "prod":
        got = xs.scatter(0, clgrad.tensor(i0), clgrad.tensor(src[:3, :5], dtype=clgrad.complex64),
                         reduce="multiply")
        _close(got, _np_scatter(x, 0, i0, src, "prod", True), clgrad.complex64)


def test_scatter_reduce_errors(device):
    x, s, i = clgrad.tensor([1j, 2]), clgrad.tensor([1 + 1j, 3j]), clgrad.tensor([0, 0])
    for r in ("amax", "amin"):
        with pytest.raises(NotImplementedError, match=f"^\"scatter_gather_tensor_cpu_reduce_{r}\" "
                                                      f"not implemented for 'ComplexFloat'$"):
            x.scatter_reduce(0, i, s, r)
    with pytest.raises(RuntimeError, match="^scatter_reduce does not support automatic "
                                           "differentiation for outputs with complex dtype"):
        x.scatter_reduce(0, i, s.requires_grad_(), "prod")
    with pytest.raises(NotImplementedError, match="\"index_func_\" not implemented for "
                                                  "'ComplexFloat'"):
        x.index_reduce(0, i, s.detach(), "prod")


# ---- linear algebra -----------------------------------------------------------------------------
def _tol(dt):
    return 2e-4 if dt is clgrad.complex64 else 1e-9


def test_lu_solve_inv_det(device):
    A, B = _rand((2, 5, 5), 9), _rand((2, 5, 3), 10)
    for dt in _cdtypes(device):
        tA, tB, tol = clgrad.tensor(A, dtype=dt), clgrad.tensor(B, dtype=dt), _tol(dt)

        def close(t, expect):
            np.testing.assert_allclose(t.numpy(), expect, rtol=tol, atol=tol)
        close(clgrad.linalg.solve(tA, tB), np.linalg.solve(A, B))
        close(clgrad.linalg.solve(tA, tB[..., 0]), np.linalg.solve(A, B[..., :1])[..., 0])
        close(clgrad.linalg.solve(tA, tB.mT, left=False),
              np.linalg.solve(A.transpose(0, 2, 1), B).transpose(0, 2, 1))
        close(clgrad.linalg.inv(tA), np.linalg.inv(A))
        close(clgrad.linalg.inv(tA.mT), np.linalg.inv(A.transpose(0, 2, 1)))    # strided
        close(clgrad.linalg.det(tA), np.linalg.det(A))
        sign, logabs = clgrad.linalg.slogdet(tA)
        close(sign, np.linalg.slogdet(A)[0])
        close(logabs, np.linalg.slogdet(A)[1])
        close(clgrad.logdet(tA), np.log(np.linalg.det(A)))
        LU, piv = clgrad.linalg.lu_factor(tA)
        close(clgrad.linalg.lu_solve(LU, piv, tB, adjoint=True),
              np.linalg.solve(A.conj().transpose(0, 2, 1), B))
        # pivots chosen by |re| + |im|, as LAPACK's zgetrf (torch's): this column's largest
        # modulus is row 0, its largest |re| + |im| row 1
        piv = clgrad.linalg.lu_factor(clgrad.tensor([[3 + 0j, 1], [2 + 2j, 1j]], dtype=dt))[1]
        assert piv.tolist() == [2, 2]
    z = clgrad.zeros(2, 2, dtype=clgrad.complex64)
    assert clgrad.linalg.det(z).item() == 0
    assert clgrad.linalg.slogdet(z).logabsdet.item() == float("-inf")
    with pytest.raises(clgrad.linalg.LinAlgError, match="singular"):
        clgrad.linalg.inv(z)
    assert clgrad.linalg.cholesky_ex(-clgrad.eye(3, dtype=clgrad.complex64)).info.item() == 1


def test_cholesky(device):
    B, rhs = _rand((2, 4, 4), 16), _rand((2, 4, 2), 17)
    A = B @ B.conj().transpose(0, 2, 1) + 4 * np.eye(4)           # Hermitian positive-definite
    for dt in _cdtypes(device):
        tol = _tol(dt)

        def close(t, expect):
            np.testing.assert_allclose(t.numpy(), expect, rtol=tol, atol=tol)
        L = clgrad.linalg.cholesky(clgrad.tensor(A, dtype=dt))
        U = clgrad.linalg.cholesky(clgrad.tensor(A, dtype=dt), upper=True)
        close(L, np.linalg.cholesky(A))
        close(U, np.linalg.cholesky(A).conj().transpose(0, 2, 1))
        close(clgrad.cholesky_solve(clgrad.tensor(rhs, dtype=dt), L), np.linalg.solve(A, rhs))
        close(clgrad.cholesky_inverse(U, upper=True), np.linalg.inv(A))


def test_cholesky_gradients(c128):
    b = _z(_rand((3, 3), 18), c128)
    I = clgrad.eye(3, dtype=c128)
    assert gradcheck(lambda t: clgrad.linalg.cholesky(t @ t.mH + 3 * I), (b,))
    assert gradgradcheck(lambda t: clgrad.linalg.cholesky(t @ t.mH + 3 * I, upper=True), (b,))


def test_linalg_gradients(c128):
    a, b = _z(_rand((3, 3), 11), c128), _z(_rand((3, 2), 12), c128)
    assert gradcheck(clgrad.linalg.solve, (a, b))
    assert gradgradcheck(clgrad.linalg.solve, (a, b))
    assert gradcheck(clgrad.linalg.inv, (a,))
    assert gradcheck(clgrad.linalg.det, (a,))
    assert gradgradcheck(clgrad.linalg.det, (a,))
    assert gradcheck(lambda t: clgrad.linalg.slogdet(t), (a,))
    assert gradcheck(clgrad.logdet, (a,))
    assert gradcheck(lambda t: clgrad.linalg.lu_factor(t).LU, (a,))
    s = _rand((3, 3), 13)
    s[2] = s[0] + s[1]
    assert gradcheck(clgrad.linalg.det, (_z(s, c128),))         # singular: the cofactors


def test_norms_svdvals_eigvalsh(device):
    A = _rand((2, 3, 4), 14)
    inf = float("inf")
    for dt in _cdtypes(device):
        tA, tol = clgrad.tensor(A, dtype=dt), _tol(dt)

        def close(t, expect):
            assert t.dtype is dt.to_real()
            np.testing.assert_allclose(t.numpy(), expect, rtol=tol, atol=tol)
        for o in ("fro", "nuc", 1, -1, 2, -2, inf, -inf):
            close(clgrad.linalg.matrix_norm(tA, o), np.linalg.norm(A, o, axis=(1, 2)))
        close(clgrad.linalg.norm(tA[0]), np.linalg.norm(A[0]))
        for o in (0, 1, 2, 3.5, inf, -inf):
            close(clgrad.linalg.vector_norm(tA, o, dim=-1), np.linalg.norm(A, o, axis=-1))
        close(clgrad.linalg.svdvals(tA), np.linalg.svd(A, compute_uv=False))
        close(clgrad.linalg.svdvals(tA.mT), np.linalg.svd(A, compute_uv=False))
        close(clgrad.linalg.cond(tA[:, :3, :3]), np.linalg.cond(A[:, :3, :3]))
        for uplo in ("L", "U"):
            close(clgrad.linalg.eigvalsh(tA[:, :3, :3], uplo), np.linalg.eigvalsh(A[:, :3, :3], uplo))
        v = clgrad.linalg.vecdot(tA, tA.exp())
        np.testing.assert_allclose(v.numpy(), (A.conj() * np.exp(A)).sum(-1), rtol=tol, atol=tol)


def test_norm_gradients(c128):
    a = _z(_rand((3, 4), 15), c128)
    assert gradcheck(clgrad.linalg.svdvals, (a,))
    assert gradcheck(lambda t: clgrad.linalg.matrix_norm(t, "nuc"), (a,))
    assert gradcheck(lambda t: clgrad.linalg.matrix_norm(t, 1), (a,))
    assert gradcheck(lambda t: clgrad.linalg.eigvalsh(t[:, :3] + t[:, :3].mH), (a,))
    assert gradcheck(lambda t: clgrad.linalg.vecdot(t, t.exp()), (a,))


def test_pinv_lstsq_rank_householder(device):
    A, B = _rand((2, 4, 3), 19), _rand((2, 4, 2), 20)
    low = _rand((4, 2), 21) @ _rand((2, 4), 22)                      # rank 2
    for dt in _cdtypes(device):
        tA, tB, tol = clgrad.tensor(A, dtype=dt), clgrad.tensor(B, dtype=dt), _tol(dt)

        def close(t, expect):
            np.testing.assert_allclose(t.numpy(), expect, rtol=tol, atol=tol)
        close(clgrad.linalg.pinv(tA), np.linalg.pinv(A))
        close(clgrad.linalg.pinv(tA.mT), np.linalg.pinv(A.transpose(0, 2, 1)))
        H = low @ low.conj().T
        close(clgrad.linalg.pinv(clgrad.tensor(H, dtype=dt), hermitian=True), np.linalg.pinv(H))
        assert clgrad.linalg.matrix_rank(clgrad.tensor(low, dtype=dt)).item() == 2
        assert clgrad.linalg.matrix_rank(clgrad.tensor(H, dtype=dt), hermitian=True).item() == 2
        x, res = np.linalg.lstsq(A[0], B[0], rcond=None)[:2]
        for driver in ("gels", "gelsy", "gelsd", "gelss"):
            r = clgrad.linalg.lstsq(tA, tB, driver=driver)
            close(r.solution[0], x)
            if driver in ("gelsd", "gelss"):
                close(r.residuals[0], res)
                close(r.singular_values, np.linalg.svd(A, compute_uv=False))
            if driver != "gels":
                assert r.rank.tolist() == [3, 3]
        close(clgrad.linalg.lstsq(tA, tB[..., 0]).solution[0], x[:, 0])
        # H_1 H_2 with H_i = I - tau_i v_i v_i^H
        tau = _rand(2, 23)
        Q = np.eye(4, 3, dtype=complex)
        V = np.tril(A[0], -1) + np.eye(4, 3)
        for i in reversed(range(2)):
            v = V[:, i:i + 1]
            Q = Q - tau[i] * (v @ (v.conj().T @ Q))
        close(clgrad.linalg.householder_product(tA[0], clgrad.tensor(tau, dtype=dt)), Q)
    for f in (clgrad.linalg.qr, clgrad.linalg.svd):          # not built: they say so
        with pytest.raises(RuntimeError, match="complex matrices are not supported yet"):
            f(clgrad.eye(2, dtype=clgrad.complex64))


def test_pinv_lstsq_gradients(c128):
    a, b = _z(_rand((4, 3), 24), c128), _z(_rand((4, 2), 25), c128)
    assert gradcheck(clgrad.linalg.pinv, (a,))
    assert gradgradcheck(lambda t: clgrad.linalg.pinv(t.mT), (a,))           # the wide branch
    for driver in ("gels", "gelsd"):
        assert gradcheck(lambda t, u: clgrad.linalg.lstsq(t, u, driver=driver).solution, (a, b))
    assert gradcheck(lambda t, u: clgrad.linalg.householder_product(t, u[:2, 0]), (a, b))


def test_eigh(device):
    A = _rand((2, 9, 9), 26)
    H = A + A.conj().transpose(0, 2, 1)
    for dt in _cdtypes(device):
        tol = 20 * _tol(dt)
        w, V = clgrad.linalg.eigh(clgrad.tensor(H, dtype=dt))
        assert w.dtype is dt.to_real() and V.dtype is dt
        np.testing.assert_allclose(w.numpy(), np.linalg.eigvalsh(H), rtol=tol, atol=tol)
        Vn = V.numpy()
        Vh = Vn.conj().transpose(0, 2, 1)
        np.testing.assert_allclose(Vn @ (w.numpy()[:, :, None] * Vh), H, rtol=tol, atol=tol)
        np.testing.assert_allclose(Vh @ Vn, np.broadcast_to(np.eye(9), (2, 9, 9)), atol=tol)
        big = np.abs(Vn).argmax(1)                       # largest component real and positive
        top = np.take_along_axis(Vn, big[:, None, :], 1)
        assert np.all(top.real > 0) and np.allclose(top.imag, 0, atol=tol)
        for uplo in ("L", "U"):                          # only the UPLO triangle is read
            w = clgrad.linalg.eigh(clgrad.tensor(A, dtype=dt), uplo).eigenvalues
            np.testing.assert_allclose(w.numpy(), np.linalg.eigvalsh(A, uplo), rtol=tol, atol=tol)
        w, V = clgrad.linalg.eigh(clgrad.eye(3, dtype=dt))         # repeated eigenvalues
        assert w.tolist() == [1, 1, 1] and V.tolist() == np.eye(3).tolist()


def test_eigh_gradients(c128):
    a = _z(_rand((3, 3), 27), c128)

    def eigh(t):
        return clgrad.linalg.eigh(t + t.mH)
    assert gradcheck(lambda t: eigh(t).eigenvalues, (a,))
    assert gradgradcheck(lambda t: eigh(t).eigenvalues, (a,))
    # functions that do not depend on the eigenvectors' phases, as torch requires
    assert gradcheck(lambda t: eigh(t).eigenvectors.abs(), (a,))
    assert gradcheck(lambda t: (lambda w, V: V @ w.to(c128).diag_embed() @ V.mH)(*eigh(t)), (a,))
