"""torch.nn.functional's losses but the class-target ones (nll, cross entropy, binary cross
entropy, linear_cross_entropy: clgrad/ops/loss_class.py): the reduction helpers, the regression
losses (mse, l1, smooth l1, huber), divergence, margin, embedding, likelihood and multi-class
margin losses and CTC, with torch's arguments, composed of clgrad ops (so they differentiate to
any order).
"""
import math
import warnings

import numpy as np

from .. import dtypes
from . import dispatch
from .creation import arange, full, tensor as _tensor
from .join import cat, stack
from .pointwise import minimum, where
from ..tensor import Tensor
from .distance import cosine_similarity, pairwise_distance
from ._base import broadcast_shapes
from ..autograd.grad_mode import no_grad
from .activation import logsigmoid, softplus

__all__ = ["mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss",
           "kl_div", "margin_ranking_loss", "hinge_embedding_loss", "soft_margin_loss",
           "cosine_embedding_loss", "triplet_margin_loss", "triplet_margin_with_distance_loss",
           "poisson_nll_loss", "gaussian_nll_loss", "multilabel_soft_margin_loss",
           "multi_margin_loss", "multilabel_margin_loss", "ctc_loss"]



# ---- reductions and the regression losses ----------------------------------------------------
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


def _times_into(loss, weight):
    """loss.mul_(weight) as torch's loss kernels make it: the weight broadcasts to the loss's
    shape, and the product keeps the loss's dtype."""
    _check_into(loss, weight)
    out = loss * weight
    return out if out.dtype is loss.dtype else out.to(loss.dtype)


def _check_into(t, other):
    shape = broadcast_shapes(tuple(t.shape), tuple(other.shape))
    if shape != tuple(t.shape):
        raise RuntimeError(f"output with shape {list(t.shape)} doesn't match the broadcast shape "
                           f"{list(shape)}")


# ---- the other losses -------------------------------------------------------------------------
def _reduced(loss, size_average, reduce, reduction):
    return _reduce(loss, _reduction(size_average, reduce, reduction))


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
    red = _reduction(size_average, reduce, reduction)
    if red == "batchmean":
        return loss.sum() / (input.shape[0] if input.dim() else 1)
    if red == "mean":
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the "
                      "support size.'batchmean' divides only by the batch size, and aligns with "
                      "the KL div math definition.'mean' will be changed to behave the same as "
                      "'batchmean' in the next major release.", stacklevel=2)
    return _reduce(loss, red)


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
    # softplus through nn.functional's namespace: autocast's wrapper applies (ops.dispatch)
    return _reduced(dispatch.F.softplus(-target * input), size_average, reduce, reduction)


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
        d_an = minimum(d_an, pairwise_distance(positive, negative, p, eps))
    return _reduced((d_ap - d_an + margin).clamp_min(0), size_average, reduce, reduction)


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None,
                                      margin=1.0, swap=False, reduction="mean"):
    """max(d(a, p) - d(a, n) + margin, 0) for any distance function (default: the pairwise
    Euclidean distance); swap takes the smaller of d(a, n) and d(p, n).

    >>> import clgrad, clgrad.nn.functional as F
    >>> a = clgrad.zeros(1, 2)
    >>> F.triplet_margin_with_distance_loss(a, a, a + 3).item()
    0.0
    """
    if margin <= 0:
        raise ValueError(f"triplet_margin_with_distance_loss: expected margin to be greater "
                         f"than 0, got {margin} instead")
    dims = (anchor.dim(), positive.dim(), negative.dim())
    if len(set(dims)) != 1:
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the "
                           f"same number of dimensions, but got: anchor {dims[0]}D, positive "
                           f"{dims[1]}D, and negative {dims[2]}D inputs")
    dist = distance_function if distance_function is not None else pairwise_distance
    d_ap, d_an = dist(anchor, positive), dist(anchor, negative)
    if swap:
        d_an = minimum(d_an, dist(positive, negative))
    return _reduce((d_ap - d_an + margin).clamp_min(0), reduction)


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
    with no_grad():
        floor = var.clamp_min(eps) - var                # added without gradient, as torch
    v = var + floor
    loss = 0.5 * (v.log() + (input - target) ** 2 / v)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None,
                                reduction="mean"):
    """-(y log sigmoid(x) + (1 - y) log sigmoid(-x)), averaged over the classes.

    >>> import clgrad, clgrad.nn.functional as F
    >>> round(F.multilabel_soft_margin_loss(clgrad.tensor([[0.0, 0.0]]),
    ...                                     clgrad.tensor([[1.0, 0.0]])).item(), 4)
    0.6931
    """
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    loss = loss.sum(-1) / input.shape[-1]
    return _reduce(loss, _reduction(size_average, reduce, reduction))


# ---- multi-class margins -------------------------------------------------------------------------
def _targets(op, input, target):
    if input.ndim not in (1, 2) or (input.ndim == 2 and input.shape[1] == 0) or \
            (input.ndim == 1 and input.shape[0] == 0):
        raise RuntimeError(f"{op}: Expected non-empty vector or matrix with optional 0-dim batch "
                           f"size, but got: {list(input.shape)}")
    if target.dtype not in (dtypes.int64, dtypes.int32, dtypes.uint8):
        raise RuntimeError(f"{op}: expected target of integer dtype, got {target.dtype}")


def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None, reduce=None,
                      reduction="mean"):
    """The multi-class hinge loss: for each sample, sum over classes i != y of
    weight[y] * max(0, margin - x[y] + x[i])^p, divided by the number of classes.

    >>> import clgrad, clgrad.nn.functional as F
    >>> x = clgrad.tensor([[0.1, 0.2, 0.4, 0.8]])
    >>> round(F.multi_margin_loss(x, clgrad.tensor([3])).item(), 4)
    0.325
    """
    reduction = _reduction(size_average, reduce, reduction)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    op = "multi_margin_loss"
    _targets(op, input, target)
    C = input.shape[-1]
    x = input if input.ndim == 2 else input.reshape(1, C)
    N = x.shape[0]
    if target.numel() != N or (input.ndim == 2 and target.ndim != 1):
        raise RuntimeError(f"{op}: target tensor should be 1-D with size equal to the number of "
                           f"input samples (batch size). Expected target size [{N}], but got "
                           f"{list(target.shape)}. Input has shape {list(input.shape)}.")
    if weight is not None and (weight.ndim != 1 or weight.shape[0] != C):
        raise RuntimeError(f"inconsistent weight size, expected {C} but got "
                           f"{list(weight.shape)}")
    y = target.reshape(N, 1).to(dtypes.int64)
    if N and (bool((y < 0).any()) or bool((y >= C).any())):
        raise RuntimeError("target out of range")
    xy = x.gather(1, y)                                          # [N, 1]
    h = (margin - xy + x).clamp_min(0.0)
    if p == 2:
        h = h * h
    others = y != arange(C, device=input.device).reshape(1, C)
    if weight is not None:
        h = h * weight[y]
    loss = (h * others.to(h.dtype)).sum(1) / C
    if reduction == "none":
        return loss.reshape(target.shape) if input.ndim == 1 else loss
    return _reduce(loss, reduction)


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """The multi-label hinge loss: target holds each sample's class indices, ended by the first
    -1; for each target class j and each class i not among the targets,
    max(0, 1 - (x[j] - x[i])), summed and divided by the number of classes.

    >>> import clgrad, clgrad.nn.functional as F
    >>> x = clgrad.tensor([[0.1, 0.2, 0.4, 0.8]])
    >>> round(F.multilabel_margin_loss(x, clgrad.tensor([[3, 0, -1, 1]])).item(), 4)
    0.85
    """
    reduction = _reduction(size_average, reduce, reduction)
    op = "multilabel_margin_loss"
    _targets(op, input, target)
    if tuple(target.shape) != tuple(input.shape):
        raise RuntimeError(f"inconsistent target size: {list(target.shape)} for input of size: "
                           f"{list(input.shape)}")
    C = input.shape[-1]
    x = input.reshape(-1, C)
    t = target.reshape(-1, C).to(dtypes.int64)
    if x.shape[0] and (bool((t < -1).any()) or bool((t >= C).any())):
        raise RuntimeError("multilabel_margin_loss: target out of range")
    # the targets before the first -1 count; is_target marks their classes
    valid = (t >= 0).to(dtypes.int64).cumprod(1) > 0            # [N, J]
    classes = arange(C, device=input.device)
    hits = (t.unsqueeze(-1) == classes) & valid.unsqueeze(-1)    # [N, J, C]
    is_target = hits.any(1)                                      # [N, C]
    xj = x.gather(1, t.clamp_min(0))                             # [N, J]
    h = (1.0 - xj.unsqueeze(-1) + x.unsqueeze(1)).clamp_min(0.0)  # [N, J, C]
    keep = valid.unsqueeze(-1) & ~is_target.unsqueeze(1)
    loss = (h * keep.to(h.dtype)).sum((1, 2)) / C
    if input.ndim == 1:
        loss = loss.reshape(())
    return loss if reduction == "none" else _reduce(loss, reduction)


# ---- connectionist temporal classification ------------------------------------------------------
# stands for log(0) in the CTC recursion: a finite value keeps logsumexp's gradient free of NaN
# where every path is impossible (exp(_NEG - m) is 0 for any real m)
_NEG = -1e30


def _lengths(name, v, N):
    if isinstance(v, Tensor):
        v = v.reshape(-1).tolist()
    elif not isinstance(v, (list, tuple)):
        v = [v]
    v = [int(e) for e in v]
    if len(v) != N:
        raise RuntimeError(f"{name} must be of size batch_size")
    return v


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean",
             zero_infinity=False):
    """The Connectionist Temporal Classification loss: -log of the total probability of every
    alignment of each target sequence with its (T, C) log-probabilities (log_probs is (T, N, C),
    or (T, C) unbatched). targets are (N, S) padded, or the target sequences concatenated.
    'mean' divides each loss by its target length, then averages.

    The forward (alpha) recursion runs in log space over the time steps, composed from clgrad
    ops, so the gradient comes from autograd: it is the derivative with respect to log_probs
    (torch returns exp(log_probs) minus the posteriors, which is the same once it has passed
    back through a log_softmax).

    >>> import clgrad, clgrad.nn.functional as F
    >>> lp = clgrad.full((3, 1, 2), 0.5).log()      # two classes (blank, 'a'), 3 steps
    >>> # 6 of the 8 paths give 'a' (aaa, aa-, a--, -aa, -a-, --a): -log(6 / 8)
    >>> round(F.ctc_loss(lp, clgrad.tensor([[1]]), [3], [1], reduction="sum").item(), 4)
    0.2877
    """
    _check_reduction(reduction)
    if not isinstance(log_probs, Tensor):
        raise TypeError(f"ctc_loss(): argument 'log_probs' must be Tensor, not "
                        f"{type(log_probs).__name__}")
    if log_probs.dtype not in (dtypes.float32, dtypes.float64):
        raise NotImplementedError(f'"ctc_loss" not implemented for {log_probs.dtype}')
    batched = log_probs.ndim == 3
    if log_probs.ndim not in (2, 3):
        raise RuntimeError(f"ctc_loss: expected log_probs to be 2-D (T, C) or 3-D (T, N, C), "
                           f"got {list(log_probs.shape)}")
    lp = log_probs if batched else log_probs.unsqueeze(1)
    T, N, C = lp.shape
    if not 0 <= blank < C:
        raise RuntimeError("blank must be in label range")
    in_len = _lengths("input_lengths", input_lengths, N)
    tg_len = _lengths("target_lengths", target_lengths, N)
    for n in in_len:
        if n > T or n < 0:
            raise RuntimeError(f"Expected input_lengths to have value at most {T}, but got value "
                               f"{n} (while checking arguments for ctc_loss_allocate_outputs)")
    # the targets and lengths are read to the host: they shape the recursion
    tg = targets.to(dtypes.int64).numpy() if isinstance(targets, Tensor) else targets
    tg = np.asarray(tg, dtype=np.int64)
    if batched and tg.ndim == 2:
        S = max(tg_len + [0])
        if tg.shape[1] < S:
            raise RuntimeError(f"Expected tensor to have size at least {S} at dimension 1, but "
                               f"got size {tg.shape[1]} for argument #2 'targets' (while "
                               f"checking arguments for ctc_loss_allocate_outputs)")
        seqs = [tg[n, :tg_len[n]] for n in range(N)]
    else:
        flat = tg.reshape(-1)
        if flat.shape[0] != sum(tg_len):
            raise RuntimeError(f"Expected tensor to have size {sum(tg_len)} at dimension 0, but "
                               f"got size {flat.shape[0]} for argument #2 'targets' (while "
                               f"checking arguments for ctc_loss_allocate_outputs)")
        starts = np.cumsum([0] + tg_len)
        seqs = [flat[starts[n]:starts[n + 1]] for n in range(N)]
    # the extended targets: blank, l1, blank, l2, ..., blank (padded with blanks)
    L = 2 * max(tg_len + [0]) + 1
    ext = np.full((N, L), blank, dtype=np.int64)
    skip = np.zeros((N, L), dtype=bool)       # s may come from s - 2 (a label unlike l[s - 2])
    for n, seq in enumerate(seqs):
        if len(seq) and (seq.min() < 0 or seq.max() >= C):
            raise RuntimeError("ctc_loss: target index out of range")
        ext[n, 1:2 * len(seq):2] = seq
        for s in range(3, 2 * len(seq), 2):
            skip[n, s] = ext[n, s] != ext[n, s - 2]
    dev = lp.device
    ext_t = _tensor(ext, device=dev)
    skip_t = _tensor(skip, device=dev)
    # E[t, n, s] = log_probs[t, n, ext[n, s]], with log(0) as _NEG
    E = lp.gather(2, ext_t.unsqueeze(0).expand(T, N, L)).clamp_min(_NEG)
    neg1 = full((N, 1), _NEG, dtype=lp.dtype, device=dev)
    neg2 = full((N, 2), _NEG, dtype=lp.dtype, device=dev)
    pos = arange(L, device=dev)
    # an input of length 0 aligns only the empty target: alpha is log(1) on s = 0
    empty_start = where(pos == 0, 0.0, full((L,), _NEG, dtype=lp.dtype, device=dev))
    if T == 0:
        alpha = empty_start.expand(N, L)
    else:
        live = _tensor(np.array(in_len) > 0, device=dev).unsqueeze(1)
        alpha = where(live, where(pos < 2, E[0], _NEG), empty_start)
    for t in range(1, T):
        a1 = cat([neg1, alpha[:, :-1]], 1)
        a2 = where(skip_t, cat([neg2, alpha[:, :-2]], 1), _NEG) if L > 2 else None
        terms = [alpha, a1] if a2 is None else [alpha, a1, a2]
        new = stack(terms, 0).logsumexp(0) + E[t]
        running = _tensor(np.array(in_len) > t, device=dev).unsqueeze(1)
        alpha = where(running, new, alpha)
    # the last label or the final blank at each sequence's end
    last = _tensor(np.array([[2 * k, max(2 * k - 1, 0)] for k in tg_len]), device=dev)
    ends = alpha.gather(1, last)
    ends = where(_tensor(np.array([[True, k > 0] for k in tg_len]), device=dev), ends, _NEG)
    nll = -ends.logsumexp(1)
    impossible = nll > -_NEG / 2
    if zero_infinity:
        nll = where(impossible, 0.0, nll)
    else:
        nll = where(impossible, math.inf, nll)
    if reduction == "none":
        return nll if batched else nll.reshape(())
    if reduction == "sum":
        return nll.sum()
    lens = _tensor(np.maximum(np.array(tg_len), 1), device=dev).to(nll.dtype)
    return (nll / lens).mean()
