"""Max unpooling, power-average (LP) pooling, fractional max pooling and torch's
`*_with_indices` names for max pooling with indices. max_unpool scatters each plane's values to
the positions its indices name (a differentiable scatter: the gradient gathers from the same
positions); lp_pool is (sum over the window of x^p)^(1/p), through avg_pool as torch computes
it. Fractional max pooling draws its window starts on the host from `_random_samples` (torch's
interval rule) and takes each window's max by a gather: its gradient flows back through the
same gather.
"""
import numpy as np

from .. import dtypes
from .creation import rand, tensor, zeros
from .join import stack
from .window_args import _ntuple
from .activation import relu
from .pool import (adaptive_max_pool1d, adaptive_max_pool2d, avg_pool1d, avg_pool2d, max_pool1d,
                   max_pool2d)
from .pool3d import adaptive_max_pool3d, avg_pool3d, max_pool3d

__all__ = ["max_unpool1d", "max_unpool2d", "max_unpool3d", "lp_pool1d", "lp_pool2d", "lp_pool3d",
           "max_pool1d_with_indices", "max_pool2d_with_indices", "max_pool3d_with_indices",
           "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices",
           "adaptive_max_pool3d_with_indices", "fractional_max_pool2d",
           "fractional_max_pool2d_with_indices", "fractional_max_pool3d",
           "fractional_max_pool3d_with_indices"]



# ---- max pooling that always returns indices -----------------------------------------------------
def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=False):
    """max_pool1d's (output, indices), whatever return_indices says (torch's name for it).

    >>> import clgrad, clgrad.nn.functional as F
    >>> out, idx = F.max_pool1d_with_indices(clgrad.tensor([[[1.0, 3.0, 2.0, 0.0]]]), 2)
    >>> out.tolist(), idx.tolist()
    ([[[3.0, 2.0]]], [[[1, 2]]])
    """
    return max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode=ceil_mode,
                           return_indices=True)


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=False):
    """max_pool2d's (output, indices into each flattened H x W plane).

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.max_pool2d_with_indices(clgrad.arange(16.0).reshape(1, 1, 4, 4), 2)[1].tolist()
    [[[[5, 7], [13, 15]]]]
    """
    return max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode=ceil_mode,
                           return_indices=True)


def max_pool3d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=False):
    """max_pool3d's (output, indices into each flattened D x H x W volume).

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.max_pool3d_with_indices(clgrad.arange(8.0).reshape(1, 1, 2, 2, 2), 2)[1].tolist()
    [[[[[7]]]]]
    """
    return max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode=ceil_mode,
                           return_indices=True)


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=False):
    """adaptive_max_pool1d's (output, indices).

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.adaptive_max_pool1d_with_indices(clgrad.tensor([[[1.0, 3.0, 2.0]]]), 1)[1].tolist()
    [[[1]]]
    """
    return adaptive_max_pool1d(input, output_size, return_indices=True)


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=False):
    """adaptive_max_pool2d's (output, indices).

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.adaptive_max_pool2d_with_indices(clgrad.arange(4.0).reshape(1, 1, 2, 2), 1)[1].tolist()
    [[[[3]]]]
    """
    return adaptive_max_pool2d(input, output_size, return_indices=True)


def adaptive_max_pool3d_with_indices(input, output_size, return_indices=False):
    """adaptive_max_pool3d's (output, indices).

    >>> import clgrad, clgrad.nn.functional as F
    >>> x = clgrad.arange(8.0).reshape(1, 2, 2, 2)
    >>> F.adaptive_max_pool3d_with_indices(x, 1)[1].tolist()
    [[[[7]]]]
    """
    return adaptive_max_pool3d(input, output_size, return_indices=True)


# ---- max unpooling -------------------------------------------------------------------------------
def _unpool_output_size(input, kernel_size, stride, padding, output_size):
    nd = len(kernel_size)
    default = [(input.shape[-nd + d] - 1) * stride[d] + kernel_size[d] - 2 * padding[d]
               for d in range(nd)]
    if output_size is None:
        return default
    output_size = list(output_size)
    if len(output_size) == nd + 2:
        output_size = output_size[2:]
    if len(output_size) != nd:
        raise ValueError(f"output_size should be a sequence containing {nd} or {nd + 2} "
                         f"elements, but it has a length of '{len(output_size)}'")
    for d in range(nd):
        lo, hi = default[d] - stride[d], default[d] + stride[d]
        if not lo < output_size[d] < hi:
            raise ValueError(f'invalid output_size "{tuple(output_size)}" (dim {d} must be '
                             f'between {lo} and {hi})')
    return output_size


def _max_unpool(nd, input, indices, kernel_size, stride, padding, output_size):
    op = f"max_unpool{nd}d"
    if input.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(f"{op}: Expected {nd + 1}D or {nd + 2}D (batch mode) tensor for "
                           f"input, got {input.dim()}D with shape {tuple(input.shape)}")
    if indices.shape != input.shape:
        raise RuntimeError(f"{op}: Expected shape of indices to be same as that of the input "
                           f"tensor ({tuple(input.shape)}) but got indices tensor with shape: "
                           f"{tuple(indices.shape)}")
    if indices.dtype != dtypes.int64:
        raise RuntimeError(f"{op}: elements in indices should be type int64 but got: "
                           f"{indices.dtype}")
    k = _ntuple(nd)(kernel_size)
    s = _ntuple(nd)(stride) if stride is not None else k
    p = _ntuple(nd)(padding)
    size = [int(v) for v in _unpool_output_size(input, k, s, p, output_size)]
    batched = input.dim() == nd + 2
    x = input if batched else input.unsqueeze(0)
    idx = indices if batched else indices.unsqueeze(0)
    N, C = x.shape[0], x.shape[1]
    plane = 1
    for v in size:
        plane *= v
    if x.numel():
        # torch checks the indices (one host read); an out-of-range scatter must not happen
        lo, hi = stack([idx.min(), idx.max()]).tolist()
        if lo < 0 or hi >= plane:
            bad = lo if lo < 0 else hi
            raise RuntimeError(f"Found an invalid max index: {bad} (output volumes are of size "
                               f"{'x'.join(str(v) for v in size)})")
    out = zeros((N, C, plane), dtype=x.dtype, device=x.device)
    out = out.scatter(2, idx.reshape(N, C, -1), x.reshape(N, C, -1)).reshape(N, C, *size)
    return out if batched else out.squeeze(0)


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of max_pool1d: each value goes to the position its index names in a
    zero output of length (L - 1) * stride - 2 * padding + kernel_size (or output_size).

    >>> import clgrad, clgrad.nn.functional as F
    >>> out, idx = F.max_pool1d(clgrad.tensor([[[1.0, 3.0, 2.0, 0.0]]]), 2, return_indices=True)
    >>> F.max_unpool1d(out, idx, 2).tolist()
    [[[0.0, 3.0, 2.0, 0.0]]]
    """
    return _max_unpool(1, input, indices, kernel_size, stride, padding, output_size)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of max_pool2d (indices into each flattened H x W plane).

    >>> import clgrad, clgrad.nn.functional as F
    >>> out, idx = F.max_pool2d(clgrad.arange(16.0).reshape(1, 1, 4, 4), 2, return_indices=True)
    >>> F.max_unpool2d(out, idx, 2).reshape(-1).tolist()[4:8]
    [0.0, 5.0, 0.0, 7.0]
    """
    return _max_unpool(2, input, indices, kernel_size, stride, padding, output_size)


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of max_pool3d (indices into each flattened D x H x W volume).

    >>> import clgrad, clgrad.nn.functional as F
    >>> out, idx = F.max_pool3d(clgrad.arange(8.0).reshape(1, 1, 2, 2, 2), 2, return_indices=True)
    >>> F.max_unpool3d(out, idx, 2).reshape(-1).tolist()
    [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 7.0]
    """
    return _max_unpool(3, input, indices, kernel_size, stride, padding, output_size)


# ---- power-average pooling -----------------------------------------------------------------------
def _lp_finish(out, norm_type, window):
    # torch's formula: sign(out) * relu(|out|) keeps the gradient at 0 finite
    return (out.sign() * relu(out.abs())).mul(window).pow(1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """(sum over each window of x^p)^(1/p), p = norm_type; stride defaults to kernel_size.

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.lp_pool1d(clgrad.tensor([[[3.0, 4.0, 1.0, 0.0]]]), 2, 2).tolist()
    [[[5.0, 1.0]]]
    """
    out = avg_pool1d(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    return _lp_finish(out, norm_type, kernel_size)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """2-d power-average pooling: (sum over each kh x kw window of x^p)^(1/p).

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.lp_pool2d(clgrad.ones(1, 1, 4, 4), 1, 2).tolist()
    [[[[4.0, 4.0], [4.0, 4.0]]]]
    """
    kh, kw = _ntuple(2)(kernel_size)
    out = avg_pool2d(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    return _lp_finish(out, norm_type, kh * kw)


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """3-d power-average pooling: (sum over each kd x kh x kw window of x^p)^(1/p).

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.lp_pool3d(clgrad.ones(1, 1, 2, 2, 2), 1, 2).tolist()
    [[[[[8.0]]]]]
    """
    kd, kh, kw = _ntuple(3)(kernel_size)
    out = avg_pool3d(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    return _lp_finish(out, norm_type, kd * kh * kw)


# ---- fractional max pooling ----------------------------------------------------------------------
def _intervals(sample, n_in, n_out, pool, dt):
    # ATen's generate_intervals, in the input's precision: the window starts of one dim
    seq = np.empty(sample.shape + (n_out,), np.int64)
    if n_out > 1:
        alpha = dt(n_in - pool) / dt(n_out - 1)
        i = np.arange(n_out - 1, dtype=dt)
        seq[..., :-1] = ((i + sample[..., None].astype(dt)) * alpha).astype(np.int64) - \
            (sample[..., None].astype(dt) * alpha).astype(np.int64)
    seq[..., -1] = n_in - pool
    return seq


def _fractional_max_pool(nd, input, kernel_size, output_size, output_ratio, _random_samples):
    op = f"fractional_max_pool{nd}d"
    if input.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(f"{op}(): Expected {nd + 1}D or {nd + 2}D tensor, but got: "
                           f"{tuple(input.shape)}")
    if output_size is None and output_ratio is None:
        raise ValueError(f"{op} requires specifying either an output_size or an output_ratio")
    pool = _ntuple(nd)(kernel_size)
    if output_size is None:
        ratio = _ntuple(nd)(output_ratio)
        output_size = [int(input.size(-nd + d) * ratio[d]) for d in range(nd)]
    out_size = [int(v) for v in _ntuple(nd)(output_size)]
    batched = input.dim() == nd + 2
    x = input if batched else input.unsqueeze(0)
    N, C, in_size = x.shape[0], x.shape[1], list(x.shape[2:])
    names = ("time", "height", "width")[3 - nd:]
    for d in range(nd):
        if out_size[d] + pool[d] - 1 > in_size[d]:
            raise RuntimeError(f"{op}(): pool {names[d]} {pool[d]} too large relative to input "
                               f"{names[d]} {in_size[d]}")
    if _random_samples is None:
        _random_samples = rand(N, C, nd, dtype=x.dtype, device=x.device)
    if tuple(_random_samples.shape) != (N, C, nd):
        raise RuntimeError(f"{op}(): expected _random_samples of shape {(N, C, nd)}, got "
                           f"{tuple(_random_samples.shape)}")
    dt = np.float64 if x.dtype == dtypes.float64 else np.float32
    samples = _random_samples.numpy()
    # torch's sample order: 2-d (W, H), 3-d (T, H, W)
    which = (1, 0) if nd == 2 else (0, 1, 2)
    seqs = [_intervals(samples[..., which[d]], in_size[d], out_size[d], pool[d], dt)
            for d in range(nd)]
    # the flat input position of every element of every window: (N, C, *out, *pool)
    flat = np.zeros((N, C) + tuple(out_size) + tuple(pool), np.int64)
    stride = 1
    for d in reversed(range(nd)):
        shape = [N, C] + [1] * (2 * nd)
        shape[2 + d] = out_size[d]
        start = seqs[d].reshape(shape)
        shape = [1, 1] + [1] * (2 * nd)
        shape[2 + nd + d] = pool[d]
        flat = flat + (start + np.arange(pool[d]).reshape(shape)) * stride
        stride *= in_size[d]
    window = int(np.prod(pool))
    idx = tensor(flat.reshape(N, C, -1), device=x.device)
    vals = x.reshape(N, C, -1).gather(2, idx).reshape(N, C, *out_size, window)
    out, arg = vals.max(-1)
    indices = idx.reshape(N, C, *out_size, window).gather(-1, arg.unsqueeze(-1)).squeeze(-1)
    if not batched:
        out, indices = out.squeeze(0), indices.squeeze(0)
    return out, indices


def fractional_max_pool2d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices=False, _random_samples=None):
    """fractional_max_pool2d's (output, indices).

    >>> import clgrad, clgrad.nn.functional as F
    >>> x = clgrad.arange(25.0).reshape(1, 1, 5, 5)
    >>> s = clgrad.tensor([[[0.3, 0.7]]])
    >>> F.fractional_max_pool2d_with_indices(x, 2, (1, 3), _random_samples=s)[1].tolist()
    [[[[21, 22, 24]]]]
    """
    return _fractional_max_pool(2, input, kernel_size, output_size, output_ratio,
                                _random_samples)


def fractional_max_pool2d(input, kernel_size, output_size=None, output_ratio=None,
                          return_indices=False, _random_samples=None):
    """Fractional max pooling (Graham): kH x kW max pooling over windows whose starts advance by
    pseudo-random fractional steps so that the output is output_size (or output_ratio times the
    input). `_random_samples` (N, C, 2), in [0, 1), fixes the steps (torch's rule, drawn with
    clgrad.rand if not given); return_indices gives flat H x W indices as max_pool2d does.

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.fractional_max_pool2d(clgrad.randn(2, 3, 9, 9), 3, output_ratio=0.5).shape
    clgrad.Size([2, 3, 4, 4])
    """
    out = fractional_max_pool2d_with_indices(input, kernel_size, output_size, output_ratio,
                                             return_indices, _random_samples)
    return out if return_indices else out[0]


def fractional_max_pool3d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices=False, _random_samples=None):
    """fractional_max_pool3d's (output, indices).

    >>> import clgrad, clgrad.nn.functional as F
    >>> x = clgrad.arange(27.0).reshape(1, 1, 3, 3, 3)
    >>> F.fractional_max_pool3d_with_indices(x, 2, 1)[1].tolist()
    [[[[[26]]]]]
    """
    return _fractional_max_pool(3, input, kernel_size, output_size, output_ratio,
                                _random_samples)


def fractional_max_pool3d(input, kernel_size, output_size=None, output_ratio=None,
                          return_indices=False, _random_samples=None):
    """3-d fractional max pooling; `_random_samples` is (N, C, 3).

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.fractional_max_pool3d(clgrad.randn(1, 2, 5, 5, 5), 2, output_size=3).shape
    clgrad.Size([1, 2, 3, 3, 3])
    """
    out = fractional_max_pool3d_with_indices(input, kernel_size, output_size, output_ratio,
                                             return_indices, _random_samples)
    return out if return_indices else out[0]
