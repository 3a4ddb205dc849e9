"""torch.nn.functional's normalisations: batch_norm, layer_norm (kernels in clgrad.ops.norm),
group_norm and normalize, with torch's dtype rules for their parameters; rms_norm,
instance_norm and local_response_norm, composed of clgrad ops."""
import math
import numbers

from .. import dtypes
from ..autograd.grad_mode import no_grad
from . import norm as _norm
from .pointwise import addcmul
from .join import cat

__all__ = ["batch_norm", "layer_norm", "group_norm", "normalize", "rms_norm", "instance_norm",
           "local_response_norm"]



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


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """x / sqrt(mean(x^2) + eps) over the trailing normalized_shape dims, times weight; eps
    defaults to the dtype's machine epsilon, as torch's.

    >>> import clgrad, clgrad.nn.functional as F
    >>> [round(v, 4) for v in F.rms_norm(clgrad.tensor([3.0, 4.0]), (2,)).tolist()]
    [0.8485, 1.1314]
    """
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    n = len(normalized_shape)
    if tuple(input.shape[input.dim() - n:]) != tuple(normalized_shape):
        raise RuntimeError(f"Given normalized_shape={list(normalized_shape)}, expected input "
                           f"with shape [*, {', '.join(map(str, normalized_shape))}], but got "
                           f"input of size{list(input.shape)}")
    if eps is None:
        eps = {"float64": 2.220446049250313e-16, "float16": 0.0009765625,
               "bfloat16": 0.0078125}.get(input.dtype.name, 1.1920928955078125e-07)
    dims = tuple(range(input.dim() - n, input.dim()))
    out = input * ((input * input).mean(dims, keepdim=True) + eps).rsqrt()
    return out * weight if weight is not None else out


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None,
                  use_input_stats=True, momentum=0.1, eps=1e-5):
    """Normalise each (sample, channel) over its spatial positions; with running statistics,
    update them with the mean over the batch of the per-instance statistics (torch's rule).

    >>> import clgrad, clgrad.nn.functional as F
    >>> [round(v, 4) for v in F.instance_norm(clgrad.tensor([[[1.0, 3.0]]])).reshape(-1).tolist()]
    [-1.0, 1.0]
    """
    if input.dim() < 3:
        raise ValueError(f"expected 3D or more input (got {input.dim()}D input)")
    N, C = input.shape[0], input.shape[1]
    x = input.reshape((1, N * C) + tuple(input.shape[2:]))
    rm = running_mean.repeat(N) if running_mean is not None else None
    rv = running_var.repeat(N) if running_var is not None else None
    out = batch_norm(x, rm, rv, None, None, use_input_stats, momentum, eps)
    if use_input_stats and running_mean is not None:
        with no_grad():
            running_mean.copy_(rm.reshape(N, C).mean(0))
            running_var.copy_(rv.reshape(N, C).mean(0))
    out = out.reshape(tuple(input.shape))
    shape = (1, C) + (1,) * (input.dim() - 2)
    if weight is not None:
        out = out * weight.reshape(shape)
    if bias is not None:
        out = out + bias.reshape(shape)
    return out


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """x / (k + alpha / size * sum of x^2 over `size` neighbouring channels) ** beta.

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.local_response_norm(clgrad.ones(1, 3, 1), 2, alpha=1.0, beta=1.0, k=0.0).reshape(-1).tolist()
    [2.0, 1.0, 1.0]
    """
    if input.dim() < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {input.dim()} "
                         f"dimensions)")
    if input.numel() == 0:
        return input
    sq = (input * input).unsqueeze(1)                      # [N, 1, C, *]
    C = input.shape[1]
    zeros = lambda n: sq.new_zeros((sq.shape[0], 1, n) + tuple(sq.shape[3:]))  # noqa: E731
    padded = cat([zeros(size // 2), sq, zeros((size - 1) // 2)], 2)
    div = sum(padded.narrow(2, i, C) for i in range(size)).squeeze(1) / size
    return input / (div * alpha + k) ** beta
