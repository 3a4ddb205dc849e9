"""PixelShuffle, PixelUnshuffle and ChannelShuffle: rearrangements of channels and positions."""
from .. import functional as F
from .module import Module

__all__ = ["PixelShuffle", "PixelUnshuffle", "ChannelShuffle"]


class PixelShuffle(Module):
    """[*, C r^2, H, W] -> [*, C, H r, W r].

    >>> import clgrad
    >>> clgrad.nn.PixelShuffle(2)(clgrad.ones(1, 8, 3, 3)).shape
    clgrad.Size([1, 2, 6, 6])
    """

    def __init__(self, upscale_factor):
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input):
        return F.pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self):
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    """[*, C, H r, W r] -> [*, C r^2, H, W].

    >>> import clgrad
    >>> clgrad.nn.PixelUnshuffle(2)(clgrad.ones(1, 2, 6, 6)).shape
    clgrad.Size([1, 8, 3, 3])
    """

    def __init__(self, downscale_factor):
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input):
        return F.pixel_unshuffle(input, self.downscale_factor)

    def extra_repr(self):
        return f"downscale_factor={self.downscale_factor}"


class ChannelShuffle(Module):
    """Regroup the channels of [N, g k, *] as [N, k g, *].

    >>> import clgrad
    >>> clgrad.nn.ChannelShuffle(2)(clgrad.arange(4.0).reshape(1, 4, 1)).reshape(-1).tolist()
    [0.0, 2.0, 1.0, 3.0]
    """

    def __init__(self, groups):
        super().__init__()
        self.groups = groups

    def forward(self, input):
        return F.channel_shuffle(input, self.groups)

    def extra_repr(self):
        return f"groups={self.groups}"
