"""LayerNorm, GroupNorm, RMSNorm, InstanceNorm1d/2d/3d and LocalResponseNorm."""
import numbers

from ...ops.creation import empty, ones, zeros, tensor
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module
from ... import dtypes as _dt

__all__ = ["LayerNorm", "GroupNorm", "RMSNorm", "InstanceNorm1d", "InstanceNorm2d",
           "InstanceNorm3d", "LocalResponseNorm", "CrossMapLRN2d"]


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


class RMSNorm(Module):
    """x / sqrt(mean(x^2) + eps) over the trailing normalized_shape dims, times a learned
    weight (1 at first).

    >>> import clgrad
    >>> m = clgrad.nn.RMSNorm(4)
    >>> m(clgrad.ones(2, 4)).shape, m
    (clgrad.Size([2, 4]), RMSNorm((4,), eps=None, elementwise_affine=True))
    """

    def __init__(self, normalized_shape, eps=None, elementwise_affine=True, device=None,
                 dtype=None):
        super().__init__()
        if isinstance(normalized_shape, numbers.Integral):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(empty(self.normalized_shape, device=device, dtype=dtype))
            init.ones_(self.weight)
        else:
            self.register_parameter("weight", None)

    def reset_parameters(self):
        if self.weight is not None:
            init.ones_(self.weight)

    def forward(self, x):
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self):
        return f"{self.normalized_shape}, eps={self.eps}, " \
               f"elementwise_affine={self.elementwise_affine}"


class _InstanceNorm(Module):
    _dims = 3

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=False,
                 track_running_stats=False, device=None, dtype=None, *, bias=True):
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        affine_parameters(self, (num_features,), affine, bias, device, dtype)
        if track_running_stats:
            self.register_buffer("running_mean", zeros(num_features, device=device,
                                                       dtype=dtype))
            self.register_buffer("running_var", ones(num_features, device=device, dtype=dtype))
            self.register_buffer("num_batches_tracked", zeros((), dtype=_dt.int64,
                                                              device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        reset_affine(self)

    def forward(self, input):
        if input.dim() not in (self._dims - 1, self._dims):
            raise ValueError(f"expected {self._dims - 1}D or {self._dims}D input (got "
                             f"{input.dim()}D input)")
        unbatched = input.dim() == self._dims - 1
        x = input.unsqueeze(0) if unbatched else input
        use_stats = self.training or not self.track_running_stats
        if self.training and self.track_running_stats:
            self.num_batches_tracked.add_(1)
        out = F.instance_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                              use_stats, self.momentum if self.momentum is not None else 0.1,
                              self.eps)
        return out.squeeze(0) if unbatched else out

    def extra_repr(self):
        return f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, " \
               f"affine={self.affine}, bias={self.bias is not None}, " \
               f"track_running_stats={self.track_running_stats}"


class InstanceNorm1d(_InstanceNorm):
    """Normalise each channel of each sample over its length ([N, C, L] or [C, L]).

    >>> import clgrad
    >>> clgrad.nn.InstanceNorm1d(2)(clgrad.randn(3, 2, 5)).shape
    clgrad.Size([3, 2, 5])
    """
    _dims = 3


class InstanceNorm2d(_InstanceNorm):
    """Normalise each channel of each sample over its H x W positions.

    >>> import clgrad
    >>> clgrad.nn.InstanceNorm2d(2, affine=True)(clgrad.randn(1, 2, 3, 3)).shape
    clgrad.Size([1, 2, 3, 3])
    """
    _dims = 4


class InstanceNorm3d(_InstanceNorm):
    """Normalise each channel of each sample over its D x H x W positions.

    >>> import clgrad
    >>> clgrad.nn.InstanceNorm3d(1)(clgrad.randn(1, 1, 2, 2, 2)).shape
    clgrad.Size([1, 1, 2, 2, 2])
    """
    _dims = 5


class LocalResponseNorm(Module):
    """Normalise each channel by the squares of `size` neighbouring channels.

    >>> import clgrad
    >>> clgrad.nn.LocalResponseNorm(2)(clgrad.ones(1, 3, 2)).shape
    clgrad.Size([1, 3, 2])
    """

    def __init__(self, size, alpha=1e-4, beta=0.75, k=1.0):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input):
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self):
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


class CrossMapLRN2d(Module):
    """Lua Torch's cross-channel normalisation of 4-D inputs, as torch.nn.CrossMapLRN2d keeps
    it: x * (k + alpha / size * s)^-beta, where s sums the squares of the channels from
    c - p + 1 to c + p - 1 (p = (size - 1) // 2 + 1) and, once c > p, channel 0 as well: torch's
    sliding sum never removes the first channel, and clgrad gives the same numbers.

    >>> import clgrad
    >>> clgrad.nn.CrossMapLRN2d(3)(clgrad.ones(1, 4, 2, 2)).shape
    clgrad.Size([1, 4, 2, 2])
    """

    def __init__(self, size, alpha=1e-4, beta=0.75, k=1):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input):
        if input.dim() != 4:
            raise ValueError(f"CrossMapLRN2d: Expected input to be 4D, got {input.dim()}D "
                             f"instead.")
        C = input.shape[1]
        p = int((self.size - 1) / 2 + 1)
        # prefix sums of the squares over channels, a zero row first: P[j] = sum of the first j
        P = (input * input).cumsum(1)
        P = F.pad(P, (0, 0, 0, 0, 1, 0))
        hi = [min(c + p, C) for c in range(C)]                  # channels below hi are in
        lo = [max(c - p + 1, 1) if c > p else 0 for c in range(C)]   # [1, lo) are out
        dev = input.device
        s = P.index_select(1, tensor(hi, device=dev)) - P.index_select(1, tensor(lo, device=dev)) \
            + P.index_select(1, tensor([1 if c > p else 0 for c in range(C)], device=dev))
        return input * (s * (self.alpha / self.size) + self.k).pow(-self.beta)

    def extra_repr(self):
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"
