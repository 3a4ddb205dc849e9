"""Upsample, UpsamplingNearest2d and UpsamplingBilinear2d: F.interpolate as modules."""
from .. import functional as F
from .module import Module

__all__ = ["Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d"]


class Upsample(Module):
    """F.interpolate with fixed size or scale_factor, mode and align_corners.

    >>> import clgrad
    >>> m = clgrad.nn.Upsample(scale_factor=2, mode="nearest")
    >>> m(clgrad.ones(1, 1, 2, 2)).shape, m
    (clgrad.Size([1, 1, 4, 4]), Upsample(scale_factor=2.0, mode='nearest'))
    """

    def __init__(self, size=None, scale_factor=None, mode="nearest", align_corners=None,
                 recompute_scale_factor=None):
        super().__init__()
        self.name = type(self).__name__
        self.size = size
        if isinstance(scale_factor, tuple):
            self.scale_factor = tuple(float(f) for f in scale_factor)
        else:
            self.scale_factor = float(scale_factor) if scale_factor else None
        self.mode = mode
        self.align_corners = align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input):
        return F.interpolate(input, self.size, self.scale_factor, self.mode, self.align_corners,
                             recompute_scale_factor=self.recompute_scale_factor)

    def extra_repr(self):
        info = f"scale_factor={self.scale_factor!r}" if self.scale_factor is not None else \
            f"size={self.size!r}"
        return info + f", mode={self.mode!r}"


class UpsamplingNearest2d(Upsample):
    """Upsample with mode 'nearest' (torch's deprecated 2-d class).

    >>> import clgrad
    >>> clgrad.nn.UpsamplingNearest2d(scale_factor=2)(clgrad.ones(1, 1, 1, 1)).shape
    clgrad.Size([1, 1, 2, 2])
    """

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """Upsample with mode 'bilinear' and align_corners=True (torch's deprecated 2-d class).

    >>> import clgrad
    >>> clgrad.nn.UpsamplingBilinear2d(size=3)(clgrad.ones(1, 1, 2, 2)).shape
    clgrad.Size([1, 1, 3, 3])
    """

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)
