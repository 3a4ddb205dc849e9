"""The fft family and the fft ops on (re, im) pairs (clgrad.kernels.fft, clgrad.ops.fft): every
path of the kernels (Stockham passes of radix 2, 3, 4, 5, 7 and 8, the local-memory kernel of
the GPU paths, Bluestein's chirp-z, length 1, real and strided inputs, real transforms through half-length
complex ones, the Hermitian extension) against numpy.fft for many lengths, batches and both
float dtypes, on both code paths; the Ops' gradients (the adjoint transforms) by gradcheck in
float64."""
import numpy as np
import pytest

import clgrad
from clgrad.autograd import gradcheck, gradgradcheck
from clgrad.kernels import fft as kf
from clgrad.ops import fft as f

# powers of two (radix 2, 4, 8 passes; fft_local on the GPU paths), products of 2, 3, 5, 7
# (mixed radices), others (Bluestein: 11, 17, 26 = 2 * 13)
LENGTHS = (1, 2, 3, 4, 5, 7, 8, 11, 12, 16, 17, 26, 32, 64, 100, 105, 128, 343, 512, 1000, 1024,
           4096, 4800)


def _dtypes(device):
    return [np.float32, np.float64] if device.has_fp64 else [np.float32]


def _tol(dt):
    return 2e-5 if dt == np.float32 else 1e-12


def pairs(z, dt, device):
    return clgrad.tensor(np.stack([z.real, z.imag], -1).astype(dt), device=device)


def cplx(p):
    a = p.detach().numpy().astype(np.float64)
    return a[..., 0] + 1j * a[..., 1]


def close(got, want, dt):
    """Relative to the largest value: the error of an FFT grows with the whole signal."""
    scale = max(np.abs(want).max(), 1.0) if np.size(want) else 1.0
    assert np.abs(got - want).max(initial=0) <= _tol(dt) * scale * 4, \
        (np.abs(got - want).max(initial=0), scale)


def test_lengths_both_signs_and_real_input(device, code_paths):
    rng = np.random.default_rng(0)
    for dt in _dtypes(device):
        for n in LENGTHS:
            z = rng.standard_normal((3, n)) + 1j * rng.standard_normal((3, n))
            x = pairs(z, dt, device)
            close(cplx(kf.fft_raw(x, False)), np.fft.fft(z), dt)
            close(cplx(kf.fft_raw(x, True, 1.0 / n)), np.fft.ifft(z), dt)
            r = clgrad.tensor(z.real.astype(dt), device=device)
            close(cplx(kf.fft_raw(r, False, 0.5, real_in=True)), 0.5 * np.fft.fft(z.real), dt)


def test_strided_inputs_and_batches(device):
    rng = np.random.default_rng(1)
    dt = np.float32
    for n in (16, 12, 8):
        z = rng.standard_normal((n, 5)) + 1j * rng.standard_normal((n, 5))
        x = pairs(z, dt, device).transpose(0, 1)            # element stride 10, row stride 2
        close(cplx(kf.fft_raw(x, False)), np.fft.fft(z.T), dt)
        z3 = rng.standard_normal((2, 3, 4, n)) + 1j * rng.standard_normal((2, 3, 4, n))
        x3 = pairs(z3, dt, device).permute(1, 0, 2, 3, 4)  # batch dims that do not merge
        close(cplx(kf.fft_raw(x3, False)), np.fft.fft(z3.transpose(1, 0, 2, 3)), dt)
        r = clgrad.tensor(z.real.astype(dt), device=device)[:, ::2].t()   # real, strided
        close(cplx(kf.fft_raw(r, True, real_in=True)), np.fft.ifft(z.real[:, ::2].T) * n, dt)
        x = pairs(np.zeros((7, n)), dt, device)[2:5]                   # an offset view
        close(cplx(kf.fft_raw(x + 1, False)), np.fft.fft(np.full((3, n), 1 + 1j)), dt)
    assert kf.fft_raw(clgrad.empty(0, 8, 2, device=device), False).shape == (0, 8, 2)


def test_real_transforms(device, code_paths):
    """rfft_raw / irfft_raw: even lengths through a complex transform of half the length
    (r2c_post, c2r_pre), odd ones through the full one; strided rows; the imaginary parts of the
    first and the middle entry ignored by irfft as c2r ignores them."""
    rng = np.random.default_rng(5)
    for dt in _dtypes(device):
        for n in (1, 2, 3, 4, 6, 10, 12, 16, 17, 64, 100, 1000, 1024):
            r = rng.standard_normal((3, n))
            x = clgrad.tensor(r.astype(dt), device=device)
            for inv in (False, True):
                ref = np.fft.ifft(r) * n if inv else np.fft.fft(r)
                close(cplx(kf.rfft_raw(x, inv, 0.5)), 0.5 * ref[:, :n // 2 + 1], dt)
                close(cplx(kf.rfft_raw(x, inv, 1.0, onesided=False)), ref, dt)
            xs = clgrad.tensor(r.T.copy().astype(dt), device=device).t()   # strided rows
            close(cplx(kf.rfft_raw(xs, False)), np.fft.rfft(r), dt)
            X = np.fft.rfft(r)
            X[:, 0] += 1j                          # ignored, as the middle entry's below
            if n % 2 == 0:
                X[:, -1] += 2j
            want = np.fft.irfft(np.fft.rfft(r), n)
            close(kf.irfft_raw(pairs(X, dt, device), n, True, 1.0 / n).numpy(), want, dt)
            Xs = pairs(X, dt, device).transpose(0, 1).contiguous().transpose(0, 1)
            close(kf.irfft_raw(Xs, n, True, 1.0 / n).numpy(), want, dt)
            close(kf.irfft_raw(pairs(np.conj(X), dt, device), n, False, 1.0).numpy(),
                  want * n, dt)


def test_hermitian_extension(device):
    rng = np.random.default_rng(2)
    for n in (1, 2, 5, 8):
        z = rng.standard_normal((2, n // 2 + 1)) + 1j * rng.standard_normal((2, n // 2 + 1))
        full = cplx(kf.hermitian_raw(pairs(z, np.float32, device), n))
        assert full.shape == (2, n)
        np.testing.assert_allclose(full[:, :n // 2 + 1], z, rtol=1e-6)
        np.testing.assert_allclose(full[:, n // 2 + 1:], np.conj(z[:, 1:n - n // 2][:, ::-1]),
                                   rtol=1e-6)


def test_nd_on_pairs(device):
    rng = np.random.default_rng(3)
    dt = np.float64 if device.has_fp64 else np.float32
    z = rng.standard_normal((3, 5, 8)) + 1j * rng.standard_normal((3, 5, 8))
    close(cplx(f.c2c(pairs(z, dt, device), [0, 2], False, 0.5)),
          0.5 * np.fft.fftn(z, axes=(0, 2)), dt)
    xr = rng.standard_normal((4, 7, 6))
    x = clgrad.tensor(xr.astype(dt), device=device)
    close(cplx(f.r2c(x, [1, 2], [7, 6], False, 1.0)), np.fft.rfftn(xr, axes=(1, 2)), dt)
    close(cplx(f.r2c(x, [0, 1], [5, 9], False, 1.0)), np.fft.rfftn(xr, s=(5, 9), axes=(0, 1)),
          dt)
    X = np.fft.rfftn(xr, axes=(0, 2))
    got = f.c2r(pairs(X, dt, device), [0, 2], 6, True, 1 / 24).numpy()
    close(got, np.fft.irfftn(X, s=(4, 6), axes=(0, 2)), dt)
    for n in (5, 6, 9):
        X = np.fft.rfft(xr[0, 0], n)
        p = f.resize(pairs(X, dt, device), [0], [n // 2 + 1])
        close(f.c2r(p, [0], n, True, 1.0 / n).numpy(), np.fft.irfft(X, n), dt)


@pytest.mark.parametrize("n", [1, 3, 4, 5, 8])
def test_gradients_are_the_adjoint_transforms(device, n):
    if not device.has_fp64:
        pytest.skip("gradcheck needs float64")
    rng = np.random.default_rng(n)
    a = clgrad.tensor(rng.standard_normal((2, n, 2)), device=device, requires_grad=True)
    assert gradcheck(lambda a: f.C2C.apply(a, False, 0.3), (a,))
    assert gradgradcheck(lambda a: f.C2C.apply(a, True, 1.0), (a,))
    r = clgrad.tensor(rng.standard_normal((2, n)), device=device, requires_grad=True)
    assert gradcheck(lambda r: f.R2C.apply(r, False, 0.3, True), (r,))
    assert gradcheck(lambda r: f.R2C.apply(r, True, 1.0, False), (r,))
    h = clgrad.tensor(rng.standard_normal((2, n // 2 + 1, 2)), device=device, requires_grad=True)
    assert gradcheck(lambda h: f.C2R.apply(h, n, True, 0.3), (h,))
    assert gradgradcheck(lambda h: f.C2R.apply(h, n, False, 1.0), (h,))
    # a transform along an inner dim, through movedim and the strided first pass
    b = clgrad.tensor(rng.standard_normal((n, 3, 2)), device=device, requires_grad=True)
    assert gradcheck(lambda b: f.c2c(b, [0], False, 1.0), (b,))


def test_forward_mode(device):
    if not device.has_fp64:
        pytest.skip("needs float64")
    import clgrad.autograd.forward_ad as fwAD
    rng = np.random.default_rng(4)
    x = clgrad.tensor(rng.standard_normal((2, 6)), device=device)
    t = clgrad.tensor(rng.standard_normal((2, 6)), device=device)
    with fwAD.dual_level():
        y = f.R2C.apply(fwAD.make_dual(x, t), False, 1.0, True)
        tan = fwAD.unpack_dual(y).tangent
    close(cplx(tan), np.fft.rfft(t.numpy()), np.float64)       # linear: J t is the transform of t
