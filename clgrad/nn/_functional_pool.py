"""The 1-d pooling functions and adaptive max pooling, torch's arguments and results. The 1-d
ones run the 2-d kernels on a height-1 view ([N, C, L] -> [N, C, 1, L]); adaptive max pooling
takes the max of each of torch's adaptive windows (start floor(i * L / out), end
ceil((i + 1) * L / out)), one window per output position, so it suits small outputs.
"""
import math

from ..ops.join import stack

__all__ = ["max_pool1d", "avg_pool1d", "adaptive_avg_pool1d", "adaptive_max_pool1d",
           "adaptive_max_pool2d", "pixel_shuffle", "pixel_unshuffle", "channel_shuffle"]


def _F():
    from . import functional
    return functional


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
    out = _F().max_pool2d(input.unsqueeze(-2), (1, k), (1, s), (0, _one(padding, "padding")),
                          (1, _one(dilation, "dilation")), ceil_mode, return_indices)
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
    return _F().avg_pool2d(input.unsqueeze(-2), (1, k), (1, s), (0, _one(padding, "padding")),
                           ceil_mode, count_include_pad).squeeze(-2)


def adaptive_avg_pool1d(input, output_size):
    """1-D average pooling to `output_size` positions.

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.adaptive_avg_pool1d(clgrad.tensor([[[1.0, 3.0, 2.0, 0.0]]]), 1).tolist()
    [[[1.5]]]
    """
    _check_1d("adaptive_avg_pool1d", input)
    return _F().adaptive_avg_pool2d(input.unsqueeze(-2),
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
