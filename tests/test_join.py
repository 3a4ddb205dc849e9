"""Joining: cat, stack, hstack, vstack, row_stack, dstack, column_stack and atleast_Nd against
numpy on every dtype, non-contiguous and empty inputs, mixed dtypes (torch's promotion);
gradients with gradcheck and gradgradcheck; errors."""
import numpy as np
import pytest

import clgrad
from helpers import LAYOUTS, all_dtypes, assert_close, grad_dtype, grad_tols, make, random_array, \
    rounded


@pytest.mark.parametrize("layout", LAYOUTS)
def test_forward_matches_numpy_every_dtype(device, layout):
    rng = np.random.default_rng(0)
    for dt in all_dtypes(device):
        a, b = random_array((2, 3), dt, rng), random_array((2, 3), dt, rng)
        ha, hb = rounded(a, dt), rounded(b, dt)
        x, y = make(a, dt, device, layout), make(b, dt, device)
        cases = [
            (clgrad.cat([x, y]), np.concatenate([ha, hb])),
            (clgrad.cat((x, y, x), dim=-1), np.concatenate([ha, hb, ha], -1)),
            (clgrad.concat([x[:, :1], y], 1), np.concatenate([ha[:, :1], hb], 1)),
            (clgrad.stack([x, y]), np.stack([ha, hb])),
            (clgrad.stack([x, y], 2), np.stack([ha, hb], 2)),
            (clgrad.stack([x, y], -2), np.stack([ha, hb], -2)),
            (clgrad.hstack([x, y]), np.hstack([ha, hb])),
            (clgrad.hstack([x[0], y[1]]), np.hstack([ha[0], hb[1]])),
            (clgrad.vstack([x, y[0]]), np.vstack([ha, hb[0]])),
            (clgrad.row_stack([x[0], y[0]]), np.vstack([ha[0], hb[0]])),
            (clgrad.dstack([x, y]), np.dstack([ha, hb])),
            (clgrad.dstack([x[0], y[1]]), np.dstack([ha[0], hb[1]])),
            (clgrad.column_stack([x[0], y.t()]), np.column_stack([ha[0], hb.T])),
        ]
        for out, want in cases:
            assert out.dtype is dt
            assert_close(out, want, dt)


def test_mixed_dtypes_promote(device):
    f = clgrad.ones(2, device=device)
    i = clgrad.tensor([1, 2], dtype=clgrad.int32, device=device)
    b = clgrad.tensor([True, False], device=device)
    u = clgrad.tensor([3, 4], dtype=clgrad.uint8, device=device)
    h = clgrad.ones(1, dtype=clgrad.float16, device=device)
    bf = clgrad.ones(1, dtype=clgrad.bfloat16, device=device)
    assert clgrad.cat([i, f]).dtype is clgrad.float32
    assert clgrad.cat([b, u]).tolist() == [1, 0, 3, 4] and clgrad.cat([b, u]).dtype is clgrad.uint8
    assert clgrad.cat([i, b, u]).dtype is clgrad.int32
    assert clgrad.cat([h, bf]).dtype is clgrad.float32
    assert clgrad.stack([f, i]).tolist() == [[1.0, 1.0], [1.0, 2.0]]
    assert clgrad.cat([clgrad.tensor([], device=device), i]).dtype is clgrad.float32
    # a float gradient reaches a float input of a mixed cat, cast back to its dtype
    x = clgrad.ones(2, dtype=clgrad.float16, device=device, requires_grad=True)
    clgrad.cat([x, f]).sum().backward()
    assert x.grad.dtype is clgrad.float16 and x.grad.tolist() == [1.0, 1.0]


def test_empty_and_0d(device):
    x = clgrad.ones(2, 3, device=device)
    legacy = clgrad.zeros(0, device=device)
    assert clgrad.cat([legacy, x, legacy], 1).shape == (2, 3)        # 1-d empties are skipped
    assert clgrad.cat([legacy, legacy]).shape == (0,)
    assert clgrad.cat([clgrad.zeros(0, 3, device=device), x]).tolist() == x.tolist()
    assert clgrad.cat([x[:, :0], x[:, :0]], 1).shape == (2, 0)
    s = clgrad.tensor(1.0, device=device)
    assert clgrad.stack([s, s]).tolist() == [1.0, 1.0]
    assert clgrad.hstack([s, s]).tolist() == [1.0, 1.0]
    assert clgrad.vstack([s, s]).tolist() == [[1.0], [1.0]]
    assert clgrad.dstack([s, s]).shape == (1, 1, 2)
    assert clgrad.column_stack([s, clgrad.tensor([2.0], device=device)]).tolist() == [[1.0, 2.0]]
    assert clgrad.atleast_1d(s).shape == (1,)
    assert clgrad.atleast_2d(s, x)[0].shape == (1, 1)
    assert [t.shape for t in clgrad.atleast_3d([s, clgrad.ones(4, device=device), x])] == \
        [(1, 1, 1), (1, 4, 1), (2, 3, 1)]
    assert clgrad.hstack([x]).shape == (2, 3) and clgrad.dstack((x,)).shape == (2, 3, 1)
    out = clgrad.zeros(4, 3, device=device)
    assert clgrad.cat([x, x], out=out) is out and out.tolist() == [[1.0] * 3] * 4


def test_gradients(device):
    tol = grad_tols(device)
    rng = np.random.default_rng(1)
    dt = grad_dtype(device)
    x = make(rng.uniform(-1, 1, (2, 3)), dt, device, requires_grad=True)
    y = make(rng.uniform(-1, 1, (2, 2)), dt, device, "transposed", requires_grad=True)
    z = make(rng.uniform(-1, 1, (2, 3)), dt, device, requires_grad=True)
    legacy = clgrad.zeros(0, dtype=dt, device=device, requires_grad=True)
    fns = [
        (lambda a, b: clgrad.cat([a, b, a], 1), (x, y)),
        (lambda a, b: clgrad.stack([a, b], 1), (x, z)),
        (lambda a, b: clgrad.hstack([a, b]), (x, y)),
        (lambda a, b: clgrad.vstack([a, b[0]]), (x, z)),
        (lambda a, b: clgrad.dstack([a, b]), (x, z)),
        (lambda a, b: clgrad.column_stack([a[0], b]), (x, z.t())),
        (lambda a, b: clgrad.cat([b, a]), (x, legacy)),
    ]
    for f, args in fns:
        assert clgrad.autograd.gradcheck(f, args, **tol)
    for f, args in fns[:2]:
        assert clgrad.autograd.gradgradcheck(f, args, **tol)
    assert clgrad.cat([x, x]).grad_fn.name() == "CatBackward0"
    assert clgrad.stack([x, x]).grad_fn.name() == "StackBackward0"


def test_errors(device):
    x = clgrad.zeros(2, 3, device=device)
    with pytest.raises(ValueError, match="expected a non-empty list of Tensors"):
        clgrad.cat([])
    with pytest.raises(TypeError, match="must be tuple of Tensors, not Tensor"):
        clgrad.cat(x)
    with pytest.raises(TypeError, match="expected Tensor as element 1"):
        clgrad.cat([x, 1])
    with pytest.raises(RuntimeError, match="zero-dimensional tensor \\(at position 1\\) cannot be "
                                           "concatenated"):
        clgrad.cat([x, clgrad.tensor(1.0, device=device)])
    with pytest.raises(RuntimeError, match="Tensors must have same number of dimensions: got 2 "
                                           "and 1"):
        clgrad.cat([x, clgrad.zeros(3, device=device)])
    with pytest.raises(RuntimeError, match="Sizes of tensors must match except in dimension 1. "
                                           "Expected size 2 but got size 3 for tensor number 1"):
        clgrad.cat([x, clgrad.zeros(3, 3, device=device)], 1)
    with pytest.raises(IndexError, match="Dimension out of range"):
        clgrad.cat([x, x], 2)
    with pytest.raises(RuntimeError, match="stack expects a non-empty TensorList"):
        clgrad.stack([])
    with pytest.raises(RuntimeError, match=r"stack expects each tensor to be equal size, but got "
                                           r"\[2, 3\] at entry 0 and \[3\] at entry 1"):
        clgrad.stack([x, clgrad.zeros(3, device=device)])
    with pytest.raises(IndexError, match="Dimension out of range"):
        clgrad.stack([x, x], 3)
    with pytest.raises(RuntimeError, match="hstack expects a non-empty TensorList"):
        clgrad.hstack([])


def test_forward_mode(device):
    import clgrad.autograd.forward_ad as fwAD
    dt = grad_dtype(device)
    x = clgrad.ones(2, 3, dtype=dt, device=device)
    t = clgrad.full((2, 3), 0.5, dtype=dt, device=device)
    other = clgrad.ones(2, 3, dtype=clgrad.int32, device=device)
    with fwAD.dual_level():
        d = fwAD.make_dual(x, t)
        c = fwAD.unpack_dual(clgrad.cat([d, other, d])).tangent
        s = fwAD.unpack_dual(clgrad.stack([other.to(dt), d], 1)).tangent
    assert c.tolist() == [[0.5] * 3] * 2 + [[0.0] * 3] * 2 + [[0.5] * 3] * 2
    assert s.tolist() == [[[0.0] * 3, [0.5] * 3]] * 2
