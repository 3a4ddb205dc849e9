"""clgrad.nn.init: fill tensors in place (under no_grad) with torch's initialisation schemes.
Draws come from clgrad's Philox generator (or the one passed), so clgrad.manual_seed makes them
reproducible on every device; the numbers differ from torch's, the distributions do not.

>>> import clgrad
>>> w = clgrad.empty(64, 32)
>>> _ = clgrad.nn.init.kaiming_uniform_(w, nonlinearity="relu")
>>> bool(w.abs().max() <= (6 / 32) ** 0.5)
True
"""
import math
import warnings

from ..autograd.grad_mode import no_grad
from ..ops.elementwise import apply_ew
from ..ops.pointwise import where
from ..ops.creation import eye
from ..linalg import qr

__all__ = ["calculate_gain", "uniform_", "normal_", "trunc_normal_", "constant_", "ones_",
           "zeros_", "eye_", "xavier_uniform_", "xavier_normal_", "kaiming_uniform_",
           "kaiming_normal_", "orthogonal_"]


def calculate_gain(nonlinearity, param=None):
    """The recommended gain for a nonlinearity (relu: sqrt(2), tanh: 5/3, leaky_relu:
    sqrt(2 / (1 + slope^2)), selu: 3/4, linear, conv and sigmoid: 1).

    >>> from clgrad.nn import init
    >>> init.calculate_gain("tanh"), round(init.calculate_gain("leaky_relu", 0.2), 4)
    (1.6666666666666667, 1.3868)
    """
    linear_fns = ["linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
                  "conv_transpose2d", "conv_transpose3d"]
    if nonlinearity in linear_fns or nonlinearity == "sigmoid":
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif not isinstance(param, bool) and isinstance(param, (int, float)):
            slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(tensor):
    if tensor.dim() < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 "
                         "dimensions")
    receptive = 1
    for s in tensor.shape[2:]:
        receptive *= s
    return tensor.size(1) * receptive, tensor.size(0) * receptive


def _calculate_correct_fan(tensor, mode):
    mode = mode.lower()
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of ['fan_in', 'fan_out']")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def uniform_(tensor, a=0.0, b=1.0, generator=None):
    """Fill with U(a, b).

    >>> import clgrad
    >>> t = clgrad.nn.init.uniform_(clgrad.empty(100), -1, 1)
    >>> bool((t >= -1).all() and (t < 1).all())
    True
    """
    with no_grad():
        return tensor.uniform_(a, b, generator=generator)


def normal_(tensor, mean=0.0, std=1.0, generator=None):
    """Fill with N(mean, std^2).

    >>> import clgrad
    >>> clgrad.nn.init.normal_(clgrad.empty(2, 3), std=0.02).shape
    clgrad.Size([2, 3])
    """
    with no_grad():
        return tensor.normal_(mean, std, generator=generator)


def _erfinv(x):
    """erfinv on a float tensor in (-1, 1): Giles' single-precision approximation, refined by
    two Newton steps on erf (clgrad has no erfinv kernel, and this runs at init only)."""
    w = -((1 - x) * (1 + x)).log()
    small = w - 2.5
    p = 2.81022636e-08
    for c in (3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503,
              -0.00417768164, 0.246640727, 1.50140941):
        p = p * small + c
    big = w.clamp_min(5.0).sqrt() - 3
    q = -0.000200214257
    for c in (0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613,
              0.00943887047, 1.00167406, 2.83297682):
        q = q * big + c
    y = where(w < 5.0, p, q) * x
    for _ in range(2):
        y = y - (apply_ew("erf", y) - x) / ((-(y * y)).exp() * (2 / math.sqrt(math.pi)))
    return y


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    """Fill with N(mean, std^2) truncated to [a, b] (inverse-CDF sampling, as torch does).

    >>> import clgrad
    >>> t = clgrad.nn.init.trunc_normal_(clgrad.empty(1000), std=1.0, a=-0.5, b=0.5)
    >>> bool((t >= -0.5).all() and (t <= 0.5).all())
    True
    """
    def norm_cdf(v):
        return (1.0 + math.erf(v / math.sqrt(2.0))) / 2.0

    if mean < a - 2 * std or mean > b + 2 * std:
        warnings.warn("mean is more than 2 std from [a, b] in nn.init.trunc_normal_. The "
                      "distribution of values may be incorrect.", stacklevel=2)
    with no_grad():
        lo, hi = norm_cdf((a - mean) / std), norm_cdf((b - mean) / std)
        u = tensor.uniform_(2 * lo - 1, 2 * hi - 1, generator=generator)
        # erfinv needs float32 at least: 16-bit tensors are computed in float32 and cast back
        work = u.float() if u.dtype.itemsize < 4 else u
        values = (_erfinv(work) * (std * math.sqrt(2.0)) + mean).clamp(a, b)
        return tensor.copy_(values)


def constant_(tensor, val):
    """Fill with val.

    >>> import clgrad
    >>> clgrad.nn.init.constant_(clgrad.empty(2), 0.5).tolist()
    [0.5, 0.5]
    """
    with no_grad():
        return tensor.fill_(val)


def ones_(tensor):
    """Fill with ones.

    >>> import clgrad
    >>> clgrad.nn.init.ones_(clgrad.empty(2)).tolist()
    [1.0, 1.0]
    """
    return constant_(tensor, 1.0)


def zeros_(tensor):
    """Fill with zeros.

    >>> import clgrad
    >>> clgrad.nn.init.zeros_(clgrad.empty(2)).tolist()
    [0.0, 0.0]
    """
    return constant_(tensor, 0.0)


def eye_(tensor):
    """Fill a 2-D tensor with the identity matrix.

    >>> import clgrad
    >>> clgrad.nn.init.eye_(clgrad.empty(2, 3)).tolist()
    [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]
    """
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    with no_grad():
        return tensor.copy_(eye(*tensor.shape, dtype=tensor.dtype, device=tensor.device))


def _no_op_if_empty(tensor):
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=3)
        return True
    return False


def xavier_uniform_(tensor, gain=1.0, generator=None):
    """Glorot uniform: U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out)).

    >>> import clgrad
    >>> w = clgrad.nn.init.xavier_uniform_(clgrad.empty(30, 20))
    >>> bool(w.abs().max() <= (6 / 50) ** 0.5)
    True
    """
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    a = math.sqrt(3.0) * gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return uniform_(tensor, -a, a, generator)


def xavier_normal_(tensor, gain=1.0, generator=None):
    """Glorot normal: N(0, std^2) with std = gain * sqrt(2 / (fan_in + fan_out)).

    >>> import clgrad
    >>> w = clgrad.nn.init.xavier_normal_(clgrad.empty(200, 300))
    >>> abs(w.std().item() - (2 / 500) ** 0.5) < 0.002
    True
    """
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return normal_(tensor, 0.0, std, generator)


def kaiming_uniform_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """He uniform: U(-b, b) with b = gain * sqrt(3 / fan), gain = calculate_gain(nonlinearity, a).

    >>> import clgrad
    >>> w = clgrad.nn.init.kaiming_uniform_(clgrad.empty(8, 50), a=5 ** 0.5)
    >>> bool(w.abs().max() <= 1 / 50 ** 0.5)
    True
    """
    if _no_op_if_empty(tensor):
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    bound = math.sqrt(3.0) * calculate_gain(nonlinearity, a) / math.sqrt(fan)
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """He normal: N(0, std^2) with std = gain / sqrt(fan).

    >>> import clgrad
    >>> w = clgrad.nn.init.kaiming_normal_(clgrad.empty(200, 300), nonlinearity="relu")
    >>> abs(w.std().item() - (2 / 300) ** 0.5) < 0.002
    True
    """
    if _no_op_if_empty(tensor):
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    std = calculate_gain(nonlinearity, a) / math.sqrt(fan)
    return normal_(tensor, 0.0, std, generator)


def orthogonal_(tensor, gain=1, generator=None):
    """Fill `tensor` (2 or more dims, flattened to rows x the rest) with a (semi-)orthogonal
    matrix times `gain`: Q of the QR of a normal matrix, its columns' signs fixed by R's diagonal
    so that Q is uniform over the orthogonal group, as torch's (Saxe et al. 2013).

    >>> import clgrad
    >>> w = clgrad.nn.init.orthogonal_(clgrad.empty(3, 5))
    >>> bool(((w @ w.t()) - clgrad.eye(3)).abs().max() < 1e-5)
    True
    """
    if tensor.ndim < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor                       # no-op, as torch's
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    with no_grad():
        flattened = tensor.new_empty((rows, cols)).normal_(0, 1, generator=generator)
        if rows < cols:
            flattened = flattened.t()
        q, r = qr(flattened)
        q = q * r.diagonal().sign()
        if rows < cols:
            q = q.t()
        tensor.view_as(q).copy_(q)
        tensor.mul_(gain)
    return tensor
