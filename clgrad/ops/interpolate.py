"""F.interpolate (and F.upsample*): resampling of the spatial dimensions, torch's modes and
coordinate rules, separable: one dimension at a time, each a weighted sum of index_select gathers
(so the gradient is index_select's, a scatter-add onto the source positions).

Source coordinates, as torch computes them for output position j of a dimension of `n_in`
inputs: nearest floor(j * s), nearest-exact floor((j + 0.5) * s); linear and cubic modes
j * (n_in - 1) / (n_out - 1) with align_corners, else (j + 0.5) * s - 0.5 (clamped at 0 for the
linear modes), where s is 1 / scale_factor when a scale factor is given (and not recomputed),
else n_in / n_out.
"""
import math

import numpy as np

from .. import dtypes
from .creation import tensor as _tensor
from .pool import adaptive_avg_pool2d

__all__ = ["interpolate", "upsample", "upsample_nearest", "upsample_bilinear"]

_LINEAR = {"linear": 3, "bilinear": 4, "trilinear": 5}
_CUBIC_A = -0.75


def _index(values, device):
    return _tensor(np.asarray(values, dtype=np.int64), device=device)


def _weights(values, like):
    w = _tensor(np.asarray(values, dtype=np.float64), device=like.device).to(like.dtype)
    return w


def _scale(n_in, n_out, factor, align_corners, cubic_or_linear):
    if cubic_or_linear and align_corners:
        return (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
    if factor is not None:
        return 1.0 / factor
    return n_in / n_out


def _along(x, d, idx, w):
    """sum_k x.index_select(d, idx[k]) * w[k], w broadcast along dimension d."""
    shape = [1] * x.dim()
    shape[d] = len(idx[0])
    out = None
    for i, wk in zip(idx, w):
        term = x.index_select(d, _index(i, x.device))
        if wk is not None:
            term = term * _weights(wk, x).reshape(shape)
        out = term if out is None else out + term
    return out


def _resample_dim(x, d, n_out, factor, mode, align_corners):
    n_in = x.shape[d]
    j = np.arange(n_out, dtype=np.float64)
    if mode in ("nearest", "nearest-exact"):
        s = _scale(n_in, n_out, factor, False, False)
        src = np.floor((j + (0.5 if mode == "nearest-exact" else 0.0)) * s)
        return _along(x, d, [np.minimum(src.astype(np.int64), n_in - 1)], [None])
    cubic = mode == "bicubic"
    s = _scale(n_in, n_out, factor, align_corners, True)
    src = j * s if align_corners else (j + 0.5) * s - 0.5
    if not cubic:
        src = np.maximum(src, 0.0)
        i0 = np.minimum(np.floor(src).astype(np.int64), n_in - 1)
        i1 = np.minimum(i0 + 1, n_in - 1)
        lam = src - i0
        return _along(x, d, [i0, i1], [1.0 - lam, lam])
    f = np.floor(src)
    t = src - f
    A = _CUBIC_A

    def near(u):                                    # |u| <= 1
        return ((A + 2) * u - (A + 3)) * u * u + 1

    def far(u):                                     # 1 < |u| < 2
        return ((A * u - 5 * A) * u + 8 * A) * u - 4 * A
    w = [far(t + 1), near(t), near(1 - t), far(2 - t)]
    idx = [np.clip(f.astype(np.int64) - 1 + k, 0, n_in - 1) for k in range(4)]
    return _along(x, d, idx, w)


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    """Resize the spatial dimensions of [N, C, *spatial] (1 to 3 of them) to `size`, or by
    `scale_factor`, with torch's modes: 'nearest', 'nearest-exact', 'linear', 'bilinear',
    'bicubic', 'trilinear' and 'area'.

    >>> import clgrad, clgrad.nn.functional as F
    >>> x = clgrad.tensor([[[1.0, 2.0]]])
    >>> F.interpolate(x, scale_factor=2).tolist(), F.interpolate(x, size=3, mode="linear",
    ...                                                          align_corners=True).tolist()
    ([[[1.0, 1.0, 2.0, 2.0]]], [[[1.0, 1.5, 2.0]]])
    """
    nd = input.dim() - 2
    if nd < 1 or nd > 3:
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported "
                                  f"(got {input.dim()}D) for the modes: nearest | linear | "
                                  f"bilinear | bicubic | trilinear | area | nearest-exact "
                                  f"(got {mode})")
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating modes: "
                             "linear | bilinear | bicubic | trilinear")
    elif mode in _LINEAR or mode == "bicubic":
        want = _LINEAR.get(mode, 4)
        if input.dim() != want:
            raise NotImplementedError(f"Got {input.dim()}D input, but {mode} mode needs "
                                      f"{want}D input")
        align_corners = bool(align_corners)
    else:
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported "
                                  f"(got {input.dim()}D) for the modes: nearest | linear | "
                                  f"bilinear | bicubic | trilinear | area | nearest-exact "
                                  f"(got {mode})")
    if antialias:
        raise NotImplementedError("interpolate: antialias=True is not built in clgrad")
    if not input.dtype.is_floating_point and mode != "nearest":
        raise RuntimeError(f"interpolate: {mode} mode needs a floating-point input, got "
                           f"{input.dtype}")
    spatial = tuple(input.shape[2:])
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        out = tuple(size) if isinstance(size, (list, tuple)) else (size,) * nd
        if len(out) != nd:
            raise ValueError(f"Input and output must have the same number of spatial dimensions, "
                             f"but got input with spatial dimensions of {list(spatial)} and output "
                             f"size of {list(out)}. Please provide input tensor in (N, C, d1, d2, "
                             f"...,dK) format and output size in (o1, o2, ...,oK) format.")
        factors = [None] * nd
    elif scale_factor is not None:
        factors = list(scale_factor) if isinstance(scale_factor, (list, tuple)) else \
            [scale_factor] * nd
        if len(factors) != nd:
            raise ValueError(f"Input and scale_factor must have the same number of spatial "
                             f"dimensions, but got input with spatial dimensions of "
                             f"{list(spatial)} and scale_factor of shape {factors}.")
        out = tuple(int(math.floor(n * float(f))) for n, f in zip(spatial, factors))
        if recompute_scale_factor:
            factors = [None] * nd
    else:
        raise ValueError("either size or scale_factor should be defined")
    if mode == "area":
        if nd == 1:
            return adaptive_avg_pool2d(input.unsqueeze(-2), (1, out[0])).squeeze(-2)
        if nd == 2:
            return adaptive_avg_pool2d(input, out)
        raise NotImplementedError("interpolate: mode 'area' of 5-D input needs adaptive "
                                  "average pooling in 3-D, which clgrad does not have yet")
    x = input
    if not x.dtype.is_floating_point and mode == "nearest":
        for k in range(nd):
            if out[k] != x.shape[2 + k]:
                x = _resample_dim(x, 2 + k, out[k], factors[k], mode, align_corners)
        return x if x is not input else input.clone()
    for k in range(nd):
        x = _resample_dim(x, 2 + k, out[k], factors[k], mode, align_corners)
    return x


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """The deprecated name of interpolate.

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.upsample(clgrad.ones(1, 1, 2), scale_factor=2).shape
    clgrad.Size([1, 1, 4])
    """
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    """interpolate(mode='nearest').

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.upsample_nearest(clgrad.ones(1, 1, 2, 2), scale_factor=2).shape
    clgrad.Size([1, 1, 4, 4])
    """
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    """interpolate(mode='bilinear', align_corners=True).

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.upsample_bilinear(clgrad.ones(1, 1, 2, 2), size=3).shape
    clgrad.Size([1, 1, 3, 3])
    """
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)
