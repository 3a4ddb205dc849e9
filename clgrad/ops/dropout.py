"""torch.nn.functional's dropouts: dropout, the channel dropouts (dropout1d/2d/3d) and, for SELU
networks, alpha_dropout and feature_alpha_dropout."""
import math
import warnings

from ..autograd.grad_mode import no_grad
from .creation import empty_like

__all__ = ["dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout",
           "feature_alpha_dropout"]


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


# ---- alpha dropout ------------------------------------------------------------------------------
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
