"""Fold and Unfold (col2im / im2col) over clgrad.nn.functional.fold / unfold."""
from .. import functional as F
from .module import Module

__all__ = ["Fold", "Unfold"]


class Fold(Module):
    """Sum sliding local blocks (N, C * prod(kernel_size), L) into (N, C, *output_size).

    >>> import clgrad
    >>> from clgrad import nn
    >>> nn.Fold((3, 3), 2)
    Fold(output_size=(3, 3), kernel_size=2, dilation=1, padding=0, stride=1)
    >>> nn.Fold((3, 3), 2)(clgrad.ones(1, 4, 4)).sum().item()
    16.0
    """

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.output_size = output_size
        self.kernel_size = kernel_size
        self.dilation = dilation
        self.padding = padding
        self.stride = stride

    def forward(self, input):
        return F.fold(input, self.output_size, self.kernel_size, self.dilation, self.padding,
                      self.stride)

    def extra_repr(self):
        return ("output_size={output_size}, kernel_size={kernel_size}, dilation={dilation}, "
                "padding={padding}, stride={stride}".format(**self.__dict__))


class Unfold(Module):
    """Extract sliding local blocks: (N, C, H, W) -> (N, C * prod(kernel_size), L).

    >>> import clgrad
    >>> from clgrad import nn
    >>> nn.Unfold(2, stride=2)(clgrad.ones(1, 3, 4, 4)).shape
    clgrad.Size([1, 12, 4])
    """

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.kernel_size = kernel_size
        self.dilation = dilation
        self.padding = padding
        self.stride = stride

    def forward(self, input):
        return F.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self):
        return ("kernel_size={kernel_size}, dilation={dilation}, padding={padding}, "
                "stride={stride}".format(**self.__dict__))
