"""Max unpooling, power-average (LP) pooling and torch's `*_with_indices` names for max pooling
with indices. max_unpool scatters each plane's values to the positions its indices name (a
differentiable scatter: the gradient gathers from the same positions); lp_pool is
(sum over the window of x^p)^(1/p), through avg_pool as torch computes it.
"""
from .. import dtypes
from ..ops.creation import zeros
from ..ops.join import stack

__all__ = ["max_unpool1d", "max_unpool2d", "max_unpool3d", "lp_pool1d", "lp_pool2d", "lp_pool3d",
           "max_pool1d_with_indices", "max_pool2d_with_indices", "max_pool3d_with_indices",
           "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices",
           "adaptive_max_pool3d_with_indices"]


def _F():
    from . import functional
    return functional


def _ntuple(v, n):
    return tuple(v) if isinstance(v, (list, tuple)) else (v,) * n


# ---- max pooling that always returns indices -----------------------------------------------------
def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=False):
    """max_pool1d's (output, indices), whatever return_indices says (torch's name for it).

    >>> import clgrad, clgrad.nn.functional as F
    >>> out, idx = F.max_pool1d_with_indices(clgrad.tensor([[[1.0, 3.0, 2.0, 0.0]]]), 2)
    >>> out.tolist(), idx.tolist()
    ([[[3.0, 2.0]]], [[[1, 2]]])
    """
    return _F().max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode=ceil_mode,
                           return_indices=True)


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=False):
    """max_pool2d's (output, indices into each flattened H x W plane).

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.max_pool2d_with_indices(clgrad.arange(16.0).reshape(1, 1, 4, 4), 2)[1].tolist()
    [[[[5, 7], [13, 15]]]]
    """
    return _F().max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode=ceil_mode,
                           return_indices=True)


def max_pool3d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=False):
    """max_pool3d's (output, indices into each flattened D x H x W volume).

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.max_pool3d_with_indices(clgrad.arange(8.0).reshape(1, 1, 2, 2, 2), 2)[1].tolist()
    [[[[[7]]]]]
    """
    return _F().max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode=ceil_mode,
                           return_indices=True)


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=False):
    """adaptive_max_pool1d's (output, indices).

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.adaptive_max_pool1d_with_indices(clgrad.tensor([[[1.0, 3.0, 2.0]]]), 1)[1].tolist()
    [[[1]]]
    """
    return _F().adaptive_max_pool1d(input, output_size, return_indices=True)


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=False):
    """adaptive_max_pool2d's (output, indices).

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.adaptive_max_pool2d_with_indices(clgrad.arange(4.0).reshape(1, 1, 2, 2), 1)[1].tolist()
    [[[[3]]]]
    """
    return _F().adaptive_max_pool2d(input, output_size, return_indices=True)


def adaptive_max_pool3d_with_indices(input, output_size, return_indices=False):
    """adaptive_max_pool3d's (output, indices).

    >>> import clgrad, clgrad.nn.functional as F
    >>> x = clgrad.arange(8.0).reshape(1, 2, 2, 2)
    >>> F.adaptive_max_pool3d_with_indices(x, 1)[1].tolist()
    [[[[7]]]]
    """
    return _F().adaptive_max_pool3d(input, output_size, return_indices=True)


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
    k = _ntuple(kernel_size, nd)
    s = _ntuple(stride, nd) if stride is not None else k
    p = _ntuple(padding, nd)
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
    F = _F()
    return (out.sign() * F.relu(out.abs())).mul(window).pow(1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """(sum over each window of x^p)^(1/p), p = norm_type; stride defaults to kernel_size.

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.lp_pool1d(clgrad.tensor([[[3.0, 4.0, 1.0, 0.0]]]), 2, 2).tolist()
    [[[5.0, 1.0]]]
    """
    F = _F()
    out = F.avg_pool1d(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    return _lp_finish(out, norm_type, kernel_size)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """2-d power-average pooling: (sum over each kh x kw window of x^p)^(1/p).

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.lp_pool2d(clgrad.ones(1, 1, 4, 4), 1, 2).tolist()
    [[[[4.0, 4.0], [4.0, 4.0]]]]
    """
    F = _F()
    kh, kw = _ntuple(kernel_size, 2)
    out = F.avg_pool2d(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    return _lp_finish(out, norm_type, kh * kw)


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """3-d power-average pooling: (sum over each kd x kh x kw window of x^p)^(1/p).

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.lp_pool3d(clgrad.ones(1, 1, 2, 2, 2), 1, 2).tolist()
    [[[[[8.0]]]]]
    """
    F = _F()
    kd, kh, kw = _ntuple(kernel_size, 3)
    out = F.avg_pool3d(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    return _lp_finish(out, norm_type, kd * kh * kw)
