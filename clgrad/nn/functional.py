"""clgrad.nn.functional: the layers and losses as functions, with torch.nn.functional's names,
arguments and defaults. Everything is built from clgrad ops (so it differentiates to any order);
activations use the fused kernels of the elementwise table. The functions live by subject in
clgrad/nn/_functional_<subject>.py (activation, dropout, embedding, linear, loss,
loss_class, norm, pool, ...); this module holds the 1-d and 2-d convolutions and
assembles the namespace.

>>> import clgrad
>>> import clgrad.nn.functional as F
>>> F.relu(clgrad.tensor([-1.0, 2.0])).tolist()
[0.0, 2.0]
"""
# the names this module has always offered beside the functions (F.where, F.Tensor, F.no_grad,
# ...): kept, so that code reaching them here finds the same objects
import math
import numbers
import warnings

from .. import dtypes
from ..autograd.function import Function
from ..autograd.grad_mode import is_grad_enabled, no_grad
from ..ops import conv as _conv
from ..ops import norm as _norm
from ..ops.attention import scaled_dot_product_attention
from ._mha import multi_head_attention_forward
from .modules.utils import _ntuple
from ..ops import linalg, softmax as _softmax
from ..ops.creation import arange, empty_like, zeros
from ..ops.elementwise import apply_ew
from ..ops.pointwise import addcmul, clamp, inplace as _inplace, where
from ..ops.shape import pad
from ..tensor import Tensor

__all__ = ["pad", "conv1d", "conv2d", "conv_transpose2d", "scaled_dot_product_attention",
           "multi_head_attention_forward"]


# ---- convolution (kernels in clgrad.ops.conv) ------------------------------------------------
# here rather than in a satellite: they need nn.modules.utils._ntuple, and a satellite importing
# it would join the nn.functional <-> nn.modules import cycle (tests/test_layers.py)
def _string_padding(input, weight, stride, padding, dilation, nd):
    """Turn padding='valid' / 'same' into numbers; 'same' with odd total padding pads the input
    (the extra element on the right, as torch does) and returns 0."""
    if padding == "valid":
        return input, 0
    if padding != "same":             # torch's functional raises RuntimeError (modules: ValueError)
        raise RuntimeError(f"Invalid padding string: '{padding}' (conv{nd}d of input of shape "
                           f"{list(input.shape)})")
    if any(s != 1 for s in _ntuple(nd)(stride)):
        raise RuntimeError(f"padding='same' is not supported for strided convolutions (conv{nd}d "
                           f"of input of shape {list(input.shape)}, stride {stride})")
    dil = _ntuple(nd)(dilation)
    total = [d * (k - 1) for d, k in zip(dil, weight.shape[2:])]
    left = [t // 2 for t in total]
    if all(t % 2 == 0 for t in total):
        return input, tuple(left)
    extra = []
    for t, lo in zip(reversed(total), reversed(left)):      # pad lists the last dim first
        extra += [0, t - 2 * lo]
    return pad(input, extra), tuple(left)


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-D convolution (cross-correlation) over (N, C, L) inputs; padding may be 'same' or
    'valid'."""
    if isinstance(padding, str):
        input, padding = _string_padding(input, weight, stride, padding, dilation, 1)
    return _conv.conv1d(input, weight, bias, stride, padding, dilation, groups)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-D convolution (cross-correlation) over (N, C, H, W) inputs; padding may be 'same' or
    'valid'."""
    if isinstance(padding, str):
        input, padding = _string_padding(input, weight, stride, padding, dilation, 2)
    return _conv.conv2d(input, weight, bias, stride, padding, dilation, groups)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """2-D transposed convolution (the gradient of conv2d with respect to its input)."""
    return _conv.conv_transpose2d(input, weight, bias, stride, padding, output_padding, groups,
                                  dilation)


# ---- torch.nn.functional, by subject (clgrad/nn/_functional_<subject>.py) ----------------------
from . import _functional_activation  # noqa: E402
from ._functional_activation import *  # noqa: E402,F401,F403

__all__ += _functional_activation.__all__
from . import _functional_distance  # noqa: E402
from ._functional_distance import *  # noqa: E402,F401,F403

__all__ += _functional_distance.__all__
from . import _functional_loss  # noqa: E402
from ._functional_loss import *  # noqa: E402,F401,F403

__all__ += _functional_loss.__all__
from . import _functional_loss_class  # noqa: E402
from ._functional_loss_class import *  # noqa: E402,F401,F403

__all__ += _functional_loss_class.__all__
from . import _functional_norm  # noqa: E402
from ._functional_norm import *  # noqa: E402,F401,F403

__all__ += _functional_norm.__all__
from . import _interpolate  # noqa: E402
from ._interpolate import *  # noqa: E402,F401,F403

__all__ += _interpolate.__all__
from . import _functional_pool  # noqa: E402
from ._functional_pool import *  # noqa: E402,F401,F403

__all__ += _functional_pool.__all__
from . import _functional_conv3d  # noqa: E402
from ._functional_conv3d import *  # noqa: E402,F401,F403

__all__ += _functional_conv3d.__all__
from . import _functional_pool3d  # noqa: E402
from ._functional_pool3d import *  # noqa: E402,F401,F403

__all__ += _functional_pool3d.__all__
from . import _functional_sample  # noqa: E402
from ._functional_sample import *  # noqa: E402,F401,F403

__all__ += _functional_sample.__all__
from . import _functional_dropout  # noqa: E402
from ._functional_dropout import *  # noqa: E402,F401,F403

__all__ += _functional_dropout.__all__
from . import _functional_embedding  # noqa: E402
from ._functional_embedding import *  # noqa: E402,F401,F403

__all__ += _functional_embedding.__all__
from . import _functional_linear  # noqa: E402
from ._functional_linear import *  # noqa: E402,F401,F403

__all__ += _functional_linear.__all__
from . import _functional_unpool  # noqa: E402
from ._functional_unpool import *  # noqa: E402,F401,F403

__all__ += _functional_unpool.__all__
from . import _functional_overrides  # noqa: E402
from ._functional_overrides import *  # noqa: E402,F401,F403

__all__ += _functional_overrides.__all__

# the helpers that other modules reach through clgrad.nn.functional (F._reduce, F._reduction,
# F._legacy_reduction, F._channel_dropout, F._renorm_rows_, ...), as they always could
from ._functional_activation import _act, _softmax_dim  # noqa: E402,F401
from ._functional_dropout import _channel_dropout, _check_feature_dropout  # noqa: E402,F401
from ._functional_embedding import _ScaleGrad, _renorm_rows_  # noqa: E402,F401
from ._functional_loss import (  # noqa: E402,F401
    _broadcast_pair, _check_into, _check_reduction, _float_operands, _legacy_reduction, _reduce,
    _reduction, _times_into, _warn_shapes)
from ._functional_loss_class import (  # noqa: E402,F401
    _BinaryCrossEntropy, _check_nll_dtypes, _check_targets, _check_weight, _class_dim,
    _gather_targets, _picked)
from ._functional_norm import (  # noqa: E402,F401
    _channel_shape, _check_float, _check_mixed, _check_same_dtype, _what)
