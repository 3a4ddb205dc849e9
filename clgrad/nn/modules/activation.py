"""Activation modules: each calls its fused kernel through clgrad.nn.functional."""
from .. import functional as F
from .module import Module

__all__ = ["ReLU", "LeakyReLU", "ELU", "GELU", "SiLU", "Softplus", "Tanh", "Sigmoid", "Softmax",
           "LogSoftmax"]


class ReLU(Module):
    """max(x, 0).

    >>> import clgrad
    >>> clgrad.nn.ReLU()(clgrad.tensor([-1.0, 1.0])).tolist(), clgrad.nn.ReLU(inplace=True)
    ([0.0, 1.0], ReLU(inplace=True))
    """

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.relu(input, inplace=self.inplace)

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""


class LeakyReLU(Module):
    """x where positive, negative_slope * x elsewhere.

    >>> import clgrad
    >>> clgrad.nn.LeakyReLU(0.1)(clgrad.tensor([-10.0])).tolist(), clgrad.nn.LeakyReLU()
    ([-1.0], LeakyReLU(negative_slope=0.01))
    """

    def __init__(self, negative_slope=1e-2, inplace=False):
        super().__init__()
        self.negative_slope = negative_slope
        self.inplace = inplace

    def forward(self, input):
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self):
        return f"negative_slope={self.negative_slope}" + (", inplace=True" if self.inplace else "")


class ELU(Module):
    """x where positive, alpha * (exp(x) - 1) elsewhere.

    >>> import clgrad
    >>> clgrad.nn.ELU()
    ELU(alpha=1.0)
    """

    def __init__(self, alpha=1.0, inplace=False):
        super().__init__()
        self.alpha = alpha
        self.inplace = inplace

    def forward(self, input):
        return F.elu(input, self.alpha, self.inplace)

    def extra_repr(self):
        return f"alpha={self.alpha}" + (", inplace=True" if self.inplace else "")


class GELU(Module):
    """x * Phi(x); approximate='tanh' uses torch's tanh approximation.

    >>> import clgrad
    >>> clgrad.nn.GELU(approximate="tanh")
    GELU(approximate='tanh')
    """

    def __init__(self, approximate="none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, input):
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self):
        return f"approximate={self.approximate!r}"


class SiLU(Module):
    """x * sigmoid(x).

    >>> import clgrad
    >>> round(clgrad.nn.SiLU()(clgrad.tensor([2.0])).item(), 4)
    1.7616
    """

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.silu(input, inplace=self.inplace)

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""


class Softplus(Module):
    """log(1 + exp(beta x)) / beta, linear above threshold.

    >>> import clgrad
    >>> clgrad.nn.Softplus()
    Softplus(beta=1.0, threshold=20.0)
    """

    def __init__(self, beta=1.0, threshold=20.0):
        super().__init__()
        self.beta = beta
        self.threshold = threshold

    def forward(self, input):
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self):
        return f"beta={self.beta}, threshold={self.threshold}"


class Tanh(Module):
    """Hyperbolic tangent.

    >>> import clgrad
    >>> clgrad.nn.Tanh()(clgrad.tensor([0.0])).tolist()
    [0.0]
    """

    def forward(self, input):
        return F.tanh(input)


class Sigmoid(Module):
    """1 / (1 + exp(-x)).

    >>> import clgrad
    >>> clgrad.nn.Sigmoid()(clgrad.tensor([0.0])).tolist()
    [0.5]
    """

    def forward(self, input):
        return F.sigmoid(input)


class Softmax(Module):
    """Softmax along dim.

    >>> import clgrad
    >>> clgrad.nn.Softmax(dim=1)(clgrad.zeros(1, 4)).tolist(), clgrad.nn.Softmax(dim=-1)
    ([[0.25, 0.25, 0.25, 0.25]], Softmax(dim=-1))
    """

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.softmax(input, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class LogSoftmax(Module):
    """log(softmax(x)) along dim, without overflow.

    >>> import clgrad
    >>> clgrad.nn.LogSoftmax(dim=1)
    LogSoftmax(dim=1)
    """

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.log_softmax(input, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"
