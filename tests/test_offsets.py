"""Inputs and gradients that are views with a storage offset (`big[1]`: contiguous, but not at
the start of their buffer) give what the same values at offset 0 give: a kernel handed a bare
buffer would read from element 0 (pooling's backward and lu_solve did)."""
import numpy as np
import pytest

import clgrad
import clgrad.nn.functional as F


def _at_offset(a):
    """a as the second half of a larger tensor: same values, storage offset a.numel()."""
    big = clgrad.tensor(np.stack([np.full_like(a, 7.5), a]), dtype=clgrad.float64)
    return big[1]


def _spd(n):
    m = np.random.default_rng(1).standard_normal((n, n))
    return m @ m.T + n * np.eye(n)


CASES = {
    "avg_pool2d": (lambda x: F.avg_pool2d(x, 2), (2, 3, 4, 4)),
    "max_pool2d": (lambda x: F.max_pool2d(x, 2), (2, 3, 4, 4)),
    "adaptive_avg_pool2d": (lambda x: F.adaptive_avg_pool2d(x, (3, 2)), (1, 2, 5, 4)),
    "conv2d": (lambda x: F.conv2d(x, clgrad.ones(2, 3, 2, 2, dtype=clgrad.float64)), (1, 3, 4, 4)),
    "softmax": (lambda x: x.softmax(-1), (3, 5)),
    "log_softmax": (lambda x: x.log_softmax(0), (3, 5)),
    "layer_norm": (lambda x: F.layer_norm(x, (5,)), (3, 5)),
    "group_norm": (lambda x: F.group_norm(x, 2), (2, 4, 3)),
    "cumsum": (lambda x: x.cumsum(1), (3, 5)),
    "sort": (lambda x: x.sort(-1)[0], (3, 5)),
    "topk": (lambda x: x.topk(2)[0], (3, 5)),
    "matmul": (lambda x: x @ x.t(), (3, 4)),
    "gather": (lambda x: x.gather(1, clgrad.tensor([[0, 2], [1, 1], [4, 0]])), (3, 5)),
    "index_select": (lambda x: x.index_select(0, clgrad.tensor([2, 0])), (3, 5)),
    "interpolate": (lambda x: F.interpolate(x, scale_factor=2, mode="bilinear"), (1, 2, 3, 3)),
    "inv": (lambda x: clgrad.linalg.inv(x), "spd"),
    "det": (lambda x: clgrad.linalg.det(x), "spd"),
    "solve": (lambda x: clgrad.linalg.solve(x, clgrad.ones(4, 2, dtype=clgrad.float64)), "spd"),
    "cholesky": (lambda x: clgrad.linalg.cholesky(x), "spd"),
    "qr": (lambda x: clgrad.linalg.qr(x)[1].abs(), "spd"),
    "eigvalsh": (lambda x: clgrad.linalg.eigvalsh(x), "spd"),
    "svdvals": (lambda x: clgrad.linalg.svdvals(x), "spd"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_inputs_and_gradients_at_a_storage_offset(device, name):
    f, shape = CASES[name]
    a = _spd(4) if shape == "spd" else np.random.default_rng(0).standard_normal(shape)
    moved = _at_offset(a).requires_grad_()
    plain = clgrad.tensor(a, dtype=clgrad.float64, requires_grad=True)
    assert moved.storage_offset() > 0 and moved.is_contiguous()
    out, ref = f(moved), f(plain)
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-10, atol=1e-12)
    g = np.random.default_rng(2).standard_normal(tuple(ref.shape))
    out.backward(_at_offset(g))
    ref.backward(clgrad.tensor(g, dtype=clgrad.float64))
    np.testing.assert_allclose(moved.grad.numpy(), plain.grad.numpy(), rtol=1e-9, atol=1e-11)


def test_lu_solve_with_factors_at_an_offset(device):
    a = clgrad.tensor(np.stack([_spd(3), _spd(3) + np.eye(3)]), dtype=clgrad.float64)
    LU, piv = clgrad.linalg.lu_factor(a)
    b = clgrad.tensor(np.arange(6.0).reshape(3, 2), dtype=clgrad.float64)
    x = clgrad.linalg.lu_solve(LU[1], piv[1], b)
    np.testing.assert_allclose(x.numpy(), np.linalg.solve(_spd(3) + np.eye(3), b.numpy()),
                               rtol=1e-10)
