"""RMSNorm, InstanceNorm and LocalResponseNorm against numpy formulas, their running statistics,
and gradients by finite differences."""
import numpy as np
import pytest

import clgrad
import clgrad.nn.functional as F
from clgrad import nn
from clgrad.autograd import gradcheck


def test_rms_norm(device):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 4))
    m = nn.RMSNorm((3, 4)).double()
    with clgrad.no_grad():
        m.weight.copy_(clgrad.tensor(rng.standard_normal((3, 4))))
    want = x / np.sqrt((x ** 2).mean((1, 2), keepdims=True) + np.finfo(np.float64).eps) * \
        m.weight.detach().numpy()
    np.testing.assert_allclose(m(clgrad.tensor(x)).detach().numpy(), want, rtol=1e-12)
    X = clgrad.tensor(x, requires_grad=True)
    assert gradcheck(lambda X, w: F.rms_norm(X, (4,), w, eps=1e-3),
                     (X, clgrad.ones(4, dtype=clgrad.float64, requires_grad=True)))
    with pytest.raises(RuntimeError, match="normalized_shape"):
        F.rms_norm(X, (5,))


def test_instance_norm_and_running_stats(device):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 3, 4, 5))
    m = nn.InstanceNorm2d(3, affine=True, track_running_stats=True, momentum=0.5).double()
    out = m(clgrad.tensor(x)).detach().numpy()
    mu = x.mean((2, 3), keepdims=True)
    var = x.var((2, 3), keepdims=True)
    np.testing.assert_allclose(out, (x - mu) / np.sqrt(var + 1e-5), rtol=1e-10, atol=1e-12)
    # running statistics: the batch mean of the per-instance mean and unbiased variance
    n = 20
    np.testing.assert_allclose(m.running_mean.numpy(), 0.5 * mu.reshape(2, 3).mean(0),
                               rtol=1e-12)
    np.testing.assert_allclose(m.running_var.numpy(),
                               0.5 + 0.5 * (var * n / (n - 1)).reshape(2, 3).mean(0),
                               rtol=1e-12)
    assert m.num_batches_tracked.item() == 1
    m.eval()                                                      # now uses the running ones
    rm, rv = m.running_mean.numpy(), m.running_var.numpy()
    np.testing.assert_allclose(m(clgrad.tensor(x)).detach().numpy(),
                               (x - rm.reshape(1, 3, 1, 1)) / np.sqrt(rv.reshape(1, 3, 1, 1)
                                                                      + 1e-5),
                               rtol=1e-10, atol=1e-12)
    X = clgrad.tensor(x[:, :, :2, :3], requires_grad=True)
    assert gradcheck(lambda X: F.instance_norm(X), (X,))
    assert nn.InstanceNorm1d(3)(clgrad.randn(3, 6)).shape == (3, 6)      # unbatched
    with pytest.raises(ValueError, match="expected 2D or 3D input"):
        nn.InstanceNorm1d(3)(clgrad.randn(3))


def test_local_response_norm(device):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 5, 3))
    size, alpha, beta, k = 3, 0.1, 0.7, 2.0
    sq = np.pad(x ** 2, ((0, 0), (size // 2, (size - 1) // 2), (0, 0)))
    div = sum(sq[:, i:i + 5] for i in range(size)) / size
    want = x / (k + alpha * div) ** beta
    got = nn.LocalResponseNorm(size, alpha, beta, k)(clgrad.tensor(x)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-12)
    X = clgrad.tensor(x, requires_grad=True)
    assert gradcheck(lambda X: F.local_response_norm(X, 2, 0.5, 0.75, 1.0), (X,))
