"""bilinear, pdist, the multi-class margin losses, alpha dropout and the CTC loss, with torch's
arguments, composed from clgrad ops (so they differentiate to any order)."""
import math

import numpy as np

from .. import dtypes
from ..autograd.grad_mode import no_grad
from ..ops.arrange import triu_indices
from ..ops.creation import arange, empty_like, full, tensor as _tensor
from ..ops.join import cat, stack
from ..ops.pointwise import where
from ..tensor import Tensor

__all__ = ["bilinear", "pdist", "multi_margin_loss", "multilabel_margin_loss", "alpha_dropout",
           "feature_alpha_dropout", "ctc_loss"]


def _F():
    from . import functional
    return functional


def bilinear(input1, input2, weight, bias=None):
    """y[..., o] = sum_ij input1[..., i] weight[o, i, j] input2[..., j] + bias[o].

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.bilinear(clgrad.ones(1, 2), clgrad.ones(1, 3), clgrad.ones(4, 2, 3)).tolist()
    [[6.0, 6.0, 6.0, 6.0]]
    """
    for name, t in (("input1", input1), ("input2", input2), ("weight", weight)):
        if not isinstance(t, Tensor):
            raise TypeError(f"bilinear(): argument '{name}' must be Tensor, not "
                            f"{type(t).__name__}")
    if input1.ndim != input2.ndim:
        raise RuntimeError(f"bilinear(): input dimensions do not match: got {input1.ndim} and "
                           f"{input2.ndim}")
    for i in range(input1.ndim - 1):
        if input1.shape[i] != input2.shape[i]:
            raise RuntimeError(f"bilinear(): input batch dimensions do not match at dim {i}: "
                               f"got {input1.shape[i]} and {input2.shape[i]}")
    if weight.ndim != 3:
        raise RuntimeError(f"bilinear(): weight must be 3-dimensional, got {list(weight.shape)}")
    if input1.shape[-1] != weight.shape[1]:
        raise RuntimeError(f"bilinear(): input1 size does not match weight size: got "
                           f"{input1.shape[-1]} but expected {weight.shape[1]}")
    if input2.shape[-1] != weight.shape[2]:
        raise RuntimeError(f"bilinear(): input2 size does not match weight size: got "
                           f"{input2.shape[-1]} but expected {weight.shape[2]}")
    if bias is not None and (bias.ndim != 1 or bias.shape[0] != weight.shape[0]):
        raise RuntimeError(f"bilinear(): bias size does not match weight size: got "
                           f"{list(bias.shape)} but expected [{weight.shape[0]}]")
    lead = tuple(input1.shape[:-1])
    O, I, J = weight.shape
    a = input1.reshape(-1, I)
    # (x1 W_o) for every o at once: [B, I] @ [I, O * J], then the dot with x2 over j
    t = a.matmul(weight.permute(1, 0, 2).reshape(I, O * J)).reshape(-1, O, J)
    y = (t * input2.reshape(-1, 1, J)).sum(-1)
    if bias is not None:
        y = y + bias
    return y.reshape(lead + (O,))


def pdist(input, p=2):
    """The p-norm distances between the rows of an (N, M) input, for every pair i < j in
    row-major order (N * (N - 1) / 2 values). The gradient at a zero distance is zero, as
    torch's.

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.pdist(clgrad.tensor([[0.0, 0.0], [3.0, 4.0], [0.0, 1.0]])).tolist()
    [5.0, 1.0, 4.242640495300293]
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"pdist(): argument 'input' must be Tensor, not {type(input).__name__}")
    if input.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.ndim}D")
    if not input.dtype.is_floating_point:
        raise RuntimeError("pdist only supports floating-point dtypes")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    N = input.shape[0]
    ij = triu_indices(N, N, 1, device=input.device)
    d = (input[ij[0]] - input[ij[1]]).abs()                    # [pairs, M]
    if p == 0:
        return (d != 0).to(input.dtype).sum(-1)
    if math.isinf(p):
        return d.amax(-1) if d.shape[-1] else d.sum(-1)
    s = (d * d).sum(-1) if p == 2 else (d ** p).sum(-1)
    # a zero sum gets a zero gradient: the root only sees positive sums
    pos = s > 0
    safe = where(pos, s, 1.0)
    root = safe.sqrt() if p == 2 else safe ** (1.0 / p)
    return where(pos, root, 0.0)


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
    F = _F()
    reduction = F._reduction(size_average, reduce, reduction)
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
    return F._reduce(loss, reduction)


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """The multi-label hinge loss: target holds each sample's class indices, ended by the first
    -1; for each target class j and each class i not among the targets,
    max(0, 1 - (x[j] - x[i])), summed and divided by the number of classes.

    >>> import clgrad, clgrad.nn.functional as F
    >>> x = clgrad.tensor([[0.1, 0.2, 0.4, 0.8]])
    >>> round(F.multilabel_margin_loss(x, clgrad.tensor([[3, 0, -1, 1]])).item(), 4)
    0.85
    """
    F = _F()
    reduction = F._reduction(size_average, reduce, reduction)
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
    return loss if reduction == "none" else F._reduce(loss, reduction)


# SELU's -scale * alpha: the value a dropped unit takes, so that the mean and variance of a
# SELU network's activations are kept
_ALPHA = 1.7580993408473766


def _alpha_dropout(input, p, training, inplace, feature):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if feature and input.ndim < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return input.mul_(0.0) if inplace else input * 0.0
    shape = tuple(input.shape[:2]) + (1,) * (input.ndim - 2) if feature else None
    with no_grad():
        keep = input.new_empty(shape) if feature else empty_like(input)
        keep.bernoulli_(1.0 - p)
        a = 1.0 / math.sqrt((_ALPHA * _ALPHA * p + 1) * (1 - p))
        # torch's affine map: kept units become a * x + a * alpha * p, dropped ones
        # a * alpha * p - alpha * a
        b = (keep - 1.0) * (_ALPHA * a) + _ALPHA * a * p
        keep.mul_(a)
    if inplace:
        return input.mul_(keep).add_(b)
    return input * keep + b


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Dropout for SELU networks: dropped units take SELU's negative saturation value and an
    affine map keeps the mean and variance (training only).

    >>> import clgrad, clgrad.nn.functional as F
    >>> x = clgrad.randn(20000)
    >>> y = F.alpha_dropout(x, 0.2, training=True)
    >>> abs(y.mean().item()) < 0.05, abs(y.std().item() - 1) < 0.05
    (True, True)
    """
    return _alpha_dropout(input, p, training, inplace, False)


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    """alpha_dropout of whole channels: one mask value per (batch, channel).

    >>> import clgrad, clgrad.nn.functional as F
    >>> y = F.feature_alpha_dropout(clgrad.zeros(2, 3, 4), 0.5, training=True)
    >>> bool((y == y[:, :, :1]).all())
    True
    """
    return _alpha_dropout(input, p, training, inplace, True)


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
    F = _F()
    F._check_reduction(reduction)
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
