"""Dropout, the channel-wise Dropout1d/2d/3d, and AlphaDropout / FeatureAlphaDropout."""
from .. import functional as F
from .module import Module

__all__ = ["Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout",
           "FeatureAlphaDropout"]


class _DropoutNd(Module):
    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p
        self.inplace = inplace

    def extra_repr(self):
        return f"p={self.p}, inplace={self.inplace}"


class Dropout(_DropoutNd):
    """In training, zero each element with probability p and scale the others by 1/(1-p); in
    evaluation, the identity. clgrad.manual_seed makes the masks reproducible.

    >>> import clgrad
    >>> drop = clgrad.nn.Dropout(0.2)
    >>> x = clgrad.ones(4, 5)
    >>> drop.eval()(x) is x, drop
    (True, Dropout(p=0.2, inplace=False))
    """

    def forward(self, input):
        return F.dropout(input, self.p, self.training, self.inplace)


class Dropout1d(_DropoutNd):
    """Zero whole channels of (N, C, L) or (C, L) inputs with probability p in training.

    >>> import clgrad
    >>> y = clgrad.nn.Dropout1d(0.5)(clgrad.ones(8, 16, 4))
    >>> bool(((y == 0).all(-1) | (y == 2).all(-1)).all())
    True
    """

    def forward(self, input):
        return F.dropout1d(input, self.p, self.training, self.inplace)


class Dropout2d(_DropoutNd):
    """Zero whole channels of (N, C, H, W) or (N, C, L) inputs with probability p in training.

    >>> import clgrad
    >>> y = clgrad.nn.Dropout2d(0.5)(clgrad.ones(8, 16, 3, 3))
    >>> bool(((y == 0).all((-2, -1)) | (y == 2).all((-2, -1))).all())
    True
    """

    def forward(self, input):
        return F.dropout2d(input, self.p, self.training, self.inplace)


class Dropout3d(_DropoutNd):
    """Zero whole channels of (N, C, D, H, W) or (C, D, H, W) inputs with probability p in
    training.

    >>> import clgrad
    >>> clgrad.nn.Dropout3d(0.5).eval()(clgrad.ones(2, 1, 1, 1)).tolist()
    [[[[1.0]]], [[[1.0]]]]
    """

    def forward(self, input):
        return F.dropout3d(input, self.p, self.training, self.inplace)


class AlphaDropout(_DropoutNd):
    """Dropout for SELU networks (see F.alpha_dropout): keeps zero mean and unit variance.

    >>> import clgrad
    >>> clgrad.nn.AlphaDropout(0.2)
    AlphaDropout(p=0.2, inplace=False)
    >>> clgrad.nn.AlphaDropout(0.2)(clgrad.randn(3, 4)).shape
    clgrad.Size([3, 4])
    """

    def forward(self, input):
        return F.alpha_dropout(input, self.p, self.training)


class FeatureAlphaDropout(_DropoutNd):
    """Alpha dropout of whole channels (one mask value per (batch, channel)).

    >>> import clgrad
    >>> m = clgrad.nn.FeatureAlphaDropout(0.5)
    >>> y = m(clgrad.zeros(2, 3, 4))
    >>> bool((y == y[:, :, :1]).all())
    True
    """

    def forward(self, input):
        return F.feature_alpha_dropout(input, self.p, self.training)
