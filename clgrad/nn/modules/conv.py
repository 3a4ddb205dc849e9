"""Conv1d/2d/3d and ConvTranspose1d/2d/3d over the kernels of clgrad.ops.conv, with torch's
arguments and default initialisation."""
import math

from ...ops.creation import empty
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module
from .utils import _ntuple

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d"]


class _ConvNd(Module):
    _nd = 2

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation,
                 transposed, output_padding, groups, bias, padding_mode, device=None,
                 dtype=None):
        super().__init__()
        nd = self._nd
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        stride = _ntuple(nd)(stride)
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(f"Invalid padding string {padding!r}, should be one of "
                                 f"{{'valid', 'same'}}")
            if padding == "same" and any(s != 1 for s in stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
        else:
            padding = _ntuple(nd)(padding)
        if padding_mode not in ("zeros", "reflect", "replicate", "circular"):
            raise ValueError(f"padding_mode must be one of {{'zeros', 'reflect', 'replicate', "
                             f"'circular'}}, but got padding_mode='{padding_mode}'")
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = _ntuple(nd)(kernel_size)
        self.stride = stride
        self.padding = padding
        self.dilation = _ntuple(nd)(dilation)
        self.transposed = transposed
        self.output_padding = _ntuple(nd)(output_padding)
        self.groups = groups
        self.padding_mode = padding_mode
        # what F.pad needs for padding modes other than zeros: (left, right) per dim, last first
        if isinstance(padding, str):
            pads = []
            for d, k in zip(reversed(self.dilation), reversed(self.kernel_size)):
                total = 0 if padding == "valid" else d * (k - 1)
                pads += [total // 2, total - total // 2]
        else:
            pads = [p for p in reversed(padding) for _ in range(2)]
        self._reversed_padding_repeated_twice = pads
        if transposed:
            shape = (in_channels, out_channels // groups) + self.kernel_size
        else:
            shape = (out_channels, in_channels // groups) + self.kernel_size
        self.weight = Parameter(empty(shape, device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(empty(out_channels, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        """torch's default: kaiming_uniform_(a=sqrt(5)) for the weight, U(+-1/sqrt(fan_in))
        for the bias."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            if fan_in != 0:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def extra_repr(self):
        s = "{in_channels}, {out_channels}, kernel_size={kernel_size}, stride={stride}"
        if self.padding != (0,) * len(self.padding):
            s += ", padding={padding}"
        if self.dilation != (1,) * len(self.dilation):
            s += ", dilation={dilation}"
        if self.output_padding != (0,) * len(self.output_padding):
            s += ", output_padding={output_padding}"
        if self.groups != 1:
            s += ", groups={groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += ", padding_mode={padding_mode}"
        return s.format(**self.__dict__)

    def _conv_forward(self, conv, input, weight, bias):
        if self.padding_mode != "zeros":
            input = F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode)
            return conv(input, weight, bias, self.stride, 0, self.dilation, self.groups)
        return conv(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)


class Conv1d(_ConvNd):
    """1-D convolution over (N, C_in, L) inputs.

    >>> from clgrad import nn
    >>> nn.Conv1d(16, 33, 3, stride=2)
    Conv1d(16, 33, kernel_size=(3,), stride=(2,))
    >>> nn.Conv1d(4, 4, 5, padding="same", groups=2).weight.shape
    clgrad.Size([4, 2, 5])
    """

    _nd = 1

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, bias=True, padding_mode="zeros", device=None, dtype=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, False,
                         0, groups, bias, padding_mode, device, dtype)

    def forward(self, input):
        return self._conv_forward(F.conv1d, input, self.weight, self.bias)


class Conv2d(_ConvNd):
    """2-D convolution over (N, C_in, H, W) inputs.

    >>> from clgrad import nn
    >>> nn.Conv2d(16, 33, (3, 5), stride=(2, 1), padding=(4, 2), dilation=(3, 1))
    Conv2d(16, 33, kernel_size=(3, 5), stride=(2, 1), padding=(4, 2), dilation=(3, 1))
    """

    _nd = 2

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, bias=True, padding_mode="zeros", device=None, dtype=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, False,
                         0, groups, bias, padding_mode, device, dtype)

    def forward(self, input):
        return self._conv_forward(F.conv2d, input, self.weight, self.bias)


class Conv3d(_ConvNd):
    """3-D convolution over (N, C_in, D, H, W) inputs.

    >>> import clgrad
    >>> from clgrad import nn
    >>> m = nn.Conv3d(2, 4, (3, 2, 2), stride=(2, 1, 1), padding=(1, 0, 0))
    >>> m
    Conv3d(2, 4, kernel_size=(3, 2, 2), stride=(2, 1, 1), padding=(1, 0, 0))
    >>> m(clgrad.randn(1, 2, 5, 4, 4)).shape
    clgrad.Size([1, 4, 3, 3, 3])
    """

    _nd = 3

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, bias=True, padding_mode="zeros", device=None, dtype=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, False,
                         0, groups, bias, padding_mode, device, dtype)

    def forward(self, input):
        return self._conv_forward(F.conv3d, input, self.weight, self.bias)


class ConvTranspose2d(_ConvNd):
    """2-D transposed convolution; the weight is (C_in, C_out / groups, kH, kW). forward's
    output_size picks among the output sizes a stride allows.

    >>> from clgrad import nn
    >>> nn.ConvTranspose2d(16, 33, 3, stride=2, output_padding=1)
    ConvTranspose2d(16, 33, kernel_size=(3, 3), stride=(2, 2), output_padding=(1, 1))
    """

    _nd = 2

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 output_padding=0, groups=1, bias=True, dilation=1, padding_mode="zeros",
                 device=None, dtype=None):
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {type(self).__name__}')
        if isinstance(padding, str):
            raise ValueError(f"{type(self).__name__} does not support string padding")
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, True,
                         output_padding, groups, bias, padding_mode, device, dtype)

    def _output_padding(self, input, output_size):
        if output_size is None:
            return self.output_padding
        nd = self._nd
        non_spatial = 2 if input.ndim == nd + 2 else 1
        output_size = tuple(output_size)
        if len(output_size) == non_spatial + nd:
            output_size = output_size[non_spatial:]
        if len(output_size) != nd:
            raise ValueError(f"ConvTranspose{nd}D: for {input.ndim}D input, output_size must have "
                             f"{nd} or {non_spatial + nd} elements (got {len(output_size)})")
        min_sizes = [(input.shape[d + non_spatial] - 1) * self.stride[d] - 2 * self.padding[d] +
                     self.dilation[d] * (self.kernel_size[d] - 1) + 1 for d in range(nd)]
        max_sizes = [m + s - 1 for m, s in zip(min_sizes, self.stride)]
        for size, lo, hi in zip(output_size, min_sizes, max_sizes):
            if size < lo or size > hi:
                raise ValueError(f"requested an output size of {list(output_size)}, but valid "
                                 f"sizes range from {min_sizes} to {max_sizes} (for an input of "
                                 f"{input.shape[2:]})")
        return tuple(s - m for s, m in zip(output_size, min_sizes))

    def forward(self, input, output_size=None):
        output_padding = self._output_padding(input, output_size)
        return F.conv_transpose2d(input, self.weight, self.bias, self.stride, self.padding,
                                  output_padding, self.groups, self.dilation)


class ConvTranspose1d(ConvTranspose2d):
    """1-D transposed convolution; the weight is (C_in, C_out / groups, k).

    >>> import clgrad
    >>> from clgrad import nn
    >>> m = nn.ConvTranspose1d(2, 3, 3, stride=2)
    >>> m
    ConvTranspose1d(2, 3, kernel_size=(3,), stride=(2,))
    >>> m(clgrad.randn(1, 2, 4)).shape, m(clgrad.randn(1, 2, 4), output_size=[10]).shape
    (clgrad.Size([1, 3, 9]), clgrad.Size([1, 3, 10]))
    """

    _nd = 1

    def forward(self, input, output_size=None):
        output_padding = self._output_padding(input, output_size)
        return F.conv_transpose1d(input, self.weight, self.bias, self.stride, self.padding,
                                  output_padding, self.groups, self.dilation)


class ConvTranspose3d(ConvTranspose2d):
    """3-D transposed convolution; the weight is (C_in, C_out / groups, kD, kH, kW).

    >>> import clgrad
    >>> from clgrad import nn
    >>> nn.ConvTranspose3d(2, 3, 2, stride=2)(clgrad.randn(1, 2, 2, 3, 1)).shape
    clgrad.Size([1, 3, 4, 6, 2])
    """

    _nd = 3

    def forward(self, input, output_size=None):
        output_padding = self._output_padding(input, output_size)
        return F.conv_transpose3d(input, self.weight, self.bias, self.stride, self.padding,
                                  output_padding, self.groups, self.dilation)
