"""The pool family (cl_kernels/pool.mako): 2-d max, average and adaptive average pooling of
(N, C, H, W) or unbatched (C, H, W) tensors, forward and backward. Forward kernels take one output
row per work-item; backward kernels one input row that gathers from the outputs whose windows
hold it: no atomics, deterministic. Inputs have any strides; outputs and gradients are
contiguous. Raw launches: no autograd.

>>> import clgrad
>>> x = clgrad.tensor([[[[1.0, 5.0], [3.0, 2.0]]]])
>>> values, idx = max_pool2d_raw(x, (2, 2), (2, 2), (0, 0), (1, 1), (1, 1), True)
>>> values.tolist(), idx.tolist()
([[[[5.0]]]], [[[[1]]]])
>>> avg_pool2d_raw(x, (2, 2), (2, 2), (0, 0), (1, 1), True, 0).tolist()
[[[[2.75]]]]
"""
from .. import dtypes
from ..runtime.family import KernelFamily
from ..tensor import empty_tensor, numel_of
from .copy import dense_raw


def _params(dt):
    return dict(dt=dt)


POOL = KernelFamily("pool", _params, dtypes.FLOATS)


def _launch(name, dt, dev, rows, *args):
    POOL.launch(dev, dt, name, rows, *args, rows)


def _planes(x):
    """x (the tensor argument: buffer and offset), its batch / channel / row / column strides and
    its channel count."""
    st = tuple(x._strides) if len(x._shape) == 4 else (0,) + tuple(x._strides)
    return (x,) + st + (x._shape[-3],)


def _pool_out(x, out_hw):
    return empty_tensor(tuple(x._shape[:-2]) + tuple(out_hw), x._dtype, x._storage.device)


def _rows(shape):
    """Rows of a (N, C, H, W) or (C, H, W) shape, and whether there is anything in them."""
    return numel_of(shape[:-1]), shape[-1] > 0


def max_pool2d_raw(x, k, stride, pad, dilation, out_hw, keep):
    """(values, int64 index of each max in its H * W plane); the indices are written only with
    `keep` (someone needs them)."""
    out = _pool_out(x, out_hw)
    idx = empty_tensor(out._shape, dtypes.int64, x._storage.device)
    rows, live = _rows(out._shape)
    if rows and live:
        _launch("max_pool_fwd", x._dtype, x._storage.device, rows, out._storage.buf,
                idx._storage.buf, int(bool(keep)), *_planes(x), *x._shape[-2:], *out_hw, *k,
                *stride, *pad, *dilation)
    return out, idx


def max_pool2d_backward_raw(g, idx, x_shape, k, stride, pad, dilation):
    """The input gradient of max_pool2d: each output's gradient goes to its max's index."""
    gx = empty_tensor(tuple(x_shape), g._dtype, g._storage.device)
    rows, live = _rows(x_shape)
    if rows and live:
        g, idx = dense_raw(g), dense_raw(idx)      # the backward kernels take bare buffers
        _launch("max_pool_bwd", g._dtype, g._storage.device, rows, gx._storage.buf,
                g._storage.buf, idx._storage.buf, *x_shape[-2:], *g._shape[-2:], *k, *stride,
                *pad, *dilation)
    return gx


def avg_pool2d_raw(x, k, stride, pad, out_hw, include_pad, divisor):
    """avg_pool2d: the divisor is `divisor` when > 0, else the window's size within the padded
    input (include_pad) or within the input."""
    out = _pool_out(x, out_hw)
    rows, live = _rows(out._shape)
    if rows and live:
        _launch("avg_pool_fwd", x._dtype, x._storage.device, rows, out._storage.buf,
                *_planes(x), *x._shape[-2:], *out_hw, *k, *stride, *pad, int(include_pad),
                divisor)
    return out


def avg_pool2d_backward_raw(g, x_shape, k, stride, pad, include_pad, divisor):
    """The input gradient of avg_pool2d: each output's gradient spread over its window."""
    gx = empty_tensor(tuple(x_shape), g._dtype, g._storage.device)
    rows, live = _rows(x_shape)
    if rows and live:
        g = dense_raw(g)          # the backward kernels take bare buffers
        _launch("avg_pool_bwd", g._dtype, g._storage.device, rows, gx._storage.buf,
                g._storage.buf, *x_shape[-2:], *g._shape[-2:], *k, *stride, *pad,
                int(include_pad), divisor)
    return gx


def adaptive_avg_pool2d_raw(x, out_hw):
    """adaptive_avg_pool2d: window [floor(o * H / OH), ceil((o + 1) * H / OH)) per dim."""
    out = _pool_out(x, out_hw)
    rows, live = _rows(out._shape)
    if rows and live:
        _launch("adaptive_avg_fwd", x._dtype, x._storage.device, rows, out._storage.buf,
                *_planes(x), *x._shape[-2:], *out_hw)
    return out


def adaptive_avg_pool2d_backward_raw(g, x_shape):
    gx = empty_tensor(tuple(x_shape), g._dtype, g._storage.device)
    rows, live = _rows(x_shape)
    if rows and live:
        g = dense_raw(g)          # the backward kernels take bare buffers
        _launch("adaptive_avg_bwd", g._dtype, g._storage.device, rows, gx._storage.buf,
                g._storage.buf, *x_shape[-2:], *g._shape[-2:])
    return gx
