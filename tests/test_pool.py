"""Pooling: max_pool2d (values, indices with torch's tie and NaN rules, gradients to the indices),
avg_pool2d (ceil_mode, count_include_pad, divisor_override) and adaptive_avg_pool2d (any output
size) against loops in numpy written from torch's window formulas; every float dtype,
non-contiguous and unbatched inputs, empty batches; gradcheck and gradgradcheck in float64; node
names; torch's errors. Then 1-d pooling, adaptive max pooling, the pixel/channel shuffles and
integer pooling against numpy, with gradients by finite differences."""
import itertools
import math

import numpy as np
import pytest

import clgrad
import clgrad.nn.functional as F
from clgrad import nn
from clgrad.autograd import gradcheck
from helpers import assert_close, float_dtypes, grad_dtype, grad_tols, make, rounded

TOL = {clgrad.float64: 1e-12, clgrad.float32: 1e-6, clgrad.float16: 2e-3, clgrad.bfloat16: 1e-2}


def pair(v):
    return tuple(v) if isinstance(v, (tuple, list)) else (v, v)


def out_size(n, k, s, p, d, ceil_mode):
    o = (n + 2 * p - d * (k - 1) - 1 + ((s - 1) if ceil_mode else 0)) // s + 1
    if ceil_mode and (o - 1) * s >= n + p:
        o -= 1
    return o


def np_max_pool(x, k, s, p, d, ceil_mode):
    """(values, indices) with torch's rule: the first maximum in row-major order, NaN wins."""
    N, C, H, W = x.shape
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = pair(k), pair(s), pair(p), pair(d)
    OH, OW = out_size(H, kh, sh, ph, dh, ceil_mode), out_size(W, kw, sw, pw, dw, ceil_mode)
    val = np.empty((N, C, OH, OW))
    idx = np.empty((N, C, OH, OW), np.int64)
    for n, c, oh, ow in itertools.product(range(N), range(C), range(OH), range(OW)):
        best, where = -np.inf, None
        for i, j in itertools.product(range(kh), range(kw)):
            ih, iw = oh * sh - ph + i * dh, ow * sw - pw + j * dw
            if 0 <= ih < H and 0 <= iw < W:
                v = x[n, c, ih, iw]
                if where is None:
                    where = ih * W + iw
                if v > best or np.isnan(v):
                    best, where = v, ih * W + iw
        val[n, c, oh, ow], idx[n, c, oh, ow] = best, where
    return val, idx


def np_avg_pool(x, k, s, p, ceil_mode, include_pad, divisor):
    N, C, H, W = x.shape
    (kh, kw), (sh, sw), (ph, pw) = pair(k), pair(s), pair(p)
    OH, OW = out_size(H, kh, sh, ph, 1, ceil_mode), out_size(W, kw, sw, pw, 1, ceil_mode)
    out = np.zeros((N, C, OH, OW))
    for oh, ow in itertools.product(range(OH), range(OW)):
        h0, w0 = oh * sh - ph, ow * sw - pw
        h1, w1 = min(h0 + kh, H + ph), min(w0 + kw, W + pw)
        pool = (h1 - h0) * (w1 - w0)
        h0, w0, h1, w1 = max(h0, 0), max(w0, 0), min(h1, H), min(w1, W)
        div = divisor or (pool if include_pad else (h1 - h0) * (w1 - w0))
        out[:, :, oh, ow] = x[:, :, h0:h1, w0:w1].sum((2, 3)) / div
    return out


def np_adaptive(x, out_hw):
    N, C, H, W = x.shape
    OH, OW = out_hw
    out = np.zeros((N, C, OH, OW))
    for oh, ow in itertools.product(range(OH), range(OW)):
        h0, h1 = oh * H // OH, -(-(oh + 1) * H // OH)
        w0, w1 = ow * W // OW, -(-(ow + 1) * W // OW)
        out[:, :, oh, ow] = x[:, :, h0:h1, w0:w1].mean((2, 3))
    return out


def data(shape, dt, rng):
    return rounded(rng.uniform(-1, 1, size=shape), dt).astype(np.float64)


# ---- max_pool2d ----------------------------------------------------------------------------------
# (H, W, kernel, stride, padding, dilation, ceil_mode)
MAX_CASES = [
    (8, 8, 2, None, 0, 1, False),
    (7, 9, 3, 2, 1, 1, False),
    (7, 9, 3, 2, 1, 1, True),
    (5, 6, (2, 3), (1, 2), (1, 0), 1, True),
    (9, 8, 3, 1, 1, 2, False),          # dilation
    (6, 7, 2, 3, 1, (2, 1), True),      # stride > kernel
    (1, 5, 1, 1, 0, 1, False),
]


@pytest.mark.parametrize("case", MAX_CASES)
def test_max_pool2d(device, case):
    H, W, k, s, p, d, ceil_mode = case
    rng = np.random.default_rng(0)
    x = data((2, 3, H, W), clgrad.float32, rng)
    x[0, 0] = np.round(x[0, 0] * 2) / 2           # ties: the first in row-major order wins
    x[1, 2, 0, :2] = np.nan                       # NaNs: the last one wins
    val, idx = np_max_pool(x, k, s if s is not None else k, p, d, ceil_mode)
    xt = clgrad.tensor(x, dtype=clgrad.float32, requires_grad=True)
    v, i = F.max_pool2d(xt, k, s, p, d, ceil_mode, return_indices=True)
    assert i.dtype is clgrad.int64 and not i.requires_grad
    np.testing.assert_array_equal(i.numpy(), idx)
    assert_close(v, val)
    # the gradient goes to each window's index (windows may overlap)
    g = data(v.shape, clgrad.float32, rng)
    v.backward(clgrad.tensor(g, dtype=clgrad.float32))
    gx = np.zeros((2, 3, H * W))
    for n, c in itertools.product(range(2), range(3)):
        np.add.at(gx[n, c], idx[n, c].reshape(-1), g[n, c].reshape(-1))
    assert_close(xt.grad, gx.reshape(x.shape), rtol=1e-6, atol=1e-6)
    # without indices the values are the same
    assert_close(clgrad.max_pool2d(xt.detach(), k, s, p, d, ceil_mode), val)


def test_max_pool2d_dtypes_layouts(device):
    rng = np.random.default_rng(1)
    for dt in float_dtypes(device):
        x = data((2, 3, 7, 6), dt, rng)
        val, idx = np_max_pool(x, 3, 2, 1, 1, True)
        for layout in ("contiguous", "transposed", "strided"):
            xt = make(x, dt, device, layout, requires_grad=True)
            v, i = F.max_pool2d(xt, 3, 2, 1, ceil_mode=True, return_indices=True)
            assert v.dtype is dt
            assert_close(v, val, rtol=0, atol=0)      # a max is exact in any dtype
            np.testing.assert_array_equal(i.numpy(), idx)
            v.sum().backward()
            gx = np.zeros((2, 3, 42))
            for n, c in itertools.product(range(2), range(3)):
                np.add.at(gx[n, c], idx[n, c].reshape(-1), 1.0)
            assert_close(xt.grad, gx.reshape(x.shape), rtol=0, atol=0)
    # unbatched, and an empty batch
    v, i = F.max_pool2d(clgrad.tensor(x[0], dtype=dt), 2, return_indices=True)
    assert v.shape == (3, 3, 3) and i.shape == (3, 3, 3)
    assert_close(v, np_max_pool(x[:1], 2, 2, 0, 1, False)[0][0], rtol=0, atol=0)
    assert F.max_pool2d(clgrad.zeros(0, 3, 4, 4), 2).shape == (0, 3, 2, 2)


# ---- avg_pool2d ----------------------------------------------------------------------------------
AVG_CASES = [
    (8, 8, 2, None, 0, False),
    (7, 9, 3, 2, 1, False),
    (7, 9, 3, 2, 1, True),
    (5, 6, (2, 3), (1, 2), (1, 1), True),
    (6, 7, 2, 3, 1, True),
]


@pytest.mark.parametrize("case", AVG_CASES)
@pytest.mark.parametrize("include_pad,divisor", [(True, None), (False, None), (True, 5)])
def test_avg_pool2d(device, case, include_pad, divisor):
    H, W, k, s, p, ceil_mode = case
    rng = np.random.default_rng(2)
    x = data((2, 3, H, W), clgrad.float32, rng)
    ref = np_avg_pool(x, k, s if s is not None else k, p, ceil_mode, include_pad, divisor)
    xt = clgrad.tensor(x, dtype=clgrad.float32, requires_grad=True)
    y = F.avg_pool2d(xt, k, s, p, ceil_mode, include_pad, divisor)
    assert_close(y, ref)
    # the gradient is the transpose of the (linear) forward: check <g, A x> = <A^T g, x>
    g = data(y.shape, clgrad.float32, rng)
    y.backward(clgrad.tensor(g, dtype=clgrad.float32))
    basis = np.eye(H * W).reshape(H * W, 1, 1, H, W)
    cols = np.stack([np_avg_pool(e, k, s if s is not None else k, p, ceil_mode, include_pad,
                                 divisor)[0, 0] for e in basis])      # (H*W, OH, OW)
    gx = np.einsum("qhw,nchw->ncq", cols, g).reshape(x.shape)
    assert_close(xt.grad, gx, rtol=1e-5, atol=1e-6)


def test_avg_pool2d_dtypes_layouts(device):
    rng = np.random.default_rng(3)
    for dt in float_dtypes(device):
        x = data((2, 3, 7, 6), dt, rng)
        ref = np_avg_pool(x, 3, 2, 1, True, False, None)
        for layout in ("contiguous", "transposed", "strided"):
            y = F.avg_pool2d(make(x, dt, device, layout), 3, 2, 1, True, False)
            assert y.dtype is dt
            assert_close(y, ref, rtol=TOL[dt], atol=TOL[dt])
    y = F.avg_pool2d(clgrad.tensor(x[0], dtype=dt), 2)
    assert_close(y, np_avg_pool(x[:1], 2, 2, 0, False, True, None)[0], rtol=TOL[dt],
                 atol=TOL[dt])
    assert F.avg_pool2d(clgrad.zeros(0, 3, 4, 4), 2).shape == (0, 3, 2, 2)


# ---- adaptive_avg_pool2d -------------------------------------------------------------------------
@pytest.mark.parametrize("hw,out", [((8, 8), 2), ((7, 9), (3, 4)), ((5, 3), (7, 2)),
                                    ((6, 5), (None, 3)), ((4, 6), 1), ((3, 3), (3, 3))])
def test_adaptive_avg_pool2d(device, hw, out):
    rng = np.random.default_rng(4)
    out_hw = tuple(n if o is None else o for n, o in zip(hw, pair(out)))
    for dt in float_dtypes(device):
        x = data((2, 3) + hw, dt, rng)
        for layout in ("contiguous", "transposed"):
            xt = make(x, dt, device, layout, requires_grad=True)
            y = F.adaptive_avg_pool2d(xt, out)
            assert y.dtype is dt and y.shape == (2, 3) + out_hw
            assert_close(y, np_adaptive(x, out_hw), rtol=TOL[dt], atol=TOL[dt])
    # the gradient, against the transpose of the forward
    xt = clgrad.tensor(x, dtype=clgrad.float32, requires_grad=True)
    y = F.adaptive_avg_pool2d(xt, out)
    g = data(y.shape, clgrad.float32, rng)
    y.backward(clgrad.tensor(g, dtype=clgrad.float32))
    H, W = hw
    cols = np.stack([np_adaptive(e, out_hw)[0, 0] for e in np.eye(H * W).reshape(H * W, 1, 1, H,
                                                                                   W)])
    assert_close(xt.grad, np.einsum("qhw,nchw->ncq", cols, g).reshape(x.shape), rtol=1e-5,
                 atol=1e-6)
    assert F.adaptive_avg_pool2d(clgrad.zeros(3, 4, 5), out).ndim == 3
    assert F.adaptive_avg_pool2d(clgrad.zeros(0, 3, 4, 5), out).shape[0] == 0


# ---- gradients -----------------------------------------------------------------------------------
def test_gradients(device):
    dt = grad_dtype(device)
    tol = grad_tols(device)
    rng = np.random.default_rng(5)
    # distinct values, far apart compared with gradcheck's eps, so that no max changes hands
    x = rng.permutation(2 * 2 * 6 * 7).reshape(2, 2, 6, 7) / 10.0
    xt = clgrad.tensor(x, dtype=dt, requires_grad=True)
    cases = [
        lambda t: F.max_pool2d(t, 3, 2, 1, ceil_mode=True),
        lambda t: F.max_pool2d(t, 2, 1, dilation=(1, 2)),
        lambda t: F.avg_pool2d(t, 3, 2, 1, ceil_mode=True, count_include_pad=False),
        lambda t: F.avg_pool2d(t, (2, 3), 1, divisor_override=4),
        lambda t: F.adaptive_avg_pool2d(t, (4, 3)),
        lambda t: F.adaptive_avg_pool2d(t, 1),
    ]
    for f in cases:
        assert clgrad.autograd.gradcheck(f, (xt,), check_forward_ad=True, **tol)
        assert clgrad.autograd.gradgradcheck(f, (xt,), **tol)


def test_node_names(device):
    x = clgrad.ones(1, 2, 4, 4, requires_grad=True)
    assert F.max_pool2d(x, 2).grad_fn.name() == "MaxPool2DWithIndicesBackward0"
    assert F.max_pool2d(x[0], 2).grad_fn.name() == "MaxPool2DWithIndicesBackward0"
    assert F.avg_pool2d(x, 2).grad_fn.name() == "AvgPool2DBackward0"
    assert F.adaptive_avg_pool2d(x, 2).grad_fn.name() == "AdaptiveAvgPool2DBackward0"
    assert F.adaptive_avg_pool2d(x, 1).grad_fn.name().startswith("MeanBackward")   # as torch
    # the backward passes are ops themselves (their gradient flows through the squares here)
    gx, = clgrad.autograd.grad(F.max_pool2d(x, 2).pow(2).sum(), x, create_graph=True)
    assert gx.grad_fn.name() == "MaxPool2DWithIndicesBackwardBackward0"
    gx, = clgrad.autograd.grad(F.avg_pool2d(x, 2).pow(2).sum(), x, create_graph=True)
    assert gx.grad_fn.name() == "AvgPool2DBackwardBackward0"
    gx, = clgrad.autograd.grad(F.adaptive_avg_pool2d(x, 3).pow(2).sum(), x, create_graph=True)
    assert gx.grad_fn.name() == "AdaptiveAvgPool2DBackwardBackward0"


def test_errors(device):
    x = clgrad.ones(2, 4, 5, 5)

    def raises(exc, match, fn, *args, **kw):
        with pytest.raises(exc, match=match):
            fn(*args, **kw)
    raises(RuntimeError, "stride should not be zero", F.max_pool2d, x, 2, stride=0)
    raises(RuntimeError, "kernel size should be greater than zero", F.max_pool2d, x, 0, 1)
    raises(RuntimeError, "pad should be at most half of effective kernel size, but got pad=2, "
           "kernel_size=2 and dilation=1", F.max_pool2d, x, 2, padding=2)
    raises(RuntimeError, "pad should be at most half", F.avg_pool2d, x, 2, padding=2)
    raises(RuntimeError, "dilation should be greater than zero", F.max_pool2d, x, 2,
           dilation=0)
    raises(RuntimeError, r"Given input size: \(1x2x2\). Calculated output size: \(1x0x0\). "
           r"Output size is too small", F.max_pool2d, clgrad.ones(1, 1, 2, 2), 3)
    raises(RuntimeError, "non-empty 3D or 4D", F.max_pool2d, clgrad.ones(5, 5), 2)
    raises(RuntimeError, "3D or 4D", F.avg_pool2d, clgrad.ones(5, 5), 2)
    raises(RuntimeError, "kernel_size must either be a single int, or a tuple of two ints",
           F.avg_pool2d, x, (2, 2, 2))
    raises(RuntimeError, "divisor must be not zero", F.avg_pool2d, x, 2, divisor_override=0)
    raises(RuntimeError, r"Expected 3D or 4D tensor, but got \[5, 5\]", F.adaptive_avg_pool2d,
           clgrad.ones(5, 5), 2)
    raises(RuntimeError, "elements of output_size must be greater than or equal to 0",
           F.adaptive_avg_pool2d, x, -1)
    raises(RuntimeError, "dimension 2 being empty", F.adaptive_avg_pool2d,
           clgrad.ones(1, 2, 0, 4), 2)
    raises(NotImplementedError, "\"max_pool2d\" not implemented for 'Bool'", F.max_pool2d,
           x > 0, 2)
    assert F.adaptive_avg_pool2d(x, 0).shape == (2, 4, 0, 0)


def test_dtypes_and_windows_follow_torch(device):
    """Which dtypes torch's CPU pooling kernels take (max: the integers, not bool; max_pool1d
    without indices and the adaptive max pooling: floats only; avg: int64 and floats) and its
    padding rule (at most half the kernel, whatever the dilation), with torch's classes: each
    checked against torch 2.13."""
    x = np.arange(2 * 3 * 6).reshape(2, 3, 6) - 9
    t = lambda a, dt=clgrad.int64: clgrad.tensor(a, dtype=dt, device=device)  # noqa: E731
    np.testing.assert_array_equal(F.max_pool2d(t(x), 2).numpy(),
                                  x[:, :2].reshape(2, 1, 2, 3, 2).max((2, 4)))
    np.testing.assert_array_equal(F.max_pool1d(t(x), 2, return_indices=True)[0].numpy(),
                                  x.reshape(2, 3, 3, 2).max(-1))
    np.testing.assert_array_equal(F.avg_pool1d(t(x), 2).numpy(),
                                  np.trunc(x.reshape(2, 3, 3, 2).mean(-1)))

    def refused(match, fn, *args, **kw):
        with pytest.raises(NotImplementedError, match=match):
            fn(*args, **kw)
    refused("max_pool1d.*'Long'", F.max_pool1d, t(x), 2)
    refused("max_pool1d.*'Int'", F.max_pool1d, t(x, clgrad.int32), 2)
    refused("max_pool2d.*'Bool'", F.max_pool1d, t(x > 0, clgrad.bool), 2, return_indices=True)
    refused("avg_pool2d.*'Bool'", F.avg_pool1d, t(x > 0, clgrad.bool), 1, 1)
    refused("avg_pool2d.*'Bool'", F.avg_pool2d, t(x > 0, clgrad.bool), 2)
    refused("avg_pool2d.*'Int'", F.avg_pool2d, t(x, clgrad.int32), 2)
    refused("avg_pool3d.*'Byte'", F.avg_pool3d, t(np.abs(x)[None], clgrad.uint8), 1)
    refused("adaptive_max_pool2d.*'Long'", F.adaptive_max_pool1d, t(x), 2)
    refused("adaptive_max_pool2d.*'Bool'", F.adaptive_max_pool2d, t(x > 0, clgrad.bool), 2)
    with pytest.raises(RuntimeError, match="half of"):    # the window is checked first
        F.max_pool1d(t(x), 2, padding=2)
    # padding at most half the kernel: 2 > 3 // 2 even though the dilated window is 5 wide
    for f, a, d in ((F.max_pool2d, (clgrad.zeros(2, 2, 2, device=device), 3, 2, 2), 2),
                    (F.max_pool1d, (clgrad.zeros(1, 1, 9, device=device), 2, 2, 2), 4),
                    (F.max_pool3d, (clgrad.zeros(1, 6, 6, 6, device=device), 3, 2, 2), 2)):
        with pytest.raises(RuntimeError, match="half of kernel size"):
            f(*a, dilation=d)
    assert F.max_pool2d(clgrad.zeros(1, 9, 9, device=device), 3, 2, 1, dilation=2).shape == \
        (1, 4, 4)


def _windows(n, out):
    return [(math.floor(i * n / out), math.ceil((i + 1) * n / out)) for i in range(out)]


def test_1d_pooling_matches_numpy(device):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 10))
    X = clgrad.tensor(x)
    np.testing.assert_array_equal(F.max_pool1d(X, 2).numpy(), x.reshape(2, 3, 5, 2).max(-1))
    np.testing.assert_allclose(nn.AvgPool1d(5)(X).numpy(), x.reshape(2, 3, 2, 5).mean(-1),
                               rtol=1e-12)
    val, idx = F.max_pool1d(X, 5, return_indices=True)
    np.testing.assert_array_equal(idx.numpy(), x.reshape(2, 3, 2, 5).argmax(-1) +
                                  np.array([0, 5]))
    want = np.stack([x[..., a:b].mean(-1) for a, b in _windows(10, 4)], -1)
    np.testing.assert_allclose(F.adaptive_avg_pool1d(X, 4).numpy(), want, rtol=1e-12)
    want = np.stack([x[..., a:b].max(-1) for a, b in _windows(10, 4)], -1)
    np.testing.assert_array_equal(nn.AdaptiveMaxPool1d(4)(X).numpy(), want)
    assert F.max_pool1d(X[0], 3, stride=1, padding=1).shape == (3, 10)     # unbatched
    with pytest.raises(RuntimeError, match="Expected 2D or 3D"):
        F.avg_pool1d(clgrad.ones(1, 1, 1, 4), 2)


def test_adaptive_max_pool2d(device):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 3, 7, 9))
    out, idx = F.adaptive_max_pool2d(clgrad.tensor(x), (3, 4), return_indices=True)
    for i, (a, b) in enumerate(_windows(7, 3)):
        for j, (c, d) in enumerate(_windows(9, 4)):
            np.testing.assert_array_equal(out.numpy()[..., i, j], x[..., a:b, c:d].max((-2, -1)))
            flat = x.reshape(2, 3, -1)
            np.testing.assert_array_equal(np.take_along_axis(flat, idx.numpy()[..., i, j, None],
                                                             -1)[..., 0],
                                          out.numpy()[..., i, j])
    assert nn.AdaptiveMaxPool2d((None, 2))(clgrad.tensor(x)).shape == (2, 3, 7, 2)
    X = clgrad.tensor(x[:1, :1], requires_grad=True)
    assert gradcheck(lambda X: F.adaptive_max_pool2d(X, (2, 3)), (X,))
    assert gradcheck(lambda X: F.max_pool1d(X[0], 3, stride=2), (X,))


def test_shuffles(device):
    x = np.arange(2 * 8 * 2 * 3, dtype=np.float64).reshape(2, 8, 2, 3)
    y = F.pixel_shuffle(clgrad.tensor(x), 2).numpy()
    want = x.reshape(2, 2, 2, 2, 2, 3).transpose(0, 1, 4, 2, 5, 3).reshape(2, 2, 4, 6)
    np.testing.assert_array_equal(y, want)
    np.testing.assert_array_equal(nn.PixelUnshuffle(2)(clgrad.tensor(y)).numpy(), x)
    np.testing.assert_array_equal(
        nn.ChannelShuffle(4)(clgrad.tensor(x)).numpy(),
        x.reshape(2, 4, 2, 2, 3).transpose(0, 2, 1, 3, 4).reshape(2, 8, 2, 3))
    with pytest.raises(RuntimeError, match="divisible by the square of upscale_factor"):
        F.pixel_shuffle(clgrad.ones(1, 3, 2, 2), 2)


@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8"])
def test_integer_pooling(device, dtype):
    rng = np.random.default_rng(2)
    low = 0 if dtype == "uint8" else -50
    x = rng.integers(low, 100, (2, 3, 6, 8))
    X = clgrad.tensor(x).to(getattr(clgrad, dtype))
    got = F.max_pool2d(X, 2)
    assert got.dtype == X.dtype
    np.testing.assert_array_equal(got.numpy(), x.reshape(2, 3, 3, 2, 4, 2).max((3, 5)))
    mean = x.reshape(2, 3, 3, 2, 4, 2).sum((3, 5)) / 4
    if dtype == "int64":
        np.testing.assert_array_equal(F.avg_pool2d(X, 2).numpy(), np.trunc(mean))  # to zero
    else:                             # torch (CPU) averages no integers narrower than int64
        with pytest.raises(NotImplementedError, match="avg_pool2d"):
            F.avg_pool2d(X, 2)
    with pytest.raises(NotImplementedError, match="max_pool1d"):   # floats only, in torch
        nn.MaxPool1d(2)(X[0, :, 0])
    assert nn.MaxPool1d(2, return_indices=True)(X[0, :, 0])[0].shape == (3, 4)   # max_pool2d's


def test_integer_pooling_refuses_inexact_values(device):
    big = clgrad.tensor([[[[2 ** 60, 1], [2, 3]]]])
    with pytest.raises(NotImplementedError, match="not exact"):
        F.max_pool2d(big, 2)
