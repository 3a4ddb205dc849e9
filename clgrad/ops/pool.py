"""The 2-d pooling functions (kernels in clgrad.ops.conv; integer inputs through
int_max_pool2d / int_avg_pool2d), the 1-d ones, adaptive max pooling, the shuffles and embedding_bag (a pooling
of embeddings), torch's arguments and results. The 1-d
ones run the 2-d kernels on a height-1 view ([N, C, L] -> [N, C, 1, L]); adaptive max pooling
takes the max of each of torch's adaptive windows (start floor(i * L / out), end
ceil((i + 1) * L / out)), one window per output position, so it suits small outputs.
"""
import math

from . import conv as _conv
from .join import stack, cat
from ..tensor import Tensor
from .creation import full, tensor as _tensor
from .pointwise import where
from .. import dtypes
from .embedding import embedding

__all__ = ["max_pool2d", "avg_pool2d", "adaptive_avg_pool2d",
           "max_pool1d", "avg_pool1d", "adaptive_avg_pool1d", "adaptive_max_pool1d",
           "adaptive_max_pool2d", "pixel_shuffle", "pixel_unshuffle", "channel_shuffle",
           "native_channel_shuffle", "embedding_bag"]



def _one(v, name):
    if isinstance(v, (list, tuple)):
        if len(v) != 1:
            raise ValueError(f"{name} must be an int or a 1-tuple, got {v}")
        return v[0]
    return v


def _check_1d(op, input):
    if input.dim() not in (2, 3):
        raise RuntimeError(f"{op}: Expected 2D or 3D (batch mode) tensor for input, got "
                           f"{input.dim()}D with shape {tuple(input.shape)}")


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """2-D max pooling (integer tensors too, without gradient).

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.max_pool2d(clgrad.arange(16).reshape(1, 1, 4, 4), 2).reshape(-1).tolist()
    [5, 7, 13, 15]
    """
    def pool(x):
        return _conv.max_pool2d(x, kernel_size, stride, padding, dilation, ceil_mode,
                                return_indices)
    if isinstance(input, Tensor) and not input.dtype.is_floating_point:
        return int_max_pool2d(input, pool, return_indices)
    return pool(input)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """2-D average pooling (of integer tensors: the mean truncated toward zero, as torch's).

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.avg_pool2d(clgrad.arange(16).reshape(1, 1, 4, 4), 2).reshape(-1).tolist()
    [2, 4, 10, 12]
    """
    def pool(x):
        return _conv.avg_pool2d(x, kernel_size, stride, padding, ceil_mode, count_include_pad,
                                divisor_override)
    if isinstance(input, Tensor) and not input.dtype.is_floating_point:
        return int_avg_pool2d(input, pool)
    return pool(input)


def adaptive_avg_pool2d(input, output_size):
    """2-D average pooling to a given output size."""
    return _conv.adaptive_avg_pool2d(input, output_size)


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """1-D max pooling over [N, C, L] or [C, L].

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.max_pool1d(clgrad.tensor([[[1.0, 3.0, 2.0, 0.0]]]), 2).tolist()
    [[[3.0, 2.0]]]
    """
    _check_1d("max_pool1d", input)
    k = _one(kernel_size, "kernel_size")
    s = k if stride is None or stride == [] else _one(stride, "stride")
    out = max_pool2d(input.unsqueeze(-2), (1, k), (1, s), (0, _one(padding, "padding")),
                          (1, _one(dilation, "dilation")), ceil_mode, return_indices)
    if not return_indices and not input.dtype.is_floating_point:
        # torch's max_pool1d without indices has a kernel for floats only (it checks the
        # window first, which the 2-d pooling above did); with indices it is max_pool2d's
        refuse("max_pool1d", input)
    if return_indices:
        return out[0].squeeze(-2), out[1].squeeze(-2)
    return out.squeeze(-2)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True):
    """1-D average pooling over [N, C, L] or [C, L].

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.avg_pool1d(clgrad.tensor([[[1.0, 3.0, 2.0, 0.0]]]), 2).tolist()
    [[[2.0, 1.0]]]
    """
    _check_1d("avg_pool1d", input)
    k = _one(kernel_size, "kernel_size")
    s = k if stride is None or stride == [] else _one(stride, "stride")
    return avg_pool2d(input.unsqueeze(-2), (1, k), (1, s), (0, _one(padding, "padding")),
                           ceil_mode, count_include_pad).squeeze(-2)


def adaptive_avg_pool1d(input, output_size):
    """1-D average pooling to `output_size` positions.

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.adaptive_avg_pool1d(clgrad.tensor([[[1.0, 3.0, 2.0, 0.0]]]), 1).tolist()
    [[[1.5]]]
    """
    _check_1d("adaptive_avg_pool1d", input)
    return adaptive_avg_pool2d(input.unsqueeze(-2),
                                    (1, _one(output_size, "output_size"))).squeeze(-2)


def _windows(n, out):
    return [(math.floor(i * n / out), math.ceil((i + 1) * n / out)) for i in range(out)]


def adaptive_max_pool1d(input, output_size, return_indices=False):
    """The max of each of torch's adaptive windows along the last dimension.

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.adaptive_max_pool1d(clgrad.tensor([[[1.0, 3.0, 2.0, 0.0, 5.0]]]), 2).tolist()
    [[[3.0, 5.0]]]
    """
    _check_1d("adaptive_max_pool1d", input)
    return _adaptive_max(input, (_one(output_size, "output_size"),), return_indices)


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """The max of each of torch's adaptive windows over the last two dimensions (None keeps
    a size).

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.adaptive_max_pool2d(clgrad.arange(16.0).reshape(1, 1, 4, 4), 2).tolist()
    [[[[5.0, 7.0], [13.0, 15.0]]]]
    """
    if input.dim() not in (3, 4):
        raise RuntimeError(f"adaptive_max_pool2d(): Expected 3D or 4D tensor, but got "
                           f"{tuple(input.shape)}")
    size = output_size if isinstance(output_size, (list, tuple)) else (output_size,) * 2
    size = tuple(input.shape[-2 + i] if s is None else s for i, s in enumerate(size))
    return _adaptive_max(input, size, return_indices)


def _adaptive_max(input, size, return_indices):
    nd = len(size)
    spatial = tuple(input.shape[-nd:])
    if any(n == 0 for n in spatial) or any(s <= 0 for s in size):
        raise RuntimeError(f"adaptive_max_pool{nd}d(): expected a non-empty input and a "
                           f"positive output size, got input {tuple(input.shape)} and output "
                           f"size {size}")
    if not input.dtype.is_floating_point:
        refuse("adaptive_max_pool2d", input)
    lead = tuple(input.shape[:-nd])
    flat_cols = []
    idx_cols = []
    wins = [_windows(n, s) for n, s in zip(spatial, size)]
    if nd == 1:
        cells = [((a, b),) for a, b in wins[0]]
    else:
        cells = [(r, c) for r in wins[0] for c in wins[1]]
    for cell in cells:
        part = input
        for k, (a, b) in enumerate(cell):
            part = part.narrow(input.dim() - nd + k, a, b - a)
        part = part.reshape(lead + (-1,))
        if return_indices:
            val, arg = part.max(-1)
            widths = [b - a for a, b in cell]
            # the position of the max within the whole input plane, as torch reports it
            if nd == 1:
                pos = arg + cell[0][0]
            else:
                r = arg // widths[1] + cell[0][0]
                pos = r * spatial[1] + arg % widths[1] + cell[1][0]
            flat_cols.append(val)
            idx_cols.append(pos)
        else:
            flat_cols.append(part.amax(-1))
    out = stack(flat_cols, -1).reshape(lead + tuple(size))
    if return_indices:
        return out, stack(idx_cols, -1).reshape(lead + tuple(size))
    return out


def pixel_shuffle(input, upscale_factor):
    """[*, C r^2, H, W] -> [*, C, H r, W r].

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.pixel_shuffle(clgrad.arange(4.0).reshape(1, 4, 1, 1), 2).tolist()
    [[[[0.0, 1.0], [2.0, 3.0]]]]
    """
    r = upscale_factor
    if input.dim() < 3 or input.shape[-3] % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be "
                           f"divisible by the square of upscale_factor, but input.size(-3)="
                           f"{input.shape[-3] if input.dim() >= 3 else None} is not divisible "
                           f"by {r * r}")
    *lead, C, H, W = input.shape
    x = input.reshape(tuple(lead) + (C // (r * r), r, r, H, W))
    n = len(lead)
    x = x.permute(*range(n), n, n + 3, n + 1, n + 4, n + 2)
    return x.reshape(tuple(lead) + (C // (r * r), H * r, W * r))


def pixel_unshuffle(input, downscale_factor):
    """[*, C, H r, W r] -> [*, C r^2, H, W], the inverse of pixel_shuffle.

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.pixel_unshuffle(clgrad.arange(4.0).reshape(1, 1, 2, 2), 2).reshape(-1).tolist()
    [0.0, 1.0, 2.0, 3.0]
    """
    r = downscale_factor
    if input.dim() < 3 or input.shape[-1] % r or input.shape[-2] % r:
        raise RuntimeError(f"pixel_unshuffle expects height and width to be divisible by "
                           f"downscale_factor, but input.size(-2)={input.shape[-2]} and "
                           f"input.size(-1)={input.shape[-1]} with downscale_factor={r}")
    *lead, C, H, W = input.shape
    n = len(lead)
    x = input.reshape(tuple(lead) + (C, H // r, r, W // r, r))
    x = x.permute(*range(n), n, n + 2, n + 4, n + 1, n + 3)
    return x.reshape(tuple(lead) + (C * r * r, H // r, W // r))


def channel_shuffle(input, groups):
    """[N, g k, *] -> the channels regrouped as [N, k g, *] (ShuffleNet's shuffle).

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.channel_shuffle(clgrad.arange(4.0).reshape(1, 4, 1), 2).reshape(-1).tolist()
    [0.0, 2.0, 1.0, 3.0]
    """
    N, C = input.shape[0], input.shape[1]
    if groups <= 0 or C % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {C} channels "
                           f"and {groups} groups.")
    rest = tuple(input.shape[2:])
    return input.reshape((N, groups, C // groups) + rest).transpose(1, 2).reshape(
        (N, C) + rest)


def native_channel_shuffle(input, groups):
    """channel_shuffle (torch's native entry point).

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.native_channel_shuffle(clgrad.arange(4.0).reshape(1, 4, 1, 1), 2).reshape(-1).tolist()
    [0.0, 2.0, 1.0, 3.0]
    """
    return channel_shuffle(input, groups)


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False,
                  mode="mean", sparse=False, per_sample_weights=None, include_last_offset=False,
                  padding_idx=None):
    """The sum, mean or max of the embeddings of each bag of indices: the rows of a 2-D input,
    or the segments of a 1-D input that `offsets` starts. Indices equal to padding_idx are left
    out; an empty bag gives zeros. per_sample_weights scales each embedding ('sum' only).

    >>> import clgrad, clgrad.nn.functional as F
    >>> w = clgrad.tensor([[1.0, 1.0], [2.0, 0.0], [0.0, 4.0]])
    >>> F.embedding_bag(clgrad.tensor([0, 1, 2]), w, clgrad.tensor([0, 2]), mode="sum").tolist()
    [[3.0, 1.0], [0.0, 4.0]]
    """
    import numpy as np
    if mode not in ("sum", "mean", "max"):
        raise ValueError(f"mode has to be one of sum, mean or max, got {mode}")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(f"embedding_bag: per_sample_weights was not None. "
                                  f"per_sample_weights is only supported for mode='sum' (got "
                                  f"mode='{mode}'). Please open a feature request on GitHub.")
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated "
                             "is a mini-batch of fixed length sequences.")
        B, L = input.shape
        starts = [b * L for b in range(B)]
        flat = input.reshape(-1)
        psw = per_sample_weights.reshape(-1) if per_sample_weights is not None else None
        ends = [s + L for s in starts]
    elif input.dim() == 1:
        if offsets is None or offsets.dim() != 1:
            raise ValueError("offsets has to be a 1D Tensor but got None" if offsets is None
                             else f"offsets has to be a 1D Tensor, but got {offsets.dim()}D")
        starts = [int(v) for v in offsets.tolist()]
        if starts and starts[0] != 0:
            raise ValueError(f"offsets[0] has to be 0, i.e., the first sequence in the mini-batch "
                             f"has to start from position 0. However, got {starts[0]}")
        flat, psw = input, per_sample_weights
        n = input.shape[0]
        if include_last_offset:
            ends = starts[1:]
            starts = starts[:-1]
        else:
            ends = starts[1:] + [n]
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension "
                         f"{input.dim()}")
    D = weight.shape[1]
    emb = embedding(flat, weight, None, max_norm, norm_type)
    if psw is not None:
        emb = emb * psw.unsqueeze(-1)
    T = emb.shape[0]
    ids = flat.tolist()
    bags = [[j for j in range(a, b) if padding_idx is None or ids[j] != padding_idx]
            for a, b in zip(starts, ends)]
    Lmax = max([len(b) for b in bags] + [1])
    # each bag's positions in a row, padded with T: a row appended to the embeddings
    idx = np.full((len(bags), Lmax), T, dtype=np.int64)
    for r, b in enumerate(bags):
        idx[r, :len(b)] = b
    fill = -math.inf if mode == "max" else 0.0
    table = cat([emb, full((1, D), fill, dtype=emb.dtype, device=emb.device)], 0)
    picked = table[_tensor(idx, device=emb.device)]                  # [B, Lmax, D]
    counts = _tensor(np.array([len(b) for b in bags], dtype=np.float64),
                     device=emb.device).to(emb.dtype).unsqueeze(-1)
    if mode == "sum":
        return picked.sum(1)
    if mode == "mean":
        return picked.sum(1) / counts.clamp_min(1)
    out = picked.amax(1)
    return where(counts > 0, out, 0.0)              # an empty bag gives zeros, as torch


def _through_float(op, input, fn):
    """An integer pooling computed in float64 (float32 without fp64) and converted back: exact
    while the values fit the float's mantissa, which is checked for the 64-bit ints."""
    dev = input._storage.device
    ft = dtypes.float64 if dev.has_fp64 else dtypes.float32
    if input.dtype in (dtypes.int64, dtypes.int32) and input.numel():
        limit = 2 ** 53 if ft is dtypes.float64 else 2 ** 24
        if input.dtype is dtypes.int64 or ft is dtypes.float32:
            if input.abs().max().item() >= limit:
                raise NotImplementedError(f"{op} of {input.dtype} values beyond {limit} is not "
                                          f"exact in clgrad (it pools integers in {ft})")
    return fn(input.to(ft))


def refuse(kernel, input):
    """torch's NotImplementedError for a dtype its CPU kernel does not take."""
    raise NotImplementedError(f'"{kernel}" not implemented for '
                              f"'{dtypes.TORCH_NAMES[input.dtype]}' (input of shape "
                              f"{list(input.shape)})")


def int_max_pool2d(input, pool, return_indices):
    """max_pool2d of an integer tensor (no gradient: integer outputs have none); bool has no
    kernel in torch, refused once the window is checked (by the pooling itself), as torch."""
    if input.dtype.name == "bool":
        pool(input.float())
        refuse("max_pool2d", input)
    out = _through_float("max_pool2d", input, pool)
    if return_indices:
        return out[0].to(input.dtype), out[1]
    return out.to(input.dtype)


def int_avg_pool2d(input, pool):
    """avg_pool2d of an integer tensor: the mean truncated toward zero, as torch's (int64
    only: torch has no kernel for bool and the narrower integers, refused once the window is
    checked, by the pooling itself, as torch)."""
    if input.dtype.name != "int64":
        pool(input.float())
        refuse("avg_pool2d", input)
    return _through_float("avg_pool2d", input, pool).trunc().to(input.dtype)
