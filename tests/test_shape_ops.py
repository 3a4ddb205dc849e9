"""Shape ops that copy: flip, fliplr, flipud, roll, repeat, tile, repeat_interleave, tril, triu
(and tril_, triu_), constant_pad_nd and pad: forward against numpy on every dtype, 0-d, empty and
non-contiguous inputs; gradients with gradcheck and gradgradcheck; errors."""
import numpy as np
import pytest

import clgrad
from clgrad.ops.shape import pad
from helpers import LAYOUTS, all_dtypes, assert_close, grad_dtype, grad_tols, make, random_array, \
    rounded


def _np_pad(a, p, value):
    """numpy's reference of constant_pad_nd: pad with np.pad, then crop negative pads."""
    widths = [(0, 0)] * a.ndim
    crops = [slice(None)] * a.ndim
    for i in range(len(p) // 2):
        d = a.ndim - 1 - i
        lo, hi = p[2 * i], p[2 * i + 1]
        widths[d] = (max(lo, 0), max(hi, 0))
        crops[d] = slice(max(-lo, 0), a.shape[d] + max(lo, 0) + max(hi, 0) - max(-hi, 0))
    return np.pad(a, widths, constant_values=value)[tuple(crops)]


def _cases(h):
    """(clgrad call, numpy result) pairs over a 3-d array h."""
    return [
        (lambda x: x.flip(0, 2), np.flip(h, (0, 2))),
        (lambda x: clgrad.flip(x, (-1,)), np.flip(h, -1)),
        (lambda x: x.flip(()), h),
        (lambda x: x.fliplr(), np.fliplr(h)),
        (lambda x: x.flipud(), np.flipud(h)),
        (lambda x: x.roll(2, 1), np.roll(h, 2, 1)),
        (lambda x: x.roll((-1, 7), (0, 2)), np.roll(h, (-1, 7), (0, 2))),
        (lambda x: clgrad.roll(x, 5), np.roll(h, 5)),
        (lambda x: x.repeat(2, 1, 3), np.tile(h, (2, 1, 3))),
        (lambda x: x.repeat(2, 1, 1, 2), np.tile(h, (2, 1, 1, 2))),
        (lambda x: x.tile((2,)), np.tile(h, (2,))),
        (lambda x: x.repeat_interleave(2, 1), np.repeat(h, 2, 1)),
        (lambda x: x.repeat_interleave(3), np.repeat(h, 3)),
        (lambda x: x.repeat_interleave(clgrad.tensor([2, 0, 1], device=x.device), dim=1),
         np.repeat(h, [2, 0, 1], 1)),
        (lambda x: x.tril(), np.tril(h)),
        (lambda x: x.tril(-1), np.tril(h, -1)),
        (lambda x: x.triu(2), np.triu(h, 2)),
        (lambda x: clgrad.triu(x, -5), np.triu(h, -5)),
        (lambda x: clgrad.constant_pad_nd(x, (1, 2)), _np_pad(h, (1, 2), 0)),
        (lambda x: clgrad.constant_pad_nd(x, (0, -2, 2, 0, -1, 1), 1), _np_pad(h, (0, -2, 2, 0,
                                                                                      -1, 1), 1)),
        (lambda x: pad(x, (-3, 0)), _np_pad(h, (-3, 0), 0)),
    ]


@pytest.mark.parametrize("layout", LAYOUTS)
def test_forward_matches_numpy_every_dtype(device, layout):
    rng = np.random.default_rng(0)
    for dt in all_dtypes(device):
        a = random_array((2, 3, 4), dt, rng)
        h = rounded(a, dt)
        x = make(a, dt, device, layout)
        for f, want in _cases(h):
            out = f(x)
            assert out.dtype is dt
            assert_close(out, want, dt)


def test_0d_and_empty(device):
    s = clgrad.tensor(3.0, device=device)
    assert s.flip(0).tolist() == 3.0
    assert s.roll(1).tolist() == 3.0
    assert s.repeat(2).tolist() == [3.0, 3.0]
    assert s.repeat(()).tolist() == 3.0
    assert s.tile(()).tolist() == 3.0
    assert s.repeat_interleave(3).tolist() == [3.0] * 3
    assert clgrad.constant_pad_nd(s, ()).tolist() == 3.0
    e = clgrad.zeros(2, 0, device=device)
    assert e.flip(1).shape == (2, 0)
    assert e.roll(1, 1).shape == (2, 0)
    assert e.repeat(2, 3).shape == (4, 0)
    assert e.tril().shape == (2, 0)
    assert clgrad.constant_pad_nd(e, (1, 1)).tolist() == [[0.0, 0.0], [0.0, 0.0]]
    assert clgrad.ones(2, 3, device=device).repeat(0, 1).shape == (0, 3)
    assert clgrad.ones(3, device=device).repeat_interleave(0).shape == (0,)
    # a repeat too wide for one strided copy goes dim by dim
    x = clgrad.arange(32.0, device=device).view(2, 2, 2, 2, 2)
    assert_close(x.repeat(2, 3, 2, 3, 2), np.tile(np.arange(32.0).reshape(2, 2, 2, 2, 2),
                                                  (2, 3, 2, 3, 2)))


def test_in_place_tri(device):
    a = np.arange(12.0).reshape(3, 4)
    x = clgrad.tensor(a, device=device)
    v = x._version
    assert x.tril_(1) is x
    assert_close(x, np.tril(a, 1))
    x.triu_()
    assert_close(x, np.triu(np.tril(a, 1)))
    assert x._version == v + 2
    y = clgrad.tensor(a, device=device).t()                 # a transposed tensor, in place
    y.triu_(-1)
    assert_close(y, np.triu(a.T, -1))


def test_repeat_interleave_forms(device):
    c = clgrad.tensor([2, 0, 1], device=device)
    assert clgrad.repeat_interleave(c).tolist() == [0, 0, 2]
    x = clgrad.tensor([[1, 2], [3, 4]], device=device)
    assert x.repeat_interleave(clgrad.tensor(2, device=device)).tolist() == [1, 1, 2, 2, 3, 3, 4, 4]
    assert x.repeat_interleave(clgrad.tensor([2], device=device), 0).tolist() == \
        [[1, 2], [1, 2], [3, 4], [3, 4]]
    assert x.repeat_interleave(2, dim=-1, output_size=4).tolist() == [[1, 1, 2, 2], [3, 3, 4, 4]]


def test_node_names(device):
    x = clgrad.ones(2, 3, dtype=grad_dtype(device), device=device, requires_grad=True)
    assert x.flip(0).grad_fn.name() == "FlipBackward0"
    assert x.roll(1, 0).grad_fn.name() == "RollBackward0"
    assert x.repeat(2, 1).grad_fn.name() == "RepeatBackward0"
    assert x.tile((2,)).grad_fn.name() == "RepeatBackward0"
    assert x.tril().grad_fn.name() == "TrilBackward0"
    assert x.triu().grad_fn.name() == "TriuBackward0"
    assert clgrad.constant_pad_nd(x, (1, 1)).grad_fn.name() == "ConstantPadNdBackward0"
    assert x.repeat_interleave(clgrad.tensor([1, 2], device=device), 0).grad_fn.name() == \
        "IndexSelectBackward0"
    y = x * 1
    y.tril_()
    assert y.grad_fn.name() == "TrilBackward0"


def test_gradients(device):
    tol = grad_tols(device)
    rng = np.random.default_rng(1)
    x = make(rng.uniform(-1, 1, (2, 3)), grad_dtype(device), device, requires_grad=True)
    fns = [
        lambda a: a.flip(0, 1),
        lambda a: a.roll((1, -1), (0, 1)),
        lambda a: a.roll(4),
        lambda a: a.repeat(2, 1, 2),
        lambda a: a.repeat_interleave(2, 1),
        lambda a: a.repeat_interleave(clgrad.tensor([0, 2], device=device), 0),
        lambda a: a.tril(),
        lambda a: a.triu(1),
        lambda a: clgrad.constant_pad_nd(a, (1, -1, 0, 1), 2.0),
        lambda a: (a * 1).tril_(-1),
    ]
    for f in fns:
        assert clgrad.autograd.gradcheck(f, (x,), **tol)
    for f in fns[:4] + fns[6:9]:
        assert clgrad.autograd.gradgradcheck(f, (x,), **tol)


def test_errors(device):
    x = clgrad.zeros(2, 3, device=device)
    with pytest.raises(RuntimeError, match="dim 0 appears multiple times"):
        x.flip(0, 0)
    with pytest.raises(IndexError, match="Dimension out of range"):
        x.flip(2)
    with pytest.raises(TypeError, match="dims"):
        x.flip()
    with pytest.raises(RuntimeError, match="Input must be >= 2-d"):
        clgrad.zeros(3, device=device).fliplr()
    with pytest.raises(RuntimeError, match="shifts and dimensions must align"):
        x.roll((1, 2), (0,))
    with pytest.raises(RuntimeError, match="Number of dimensions of repeat dims can not be "
                                           "smaller"):
        x.repeat(2)
    with pytest.raises(RuntimeError, match="negative dimension -2"):
        x.repeat(-1, 1)
    with pytest.raises(RuntimeError, match="tril: input tensor must have at least 2 dimensions"):
        clgrad.zeros(3, device=device).tril()
    with pytest.raises(RuntimeError, match="repeats must have the same size as input along dim"):
        x.repeat_interleave(clgrad.tensor([1, 2, 3], device=device), 0)
    with pytest.raises(RuntimeError, match="repeats can not be negative"):
        x.repeat_interleave(clgrad.tensor([1, -1], device=device), 0)
    with pytest.raises(RuntimeError, match="Repeats must be non-negative"):
        x.repeat_interleave(-1)
    with pytest.raises(RuntimeError, match="Length of pad must be even"):
        clgrad.constant_pad_nd(x, (1, 1, 1))
    with pytest.raises(RuntimeError, match="Length of pad should be no more than twice"):
        clgrad.constant_pad_nd(x, (1,) * 6)
    with pytest.raises(RuntimeError, match="negative output size"):
        clgrad.constant_pad_nd(x, (-2, -2))
    with pytest.raises(RuntimeError, match="Padding length must be divisible by 2"):
        pad(x, (1,))
    with pytest.raises(NotImplementedError, match="reflect"):
        pad(x, (1, 1), mode="reflect")


def test_forward_mode(device):
    # linear (or affine) ops: the tangent of f at x along t is f(x + t) - f(x)
    import clgrad.autograd.forward_ad as fwAD
    dt = grad_dtype(device)
    rng = np.random.default_rng(2)
    x, t = (make(rng.uniform(-1, 1, (3, 4)), dt, device) for _ in range(2))
    fns = [lambda a: a.flip(0), lambda a: a.roll(1, 1), lambda a: a.repeat(2, 1),
           lambda a: a.tril(), lambda a: a.triu(1), lambda a: a.repeat_interleave(2, 0),
           lambda a: clgrad.constant_pad_nd(a, (1, -1), 3.0)]
    for f in fns:
        with fwAD.dual_level():
            tangent = fwAD.unpack_dual(f(fwAD.make_dual(x, t))).tangent
        assert_close(tangent, (f(x + t) - f(x)).numpy(), dt)
