"""Dropout."""
from .. import functional as F
from .module import Module

__all__ = ["Dropout"]


class Dropout(Module):
    """In training, zero each element with probability p and scale the others by 1/(1-p); in
    evaluation, the identity. clgrad.manual_seed makes the masks reproducible.

    >>> import clgrad
    >>> drop = clgrad.nn.Dropout(0.2)
    >>> x = clgrad.ones(4, 5)
    >>> drop.eval()(x) is x, drop
    (True, Dropout(p=0.2, inplace=False))
    """

    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p
        self.inplace = inplace

    def forward(self, input):
        return F.dropout(input, self.p, self.training, self.inplace)

    def extra_repr(self):
        return f"p={self.p}, inplace={self.inplace}"
