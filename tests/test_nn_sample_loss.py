"""affine_grid / grid_sample and the remaining layers and losses against numpy references, with
gradients by finite differences in float64 and torch's errors."""
import math

import numpy as np
import pytest

import clgrad
import clgrad.nn.functional as F
from clgrad import nn
from clgrad.autograd import gradcheck, gradgradcheck

from helpers import grad_dtype, grad_tols, make


# ---- affine_grid / grid_sample ---------------------------------------------------------------
def np_affine_grid(theta, size, ac):
    def lin(n):
        if n <= 1:
            return np.zeros(n)
        c = np.linspace(-1, 1, n)
        return c if ac else c * (n - 1) / n
    axes = [lin(n) for n in size[2:]]
    mesh = list(np.meshgrid(*axes, indexing="ij"))          # spatial order (d,) h, w
    base = np.stack(mesh[::-1] + [np.ones(mesh[0].shape)], -1)   # (x, y[, z], 1)
    return np.einsum("...k,nik->n...i", base, theta)


def np_source(c, n, pm, ac):
    c = (c + 1) / 2 * (n - 1) if ac else ((c + 1) * n - 1) / 2
    if pm == "border":
        c = np.clip(c, 0, n - 1)
    elif pm == "reflection":
        lo2, hi2 = (0, 2 * (n - 1)) if ac else (-1, 2 * n - 1)
        if lo2 == hi2:
            c = np.zeros_like(c)
        else:
            lo, span = lo2 / 2, (hi2 - lo2) / 2
            c = np.abs(c - lo)
            flips = np.floor(c / span)
            extra = c - flips * span
            c = np.where(flips % 2 == 0, extra + lo, span - extra + lo)
        c = np.clip(c, 0, n - 1)
    return c


def np_grid_sample(x, g, mode, pm, ac):
    N, C, H, W = x.shape
    out = np.zeros((N, C) + g.shape[1:3])

    def at(n, r, c):
        return x[n, :, r, c] if 0 <= r < H and 0 <= c < W else np.zeros(C)
    for n in range(N):
        for i in range(g.shape[1]):
            for j in range(g.shape[2]):
                ix = np_source(g[n, i, j, 0], W, pm, ac)
                iy = np_source(g[n, i, j, 1], H, pm, ac)
                if mode == "nearest":
                    out[n, :, i, j] = at(n, int(np.rint(iy)), int(np.rint(ix)))
                    continue
                x0, y0 = int(np.floor(ix)), int(np.floor(iy))
                fx, fy = ix - x0, iy - y0
                out[n, :, i, j] = (at(n, y0, x0) * (1 - fx) * (1 - fy) +
                                   at(n, y0, x0 + 1) * fx * (1 - fy) +
                                   at(n, y0 + 1, x0) * (1 - fx) * fy +
                                   at(n, y0 + 1, x0 + 1) * fx * fy)
    return out


def test_affine_grid_matches_numpy(device):
    rng = np.random.default_rng(0)
    th, th3 = rng.standard_normal((2, 2, 3)), rng.standard_normal((1, 3, 4))
    for ac in (True, False):
        for size in ((2, 1, 3, 4), (2, 3, 1, 5)):
            np.testing.assert_allclose(F.affine_grid(clgrad.tensor(th), size, ac).numpy(),
                                       np_affine_grid(th, size, ac), rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(F.affine_grid(clgrad.tensor(th3), (1, 1, 2, 3, 4), ac).numpy(),
                                   np_affine_grid(th3, (1, 1, 2, 3, 4), ac), rtol=1e-12,
                                   atol=1e-14)
    with pytest.warns(UserWarning, match="align_corners=False"):
        F.affine_grid(clgrad.tensor(th), (2, 1, 2, 2))
    with pytest.raises(ValueError, match="Expected a batch of 3D affine matrices"):
        F.affine_grid(clgrad.tensor(th), (2, 1, 2, 2, 2), False)
    with pytest.raises(ValueError, match="floating point"):
        F.affine_grid(clgrad.ones(1, 2, 3, dtype=clgrad.int32), (1, 1, 2, 2), False)
    with pytest.raises(NotImplementedError, match="only supports 4D and 5D sizes"):
        F.affine_grid(clgrad.tensor(th), (2, 1, 3), False)
    tol = grad_tols(device)
    t = clgrad.tensor(th, dtype=grad_dtype(device), requires_grad=True)
    assert gradcheck(lambda t: F.affine_grid(t, (2, 1, 2, 3), False), (t,), **tol)


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
def test_grid_sample_matches_numpy(device, mode):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 3, 4, 5))
    g = rng.uniform(-1.5, 1.5, (2, 3, 4, 2))
    g[0, 0, 0] = [1.0, -1.0]                                 # on the corners
    dt = clgrad.float32
    X = make(x, dt, device, "transposed")
    for pm in ("zeros", "border", "reflection"):
        for ac in (True, False):
            got = F.grid_sample(X, make(g, dt, device, "strided"), mode, pm, ac).numpy()
            np.testing.assert_allclose(got, np_grid_sample(x, g, mode, pm, ac), rtol=1e-4,
                                       atol=1e-5, err_msg=f"{pm} {ac}")


def test_grid_sample_gradients_and_errors(device):
    dt, tol = grad_dtype(device), grad_tols(device)
    rng = np.random.default_rng(2)
    x = clgrad.tensor(rng.standard_normal((1, 2, 3, 4)), dtype=dt, requires_grad=True)
    g = clgrad.tensor(rng.uniform(-1.3, 1.3, (1, 2, 3, 2)), dtype=dt, requires_grad=True)
    for pm in ("zeros", "reflection"):
        f = lambda x, g: F.grid_sample(x, g, "bilinear", pm, False)     # noqa: E731
        assert gradcheck(f, (x, g), **tol)
    f = lambda x, g: F.grid_sample(x, g, "bilinear", "border", True)    # noqa: E731
    assert gradgradcheck(f, (x, g), **tol)
    # 5-d input and grid: trilinear
    x3 = clgrad.tensor(rng.standard_normal((1, 1, 2, 3, 2)), dtype=dt, requires_grad=True)
    g3 = clgrad.tensor(rng.uniform(-1, 1, (1, 1, 2, 2, 3)), dtype=dt, requires_grad=True)
    assert gradcheck(lambda x, g: F.grid_sample(x, g, align_corners=True), (x3, g3), **tol)
    ones = clgrad.ones(1, 1, 2, 2)
    with pytest.raises(RuntimeError, match="expected grid to have size 2 in last dimension"):
        F.grid_sample(ones, clgrad.zeros(1, 2, 2, 3), align_corners=False)
    with pytest.raises(RuntimeError, match="same batch size"):
        F.grid_sample(ones, clgrad.zeros(2, 2, 2, 2), align_corners=False)
    with pytest.raises(ValueError, match="expected mode to be"):
        F.grid_sample(ones, clgrad.zeros(1, 2, 2, 2), mode="foo", align_corners=False)
    with pytest.raises(ValueError, match="expected padding_mode to be"):
        F.grid_sample(ones, clgrad.zeros(1, 2, 2, 2), padding_mode="foo", align_corners=False)
    with pytest.warns(UserWarning, match="align_corners=False"):
        F.grid_sample(ones, clgrad.zeros(1, 2, 2, 2))
