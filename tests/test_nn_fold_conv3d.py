"""unfold / fold, conv3d, conv_transpose1d / 3d and their modules against numpy references
(loops over the kernel taps), with gradients by finite differences in float64 and torch's
errors."""
import numpy as np
import pytest

import clgrad
import clgrad.nn.functional as F
from clgrad import nn
from clgrad.autograd import gradcheck, gradgradcheck

from helpers import grad_dtype, grad_tols, make


def _t3(v):
    return tuple(v) if isinstance(v, (tuple, list)) else (v,) * 3


# ---- numpy references ------------------------------------------------------------------------
def np_unfold(x, k, d=(1, 1), p=(0, 0), s=(1, 1)):
    N, C, H, W = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (p[0], p[0]), (p[1], p[1])))
    oh = (H + 2 * p[0] - d[0] * (k[0] - 1) - 1) // s[0] + 1
    ow = (W + 2 * p[1] - d[1] * (k[1] - 1) - 1) // s[1] + 1
    cols = [xp[:, :, i * d[0]:i * d[0] + (oh - 1) * s[0] + 1:s[0],
               j * d[1]:j * d[1] + (ow - 1) * s[1] + 1:s[1]]
            for i in range(k[0]) for j in range(k[1])]
    return np.stack(cols, 2).reshape(N, C * k[0] * k[1], oh * ow)


def np_conv3d(x, w, b, s, p, d, g):
    s, p, d = _t3(s), _t3(p), _t3(d)
    N, C = x.shape[:2]
    Co, Cg, *ks = w.shape
    xp = np.pad(x, ((0, 0), (0, 0)) + tuple((q, q) for q in p))
    out = [(n + 2 * q - dd * (k - 1) - 1) // ss + 1
           for n, q, dd, k, ss in zip(x.shape[2:], p, d, ks, s)]
    y = np.zeros((N, g, Co // g) + tuple(out))
    wg = w.reshape(g, Co // g, Cg, *ks)
    for a in range(ks[0]):
        for b_ in range(ks[1]):
            for c in range(ks[2]):
                sl = xp[:, :, a * d[0]::s[0], b_ * d[1]::s[1], c * d[2]::s[2]]
                sl = sl[:, :, :out[0], :out[1], :out[2]].reshape(N, g, Cg, *out)
                y += np.einsum("ngcdhw,goc->ngodhw", sl, wg[..., a, b_, c])
    y = y.reshape(N, Co, *out)
    return y if b is None else y + b.reshape(1, -1, 1, 1, 1)


def np_conv_transpose3d(x, w, b, s, p, op, d, g):
    s, p, op, d = _t3(s), _t3(p), _t3(op), _t3(d)
    N, Ci = x.shape[:2]
    _, Cog, *ks = w.shape
    ins = x.shape[2:]
    out = [(n - 1) * ss - 2 * q + dd * (k - 1) + o + 1
           for n, ss, q, dd, k, o in zip(ins, s, p, d, ks, op)]
    full = np.zeros((N, g, Cog) + tuple(o + 2 * q for o, q in zip(out, p)))
    xg = x.reshape(N, g, Ci // g, *ins)
    wg = w.reshape(g, Ci // g, Cog, *ks)
    for a in range(ks[0]):
        for b_ in range(ks[1]):
            for c in range(ks[2]):
                contrib = np.einsum("ngcdhw,gco->ngodhw", xg, wg[..., a, b_, c])
                full[:, :, :, a * d[0]:a * d[0] + (ins[0] - 1) * s[0] + 1:s[0],
                     b_ * d[1]:b_ * d[1] + (ins[1] - 1) * s[1] + 1:s[1],
                     c * d[2]:c * d[2] + (ins[2] - 1) * s[2] + 1:s[2]] += contrib
    y = full[..., p[0]:p[0] + out[0], p[1]:p[1] + out[1], p[2]:p[2] + out[2]]
    y = y.reshape(N, g * Cog, *out)
    return y if b is None else y + b.reshape(1, -1, 1, 1, 1)


# ---- unfold / fold ---------------------------------------------------------------------------
GEOMS = [dict(kernel_size=2),
         dict(kernel_size=(2, 3), dilation=(2, 1), padding=(1, 0), stride=(1, 2))]


@pytest.mark.parametrize("geom", GEOMS)
def test_unfold_fold_match_numpy(device, geom):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 5, 6))
    kw = {k: (v if isinstance(v, tuple) else (v, v)) for k, v in geom.items()}
    want = np_unfold(x, kw["kernel_size"], kw.get("dilation", (1, 1)),
                     kw.get("padding", (0, 0)), kw.get("stride", (1, 1)))
    for layout in ("contiguous", "transposed"):
        got = F.unfold(make(x, clgrad.float32, device, layout), **geom)
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-6)
    # unbatched, and an empty batch
    np.testing.assert_allclose(nn.Unfold(**geom)(clgrad.tensor(x[0], dtype=clgrad.float32))
                               .numpy(), want[0], rtol=1e-6)
    assert F.unfold(clgrad.zeros(0, 3, 5, 6), **geom).shape == (0,) + want.shape[1:]
    # fold is unfold's adjoint: <unfold(x), y> == <x, fold(y)>
    y = rng.standard_normal(want.shape)
    folded = F.fold(clgrad.tensor(y, dtype=clgrad.float32), (5, 6), **geom).numpy()
    assert folded.shape == x.shape
    np.testing.assert_allclose((want * y).sum(), (x * folded).sum(), rtol=1e-4)
    y1 = clgrad.tensor(y[1], dtype=clgrad.float32)
    # one sample alone may sum its overlapping patches in another order than in a batch (NVIDIA:
    # an ulp apart)
    np.testing.assert_allclose(nn.Fold((5, 6), **geom)(y1).numpy(), folded[1], rtol=1e-5)


def test_fold_sums_overlaps_and_half_dtypes(device):
    want = np.array([[1, 2, 1], [2, 4, 2], [1, 2, 1]], dtype=np.float64)
    for dt in (clgrad.float16, clgrad.bfloat16):
        np.testing.assert_array_equal(F.fold(clgrad.ones(1, 8, 4, dtype=dt), 3, 2).float()
                                      .numpy(), np.stack([want, want])[None])
    x = np.arange(2 * 16, dtype=np.float32).reshape(1, 2, 4, 4)
    np.testing.assert_array_equal(F.unfold(clgrad.tensor(x, dtype=clgrad.bfloat16), 2, stride=2)
                                  .float().numpy(), np_unfold(x, (2, 2), s=(2, 2)))


def test_unfold_fold_gradients(device):
    dt, tol = grad_dtype(device), grad_tols(device)
    rng = np.random.default_rng(1)
    x = clgrad.tensor(rng.standard_normal((1, 2, 4, 3)), dtype=dt, requires_grad=True)
    f = lambda x: F.unfold(x, (2, 2), padding=1, stride=(2, 1))      # noqa: E731
    assert gradcheck(f, (x,), **tol) and gradgradcheck(f, (x,), **tol)
    c = clgrad.tensor(rng.standard_normal((1, 4, 4)), dtype=dt, requires_grad=True)
    g = lambda c: F.fold(c, (3, 4), 2, dilation=(1, 2))              # noqa: E731
    assert gradcheck(g, (c,), **tol) and gradgradcheck(g, (c,), **tol)


def test_unfold_fold_errors(device):
    with pytest.raises(RuntimeError, match="Expected 3D or 4D"):
        F.unfold(clgrad.ones(1, 1, 2, 3, 3), 2)
    with pytest.raises(RuntimeError, match="components must be at least one"):
        F.unfold(clgrad.ones(1, 1, 2, 2), 3)
    with pytest.raises(RuntimeError, match="stride should be greater than zero"):
        F.unfold(clgrad.ones(1, 1, 3, 3), 2, stride=0)
    with pytest.raises(RuntimeError, match=r"divisible by the product of kernel_size"):
        F.fold(clgrad.ones(1, 5, 9), (4, 4), 2)
    with pytest.raises(RuntimeError, match=r"sliding blocks 3 \* 3 = 9, but got input.size\(2\)=5"):
        F.fold(clgrad.ones(1, 8, 5), (4, 4), 2)
    assert repr(nn.Fold((4, 4), 2)) == \
        "Fold(output_size=(4, 4), kernel_size=2, dilation=1, padding=0, stride=1)"


# ---- 3-d and 1-d transposed convolutions ------------------------------------------------------
CONV3D = [dict(), dict(stride=2, padding=1),
          dict(stride=(1, 2, 1), dilation=(2, 1, 2), groups=3)]


@pytest.mark.parametrize("kw", CONV3D)
def test_conv3d_matches_numpy(device, kw):
    rng = np.random.default_rng(2)
    g = kw.get("groups", 1)
    x = rng.standard_normal((2, 3, 5, 4, 5))
    w = rng.standard_normal((6, 3 // g, 2, 3, 2))
    b = rng.standard_normal(6)
    want = np_conv3d(x, w, b, kw.get("stride", 1), kw.get("padding", 0), kw.get("dilation", 1),
                     g)
    dt = clgrad.float32
    got = F.conv3d(make(x, dt, device, "strided"), clgrad.tensor(w, dtype=dt),
                   clgrad.tensor(b, dtype=dt), **kw)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-4, atol=1e-4)
    got = F.conv3d(clgrad.tensor(x[0], dtype=dt), clgrad.tensor(w, dtype=dt), None, **kw)
    np.testing.assert_allclose(got.numpy(), want[0] - b.reshape(-1, 1, 1, 1), rtol=1e-4,
                               atol=1e-4)


def test_conv3d_same_padding_and_modules(device):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, 2, 4, 5, 3))
    w = rng.standard_normal((2, 2, 2, 3, 2))
    y = F.conv3d(clgrad.tensor(x), clgrad.tensor(w), padding="same", dilation=(1, 1, 2)).numpy()
    # 'same' pads (0, 1) in depth, (1, 1) in height and (1, 1) in width: total d * (k - 1)
    xp = np.pad(x, ((0, 0), (0, 0), (0, 1), (1, 1), (1, 1)))
    np.testing.assert_allclose(y, np_conv3d(xp, w, None, 1, 0, (1, 1, 2), 1), rtol=1e-10)
    m = nn.Conv3d(2, 4, 3, padding=1, padding_mode="circular", dtype=clgrad.float64)
    xc = np.pad(x, ((0, 0), (0, 0)) + ((1, 1),) * 3, mode="wrap")
    np.testing.assert_allclose(m(clgrad.tensor(x)).detach().numpy(),
                               np_conv3d(xc, m.weight.detach().numpy(),
                                         m.bias.detach().numpy(), 1, 0, 1, 1), rtol=1e-10)
    assert repr(m) == ("Conv3d(2, 4, kernel_size=(3, 3, 3), stride=(1, 1, 1), padding=(1, 1, 1), "
                       "padding_mode=circular)")
    # the 16-bit dtypes (stored in 16 bits, summed in float32)
    for dt, atol in ((clgrad.float16, 1e-2), (clgrad.bfloat16, 1e-1)):
        got = F.conv3d(clgrad.tensor(x, dtype=dt), clgrad.tensor(w, dtype=dt), stride=(1, 2, 1))
        np.testing.assert_allclose(got.float().numpy(), np_conv3d(x, w, None, (1, 2, 1), 0, 1, 1),
                                   atol=atol, rtol=atol)
        got = F.conv_transpose3d(clgrad.tensor(x, dtype=dt), clgrad.tensor(w, dtype=dt))
        np.testing.assert_allclose(got.float().numpy(),
                                   np_conv_transpose3d(x, w, None, 1, 0, 0, 1, 1),
                                   atol=atol, rtol=atol)
    assert m.weight.shape == (4, 2, 3, 3, 3) and F.conv3d(
        clgrad.zeros(0, 2, 3, 3, 3, dtype=clgrad.float64), m.weight).shape == (0, 4, 1, 1, 1)


TRANSPOSED = [dict(), dict(stride=2, padding=1, output_padding=1),
              dict(stride=(2, 1, 3), dilation=(1, 2, 1), groups=3, output_padding=(1, 0, 2))]


@pytest.mark.parametrize("kw", TRANSPOSED)
def test_conv_transpose_1d_3d_match_numpy(device, kw):
    rng = np.random.default_rng(4)
    g = kw.get("groups", 1)
    x = rng.standard_normal((2, 3, 3, 2, 2))
    w = rng.standard_normal((3, 2, 2, 3, 2))
    b = rng.standard_normal(2 * g)
    args = [kw.get(k, v) for k, v in (("stride", 1), ("padding", 0), ("output_padding", 0),
                                      ("dilation", 1))]
    want = np_conv_transpose3d(x, w, b, *args[:3], args[3], g)
    dt = clgrad.float32
    got = F.conv_transpose3d(make(x, dt, device, "transposed"), clgrad.tensor(w, dtype=dt),
                             clgrad.tensor(b, dtype=dt), **kw)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-4, atol=1e-4)
    # 1-d: the same with unit height and width taps
    kw1 = {k: (v[0] if isinstance(v, tuple) else v) for k, v in kw.items()}
    x1, w1 = x[:, :, :, 0, 0], w[:, :, :, :1, :1]
    s1, p1, o1, d1 = [a[0] if isinstance(a, tuple) else a for a in args]
    want1 = np_conv_transpose3d(x1[..., None, None], w1, b, (s1, 1, 1), (p1, 0, 0), (o1, 0, 0),
                                (d1, 1, 1), g)[..., 0, 0]
    got1 = F.conv_transpose1d(clgrad.tensor(x1, dtype=dt), clgrad.tensor(w1[..., 0, 0], dtype=dt),
                              clgrad.tensor(b, dtype=dt), **kw1)
    np.testing.assert_allclose(got1.numpy(), want1, rtol=1e-4, atol=1e-4)


def test_conv3d_transpose_gradients(device):
    dt, tol = grad_dtype(device), grad_tols(device)
    rng = np.random.default_rng(5)

    def T(*shape):
        return clgrad.tensor(rng.standard_normal(shape), dtype=dt, requires_grad=True)
    x, w, b = T(1, 2, 3, 2, 3), T(2, 1, 2, 2, 2), T(2)
    f = lambda x, w, b: F.conv3d(x, w, b, stride=(2, 1, 1), padding=(1, 0, 1), groups=2)  # noqa
    assert gradcheck(f, (x, w, b), **tol) and gradgradcheck(f, (x, w, b), **tol)
    x, w = T(1, 2, 2, 2, 1), T(2, 1, 2, 1, 2)
    g = lambda x, w: F.conv_transpose3d(x, w, None, stride=2, padding=(1, 0, 0),   # noqa: E731
                                        output_padding=(1, 0, 0))
    assert gradcheck(g, (x, w), **tol)
    x, w, b = T(2, 3), T(2, 2, 3), T(2)
    h = lambda x, w, b: F.conv_transpose1d(x, w, b, stride=2, dilation=2)      # noqa: E731
    assert gradcheck(h, (x, w, b), **tol) and gradgradcheck(h, (x, w, b), **tol)


def test_conv_transpose_modules_and_errors(device):
    m = nn.ConvTranspose3d(2, 4, 3, stride=2, padding=1, groups=2)
    assert repr(m) == ("ConvTranspose3d(2, 4, kernel_size=(3, 3, 3), stride=(2, 2, 2), "
                       "padding=(1, 1, 1), groups=2)")
    assert m.weight.shape == (2, 2, 3, 3, 3)
    x = clgrad.randn(1, 2, 2, 3, 2)
    assert m(x).shape == (1, 4, 3, 5, 3)
    assert m(x, output_size=(4, 6, 4)).shape == (1, 4, 4, 6, 4)
    m1 = nn.ConvTranspose1d(2, 3, 3, stride=2, bias=False)
    assert m1.bias is None and m1(clgrad.randn(2, 4)).shape == (3, 9)
    with pytest.raises(RuntimeError, match="output padding must be smaller than either stride"):
        F.conv_transpose3d(clgrad.ones(1, 1, 2, 2, 2), clgrad.ones(1, 1, 2, 2, 2),
                           output_padding=1)
    with pytest.raises(RuntimeError, match="Output size is too small"):
        F.conv_transpose1d(clgrad.ones(1, 1, 2), clgrad.ones(1, 1, 2), padding=3)
    with pytest.raises(RuntimeError, match="Kernel size can't be greater than actual input"):
        F.conv3d(clgrad.ones(1, 1, 2, 2, 2), clgrad.ones(1, 1, 3, 2, 2))
    with pytest.raises(RuntimeError, match="not supported for strided convolutions"):
        F.conv3d(clgrad.ones(1, 1, 4, 4, 4), clgrad.ones(1, 1, 3, 2, 2), padding="same",
                 stride=2)
    with pytest.raises(RuntimeError, match="expected input.* to have 4 channels"):
        F.conv3d(clgrad.ones(1, 2, 3, 3, 3), clgrad.ones(1, 4, 1, 1, 1))
    with pytest.raises(RuntimeError, match=r"Expected 4D \(unbatched\) or 5D"):
        F.conv3d(clgrad.ones(2, 3, 3), clgrad.ones(1, 1, 1, 1, 1))


# ---- 3-d pooling -----------------------------------------------------------------------------
def _pool_out(n, k, s, p, d, ceil_mode):
    o = (n + 2 * p - d * (k - 1) - 1 + ((s - 1) if ceil_mode else 0)) // s + 1
    return o - 1 if ceil_mode and (o - 1) * s >= n + p else o


def np_pool3d(x, k, s, p, d, ceil_mode, mode, include_pad=True, divisor=None):
    """Max (values, flat indices) or average by a loop over the output positions."""
    N, C, *sizes = x.shape
    out = [_pool_out(n, *a, ceil_mode) for n, *a in zip(sizes, k, s, p, d)]
    vals = np.zeros((N, C) + tuple(out))
    idx = np.zeros((N, C) + tuple(out), dtype=np.int64)
    for o in np.ndindex(*out):
        taps = [[a * ss - pp + j * dd for j in range(kk)] for a, ss, pp, dd, kk in
                zip(o, s, p, d, k)]
        inside = [[t for t in tt if 0 <= t < n] for tt, n in zip(taps, sizes)]
        win = x[:, :, inside[0]][:, :, :, inside[1]][..., inside[2]].reshape(N, C, -1)
        if mode == "max":
            arg = win.argmax(-1)
            pos = np.array([a * sizes[1] * sizes[2] + b * sizes[2] + c for a in inside[0]
                            for b in inside[1] for c in inside[2]])
            vals[(slice(None), slice(None)) + o] = win.max(-1)
            idx[(slice(None), slice(None)) + o] = pos[arg]
        else:
            if divisor is None and include_pad:
                # the window clipped to the padded input
                div = np.prod([min(a * ss - pp + kk, n + pp) - (a * ss - pp)
                               for a, ss, pp, kk, n in zip(o, s, p, k, sizes)])
            else:
                div = divisor or win.shape[-1]
            vals[(slice(None), slice(None)) + o] = win.sum(-1) / div
    return vals, idx


def test_pool3d_matches_numpy(device):
    rng = np.random.default_rng(6)
    x = rng.standard_normal((2, 2, 4, 5, 6))
    x[0, 0, :2, :2, :2] = 1.0                     # ties: the first maximum in (d, h, w) order
    X = make(x, clgrad.float64 if device.has_fp64 else clgrad.float32, device, "transposed")
    tol = dict(rtol=1e-5, atol=1e-6)
    for k, s, p, d, cm in [((2, 2, 2), (2, 2, 2), (0, 0, 0), (1, 1, 1), False),
                           ((3, 2, 3), (2, 1, 2), (1, 1, 0), (1, 2, 1), True)]:
        want, want_idx = np_pool3d(x, k, s, p, d, cm, "max")
        got, got_idx = F.max_pool3d(X, k, s, p, d, cm, return_indices=True)
        np.testing.assert_allclose(got.numpy(), want, **tol)
        np.testing.assert_array_equal(got_idx.numpy(), want_idx)
        for include_pad, divisor in ((True, None), (False, None), (True, 5)):
            want, _ = np_pool3d(x, k, s, p, (1, 1, 1), cm, "avg", include_pad, divisor)
            got = F.avg_pool3d(X, k, s, p, cm, include_pad, divisor)
            np.testing.assert_allclose(got.numpy(), want, **tol)
    xi = rng.integers(-20, 20, (1, 2, 3, 4, 4))
    np.testing.assert_array_equal(nn.AvgPool3d(2, padding=1)(clgrad.tensor(xi)).numpy(),
                                  np.trunc(np_pool3d(xi, (2,) * 3, (2,) * 3, (1,) * 3, (1,) * 3,
                                                     False, "avg")[0]))
    assert nn.MaxPool3d(2)(clgrad.tensor(x[0], dtype=clgrad.float32)).shape == (2, 2, 2, 3)


def _windows(n, out):
    return [(i * n // out, -(-(i + 1) * n // out)) for i in range(out)]


def test_adaptive_pool3d_matches_numpy(device):
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 2, 5, 4, 7))
    X = clgrad.tensor(x)
    out = (2, 3, 3)
    val, idx = F.adaptive_max_pool3d(X, out, return_indices=True)
    avg = nn.AdaptiveAvgPool3d(out)(X).numpy()
    flat = x.reshape(2, 2, -1)
    for i, (a, b) in enumerate(_windows(5, 2)):
        for j, (c, d) in enumerate(_windows(4, 3)):
            for k, (e, f) in enumerate(_windows(7, 3)):
                win = x[:, :, a:b, c:d, e:f]
                np.testing.assert_array_equal(val.numpy()[..., i, j, k], win.max((2, 3, 4)))
                np.testing.assert_allclose(avg[..., i, j, k], win.mean((2, 3, 4)), rtol=1e-5)
                np.testing.assert_array_equal(
                    np.take_along_axis(flat, idx.numpy()[..., i, j, k, None], -1)[..., 0],
                    win.max((2, 3, 4)))
    assert nn.AdaptiveMaxPool3d((None, 1, 2))(X[0]).shape == (2, 5, 1, 2)
    assert F.adaptive_avg_pool3d(X, (1, None, 2)).shape == (2, 2, 1, 4, 2)


def test_pool3d_gradients_and_errors(device):
    dt, tol = grad_dtype(device), grad_tols(device)
    rng = np.random.default_rng(8)
    x = clgrad.tensor(rng.standard_normal((1, 1, 3, 3, 4)), dtype=dt, requires_grad=True)
    for f in (lambda x: F.max_pool3d(x, 2, stride=1, padding=(1, 0, 1)),
              lambda x: F.avg_pool3d(x, (2, 3, 2), stride=(1, 2, 2), padding=1, ceil_mode=True,
                                     count_include_pad=False),
              lambda x: F.adaptive_avg_pool3d(x, (2, 2, 3)),
              lambda x: F.adaptive_max_pool3d(x, (2, 1, 3))):
        assert gradcheck(f, (x,), **tol) and gradgradcheck(f, (x,), **tol)
    with pytest.raises(RuntimeError, match="non-empty 4D or 5D"):
        F.max_pool3d(clgrad.ones(2, 2, 2), 1)
    with pytest.raises(RuntimeError, match="pad should be at most half of effective kernel"):
        F.avg_pool3d(clgrad.ones(1, 1, 4, 4, 4), 2, padding=2)
    with pytest.raises(RuntimeError, match="Output size is too small"):
        F.max_pool3d(clgrad.ones(1, 1, 2, 2, 2), 3)
    with pytest.raises(RuntimeError, match="divisor must be not zero"):
        F.avg_pool3d(clgrad.ones(1, 1, 4, 4, 4), 2, divisor_override=0)
    with pytest.raises(RuntimeError, match="output_size must be 3"):
        F.adaptive_avg_pool3d(clgrad.ones(1, 2, 2, 2), (1, 2))
    assert repr(nn.MaxPool3d(2)) == \
        "MaxPool3d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)"
