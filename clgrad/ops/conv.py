"""Convolution and pooling (to be written): conv1d, conv2d, conv_transpose2d, max_pool2d,
avg_pool2d, adaptive_avg_pool2d, with torch.nn.functional's signatures."""
FUNCTIONS = {}
METHODS = {}


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    raise NotImplementedError("conv1d is not implemented yet")


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    raise NotImplementedError("conv2d is not implemented yet")


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    raise NotImplementedError("conv_transpose2d is not implemented yet")


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    raise NotImplementedError("max_pool2d is not implemented yet")


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    raise NotImplementedError("avg_pool2d is not implemented yet")


def adaptive_avg_pool2d(input, output_size):
    raise NotImplementedError("adaptive_avg_pool2d is not implemented yet")
