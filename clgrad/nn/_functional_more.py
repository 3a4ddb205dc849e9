"""More of torch.nn.functional: the piecewise activations, similarities and distances, and the
margin, embedding and likelihood losses, composed of clgrad ops (so they differentiate to any
order). At the kinks the gradients are torch's: a clamp-like activation passes the gradient only
strictly inside its linear range, as torch's hardtanh_backward does.
"""
import math
import warnings

from ..ops.pointwise import where
from ..tensor import Tensor

__all__ = ["hardtanh", "hardtanh_", "relu6", "hardsigmoid", "hardswish", "selu", "celu", "mish",
           "glu", "softsign", "softshrink", "hardshrink", "tanhshrink", "threshold",
           "threshold_", "prelu", "rrelu", "softmin", "cosine_similarity", "pairwise_distance",
           "kl_div", "margin_ranking_loss", "hinge_embedding_loss", "soft_margin_loss",
           "cosine_embedding_loss", "triplet_margin_loss", "poisson_nll_loss",
           "gaussian_nll_loss", "multilabel_soft_margin_loss", "rms_norm", "instance_norm",
           "local_response_norm"]


def _F():
    from . import functional
    return functional


def _inplace_result(input, fn, inplace):
    """fn(input), or with inplace, fn of a copy written back into input: an in-place op that
    autograd records, whose backward still sees the values from before (as torch's)."""
    return input.copy_(fn(input.clone())) if inplace else fn(input)


# ---- piecewise activations ----------------------------------------------------------------------
def _clamp_strict(x, lo, hi):
    """clamp(x, lo, hi) whose gradient is 1 only where lo < x < hi (torch's kink rule)."""
    inside = (x > lo) & (x < hi)
    return where(inside, x, x.clamp(lo, hi).detach())


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    """x clamped to [min_val, max_val].

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.hardtanh(clgrad.tensor([-2.0, 0.5, 3.0])).tolist()
    [-1.0, 0.5, 1.0]
    """
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    return _inplace_result(input, lambda x: _clamp_strict(x, min_val, max_val), inplace)


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    """hardtanh in place.

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.hardtanh_(clgrad.tensor([5.0])).tolist()
    [1.0]
    """
    return hardtanh(input, min_val, max_val, True)


def relu6(input, inplace=False):
    """min(max(x, 0), 6).

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.relu6(clgrad.tensor([-1.0, 3.0, 9.0])).tolist()
    [0.0, 3.0, 6.0]
    """
    return hardtanh(input, 0.0, 6.0, inplace)


def hardsigmoid(input, inplace=False):
    """0 below -3, 1 above 3, x / 6 + 1/2 between.

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.hardsigmoid(clgrad.tensor([-4.0, 0.0, 4.0])).tolist()
    [0.0, 0.5, 1.0]
    """
    return _inplace_result(input, lambda x: _clamp_strict(x / 6 + 0.5, 0.0, 1.0), inplace)


def hardswish(input, inplace=False):
    """x * relu6(x + 3) / 6, with torch's gradient (x / 3 + 1/2 strictly inside (-3, 3), 0 at
    and below -3, 1 at and above 3).

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.hardswish(clgrad.tensor([-4.0, 1.0, 4.0])).tolist()
    [-0.0, 0.6666666865348816, 4.0]
    """
    def fn(x):
        return where(x <= -3, x * 0, where(x >= 3, x, x * (x + 3) / 6))
    return _inplace_result(input, fn, inplace)


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def selu(input, inplace=False):
    """scale * elu(x, alpha) with the self-normalising constants.

    >>> import clgrad, clgrad.nn.functional as F
    >>> round(F.selu(clgrad.tensor([1.0])).item(), 4)
    1.0507
    """
    return _inplace_result(input, lambda x: _F().elu(x, _SELU_ALPHA) * _SELU_SCALE, inplace)


def celu(input, alpha=1.0, inplace=False):
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1)).

    >>> import clgrad, clgrad.nn.functional as F
    >>> round(F.celu(clgrad.tensor([-1.0]), alpha=2.0).item(), 4)
    -0.7869
    """
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError: celu's alpha must not be 0")
    return _inplace_result(input, lambda x: _F().elu(x / alpha, 1.0) * alpha, inplace)


def mish(input, inplace=False):
    """x * tanh(softplus(x)).

    >>> import clgrad, clgrad.nn.functional as F
    >>> round(F.mish(clgrad.tensor([1.0])).item(), 4)
    0.8651
    """
    return _inplace_result(input, lambda x: x * _F().softplus(x).tanh(), inplace)


def glu(input, dim=-1):
    """a * sigmoid(b) where a, b are the two halves of input along dim.

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.glu(clgrad.tensor([2.0, 0.0])).tolist()
    [1.0]
    """
    if input.dim() == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    d = dim % input.dim()
    if input.shape[d] % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {d} is size "
                           f"{input.shape[d]}")
    a, b = input.chunk(2, d)
    return a * b.sigmoid()


def softsign(input):
    """x / (1 + |x|).

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.softsign(clgrad.tensor([1.0, -3.0])).tolist()
    [0.5, -0.75]
    """
    return input / (input.abs() + 1)


def softshrink(input, lambd=0.5):
    """x - lambd above lambd, x + lambd below -lambd, 0 between.

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.softshrink(clgrad.tensor([1.0, 0.2, -1.0])).tolist()
    [0.5, 0.0, -0.5]
    """
    if lambd < 0:
        raise RuntimeError(f"lambda must be greater or equal to 0, but found to be {lambd}.")
    return where(input > lambd, input - lambd, where(input < -lambd, input + lambd, input * 0))


def hardshrink(input, lambd=0.5):
    """x where |x| > lambd, else 0.

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.hardshrink(clgrad.tensor([1.0, 0.2, -1.0])).tolist()
    [1.0, 0.0, -1.0]
    """
    return where((input > lambd) | (input < -lambd), input, input * 0)


def tanhshrink(input):
    """x - tanh(x).

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.tanhshrink(clgrad.tensor([0.0])).tolist()
    [0.0]
    """
    return input - input.tanh()


def threshold(input, threshold, value, inplace=False):
    """x where x > threshold, else value.

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.threshold(clgrad.tensor([0.5, 2.0]), 1.0, -1.0).tolist()
    [-1.0, 2.0]
    """
    return _inplace_result(input, lambda x: where(x > threshold, x, x * 0 + value), inplace)


def threshold_(input, threshold, value):
    """threshold in place.

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.threshold_(clgrad.tensor([0.5]), 1.0, 7.0).tolist()
    [7.0]
    """
    return globals()["threshold"](input, threshold, value, True)


def prelu(input, weight):
    """x where x > 0, else weight * x, weight one number or one per channel (dim 1).

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.prelu(clgrad.tensor([[-2.0, 3.0]]), clgrad.tensor([0.25, 0.5])).tolist()
    [[-0.5, 3.0]]
    """
    if not isinstance(weight, Tensor):
        raise TypeError(f"prelu(): argument 'weight' must be Tensor, not {type(weight).__name__}")
    w = weight
    if weight.numel() != 1:
        C = input.shape[1] if input.dim() >= 2 else input.shape[0]
        if weight.numel() != C:
            raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found "
                               f"parameter numbers = {weight.numel()} and channel size = {C}.")
        if input.dim() >= 2:
            w = weight.reshape((C,) + (1,) * (input.dim() - 2))
    return where(input > 0, input, w * input)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    """Leaky ReLU whose negative slope is drawn from U(lower, upper) per element in training,
    and is (lower + upper) / 2 in evaluation.

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.rrelu(clgrad.tensor([-1.0, 1.0]), 0.1, 0.3).tolist()
    [-0.20000000298023224, 1.0]
    """
    if not training:
        return _F().leaky_relu(input, (lower + upper) / 2, inplace)
    from ..ops.creation import empty_like
    slope = empty_like(input).uniform_(lower, upper)
    return _inplace_result(input, lambda x: where(x >= 0, x, x * slope), inplace)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    """softmax(-x) along dim.

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.softmin(clgrad.tensor([0.0, 0.0]), dim=0).tolist()
    [0.5, 0.5]
    """
    return _F().softmax(-input, dim, dtype=dtype)


# ---- similarities and distances -----------------------------------------------------------------
def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """x1 . x2 / max(|x1| |x2|, eps) along dim, broadcasting.

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.cosine_similarity(clgrad.tensor([[1.0, 0.0]]), clgrad.tensor([[1.0, 1.0]])).tolist()
    [0.7071067690849304]
    """
    w12 = (x1 * x2).sum(dim)
    n12 = ((x1 * x1).sum(dim) * (x2 * x2).sum(dim)).clamp_min(eps * eps).sqrt()
    return w12 / n12


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """The p-norm of x1 - x2 + eps over the last dimension.

    >>> import clgrad, clgrad.nn.functional as F
    >>> round(F.pairwise_distance(clgrad.tensor([[3.0, 0.0]]), clgrad.tensor([[0.0, 4.0]])).item(), 4)
    5.0
    """
    from ..ops.reduce import norm
    return norm(x1 - x2 + eps, p, -1, keepdim)


# ---- losses -------------------------------------------------------------------------------------
def _reduced(loss, size_average, reduce, reduction):
    F = _F()
    return F._reduce(loss, F._reduction(size_average, reduce, reduction))


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """Kullback-Leibler divergence of target from input (input holds log-probabilities):
    target * (log target - input), 0 where target is 0; reduction 'batchmean' divides the sum
    by the batch size (the mathematically right one).

    >>> import clgrad, clgrad.nn.functional as F
    >>> p = clgrad.tensor([[0.5, 0.5]])
    >>> F.kl_div(p.log(), p, reduction="batchmean").item()
    0.0
    """
    if log_target:
        loss = target.exp() * (target - input)
    else:
        loss = where(target > 0, target * (target.clamp_min(1e-38).log() - input), input * 0)
    F = _F()
    red = F._reduction(size_average, reduce, reduction)
    if red == "batchmean":
        return loss.sum() / (input.shape[0] if input.dim() else 1)
    if red == "mean":
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the "
                      "support size.'batchmean' divides only by the batch size, and aligns with "
                      "the KL div math definition.'mean' will be changed to behave the same as "
                      "'batchmean' in the next major release.", stacklevel=2)
    return F._reduce(loss, red)


def margin_ranking_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None,
                        reduction="mean"):
    """max(0, -target * (input1 - input2) + margin).

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.margin_ranking_loss(clgrad.tensor([1.0]), clgrad.tensor([2.0]), clgrad.tensor([1.0])).item()
    1.0
    """
    return _reduced((-target * (input1 - input2) + margin).clamp_min(0), size_average, reduce,
                    reduction)


def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None,
                         reduction="mean"):
    """x where target is 1, max(0, margin - x) where target is -1.

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.hinge_embedding_loss(clgrad.tensor([0.3, 0.3]), clgrad.tensor([1.0, -1.0]),
    ...                        reduction="none").tolist()
    [0.30000001192092896, 0.699999988079071]
    """
    zero = input * 0
    loss = where(target != 1, (margin - input).clamp_min(0), zero) + \
        where(target != -1, input, zero)
    return _reduced(loss, size_average, reduce, reduction)


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """log(1 + exp(-target * input)).

    >>> import clgrad, clgrad.nn.functional as F
    >>> round(F.soft_margin_loss(clgrad.tensor([0.0]), clgrad.tensor([1.0])).item(), 4)
    0.6931
    """
    return _reduced(_F().softplus(-target * input), size_average, reduce, reduction)


def cosine_embedding_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None,
                          reduction="mean"):
    """1 - cos(x1, x2) where target is 1, max(0, cos(x1, x2) - margin) where it is -1.

    >>> import clgrad, clgrad.nn.functional as F
    >>> x = clgrad.tensor([[1.0, 0.0]])
    >>> F.cosine_embedding_loss(x, x, clgrad.tensor([1.0])).item()
    0.0
    """
    cos = cosine_similarity(input1, input2, dim=-1, eps=1e-12)
    zero = cos * 0
    loss = where(target == 1, 1 - cos, zero) + where(target == -1, (cos - margin).clamp_min(0),
                                                     zero)
    return _reduced(loss, size_average, reduce, reduction)


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False,
                        size_average=None, reduce=None, reduction="mean"):
    """max(d(a, p) - d(a, n) + margin, 0) with the pairwise p-distance (swap: the smaller of
    d(a, n) and d(p, n)).

    >>> import clgrad, clgrad.nn.functional as F
    >>> a = clgrad.tensor([[0.0, 0.0]])
    >>> round(F.triplet_margin_loss(a, a + 1, a + 3).item(), 4)
    0.0
    """
    d_ap = pairwise_distance(anchor, positive, p, eps)
    d_an = pairwise_distance(anchor, negative, p, eps)
    if swap:
        from ..ops.pointwise import minimum
        d_an = minimum(d_an, pairwise_distance(positive, negative, p, eps))
    return _reduced((d_ap - d_an + margin).clamp_min(0), size_average, reduce, reduction)


def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8,
                     reduce=None, reduction="mean"):
    """Negative log-likelihood of target under Poisson(input) (input a log-rate with
    log_input); full adds Stirling's term for target > 1.

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.poisson_nll_loss(clgrad.tensor([0.0]), clgrad.tensor([1.0])).item()
    1.0
    """
    loss = input.exp() - target * input if log_input else input - target * (input + eps).log()
    if full:
        t = target.clamp_min(1)
        stirling = t * t.log() - t + 0.5 * (2 * math.pi * t).log()
        loss = loss + where(target > 1, stirling, stirling * 0)
    return _reduced(loss, size_average, reduce, reduction)


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """Negative log-likelihood of target under N(input, var): 1/2 (log var + (input - target)^2
    / var), var clamped below at eps (without gradient there, as torch); full adds log(2 pi)/2.

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.gaussian_nll_loss(clgrad.tensor([1.0]), clgrad.tensor([1.0]), clgrad.tensor([1.0])).item()
    0.0
    """
    if isinstance(var, (int, float)):
        var = input.new_full((), float(var))
    if var.dim() == input.dim() - 1 and tuple(var.shape) == tuple(input.shape[:-1]):
        var = var.unsqueeze(-1)
    if (var < 0).any().item():
        raise ValueError("var has negative entry/entries")
    from ..autograd.grad_mode import no_grad
    with no_grad():
        floor = var.clamp_min(eps) - var                # added without gradient, as torch
    v = var + floor
    loss = 0.5 * (v.log() + (input - target) ** 2 / v)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _F()._reduce(loss, reduction)


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None,
                                reduction="mean"):
    """-(y log sigmoid(x) + (1 - y) log sigmoid(-x)), averaged over the classes.

    >>> import clgrad, clgrad.nn.functional as F
    >>> round(F.multilabel_soft_margin_loss(clgrad.tensor([[0.0, 0.0]]),
    ...                                     clgrad.tensor([[1.0, 0.0]])).item(), 4)
    0.6931
    """
    F = _F()
    loss = -(target * F.logsigmoid(input) + (1 - target) * F.logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    loss = loss.sum(-1) / input.shape[-1]
    return F._reduce(loss, F._reduction(size_average, reduce, reduction))


# ---- normalisation ----------------------------------------------------------------------------
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
    F = _F()
    x = input.reshape((1, N * C) + tuple(input.shape[2:]))
    rm = running_mean.repeat(N) if running_mean is not None else None
    rv = running_var.repeat(N) if running_var is not None else None
    out = F.batch_norm(x, rm, rv, None, None, use_input_stats, momentum, eps)
    if use_input_stats and running_mean is not None:
        from ..autograd.grad_mode import no_grad
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
    from ..ops.join import cat
    sq = (input * input).unsqueeze(1)                      # [N, 1, C, *]
    C = input.shape[1]
    zeros = lambda n: sq.new_zeros((sq.shape[0], 1, n) + tuple(sq.shape[3:]))  # noqa: E731
    padded = cat([zeros(size // 2), sq, zeros((size - 1) // 2)], 2)
    div = sum(padded.narrow(2, i, C) for i in range(size)).squeeze(1) / size
    return input / (div * alpha + k) ** beta
