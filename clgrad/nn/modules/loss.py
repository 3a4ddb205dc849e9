"""Loss modules: each holds its options (and class weights as a buffer) and calls
clgrad.nn.functional."""
import math

from .. import functional as F
from .linear import Linear
from .module import Module

__all__ = ["MSELoss", "L1Loss", "SmoothL1Loss", "HuberLoss", "NLLLoss", "CrossEntropyLoss",
           "BCELoss", "BCEWithLogitsLoss", "KLDivLoss", "MarginRankingLoss", "HingeEmbeddingLoss",
           "SoftMarginLoss", "CosineEmbeddingLoss", "TripletMarginLoss", "PoissonNLLLoss",
           "GaussianNLLLoss", "MultiLabelSoftMarginLoss", "CosineSimilarity", "PairwiseDistance",
           "MultiMarginLoss", "MultiLabelMarginLoss", "CTCLoss", "NLLLoss2d",
           "TripletMarginWithDistanceLoss", "LinearCrossEntropyLoss"]


class _Loss(Module):
    def __init__(self, size_average=None, reduce=None, reduction="mean"):
        super().__init__()
        if size_average is not None or reduce is not None:
            reduction = F._legacy_reduction(size_average, reduce)
        self.reduction = reduction


class _WeightedLoss(_Loss):
    def __init__(self, weight=None, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)


class MSELoss(_Loss):
    """Mean squared error.

    >>> import clgrad
    >>> clgrad.nn.MSELoss()(clgrad.tensor([1.0, 2.0]), clgrad.tensor([1.0, 4.0])).item()
    2.0
    """

    def forward(self, input, target):
        return F.mse_loss(input, target, reduction=self.reduction)


class L1Loss(_Loss):
    """Mean absolute error.

    >>> import clgrad
    >>> clgrad.nn.L1Loss(reduction="sum")(clgrad.tensor([1.0, 2.0]), clgrad.zeros(2)).item()
    3.0
    """

    def forward(self, input, target):
        return F.l1_loss(input, target, reduction=self.reduction)


class SmoothL1Loss(_Loss):
    """Quadratic below beta, linear above.

    >>> import clgrad
    >>> clgrad.nn.SmoothL1Loss(beta=2.0)(clgrad.tensor([1.0]), clgrad.zeros(1)).item()
    0.25
    """

    def __init__(self, size_average=None, reduce=None, reduction="mean", beta=1.0):
        super().__init__(size_average, reduce, reduction)
        self.beta = beta

    def forward(self, input, target):
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(_Loss):
    """Quadratic below delta, delta-scaled linear above.

    >>> import clgrad
    >>> clgrad.nn.HuberLoss(delta=0.5)(clgrad.tensor([2.0]), clgrad.zeros(1)).item()
    0.875
    """

    def __init__(self, reduction="mean", delta=1.0):
        super().__init__(reduction=reduction)
        self.delta = delta

    def forward(self, input, target):
        return F.huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class NLLLoss(_WeightedLoss):
    """Negative log likelihood of log-probabilities at class indices.

    >>> import clgrad
    >>> clgrad.nn.NLLLoss()(clgrad.tensor([[-0.5, -1.5]]), clgrad.tensor([1])).item()
    1.5
    """

    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None,
                 reduction="mean"):
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index

    def forward(self, input, target):
        return F.nll_loss(input, target, weight=self.weight, ignore_index=self.ignore_index,
                          reduction=self.reduction)


class CrossEntropyLoss(_WeightedLoss):
    """Cross entropy of logits against class indices or class probabilities (log_softmax
    based, so large logits are safe), with class weights, ignore_index and label_smoothing.

    >>> import clgrad
    >>> loss = clgrad.nn.CrossEntropyLoss(label_smoothing=0.1)
    >>> logits = clgrad.randn(3, 5, requires_grad=True)
    >>> out = loss(logits, clgrad.tensor([1, 0, 4]))
    >>> out.backward(); logits.grad.shape
    clgrad.Size([3, 5])
    """

    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None,
                 reduction="mean", label_smoothing=0.0):
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing

    def forward(self, input, target):
        return F.cross_entropy(input, target, weight=self.weight, ignore_index=self.ignore_index,
                               reduction=self.reduction, label_smoothing=self.label_smoothing)


class BCELoss(_WeightedLoss):
    """Binary cross entropy of probabilities.

    >>> import clgrad
    >>> round(clgrad.nn.BCELoss()(clgrad.tensor([0.8]), clgrad.tensor([1.0])).item(), 4)
    0.2231
    """

    def forward(self, input, target):
        return F.binary_cross_entropy(input, target, weight=self.weight,
                                      reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    """Binary cross entropy of sigmoid(logits), computed stably; pos_weight weighs the positive
    term per class.

    >>> import clgrad
    >>> crit = clgrad.nn.BCEWithLogitsLoss(pos_weight=clgrad.tensor([2.0]))
    >>> round(crit(clgrad.tensor([0.0]), clgrad.tensor([1.0])).item(), 4)
    1.3863
    """

    def __init__(self, weight=None, size_average=None, reduce=None, reduction="mean",
                 pos_weight=None):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input, target):
        return F.binary_cross_entropy_with_logits(input, target, self.weight,
                                                  pos_weight=self.pos_weight,
                                                  reduction=self.reduction)


class KLDivLoss(_Loss):
    """Kullback-Leibler divergence; input holds log-probabilities (target too with log_target).

    >>> import clgrad
    >>> p = clgrad.tensor([[0.25, 0.75]])
    >>> clgrad.nn.KLDivLoss(reduction="batchmean")(p.log(), p).item()
    0.0
    """

    def __init__(self, size_average=None, reduce=None, reduction="mean", log_target=False):
        super().__init__(size_average, reduce, reduction)
        self.log_target = log_target

    def forward(self, input, target):
        return F.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


class MarginRankingLoss(_Loss):
    """max(0, -y * (x1 - x2) + margin).

    >>> import clgrad
    >>> clgrad.nn.MarginRankingLoss()(clgrad.tensor([2.0]), clgrad.tensor([1.0]), clgrad.tensor([1.0])).item()
    0.0
    """

    def __init__(self, margin=0.0, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1, input2, target):
        return F.margin_ranking_loss(input1, input2, target, margin=self.margin,
                                     reduction=self.reduction)


class HingeEmbeddingLoss(_Loss):
    """x where y is 1, max(0, margin - x) where y is -1.

    >>> import clgrad
    >>> clgrad.nn.HingeEmbeddingLoss()(clgrad.tensor([0.5]), clgrad.tensor([-1.0])).item()
    0.5
    """

    def __init__(self, margin=1.0, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input, target):
        return F.hinge_embedding_loss(input, target, margin=self.margin,
                                      reduction=self.reduction)


class SoftMarginLoss(_Loss):
    """log(1 + exp(-y x)).

    >>> import clgrad
    >>> round(clgrad.nn.SoftMarginLoss()(clgrad.tensor([0.0]), clgrad.tensor([1.0])).item(), 4)
    0.6931
    """

    def forward(self, input, target):
        return F.soft_margin_loss(input, target, reduction=self.reduction)


class CosineEmbeddingLoss(_Loss):
    """1 - cos(x1, x2) where y is 1, max(0, cos(x1, x2) - margin) where y is -1.

    >>> import clgrad
    >>> x = clgrad.tensor([[1.0, 0.0]])
    >>> clgrad.nn.CosineEmbeddingLoss()(x, x, clgrad.tensor([-1.0])).item()
    1.0
    """

    def __init__(self, margin=0.0, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1, input2, target):
        return F.cosine_embedding_loss(input1, input2, target, margin=self.margin,
                                       reduction=self.reduction)


class TripletMarginLoss(_Loss):
    """max(d(a, p) - d(a, n) + margin, 0) with the pairwise p-distance.

    >>> import clgrad
    >>> a = clgrad.zeros(1, 2)
    >>> clgrad.nn.TripletMarginLoss(margin=1.0)(a, a, a).item()
    1.0
    """

    def __init__(self, margin=1.0, p=2.0, eps=1e-6, swap=False, size_average=None, reduce=None,
                 reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        if margin <= 0:
            raise ValueError(f"TripletMarginLoss: expected margin to be greater than 0, got "
                             f"{margin} instead")
        self.margin, self.p, self.eps, self.swap = margin, p, eps, swap

    def forward(self, anchor, positive, negative):
        return F.triplet_margin_loss(anchor, positive, negative, margin=self.margin, p=self.p,
                                     eps=self.eps, swap=self.swap, reduction=self.reduction)


class PoissonNLLLoss(_Loss):
    """Negative log-likelihood of the target under a Poisson distribution.

    >>> import clgrad
    >>> clgrad.nn.PoissonNLLLoss()(clgrad.tensor([0.0]), clgrad.tensor([1.0])).item()
    1.0
    """

    def __init__(self, log_input=True, full=False, size_average=None, eps=1e-8, reduce=None,
                 reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.log_input, self.full, self.eps = log_input, full, eps

    def forward(self, log_input, target):
        return F.poisson_nll_loss(log_input, target, log_input=self.log_input, full=self.full,
                                  eps=self.eps, reduction=self.reduction)


class GaussianNLLLoss(_Loss):
    """Negative log-likelihood of the target under N(input, var).

    >>> import clgrad
    >>> clgrad.nn.GaussianNLLLoss()(clgrad.zeros(2), clgrad.zeros(2), clgrad.ones(2)).item()
    0.0
    """

    def __init__(self, *, full=False, eps=1e-6, reduction="mean"):
        super().__init__(None, None, reduction)
        self.full, self.eps = full, eps

    def forward(self, input, target, var):
        return F.gaussian_nll_loss(input, target, var, full=self.full, eps=self.eps,
                                   reduction=self.reduction)


class MultiLabelSoftMarginLoss(_WeightedLoss):
    """One-versus-all logistic loss per class, averaged over the classes.

    >>> import clgrad
    >>> round(clgrad.nn.MultiLabelSoftMarginLoss()(clgrad.zeros(1, 2), clgrad.ones(1, 2)).item(), 4)
    0.6931
    """

    def forward(self, input, target):
        return F.multilabel_soft_margin_loss(input, target, weight=self.weight,
                                             reduction=self.reduction)


class CosineSimilarity(Module):
    """x1 . x2 / max(|x1| |x2|, eps) along dim.

    >>> import clgrad
    >>> clgrad.nn.CosineSimilarity(dim=0)(clgrad.tensor([1.0, 0.0]), clgrad.tensor([2.0, 0.0])).item()
    1.0
    """

    def __init__(self, dim=1, eps=1e-8):
        super().__init__()
        self.dim, self.eps = dim, eps

    def forward(self, x1, x2):
        return F.cosine_similarity(x1, x2, self.dim, self.eps)


class PairwiseDistance(Module):
    """The p-norm of x1 - x2 + eps over the last dimension.

    >>> import clgrad
    >>> round(clgrad.nn.PairwiseDistance()(clgrad.zeros(1, 2), clgrad.ones(1, 2)).item(), 4)
    1.4142
    """

    def __init__(self, p=2.0, eps=1e-6, keepdim=False):
        super().__init__()
        self.norm, self.eps, self.keepdim = p, eps, keepdim

    def forward(self, x1, x2):
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)


class MultiMarginLoss(_WeightedLoss):
    """The multi-class hinge loss (see F.multi_margin_loss); p is 1 or 2.

    >>> import clgrad
    >>> loss = clgrad.nn.MultiMarginLoss()
    >>> round(loss(clgrad.tensor([[0.1, 0.2, 0.4, 0.8]]), clgrad.tensor([3])).item(), 4)
    0.325
    """

    def __init__(self, p=1, margin=1.0, weight=None, size_average=None, reduce=None,
                 reduction="mean"):
        super().__init__(weight, size_average, reduce, reduction)
        if p not in (1, 2):
            raise ValueError("only p == 1 and p == 2 supported")
        if weight is not None and weight.dim() != 1:
            raise ValueError(f"MultiMarginLoss: expected weight to be None or 1D tensor, got "
                             f"{weight.dim()}D instead")
        self.p = p
        self.margin = margin

    def forward(self, input, target):
        return F.multi_margin_loss(input, target, p=self.p, margin=self.margin,
                                   weight=self.weight, reduction=self.reduction)


class MultiLabelMarginLoss(_Loss):
    """The multi-label hinge loss (see F.multilabel_margin_loss).

    >>> import clgrad
    >>> loss = clgrad.nn.MultiLabelMarginLoss()
    >>> x = clgrad.tensor([[0.1, 0.2, 0.4, 0.8]])
    >>> round(loss(x, clgrad.tensor([[3, 0, -1, 1]])).item(), 4)
    0.85
    """

    def forward(self, input, target):
        return F.multilabel_margin_loss(input, target, reduction=self.reduction)


class CTCLoss(_Loss):
    """The Connectionist Temporal Classification loss (see F.ctc_loss).

    >>> import clgrad
    >>> lp = clgrad.randn(8, 2, 5).log_softmax(-1)
    >>> loss = clgrad.nn.CTCLoss(blank=0, zero_infinity=True)
    >>> loss(lp, clgrad.tensor([[1, 2, 2], [3, 4, 0]]), [8, 7], [3, 2]).shape
    clgrad.Size([])
    """

    def __init__(self, blank=0, reduction="mean", zero_infinity=False):
        super().__init__(reduction=reduction)
        self.blank = blank
        self.zero_infinity = zero_infinity

    def forward(self, log_probs, targets, input_lengths, target_lengths):
        return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, self.blank,
                          self.reduction, self.zero_infinity)


class NLLLoss2d(NLLLoss):
    """NLLLoss under its deprecated name for 4-D inputs (torch keeps it as an alias)."""


class TripletMarginWithDistanceLoss(_Loss):
    """max(d(a, p) - d(a, n) + margin, 0) for any distance function (default: the pairwise
    Euclidean distance).

    >>> import clgrad
    >>> a = clgrad.zeros(1, 2)
    >>> clgrad.nn.TripletMarginWithDistanceLoss()(a, a, a).item()
    1.0
    """

    def __init__(self, *, distance_function=None, margin=1.0, swap=False, reduction="mean"):
        super().__init__(reduction=reduction)
        if margin <= 0:
            raise ValueError(f"TripletMarginWithDistanceLoss: expected margin to be greater than "
                             f"0, got {margin} instead")
        self.distance_function, self.margin, self.swap = distance_function, margin, swap

    def forward(self, anchor, positive, negative):
        return F.triplet_margin_with_distance_loss(
            anchor, positive, negative, distance_function=self.distance_function,
            margin=self.margin, swap=self.swap, reduction=self.reduction)


class LinearCrossEntropyLoss(Module):
    """A linear layer to num_classes (times out_features) logits and the cross entropy against
    the target in one module, as torch's (its reference form: the logits are formed whole).

    >>> import clgrad
    >>> m = clgrad.nn.LinearCrossEntropyLoss(4, 3)
    >>> m(clgrad.ones(2, 4), clgrad.tensor([0, 2])).shape
    clgrad.Size([])
    """

    def __init__(self, in_features, num_classes, *, out_features=(), bias=False, device=None,
                 dtype=None, reduction="mean", weight=None, ignore_index=None,
                 label_smoothing=0.0, options=None):
        super().__init__()
        self.num_classes, self.out_features = num_classes, tuple(out_features)
        self.linear = Linear(in_features, num_classes * math.prod(self.out_features), bias=bias,
                             device=device, dtype=dtype)
        self.reduction, self.ignore_index = reduction, ignore_index
        self.label_smoothing, self.options = label_smoothing, options
        self.register_buffer("weight", weight)

    def forward(self, input, target):
        w = self.linear.weight.reshape((self.num_classes,) + self.out_features +
                                       (self.linear.in_features,))
        b = None if self.linear.bias is None else \
            self.linear.bias.reshape((self.num_classes,) + self.out_features)
        return F.linear_cross_entropy(input, w, target, linear_bias=b, weight=self.weight,
                                      reduction=self.reduction, ignore_index=self.ignore_index,
                                      label_smoothing=self.label_smoothing, options=self.options)
