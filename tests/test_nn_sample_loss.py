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
    assert F.grid_sample(clgrad.zeros(0, 2, 3, 3), clgrad.zeros(0, 4, 1, 2),
                         align_corners=False).shape == (0, 2, 4, 1)


# ---- bilinear, pdist, margin losses, alpha dropout --------------------------------------------
def test_bilinear_matches_numpy(device):
    rng = np.random.default_rng(3)
    m = nn.Bilinear(3, 4, 2, dtype=clgrad.float64)
    bound = 1 / math.sqrt(3)
    assert m.weight.shape == (2, 3, 4) and float(m.weight.abs().max()) <= bound
    assert float(m.bias.abs().max()) <= bound
    a, b = rng.standard_normal((2, 5, 3)), rng.standard_normal((2, 5, 4))
    w, bias = m.weight.detach().numpy(), m.bias.detach().numpy()
    want = np.einsum("...i,oij,...j->...o", a, w, b) + bias
    np.testing.assert_allclose(m(clgrad.tensor(a), make(b, clgrad.float64, device, "strided"))
                               .detach().numpy(), want, rtol=1e-10)
    dt, tol = grad_dtype(device), grad_tols(device)
    args = [clgrad.tensor(rng.standard_normal(s), dtype=dt, requires_grad=True)
            for s in ((2, 3), (2, 2), (2, 3, 2), (2,))]
    assert gradcheck(F.bilinear, args, **tol) and gradgradcheck(F.bilinear, args, **tol)
    with pytest.raises(RuntimeError, match="input2 size does not match weight size"):
        F.bilinear(clgrad.ones(2, 3), clgrad.ones(2, 4), clgrad.ones(5, 3, 3))
    with pytest.raises(RuntimeError, match="batch dimensions do not match"):
        F.bilinear(clgrad.ones(2, 3), clgrad.ones(3, 4), clgrad.ones(5, 3, 4))


def test_pdist_matches_numpy(device):
    rng = np.random.default_rng(4)
    x = rng.standard_normal((5, 3))
    x[3] = x[1]                                              # a zero distance
    pairs = [(i, j) for i in range(5) for j in range(i + 1, 5)]
    X = make(x, clgrad.float64 if device.has_fp64 else clgrad.float32, device, "transposed")
    for p in (0, 1, 2, 3.5, math.inf):
        want = [np.linalg.norm(x[i] - x[j], p) for i, j in pairs]
        np.testing.assert_allclose(F.pdist(X, p).numpy(), want, rtol=1e-5, atol=1e-6)
    dt, tol = grad_dtype(device), grad_tols(device)
    xg = clgrad.tensor(rng.standard_normal((4, 3)), dtype=dt, requires_grad=True)
    assert gradcheck(lambda x: F.pdist(x), (xg,), **tol)
    assert gradcheck(lambda x: F.pdist(x, 3), (xg,), **tol)
    # the gradient at a zero distance is zero, not NaN
    z = clgrad.tensor(x[[1, 3]], dtype=dt, requires_grad=True)
    F.pdist(z).sum().backward()
    np.testing.assert_array_equal(z.grad.numpy(), 0)
    with pytest.raises(RuntimeError, match="pdist only supports 2D tensors"):
        F.pdist(clgrad.ones(3))
    with pytest.raises(RuntimeError, match="non-negative p"):
        F.pdist(clgrad.ones(3, 2), -1)


def np_multi_margin(x, y, p, margin, w):
    N, C = x.shape
    out = np.zeros(N)
    for n in range(N):
        for i in range(C):
            if i != y[n]:
                h = max(0.0, margin - x[n, y[n]] + x[n, i]) ** p
                out[n] += h * (1 if w is None else w[y[n]]) / C
    return out


def np_multilabel_margin(x, t):
    N, C = x.shape
    out = np.zeros(N)
    for n in range(N):
        js = []
        for v in t[n]:
            if v < 0:
                break
            js.append(v)
        for j in js:
            for i in range(C):
                if i not in js:
                    out[n] += max(0.0, 1 - (x[n, j] - x[n, i])) / C
    return out


def test_margin_losses_match_numpy(device):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((4, 5))
    y = np.array([0, 4, 2, 2])
    w = rng.uniform(0.5, 2, 5)
    X, Y = clgrad.tensor(x), clgrad.tensor(y)
    for p in (1, 2):
        for weight in (None, w):
            want = np_multi_margin(x, y, p, 0.7, weight)
            W = None if weight is None else clgrad.tensor(weight)
            np.testing.assert_allclose(F.multi_margin_loss(X, Y, p, 0.7, W, reduction="none")
                                       .numpy(), want, rtol=1e-12)
            loss = nn.MultiMarginLoss(p, 0.7, W, reduction="sum")
            np.testing.assert_allclose(loss(X, Y).item(), want.sum(), rtol=1e-12)
    np.testing.assert_allclose(F.multi_margin_loss(X[1], Y[1]).item(),
                               np_multi_margin(x[1:2], y[1:2], 1, 1.0, None)[0], rtol=1e-12)
    t = np.array([[0, 1, -1, 2, 0], [3, -1, 0, 0, 0], [0, 1, 2, 3, 4], [4, 4, -1, -1, -1]])
    want = np_multilabel_margin(x, t)
    np.testing.assert_allclose(F.multilabel_margin_loss(X, clgrad.tensor(t), reduction="none")
                               .numpy(), want, rtol=1e-12)
    np.testing.assert_allclose(nn.MultiLabelMarginLoss()(X, clgrad.tensor(t)).item(),
                               want.mean(), rtol=1e-12)
    dt, tol = grad_dtype(device), grad_tols(device)
    xg = clgrad.tensor(x, dtype=dt, requires_grad=True)
    assert gradcheck(lambda x: F.multi_margin_loss(x, Y, 2, weight=clgrad.tensor(w, dtype=dt)),
                     (xg,), **tol)
    assert gradcheck(lambda x: F.multilabel_margin_loss(x, clgrad.tensor(t)), (xg,), **tol)
    with pytest.raises(ValueError, match="only p == 1 and p == 2 supported"):
        F.multi_margin_loss(X, Y, p=3)
    with pytest.raises(RuntimeError, match="Expected target size \\[4\\], but got \\[2\\]"):
        F.multi_margin_loss(X, Y[:2])
    with pytest.raises(RuntimeError, match="inconsistent weight size"):
        F.multi_margin_loss(X, Y, weight=clgrad.ones(3, dtype=clgrad.float64))
    with pytest.raises(RuntimeError, match="inconsistent target size"):
        F.multilabel_margin_loss(X, clgrad.tensor(t[:1]))


def test_alpha_dropout(device):
    clgrad.manual_seed(0)
    p, alpha = 0.3, 1.7580993408473766
    a = 1 / math.sqrt((alpha * alpha * p + 1) * (1 - p))
    x = clgrad.randn(4000, dtype=clgrad.float64 if device.has_fp64 else clgrad.float32,
                     requires_grad=True)
    y = F.alpha_dropout(x, p, training=True)
    xs, ys = x.detach().numpy(), y.detach().numpy()
    kept = np.isclose(ys, a * xs + a * alpha * p, rtol=1e-5, atol=1e-6)
    dropped = np.isclose(ys, a * alpha * p - alpha * a, rtol=1e-5, atol=1e-6)
    assert (kept ^ dropped).all() and abs(dropped.mean() - p) < 0.05
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.where(dropped, 0.0, a), rtol=1e-6)
    assert F.alpha_dropout(x, p) is x                        # training=False by default
    f = nn.FeatureAlphaDropout(0.5)(clgrad.zeros(3, 8, 5)).numpy()
    assert (f == f[:, :, :1]).all() and len(np.unique(f)) == 2
    assert repr(nn.AlphaDropout(0.2)) == "AlphaDropout(p=0.2, inplace=False)"
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1"):
        F.alpha_dropout(x, 1.5, True)
    with pytest.raises(RuntimeError, match="Feature dropout requires at least 2 dimensions"):
        F.feature_alpha_dropout(clgrad.ones(3), 0.5, True)


# ---- CTC -------------------------------------------------------------------------------------
def np_ctc(lp, target, T, blank):
    """-log of the summed probability of every path of length T (all C^T of them) that
    collapses (merge repeats, drop blanks) to target: a brute-force reference."""
    import itertools
    total = 0.0
    for path in itertools.product(range(lp.shape[1]), repeat=T):
        out, prev = [], None
        for c in path:
            if c != prev and c != blank:
                out.append(c)
            prev = c
        if out == list(target):
            total += math.exp(sum(lp[t, c] for t, c in enumerate(path)))
    return -math.log(total) if total > 0 else math.inf


def test_ctc_loss_matches_brute_force(device):
    rng = np.random.default_rng(6)
    T, N, C = 5, 4, 3
    z = rng.standard_normal((T, N, C))
    lp = z - np.log(np.exp(z).sum(-1, keepdims=True))
    targets = np.array([[1, 2, 0], [1, 1, 0], [2, 0, 0], [1, 1, 1]])
    in_len, tg_len = [5, 4, 3, 4], [2, 2, 0, 3]                # the last is impossible in 4 steps
    want = np.array([np_ctc(lp[:in_len[n], n], targets[n, :tg_len[n]], in_len[n], 0)
                     for n in range(N)])
    LP = clgrad.tensor(lp)
    got = F.ctc_loss(LP, clgrad.tensor(targets), clgrad.tensor(in_len), clgrad.tensor(tg_len),
                     reduction="none")
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-10)
    assert math.isinf(want[3])
    ok = want[:3]
    loss = nn.CTCLoss(zero_infinity=True)
    np.testing.assert_allclose(loss(LP, clgrad.tensor(targets), in_len, tg_len).item(),
                               (ok / np.maximum(tg_len[:3], 1)).sum() / 4, rtol=1e-10)
    # concatenated targets, another blank, unbatched
    flat = np.array([0, 1, 0, 0, 1])
    got = F.ctc_loss(LP[:, :2], clgrad.tensor(flat), [5, 5], [2, 3], blank=2, reduction="sum")
    np.testing.assert_allclose(got.item(), np_ctc(lp[:, 0], [0, 1], 5, 2) +
                               np_ctc(lp[:, 1], [0, 0, 1], 5, 2), rtol=1e-10)
    got = F.ctc_loss(LP[:, 0], clgrad.tensor([1, 2]), 5, 2, reduction="none")
    assert got.shape == () and abs(got.item() - want[0]) < 1e-10
    # gradients: with respect to log_probs themselves, and through a log_softmax
    dt, tol = grad_dtype(device), grad_tols(device)
    zt = clgrad.tensor(z[:4, :2], dtype=dt, requires_grad=True)
    f = lambda z: F.ctc_loss(z.log_softmax(-1), clgrad.tensor(targets[:2]), [4, 3], [2, 2],  # noqa
                             zero_infinity=True)
    assert gradcheck(f, (zt,), **tol) and gradgradcheck(f, (zt,), **tol)
    g = lambda lp: F.ctc_loss(lp, clgrad.tensor(targets[:2]), [4, 3], [2, 1], reduction="sum")  # noqa
    assert gradcheck(g, (zt,), **tol)
    with pytest.raises(RuntimeError, match="input_lengths must be of size batch_size"):
        F.ctc_loss(LP, clgrad.tensor(targets), [5, 4, 3], tg_len)
    with pytest.raises(RuntimeError, match="Expected tensor to have size at least 3"):
        F.ctc_loss(LP, clgrad.tensor(targets[:, :2]), in_len, [3, 1, 1, 1])
    with pytest.raises(RuntimeError, match="Expected input_lengths to have value at most 5"):
        F.ctc_loss(LP, clgrad.tensor(targets), [6, 1, 1, 1], tg_len)
    with pytest.raises(ValueError, match="foo is not a valid value for reduction"):
        F.ctc_loss(LP, clgrad.tensor(targets), in_len, tg_len, reduction="foo")
