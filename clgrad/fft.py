"""torch.fft: discrete Fourier transforms of any length along any dims, with torch's arguments
(`n` / `s` to cut or zero-pad, `dim`, `norm` "backward", "ortho" or "forward") and gradients.

Complex tensors are transformed through their (re, im) pairs (view_as_real), by the ops of
clgrad.ops.fft and the kernels of the fft family (clgrad.kernels.fft): powers of two by Stockham
passes, other lengths by Bluestein's chirp-z transform. Real inputs promote as torch's do
(integers to the default dtype, float32 / float64 kept; 16-bit floats are refused, as on torch's
CPU).

>>> import clgrad
>>> x = clgrad.tensor([1.0, 2.0, 3.0, 4.0])
>>> clgrad.fft.rfft(x)
tensor([10.+0.j, -2.+2.j, -2.+0.j])
>>> clgrad.fft.irfft(clgrad.fft.rfft(x), n=4)
tensor([1., 2., 3., 4.])
"""
import math

from . import dtypes as _dtypes
from .ops import fft as _f
from .ops.complexes import view_as_complex as _view_as_complex, view_as_real as _view_as_real
from .ops.creation import arange as _arange
from .ops.shape import roll as _roll

__all__ = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2", "irfft2",
           "hfft2", "ihfft2", "fftn", "ifftn", "rfftn", "irfftn", "hfftn", "ihfftn", "fftfreq",
           "rfftfreq", "fftshift", "ifftshift"]


def _is_complex(x):
    return x.dtype.is_complex


def _pairs(name, x, complex_ok):
    """(pairs, None) of a complex x, or (None, real x in its transform dtype)."""
    if _is_complex(x):
        if not complex_ok:
            raise RuntimeError(f"{name} expects a real input tensor, but got "
                               f"{_dtypes.TORCH_NAMES.get(x.dtype, x.dtype.name)}")
        return _view_as_real(x), None
    dt = _f.fft_dtype(x)
    return None, (x if x.dtype is dt else x.to(dt))


def _complex(p):
    return _view_as_complex(p)


def _dim(x, dim):
    nd = x.dim()
    if nd == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    if not -nd <= dim < nd:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-nd}, {nd - 1}], "
                         f"but got {dim})")
    return dim % nd


def _points(n):
    if n < 1:
        raise RuntimeError(f"Invalid number of data points ({n}) specified")
    return n


def _out(out, res):
    """res, or written into `out` (resized to res's shape, as torch's out= does)."""
    if out is None:
        return res
    if tuple(out.shape) != tuple(res.shape):
        out.resize_(res.shape)
    return out.copy_(res)


# ---- 1-d ---------------------------------------------------------------------------------------
def _c2c_1d(name, input, n, dim, norm, forward):
    d = _dim(input, dim)
    n = _points(input.shape[d] if n is None else n)
    scale = _f.norm_scale(norm, n, forward)
    p, x = _pairs(name, input, True)
    if p is None:               # a real input: its full spectrum
        return _complex(_f.r2c(x, [d], [n], not forward, scale, onesided=False))
    return _complex(_f.c2c(_f.resize(p, [d], [n]), [d], not forward, scale))


def fft(input, n=None, dim=-1, norm=None, *, out=None):
    """The discrete Fourier transform of `input` along `dim` (cut or zero-padded to n points).

    >>> import clgrad
    >>> clgrad.fft.fft(clgrad.tensor([1.0, 0.0, 0.0, 0.0]))
    tensor([1.+0.j, 1.+0.j, 1.+0.j, 1.+0.j])
    """
    return _out(out, _c2c_1d("fft", input, n, dim, norm, True))


def ifft(input, n=None, dim=-1, norm=None, *, out=None):
    """The inverse discrete Fourier transform along `dim` (divided by n with norm "backward").

    >>> import clgrad
    >>> clgrad.fft.ifft(clgrad.tensor([4.0, 0.0, 0.0, 0.0]))
    tensor([1.+0.j, 1.+0.j, 1.+0.j, 1.+0.j])
    """
    return _out(out, _c2c_1d("ifft", input, n, dim, norm, False))


def _r2c_1d(name, input, n, dim, norm, forward):
    d = _dim(input, dim)
    n = _points(input.shape[d] if n is None else n)
    _, x = _pairs(name, input, False)
    return _complex(_f.r2c(x, [d], [n], not forward, _f.norm_scale(norm, n, forward)))


def rfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The transform of a real input along `dim`: its n // 2 + 1 non-negative frequencies.

    >>> import clgrad
    >>> clgrad.fft.rfft(clgrad.tensor([1.0, 1.0, 1.0, 1.0]))
    tensor([4.+0.j, 0.+0.j, 0.+0.j])
    """
    return _out(out, _r2c_1d("rfft", input, n, dim, norm, True))


def ihfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The inverse of hfft: the n // 2 + 1 non-negative frequencies of the inverse transform of a
    real input.

    >>> import clgrad
    >>> clgrad.fft.ihfft(clgrad.tensor([4.0, 0.0, 0.0, 0.0]))
    tensor([1.+0.j, 1.+0.j, 1.+0.j])
    """
    return _out(out, _r2c_1d("ihfft", input, n, dim, norm, False))


def _c2r_1d(name, input, n, dim, norm, forward):
    d = _dim(input, dim)
    n = _points(2 * (input.shape[d] - 1) if n is None else n)
    p, x = _pairs(name, input, True)
    if p is None:
        p = _f.real_pairs(x)
    p = _f.resize(p, [d], [n // 2 + 1])
    return _f.c2r(p, [d], n, not forward, _f.norm_scale(norm, n, forward))


def irfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The inverse of rfft: n real values (default 2 * (size - 1)) from the non-negative
    frequencies of a Hermitian spectrum.

    >>> import clgrad
    >>> clgrad.fft.irfft(clgrad.tensor([4.0, 0.0, 0.0]))
    tensor([1., 1., 1., 1.])
    """
    return _out(out, _c2r_1d("irfft", input, n, dim, norm, False))


def hfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The transform of a signal that is Hermitian in time, given by its first half: n real values.

    >>> import clgrad
    >>> clgrad.fft.hfft(clgrad.tensor([1.0, 0.0, 0.0]))
    tensor([1., 1., 1., 1.])
    """
    return _out(out, _c2r_1d("hfft", input, n, dim, norm, True))


# ---- n-d ---------------------------------------------------------------------------------------
def _shape_and_dims(input, s, dim):
    """torch's canonical (sizes, dims) of an n-d transform."""
    nd = input.dim()
    if dim is not None:
        dims = [dim] if isinstance(dim, int) else list(dim)
        dims = [_dim(input, d) for d in dims]
        if len(set(dims)) != len(dims):
            raise RuntimeError("FFT dims must be unique")
    if s is not None:
        s = [s] if isinstance(s, int) else list(s)
        if dim is not None and len(dims) != len(s):
            raise RuntimeError("When given, dim and shape arguments must have the same length")
        if len(s) > nd:
            raise RuntimeError(f"Got shape with {len(s)} values but input tensor only has {nd} "
                               f"dimensions.")
        if dim is None:
            dims = list(range(nd - len(s), nd))
        sizes = [input.shape[d] if k == -1 else k for k, d in zip(s, dims)]
    elif dim is None:
        dims, sizes = list(range(nd)), list(input.shape)
    else:
        sizes = [input.shape[d] for d in dims]
    for k in sizes:
        _points(k)
    return sizes, dims


def _c2c_nd(name, input, s, dim, norm, forward):
    sizes, dims = _shape_and_dims(input, s, dim)
    scale = _f.norm_scale(norm, math.prod(sizes), forward)
    p, x = _pairs(name, input, True)
    if not dims:
        return _complex(p.clone() if p is not None else _f.real_pairs(x))
    if p is None:
        return _complex(_f.r2c(x, dims, sizes, not forward, scale, onesided=False))
    return _complex(_f.c2c(_f.resize(p, dims, sizes), dims, not forward, scale))


def fftn(input, s=None, dim=None, norm=None, *, out=None):
    """The n-dimensional transform over `dim` (default: all dims, or the last len(s)).

    >>> import clgrad
    >>> clgrad.fft.fftn(clgrad.ones(2, 2)).real
    tensor([[4., 0.],
            [0., 0.]])
    """
    return _out(out, _c2c_nd("fftn", input, s, dim, norm, True))


def ifftn(input, s=None, dim=None, norm=None, *, out=None):
    """The n-dimensional inverse transform.

    >>> import clgrad
    >>> clgrad.fft.ifftn(clgrad.fft.fftn(clgrad.ones(2, 2))).real
    tensor([[1., 1.],
            [1., 1.]])
    """
    return _out(out, _c2c_nd("ifftn", input, s, dim, norm, False))


def _r2c_nd(name, input, s, dim, norm, forward):
    if _is_complex(input):
        raise RuntimeError(f"{name} expects a real-valued input tensor, but got "
                           f"{_dtypes.TORCH_NAMES.get(input.dtype, input.dtype.name)}")
    sizes, dims = _shape_and_dims(input, s, dim)
    if not dims:
        raise RuntimeError(f"{name} must transform at least one axis")
    _, x = _pairs(name, input, False)
    return _complex(_f.r2c(x, dims, sizes, not forward,
                           _f.norm_scale(norm, math.prod(sizes), forward)))


def rfftn(input, s=None, dim=None, norm=None, *, out=None):
    """The n-dimensional transform of a real input, one-sided along the last of `dim`.

    >>> import clgrad
    >>> clgrad.fft.rfftn(clgrad.ones(2, 4)).shape
    clgrad.Size([2, 3])
    """
    return _out(out, _r2c_nd("rfftn", input, s, dim, norm, True))


def ihfftn(input, s=None, dim=None, norm=None, *, out=None):
    """The inverse of hfftn: the n-dimensional inverse transform of a real input, one-sided.

    >>> import clgrad
    >>> clgrad.fft.ihfftn(clgrad.ones(2, 4)).real
    tensor([[1., 0., 0.],
            [0., 0., 0.]])
    """
    return _out(out, _r2c_nd("ihfftn", input, s, dim, norm, False))


def _c2r_nd(name, input, s, dim, norm, forward):
    sizes, dims = _shape_and_dims(input, s, dim)
    if not dims:
        raise RuntimeError(f"{name} must transform at least one axis")
    last = 2 * (input.shape[dims[-1]] - 1) if s is None or list(s)[-1] == -1 else sizes[-1]
    _points(last)
    sizes[-1] = last // 2 + 1
    p, x = _pairs(name, input, True)
    if p is None:
        p = _f.real_pairs(x)
    scale = _f.norm_scale(norm, math.prod(sizes[:-1]) * last, forward)
    return _f.c2r(_f.resize(p, dims, sizes), dims, last, not forward, scale)


def irfftn(input, s=None, dim=None, norm=None, *, out=None):
    """The inverse of rfftn: real values from the one-sided n-dimensional spectrum (the last of
    `dim` of size 2 * (size - 1) unless s says).

    >>> import clgrad
    >>> clgrad.fft.irfftn(clgrad.fft.rfftn(clgrad.ones(2, 4)))
    tensor([[1., 1., 1., 1.],
            [1., 1., 1., 1.]])
    """
    return _out(out, _c2r_nd("irfftn", input, s, dim, norm, False))


def hfftn(input, s=None, dim=None, norm=None, *, out=None):
    """The n-dimensional transform of a signal Hermitian in time, given by its one-sided half.

    >>> import clgrad
    >>> clgrad.fft.hfftn(clgrad.fft.ihfftn(clgrad.ones(2, 4)))
    tensor([[1., 1., 1., 1.],
            [1., 1., 1., 1.]])
    """
    return _out(out, _c2r_nd("hfftn", input, s, dim, norm, True))


def fft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """fftn over two dims (the last two by default)."""
    return _out(out, fftn(input, s, dim, norm))


def ifft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """ifftn over two dims (the last two by default)."""
    return _out(out, ifftn(input, s, dim, norm))


def rfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """rfftn over two dims (the last two by default)."""
    return _out(out, rfftn(input, s, dim, norm))


def irfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """irfftn over two dims (the last two by default)."""
    return _out(out, irfftn(input, s, dim, norm))


def hfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """hfftn over two dims (the last two by default)."""
    return _out(out, hfftn(input, s, dim, norm))


def ihfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """ihfftn over two dims (the last two by default)."""
    return _out(out, ihfftn(input, s, dim, norm))


# ---- helpers -----------------------------------------------------------------------------------
def _freq_dtype(dtype):
    dt = _dtypes.get_default_dtype() if dtype is None else _dtypes.as_dtype(dtype)
    return dt


def fftfreq(n, d=1.0, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    """The sample frequencies of fft of n points, d apart: [0, 1, ..., -(n // 2), ..., -1] / (d n).

    >>> import clgrad
    >>> clgrad.fft.fftfreq(4)
    tensor([ 0.0000,  0.2500, -0.5000, -0.2500])
    """
    dt = _freq_dtype(dtype)
    k = _arange(n, dtype=dt, device=device)
    if n:
        k = (k - (k >= (n + 1) // 2).to(dt) * n) * (1.0 / (n * d))
    return _out(out, k).requires_grad_(requires_grad)


def rfftfreq(n, d=1.0, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    """The sample frequencies of rfft of n points, d apart: [0, 1, ..., n // 2] / (d n).

    >>> import clgrad
    >>> clgrad.fft.rfftfreq(4)
    tensor([0.0000, 0.2500, 0.5000])
    """
    dt = _freq_dtype(dtype)
    k = _arange(n // 2 + 1, dtype=dt, device=device) * (1.0 / (n * d))
    return _out(out, k).requires_grad_(requires_grad)


def _all_dims(input, dim):
    if dim is None:
        return list(range(input.dim()))
    return [dim] if isinstance(dim, int) else list(dim)


def fftshift(input, dim=None):
    """input rolled so that frequency 0 is in the middle of each of `dim` (default: all).

    >>> import clgrad
    >>> clgrad.fft.fftshift(clgrad.fft.fftfreq(5))
    tensor([-0.4000, -0.2000,  0.0000,  0.2000,  0.4000])
    """
    dims = _all_dims(input, dim)
    if not dims:
        return input.clone()
    return _roll(input, [input.shape[d] // 2 for d in dims], dims)


def ifftshift(input, dim=None):
    """The inverse of fftshift.

    >>> import clgrad
    >>> clgrad.fft.ifftshift(clgrad.fft.fftshift(clgrad.arange(5)))
    tensor([0, 1, 2, 3, 4])
    """
    dims = _all_dims(input, dim)
    if not dims:
        return input.clone()
    return _roll(input, [(input.shape[d] + 1) // 2 for d in dims], dims)
