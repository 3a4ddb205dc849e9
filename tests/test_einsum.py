"""einsum with torch's grammar and the products and matrix helpers beside it, against numpy;
gradients by gradcheck."""
import numpy as np
import pytest

import clgrad
from clgrad.autograd import gradcheck, gradgradcheck
from helpers import grad_dtype, grad_tols, make

EQUATIONS = [
    ("ij,jk->ik", [(3, 4), (4, 5)]),
    ("ijk,kl->ijl", [(2, 3, 4), (4, 5)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 2)]),
    ("ii->i", [(3, 3)]), ("ii", [(3, 3)]), ("ij->ji", [(3, 4)]), ("ijk", [(2, 3, 4)]),
    ("ijk->", [(2, 3, 4)]), ("i,j->ij", [(3,), (4,)]), ("ij,ij->i", [(3, 4), (3, 4)]),
    ("ba,ac", [(3, 2), (2, 4)]), ("...k,kl->...l", [(2, 3, 4), (4, 5)]),
    ("i...,i...->...", [(3, 2, 2), (3, 2, 2)]), ("bhqd,bhkd->bhqk", [(2, 2, 3, 4), (2, 2, 5, 4)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]), ("iij->j", [(3, 3, 2)]),
    ("i,i", [(5,), (5,)]), ("ij,kj->", [(2, 3), (4, 3)]), ("ab,b->a", [(3, 1), (4,)]),
]


@pytest.mark.parametrize("eq,shapes", EQUATIONS, ids=[e for e, _ in EQUATIONS])
def test_einsum_matches_numpy(device, eq, shapes):
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s) for s in shapes]
    dt = grad_dtype(device)
    for layout in ("contiguous", "transposed"):
        # a view of a dim of size 1 is contiguous whatever its order: keep those contiguous
        ts = [make(a, dt, device, "contiguous" if 1 in a.shape else layout) for a in arrays]
        got = clgrad.einsum(eq, *ts).numpy()
        np_arrays = [np.broadcast_to(a, (3, 4)) if eq == "ab,b->a" and a.shape == (3, 1) else a
                     for a in arrays]
        ref = np.einsum(eq, *np_arrays)
        np.testing.assert_allclose(got, ref, rtol=1e-6, atol=1e-9)


def test_einsum_forms_and_errors(device):
    a = clgrad.ones(2, 3, device=device)
    b = clgrad.ones(3, 4, device=device)
    assert clgrad.einsum(a, [0, 1], b, [1, 2], [0, 2]).tolist() == [[3.0] * 4] * 2
    assert clgrad.einsum("ij,jk", [a, b]).shape == (2, 4)
    with pytest.raises(RuntimeError, match="does not match the number of dimensions"):
        clgrad.einsum("ijk,jk", a, b)
    with pytest.raises(ValueError, match="fewer operands"):
        clgrad.einsum("ij,jk", a)
    with pytest.raises(ValueError, match="does not appear"):
        clgrad.einsum("ij->z", a)
    with pytest.raises(RuntimeError, match="broadcast"):
        clgrad.einsum("ij,ij->i", a, b)
    with pytest.raises(RuntimeError, match="sizes don't match"):
        clgrad.einsum("ii", a)


@pytest.mark.parametrize("eq,shapes", [("ij,jk->ik", [(3, 4), (4, 2)]), ("ii->i", [(3, 3)]),
                                       ("bij,bkj->bik", [(2, 2, 3), (2, 4, 3)]),
                                       ("i,i->", [(4,), (4,)])])
def test_einsum_gradients(device, eq, shapes):
    rng = np.random.default_rng(1)
    dt = grad_dtype(device)
    ts = [clgrad.tensor(rng.standard_normal(s), dtype=dt, device=device, requires_grad=True)
          for s in shapes]
    tol = grad_tols(device)
    assert gradcheck(lambda *t: clgrad.einsum(eq, *t), ts, **tol)
    assert gradgradcheck(lambda *t: clgrad.einsum(eq, *t), ts, **tol)


def test_tensordot_inner_kron(device):
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((2, 3, 4)), rng.standard_normal((3, 4, 5))
    A, B = clgrad.tensor(a, device=device), clgrad.tensor(b, device=device)
    np.testing.assert_allclose(clgrad.tensordot(A, B).numpy(), np.tensordot(a, b), rtol=1e-6)
    np.testing.assert_allclose(clgrad.tensordot(A, B, dims=([1], [0])).numpy(),
                               np.tensordot(a, b, axes=([1], [0])), rtol=1e-6)
    np.testing.assert_allclose(clgrad.tensordot(A, B, 0).numpy(), np.tensordot(a, b, 0),
                               rtol=1e-6)
    with pytest.raises(RuntimeError, match="contracted dimensions need to match"):
        clgrad.tensordot(A, A)
    np.testing.assert_allclose(clgrad.inner(A, A).numpy(), np.inner(a, a), rtol=1e-6)
    assert clgrad.inner(clgrad.tensor(2.0), A).shape == A.shape
    c, d = rng.standard_normal((2, 3)), rng.standard_normal((3, 1, 2))
    np.testing.assert_allclose(clgrad.kron(clgrad.tensor(c), clgrad.tensor(d)).numpy(),
                               np.kron(c, d), rtol=1e-6)


def test_cross_trace_diag(device):
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((4, 3)), rng.standard_normal((4, 3))
    np.testing.assert_allclose(clgrad.cross(clgrad.tensor(a), clgrad.tensor(b), dim=1).numpy(),
                               np.cross(a, b), rtol=1e-6)
    np.testing.assert_allclose(clgrad.tensor(a.T).cross(clgrad.tensor(b.T)).numpy(),
                               np.cross(a, b).T, rtol=1e-6)
    with pytest.raises(RuntimeError, match="no dimension of size 3"):
        clgrad.cross(clgrad.ones(2, 2), clgrad.ones(2, 2))
    m = rng.standard_normal((4, 5))
    M = clgrad.tensor(m, device=device)
    assert abs(M.trace().item() - np.trace(m)) < 1e-12
    assert clgrad.tensor([[1, 2], [3, 4]], device=device).trace().item() == 5
    for k in (-2, 0, 1):
        np.testing.assert_array_equal(clgrad.diag(M, k).numpy(), np.diag(m, k))
        v = clgrad.tensor([1.0, 2.0, 3.0], device=device)
        np.testing.assert_array_equal(clgrad.diag(v, k).numpy(), np.diag([1.0, 2.0, 3.0], k))
    np.testing.assert_array_equal(clgrad.diagflat(clgrad.tensor([[1, 2]], device=device)).numpy(),
                                  np.diagflat([[1, 2]]))
    x = rng.standard_normal((2, 3))
    out = clgrad.diag_embed(clgrad.tensor(x, device=device), 1, 0, 2).numpy()
    ref = np.zeros((4, 2, 4))
    for bi in range(2):
        for i in range(3):
            ref[i, bi, i + 1] = x[bi, i]
    np.testing.assert_array_equal(out, ref)
    with pytest.raises(RuntimeError, match="cannot be identical"):
        clgrad.diag_embed(clgrad.ones(2), 0, 0, 0)


def test_block_diag_cdist_dist(device):
    out = clgrad.block_diag(clgrad.ones(1, 1, device=device), clgrad.tensor([2, 3], device=device),
                            clgrad.tensor(4, device=device))
    assert out.tolist() == [[1, 0, 0, 0], [0, 2, 3, 0], [0, 0, 0, 4]] and out.dtype is clgrad.float32
    assert clgrad.block_diag().shape == (1, 0)
    rng = np.random.default_rng(4)
    a, b = rng.standard_normal((2, 5, 3)), rng.standard_normal((2, 4, 3))
    A, B = clgrad.tensor(a, device=device), clgrad.tensor(b, device=device)
    diff = a[:, :, None, :] - b[:, None, :, :]
    for p, ref in ((2, np.sqrt((diff ** 2).sum(-1))), (1, np.abs(diff).sum(-1)),
                   (float("inf"), np.abs(diff).max(-1)), (3, (np.abs(diff) ** 3).sum(-1) ** (1 / 3))):
        np.testing.assert_allclose(clgrad.cdist(A, B, p=p).numpy(), ref, rtol=1e-6)
    np.testing.assert_allclose(clgrad.dist(A, A + 1).item(), np.sqrt(a.size))
    dt = grad_dtype(device)
    x = clgrad.tensor(a[0], dtype=dt, device=device, requires_grad=True)
    assert gradcheck(lambda t: clgrad.cdist(t, t[:2]), (x,), **grad_tols(device))
    assert clgrad.chain_matmul(clgrad.eye(2), clgrad.ones(2, 3)).shape == (2, 3)
