"""The discrete Fourier transforms as ops on (re, im) pairs: float tensors whose last dim of size 2
holds a complex number's real and imaginary parts (the storage of a complex tensor, as
view_as_real shows it). clgrad.fft puts torch.fft's functions on top of these.

Three Ops, each along the last complex dim (dim -2 of pairs, -1 of real tensors), the kernels the
fft family's (clgrad.kernels.fft):

- C2C: pairs -> pairs. Its adjoint (as a real-linear map) is the transform of the other sign
  with the same scale: conj(F)^T = F^H, torch's fft_c2c backward.
- R2C: real -> pairs, the first n // 2 + 1 entries (onesided) or all n. Adjoint: the one-sided
  gradient zero-padded to n, transformed back, its real part (torch's fft_r2c_backward).
- C2R: the n // 2 + 1 entries of a Hermitian spectrum -> the n real values of its transform.
  Adjoint: the R2C of the gradient with entries 1 .. n - n // 2 - 1 doubled (they stand for two
  entries of the full spectrum; torch's fft_c2r_backward).

The n-d transforms are 1-d ones along each dim in turn, the normalisation applied by the last.

>>> import clgrad
>>> x = clgrad.tensor([1.0, 2.0, 3.0, 4.0])
>>> r2c(x, [0], [4], False, 1.0).tolist()
[[10.0, 0.0], [-2.0, 2.0], [-2.0, 0.0]]
>>> c2r(r2c(x, [0], [4], False, 1.0), [0], 4, True, 0.25).tolist()
[1.0, 2.0, 3.0, 4.0]
"""
import math

from .. import dtypes
from ..autograd.op import Op
from ..kernels.copy import full_raw
from ..kernels.fft import fft_raw, irfft_raw, rfft_raw
from .join import stack
from .shape import constant_pad_nd

NORMS = (None, "backward", "ortho", "forward")


def norm_scale(norm, n, forward):
    """The factor torch's `norm` puts on a transform of n points (forward: the sign -1 one)."""
    if norm not in NORMS:
        raise RuntimeError(f'Invalid normalization mode: "{norm}"')
    if norm == "ortho":
        return 1.0 / math.sqrt(n)
    if (norm == "forward") == forward:
        return 1.0 / n
    return 1.0


class C2C(Op):
    """The DFT of each row of pairs along dim -2 (sign + when `inverse`), times `scale`."""

    @staticmethod
    def forward(ctx, p, inverse, scale):
        ctx.inverse, ctx.scale = inverse, scale
        return fft_raw(p, inverse, scale)

    @staticmethod
    def backward(ctx, g):
        return C2C.apply(g, not ctx.inverse, ctx.scale), None, None

    @staticmethod
    def jvp(args, tangents, out):
        return C2C.apply(tangents[0], *args[1:])


class R2C(Op):
    """The DFT of real rows along dim -1 as pairs: n // 2 + 1 of them when `onesided`."""

    @staticmethod
    def forward(ctx, x, inverse, scale, onesided):
        ctx.inverse, ctx.scale, ctx.n = inverse, scale, x._shape[-1]
        return rfft_raw(x, inverse, scale, onesided)

    @staticmethod
    def backward(ctx, g):
        h = g.shape[-2]
        if h < ctx.n:
            g = constant_pad_nd(g, (0, 0, 0, ctx.n - h))
        return C2C.apply(g, not ctx.inverse, ctx.scale)[..., 0], None, None, None

    @staticmethod
    def jvp(args, tangents, out):
        return R2C.apply(tangents[0], *args[1:])


class C2R(Op):
    """The n real values whose DFT (sign + when `inverse`) is the Hermitian spectrum given by
    its first n // 2 + 1 pairs along dim -2, times `scale`."""

    @staticmethod
    def forward(ctx, p, n, inverse, scale):
        ctx.n, ctx.inverse, ctx.scale = n, inverse, scale
        return irfft_raw(p, n, inverse, scale)

    @staticmethod
    def backward(ctx, g):
        n = ctx.n
        gi = R2C.apply(g, not ctx.inverse, ctx.scale, True)
        h = n // 2 + 1
        if n - h > 0:                   # entries 1 .. n - h stand for two of the full spectrum
            twice = full_raw((n - h, 1), 1, gi.dtype, gi._storage.device)
            gi = gi * (constant_pad_nd(twice, (0, 0, 1, 2 * h - 1 - n)) + 1)
        return gi, None, None, None

    @staticmethod
    def jvp(args, tangents, out):
        return C2R.apply(tangents[0], *args[1:])


# ---- n-d transforms on pairs and real tensors -------------------------------------------------
def resize(t, dims, sizes):
    """t cut (narrow) or zero-padded (at the end) to sizes[i] along dims[i]."""
    pad = [0] * (2 * t.dim())
    padded = False
    for d, s in zip(dims, sizes):
        have = t.shape[d]
        if have > s:
            t = t.narrow(d, 0, s)
        elif have < s:
            pad[2 * (t.dim() - 1 - d) + 1] = s - have
            padded = True
    return constant_pad_nd(t, pad) if padded else t


def c2c(p, dims, inverse, scale):
    """The transforms of pairs p along its complex dims `dims` in turn (sign + when `inverse`),
    the last one times `scale`."""
    for i, d in enumerate(dims):
        q = p.movedim(d, -2)
        q = C2C.apply(q, inverse, scale if i == len(dims) - 1 else 1.0)
        p = q.movedim(-2, d)
    return p


def r2c(x, dims, sizes, inverse, scale, onesided=True):
    """The real x transformed along dims[-1] (onesided: n // 2 + 1 entries), then along the
    others, to pairs; x is first cut or padded to `sizes`."""
    x = resize(x, dims, sizes)
    last = dims[-1]
    p = R2C.apply(x.movedim(last, -1), inverse, scale if len(dims) == 1 else 1.0, onesided)
    p = p.movedim(-2, last)
    return c2c(p, dims[:-1], inverse, scale) if len(dims) > 1 else p


def c2r(p, dims, n, inverse, scale):
    """The pairs p transformed along dims[:-1], then from the first n // 2 + 1 entries of a
    Hermitian spectrum along dims[-1] to n real values; p is already cut or padded to size."""
    if len(dims) > 1:
        p = c2c(p, dims[:-1], inverse, 1.0)
    last = dims[-1]
    y = C2R.apply(p.movedim(last, -2), n, inverse, scale)
    return y.movedim(-1, last)


def real_pairs(x):
    """The real x as pairs with imaginary parts 0."""
    return stack([x, x.new_zeros(()).expand(x.shape)], -1)


def fft_dtype(x):
    """The real dtype torch computes the transforms of x in: float32 or float64 (integers and
    bools promote to the default dtype), as torch's CPU transforms; 16-bit floats are refused."""
    dt = x.dtype
    if dt.kind in "biu":
        return dtypes.get_default_dtype()
    if dt not in (dtypes.float32, dtypes.float64):
        raise RuntimeError(f"Unsupported dtype {dtypes.TORCH_NAMES.get(dt, dt.name)}")
    return dt
