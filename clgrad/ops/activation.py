"""torch.nn.functional's activations: the fused ones (relu, leaky_relu, elu, gelu, silu,
softplus, logsigmoid, sigmoid, tanh: kernels of the elementwise table), softmax and
log_softmax; and, composed of clgrad ops (so they differentiate to any order), the piecewise
activations, the shrinks and thresholds, prelu/rrelu, softmin, the in-place forms (elu_, selu_,
celu_, rrelu_) and gumbel_softmax. At the kinks the gradients are torch's: a clamp-like
activation passes the gradient only strictly inside its linear range, as torch's
hardtanh_backward does.
"""
import warnings

from . import dispatch, softmax as _softmax
from .elementwise import apply_ew
from .pointwise import inplace as _inplace, where
from ..tensor import Tensor
from .creation import empty_like

__all__ = ["relu", "relu_", "leaky_relu", "leaky_relu_", "elu", "gelu", "silu", "softplus",
           "logsigmoid", "sigmoid", "tanh", "softmax", "log_softmax",
           "hardtanh", "hardtanh_", "relu6", "hardsigmoid", "hardswish", "selu", "celu", "mish",
           "glu", "softsign", "softshrink", "hardshrink", "tanhshrink", "threshold", "threshold_",
           "prelu", "rrelu", "softmin", "gumbel_softmax", "elu_", "selu_", "celu_", "rrelu_"]



def _inplace_result(input, fn, inplace):
    """fn(input), or with inplace, fn of a copy written back into input: an in-place op that
    autograd records, whose backward still sees the values from before (as torch's)."""
    return input.copy_(fn(input.clone())) if inplace else fn(input)


# ---- the fused activations, softmax and log_softmax ---------------------------------------------
def _act(name, input, inplace, *params):
    if inplace:
        return _inplace(name, input, (), params)
    return apply_ew(name, input, *params)


def relu(input, inplace=False):
    """max(input, 0).

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.relu(clgrad.tensor([-2.0, 0.5])).tolist()
    [0.0, 0.5]
    """
    return _act("relu", input, inplace)


def relu_(input):
    """relu in place.

    >>> import clgrad, clgrad.nn.functional as F
    >>> x = clgrad.tensor([-1.0, 1.0])
    >>> F.relu_(x) is x, x.tolist()
    (True, [0.0, 1.0])
    """
    return _act("relu", input, True)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    """input where positive, negative_slope * input elsewhere.

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.leaky_relu(clgrad.tensor([-2.0, 3.0]), 0.5).tolist()
    [-1.0, 3.0]
    """
    return _act("leaky_relu", input, inplace, float(negative_slope))


def leaky_relu_(input, negative_slope=0.01):
    """leaky_relu in place.

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.leaky_relu_(clgrad.tensor([-2.0]), 0.5).tolist()
    [-1.0]
    """
    return _act("leaky_relu", input, True, float(negative_slope))


def elu(input, alpha=1.0, inplace=False):
    """input where positive, alpha * (exp(input) - 1) elsewhere.

    >>> import clgrad, clgrad.nn.functional as F
    >>> round(F.elu(clgrad.tensor([-1.0])).item(), 4)
    -0.6321
    """
    return _act("elu", input, inplace, float(alpha))


def gelu(input, approximate="none"):
    """x * Phi(x), exactly (approximate='none') or with torch's tanh approximation.

    >>> import clgrad, clgrad.nn.functional as F
    >>> [round(v, 4) for v in F.gelu(clgrad.tensor([1.0, -1.0])).tolist()]
    [0.8413, -0.1587]
    """
    if approximate == "none":
        return apply_ew("gelu", input)
    if approximate == "tanh":
        return apply_ew("gelu_tanh", input)
    raise RuntimeError(f"approximate argument must be either none or tanh, got {approximate!r}")


def silu(input, inplace=False):
    """x * sigmoid(x) (swish).

    >>> import clgrad, clgrad.nn.functional as F
    >>> round(F.silu(clgrad.tensor([1.0])).item(), 4)
    0.7311
    """
    return _act("silu", input, inplace)


def softplus(input, beta=1.0, threshold=20.0):
    """log(1 + exp(beta * x)) / beta, linear where beta * x > threshold.

    >>> import clgrad, clgrad.nn.functional as F
    >>> round(F.softplus(clgrad.tensor([0.0])).item(), 4)
    0.6931
    """
    return apply_ew("softplus", input, float(beta), float(threshold))


def logsigmoid(input):
    """log(sigmoid(x)), computed without overflow.

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.logsigmoid(clgrad.tensor([-200.0])).item()
    -200.0
    """
    if input.dtype.kind != "f":
        raise NotImplementedError(f'"log_sigmoid" not implemented for \'{input.dtype.name}\'')
    return -softplus(-input)


def sigmoid(input):
    """1 / (1 + exp(-x)).

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.sigmoid(clgrad.tensor([0.0])).tolist()
    [0.5]
    """
    return apply_ew("sigmoid", input)


def tanh(input):
    """Hyperbolic tangent.

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.tanh(clgrad.tensor([0.0])).tolist()
    [0.0]
    """
    return apply_ew("tanh", input)


def _softmax_dim(name, ndim):
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to "
                  f"include dim=X as an argument.", stacklevel=3)
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    """exp(x) / sum(exp(x)) along dim.

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.softmax(clgrad.tensor([[0.0, 0.0]]), dim=1).tolist()
    [[0.5, 0.5]]
    """
    if dim is None:
        dim = _softmax_dim("softmax", input.ndim)
    return _softmax.softmax(input, dim, dtype=dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    """log(softmax(x)) along dim, computed without overflow.

    >>> import clgrad, clgrad.nn.functional as F
    >>> [round(v, 4) for v in F.log_softmax(clgrad.tensor([1.0, 1.0]), dim=0).tolist()]
    [-0.6931, -0.6931]
    """
    if dim is None:
        dim = _softmax_dim("log_softmax", input.ndim)
    return _softmax.log_softmax(input, dim, dtype=dtype)


# ---- piecewise activations -----------------------------------------------------------------------
def _clamp_strict(x, lo, hi):
    """clamp(x, lo, hi) whose gradient is 1 only where lo < x < hi (torch's kink rule)."""
    inside = (x > lo) & (x < hi)
    return where(inside, x, x.clamp(lo, hi).detach())


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    """x clamped to [min_val, max_val].

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.hardtanh(clgrad.tensor([-2.0, 0.5, 3.0])).tolist()
    [-1.0, 0.5, 1.0]
    """
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    return _inplace_result(input, lambda x: _clamp_strict(x, min_val, max_val), inplace)


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    """hardtanh in place.

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.hardtanh_(clgrad.tensor([5.0])).tolist()
    [1.0]
    """
    return hardtanh(input, min_val, max_val, True)


def relu6(input, inplace=False):
    """min(max(x, 0), 6).

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.relu6(clgrad.tensor([-1.0, 3.0, 9.0])).tolist()
    [0.0, 3.0, 6.0]
    """
    return hardtanh(input, 0.0, 6.0, inplace)


def hardsigmoid(input, inplace=False):
    """0 below -3, 1 above 3, x / 6 + 1/2 between.

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.hardsigmoid(clgrad.tensor([-4.0, 0.0, 4.0])).tolist()
    [0.0, 0.5, 1.0]
    """
    return _inplace_result(input, lambda x: _clamp_strict(x / 6 + 0.5, 0.0, 1.0), inplace)


def hardswish(input, inplace=False):
    """x * relu6(x + 3) / 6, with torch's gradient (x / 3 + 1/2 strictly inside (-3, 3), 0 at
    and below -3, 1 at and above 3).

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.hardswish(clgrad.tensor([-4.0, 1.0, 4.0])).tolist()
    [-0.0, 0.6666666865348816, 4.0]
    """
    def fn(x):
        return where(x <= -3, x * 0, where(x >= 3, x, x * (x + 3) / 6))
    return _inplace_result(input, fn, inplace)


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def selu(input, inplace=False):
    """scale * elu(x, alpha) with the self-normalising constants.

    >>> import clgrad, clgrad.nn.functional as F
    >>> round(F.selu(clgrad.tensor([1.0])).item(), 4)
    1.0507
    """
    return _inplace_result(input, lambda x: elu(x, _SELU_ALPHA) * _SELU_SCALE, inplace)


def celu(input, alpha=1.0, inplace=False):
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1)).

    >>> import clgrad, clgrad.nn.functional as F
    >>> round(F.celu(clgrad.tensor([-1.0]), alpha=2.0).item(), 4)
    -0.7869
    """
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError: celu's alpha must not be 0")
    return _inplace_result(input, lambda x: elu(x / alpha, 1.0) * alpha, inplace)


def mish(input, inplace=False):
    """x * tanh(softplus(x)).

    >>> import clgrad, clgrad.nn.functional as F
    >>> round(F.mish(clgrad.tensor([1.0])).item(), 4)
    0.8651
    """
    # softplus through nn.functional's namespace: autocast's wrapper applies (ops.dispatch)
    return _inplace_result(input, lambda x: x * dispatch.F.softplus(x).tanh(), inplace)


def glu(input, dim=-1):
    """a * sigmoid(b) where a, b are the two halves of input along dim.

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.glu(clgrad.tensor([2.0, 0.0])).tolist()
    [1.0]
    """
    if input.dim() == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    d = dim % input.dim()
    if input.shape[d] % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {d} is size "
                           f"{input.shape[d]}")
    a, b = input.chunk(2, d)
    return a * b.sigmoid()


def softsign(input):
    """x / (1 + |x|).

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.softsign(clgrad.tensor([1.0, -3.0])).tolist()
    [0.5, -0.75]
    """
    return input / (input.abs() + 1)


def softshrink(input, lambd=0.5):
    """x - lambd above lambd, x + lambd below -lambd, 0 between.

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.softshrink(clgrad.tensor([1.0, 0.2, -1.0])).tolist()
    [0.5, 0.0, -0.5]
    """
    if lambd < 0:
        raise RuntimeError(f"lambda must be greater or equal to 0, but found to be {lambd}.")
    return where(input > lambd, input - lambd, where(input < -lambd, input + lambd, input * 0))


def hardshrink(input, lambd=0.5):
    """x where |x| > lambd, else 0.

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.hardshrink(clgrad.tensor([1.0, 0.2, -1.0])).tolist()
    [1.0, 0.0, -1.0]
    """
    return where((input > lambd) | (input < -lambd), input, input * 0)


def tanhshrink(input):
    """x - tanh(x).

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.tanhshrink(clgrad.tensor([0.0])).tolist()
    [0.0]
    """
    return input - input.tanh()


def threshold(input, threshold, value, inplace=False):
    """x where x > threshold, else value.

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.threshold(clgrad.tensor([0.5, 2.0]), 1.0, -1.0).tolist()
    [-1.0, 2.0]
    """
    return _inplace_result(input, lambda x: where(x > threshold, x, x * 0 + value), inplace)


def threshold_(input, threshold, value):
    """threshold in place.

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.threshold_(clgrad.tensor([0.5]), 1.0, 7.0).tolist()
    [7.0]
    """
    return globals()["threshold"](input, threshold, value, True)


def prelu(input, weight):
    """x where x > 0, else weight * x, weight one number or one per channel (dim 1).

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.prelu(clgrad.tensor([[-2.0, 3.0]]), clgrad.tensor([0.25, 0.5])).tolist()
    [[-0.5, 3.0]]
    """
    if not isinstance(weight, Tensor):
        raise TypeError(f"prelu(): argument 'weight' must be Tensor, not {type(weight).__name__}")
    w = weight
    if weight.numel() != 1:
        C = input.shape[1] if input.dim() >= 2 else input.shape[0]
        if weight.numel() != C:
            raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found "
                               f"parameter numbers = {weight.numel()} and channel size = {C}.")
        if input.dim() >= 2:
            w = weight.reshape((C,) + (1,) * (input.dim() - 2))
    return where(input > 0, input, w * input)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    """Leaky ReLU whose negative slope is drawn from U(lower, upper) per element in training,
    and is (lower + upper) / 2 in evaluation.

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.rrelu(clgrad.tensor([-1.0, 1.0]), 0.1, 0.3).tolist()
    [-0.20000000298023224, 1.0]
    """
    if not training:
        return leaky_relu(input, (lower + upper) / 2, inplace)
    slope = empty_like(input).uniform_(lower, upper)
    return _inplace_result(input, lambda x: where(x >= 0, x, x * slope), inplace)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    """softmax(-x) along dim.

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.softmin(clgrad.tensor([0.0, 0.0]), dim=0).tolist()
    [0.5, 0.5]
    """
    return dispatch.F.softmax(-input, dim, dtype=dtype)     # autocast applies (ops.dispatch)


# ---- in place, and sampled -----------------------------------------------------------------------
def elu_(input, alpha=1.0):
    """elu in place."""
    return elu(input, alpha, inplace=True)


def selu_(input):
    """selu in place."""
    return selu(input, inplace=True)


def celu_(input, alpha=1.0):
    """celu in place."""
    return celu(input, alpha, inplace=True)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False):
    """rrelu in place."""
    return rrelu(input, lower, upper, training, inplace=True)


def gumbel_softmax(logits, tau=1.0, hard=False, eps=1e-10, dim=-1):
    """Samples of the Gumbel-softmax distribution over dim: softmax((logits + g) / tau) with
    g = -log(Exponential(1)) noise; hard=True returns one-hot samples whose gradient is the soft
    one's (the straight-through estimator), as torch's.

    >>> import clgrad, clgrad.nn.functional as F
    >>> y = F.gumbel_softmax(clgrad.zeros(2, 5), hard=True)
    >>> y.sum(-1).tolist(), sorted(set(y.reshape(-1).tolist()))
    ([1.0, 1.0], [0.0, 1.0])
    """
    gumbels = -logits.new_empty(tuple(logits.shape)).exponential_().log()
    soft = ((logits + gumbels) / tau).softmax(dim)
    if not hard:
        return soft
    index = soft.argmax(dim, keepdim=True)
    one_hot = logits.new_zeros(tuple(logits.shape)).scatter_(dim, index, 1.0)
    return one_hot - soft.detach() + soft
