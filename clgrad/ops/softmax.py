"""softmax and log_softmax, each an Op with its backward (torch's _softmax_backward_data and
_log_softmax_backward_data), themselves ops so that they can be differentiated again (double
backward). The kernels are the softmax family's (clgrad.kernels.softmax); the scans are in
clgrad.ops.scan.
"""
from .. import dtypes
from ..autograd.op import Op
from ..kernels.softmax import softmax_backward_raw, softmax_causal_raw, softmax_raw
from ..tensor import Tensor


def _check_dtype(op, x):
    if x._dtype.kind != "f":
        raise NotImplementedError(f'"{op}" not implemented for \'{x._dtype.name}\'; pass a '
                                  f'floating point dtype=')


class Softmax(Op):
    """y = exp(x - max) / sum(exp(x - max)) along dim; backward is the fused
    SoftmaxBackwardData op, itself differentiable."""

    _log = False

    @classmethod
    def forward(cls, ctx, x, dim):
        y = softmax_raw(x, dim, cls._log)
        ctx.dim = dim
        ctx.save_for_backward(y)
        return y

    @classmethod
    def backward(cls, ctx, g):
        y, = ctx.saved_tensors
        back = LogSoftmaxBackwardData if cls._log else SoftmaxBackwardData
        return back.apply(g, y, ctx.dim), None

    @classmethod
    def jvp(cls, args, tangents, y):
        t, dim = tangents[0], args[1]
        if cls._log:
            return t - (t * y.exp()).sum(dim, keepdim=True)
        return SoftmaxBackwardData.apply(t, y, dim)     # the Jacobian is symmetric


class LogSoftmax(Softmax):
    """y = x - max - log(sum(exp(x - max))) along dim."""

    _log = True


class CausalSoftmax(Softmax):
    """softmax along the last dim of causal attention scores (..., L, S), query i being i + first:
    keys after the query get 0 (the -inf mask's result, without adding the mask). Backward and
    jvp are softmax's: the output's zeros make them 0 there too. Where
    kernels.softmax.causal_rows holds (scaled_dot_product_attention chooses)."""

    @classmethod
    def forward(cls, ctx, x, first):
        dim = len(x._shape) - 1
        y = softmax_causal_raw(x, x._shape[-2], first)
        ctx.dim = dim
        ctx.save_for_backward(y)
        return y

    @classmethod
    def jvp(cls, args, tangents, y):
        return SoftmaxBackwardData.apply(tangents[0], y, len(y.shape) - 1)


class SoftmaxBackwardData(Op):
    """grad_in = y * (g - sum(g * y, dim)): torch's _softmax_backward_data."""

    @staticmethod
    def forward(ctx, g, y, dim):
        ctx.dim = dim
        ctx.save_for_backward(g, y)
        return softmax_backward_raw(g, y, dim, False)

    @staticmethod
    def backward(ctx, gg):
        g, y = ctx.saved_tensors
        dim = ctx.dim
        grad_g = SoftmaxBackwardData.apply(gg, y, dim) if ctx.needs_input_grad[0] else None
        grad_y = None
        if ctx.needs_input_grad[1]:
            grad_y = gg * (g - (g * y).sum(dim, keepdim=True)) - g * (gg * y).sum(dim, keepdim=True)
        return grad_g, grad_y, None


class LogSoftmaxBackwardData(Op):
    """grad_in = g - exp(y) * sum(g, dim): torch's _log_softmax_backward_data."""

    @staticmethod
    def forward(ctx, g, y, dim):
        ctx.dim = dim
        ctx.save_for_backward(g, y)
        return softmax_backward_raw(g, y, dim, True)

    @staticmethod
    def backward(ctx, gg):
        g, y = ctx.saved_tensors
        dim = ctx.dim
        p = y.exp()
        grad_g = gg - (gg * p).sum(dim, keepdim=True) if ctx.needs_input_grad[0] else None
        grad_y = -(gg * p * g.sum(dim, keepdim=True)) if ctx.needs_input_grad[1] else None
        return grad_g, grad_y, None


def _softmax_input(op, input, dim, dtype):
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(input).__name__}")
    if dtype is not None:
        input = input.to(dtypes.as_dtype(dtype))
    if input.numel() or input._dtype.kind == "f":   # torch: an empty tensor needs no kernel
        _check_dtype(op, input)
    return input, input._wrap_dim(dim)


def softmax(input, dim, dtype=None):
    """exp(input) / sum(exp(input)) along dim, computed without overflow; `dtype` casts the input
    first.

    >>> import clgrad
    >>> clgrad.tensor([[1.0, 1.0], [0.0, 1000.0]]).softmax(1).tolist()
    [[0.5, 0.5], [0.0, 1.0]]
    """
    x, d = _softmax_input("softmax", input, dim, dtype)
    return Softmax.apply(x, d)


def log_softmax(input, dim, dtype=None):
    """log(softmax(input)) along dim, computed without overflow.

    >>> import clgrad
    >>> [round(v, 4) for v in clgrad.tensor([0.0, 0.0]).log_softmax(0).tolist()]
    [-0.6931, -0.6931]
    """
    x, d = _softmax_input("log_softmax", input, dim, dtype)
    return LogSoftmax.apply(x, d)


def _softmax_backward_data(grad_output, output, dim, input_dtype=None):
    """The gradient of softmax given its output (torch._softmax_backward_data); differentiable.

    >>> import clgrad
    >>> y = clgrad.tensor([0.5, 0.5])
    >>> clgrad._softmax_backward_data(clgrad.tensor([1.0, 0.0]), y, 0).tolist()
    [0.25, -0.25]
    """
    return SoftmaxBackwardData.apply(grad_output, output, output._wrap_dim(dim))


def _log_softmax_backward_data(grad_output, output, dim, input_dtype=None):
    """The gradient of log_softmax given its output (torch._log_softmax_backward_data).

    >>> import clgrad, math
    >>> y = clgrad.tensor([math.log(0.5), math.log(0.5)])
    >>> clgrad._log_softmax_backward_data(clgrad.tensor([1.0, 0.0]), y, 0).tolist()
    [0.5, -0.5]
    """
    return LogSoftmaxBackwardData.apply(grad_output, output, output._wrap_dim(dim))


FUNCTIONS = {"softmax": softmax, "log_softmax": log_softmax,
             "_softmax_backward_data": _softmax_backward_data,
             "_log_softmax_backward_data": _log_softmax_backward_data}
METHODS = {"softmax": softmax, "log_softmax": log_softmax}
