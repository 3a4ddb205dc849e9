"""layer_norm in fused kernels (the norm family, clgrad.kernels.norm): one kernel forward, and
backward one for the input's gradient and one for the weight's and bias's partial sums, where the
composed form (mean, subtract, square, mean, rsqrt, multiply, scale, shift and their gradients)
launched about twenty. A GPT block has two of them.

When backward itself is recorded (create_graph), the gradient is taken through the composed
form recomputed from the saved inputs, so that it differentiates again; forward-mode AD gets
J·v from that backward.
"""
from ..autograd.op import Op
from ..autograd.grad_mode import enable_grad, is_grad_enabled
from ..kernels.norm import DTYPES, layer_norm_backward_raw, layer_norm_raw
from ..tensor import numel_of
from ._base import contiguous_raw, recorded_grads, view_raw


def normalize_last(x, dims, eps):
    """(x - mean) / sqrt(var + eps) over `dims`, in clgrad ops (layer_norm's composed form and
    group_norm's).

    >>> import clgrad
    >>> y = normalize_last(clgrad.tensor([[1.0, 3.0], [2.0, 2.0]]), (1,), 1e-5)
    >>> [[round(v, 4) for v in row] for row in y.tolist()]
    [[-1.0, 1.0], [0.0, 0.0]]
    """
    if x.numel():
        # Shift each row by its first element: a constant row then normalises to exactly 0, as
        # torch's Welford pass gives, where its float mean alone is off by an ulp that
        # rsqrt(eps) magnifies (1.5e-4 in float32).
        first = x
        for d in dims:
            first = first.narrow(d, 0, 1)
        x = x - first.detach()
    xc = x - x.mean(dims, keepdim=True)
    return xc * (xc.square().mean(dims, keepdim=True) + eps).rsqrt()


def layer_norm_composed(x, normalized_ndim, weight, bias, eps):
    """layer_norm in clgrad ops (what double backward differentiates, and what takes the inputs
    the kernels do not: empty ones, mixed dtypes)."""
    y = normalize_last(x, tuple(range(x.ndim - normalized_ndim, x.ndim)), eps)
    if weight is not None:
        return y * weight if bias is None else bias.addcmul(y, weight)
    return y if bias is None else y + bias


class LayerNorm(Op):
    """y = (x - mean) / sqrt(var + eps) * weight + bias over the last `normalized_ndim` dims."""

    @staticmethod
    def forward(ctx, x, weight, bias, normalized_ndim, eps):
        L = numel_of(x._shape[x.ndim - normalized_ndim:])
        xc = contiguous_raw(x)
        w = None if weight is None else contiguous_raw(weight)
        b = None if bias is None else contiguous_raw(bias)
        out, mean, rstd = layer_norm_raw(xc, w, b, L, eps)
        ctx.normalized_ndim, ctx.eps, ctx.L = normalized_ndim, eps, L
        ctx.save_for_backward(x, weight, bias)
        ctx.internal = (xc, w, mean, rstd)
        return out

    @staticmethod
    def backward(ctx, g):
        x, weight, bias = ctx.saved_tensors
        if is_grad_enabled():                    # create_graph: through the composed form
            ins = (x, weight, bias)
            with enable_grad():
                y = layer_norm_composed(x, ctx.normalized_ndim, weight, bias, ctx.eps)
            return (*recorded_grads(ins, (y,), (g,)), None, None)
        xc, w, mean, rstd = ctx.internal
        need = ctx.needs_input_grad
        dx, dw, db = layer_norm_backward_raw(g, xc, w, mean, rstd, ctx.L, *need[:3])
        shape = (weight if weight is not None else bias)._shape if need[1] or need[2] else ()
        strides = tuple(numel_of(shape[i + 1:]) for i in range(len(shape)))
        dw, db = (None if t is None else view_raw(t, shape, strides, 0) for t in (dw, db))
        return dx, dw, db, None, None


def layer_norm(x, normalized_ndim, weight, bias, eps):
    """layer_norm over the last `normalized_ndim` dims of x (F.layer_norm checks its arguments
    first): the fused op where x, weight and bias share a float dtype and a device and x has
    elements, else the composed form.

    >>> import clgrad
    >>> from clgrad.ops.norm import layer_norm
    >>> [round(v, 4) for v in layer_norm(clgrad.tensor([[1.0, 3.0, 5.0]]), 1, None, None,
    ...                                  1e-5).flatten().tolist()]
    [-1.2247, 0.0, 1.2247]
    """
    dev, dt = x._storage.device, x._dtype
    fused = x.numel() > 0 and dt in DTYPES and all(
        t is None or (t._dtype is dt and t._storage.device is dev) for t in (weight, bias))
    if not fused:
        return layer_norm_composed(x, normalized_ndim, weight, bias, eps)
    return LayerNorm.apply(x, weight, bias, normalized_ndim, float(eps))
