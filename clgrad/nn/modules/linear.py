"""Identity and Linear."""
import math

from ...ops.creation import empty
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module

__all__ = ["Identity", "Linear"]


class Identity(Module):
    """Returns its input; accepts and ignores any arguments (a placeholder layer).

    >>> import clgrad
    >>> x = clgrad.ones(2)
    >>> clgrad.nn.Identity(54, unused="x")(x) is x
    True
    """

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):
        return input


class Linear(Module):
    """y = x W^T + b. W is (out_features, in_features), initialised like torch:
    kaiming_uniform_(a=sqrt(5)), that is U(-1/sqrt(in), 1/sqrt(in)), and b the same.

    >>> import clgrad
    >>> lin = clgrad.nn.Linear(20, 30)
    >>> lin(clgrad.randn(128, 20)).shape, lin
    (clgrad.Size([128, 30]), Linear(in_features=20, out_features=30, bias=True))
    """

    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = Parameter(empty((out_features, in_features), device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(empty(out_features, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        """Draw the weight and bias afresh with torch's default scheme."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input):
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")
