"""MaxPool1d/2d/3d, AvgPool1d/2d/3d, AdaptiveAvgPool1d/2d/3d and AdaptiveMaxPool1d/2d/3d
over the kernels of clgrad.ops.conv (the 3-d ones composed from the 2-d ones)."""
from .. import functional as F
from .module import Module

__all__ = ["MaxPool2d", "AvgPool2d", "AdaptiveAvgPool2d", "MaxPool1d", "AvgPool1d",
           "AdaptiveAvgPool1d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "MaxPool3d",
           "AvgPool3d", "AdaptiveAvgPool3d", "AdaptiveMaxPool3d"]


class MaxPool2d(Module):
    """2-D max pooling; stride defaults to kernel_size.

    >>> from clgrad import nn
    >>> nn.MaxPool2d(3, stride=2)
    MaxPool2d(kernel_size=3, stride=2, padding=0, dilation=1, ceil_mode=False)
    """

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False,
                 ceil_mode=False):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.dilation = dilation
        self.return_indices = return_indices
        self.ceil_mode = ceil_mode

    def extra_repr(self):
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")

    def forward(self, input):
        return F.max_pool2d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            ceil_mode=self.ceil_mode, return_indices=self.return_indices)


class AvgPool2d(Module):
    """2-D average pooling; stride defaults to kernel_size.

    >>> from clgrad import nn
    >>> nn.AvgPool2d((3, 2), stride=(2, 1))
    AvgPool2d(kernel_size=(3, 2), stride=(2, 1), padding=0)
    """

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False,
                 count_include_pad=True, divisor_override=None):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad
        self.divisor_override = divisor_override

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"

    def forward(self, input):
        return F.avg_pool2d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)


class AdaptiveAvgPool2d(Module):
    """2-D average pooling to a fixed output size (None keeps that dimension).

    >>> from clgrad import nn
    >>> nn.AdaptiveAvgPool2d((1, 1))
    AdaptiveAvgPool2d(output_size=(1, 1))
    """

    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def extra_repr(self):
        return f"output_size={self.output_size}"

    def forward(self, input):
        return F.adaptive_avg_pool2d(input, self.output_size)


class MaxPool1d(MaxPool2d):
    """1-D max pooling; stride defaults to kernel_size.

    >>> import clgrad
    >>> clgrad.nn.MaxPool1d(2)(clgrad.tensor([[[1.0, 3.0, 2.0, 0.0]]])).tolist()
    [[[3.0, 2.0]]]
    """

    def forward(self, input):
        return F.max_pool1d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            ceil_mode=self.ceil_mode, return_indices=self.return_indices)


class AvgPool1d(Module):
    """1-D average pooling; stride defaults to kernel_size.

    >>> import clgrad
    >>> clgrad.nn.AvgPool1d(2)(clgrad.tensor([[[1.0, 3.0, 2.0, 0.0]]])).tolist()
    [[[2.0, 1.0]]]
    """

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False,
                 count_include_pad=True):
        super().__init__()
        one = lambda v: tuple(v) if isinstance(v, (list, tuple)) else (v,)  # noqa: E731
        self.kernel_size = one(kernel_size)                  # 1-tuples, as torch keeps them
        self.stride = one(stride if stride is not None else kernel_size)
        self.padding = one(padding)
        self.ceil_mode, self.count_include_pad = ceil_mode, count_include_pad

    def forward(self, input):
        return F.avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class _Adaptive(Module):
    fn = None

    def __init__(self, output_size, return_indices=False):
        super().__init__()
        self.output_size, self.return_indices = output_size, return_indices

    def forward(self, input):
        if self.fn.startswith("adaptive_avg"):
            return getattr(F, self.fn)(input, self.output_size)
        return getattr(F, self.fn)(input, self.output_size, self.return_indices)

    def extra_repr(self):
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(_Adaptive):
    """1-D average pooling to output_size positions.

    >>> import clgrad
    >>> clgrad.nn.AdaptiveAvgPool1d(1)(clgrad.ones(2, 3, 5)).shape
    clgrad.Size([2, 3, 1])
    """
    fn = "adaptive_avg_pool1d"


class AdaptiveMaxPool1d(_Adaptive):
    """1-D max pooling to output_size positions.

    >>> import clgrad
    >>> clgrad.nn.AdaptiveMaxPool1d(2)(clgrad.ones(2, 3, 5)).shape
    clgrad.Size([2, 3, 2])
    """
    fn = "adaptive_max_pool1d"


class AdaptiveMaxPool2d(_Adaptive):
    """2-D max pooling to output_size (an int, a pair, None keeps a size).

    >>> import clgrad
    >>> clgrad.nn.AdaptiveMaxPool2d((1, 1))(clgrad.ones(2, 3, 5, 4)).shape
    clgrad.Size([2, 3, 1, 1])
    """
    fn = "adaptive_max_pool2d"


class MaxPool3d(MaxPool2d):
    """3-D max pooling; stride defaults to kernel_size.

    >>> import clgrad
    >>> from clgrad import nn
    >>> nn.MaxPool3d(2)
    MaxPool3d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)
    >>> nn.MaxPool3d(2)(clgrad.arange(8.0).reshape(1, 1, 2, 2, 2)).item()
    7.0
    """

    def forward(self, input):
        return F.max_pool3d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            ceil_mode=self.ceil_mode, return_indices=self.return_indices)


class AvgPool3d(AvgPool2d):
    """3-D average pooling; stride defaults to kernel_size.

    >>> import clgrad
    >>> from clgrad import nn
    >>> nn.AvgPool3d((1, 2, 2), stride=1)(clgrad.ones(1, 1, 2, 3, 3)).shape
    clgrad.Size([1, 1, 2, 2, 2])
    """

    def forward(self, input):
        return F.avg_pool3d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)


class AdaptiveAvgPool3d(Module):
    """3-D average pooling to a fixed output size (None keeps that dimension).

    >>> import clgrad
    >>> from clgrad import nn
    >>> nn.AdaptiveAvgPool3d((1, None, 2))(clgrad.ones(2, 3, 4, 5, 4)).shape
    clgrad.Size([2, 3, 1, 5, 2])
    """

    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def extra_repr(self):
        return f"output_size={self.output_size}"

    def forward(self, input):
        return F.adaptive_avg_pool3d(input, self.output_size)


class AdaptiveMaxPool3d(_Adaptive):
    """3-D max pooling to output_size (an int, a triple, None keeps a size).

    >>> import clgrad
    >>> clgrad.nn.AdaptiveMaxPool3d(1)(clgrad.ones(2, 3, 5, 4, 4)).shape
    clgrad.Size([2, 3, 1, 1, 1])
    """
    fn = "adaptive_max_pool3d"
