"""MaxPool1d/2d/3d, AvgPool1d/2d/3d, AdaptiveAvgPool1d/2d/3d and AdaptiveMaxPool1d/2d/3d
over the kernels of clgrad.ops.conv (the 3-d ones composed from the 2-d ones); MaxUnpool1d/2d/3d
LPPool1d/2d/3d and FractionalMaxPool2d/3d."""
from .. import functional as F
from .module import Module
from .utils import _ntuple, _single

__all__ = ["MaxPool2d", "AvgPool2d", "AdaptiveAvgPool2d", "MaxPool1d", "AvgPool1d",
           "AdaptiveAvgPool1d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "MaxPool3d",
           "AvgPool3d", "AdaptiveAvgPool3d", "AdaptiveMaxPool3d", "MaxUnpool1d", "MaxUnpool2d",
           "MaxUnpool3d", "LPPool1d", "LPPool2d", "LPPool3d", "FractionalMaxPool2d",
           "FractionalMaxPool3d"]


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
        self.kernel_size = _single(kernel_size)              # 1-tuples, as torch keeps them
        self.stride = _single(stride if stride is not None else kernel_size)
        self.padding = _single(padding)
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


class _MaxUnpoolNd(Module):
    _nd = 2

    def __init__(self, kernel_size, stride=None, padding=0):
        super().__init__()
        tup = _ntuple(self._nd)
        self.kernel_size = tup(kernel_size)
        self.stride = tup(stride if stride is not None else kernel_size)
        self.padding = tup(padding)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"

    def forward(self, input, indices, output_size=None):
        fn = (F.max_unpool1d, F.max_unpool2d, F.max_unpool3d)[self._nd - 1]
        return fn(input, indices, self.kernel_size, self.stride, self.padding, output_size)


class MaxUnpool1d(_MaxUnpoolNd):
    """The partial inverse of MaxPool1d: forward(input, indices, output_size=None) puts each
    value back where max pooling found it, zeros elsewhere.

    >>> import clgrad
    >>> from clgrad import nn
    >>> out, idx = nn.MaxPool1d(2, return_indices=True)(clgrad.tensor([[[1.0, 3.0, 2.0, 0.0]]]))
    >>> nn.MaxUnpool1d(2)(out, idx).tolist(), nn.MaxUnpool1d(2)
    ([[[0.0, 3.0, 2.0, 0.0]]], MaxUnpool1d(kernel_size=(2,), stride=(2,), padding=(0,)))
    """
    _nd = 1


class MaxUnpool2d(_MaxUnpoolNd):
    """The partial inverse of MaxPool2d.

    >>> import clgrad
    >>> from clgrad import nn
    >>> out, idx = nn.MaxPool2d(2, return_indices=True)(clgrad.randn(1, 1, 4, 4))
    >>> nn.MaxUnpool2d(2)(out, idx, output_size=[1, 1, 5, 5]).shape, nn.MaxUnpool2d(2)
    (clgrad.Size([1, 1, 5, 5]), MaxUnpool2d(kernel_size=(2, 2), stride=(2, 2), padding=(0, 0)))
    """
    _nd = 2


class MaxUnpool3d(_MaxUnpoolNd):
    """The partial inverse of MaxPool3d.

    >>> import clgrad
    >>> from clgrad import nn
    >>> out, idx = nn.MaxPool3d(2, return_indices=True)(clgrad.randn(1, 1, 2, 2, 2))
    >>> nn.MaxUnpool3d(2)(out, idx).shape
    clgrad.Size([1, 1, 2, 2, 2])
    """
    _nd = 3


class _LPPoolNd(Module):
    _nd = 2

    def __init__(self, norm_type, kernel_size, stride=None, ceil_mode=False):
        super().__init__()
        self.norm_type = norm_type
        self.kernel_size = kernel_size
        self.stride = stride
        self.ceil_mode = ceil_mode

    def extra_repr(self):
        return (f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}, ceil_mode={self.ceil_mode}")

    def forward(self, input):
        fn = (F.lp_pool1d, F.lp_pool2d, F.lp_pool3d)[self._nd - 1]
        return fn(input, float(self.norm_type), self.kernel_size, self.stride, self.ceil_mode)


class LPPool1d(_LPPoolNd):
    """1-d power-average pooling: (sum over each window of x^p)^(1/p), p = norm_type (p = 1 is
    sum pooling, p -> inf max pooling).

    >>> import clgrad
    >>> from clgrad import nn
    >>> nn.LPPool1d(2, 2)(clgrad.tensor([[[3.0, 4.0]]])).tolist(), nn.LPPool1d(2, 2)
    ([[[5.0]]], LPPool1d(norm_type=2, kernel_size=2, stride=None, ceil_mode=False))
    """
    _nd = 1


class LPPool2d(_LPPoolNd):
    """2-d power-average pooling.

    >>> import clgrad
    >>> from clgrad import nn
    >>> nn.LPPool2d(1.5, (2, 2), stride=1)(clgrad.randn(1, 2, 3, 3)).shape
    clgrad.Size([1, 2, 2, 2])
    """
    _nd = 2


class LPPool3d(_LPPoolNd):
    """3-d power-average pooling.

    >>> import clgrad
    >>> from clgrad import nn
    >>> nn.LPPool3d(2, 2)(clgrad.ones(1, 1, 2, 2, 2)).flatten().tolist()
    [2.8284270763397217]
    """
    _nd = 3


class _FractionalMaxPoolNd(Module):
    _nd = 2

    def __init__(self, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                 _random_samples=None):
        super().__init__()
        tup = _ntuple(self._nd)
        self.kernel_size = tup(kernel_size)
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)
        self.output_size = tup(output_size) if output_size is not None else None
        self.output_ratio = tup(output_ratio) if output_ratio is not None else None
        name = type(self).__name__
        if output_size is None and output_ratio is None:
            raise ValueError(f"{name} requires specifying either an output size, or a pooling "
                             f"ratio")
        if output_size is not None and output_ratio is not None:
            raise ValueError("only one of output_size and output_ratio may be specified")
        if self.output_ratio is not None and not all(0 < r < 1 for r in self.output_ratio):
            raise ValueError(f"output_ratio must be between 0 and 1 (got {output_ratio})")

    def forward(self, input):
        fn = F.fractional_max_pool2d if self._nd == 2 else F.fractional_max_pool3d
        return fn(input, self.kernel_size, self.output_size, self.output_ratio,
                  self.return_indices, _random_samples=self._random_samples)


class FractionalMaxPool2d(_FractionalMaxPoolNd):
    """2-d fractional max pooling (see F.fractional_max_pool2d); a `_random_samples` buffer of
    shape (N, C, 2) fixes the windows, else they are drawn afresh at each call.

    >>> import clgrad
    >>> m = clgrad.nn.FractionalMaxPool2d(3, output_ratio=(0.5, 0.5))
    >>> m(clgrad.randn(1, 2, 10, 10)).shape, m
    (clgrad.Size([1, 2, 5, 5]), FractionalMaxPool2d())
    """
    _nd = 2


class FractionalMaxPool3d(_FractionalMaxPoolNd):
    """3-d fractional max pooling; `_random_samples` is (N, C, 3).

    >>> import clgrad
    >>> m = clgrad.nn.FractionalMaxPool3d(2, output_size=(2, 3, 3), return_indices=True)
    >>> [t.shape for t in m(clgrad.randn(1, 1, 4, 5, 5))]
    [clgrad.Size([1, 1, 2, 3, 3]), clgrad.Size([1, 1, 2, 3, 3])]
    """
    _nd = 3
