"""affine_grid and grid_sample with torch's arguments, composed from clgrad ops (a matmul for
the grid; gathers and weights for the sampling), so that both differentiate to any order with
respect to the input, the grid and theta.

grid_sample unnormalises each coordinate (x indexes the width, y the height, z the depth),
applies the padding mode to the coordinate (border clips it, reflection reflects it about the
edges, torch's reflect_coordinates), then gathers the 2^nd corners (bilinear / trilinear) or the
nearest point (rounded half to even, as torch's nearbyint) from the flattened input. Corners
outside the input contribute zero. The weights are polynomials in the coordinates, so the
gradient with respect to the grid comes from autograd; floor() and round() carry none.
"""
import math
import warnings

from .. import dtypes
from .creation import arange, ones, zeros, zeros_like
from .join import stack
from .pointwise import where
from ..tensor import Tensor

__all__ = ["affine_grid", "grid_sample"]

_ALIGN_WARNING = ("Default grid_sample and affine_grid behavior has changed to align_corners=False "
                  "since 1.3.0. Please specify align_corners=True if the old behavior is desired. "
                  "See the documentation of grid_sample for details.")


def _base_coords(n, align_corners, dt, dev):
    """torch's linspace_from_neg_one: n points over [-1, 1] (pixel centres when not
    align_corners); 0 for n == 1."""
    if n <= 1:
        return zeros(n, dtype=dt, device=dev)
    c = arange(n, dtype=dt, device=dev) * (2.0 / (n - 1)) - 1.0
    return c if align_corners else c * ((n - 1) / n)


def affine_grid(theta, size, align_corners=None):
    """The sampling grid of a batch of affine maps: theta (N, 2, 3) and size (N, C, H, W) give
    (N, H, W, 2); theta (N, 3, 4) and size (N, C, D, H, W) give (N, D, H, W, 3). Each point is
    theta @ (x, y[, z], 1) over the normalised output coordinates.

    >>> import clgrad, clgrad.nn.functional as F
    >>> theta = clgrad.tensor([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]])
    >>> F.affine_grid(theta, (1, 1, 1, 2), align_corners=True).tolist()
    [[[[-1.0, 0.0], [1.0, 0.0]]]]
    """
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, UserWarning, stacklevel=2)
        align_corners = False
    if not isinstance(theta, Tensor):
        raise TypeError(f"affine_grid(): argument 'theta' must be Tensor, not "
                        f"{type(theta).__name__}")
    if not theta.dtype.is_floating_point:
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    size = tuple(size)
    if len(size) == 4:
        want = (2, 3)
    elif len(size) == 5:
        want = (3, 4)
    else:
        raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D "
                                  f"affine transforms, respectively. Got size {size}.")
    if theta.ndim != 3 or tuple(theta.shape[1:]) != want:
        kind = "2D" if len(size) == 4 else "3D"
        raise ValueError(f"Expected a batch of {kind} affine matrices of shape "
                         f"Nx{want[0]}x{want[1]} for size {size}. Got {theta.shape}.")
    if min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    if theta.shape[0] != size[0]:
        raise RuntimeError(f"affine_grid: expected theta of batch size {size[0]} for size "
                           f"{size}, but got theta of size {list(theta.shape)}")
    spatial = size[2:]                       # (H, W) or (D, H, W)
    nd = len(spatial)
    dt, dev = theta.dtype, theta.device
    axes = [_base_coords(n, align_corners, dt, dev) for n in spatial]
    # base[..., 0] runs along the last (width) axis, base[..., 1] along height, ...
    cols = []
    for k in range(nd):
        axis = nd - 1 - k
        shape = [1] * nd
        shape[axis] = spatial[axis]
        cols.append(axes[axis].reshape(shape).expand(*spatial))
    cols.append(ones(spatial, dtype=dt, device=dev))
    base = stack(cols, -1).reshape(1, -1, nd + 1)                 # [1, prod(spatial), nd + 1]
    grid = base.matmul(theta.transpose(1, 2))                     # [N, prod(spatial), nd]
    return grid.reshape((size[0],) + tuple(spatial) + (nd,))


def _unnormalize(c, n, align_corners):
    if align_corners:
        return (c + 1) * ((n - 1) / 2)
    return ((c + 1) * n - 1) / 2


def _reflect(c, twice_low, twice_high):
    """torch's reflect_coordinates: c reflected about low and high until it lies between."""
    if twice_low == twice_high:
        return zeros_like(c)
    low = twice_low / 2
    span = (twice_high - twice_low) / 2
    c = (c - low).abs()
    flips = (c / span).floor()
    extra = c - flips * span
    even = (flips.remainder(2) == 0)
    return where(even, extra + low, span - extra + low)


def _source(c, n, padding_mode, align_corners):
    c = _unnormalize(c, n, align_corners)
    if padding_mode == "border":
        c = c.clamp(0, n - 1)
    elif padding_mode == "reflection":
        c = _reflect(c, 0, 2 * (n - 1)) if align_corners else _reflect(c, -1, 2 * n - 1)
        c = c.clamp(0, n - 1)
    return c


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """Sample input (N, C, H, W) at grid (N, H_out, W_out, 2) of normalised (x, y) points in
    [-1, 1] (or a 5-D input (N, C, D, H, W) at grid (N, D_out, H_out, W_out, 3));
    mode 'bilinear' or 'nearest', padding_mode 'zeros', 'border' or 'reflection'.

    >>> import clgrad, clgrad.nn.functional as F
    >>> x = clgrad.tensor([[[[0.0, 1.0], [2.0, 3.0]]]])
    >>> g = clgrad.tensor([[[[0.0, 0.0], [1.0, -1.0]]]])
    >>> F.grid_sample(x, g, align_corners=True).tolist()
    [[[[1.5, 1.0]]]]
    """
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', "
                         f"'nearest' or 'bicubic', but got: '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', "
                         f"'border', or 'reflection', but got: '{padding_mode}'")
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, UserWarning, stacklevel=2)
        align_corners = False
    for name, t in (("input", input), ("grid", grid)):
        if not isinstance(t, Tensor):
            raise TypeError(f"grid_sample(): argument '{name}' must be Tensor, not "
                            f"{type(t).__name__}")
    if input.ndim not in (4, 5) or grid.ndim != input.ndim:
        raise RuntimeError(f"grid_sampler(): expected 4D or 5D input and grid with same number "
                           f"of dimensions, but got input with sizes {list(input.shape)} and "
                           f"grid with sizes {list(grid.shape)}")
    nd = input.ndim - 2
    if grid.shape[-1] != nd:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {nd} in last dimension, "
                           f"but got grid with sizes {list(grid.shape)}")
    if grid.shape[0] != input.shape[0]:
        raise RuntimeError(f"grid_sampler(): expected grid and input to have same batch size, "
                           f"but got input with sizes {list(input.shape)} and grid with sizes "
                           f"{list(grid.shape)}")
    if grid.dtype is not input.dtype:
        raise RuntimeError(f"expected scalar type {input.dtype} but found {grid.dtype}")
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"grid_sampler(): expected a floating point input, got {input.dtype}")
    if any(n == 0 for n in input.shape[2:]):
        raise RuntimeError(f"grid_sampler(): expected input to have non-empty spatial "
                           f"dimensions, but input has sizes {list(input.shape)}")
    if mode == "bicubic":
        raise NotImplementedError("grid_sample: mode='bicubic' is not supported in clgrad")
    N, C = input.shape[:2]
    spatial = tuple(input.shape[2:])                     # (H, W) or (D, H, W)
    out = tuple(grid.shape[1:-1])
    P = math.prod(out)
    # coordinate k of the grid indexes spatial dim nd - 1 - k (x: width, y: height, z: depth)
    coords = []
    for k in range(nd):
        n = spatial[nd - 1 - k]
        coords.append(_source(grid[..., k].reshape(N, P), n, padding_mode, align_corners))
    coords = coords[::-1]                                # now in spatial order (d,) h, w
    flat = input.reshape(N, C, math.prod(spatial))

    def tap(points):
        """The input at integer points (one [N, P] tensor per dim), zero outside."""
        inside = None
        index = None
        for p, n in zip(points, spatial):
            ok = (p >= 0) & (p <= n - 1)
            inside = ok if inside is None else inside & ok
            pi = p.clamp(0, n - 1).to(dtypes.int64)
            index = pi if index is None else index * n + pi
        vals = flat.gather(2, index.unsqueeze(1).expand(N, C, P))
        return vals * inside.unsqueeze(1).to(input.dtype)

    if mode == "nearest":
        y = tap([c.detach().round() for c in coords])
    else:
        lows = [c.detach().floor() for c in coords]
        fracs = [c - lo for c, lo in zip(coords, lows)]
        y = None
        for corner in range(2 ** nd):
            bits = [(corner >> (nd - 1 - k)) & 1 for k in range(nd)]
            w = None
            for b, f in zip(bits, fracs):
                wk = f if b else 1 - f
                w = wk if w is None else w * wk
            part = tap([lo + b for lo, b in zip(lows, bits)]) * w.unsqueeze(1)
            y = part if y is None else y + part
    return y.reshape((N, C) + out)
