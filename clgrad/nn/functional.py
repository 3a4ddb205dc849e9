"""clgrad.nn.functional: the layers and losses as functions, with torch.nn.functional's names,
arguments and defaults. Everything is built from clgrad ops (so it differentiates to any order);
activations use the fused kernels of the elementwise table.

>>> import clgrad
>>> import clgrad.nn.functional as F
>>> F.relu(clgrad.tensor([-1.0, 2.0])).tolist()
[0.0, 2.0]
"""
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

__all__ = [
    "linear", "relu", "relu_", "leaky_relu", "leaky_relu_", "elu", "gelu", "silu", "softplus",
    "logsigmoid", "sigmoid", "tanh", "softmax", "log_softmax", "dropout", "dropout1d",
    "dropout2d", "dropout3d", "batch_norm", "layer_norm", "group_norm", "normalize", "embedding", "one_hot", "pad", "conv1d", "conv2d",
    "conv_transpose2d", "max_pool2d", "avg_pool2d", "adaptive_avg_pool2d", "mse_loss", "l1_loss",
    "smooth_l1_loss", "huber_loss", "nll_loss", "cross_entropy", "binary_cross_entropy",
    "binary_cross_entropy_with_logits", "scaled_dot_product_attention",
    "multi_head_attention_forward",
]


# ---- linear ------------------------------------------------------------------------------------
def linear(input, weight, bias=None):
    """input @ weight.T + bias, over any leading dimensions.

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.linear(clgrad.ones(2, 3), clgrad.ones(4, 3), clgrad.zeros(4)).tolist()[0]
    [3.0, 3.0, 3.0, 3.0]
    """
    if input.ndim == 0 or weight.ndim == 0:
        raise RuntimeError(f"both arguments to linear need to be at least 1D, but they are "
                           f"{input.ndim}D and {weight.ndim}D")
    # torch's dispatch: addmm for a 2-d input with a bias, and for any contiguous input with a
    # bias of one dim (after squeeze); else matmul and the bias added in place
    if bias is not None and (input.ndim == 2 or (bias.ndim == 1 or bias.squeeze().ndim == 1)
                             and bias.is_contiguous() and input.is_contiguous()):
        wt = weight.t()
        if wt.ndim != 2:
            raise RuntimeError(f"mat2 must be a matrix, got {wt.ndim}-D tensor (linear: input of "
                               f"shape {list(input.shape)}, weight of shape "
                               f"{list(weight.shape)}, bias of shape {list(bias.shape)})")
        # one GEMM with the bias folded in; leading dims are flattened (a view when contiguous)
        if input.ndim == 2:
            return linalg.addmm(bias, input, wt)
        flat = linalg.addmm(bias, input.reshape(-1, input.shape[-1]), wt)
        return flat.reshape(tuple(input.shape[:-1]) + (weight.shape[0],))
    out = linalg.matmul(input, weight.t())
    if bias is None:
        return out
    _check_into(out, bias)                    # output.add_(bias): out's shape and dtype
    r = out + bias
    return r if r.dtype is out.dtype else r.to(out.dtype)


# ---- activations ---------------------------------------------------------------------------------
def _act(name, input, inplace, *params):
    if inplace:
        return _inplace(name, input, (), params)
    return apply_ew(name, input, *params)


def relu(input, inplace=False):
    """max(input, 0).

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.relu(clgrad.tensor([-2.0, 0.5])).tolist()
    [0.0, 0.5]
    """
    return _act("relu", input, inplace)


def relu_(input):
    """relu in place.

    >>> import clgrad, clgrad.nn.functional as F
    >>> x = clgrad.tensor([-1.0, 1.0])
    >>> F.relu_(x) is x, x.tolist()
    (True, [0.0, 1.0])
    """
    return _act("relu", input, True)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    """input where positive, negative_slope * input elsewhere.

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.leaky_relu(clgrad.tensor([-2.0, 3.0]), 0.5).tolist()
    [-1.0, 3.0]
    """
    return _act("leaky_relu", input, inplace, float(negative_slope))


def leaky_relu_(input, negative_slope=0.01):
    """leaky_relu in place.

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.leaky_relu_(clgrad.tensor([-2.0]), 0.5).tolist()
    [-1.0]
    """
    return _act("leaky_relu", input, True, float(negative_slope))


def elu(input, alpha=1.0, inplace=False):
    """input where positive, alpha * (exp(input) - 1) elsewhere.

    >>> import clgrad, clgrad.nn.functional as F
    >>> round(F.elu(clgrad.tensor([-1.0])).item(), 4)
    -0.6321
    """
    return _act("elu", input, inplace, float(alpha))


def gelu(input, approximate="none"):
    """x * Phi(x), exactly (approximate='none') or with torch's tanh approximation.

    >>> import clgrad, clgrad.nn.functional as F
    >>> [round(v, 4) for v in F.gelu(clgrad.tensor([1.0, -1.0])).tolist()]
    [0.8413, -0.1587]
    """
    if approximate == "none":
        return apply_ew("gelu", input)
    if approximate == "tanh":
        return apply_ew("gelu_tanh", input)
    raise RuntimeError(f"approximate argument must be either none or tanh, got {approximate!r}")


def silu(input, inplace=False):
    """x * sigmoid(x) (swish).

    >>> import clgrad, clgrad.nn.functional as F
    >>> round(F.silu(clgrad.tensor([1.0])).item(), 4)
    0.7311
    """
    return _act("silu", input, inplace)


def softplus(input, beta=1.0, threshold=20.0):
    """log(1 + exp(beta * x)) / beta, linear where beta * x > threshold.

    >>> import clgrad, clgrad.nn.functional as F
    >>> round(F.softplus(clgrad.tensor([0.0])).item(), 4)
    0.6931
    """
    return apply_ew("softplus", input, float(beta), float(threshold))


def logsigmoid(input):
    """log(sigmoid(x)), computed without overflow.

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.logsigmoid(clgrad.tensor([-200.0])).item()
    -200.0
    """
    if input.dtype.kind != "f":
        raise NotImplementedError(f'"log_sigmoid" not implemented for \'{input.dtype.name}\'')
    return -softplus(-input)


def sigmoid(input):
    """1 / (1 + exp(-x)).

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.sigmoid(clgrad.tensor([0.0])).tolist()
    [0.5]
    """
    return apply_ew("sigmoid", input)


def tanh(input):
    """Hyperbolic tangent.

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.tanh(clgrad.tensor([0.0])).tolist()
    [0.0]
    """
    return apply_ew("tanh", input)


def _softmax_dim(name, ndim):
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to "
                  f"include dim=X as an argument.", stacklevel=3)
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    """exp(x) / sum(exp(x)) along dim.

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.softmax(clgrad.tensor([[0.0, 0.0]]), dim=1).tolist()
    [[0.5, 0.5]]
    """
    if dim is None:
        dim = _softmax_dim("softmax", input.ndim)
    return _softmax.softmax(input, dim, dtype=dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    """log(softmax(x)) along dim, computed without overflow.

    >>> import clgrad, clgrad.nn.functional as F
    >>> [round(v, 4) for v in F.log_softmax(clgrad.tensor([1.0, 1.0]), dim=0).tolist()]
    [-0.6931, -0.6931]
    """
    if dim is None:
        dim = _softmax_dim("log_softmax", input.ndim)
    return _softmax.log_softmax(input, dim, dtype=dtype)


# ---- dropout -----------------------------------------------------------------------------------
def dropout(input, p=0.5, training=True, inplace=False):
    """Zero each element with probability p and scale the rest by 1/(1-p) (training only). The
    mask comes from the default generator, so clgrad.manual_seed makes it reproducible.

    >>> import clgrad, clgrad.nn.functional as F
    >>> y = F.dropout(clgrad.ones(1000), 0.25)
    >>> sorted({round(v, 4) for v in y.tolist()}), F.dropout(y, training=False) is y
    ([0.0, 1.3333], True)
    """
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return input.mul_(0.0) if inplace else input * 0.0
    with no_grad():
        mask = empty_like(input).bernoulli_(1.0 - p)
        mask.div_(1.0 - p)
    return input.mul_(mask) if inplace else input * mask


def _channel_dropout(input, p, training, inplace, batched):
    """Dropout of whole channels: one mask value per (batch, channel), or per channel for an
    unbatched input."""
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    lead = 2 if batched else 1
    mask_shape = tuple(input.shape[:lead]) + (1,) * (input.ndim - lead)
    if p == 1.0:
        return input.mul_(0.0) if inplace else input * 0.0
    with no_grad():
        mask = input.new_empty(mask_shape).bernoulli_(1.0 - p)
        mask.div_(1.0 - p)
    return input.mul_(mask) if inplace else input * mask


def dropout1d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels (rows of L values) of an (N, C, L) or (C, L) input with probability p,
    scaling the rest by 1/(1-p) (training only).

    >>> import clgrad, clgrad.nn.functional as F
    >>> y = F.dropout1d(clgrad.ones(4, 100, 3), 0.5)
    >>> sorted({v for v in y.sum(-1).flatten().tolist()})
    [0.0, 6.0]
    """
    if input.ndim not in (2, 3):
        raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {input.ndim}D "
                           f"input. Note that dropout1d exists to provide channel-wise dropout on "
                           f"inputs with 1 spatial dimension, a channel dimension, and an optional "
                           f"batch dimension (i.e. 2D or 3D inputs).")
    return _channel_dropout(input, p, training, inplace, input.ndim == 3)


def dropout2d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of an (N, C, H, W) input (or (N, C, L), as torch reads a 3-D one)
    with probability p, scaling the rest by 1/(1-p) (training only).

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.dropout2d(clgrad.ones(1, 2, 2, 2), 0.3, training=False).shape
    clgrad.Size([1, 2, 2, 2])
    """
    _check_feature_dropout("dropout2d", input, (3, 4))
    return _channel_dropout(input, p, training, inplace, True)


def dropout3d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of an (N, C, D, H, W) or (C, D, H, W) input with probability p,
    scaling the rest by 1/(1-p) (training only).

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.dropout3d(clgrad.ones(2, 1, 1, 1), 1.0).sum().item()
    0.0
    """
    _check_feature_dropout("dropout3d", input, (4, 5))
    return _channel_dropout(input, p, training, inplace, input.ndim == 5)


def _check_feature_dropout(name, input, dims):
    # torch warns about other ranks (and goes on) but cannot drop channels of fewer than 2 dims
    if input.ndim < 2:
        raise RuntimeError(f"{name}: Feature dropout requires at least 2 dimensions in the "
                           f"input, got {list(input.shape)}")
    if input.ndim not in dims:
        warnings.warn(f"{name}: Received a {input.ndim}-D input to {name}, which is deprecated "
                      f"and will result in an error in a future release: {name} expects a "
                      f"{dims[0]}-D or {dims[1]}-D input", stacklevel=3)


# ---- normalisation -----------------------------------------------------------------------------
def _channel_shape(input):
    return (1, input.shape[1]) + (1,) * (input.ndim - 2)


def _what(name, t):
    return f"{name} of dtype {dtypes.TORCH_NAMES[t._dtype]} and shape {list(t.shape)}"


def _check_mixed(op, input, **params):
    """torch's mixed-dtype rule for the normalisations' parameters (CPU): when the first one
    given has another dtype than the input, all must be float32 and the input bfloat16 or
    float16 (then the result is the input's dtype), else a RuntimeError. Returns whether the
    call is such a mixed one."""
    given = [(n, p) for n, p in params.items() if p is not None]
    if not given or given[0][1]._dtype is input._dtype:
        return False
    for n, p in given:
        if p._dtype is not dtypes.float32:
            raise RuntimeError(f"mixed dtype (CPU): expect parameter to have scalar type of "
                               f"Float ({op}: {_what(n, p)}, {_what('input', input)})")
    if input._dtype not in (dtypes.bfloat16, dtypes.float16):
        raise RuntimeError(f"mixed dtype (CPU): all inputs must share same datatype. ({op}: "
                           f"{_what('input', input)}, {_what(*given[0])})")
    return True


def _check_same_dtype(op, input, **params):
    """Parameters of a call that is not mixed: all of the input's dtype (torch's kernels)."""
    for n, p in params.items():
        if p is not None and p._dtype is not input._dtype:
            raise RuntimeError(f"expected scalar type {dtypes.TORCH_NAMES[input._dtype]} but "
                               f"found {dtypes.TORCH_NAMES[p._dtype]} ({op}: {_what(n, p)}, "
                               f"{_what('input', input)})")


def _check_float(kernel, input):
    if input.dtype.kind != "f":
        raise NotImplementedError(f'"{kernel}" not implemented for '
                                  f"'{dtypes.TORCH_NAMES[input._dtype]}' (input of shape "
                                  f"{list(input.shape)})")


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,
               momentum=0.1, eps=1e-05):
    """Normalise each channel (dim 1) by the batch's statistics (training: also updating the
    running ones in place, with the unbiased variance) or by the running statistics.

    >>> import clgrad, clgrad.nn.functional as F
    >>> x = clgrad.tensor([[1.0], [3.0]])
    >>> rm, rv = clgrad.zeros(1), clgrad.ones(1)
    >>> [round(v, 4) for v in F.batch_norm(x, rm, rv, training=True).flatten().tolist()]
    [-1.0, 1.0]
    >>> [round(v, 4) for v in rm.tolist() + rv.tolist()]
    [0.2, 1.1]
    """
    if input.ndim < 2:
        raise ValueError(f"expected 2D or more input (got {input.ndim}D input)")
    C = input.shape[1]
    shape = _channel_shape(input)
    n = input.shape[0] * math.prod(input.shape[2:])       # values per channel
    if training and n == 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input "
                         f"size {input.size()}")
    if input.numel() == 0:        # torch: a copy, through weight[0] and bias[0], unchecked
        out = input.clone()
        out = out if weight is None else out * weight[0]
        return out if bias is None else out + bias[0]
    for name, t in (("running_mean", running_mean), ("running_var", running_var),
                    ("weight", weight), ("bias", bias)):
        if t is None and name[0] == "r" and not training:
            raise RuntimeError(f"{name} must be defined in evaluation mode (batch_norm of input "
                               f"of shape {list(input.shape)})")
        if t is not None and t.numel() != C:
            raise RuntimeError(f"{name} should contain {C} elements not {t.numel()} (batch_norm "
                               f"of input of shape {list(input.shape)})")
    _check_float("batch_norm", input)
    params = dict(weight=weight, bias=bias, running_mean=running_mean, running_var=running_var)
    if _check_mixed("batch_norm", input, **params):
        return batch_norm(input.float(), running_mean, running_var, weight, bias, training,
                          momentum, eps).to(input.dtype)
    _check_same_dtype("batch_norm", input, **params)
    if training:
        dims = (0,) + tuple(range(2, input.ndim))
        mean = input.mean(dims, keepdim=True)
        xc = input - mean
        var = xc.square().mean(dims, keepdim=True)          # biased: what normalises
        with no_grad():
            if running_mean is not None:
                running_mean.mul_(1 - momentum).add_(mean.reshape(C) * momentum)
            if running_var is not None:
                running_var.mul_(1 - momentum).add_(var.reshape(C) * (momentum * n / (n - 1)))
        scale = (var + eps).rsqrt()
        if weight is not None:
            scale = scale * weight.reshape(shape)
        if bias is None:
            return xc * scale
        return addcmul(bias.reshape(shape), xc, scale)
    # evaluation: one fused pass, input * scale + shift
    scale = (running_var + eps).rsqrt()
    if weight is not None:
        scale = scale * weight
    shift = -(running_mean * scale)
    if bias is not None:
        shift = shift + bias
    return addcmul(shift.reshape(shape), input, scale.reshape(shape))


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-05):
    """Normalise over the trailing dims given by normalized_shape, then scale and shift.

    >>> import clgrad, clgrad.nn.functional as F
    >>> [round(v, 4) for v in F.layer_norm(clgrad.tensor([[1.0, 3.0]]), (2,)).flatten().tolist()]
    [-1.0, 1.0]
    """
    if isinstance(normalized_shape, numbers.Integral):
        normalized_shape = (normalized_shape,)
    normalized_shape = tuple(int(s) for s in normalized_shape)
    k = len(normalized_shape)
    if k == 0:
        raise RuntimeError(f"Expected normalized_shape to be at least 1-dimensional, i.e., "
                           f"containing at least one element, but got normalized_shape = []")
    mixed = _check_mixed("layer_norm", input, weight=weight, bias=bias)     # torch: first
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and tuple(t.shape) != normalized_shape:
            raise RuntimeError(f"Expected {name} to be of same shape as normalized_shape, but got "
                               f"{name} of shape {list(t.shape)} and normalized_shape = "
                               f"{list(normalized_shape)}")
    if input.ndim < k or tuple(input.shape[input.ndim - k:]) != normalized_shape:
        raise RuntimeError(f"Given normalized_shape={list(normalized_shape)}, expected input with "
                           f"shape [*, {', '.join(map(str, normalized_shape))}], but got input "
                           f"of size{list(input.shape)}")
    _check_float("LayerNormKernelImpl", input)
    if mixed:
        return _norm.layer_norm(input.float(), k, weight, bias, eps).to(input.dtype)
    _check_same_dtype("layer_norm", input, weight=weight, bias=bias)
    return _norm.layer_norm(input, k, weight, bias, eps)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-05):
    """Normalise each group of channels of every sample, then scale and shift per channel.

    >>> import clgrad, clgrad.nn.functional as F
    >>> x = clgrad.tensor([[1.0, 3.0, 5.0, 9.0]])
    >>> [round(v, 4) for v in F.group_norm(x, 2).flatten().tolist()]
    [-1.0, 1.0, -1.0, 1.0]
    """
    if input.ndim < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received "
                           f"{input.ndim}")
    N, C = input.shape[0], input.shape[1]
    if N * C // num_groups * math.prod(input.shape[2:]) == 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input size "
                         f"{[N * C // num_groups, num_groups] + list(input.shape[2:])}")
    if C % num_groups:
        raise RuntimeError(f"Expected number of channels in input to be divisible by "
                           f"num_groups, but got input of shape {list(input.shape)} and "
                           f"num_groups={num_groups}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and (t.ndim != 1 or t.numel() != C):
            raise RuntimeError(f"Expected {name} to be a vector of size equal to the number of "
                               f"channels in input, but got {name} of shape {list(t.shape)} and "
                               f"input of shape {list(input.shape)}")
    if _check_mixed("group_norm", input, weight=weight, bias=bias):
        return group_norm(input.float(), num_groups, weight, bias, eps).to(input.dtype)
    _check_float("GroupNormKernelImpl", input)
    _check_same_dtype("group_norm", input, weight=weight, bias=bias)
    per_group = C // num_groups * math.prod(input.shape[2:])      # -1 is ambiguous when N is 0
    y = _norm.normalize_last(input.reshape(N, num_groups, per_group), (2,), eps).reshape(
        input.shape)
    shape = _channel_shape(input)
    if weight is not None:
        w = weight.reshape(shape)
        return y * w if bias is None else addcmul(bias.reshape(shape), y, w)
    return y if bias is None else y + bias.reshape(shape)


def normalize(input, p=2.0, dim=1, eps=1e-12):
    """input / max(||input||_p along dim, eps).

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.normalize(clgrad.tensor([[3.0, 4.0]])).tolist()
    [[0.6000000238418579, 0.800000011920929]]
    """
    return input / input.norm(p, dim, keepdim=True).clamp_min(eps).expand_as(input)


# ---- embedding ---------------------------------------------------------------------------------
class _ScaleGrad(Function):
    """Identity whose backward multiplies the gradient by `scale` (scale_grad_by_freq)."""

    @staticmethod
    def forward(ctx, x, scale):
        ctx.scale = scale
        return x.clone()

    @staticmethod
    def backward(ctx, g):
        return g * ctx.scale, None


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False):
    """Rows of weight picked by the integer indices in input (shape input.shape + (dim,)). The
    row padding_idx gets no gradient; max_norm renormalises the rows used, in place.

    >>> import clgrad, clgrad.nn.functional as F
    >>> w = clgrad.tensor([[0.0, 0.0], [1.0, 2.0], [3.0, 4.0]])
    >>> F.embedding(clgrad.tensor([[2, 1]]), w).tolist()
    [[[3.0, 4.0], [1.0, 2.0]]]
    """
    if not isinstance(input, Tensor) or input.dtype not in (dtypes.int64, dtypes.int32):
        got = f"clgrad.{input.dtype.name.capitalize()}Tensor" if isinstance(input, Tensor) \
            else type(input).__name__
        raise RuntimeError(f"Expected tensor for argument #1 'indices' to have one of the "
                           f"following scalar types: Long, Int; but got {got} instead (while "
                           f"checking arguments for embedding)")
    if sparse:
        raise NotImplementedError("clgrad has no sparse gradients: use sparse=False")
    n = weight.shape[0]
    if padding_idx is not None:
        if not -n <= padding_idx < n:
            raise AssertionError("Padding_idx must be within num_embeddings")
        padding_idx %= n
    flat = input.reshape(-1)
    if max_norm is not None:
        _renorm_rows_(weight, flat, max_norm, norm_type)
    out = weight.index_select(0, flat)
    if scale_grad_by_freq and weight.requires_grad and is_grad_enabled():
        # each row's gradient is divided by how often its index occurs in the batch
        idx = flat.to(dtypes.int64)
        counts = zeros(n, dtype=weight.dtype, device=weight.device)
        counts = counts.index_add(0, idx, counts.new_ones(idx.shape))
        out = _ScaleGrad.apply(out, counts.index_select(0, idx).reciprocal().unsqueeze(1))
    out = out.reshape(tuple(input.shape) + (weight.shape[1],))
    if padding_idx is not None and weight.requires_grad and is_grad_enabled():
        # same values, but the gradient of the padding positions is cut off
        pad_mask = (input == padding_idx).unsqueeze(-1)
        out = where(pad_mask, out.detach(), out)
    return out


def _renorm_rows_(weight, idx, max_norm, norm_type):
    """Scale the rows of weight that idx uses so that their norm is at most max_norm."""
    with no_grad():
        used = zeros(weight.shape[0], device=weight.device).index_fill(
            0, idx.to(dtypes.int64), 1.0) > 0
        norms = weight.norm(norm_type, 1)
        scale = where(used & (norms > max_norm), max_norm / (norms + 1e-7), 1.0)
        weight.mul_(scale.to(weight.dtype).unsqueeze(1))


def one_hot(tensor, num_classes=-1):
    """int64 one-hot encoding along a new last dim (num_classes=-1: max + 1).

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.one_hot(clgrad.tensor([0, 2]), 3).tolist()
    [[1, 0, 0], [0, 0, 1]]
    """
    if tensor.dtype is not dtypes.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if num_classes == -1:
        if tensor.numel() == 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        num_classes = int(tensor.max().item()) + 1
    if tensor.numel():
        # one host read; without it a bad class would give an all-zero row silently
        if bool((tensor < 0).any().item()):
            raise RuntimeError("Class values must be non-negative.")
        if bool((tensor >= num_classes).any().item()):
            raise RuntimeError("Class values must be smaller than num_classes.")
    classes = arange(num_classes, device=tensor.device)
    return (tensor.unsqueeze(-1) == classes).to(dtypes.int64)


# ---- convolution and pooling (kernels in clgrad.ops.conv) --------------------------------------
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


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """2-D max pooling (integer tensors too, without gradient).

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.max_pool2d(clgrad.arange(16).reshape(1, 1, 4, 4), 2).reshape(-1).tolist()
    [5, 7, 13, 15]
    """
    def pool(x):
        return _conv.max_pool2d(x, kernel_size, stride, padding, dilation, ceil_mode,
                                return_indices)
    if isinstance(input, Tensor) and not input.dtype.is_floating_point:
        from ._functional_pool import int_max_pool2d
        return int_max_pool2d(input, pool, return_indices)
    return pool(input)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """2-D average pooling (of integer tensors: the mean truncated toward zero, as torch's).

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.avg_pool2d(clgrad.arange(16).reshape(1, 1, 4, 4), 2).reshape(-1).tolist()
    [2, 4, 10, 12]
    """
    def pool(x):
        return _conv.avg_pool2d(x, kernel_size, stride, padding, ceil_mode, count_include_pad,
                                divisor_override)
    if isinstance(input, Tensor) and not input.dtype.is_floating_point:
        from ._functional_pool import int_avg_pool2d
        return int_avg_pool2d(input, pool)
    return pool(input)


def adaptive_avg_pool2d(input, output_size):
    """2-D average pooling to a given output size."""
    return _conv.adaptive_avg_pool2d(input, output_size)


# ---- losses ------------------------------------------------------------------------------------
def _legacy_reduction(size_average, reduce):
    """The reduction the deprecated size_average / reduce arguments ask for."""
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    ret = "mean" if size_average and reduce else "sum" if reduce else "none"
    warnings.warn(f"size_average and reduce args will be deprecated, please use "
                  f"reduction='{ret}' instead.", stacklevel=3)
    return ret


def _reduction(size_average, reduce, reduction):
    if size_average is not None or reduce is not None:
        return _legacy_reduction(size_average, reduce)
    return reduction


def _reduce(loss, reduction):
    if reduction == "none":
        return loss
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    raise ValueError(f"{reduction} is not a valid value for reduction")


def _check_reduction(reduction):
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")


def _warn_shapes(input, target):
    if target.shape != input.shape:
        warnings.warn(f"Using a target size ({target.size()}) that is different to the input "
                      f"size ({input.size()}). This will likely lead to incorrect results due "
                      f"to broadcasting. Please ensure they have the same size.", stacklevel=3)


def _broadcast_pair(input, target):
    """torch.broadcast_tensors(input, target), as torch's mse, l1 and smooth_l1 losses begin:
    a 0-d operand beside a dimensioned one is then dimensioned too, and takes part in the
    promotion as one."""
    if input.shape == target.shape:
        return input, target
    from ..ops._base import broadcast_shapes
    shape = broadcast_shapes(tuple(input.shape), tuple(target.shape))
    return input.expand(shape), target.expand(shape)


def _float_operands(kernel, input, target):
    """torch computes mse, smooth_l1 and huber losses in one kernel over input and target
    promoted together: bool and integer operands are cast to the promoted type (a float input
    with a bool target works, where input - target would refuse the bool), and a promoted type
    that is not floating has no kernel (l1_loss, composed of - and abs, is not one of these)."""
    dt = dtypes.result_type(input, target)
    if kernel == "huber" and not dtypes.can_cast(dt, input.dtype):   # its result is input's
        raise RuntimeError(f"result type {dtypes.TORCH_NAMES[dt]} can't be cast to the desired "
                           f"output type {dtypes.TORCH_NAMES[input.dtype]}")
    if dt.kind != "f":
        raise NotImplementedError(f'"{kernel}" not implemented for '
                                  f"'{dtypes.TORCH_NAMES[dt]}'")
    return input.to(dt), target.to(dt)


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Mean squared error, (input - target)^2 reduced.

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.mse_loss(clgrad.tensor([1.0, 3.0]), clgrad.tensor([0.0, 0.0])).item()
    5.0
    """
    reduction = _reduction(size_average, reduce, reduction)
    _warn_shapes(input, target)
    input, target = _broadcast_pair(input, target)
    input, target = _float_operands("mse", input, target)
    loss = (input - target).square()
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Mean absolute error, |input - target| reduced.

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.l1_loss(clgrad.tensor([1.0, -3.0]), clgrad.tensor([0.0, 0.0])).item()
    2.0
    """
    reduction = _reduction(size_average, reduce, reduction)
    _warn_shapes(input, target)
    input, target = _broadcast_pair(input, target)
    loss = (input - target).abs()
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """0.5 d^2 / beta where |d| < beta, |d| - 0.5 beta elsewhere (d = input - target).

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.smooth_l1_loss(clgrad.tensor([0.5, 3.0]), clgrad.zeros(2), reduction="none").tolist()
    [0.125, 2.5]
    """
    reduction = _reduction(size_average, reduce, reduction)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    _warn_shapes(input, target)
    input, target = _broadcast_pair(input, target)
    if beta == 0:
        return l1_loss(input, target, reduction=reduction)
    input, target = _float_operands("smooth_l1", input, target)
    d = (input - target).abs()
    loss = where(d < beta, d.square() * (0.5 / beta), d - 0.5 * beta)
    return _reduce(loss, reduction)


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """0.5 d^2 where |d| < delta, delta (|d| - 0.5 delta) elsewhere.

    >>> import clgrad, clgrad.nn.functional as F
    >>> x = clgrad.tensor([0.5, 3.0])
    >>> F.huber_loss(x, clgrad.zeros(2), reduction="none", delta=2.0).tolist()
    [0.125, 4.0]
    """
    _warn_shapes(input, target)
    from ..ops._base import broadcast_shapes
    broadcast_shapes(tuple(input.shape), tuple(target.shape))    # torch: shapes, then delta
    if not delta > 0:
        raise RuntimeError(f"huber_loss does not support non-positive values for delta. (got "
                           f"delta={delta}, input of shape {list(input.shape)})")
    out_dtype = input.dtype
    input, target = _float_operands("huber", input, target)
    d = (input - target).abs()
    loss = where(d < delta, d.square() * 0.5, (d - 0.5 * delta) * delta).to(out_dtype)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def _class_dim(input):
    return 0 if input.ndim == 1 else 1


def _check_targets(input, target):
    if input.ndim == 0:
        raise ValueError("Expected input to have at least 1 dimension (got 0)")
    if input.ndim >= 2 and target.shape[:1] != input.shape[:1]:
        raise ValueError(f"Expected input batch_size ({input.shape[0]}) to match target "
                         f"batch_size ({target.shape[0] if target.ndim else 0}).")
    if target.dtype not in (dtypes.int64, dtypes.uint8):
        raise RuntimeError(f"expected target dtype to be Long or Byte, but got "
                           f"{dtypes.TORCH_NAMES[target.dtype]} (target of shape "
                           f"{list(target.shape)})")
    cd = _class_dim(input)
    want = tuple(input.shape[:cd]) + tuple(input.shape[cd + 1:])
    if tuple(target.shape) != want:
        raise RuntimeError(f"Expected target size {list(want)}, got {list(target.shape)}")


def _check_weight(weight, C):
    if weight is not None and (weight.ndim != 1 or weight.shape[0] != C):
        raise RuntimeError(f"weight tensor should be defined either for all {C} classes or no "
                           f"classes but got weight tensor of shape: {list(weight.shape)}")


def _check_nll_dtypes(op, input, weight):
    """torch's nll kernels: a float input (inputs of more than 2 dims go to the 2-d frame), and
    class weights of its dtype."""
    if input.dtype.kind != "f":
        frame = "nll_loss_out_frame" if input.ndim <= 2 else "nll_loss2d_forward_out_frame"
        raise NotImplementedError(f'"{frame}" not implemented for '
                                  f"'{dtypes.TORCH_NAMES[input.dtype]}' ({op}: input of shape "
                                  f"{list(input.shape)})")
    if weight is not None and weight.dtype is not input.dtype:
        raise RuntimeError(f"expected scalar type {dtypes.TORCH_NAMES[input.dtype]} but found "
                           f"{dtypes.TORCH_NAMES[weight.dtype]} ({op}: weight of shape "
                           f"{list(weight.shape)}, input of shape {list(input.shape)})")


def _gather_targets(op, logp, safe, cd):
    """logp at the class indices `safe` (int64, ignored targets already 0) along cd; a class
    out of range is torch's IndexError "Target N is out of bounds." (one host sync: the check
    gather would make, made here so that it names the target)."""
    from ..ops._base import same_device
    from ..ops.index import Gather, _check_range
    same_device(op, [logp, safe])
    C = logp.shape[cd]
    _check_range(op, safe, C, cd, False, IndexError,
                 fmt="Target {v} is out of bounds. ({op}: input of shape "
                     + str(list(logp.shape)) + ", {n} classes along dim {d})")
    return Gather.apply(logp, cd, safe.unsqueeze(cd)).squeeze(cd)


def _picked(logp, target, weight, ignore_index, op):
    """logp at each target class, the weight of each target (0 where ignored) and where the
    targets are ignored."""
    cd = _class_dim(logp)
    if weight is None and target.dtype is dtypes.int64 and logp.dtype.kind == "f":
        # the usual case in one kernel: the safe targets and their 0/1 weights
        from ..kernels.index import class_targets_raw
        safe, w = class_targets_raw(target, ignore_index, logp.dtype)
        picked = _gather_targets(op, logp, safe, cd)
        return picked, w, None                 # ignored: w == 0, made only if wanted
    ignored = target == ignore_index
    safe = where(ignored, 0, target).long()   # ignored targets may be out of range
    picked = _gather_targets(op, logp, safe, cd)
    if weight is None:
        w = ignored.logical_not().to(logp.dtype)
    else:
        w = weight.to(logp.dtype).index_select(0, safe.reshape(-1)).reshape(target.shape)
        w = where(ignored, 0.0, w)
    return picked, w, ignored


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
             reduction="mean"):
    """Negative log likelihood of log-probabilities input (N, C, ...) at class indices target
    (N, ...); 'mean' divides by the total weight of the targets that are not ignored.

    >>> import clgrad, clgrad.nn.functional as F
    >>> logp = clgrad.tensor([[-1.0, -2.0], [-3.0, -4.0]])
    >>> F.nll_loss(logp, clgrad.tensor([1, 0])).item()
    2.5
    """
    reduction = _reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    _check_targets(input, target)
    _check_weight(weight, input.shape[_class_dim(input)])
    _check_nll_dtypes("nll_loss", input, weight)
    picked, w, _ = _picked(input, target, weight, ignore_index, "nll_loss")
    loss = -(picked * w)
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    return loss.sum() / w.sum()


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                  reduction="mean", label_smoothing=0.0):
    """Cross entropy of logits input (N, C, ...) against class indices (N, ...) or class
    probabilities (input's shape), through log_softmax so that large logits are safe; class
    weights, ignore_index and label smoothing as torch defines them.

    >>> import clgrad, clgrad.nn.functional as F
    >>> logits = clgrad.tensor([[1000.0, 0.0], [0.0, 0.0]])
    >>> round(F.cross_entropy(logits, clgrad.tensor([0, 1])).item(), 4)
    0.3466
    """
    reduction = _reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    if input.ndim == 0:
        raise ValueError("Expected input to have at least 1 dimension (got 0)")
    cd = _class_dim(input)
    C = input.shape[cd]
    _check_weight(weight, C)
    logp = log_softmax(input, cd)
    wshape = [1] * input.ndim
    wshape[cd] = C
    if target.shape == input.shape:
        # class probabilities
        if not target.is_floating_point():
            raise RuntimeError(f"Expected floating point type for target with class "
                               f"probabilities, got {dtypes.TORCH_NAMES[target.dtype]}")
        if label_smoothing > 0:
            target = target * (1 - label_smoothing) + label_smoothing / C
        term = logp * target
        if weight is not None:
            term = term * weight.reshape(wshape)
        if reduction == "none":
            return -term.sum(cd)
        if reduction == "sum":
            return -term.sum()
        return -term.sum() / (input.numel() / C) if input.numel() else -term.sum() * math.nan
    _check_targets(input, target)
    _check_nll_dtypes("cross_entropy", logp, weight)
    picked, w, ignored = _picked(logp, target, weight, ignore_index, "cross_entropy")
    nll = -(picked * w)
    if reduction == "none":
        loss = nll
    elif reduction == "sum":
        loss = nll.sum()
    else:
        loss = nll.sum() / w.sum()
    if label_smoothing == 0:
        return loss
    # the smoothing term: the (weighted) mean of -logp over the classes, ignored targets left out
    smooth = -(logp * weight.reshape(wshape)).sum(cd) if weight is not None else -logp.sum(cd)
    smooth = where(w == 0 if ignored is None else ignored, 0.0, smooth)
    if reduction == "sum":
        smooth = smooth.sum()
    elif reduction == "mean":
        smooth = smooth.sum() / w.sum()
    return loss * (1 - label_smoothing) + smooth * (label_smoothing / C)


class _BinaryCrossEntropy(Function):
    """Elementwise -(y log x + (1 - y) log(1 - x)), logs clamped at -100 as in torch; torch's
    gradient (x - y) / max(x (1 - x), 1e-12) stays finite at x = 0 and x = 1."""

    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return (y - 1) * clamp((-x).log1p(), min=-100) - y * clamp(x.log(), min=-100)

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        gx = gy = None
        if ctx.needs_input_grad[0]:
            gx = g * (x - y) / clamp((1 - x) * x, min=1e-12)
        if ctx.needs_input_grad[1]:
            gy = g * (clamp((-x).log1p(), min=-100) - clamp(x.log(), min=-100))
        return gx, gy


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None,
                         reduction="mean"):
    """Binary cross entropy of probabilities input against target (same shape).

    >>> import clgrad, clgrad.nn.functional as F
    >>> round(F.binary_cross_entropy(clgrad.tensor([0.5]), clgrad.tensor([1.0])).item(), 4)
    0.6931
    """
    reduction = _reduction(size_average, reduce, reduction)
    if target.shape != input.shape:
        raise ValueError(f"Using a target size ({target.size()}) that is different to the input "
                         f"size ({input.size()}) is deprecated. Please ensure they have the same "
                         f"size.")
    if target.dtype is not input.dtype:
        raise RuntimeError(f"Found dtype {dtypes.TORCH_NAMES[target.dtype]} but expected "
                           f"{dtypes.TORCH_NAMES[input.dtype]} (binary_cross_entropy: input and "
                           f"target of shape {list(input.shape)})")
    if input.dtype.kind != "f":
        raise NotImplementedError(f'"binary_cross_entropy" not implemented for '
                                  f"'{dtypes.TORCH_NAMES[input.dtype]}' (input of shape "
                                  f"{list(input.shape)})")
    with no_grad():             # torch's kernel checks both ranges (NaN is out): one host read
        ok = ((input >= 0) & (input <= 1)).all().long() * 2 + \
            ((target >= 0) & (target <= 1)).all().long()
        ok = ok.item()
    for name, bit in (("input", 2), ("target", 1)):
        if not ok & bit:
            raise RuntimeError(f"all elements of {name} should be between 0 and 1 "
                               f"(binary_cross_entropy: {name} of shape {list(input.shape)})")
    loss = _BinaryCrossEntropy.apply(input, target)
    if weight is not None:
        loss = _times_into(loss, weight)
    return _reduce(loss, reduction)


def _times_into(loss, weight):
    """loss.mul_(weight) as torch's loss kernels make it: the weight broadcasts to the loss's
    shape, and the product keeps the loss's dtype."""
    _check_into(loss, weight)
    out = loss * weight
    return out if out.dtype is loss.dtype else out.to(loss.dtype)


def _check_into(t, other):
    from ..ops._base import broadcast_shapes
    shape = broadcast_shapes(tuple(t.shape), tuple(other.shape))
    if shape != tuple(t.shape):
        raise RuntimeError(f"output with shape {list(t.shape)} doesn't match the broadcast shape "
                           f"{list(shape)}")


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None,
                                     reduction="mean", pos_weight=None):
    """Binary cross entropy of sigmoid(input) against target, computed from the logits without
    overflow: (1 - y) x + (1 + (pos_weight - 1) y) softplus(-x).

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.binary_cross_entropy_with_logits(clgrad.tensor([200.0]), clgrad.tensor([1.0])).item()
    0.0
    """
    reduction = _reduction(size_average, reduce, reduction)
    if target.shape != input.shape:
        raise ValueError(f"Target size ({target.size()}) must be the same as input size "
                         f"({input.size()})")
    # torch: log_sigmoid(input), then (1 - target).mul_(input).sub_(...): the loss is made in
    # place in the target's dtype
    if input.dtype.kind != "f":
        raise NotImplementedError(f'"log_sigmoid_cpu" not implemented for '
                                  f"'{dtypes.TORCH_NAMES[input.dtype]}' "
                                  f"(binary_cross_entropy_with_logits: input of shape "
                                  f"{list(input.shape)})")
    if target.dtype is dtypes.bool_:
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not "
                           "supported. Use the `^` or `logical_xor()` operator instead. "
                           f"(binary_cross_entropy_with_logits: 1 - target of shape "
                           f"{list(target.shape)})")
    if target.dtype.kind != "f":
        raise RuntimeError(f"result type {dtypes.TORCH_NAMES[input.dtype]} can't be cast to the "
                           f"desired output type {dtypes.TORCH_NAMES[target.dtype]} "
                           f"(binary_cross_entropy_with_logits: (1 - target) * input)")
    sp = softplus(-input)                     # log(1 + exp(-x)), stable for any x
    if pos_weight is not None:
        lw = (pos_weight - 1) * target + 1
        _check_into(sp, lw)
        loss = (1 - target) * input + lw * sp
    else:
        loss = (1 - target) * input + sp
    if weight is not None:
        loss = _times_into(loss, weight)
    if loss.dtype is not target.dtype:
        loss = loss.to(target.dtype)
    return _reduce(loss, reduction)


# ---- the rest of torch.nn.functional, by subject (clgrad/nn/_functional_<subject>.py) ---------
from . import _functional_activation  # noqa: E402
from ._functional_activation import *  # noqa: E402,F401,F403

__all__ += _functional_activation.__all__
from . import _functional_distance  # noqa: E402
from ._functional_distance import *  # noqa: E402,F401,F403

__all__ += _functional_distance.__all__
from . import _functional_loss  # noqa: E402
from ._functional_loss import *  # noqa: E402,F401,F403

__all__ += _functional_loss.__all__
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
from . import _functional_linear  # noqa: E402
from ._functional_linear import *  # noqa: E402,F401,F403

__all__ += _functional_linear.__all__
from . import _functional_unpool  # noqa: E402
from ._functional_unpool import *  # noqa: E402,F401,F403

__all__ += _functional_unpool.__all__
from . import _functional_overrides  # noqa: E402
from ._functional_overrides import *  # noqa: E402,F401,F403

__all__ += _functional_overrides.__all__
