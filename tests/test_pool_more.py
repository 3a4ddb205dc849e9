"""1-d pooling, adaptive max pooling and the pixel/channel shuffles against numpy, with
gradients by finite differences."""
import math

import numpy as np
import pytest

import clgrad
import clgrad.nn.functional as F
from clgrad import nn
from clgrad.autograd import gradcheck


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
