"""Loss modules: each holds its options (and class weights as a buffer) and calls
clgrad.nn.functional."""
from .. import functional as F
from .module import Module

__all__ = ["MSELoss", "L1Loss", "SmoothL1Loss", "HuberLoss", "NLLLoss", "CrossEntropyLoss",
           "BCELoss", "BCEWithLogitsLoss"]


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
