"""clgrad.nn.functional: the layers and losses as functions, with torch.nn.functional's names,
arguments and defaults. Everything is built from clgrad ops (so it differentiates to any order);
activations use the fused kernels of the elementwise table. The functions live by subject in the
ops layer (clgrad/ops/activation.py, conv_composed.py, distance.py, dropout.py, embedding.py,
grid_sample.py, interpolate.py, linear.py, loss.py, loss_class.py, normalization.py, pool.py,
pool3d.py, unpool.py), as ATen holds torch's: the top-level forms (clgrad.dropout, ...) and the
Tensor methods reach them there, and nn imports ops, never the reverse. This module assembles
the namespace, with multi_head_attention_forward (clgrad/nn/_mha.py) and torch's
__torch_function__ helpers (clgrad/nn/_functional_overrides.py).

>>> import clgrad
>>> import clgrad.nn.functional as F
>>> F.relu(clgrad.tensor([-1.0, 2.0])).tolist()
[0.0, 2.0]
"""
# the names this module has always offered beside the functions (F.where, F.Tensor, F.no_grad,
# ...): kept, so that code reaching them here finds the same objects
import math
import numbers
import sys
import warnings

from .. import dtypes
from ..autograd.function import Function
from ..autograd.grad_mode import is_grad_enabled, no_grad
from ..ops import conv as _conv
from ..ops import norm as _norm
from ..ops.attention import scaled_dot_product_attention
from ._mha import multi_head_attention_forward
from ..ops.window_args import _ntuple
from ..ops import linalg, softmax as _softmax
from ..ops.creation import arange, empty_like, zeros
from ..ops.elementwise import apply_ew
from ..ops.pointwise import addcmul, clamp, inplace as _inplace, where
from ..ops.shape import pad
from ..tensor import Tensor

# torch.nn.functional, by subject: the functions live in the ops layer (clgrad/ops/<subject>.py)
from ..ops import (activation as _activation, conv_composed as _conv_composed,
                   distance as _distance, dropout as _dropout, embedding as _embedding,
                   grid_sample as _grid_sample, interpolate as _interpolate, linear as _linear,
                   loss as _loss, loss_class as _loss_class, normalization as _normalization,
                   pool as _pool, pool3d as _pool3d, unpool as _unpool)
from ..ops.activation import *  # noqa: F401,F403
from ..ops.distance import *  # noqa: F401,F403
from ..ops.loss import *  # noqa: F401,F403
from ..ops.loss_class import *  # noqa: F401,F403
from ..ops.normalization import *  # noqa: F401,F403
from ..ops.interpolate import *  # noqa: F401,F403
from ..ops.pool import *  # noqa: F401,F403
from ..ops.conv_composed import *  # noqa: F401,F403
from ..ops.pool3d import *  # noqa: F401,F403
from ..ops.grid_sample import *  # noqa: F401,F403
from ..ops.dropout import *  # noqa: F401,F403
from ..ops.embedding import *  # noqa: F401,F403
from ..ops.linear import *  # noqa: F401,F403
from ..ops.unpool import *  # noqa: F401,F403
from . import _functional_overrides
from ._functional_overrides import *  # noqa: F401,F403
# the helpers that other modules reach through clgrad.nn.functional (F._reduce, F._reduction,
# F._legacy_reduction, F._channel_dropout, F._renorm_rows_, ...), as they always could
from ..ops.activation import _act, _softmax_dim  # noqa: F401
from ..ops.dropout import _channel_dropout, _check_feature_dropout  # noqa: F401
from ..ops.embedding import _ScaleGrad, _renorm_rows_  # noqa: F401
from ..ops.loss import (  # noqa: F401
    _broadcast_pair, _check_into, _check_reduction, _float_operands, _legacy_reduction, _reduce,
    _reduction, _times_into, _warn_shapes)
from ..ops.loss_class import (  # noqa: F401
    _BinaryCrossEntropy, _check_nll_dtypes, _check_targets, _check_weight, _class_dim,
    _gather_targets, _picked)
from ..ops.normalization import (  # noqa: F401
    _channel_shape, _check_float, _check_mixed, _check_same_dtype, _what)
from ..ops import dispatch as _dispatch

__all__ = (["pad", "scaled_dot_product_attention", "multi_head_attention_forward"]
           + _activation.__all__
           + _distance.__all__
           + _loss.__all__
           + _loss_class.__all__
           + _normalization.__all__
           + _interpolate.__all__
           + _pool.__all__
           + _conv_composed.__all__
           + _pool3d.__all__
           + _grid_sample.__all__
           + _dropout.__all__
           + _embedding.__all__
           + _linear.__all__
           + _unpool.__all__
           + _functional_overrides.__all__)

# the ops layer's view of this namespace (clgrad/ops/dispatch.py): where an op composed of these
# functions calls one that autocast wraps, it calls it here
_dispatch.F = sys.modules[__name__]
