"""F.interpolate and the Upsample modules: closed forms (repeat, ramps, constants), a numpy
reference of torch's coordinate rules, gradients by finite differences, and errors."""
import numpy as np
import pytest

import clgrad
import clgrad.nn.functional as F
from clgrad import nn
from clgrad.autograd import gradcheck


def _np_linear_1d(x, n_out, align_corners, factor=None):
    """torch's linear rule along the last axis, in numpy."""
    n_in = x.shape[-1]
    j = np.arange(n_out, dtype=np.float64)
    if align_corners:
        src = j * ((n_in - 1) / (n_out - 1) if n_out > 1 else 0.0)
    else:
        s = 1.0 / factor if factor else n_in / n_out
        src = np.maximum((j + 0.5) * s - 0.5, 0.0)
    i0 = np.minimum(np.floor(src).astype(int), n_in - 1)
    i1 = np.minimum(i0 + 1, n_in - 1)
    lam = src - i0
    return x[..., i0] * (1 - lam) + x[..., i1] * lam


def test_nearest_is_repeat_and_integer_friendly(device):
    a = np.arange(24, dtype=np.float32).reshape(1, 2, 3, 4)
    out = F.interpolate(clgrad.tensor(a), scale_factor=2).numpy()
    np.testing.assert_array_equal(out, a.repeat(2, 2).repeat(2, 3))
    ai = clgrad.tensor(a.astype(np.int64))
    assert F.interpolate(ai, size=(6, 8)).tolist() == out.astype(np.int64).tolist()
    # downsampling picks floor(j * in / out); nearest-exact the pixel centres
    x = clgrad.tensor(np.arange(5.0).reshape(1, 1, 5))
    assert F.interpolate(x, size=2).reshape(-1).tolist() == [0.0, 2.0]
    assert F.interpolate(x, size=2, mode="nearest-exact").reshape(-1).tolist() == [1.0, 3.0]


@pytest.mark.parametrize("align_corners", [False, True])
def test_linear_modes_match_numpy(device, align_corners):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 5))
    got = F.interpolate(clgrad.tensor(x), size=9, mode="linear", align_corners=align_corners)
    np.testing.assert_allclose(got.numpy(), _np_linear_1d(x, 9, align_corners), rtol=1e-12)
    got = F.interpolate(clgrad.tensor(x), scale_factor=1.7, mode="linear",
                        align_corners=align_corners)
    want = _np_linear_1d(x, 8, align_corners, None if align_corners else 1.7)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)
    # bilinear and trilinear are the 1-d rule along each axis in turn
    y = rng.standard_normal((1, 2, 4, 3))
    got = F.interpolate(clgrad.tensor(y), size=(6, 5), mode="bilinear",
                        align_corners=align_corners).numpy()
    want = _np_linear_1d(_np_linear_1d(y, 5, align_corners).swapaxes(-1, -2), 6,
                         align_corners).swapaxes(-1, -2)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    z = rng.standard_normal((1, 1, 2, 3, 2))
    assert F.interpolate(clgrad.tensor(z), size=(3, 4, 5), mode="trilinear").shape == \
        (1, 1, 3, 4, 5)


def test_closed_forms(device):
    ramp = clgrad.tensor(np.arange(4.0).reshape(1, 1, 1, 4))
    out = F.interpolate(ramp, size=(1, 7), mode="bilinear", align_corners=True)
    np.testing.assert_allclose(out.reshape(-1).numpy(), np.linspace(0, 3, 7), rtol=1e-12)
    out = F.interpolate(ramp, size=(1, 7), mode="bicubic", align_corners=True).reshape(-1)
    # cubic convolution keeps lines where no tap is clamped at the border (and on the knots)
    keep = [0, 2, 3, 4, 6]
    np.testing.assert_allclose(out.numpy()[keep], np.linspace(0, 3, 7)[keep], rtol=1e-12,
                               atol=1e-12)
    const = clgrad.full((1, 2, 3, 3), 2.5, dtype=clgrad.float64)
    np.testing.assert_allclose(F.interpolate(const, size=(5, 4), mode="bicubic").numpy(), 2.5,
                               rtol=1e-12)
    a = np.arange(36.0).reshape(1, 1, 6, 6)
    np.testing.assert_allclose(F.interpolate(clgrad.tensor(a), size=(3, 2), mode="area").numpy(),
                               a.reshape(1, 1, 3, 2, 2, 3).mean((3, 5)), rtol=1e-12)


def test_gradients(device):
    x = clgrad.randn(1, 2, 3, 4, dtype=clgrad.float64, requires_grad=True)
    for kw in (dict(size=(5, 3), mode="bilinear"), dict(scale_factor=2, mode="bicubic",
                                                          align_corners=True),
               dict(size=(4, 7), mode="nearest"), dict(size=(2, 2), mode="area")):
        assert gradcheck(lambda x: F.interpolate(x, **kw), (x,))


def test_modules_and_errors():
    assert nn.Upsample(scale_factor=2)(clgrad.ones(1, 1, 3)).shape == (1, 1, 6)
    assert repr(nn.Upsample(size=4, mode="bilinear")) == "Upsample(size=4, mode='bilinear')"
    assert nn.UpsamplingBilinear2d(scale_factor=2)(clgrad.ones(1, 1, 2, 2)).shape == (1, 1, 4, 4)
    x = clgrad.ones(1, 1, 4)
    with pytest.raises(ValueError, match="only one of size or scale_factor"):
        F.interpolate(x, size=2, scale_factor=2)
    with pytest.raises(ValueError, match="either size or scale_factor"):
        F.interpolate(x)
    with pytest.raises(ValueError, match="align_corners option can only be set"):
        F.interpolate(x, size=2, align_corners=True)
    with pytest.raises(NotImplementedError, match="bilinear mode needs 4D input"):
        F.interpolate(x, size=2, mode="bilinear")
