"""torch.nn.functional's class-target losses: nll_loss and cross_entropy (class indices, with
class weights and ignore_index, or class probabilities; label smoothing), binary_cross_entropy
and binary_cross_entropy_with_logits, with torch's arguments, checks and messages, and
linear_cross_entropy's reference form (cross_entropy of a linear layer's logits). The reduction
helpers are in clgrad/ops/loss.py."""
import math

from .. import dtypes
from . import dispatch
from ..autograd.function import Function
from ..autograd.grad_mode import is_grad_enabled, no_grad
from ..autograd.op import Op
from .pointwise import clamp, where
from .activation import log_softmax, softplus
from .embedding import one_hot
from .loss import _check_into, _check_reduction, _reduce, _reduction, _times_into
from ._base import contiguous_raw, same_device
from .index import Gather, _check_range
from ..kernels.index import class_targets_raw
from ..kernels import loss as _loss
from ..kernels.softmax import softmax_raw

__all__ = ["nll_loss", "cross_entropy", "binary_cross_entropy", "binary_cross_entropy_with_logits",
           "linear_cross_entropy"]


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
    same_device(op, [logp, safe])
    C = logp.shape[cd]
    _check_range(op, safe, C, cd, False, IndexError, fmt=_target_fmt(logp.shape))
    return Gather.apply(logp, cd, safe.unsqueeze(cd)).squeeze(cd)


def _target_fmt(shape):
    """torch's message for a class index out of range (fields op, v, n, d)."""
    return "Target {v} is out of bounds. ({op}: input of shape " + str(list(shape)) + \
        ", {n} classes along dim {d})"


def _rows_nll(logp, target, ignore_index, mean, op):
    """nll_rows_raw's (loss, count); a target out of range is torch's IndexError, raised at the
    device's next wait (a read to the host, synchronize, the next loss): no host sync here."""
    shape = list(logp._shape)          # (the error keeps the shape, not the tensor, alive)
    fmt, C = _target_fmt(shape), shape[1]

    def error(bad):
        return IndexError(fmt.format(op=op, v=bad, n=C, d=1) if bad is not None else
                          f"Target out of bounds ({op}: input of shape {shape}; the target has "
                          f"changed since)")
    return _loss.nll_rows_raw(logp, target, ignore_index, mean, f"Target out of bounds ({op})",
                              error)


def _picked(logp, target, weight, ignore_index, op):
    """logp at each target class, the weight of each target (0 where ignored) and where the
    targets are ignored."""
    cd = _class_dim(logp)
    if weight is None and target.dtype is dtypes.int64 and logp.dtype.kind == "f":
        # the usual case in one kernel: the safe targets and their 0/1 weights
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
    if _rows_case(input, target, weight, reduction, 0.0):
        same_device("nll_loss", [input, target])
        return _RowsNLL.apply(input, target, ignore_index, reduction == "mean")
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
    if target.shape != input.shape and _rows_case(input, target, weight, reduction,
                                                  label_smoothing):
        _check_targets(input, target)
        same_device("cross_entropy", [input, target])
        return _RowsCrossEntropy.apply(input, target, ignore_index, reduction == "mean")
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


class _RowsCrossEntropy(Op):
    """cross_entropy of scores (n, C) against int64 class indices (n,), without class weights or
    label smoothing, summed or averaged: log_softmax and the loss family's two kernels
    (clgrad/kernels/loss.py) in place of the composed form's fifteen launches. Saves the scores
    (log_softmax is taken again in backward), as the composed form saved its log_softmax."""

    @staticmethod
    def forward(ctx, x, target, ignore_index, mean):
        logp = softmax_raw(x, 1, True)
        loss, count = _rows_nll(logp, target, ignore_index, mean, "cross_entropy")
        ctx.save_for_backward(x, target)
        ctx.count, ctx.ignore_index, ctx.mean = count, ignore_index, mean
        return loss

    @staticmethod
    def backward(ctx, g):
        x, target = ctx.saved_tensors
        if is_grad_enabled():
            # create_graph: the composed form, which is differentiable again
            keep = target != ctx.ignore_index
            onehot = one_hot(where(keep, target, 0), x.shape[1]).to(x.dtype)
            s = g * keep.to(x.dtype)
            if ctx.mean:
                s = s / ctx.count
            return (log_softmax(x, 1).exp() - onehot) * s.unsqueeze(1), None, None, None
        logp = softmax_raw(x, 1, True)
        return (_loss.cross_entropy_backward_raw(g, logp, target, ctx.count, ctx.ignore_index,
                                                 ctx.mean), None, None, None)


class _RowsNLL(Op):
    """nll_loss of log-probabilities (n, C) at int64 class indices (n,), without class weights,
    summed or averaged: one kernel each way (clgrad/kernels/loss.py)."""

    @staticmethod
    def forward(ctx, logp, target, ignore_index, mean):
        loss, count = _rows_nll(contiguous_raw(logp), target, ignore_index, mean, "nll_loss")
        ctx.save_for_backward(target)
        ctx.count, ctx.ignore_index, ctx.mean = count, ignore_index, mean
        ctx.shape, ctx.dtype = logp._shape, logp._dtype
        return loss

    @staticmethod
    def backward(ctx, g):
        target, = ctx.saved_tensors
        if is_grad_enabled():               # create_graph: composed, differentiable in g
            keep = target != ctx.ignore_index
            onehot = one_hot(where(keep, target, 0), ctx.shape[1]).to(ctx.dtype)
            s = -g * keep.to(ctx.dtype)
            if ctx.mean:
                s = s / ctx.count
            return onehot * s.unsqueeze(1), None, None, None
        return (_loss.nll_backward_raw(g, ctx.shape, ctx.dtype, target, ctx.count,
                                       ctx.ignore_index, ctx.mean), None, None, None)


def _rows_case(input, target, weight, reduction, label_smoothing):
    """Whether cross_entropy takes _RowsCrossEntropy (the usual classification loss)."""
    return weight is None and label_smoothing == 0 and reduction in ("mean", "sum") and \
        input.ndim == 2 and input.dtype in _loss.DTYPES and target.dtype is dtypes.int64 and \
        target.ndim == 1 and input.numel() > 0


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


# ---- cross entropy of a linear layer's logits ---------------------------------------------------
def linear_cross_entropy(input, linear_weight, target, *, linear_bias=None, weight=None,
                         reduction="mean", ignore_index=None, label_smoothing=0.0, options=None):
    """cross_entropy(linear(input, linear_weight, linear_bias), target): torch's reference form
    (a linear_weight of shape (C, *out_features, in_features) gives K-dimensional logits).
    `options` (torch's chunked evaluation) is not taken: the logits are formed whole.

    >>> import clgrad, clgrad.nn.functional as F
    >>> round(F.linear_cross_entropy(clgrad.ones(1, 2), clgrad.zeros(3, 2),
    ...                              clgrad.tensor([0])).item(), 4)
    1.0986
    """
    if options is not None:
        raise NotImplementedError("linear_cross_entropy: clgrad has no chunked form (options "
                                  "must be None)")
    C, extra = linear_weight.shape[0], tuple(linear_weight.shape[1:-1])
    w = linear_weight.reshape(-1, linear_weight.shape[-1])
    b = None if linear_bias is None else linear_bias.reshape(-1)
    # through nn.functional's namespace: an autocast region's wrappers apply (ops.dispatch)
    logits = dispatch.F.linear(input, w, b)
    if extra:                       # (N, C * prod(out), ) -> (N, C, *out)
        logits = logits.reshape(tuple(input.shape[:-1]) + (C,) + extra)
    return dispatch.F.cross_entropy(logits, target, weight=weight, reduction=reduction,
                                    ignore_index=-100 if ignore_index is None else ignore_index,
                                    label_smoothing=label_smoothing)
