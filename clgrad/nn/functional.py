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

__all__ = ["pad", "scaled_dot_product_attention", "multi_head_attention_forward"]


# ---- torch.nn.functional, by subject (clgrad/ops/<subject>.py) ------------------------------
from ..ops import activation as _activation  # noqa: E402
from ..ops.activation import *  # noqa: E402,F401,F403

__all__ += _activation.__all__
from ..ops import distance as _distance  # noqa: E402
from ..ops.distance import *  # noqa: E402,F401,F403

__all__ += _distance.__all__
from ..ops import loss as _loss  # noqa: E402
from ..ops.loss import *  # noqa: E402,F401,F403

__all__ += _loss.__all__
from ..ops import loss_class as _loss_class  # noqa: E402
from ..ops.loss_class import *  # noqa: E402,F401,F403

__all__ += _loss_class.__all__
from ..ops import normalization as _normalization  # noqa: E402
from ..ops.normalization import *  # noqa: E402,F401,F403

__all__ += _normalization.__all__
from ..ops import interpolate as _interpolate  # noqa: E402
from ..ops.interpolate import *  # noqa: E402,F401,F403

__all__ += _interpolate.__all__
from ..ops import pool as _pool  # noqa: E402
from ..ops.pool import *  # noqa: E402,F401,F403

__all__ += _pool.__all__
from ..ops import conv_composed as _conv_composed  # noqa: E402
from ..ops.conv_composed import *  # noqa: E402,F401,F403

__all__ += _conv_composed.__all__
from ..ops import pool3d as _pool3d  # noqa: E402
from ..ops.pool3d import *  # noqa: E402,F401,F403

__all__ += _pool3d.__all__
from ..ops import grid_sample as _grid_sample  # noqa: E402
from ..ops.grid_sample import *  # noqa: E402,F401,F403

__all__ += _grid_sample.__all__
from ..ops import dropout as _dropout  # noqa: E402
from ..ops.dropout import *  # noqa: E402,F401,F403

__all__ += _dropout.__all__
from ..ops import embedding as _embedding  # noqa: E402
from ..ops.embedding import *  # noqa: E402,F401,F403

__all__ += _embedding.__all__
from ..ops import linear as _linear  # noqa: E402
from ..ops.linear import *  # noqa: E402,F401,F403

__all__ += _linear.__all__
from ..ops import unpool as _unpool  # noqa: E402
from ..ops.unpool import *  # noqa: E402,F401,F403

__all__ += _unpool.__all__
from . import _functional_overrides  # noqa: E402
from ._functional_overrides import *  # noqa: E402,F401,F403

__all__ += _functional_overrides.__all__

# the helpers that other modules reach through clgrad.nn.functional (F._reduce, F._reduction,
# F._legacy_reduction, F._channel_dropout, F._renorm_rows_, ...), as they always could
from ..ops.activation import _act, _softmax_dim  # noqa: E402,F401
from ..ops.dropout import _channel_dropout, _check_feature_dropout  # noqa: E402,F401
from ..ops.embedding import _ScaleGrad, _renorm_rows_  # noqa: E402,F401
from ..ops.loss import (  # noqa: E402,F401
    _broadcast_pair, _check_into, _check_reduction, _float_operands, _legacy_reduction, _reduce,
    _reduction, _times_into, _warn_shapes)
from ..ops.loss_class import (  # noqa: E402,F401
    _BinaryCrossEntropy, _check_nll_dtypes, _check_targets, _check_weight, _class_dim,
    _gather_targets, _picked)
from ..ops.normalization import (  # noqa: E402,F401
    _channel_shape, _check_float, _check_mixed, _check_same_dtype, _what)

# the ops layer's view of this namespace (clgrad/ops/dispatch.py): where an op composed of these
# functions calls one that autocast wraps, it calls it here
from ..ops import dispatch as _dispatch  # noqa: E402

_dispatch.F = sys.modules[__name__]
