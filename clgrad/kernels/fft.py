"""The fft family (cl_kernels/fft.mako): 1-d complex discrete Fourier transforms of a batch of
rows, float32 and float64, any length: Stockham passes of radices 2 to 8 for lengths of prime
factors 2, 3, 5 and 7, Bluestein's chirp-z transform (through a power-of-two FFT) for the
others. Complex numbers are (re, im) pairs in
memory, so the transforms take and give float tensors of shape [..., n, 2] (the storage of a
complex tensor, as view_as_real shows it), or real rows [..., n] as input. Raw launches: no
autograd.

>>> import clgrad
>>> x = clgrad.tensor([[1.0, 0.0], [2.0, 0.0], [3.0, 0.0]])      # 1, 2, 3 as (re, im) pairs
>>> y = fft_raw(x, inverse=False)
>>> [round(v, 4) for v in y.flatten().tolist()]
[6.0, 0.0, -1.5, 0.866, -1.5, -0.866]
>>> fft_raw(clgrad.tensor([1.0, 2.0, 3.0, 4.0]), inverse=False, real_in=True).tolist()
[[10.0, 0.0], [-2.0, 2.0], [-2.0, 0.0], [-2.0, -2.0]]
"""
from collections import OrderedDict

import numpy as np

from .. import dtypes
from ..runtime.family import KernelFamily
from ..runtime.kernels import grid, group_limit, vec_width
from ..tensor import contiguous_strides, empty_tensor, numel_of, upload
from ._layout import collapse, view_raw
from .copy import check_fp64, contiguous_raw

FFT_DTYPES = (dtypes.float32, dtypes.float64)
FFT = KernelFamily("fft", lambda dt: dict(dt=dt), FFT_DTYPES)

# Per-device constants: the twiddle tables of each length and of fft_r8v's passes, and the
# spectra of Bluestein's filters, built on first use of a length (as FFT libraries keep their
# plans), the most recent _KEEP kept.
_KEEP = 32
_CACHE = OrderedDict()


def _cached(key, make):
    t = _CACHE.get(key)
    if t is None:
        t = _CACHE[key] = make()
        while len(_CACHE) > _KEEP:
            _CACHE.popitem(last=False)
    else:
        _CACHE.move_to_end(key)
    return t


def clear_cache():
    """Drop the cached twiddle tables and filter spectra (they are rebuilt on use)."""
    _CACHE.clear()


def is_pow2(n):
    return n > 0 and n & (n - 1) == 0


def bluestein_length(n):
    """The power-of-two length of the convolution Bluestein's transform of length n runs."""
    m = 1
    while m < 2 * n - 1:
        m <<= 1
    return m


def _twiddles(dev, dt, N):
    def make():
        tw = empty_tensor((N, 2), dt, dev)
        FFT.launch(dev, dt, "fft_twiddles", N, tw, N)
        return tw
    return _cached(("tw", dev, dt, N), make)


def _rows(x, real_in):
    """x seen as B rows of n numbers: (x or a copy, B, n, row stride, element stride), strides in
    real elements. A complex x is [..., n, 2] with its pairs adjacent."""
    if not real_in and x._strides[-1] != 1:
        x = contiguous_raw(x)
    lead = x._shape[:-1] if real_in else x._shape[:-2]
    n = x._shape[-1] if real_in else x._shape[-2]
    ss = x._strides[-1] if real_in else x._strides[-2]
    bshape, (bst,) = collapse(lead, [list(x._strides[:len(lead)])])
    if len(bshape) > 1:
        x = contiguous_raw(x)
        return _rows(x, real_in)
    return x, numel_of(lead), n, (bst[0] if bst else 0), ss


def local_max(dt):
    """The longest row fft_local takes (its two local buffers hold 16 KiB): 1024 float32 or 512
    float64 complex numbers."""
    return 16384 // (4 * dt.itemsize)


def _pass_twiddles(dev, dt, Ns):
    """The twiddles of a radix-8 pass over sub-transforms of length Ns, laid out for fft_r8v's
    vector loads: e^(2 pi i r k / (8 Ns)) at (r - 1) * Ns + k (computed in float64 on the host,
    once per Ns and device)."""
    def make():
        a = 2 * np.pi * np.outer(np.arange(1, 8), np.arange(Ns)) / (8 * Ns)
        return upload(np.stack([np.cos(a), np.sin(a)], -1).reshape(-1, 2), dt, dev)
    return _cached(("pass", dev, dt, Ns), make)


def _stockham(dev, dt, x, xo_args, B, N, sign, scale):
    """The transforms of length N (of prime factors 2, 3, 5, 7) of B rows read through xo_args
    (the input's strides); a new contiguous [B, N, 2] tensor. On GPUs, powers of two that fit
    local memory go to fft_local (a work-group each, one launch); the rest, and every row on
    CPUs, through one launch per Stockham pass. (On CPUs fft_local measured no faster than the
    radix-4 passes for 64 x 4096: 1.0-2.3 ms against 1.3-1.4 on PoCL and Intel's runtime, where
    a work-group runs on one core and a pass's rows stay in cache anyway.)"""
    tw = _twiddles(dev, dt, N)
    if is_pow2(N) and N <= local_max(dt) and not dev.cpu_paths:
        out = empty_tensor((B, N, 2), dt, dev)
        ls = min(max(N // 4, 1), group_limit(dev, FFT.kernel(dev, dt, "fft_local"), 256))
        FFT.launch(dev, dt, "fft_local", ((B * ls,), (ls,)), x, *xo_args, out, tw, N,
                   float(sign), float(scale))
        return out
    bufs = [empty_tensor((B, N, 2), dt, dev), None]
    src, src_args, Ns = x, xo_args, 1
    radices = _radices(N)
    w = vec_width(dev, dt)
    for i, R in enumerate(radices):
        dst = bufs[i % 2]
        if dst is None:
            dst = bufs[1] = empty_tensor((B, N, 2), dt, dev)
        last = i == len(radices) - 1
        args = (N, Ns, N // R, N // (Ns * R), float(sign), float(scale) if last else 1.0)
        if R == 8 and Ns >= w and (N // 8) % w == 0:    # w lanes of one sub-transform
            FFT.launch(dev, dt, "fft_r8v", _grid2(dev, N // 8 // w, B), src, dst,
                       _pass_twiddles(dev, dt, Ns), *args)
        elif R == 8 and Ns == 1 and src_args[1:] == (2, 0) and \
                (B == 1 or src_args[0] == 2 * N) and (N // 8) % w == 0:
            # the first pass of dense rows: w lanes, no twiddles (the table is not read)
            FFT.launch(dev, dt, "fft_r8v1", _grid2(dev, N // 8 // w, B), src, dst, tw, *args)
        else:
            FFT.launch(dev, dt, f"fft_r{R}", _grid2(dev, N // R, B), src, *src_args, dst, tw,
                       *args)
        src, src_args, Ns = dst, (2 * N, 2, 0), Ns * R
    return src


def _radices(N):
    """The passes of a transform of length N = 2^p 3^a 5^b 7^c: the power of two first (radix 8
    while it divides, the rest, 2 or 4, before them: four passes for 4096, not six with radix 4;
    each reads and writes every row once), then 3, 5 and 7. None when N has another factor."""
    out = []
    for r in (3, 5, 7):
        while N % r == 0:
            out.append(r)
            N //= r
    if not is_pow2(N):
        return None
    p = N.bit_length() - 1
    return ([1 << (p % 3)] if p % 3 else []) + [8] * (p // 3) + out


def _chirp(dev, dt, n):
    """Bluestein's chirp e^(pi i j^2 / n), j < n (j^2 reduced modulo 2n, exactly, in int64),
    computed in float64 on the host once per n and device."""
    def make():
        j = np.arange(n, dtype=np.int64)
        a = np.pi * ((j * j) % (2 * n)) / n
        return upload(np.stack([np.cos(a), np.sin(a)], -1), dt, dev)
    return _cached(("chirp", dev, dt, n), make)


def _filter(dev, dt, n, m, sign):
    """The spectrum of Bluestein's filter for length n (over m, divided by m)."""
    def make():
        h = empty_tensor((1, m, 2), dt, dev)
        FFT.launch(dev, dt, "chirp_filter", m, h, n, m, float(sign))
        return _stockham(dev, dt, h, (2 * m, 2, 0), 1, m, -1, 1.0)
    return _cached(("filter", dev, dt, n, sign), make)


def fft_raw(x, inverse, scale=1.0, real_in=False):
    """The discrete Fourier transform of each row of x (float32 or float64), times `scale`:
    x is [..., n, 2] ((re, im) pairs), or [..., n] real numbers when `real_in`; `inverse` turns
    the sign of the exponent (unnormalised: scale 1 / n makes it the inverse). A new contiguous
    [..., n, 2] tensor; not recorded."""
    dev, dt = x._storage.device, x._dtype
    check_fp64(dt, dev)
    shape = (tuple(x._shape) + (2,)) if real_in else tuple(x._shape)
    x, B, n, sb, ss = _rows(x, real_in)
    sign = 1 if inverse else -1
    if B == 0 or n == 0:
        return empty_tensor(shape, dt, dev)
    args = (sb, ss, int(real_in))
    if n == 1:
        out = empty_tensor((B, 1, 2), dt, dev)
        FFT.launch(dev, dt, "chirp_in", _grid2(dev, 1, B), x, *args, out, out, 1, 1, B,
                   float(sign), float(scale), 0)
    elif _radices(n) is not None:
        out = _stockham(dev, dt, x, args, B, n, sign, scale)
    else:
        m = bluestein_length(n)
        a = empty_tensor((B, m, 2), dt, dev)
        ct = _chirp(dev, dt, n)
        FFT.launch(dev, dt, "chirp_in", _grid2(dev, m, B), x, *args, a, ct, n, m, B,
                   float(sign), 1.0, 1)
        spec = _stockham(dev, dt, a, (2 * m, 2, 0), B, m, -1, 1.0)
        del a
        FFT.launch(dev, dt, "cmul_rows", _grid2(dev, m, B), spec, _filter(dev, dt, n, m, sign),
                   m, B)
        conv = _stockham(dev, dt, spec, (2 * m, 2, 0), B, m, 1, 1.0)
        del spec
        out = empty_tensor((B, n, 2), dt, dev)
        FFT.launch(dev, dt, "chirp_out", _grid2(dev, n, B), conv, out, ct, n, m, B, float(sign),
                   float(scale))
    return view_raw(out, shape, contiguous_strides(shape), 0)


def _grid2(dev, n, B):
    """A 2-d launch: n work-items along dimension 0 for each of B rows (dimension 1)."""
    (g0,), (l0,) = grid(dev, n)
    return (g0, B), (l0, 1)


def rfft_raw(x, inverse, scale=1.0, onesided=True):
    """The transform of real rows x [..., n] (float32 / float64): the n // 2 + 1 entries of
    non-negative frequency when `onesided`, else all n, as pairs [..., m, 2]; times `scale`.
    An even n goes through a complex transform of n / 2 (the samples paired up) and r2c_post.
    Not recorded.

    >>> import clgrad
    >>> rfft_raw(clgrad.tensor([1.0, 2.0, 3.0, 4.0]), False).tolist()
    [[10.0, 0.0], [-2.0, 2.0], [-2.0, 0.0]]
    """
    dev, dt = x._storage.device, x._dtype
    n = x._shape[-1] if x._shape else 1
    m = n // 2 + 1 if onesided else n
    lead = tuple(x._shape[:-1])
    if n % 2 or numel_of(lead) == 0:
        full = fft_raw(x, inverse, scale, real_in=True)
        if m == n:
            return full
        return contiguous_raw(view_raw(full, lead + (m, 2), full._strides, full._offset))
    check_fp64(dt, dev)
    if x._strides[-1] != 1:
        x = contiguous_raw(x)
    x, B, _, sb, _ = _rows(x, True)
    h = n // 2
    z = fft_raw(view_raw(x, (B, h, 2), (sb, 2, 1), x._offset), inverse)
    out = empty_tensor(lead + (m, 2), dt, dev)
    FFT.launch(dev, dt, "r2c_post", _grid2(dev, m, B), z, out, _twiddles(dev, dt, n), n, m,
               float(1 if inverse else -1), float(scale))
    return out


def irfft_raw(x, n, inverse, scale=1.0):
    """The n real values whose transform is the Hermitian spectrum given by its first
    n // 2 + 1 pairs x [..., n // 2 + 1, 2] (the imaginary parts of entries 0 and n / 2 are
    ignored), times `scale`: a new contiguous [..., n]. An even n goes through c2r_pre and a
    complex transform of n / 2. Not recorded.

    >>> import clgrad
    >>> irfft_raw(clgrad.tensor([[10.0, 0.0], [-2.0, 2.0], [-2.0, 0.0]]), 4, True, 0.25).tolist()
    [1.0, 2.0, 3.0, 4.0]
    """
    dev, dt = x._storage.device, x._dtype
    lead = tuple(x._shape[:-2])
    if n % 2 or numel_of(lead) == 0:
        full = fft_raw(hermitian_raw(x, n), inverse, scale)
        return contiguous_raw(view_raw(full, lead + (n,), full._strides[:-1], full._offset))
    check_fp64(dt, dev)
    x, B, _, sb, ss = _rows(x, False)
    h = n // 2
    y = empty_tensor((B, h, 2), dt, dev)
    FFT.launch(dev, dt, "c2r_pre", _grid2(dev, h, B), x, sb, ss, y, _twiddles(dev, dt, n), n,
               float(1 if inverse else -1))
    out = fft_raw(y, inverse, scale)
    return view_raw(out, lead + (n,), contiguous_strides(lead + (n,)), 0)


def hermitian_raw(x, n):
    """The full spectrum of length n of real signals from its first n // 2 + 1 entries
    x [..., n // 2 + 1, 2]: entry k >= n // 2 + 1 is the conjugate of entry n - k. A new
    contiguous [..., n, 2] tensor; not recorded."""
    dev, dt = x._storage.device, x._dtype
    check_fp64(dt, dev)
    shape = tuple(x._shape[:-2]) + (n, 2)
    x, B, h, sb, ss = _rows(x, False)
    assert h == n // 2 + 1, (h, n)
    out = empty_tensor(shape, dt, dev)
    if B and n:
        FFT.launch(dev, dt, "hermitian", _grid2(dev, n, B), x, sb, ss, out, n, B)
    return out
