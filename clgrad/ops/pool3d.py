"""3-d pooling: max_pool3d, avg_pool3d, adaptive_avg_pool3d, adaptive_max_pool3d, with torch's
arguments, composed from the 2-d pooling kernels so that they differentiate to any order.

Every 3-d window is the product of a (height, width) window and a depth window, so the pools
are separable: first the 2-d pooling over (H, W) of each depth plane ([N, C * D, H, W]), then
the pooling over depth, run as a 2-d pooling with a (1, kD) window over [N, C, OH * OW, D].
Max of maxima is the max; the first maximum in (d, h, w) order is the first plane's first
maximum, as torch reports it. Averages factor the same way: both of torch's divisors
(count_include_pad or not, ceil_mode clipping) are products of per-dim window lengths; a
divisor_override divides the sum of both stages (each run with divisor 1).
"""
import math

from .. import dtypes
from . import views
from .join import stack
from .window_args import adaptive_size, pool_geometry
from ..tensor import Tensor
from .pool import adaptive_avg_pool2d, avg_pool2d, max_pool2d

__all__ = ["max_pool3d", "avg_pool3d", "adaptive_avg_pool3d", "adaptive_max_pool3d"]



def _pool_input(op, x):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(x).__name__}")
    if x.ndim not in (4, 5) or (x.ndim == 4 and not x.numel()):
        raise RuntimeError("non-empty 4D or 5D (batch mode) tensor expected for input")
    if any(n == 0 for n in x.shape[-4:]):
        raise RuntimeError(f"{op}(): Expected input's non-batch dimensions to have positive "
                           f"length, but input has a shape of {list(x.shape)}")


def _planes(x):
    """[N, C, D, H, W] (an unbatched input gains N = 1) and whether it was batched."""
    return (x, True) if x.ndim == 5 else (views.unsqueeze(x, 0), False)


def _depth_last(y, N, C, D):
    """[N, C * D, OH, OW] -> [N, C, OH * OW, D]: the depth becomes the width of a 2-d pool."""
    OH, OW = y.shape[-2:]
    return y.reshape(N, C, D, OH * OW).transpose(2, 3), (OH, OW)


def _depth_back(y, N, C, hw, batched):
    out = y.transpose(2, 3).reshape(N, C, y.shape[-1], *hw)
    return out if batched else views.squeeze(out, 0)


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """3-D max pooling of (N, C, D, H, W) or (C, D, H, W) input; stride defaults to
    kernel_size. With return_indices, also the int64 position of each max in its D * H * W
    volume.

    >>> import clgrad, clgrad.nn.functional as F
    >>> v, i = F.max_pool3d(clgrad.arange(8.0).reshape(1, 1, 2, 2, 2), 2, return_indices=True)
    >>> v.tolist(), i.tolist()
    ([[[[[7.0]]]]], [[[[[7]]]]])
    """
    op = "max_pool3d"
    _pool_input(op, input)
    k, s, p, d, _ = pool_geometry(op, input, 3, kernel_size, stride, padding, dilation, ceil_mode)
    x, batched = _planes(input)
    N, C, D, H, W = x.shape
    v1, i1 = max_pool2d(x.reshape(N, C * D, H, W), k[1:], s[1:], p[1:], d[1:], ceil_mode,
                          True)
    v1, hw = _depth_last(v1, N, C, D)
    v2, i2 = max_pool2d(v1, (1, k[0]), (1, s[0]), (0, p[0]), (1, d[0]), ceil_mode, True)
    values = _depth_back(v2, N, C, hw, batched)
    if not return_indices:
        return values
    # i2 is row * D + depth within [OH * OW, D]; the plane index comes from that depth's i1
    depth = i2 % D
    i1, _ = _depth_last(i1, N, C, D)
    idx = depth * (H * W) + i1.gather(-1, depth)
    return values, _depth_back(idx, N, C, hw, batched)


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """3-D average pooling of (N, C, D, H, W) or (C, D, H, W) input; stride defaults to
    kernel_size. Integer inputs give the mean truncated toward zero, as torch's.

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.avg_pool3d(clgrad.arange(8.0).reshape(1, 1, 2, 2, 2), 2).item()
    3.5
    """
    op = "avg_pool3d"
    _pool_input(op, input)
    k, s, p, _, _ = pool_geometry(op, input, 3, kernel_size, stride, padding, 1, ceil_mode)
    divisor = None
    if divisor_override is not None:
        divisor = int(divisor_override)
        if divisor == 0:
            raise RuntimeError("divisor must be not zero")
    x, batched = _planes(input)
    is_int = not x.dtype.is_floating_point
    if is_int:
        if x.dtype is not dtypes.int64:   # torch: no kernel for bool, the narrower integers
            raise NotImplementedError(f'"avg_pool3d" not implemented for '
                                      f"'{dtypes.TORCH_NAMES[x.dtype]}' (input of shape "
                                      f"{list(input.shape)})")
        # pooled in float64 (float32 without fp64) and truncated back
        x = x.to(dtypes.float64 if x._storage.device.has_fp64 else dtypes.float32)
    N, C, D, H, W = x.shape
    one = None if divisor is None else 1
    y = avg_pool2d(x.reshape(N, C * D, H, W), k[1:], s[1:], p[1:], ceil_mode,
                     count_include_pad, one)
    y, hw = _depth_last(y, N, C, D)
    y = avg_pool2d(y, (1, k[0]), (1, s[0]), (0, p[0]), ceil_mode, count_include_pad, one)
    if divisor is not None:
        y = y / divisor
    out = _depth_back(y, N, C, hw, batched)
    return out.trunc().to(input.dtype) if is_int else out


def _adaptive_input(op, input):
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    if input.ndim not in (4, 5):
        raise RuntimeError(f"{op}(): Expected 4D or 5D tensor, but got: {list(input.shape)}")
    for i in range(1, input.ndim):
        if input.shape[i] == 0:
            raise RuntimeError(f"{op}(): Expected input to have non-zero size for non-batch "
                               f"dimensions, but input has sizes {list(input.shape)} with "
                               f"dimension {i} being empty")


def adaptive_avg_pool3d(input, output_size):
    """Average pooling of (N, C, D, H, W) or (C, D, H, W) input to output_size (an int, or a
    triple whose None entries keep the input's size), over torch's adaptive windows.

    >>> import clgrad, clgrad.nn.functional as F
    >>> x = clgrad.arange(8.0).reshape(1, 1, 2, 2, 2)
    >>> F.adaptive_avg_pool3d(x, (2, 1, 1)).flatten().tolist()
    [1.5, 5.5]
    """
    op = "adaptive_avg_pool3d"
    _adaptive_input(op, input)
    out = adaptive_size(op, input, output_size, 3)
    x, batched = _planes(input)
    N, C, D, H, W = x.shape
    y = adaptive_avg_pool2d(x.reshape(N, C * D, H, W), out[1:])
    y, hw = _depth_last(y, N, C, D)
    y = adaptive_avg_pool2d(y, (None, out[0]))
    return _depth_back(y, N, C, hw, batched)


def _window_max(x, dim, out):
    """Max over torch's adaptive windows along `dim`: values and the (absolute) argmax."""
    n = x.shape[dim]
    vals, args = [], []
    for i in range(out):
        a, b = math.floor(i * n / out), math.ceil((i + 1) * n / out)
        v, j = x.narrow(dim, a, b - a).max(dim)
        vals.append(v)
        args.append(j + a)
    return stack(vals, dim), stack(args, dim)


def adaptive_max_pool3d(input, output_size, return_indices=False):
    """The max of each of torch's adaptive windows of (N, C, D, H, W) or (C, D, H, W) input
    (separable: along W, then H, then D, one narrow per output position and dim).

    >>> import clgrad, clgrad.nn.functional as F
    >>> v, i = F.adaptive_max_pool3d(clgrad.arange(8.0).reshape(1, 2, 2, 2), 1, True)
    >>> v.flatten().tolist(), i.flatten().tolist()
    ([7.0], [7])
    """
    op = "adaptive_max_pool3d"
    _adaptive_input(op, input)
    out = adaptive_size(op, input, output_size, 3)
    if any(v == 0 for v in out):
        raise RuntimeError(f"{op}(): expected a positive output size, got {out}")
    x = input
    sizes = tuple(input.shape[-3:])
    idx = None
    step = 1
    # along W, H, then D; the flat index gains arg * (stride of that dim in D * H * W)
    for k in (2, 1, 0):
        dim = x.ndim - 3 + k
        x, arg = _window_max(x, dim, out[k])
        if return_indices:
            idx = arg * step if idx is None else idx.gather(dim, arg) + arg * step
        step *= sizes[k]
    return (x, idx) if return_indices else x
