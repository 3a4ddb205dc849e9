"""torch.nn.functional's dropouts for SELU networks (the others are in clgrad/nn/functional.py):
alpha_dropout and feature_alpha_dropout."""
import math

from ..autograd.grad_mode import no_grad
from ..ops.creation import empty_like

__all__ = ["alpha_dropout", "feature_alpha_dropout"]


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
