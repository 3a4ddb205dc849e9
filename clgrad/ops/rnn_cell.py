"""The LSTM cell's pointwise part as one kernel forward and one backward (cl_kernels/rnn.mako):
from the summed gate pre-activations [B, 4H] and c_prev to (h, c), instead of nine elementwise
kernels a step. When backward itself is recorded (create_graph), the gradient is written in
clgrad ops instead, so that it differentiates again."""
from .. import dtypes
from ..autograd.function import Op
from ..autograd.grad_mode import is_grad_enabled
from ..runtime.kernels import Program, get_kernel, grid, launch, render
from ..tensor import empty_tensor
from ._base import contiguous_raw

PROGRAMS = {dt: Program("rnn", dt.short, render("rnn.mako", dt=dt)) for dt in dtypes.FLOATS}


class LSTMCell(Op):
    """(h, c) = the LSTM update of gates [B, 4H] (order i, f, g, o) and c_prev [B, H]."""

    @staticmethod
    def forward(ctx, gates, c_prev):
        gates, c_prev = contiguous_raw(gates), contiguous_raw(c_prev)
        dev, dt = gates._storage.device, gates._dtype
        B, H = c_prev._shape
        h = empty_tensor((B, H), dt, dev)
        c = empty_tensor((B, H), dt, dev)
        act = empty_tensor((B, 4 * H), dt, dev)
        if B * H:
            gs, ls = grid(dev, B * H)
            launch(dev, get_kernel(dev, PROGRAMS[dt], "lstm_cell"), gs, ls, gates._storage.buf,
                   gates._offset, c_prev._storage.buf, c_prev._offset, h._storage.buf,
                   c._storage.buf, act._storage.buf, B, H)
        ctx.save_for_backward(gates, c_prev, c, act)
        return h, c

    @staticmethod
    def backward(ctx, dh, dc):
        gates, c_prev, c, act = ctx.saved_tensors
        B, H = c_prev._shape
        if dh is None:
            dh = c_prev.new_zeros((B, H))
        if is_grad_enabled():                    # create_graph: a differentiable formula
            i, f, g, o = gates.chunk(4, -1)
            i, f, g, o = i.sigmoid(), f.sigmoid(), g.tanh(), o.sigmoid()
            cn = f * c_prev + i * g
            tc = cn.tanh()
            gc = dh * o * (1 - tc * tc)
            if dc is not None:
                gc = gc + dc
            from .join import cat
            dgates = cat([gc * g * i * (1 - i), gc * c_prev * f * (1 - f),
                          gc * i * (1 - g * g), dh * tc * o * (1 - o)], -1)
            return dgates, gc * f
        dev, dt = gates._storage.device, gates._dtype
        dh = contiguous_raw(dh)
        dcx = contiguous_raw(dc) if dc is not None else dh
        dgates = empty_tensor((B, 4 * H), dt, dev)
        dcp = empty_tensor((B, H), dt, dev)
        if B * H:
            gs, ls = grid(dev, B * H)
            launch(dev, get_kernel(dev, PROGRAMS[dt], "lstm_cell_bwd"), gs, ls, dh._storage.buf,
                   dh._offset, dcx._storage.buf, dcx._offset, int(dc is not None),
                   act._storage.buf, c_prev._storage.buf, c_prev._offset, c._storage.buf,
                   dgates._storage.buf, dcp._storage.buf, B, H)
        return dgates, dcp


LSTMCell._backward_cls._handles_none = True


def lstm_cell(gates, c_prev):
    """(h, c) of an LSTM step from the summed gate pre-activations and the previous cell state.

    >>> import clgrad
    >>> from clgrad.ops.rnn_cell import lstm_cell
    >>> h, c = lstm_cell(clgrad.zeros(1, 4), clgrad.ones(1, 1))
    >>> round(h.item(), 4), c.item()
    (0.2311, 0.5)
    """
    return LSTMCell.apply(gates, c_prev)
