"""LayerNorm and GroupNorm."""
import numbers

from ...ops.creation import empty
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module

__all__ = ["LayerNorm", "GroupNorm"]


def affine_parameters(module, shape, affine, bias, device, dtype):
    """The per-feature scale and shift of a normalisation layer: `weight` and `bias` Parameters
    of `shape` (None when not affine, or for bias=False)."""
    if affine:
        module.weight = Parameter(empty(shape, device=device, dtype=dtype))
        if bias:
            module.bias = Parameter(empty(shape, device=device, dtype=dtype))
        else:
            module.register_parameter("bias", None)
    else:
        module.register_parameter("weight", None)
        module.register_parameter("bias", None)


def reset_affine(module):
    """Weight 1, bias 0 (torch's initialisation of every normalisation layer)."""
    if module.weight is not None:
        init.ones_(module.weight)
        if module.bias is not None:
            init.zeros_(module.bias)


class LayerNorm(Module):
    """Normalise over the trailing `normalized_shape` dims of each sample (biased variance),
    then scale and shift elementwise (weight 1, bias 0 at first).

    >>> import clgrad
    >>> ln = clgrad.nn.LayerNorm(10)
    >>> ln(clgrad.randn(4, 10)).shape, ln
    (clgrad.Size([4, 10]), LayerNorm((10,), eps=1e-05, elementwise_affine=True, bias=True))
    """

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True,
                 device=None, dtype=None):
        super().__init__()
        if isinstance(normalized_shape, numbers.Integral):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        affine_parameters(self, self.normalized_shape, elementwise_affine, bias, device, dtype)
        self.reset_parameters()

    def reset_parameters(self):
        """Weight 1, bias 0."""
        reset_affine(self)

    def forward(self, input):
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}, bias={self.bias is not None}")


class GroupNorm(Module):
    """Split the channels into num_groups groups and normalise each group of each sample, then
    scale and shift per channel.

    >>> import clgrad
    >>> gn = clgrad.nn.GroupNorm(2, 6)
    >>> gn(clgrad.randn(3, 6, 4)).shape, gn
    (clgrad.Size([3, 6, 4]), GroupNorm(2, 6, eps=1e-05, affine=True, bias=True))
    """

    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True, device=None, dtype=None,
                 *, bias=True):
        super().__init__()
        if num_channels % num_groups != 0:
            raise ValueError("num_channels must be divisible by num_groups")
        self.num_groups = num_groups
        self.num_channels = num_channels
        self.eps = eps
        self.affine = affine
        affine_parameters(self, (num_channels,), affine, bias, device, dtype)
        self.reset_parameters()

    def reset_parameters(self):
        """Weight 1, bias 0."""
        reset_affine(self)

    def forward(self, input):
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"bias={self.bias is not None}")
