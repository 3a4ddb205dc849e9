"""clgrad.fft against numpy.fft: every function with torch's arguments (n / s cutting and
padding, dim, every norm), complex64 and complex128 inputs and real inputs promoted as torch's,
many lengths (powers of two and not), batches, 2-d and n-d; torch's errors; gradients by
gradcheck; stft / istft against a numpy reference of torch's definitions."""
import math

import numpy as np
import pytest

import clgrad
import clgrad.fft as cfft
from clgrad.autograd import gradcheck, gradgradcheck

NORMS = (None, "backward", "ortho", "forward")


def _cdtypes(device):
    return [np.complex64, np.complex128] if device.has_fp64 else [np.complex64]


def _tol(dt):
    return 5e-5 if np.dtype(dt) in (np.complex64, np.float32) else 1e-11


def close(got, want, dt):
    got = got.detach().numpy() if hasattr(got, "numpy") else got
    assert got.shape == want.shape, (got.shape, want.shape)
    scale = max(np.abs(want).max(initial=0), 1.0)
    err = np.abs(got - want).max(initial=0)
    assert err <= _tol(dt) * scale, (err, scale)


def crandn(rng, shape, dt):
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dt)


def t(a, device):
    return clgrad.tensor(a, device=device)


def test_c2c_lengths_norms_and_n(device):
    rng = np.random.default_rng(0)
    for dt in _cdtypes(device):
        for L in (1, 2, 3, 5, 7, 8, 12, 16, 17, 64, 100, 128, 1000, 1024):
            z = crandn(rng, (2, L), dt)
            x = t(z, device)
            for norm in NORMS:
                y = cfft.fft(x, norm=norm)
                assert y.dtype is (clgrad.complex64 if dt == np.complex64 else clgrad.complex128)
                close(y, np.fft.fft(z, norm=norm), dt)
                close(cfft.ifft(x, norm=norm), np.fft.ifft(z, norm=norm), dt)
        z = crandn(rng, (3, 10), dt)
        x = t(z, device)
        for n in (4, 10, 13, 16):                # trimmed and zero-padded
            close(cfft.fft(x, n=n), np.fft.fft(z, n=n), dt)
            close(cfft.ifft(x, n=n, norm="ortho"), np.fft.ifft(z, n=n, norm="ortho"), dt)


def test_dims_and_layouts(device):
    rng = np.random.default_rng(1)
    z = crandn(rng, (4, 6, 5), np.complex64)
    x = t(z, device)
    for dim in (0, 1, 2, -1, -3):
        close(cfft.fft(x, dim=dim), np.fft.fft(z, axis=dim), np.complex64)
        close(cfft.ifft(x, n=7, dim=dim), np.fft.ifft(z, n=7, axis=dim), np.complex64)
    xt = x.transpose(0, 2)                                   # a non-contiguous input
    close(cfft.fft(xt, dim=1), np.fft.fft(z.transpose(2, 1, 0), axis=1), np.complex64)
    r = rng.standard_normal((6, 8)).astype(np.float32)
    close(cfft.rfft(t(r, device).t(), dim=0), np.fft.rfft(r.T, axis=0), np.float32)
    assert cfft.fft(clgrad.empty(0, 8, dtype=clgrad.complex64, device=device)).shape == (0, 8)


def test_real_inputs_promote(device):
    rng = np.random.default_rng(2)
    r = rng.standard_normal((3, 9))
    y = cfft.fft(t(r.astype(np.float32), device))
    assert y.dtype is clgrad.complex64
    close(y, np.fft.fft(r), np.float32)
    y = cfft.ifft(t(np.arange(6), device), norm="forward")          # int64 -> complex64
    assert y.dtype is clgrad.complex64
    close(y, np.fft.ifft(np.arange(6), norm="forward"), np.float32)
    assert cfft.fft(t([True, False, True], device)).dtype is clgrad.complex64
    if device.has_fp64:
        y = cfft.fft2(t(r, device))
        assert y.dtype is clgrad.complex128
        close(y, np.fft.fft2(r), np.float64)
        assert cfft.rfft(t(r, device)).dtype is clgrad.complex128


def test_r2c_c2r(device):
    rng = np.random.default_rng(3)
    dt = np.float64 if device.has_fp64 else np.float32
    for L in (1, 2, 5, 8, 9, 16, 100):
        r = rng.standard_normal((2, L)).astype(dt)
        x = t(r, device)
        for norm in NORMS:
            close(cfft.rfft(x, norm=norm), np.fft.rfft(r, norm=norm), dt)
            close(cfft.ihfft(x, norm=norm), np.fft.ihfft(r, norm=norm), dt)
        for n in (L, L + 3, max(1, L - 1)):
            close(cfft.rfft(x, n=n), np.fft.rfft(r, n=n), dt)
        h = crandn(rng, (2, L // 2 + 1), np.complex128 if dt == np.float64 else np.complex64)
        X = t(h, device)
        for n in (None, L, L + 1, 2 * L + 3):
            if n is None and L // 2 + 1 == 1:
                continue                         # 2 * (1 - 1) = 0 points: an error (below)
            for norm in NORMS:
                close(cfft.irfft(X, n=n, norm=norm), np.fft.irfft(h, n=n, norm=norm), dt)
                close(cfft.hfft(X, n=n, norm=norm), np.fft.hfft(h, n=n, norm=norm), dt)
    y = cfft.irfft(t(np.array([4.0, 0.0, 0.0], dtype=np.float32), device))   # a real input
    close(y, np.fft.irfft([4.0, 0.0, 0.0]), np.float32)


def test_nd(device):
    rng = np.random.default_rng(4)
    dt = np.complex128 if device.has_fp64 else np.complex64
    rdt = np.float64 if device.has_fp64 else np.float32
    z = crandn(rng, (3, 6, 5), dt)
    x = t(z, device)
    for norm in NORMS:
        close(cfft.fftn(x, norm=norm), np.fft.fftn(z, norm=norm), dt)
        close(cfft.ifftn(x, norm=norm), np.fft.ifftn(z, norm=norm), dt)
        close(cfft.fft2(x, norm=norm), np.fft.fft2(z, norm=norm), dt)
        close(cfft.ifft2(x, s=(4, 7), norm=norm), np.fft.ifft2(z, s=(4, 7), norm=norm), dt)
    close(cfft.fftn(x, s=(8, 3)), np.fft.fftn(z, s=(8, 3), axes=(1, 2)), dt)
    close(cfft.fftn(x, dim=(0, 2)), np.fft.fftn(z, axes=(0, 2)), dt)
    close(cfft.fftn(x, s=(4, -1), dim=(2, 0)), np.fft.fftn(z, s=(4, 3), axes=(2, 0)), dt)
    close(cfft.fft2(x, dim=(0, -1)), np.fft.fft2(z, axes=(0, -1)), dt)
    close(cfft.fftn(x, dim=()), z, dt)
    r = rng.standard_normal((4, 6, 7)).astype(rdt)
    xr = t(r, device)
    for norm in NORMS:
        close(cfft.rfftn(xr, norm=norm), np.fft.rfftn(r, norm=norm), rdt)
        close(cfft.rfft2(xr, s=(5, 8), norm=norm), np.fft.rfft2(r, s=(5, 8), norm=norm), rdt)
        R = np.fft.rfftn(r, axes=(0, 2))
        close(cfft.irfftn(t(R, device), dim=(0, 2), norm=norm),
              np.fft.irfftn(R, axes=(0, 2), norm=norm), rdt)
        close(cfft.irfft2(t(R, device), s=(4, 9), norm=norm),
              np.fft.irfft2(R, s=(4, 9), norm=norm), rdt)
        # hfftn / ihfftn: numpy has none; torch's definitions through rfftn / irfftn
        N = 4 * 6 * 7
        f = {None: 1.0, "backward": 1.0, "ortho": 1 / math.sqrt(N), "forward": 1.0 / N}[norm]
        close(cfft.ihfftn(xr, norm=norm), np.conj(np.fft.rfftn(r)) / N / f, rdt)
        H = np.fft.rfftn(r)
        want = np.fft.irfftn(np.conj(H), s=r.shape, axes=(0, 1, 2)) * N * f
        close(cfft.hfftn(t(H, device), s=r.shape, norm=norm), want, rdt)
        close(cfft.hfft2(t(H[0], device), s=(6, 7), norm=norm),
              np.fft.irfft2(np.conj(H[0]), s=(6, 7)) * 42 *
              {None: 1.0, "backward": 1.0, "ortho": 1 / math.sqrt(42), "forward": 1 / 42}[norm],
              rdt)
    close(cfft.ihfft2(xr), np.conj(np.fft.rfft2(r)) / 42, rdt)


def test_helpers(device):
    for n in (1, 4, 5):
        for d in (1.0, 0.1):
            close(cfft.fftfreq(n, d), np.fft.fftfreq(n, d), np.float32)
            close(cfft.rfftfreq(n, d), np.fft.rfftfreq(n, d), np.float32)
    assert cfft.fftfreq(4, dtype=clgrad.float64).dtype is clgrad.float64 or not device.has_fp64
    a = np.arange(30).reshape(5, 6)
    x = t(a, device)
    np.testing.assert_array_equal(cfft.fftshift(x).numpy(), np.fft.fftshift(a))
    np.testing.assert_array_equal(cfft.ifftshift(x).numpy(), np.fft.ifftshift(a))
    np.testing.assert_array_equal(cfft.fftshift(x, dim=1).numpy(), np.fft.fftshift(a, axes=1))
    np.testing.assert_array_equal(cfft.ifftshift(x, dim=(0,)).numpy(),
                                  np.fft.ifftshift(a, axes=(0,)))


def test_out(device):
    x = clgrad.randn(3, 8, device=device)
    out = clgrad.empty(0, dtype=clgrad.complex64, device=device)
    res = cfft.rfft(x, out=out)
    assert res is out and out.shape == (3, 5)
    close(out, np.fft.rfft(x.numpy()), np.float32)
    out = clgrad.empty(3, 8, device=device)
    cfft.irfft(cfft.rfft(x), n=8, out=out)
    close(out, x.numpy(), np.float32)
    f = clgrad.empty(4, device=device)
    assert cfft.fftfreq(4, out=f) is f
    close(f, np.fft.fftfreq(4), np.float32)


def test_errors_as_torch(device):
    x = clgrad.randn(4, device=device)
    z = x.to(clgrad.complex64)
    with pytest.raises(RuntimeError, match=r"Invalid number of data points \(0\) specified"):
        cfft.fft(x, n=0)
    with pytest.raises(IndexError, match="Dimension out of range"):
        cfft.fft(x, dim=1)
    with pytest.raises(IndexError, match="tensor has no dimensions"):
        cfft.fft(clgrad.tensor(1.0, device=device))
    with pytest.raises(RuntimeError, match='Invalid normalization mode: "foo"'):
        cfft.fft(x, norm="foo")
    with pytest.raises(RuntimeError, match="Unsupported dtype Half"):
        cfft.fft(x.half())
    with pytest.raises(RuntimeError, match="rfft expects a real input tensor, but got ComplexFloat"):
        cfft.rfft(z)
    with pytest.raises(RuntimeError, match="ihfft expects a real input tensor"):
        cfft.ihfft(z)
    with pytest.raises(RuntimeError, match=r"Invalid number of data points \(0\)"):
        cfft.irfft(clgrad.ones(1, dtype=clgrad.complex64, device=device))
    y = clgrad.randn(3, 4, device=device)
    with pytest.raises(RuntimeError, match="Got shape with 3 values but input tensor only has 2"):
        cfft.fftn(y, s=(2, 3, 4))
    with pytest.raises(RuntimeError, match="FFT dims must be unique"):
        cfft.fftn(y, dim=(0, 0))
    with pytest.raises(RuntimeError, match="dim and shape arguments must have the same length"):
        cfft.fftn(y, s=(2,), dim=(0, 1))
    with pytest.raises(RuntimeError, match="rfftn must transform at least one axis"):
        cfft.rfftn(y, dim=())
    with pytest.raises(RuntimeError, match="irfftn must transform at least one axis"):
        cfft.irfftn(y, dim=())
    with pytest.raises(RuntimeError, match="rfftn expects a real-valued input tensor"):
        cfft.rfftn(y.to(clgrad.complex64))


def _as_real(fn):
    """fn of complex tensors seen as a function of their (re, im) pairs, for gradcheck."""
    def f(p):
        out = fn(clgrad.view_as_complex(p))
        return clgrad.view_as_real(out) if out.dtype.is_complex else out
    return f


def test_gradients(device):
    if not device.has_fp64:
        pytest.skip("gradcheck needs float64")
    rng = np.random.default_rng(5)
    p = t(rng.standard_normal((3, 5, 2)), device).requires_grad_()
    cases = [lambda z: cfft.fft(z, norm="ortho"), lambda z: cfft.ifft(z, n=7),
             lambda z: cfft.fft(z, n=4, dim=0, norm="forward"), lambda z: cfft.fft2(z, s=(2, 8)),
             lambda z: cfft.irfft(z, n=8), lambda z: cfft.irfft(z, norm="ortho"),
             lambda z: cfft.hfft(z, n=9), lambda z: cfft.irfftn(z), lambda z: cfft.hfftn(z),
             lambda z: cfft.ifftn(z, dim=(0,))]
    for fn in cases:
        assert gradcheck(_as_real(fn), (p,))
    r = t(rng.standard_normal((4, 6)), device).requires_grad_()
    real_cases = [lambda x: cfft.rfft(x), lambda x: cfft.rfft(x, n=9, dim=0, norm="ortho"),
                  lambda x: cfft.ihfft(x, n=5), lambda x: cfft.rfftn(x, norm="forward"),
                  lambda x: cfft.ihfft2(x), lambda x: cfft.fft(x),
                  lambda x: cfft.irfft(cfft.rfft(x) * cfft.rfft(x), n=6).sin()]
    for fn in real_cases:
        assert gradcheck(lambda x: clgrad.view_as_real(fn(x)) if fn(x).dtype.is_complex
                         else fn(x), (r,))


def test_gradients_on_complex_inputs(device):
    """gradcheck / gradgradcheck perturbing the real and imaginary parts of complex inputs (torch's
    convention for complex gradients)."""
    if not device.has_fp64:
        pytest.skip("gradcheck needs float64")
    rng = np.random.default_rng(7)
    z = t(crandn(rng, (3, 6), np.complex128), device).requires_grad_()
    for fn in (lambda z: cfft.fft(z), lambda z: cfft.ifft(z, n=4, norm="ortho"),
               lambda z: cfft.fft2(z, s=(4, 5)), lambda z: cfft.fftn(z, dim=0, norm="forward"),
               lambda z: cfft.irfft(z, n=9), lambda z: cfft.hfft(z),
               lambda z: cfft.irfft2(z, norm="ortho"), lambda z: cfft.ihfft(z.real)):
        assert gradcheck(fn, (z,))
    assert gradgradcheck(lambda z: cfft.fft(z, n=5) * cfft.ifft(z, n=5), (z,))


# ---- stft / istft ------------------------------------------------------------------------------
def np_window(window, win, n_fft):
    w = np.ones(win) if window is None else window
    left = (n_fft - win) // 2
    return np.pad(w, (left, n_fft - win - left))


def np_stft(x, n_fft, hop, win, window, center, pad_mode, normalized, onesided):
    """torch.stft's definition: frames hop apart of the (centred, padded) signal times the window
    padded to n_fft, their fft (one-sided for real signals), frequencies before frames."""
    if center:
        x = np.pad(x, [(0, 0)] * (x.ndim - 1) + [(n_fft // 2, n_fft // 2)], mode=pad_mode)
    w = np_window(window, win, n_fft)
    T = 1 + (x.shape[-1] - n_fft) // hop
    frames = np.stack([x[..., k * hop:k * hop + n_fft] * w for k in range(T)], -2)
    spec = np.fft.rfft(frames) if onesided else np.fft.fft(frames)
    if normalized:
        spec = spec / math.sqrt(n_fft)
    return np.swapaxes(spec, -1, -2)


def np_istft(s, n_fft, hop, win, window, center, length):
    """torch.istft's definition: each frame's inverse transform times the window, overlap-added
    and divided by the overlap-added squared window, then trimmed (or zero-padded) to length."""
    w = np_window(window, win, n_fft)
    frames = np.fft.irfft(np.swapaxes(s, -1, -2), n=n_fft) * w
    T = frames.shape[-2]
    n_out = n_fft + hop * (T - 1)
    y = np.zeros(frames.shape[:-2] + (n_out,))
    env = np.zeros(n_out)
    for k in range(T):
        y[..., k * hop:k * hop + n_fft] += frames[..., k, :]
        env[k * hop:k * hop + n_fft] += w * w
    start = n_fft // 2 if center else 0
    end = start + length if length is not None else (n_out - n_fft // 2 if center else n_out)
    y = y[..., start:end] / env[start:end]
    if end > n_out:
        y = np.pad(y, [(0, 0)] * (y.ndim - 1) + [(0, end - n_out)])
    return y


def test_stft_istft(device):
    rng = np.random.default_rng(6)
    dt = np.float64 if device.has_fp64 else np.float32
    x = rng.standard_normal((2, 100)).astype(dt)
    hann = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(16) / 16)
    hann10 = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(10) / 10)
    for kw, win in [(dict(n_fft=16), None), (dict(n_fft=16), hann),
                    (dict(n_fft=16, hop_length=5, win_length=10), hann10),
                    (dict(n_fft=15, center=False), None),
                    (dict(n_fft=16, normalized=True, onesided=False), hann),
                    (dict(n_fft=16, pad_mode="constant"), hann)]:
        n_fft = kw["n_fft"]
        hop = kw.get("hop_length", n_fft // 4)
        wl = kw.get("win_length", n_fft)
        w = None if win is None else t(win.astype(dt), device)
        want = np_stft(x, n_fft, hop, wl, win, kw.get("center", True),
                       kw.get("pad_mode", "reflect"), kw.get("normalized", False),
                       kw.get("onesided", True))
        got = clgrad.stft(t(x, device), window=w, return_complex=True, **kw)
        close(got, want, dt)
        pairs = t(x[0], device).stft(window=w, return_complex=False, **kw)
        close(pairs, np.stack([want[0].real, want[0].imag], -1), dt)
        if kw.get("onesided", True) and (win is not None or kw.get("center", True)):
            ikw = {k: v for k, v in kw.items() if k != "pad_mode"}
            back = clgrad.istft(got, window=w, **ikw)
            close(back, np_istft(want, n_fft, hop, wl, win, kw.get("center", True), None), dt)
            close(back, x, dt)                                  # the round trip
    s = clgrad.stft(t(x, device), 16, window=t(hann, device), return_complex=True)
    want = np_stft(x, 16, 4, 16, hann, True, "reflect", False, True)
    close(clgrad.istft(s, 16, window=t(hann, device), length=110),
          np_istft(want, 16, 4, 16, hann, True, 110), dt)
    close(clgrad.istft(s, 16, window=t(hann, device), length=90),
          np_istft(want, 16, 4, 16, hann, True, 90), dt)
    # align_to_window: frames of the window's length, centred in n_fft
    got = clgrad.stft(t(x, device), 8, hop_length=4, win_length=4, window=t(hann[::4], device),
                      center=False, align_to_window=True, return_complex=True)
    frames = np.stack([np.pad(x[:, k * 4:k * 4 + 4] * hann[::4], [(0, 0), (2, 2)])
                       for k in range(1 + (100 - 4) // 4)], -2)
    close(got, np.swapaxes(np.fft.rfft(frames), -1, -2), dt)
    # complex signals: two-sided; istft back to complex
    z = (x[0] + 1j * x[1])
    sz = clgrad.stft(t(z, device), 16, window=t(hann, device))
    close(sz, np_stft(z, 16, 4, 16, hann, True, "reflect", False, False), dt)
    close(clgrad.istft(sz, 16, window=t(hann, device), return_complex=True), z, dt)


def test_stft_errors_and_gradient(device):
    x = clgrad.randn(100, device=device)
    with pytest.raises(RuntimeError, match="stft requires the return_complex parameter"):
        clgrad.stft(x, 16)
    with pytest.raises(RuntimeError, match="expected hop_length > 0, but got hop_length=0"):
        clgrad.stft(x, 16, hop_length=0, return_complex=True)
    with pytest.raises(RuntimeError, match="expected 0 < win_length <= n_fft"):
        clgrad.stft(x, 16, win_length=20, return_complex=True)
    with pytest.raises(RuntimeError, match="expected a 1D window tensor of size equal to"):
        clgrad.stft(x, 16, win_length=8, window=clgrad.ones(16), return_complex=True)
    with pytest.raises(RuntimeError, match="expected 0 < n_fft < 100, but got n_fft=0"):
        clgrad.stft(x, 0, center=False, return_complex=True)
    with pytest.raises(RuntimeError, match="expected a 1D or 2D tensor"):
        clgrad.stft(x.view(2, 5, 10), 4, return_complex=True)
    with pytest.raises(RuntimeError, match="align_to_window should only be set when center"):
        clgrad.stft(x, 16, align_to_window=True, return_complex=True)
    with pytest.raises(RuntimeError, match="Cannot have onesided output"):
        clgrad.stft(x.to(clgrad.complex64), 16, onesided=True, return_complex=True)
    s = clgrad.stft(x, 16, return_complex=True)
    with pytest.raises(RuntimeError, match="istft requires a complex-valued input"):
        clgrad.istft(clgrad.view_as_real(s), 16)
    with pytest.raises(RuntimeError, match="window overlap add min"):
        clgrad.istft(s, 16, window=clgrad.zeros(16, device=device))
    with pytest.raises(RuntimeError, match="to match n_fft / 2 \\+ 1 when onesided=True"):
        clgrad.istft(s, 20)
    if device.has_fp64:
        r = clgrad.randn(2, 24, dtype=clgrad.float64, device=device).requires_grad_()
        w = clgrad.hann_window(8, dtype=clgrad.float64, device=device)
        assert gradcheck(lambda r: clgrad.view_as_real(
            clgrad.stft(r, 8, hop_length=3, window=w, return_complex=True)), (r,))
        s = clgrad.stft(r.detach(), 8, window=w, return_complex=True)
        p = clgrad.view_as_real(s).clone().requires_grad_()
        assert gradcheck(lambda p: clgrad.istft(clgrad.view_as_complex(p), 8, window=w), (p,))
