"""The recurrent layers in fused kernels (cl_kernels/rnn.mako).

- `lstm_cell`: one step's pointwise part, from the summed gate pre-activations [B, 4H] and c_prev
  to (h, c), in one kernel forward and one backward (instead of nine elementwise kernels).
- `lstm_layer`, `gru_layer`, `rnn_layer`: one layer in one direction over a whole [T, B, *]
  sequence, as cuDNN and torch run it: per step one GEMM (h_prev @ W_hh^T, with the step's input
  projection added by the same GEMM, or for GRU b_hh, since b_hn sits inside r's product) and one
  cell kernel writing into the layer's output buffers; W_hh is packed into GEMM panels once per
  sequence, not once per step. Backward runs the steps in reverse (one cell kernel and one GEMM
  for dh_prev each) and W_hh's gradient as ONE GEMM over all steps at the end, rather than T
  products summed. Where the GEMM is the packed kind (CPUs through PoCL), an LSTM or GRU step
  is ONE kernel each way instead: the cell runs in the product's epilogue
  (clgrad.kernels.rnn.LSTMSteps, GRUSteps).

When backward itself is recorded (create_graph), they give their gradient in clgrad ops
instead (the cell: its formula; a layer: its steps recomputed from the saved inputs as
composed ops, differentiated by the engine), so that they differentiate again.
"""
import os

from ..autograd.op import Op
from ..autograd.grad_mode import enable_grad, is_grad_enabled
from ..kernels.rnn import (GRUSteps, LSTMSteps, gru_bwd_raw, gru_fwd_raw, lstm_bwd_raw,
                           lstm_fwd_raw, rnn_bwd_raw, rnn_fwd_raw)
from ..tensor import empty_tensor
from ._base import contiguous_raw, copy_into, full_raw, recorded_grads, view_raw
from .linalg import gemm
from .join import cat, stack
from .. import dtypes

def _cell_formula(gates, c_prev, dh, dc):
    """The cell's gradient written in clgrad ops (for create_graph)."""
    i, f, g, o = gates.chunk(4, -1)
    i, f, g, o = i.sigmoid(), f.sigmoid(), g.tanh(), o.sigmoid()
    cn = f * c_prev + i * g
    tc = cn.tanh()
    gc = dh * o * (1 - tc * tc)
    if dc is not None:
        gc = gc + dc
    dgates = cat([gc * g * i * (1 - i), gc * c_prev * f * (1 - f), gc * i * (1 - g * g),
                  dh * tc * o * (1 - o)], -1)
    return dgates, gc * f


class LSTMCell(Op):
    """(h, c) = the LSTM update of gates [B, 4H] (order i, f, g, o) and c_prev [B, H]."""

    _forward_uses_ops = False

    @staticmethod
    def forward(ctx, gates, c_prev):
        gates, c_prev = contiguous_raw(gates), contiguous_raw(c_prev)
        dev, dt = gates._storage.device, gates._dtype
        B, H = c_prev._shape
        h = empty_tensor((B, H), dt, dev)
        c = empty_tensor((B, H), dt, dev)
        act = empty_tensor((B, 4 * H), dt, dev)
        lstm_fwd_raw(B, H, gates, 0, c_prev, 0, h, 0, c, 0, act, 0)
        ctx.save_for_backward(gates, c_prev, c, act)
        return h, c

    @staticmethod
    def backward(ctx, dh, dc):
        gates, c_prev, c, act = ctx.saved_tensors
        B, H = c_prev._shape
        if is_grad_enabled():                    # create_graph: a differentiable formula
            return _cell_formula(gates, c_prev, dh if dh is not None else c.new_zeros((B, H)),
                                 dc)
        dgates = empty_tensor((B, 4 * H), act._dtype, act._storage.device)
        dcp = empty_tensor((B, H), act._dtype, act._storage.device)
        lstm_bwd_raw(B, H, (contiguous_raw(dh), 0) if dh is not None else None, None,
                     (contiguous_raw(dc), 0) if dc is not None else None,
                     act, 0, c_prev, 0, c, 0, dgates, 0, dcp)
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
    if c_prev._dtype is not gates._dtype:     # torch's f * c_prev + i * g promotes (bool too)
        dt = dtypes.result_type(gates, c_prev)
        gates, c_prev = gates.to(dt), c_prev.to(dt)
    return LSTMCell.apply(gates, c_prev)


def _batch(t, off, rows, cols, row_stride=None, col_stride=1):
    """A (1, rows, cols) view of t's storage from element offset off (relative to t's)."""
    return view_raw(t, (1, rows, cols), (0, cols if row_stride is None else row_stride,
                                         col_stride), t._offset + off)


def _final(t, off, B, H):
    """A contiguous copy of the [B, H] slice of t at element offset off (a layer's last h)."""
    return contiguous_raw(view_raw(t, (B, H), (H, 1), t._offset + off))


def _order(T, reverse):
    return range(T - 1, -1, -1) if reverse else range(T)


def _weight_grad(dg, out, h0, reverse, a_cache=None):
    """dW_hh = sum_t dg_t^T @ h_prev_t as ONE [G, T*B] @ [T*B, H] product, where dg [T, B, G]
    is the gradient of every step's h_prev @ W_hh^T and h_prev runs h0, then out shifted.
    a_cache: gemm's, for dg^T packed once for this and the caller's dW_ih."""
    T, B, G = dg._shape
    H = out._shape[2]
    dev, dt = out._storage.device, out._dtype
    if T * B == 0:
        return full_raw((G, H), 0, dt, dev)
    hp = empty_tensor((T, B, H), dt, dev)
    start, rest = (T - 1, 0) if reverse else (0, 1)
    copy_into(view_raw(hp, (B, H), (H, 1), start * B * H), h0)
    if T > 1:
        src = (1 - rest) * B * H
        copy_into(view_raw(hp, ((T - 1) * B, H), (H, 1), rest * B * H),
                  view_raw(out, ((T - 1) * B, H), (H, 1), out._offset + src))
    dw = gemm(_batch(dg, 0, G, T * B, 1, G), _batch(hp, 0, T * B, H), a_cache=a_cache)
    return view_raw(dw, (G, H), (H, 1), dw._offset)


def _composed(proj, w_hh, h0, c0, reverse):
    """lstm_layer in clgrad ops (recorded): what create_graph differentiates."""
    T = proj.shape[0]
    h, c, outs = h0, c0, [None] * T
    w_t = w_hh.t()
    for t in (range(T - 1, -1, -1) if reverse else range(T)):
        h, c = LSTMCell.apply(proj[t] + h.matmul(w_t), c)
        outs[t] = h
    return stack(outs, 0), h, c


class LSTMGrads:
    """One LSTM layer's backward, from what LSTMRun kept (out, cs, act: each step's h, c and
    gates) and the gradients of its final state (dh_n, dc_n; None for none): the steps run in
    reverse a range at a time (`steps`), then `finish` gives the gradients.

    >>> import clgrad
    >>> run = LSTMRun(clgrad.zeros(8, 2), clgrad.zeros(1, 2), clgrad.zeros(1, 2), 3,
    ...               clgrad.zeros(1))
    >>> run.steps(range(3), clgrad.ones(3, 1, 8))
    >>> g = LSTMGrads(clgrad.zeros(8, 2), clgrad.zeros(1, 2), clgrad.zeros(1, 2), False,
    ...               run.out, run.cs, run.act, None, None)
    >>> g.steps(3, clgrad.ones(3, 1, 2))
    >>> [t.shape for t in g.finish(True)]
    [clgrad.Size([3, 1, 8]), clgrad.Size([8, 2]), clgrad.Size([1, 2]), clgrad.Size([1, 2])]
    """

    def __init__(self, w_hh, h0, c0, reverse, out, cs, act, dh_n, dc_n):
        dev, dt = out._storage.device, out._dtype
        T, B, G = act._shape
        H = G // 4
        self.T, self.B, self.H = T, B, H
        self.h0, self.c0, self.reverse = h0, c0, reverse
        self.out, self.cs, self.act = out, cs, act
        self.dgates = empty_tensor((T, B, G), dt, dev)
        self.w = view_raw(w_hh, (1, G, H), (0,) + w_hh._strides, w_hh._offset)
        self.cache = {}
        self.dh = (contiguous_raw(dh_n), 0) if dh_n is not None else None
        self.dc = (contiguous_raw(dc_n), 0) if dc_n is not None else None
        self.order = list(range(T)) if reverse else list(range(T - 1, -1, -1))
        self.n = 0                                # steps done
        self.fused = LSTMSteps.for_layer(out, H) if B and T > 1 else None
        self.pw = self.fused.pack_backward(w_hh) if self.fused else None
        self.one_launch = _one_launch(self.fused, B, H)

    def steps(self, count, dout, first=0):
        """The next `count` steps of the backward; dout holds the gradient of the outputs of
        steps first on ([steps, B, H], contiguous), or is None."""
        T, B, H = self.T, self.B, self.H
        G = 4 * H
        order, fused, dgates = self.order, self.fused, self.dgates
        act, cs, dc = self.act, self.cs, self.dc
        if self.one_launch and count - (self.n == 0) > 1:   # the range's fused steps at once
            if self.n == 0:                      # the first one's dh is dh_n: not fused
                self.steps(1, dout, first)
                count -= 1
            t0 = order[self.n]
            d = -1 if self.reverse else 1        # the forward's direction in time
            dcp = empty_tensor((B, H), dgates._dtype, dgates._storage.device)
            fused.backward_steps(count, B, H, dgates, t0 * B * G, self.pw, dout,
                                 (t0 - first) * B * H, self.dc[0], act, t0 * B * G, self.c0, 0,
                                 (t0 - order[-1]) * d, cs, t0 * B * H, dcp, d)
            self.dc = (dcp, 0)
            self.n += count
            return
        for n in range(self.n, self.n + count):
            t = order[n]
            last = n == T - 1                    # the first step run forward: c_prev is c0
            c_prev, cpo = (self.c0, 0) if last else (cs, order[n + 1] * B * H)
            dcp = empty_tensor((B, H), dgates._dtype, dgates._storage.device)
            douto = (t - first) * B * H
            if fused and n:     # dh = dgates of the step after times W_hh, in the same kernel
                fused.backward(B, H, dgates, order[n - 1] * B * G, self.pw, dout, douto, dc[0],
                               act, t * B * G, c_prev, cpo, cs, t * B * H, t * B * G, dcp)
            else:
                if n:
                    self.dh = (gemm(_batch(dgates, order[n - 1] * B * G, B, G), self.w,
                                    b_cache=self.cache), 0)
                lstm_bwd_raw(B, H, self.dh, (dout, douto) if dout is not None else None, dc,
                             act, t * B * G, c_prev, cpo, cs, t * B * H, dgates, t * B * G, dcp)
            dc = (dcp, 0)
        self.dc = dc
        self.n += count

    def finish(self, need_dw, a_cache=None):
        """(dgates [T, B, 4H], dW_hh or None, dh0, dc0), once every step is done; a_cache (a
        dict) keeps dgates^T packed for the caller's dW_ih (gemm's a_cache)."""
        T, B, H = self.T, self.B, self.H
        dev, dt = self.dgates._storage.device, self.dgates._dtype
        dh, dc = self.dh, self.dc
        if T:
            dh = (gemm(_batch(self.dgates, self.order[-1] * B * 4 * H, B, 4 * H), self.w,
                       b_cache=self.cache), 0)
        dw = _weight_grad(self.dgates, self.out, self.h0, self.reverse, a_cache) \
            if need_dw else None
        dh0 = view_raw(dh[0], (B, H), (H, 1), dh[0]._offset) if dh is not None else \
            full_raw((B, H), 0, dt, dev)
        dc0 = dc[0] if dc is not None else full_raw((B, H), 0, dt, dev)
        return self.dgates, dw, dh0, dc0


def lstm_layer_grads(w_hh, h0, c0, reverse, out, cs, act, dout, dh_n, dc_n, need_dw):
    """(dgates [T, B, 4H], dW_hh or None, dh0, dc0) of an LSTM layer run by LSTMLayer's forward,
    from what it kept (out, cs, act) and the gradients of its outputs (dout [T, B, H], dh_n,
    dc_n; each may be None): LSTMGrads over all the steps at once."""
    g = LSTMGrads(w_hh, h0, c0, reverse, out, cs, act, dh_n, dc_n)
    g.steps(act._shape[0], contiguous_raw(dout) if dout is not None else None)
    return g.finish(need_dw)


# None: a range of an LSTM or GRU layer's steps is one launch (LSTMSteps / GRUSteps'
# forward_steps and backward_steps) where _one_launch finds it pays; True / False: always /
# never, where the fused steps apply (CLGRAD_RNN_ONE_LAUNCH=1 or 0 sets it at import)
ONE_LAUNCH = {"1": True, "0": False}.get(os.environ.get("CLGRAD_RNN_ONE_LAUNCH", ""))

# the most multiply-adds of a step (B x 4H x H for an LSTM, B x 3H x H for a GRU) that one
# launch of a range of steps takes on (about 30 us of one core's work, below which PoCL ran each
# step kernel on one core anyway)
ONE_LAUNCH_FMAS = 1 << 21


def _one_launch(fused, B, H):
    """Whether a layer with these fused steps (LSTMSteps or GRUSteps, or None) runs a range of
    its steps in one launch of one work-group, a barrier between steps: where the device runs
    small kernels on one core (PoCL's CPU devices) and a step is small. An LSTM step each way of
    16 rows by 128 units (1.0 M multiply-adds) took 0.74 of its time a launch a step, of 32 x 128
    0.84, 16 x 176 0.80, 8 x 256 0.94, 48 x 128 (3.1 M) 0.96, 16 x 256 (4.2 M) 1.16, 16 x 512 1.74
    (PoCL 3.1, 2-core Zen 5; the compiled LSTM step of tools/bench_compile.py: 0.80-0.99 of the
    time, nine runs in turns). Elsewhere a launch a step stays: a GPU would run the range on one
    compute unit, and Intel's CPU runtime spreads small kernels over its cores (and its tuned
    GEMM is not the packed kind the fused steps need).

    >>> _one_launch(None, 16, 128)
    False
    """
    if not fused:
        return False
    if ONE_LAUNCH is not None:
        return ONE_LAUNCH
    return fused.dev.small_kernels_use_one_core and B * fused.GATES * H * H <= ONE_LAUNCH_FMAS


class LSTMRun:
    """One LSTM layer's forward, run a range of steps at a time: its buffers (out, cs, act: each
    step's h, c and gates, [T, B, H] / [T, B, 4H]), W_hh packed once, and the state it is at.
    `like` gives the dtype and device.

    >>> import clgrad
    >>> run = LSTMRun(clgrad.zeros(8, 2), clgrad.zeros(1, 2), clgrad.ones(1, 2), 3, clgrad.zeros(1))
    >>> run.steps(range(3), clgrad.zeros(3, 1, 8))
    >>> [round(v, 4) for v in run.finals()[1].flatten().tolist()]
    [0.125, 0.125]
    """

    def __init__(self, w_hh, h0, c0, T, like):
        dev, dt = like._storage.device, like._dtype
        G, H = w_hh._shape
        B = h0._shape[0]
        self.B, self.H = B, H
        self.out = empty_tensor((T, B, H), dt, dev)
        self.cs = empty_tensor((T, B, H), dt, dev)
        self.act = empty_tensor((T, B, G), dt, dev)
        self.w_t = view_raw(w_hh, (1, H, G), (0, w_hh._strides[1], w_hh._strides[0]),
                            w_hh._offset)
        self.cache = {}
        self.fused = LSTMSteps.for_layer(like, H) if B else None
        self.pw = self.fused.pack_forward(w_hh) if self.fused else None
        self.one_launch = _one_launch(self.fused, B, H)
        self.state = (h0, 0, c0, 0)            # h, its offset, c, its offset

    def steps(self, ts, proj, first=0):
        """Run steps ts (in that order); proj holds the input projection of steps first on."""
        B, H = self.B, self.H
        G = 4 * H
        fused, out, cs, act = self.fused, self.out, self.cs, self.act
        h, ho, c, co = self.state
        if self.one_launch and isinstance(ts, range) and abs(ts.step) == 1 and len(ts) > 1:
            t0 = ts[0]
            fused.forward_steps(len(ts), B, H, h, ho, self.pw, proj, (t0 - first) * B * G, c, co,
                                out, t0 * B * H, cs, t0 * B * H, act, t0 * B * G, ts.step)
            t = ts[-1]
            self.state = (out, t * B * H, cs, t * B * H)
            return
        for t in ts:
            po = (t - first) * B * G
            if fused:
                fused.forward(B, H, h, ho, self.pw, proj, po, c, co, out, t * B * H, cs,
                              t * B * H, act, t * B * G)
            else:
                gates = gemm(_batch(h, ho, B, H), self.w_t, _batch(proj, po, B, G), 1,
                             b_cache=self.cache)
                lstm_fwd_raw(B, H, gates, 0, c, co, out, t * B * H, cs, t * B * H, act,
                             t * B * G)
            h, ho, c, co = out, t * B * H, cs, t * B * H
        self.state = (h, ho, c, co)

    def finals(self):
        """Contiguous copies of the last step's h and c ([B, H])."""
        h, ho, c, co = self.state
        B, H = self.B, self.H
        return (contiguous_raw(view_raw(h, (B, H), (H, 1), h._offset + ho)),
                contiguous_raw(view_raw(c, (B, H), (H, 1), c._offset + co)))


class LSTMLayer(Op):
    """out [T, B, H], h_T, c_T of an LSTM layer in one direction; proj [T, B, 4H] is the input
    projection of every step with both biases, w_hh [4H, H], h0 and c0 [B, H]."""

    _forward_uses_ops = False

    @staticmethod
    def forward(ctx, proj, w_hh, h0, c0, reverse):
        proj, h0, c0 = contiguous_raw(proj), contiguous_raw(h0), contiguous_raw(c0)
        run = LSTMRun(w_hh, h0, c0, proj._shape[0], proj)
        run.steps(range(proj._shape[0] - 1, -1, -1) if reverse else range(proj._shape[0]), proj)
        out, cs, act = run.out, run.cs, run.act
        h_n, c_n = run.finals()
        ctx.reverse = reverse
        ctx.save_for_backward(proj, w_hh, h0, c0)
        ctx.internal = (out, cs, act)
        return out, h_n, c_n

    @staticmethod
    def backward(ctx, dout, dh_n, dc_n):
        proj, w_hh, h0, c0 = ctx.saved_tensors
        reverse = ctx.reverse
        if is_grad_enabled():                    # create_graph: through the composed steps
            ins = (proj, w_hh, h0, c0)
            with enable_grad():
                outs = _composed(proj, w_hh, h0, c0, reverse)
            return (*recorded_grads(ins, outs, (dout, dh_n, dc_n)), None)
        out, cs, act = ctx.internal
        dgates, dw, dh0, dc0 = lstm_layer_grads(w_hh, h0, c0, reverse, out, cs, act, dout,
                                                dh_n, dc_n, ctx.needs_input_grad[1])
        return dgates, dw, dh0, dc0, None


LSTMLayer._backward_cls._handles_none = True


def lstm_layer(proj, w_hh, h0, c0, reverse=False):
    """(out, h_n, c_n) of an LSTM layer in one direction over a sequence: proj [T, B, 4H] holds
    x_t @ W_ih^T + b_ih + b_hh for every step (gate order i, f, g, o), w_hh is [4H, H], h0 and c0
    [B, H]; with reverse=True the steps run from T-1 down to 0.

    >>> import clgrad
    >>> from clgrad.ops.rnn_cell import lstm_layer
    >>> out, h, c = lstm_layer(clgrad.zeros(3, 1, 4), clgrad.zeros(4, 1), clgrad.zeros(1, 1),
    ...                        clgrad.ones(1, 1))
    >>> out.shape, [round(v, 4) for v in c.flatten().tolist()]
    (clgrad.Size([3, 1, 1]), [0.125])
    """
    return LSTMLayer.apply(proj, w_hh, h0, c0, reverse)


def _gru_composed(proj, w_hh, b_hh, h0, reverse):
    """gru_layer in clgrad ops (recorded): what create_graph differentiates."""
    h, outs, w_t = h0, [None] * proj.shape[0], w_hh.t()
    for t in _order(proj.shape[0], reverse):
        gh = h.matmul(w_t) if b_hh is None else h.matmul(w_t) + b_hh
        xr, xz, xn = proj[t].chunk(3, -1)
        hr, hz, hn = gh.chunk(3, -1)
        r, z = (xr + hr).sigmoid(), (xz + hz).sigmoid()
        h = (1 - z) * (xn + r * hn).tanh() + z * h
        outs[t] = h
    return stack(outs, 0), h


class GRULayer(Op):
    """out [T, B, H] and h_T of a GRU layer in one direction; proj [T, B, 3H] is the input
    projection of every step with b_ih only, w_hh [3H, H], b_hh [3H] or None, h0 [B, H]."""

    _forward_uses_ops = False

    @staticmethod
    def forward(ctx, proj, w_hh, b_hh, h0, reverse):
        proj, h0 = contiguous_raw(proj), contiguous_raw(h0)
        dev, dt = proj._storage.device, proj._dtype
        T, B, G = proj._shape
        H = G // 3
        out = empty_tensor((T, B, H), dt, dev)
        act = empty_tensor((T, B, 4 * H), dt, dev)      # r, z, n and W_hn h + b_hn per step
        w_t = view_raw(w_hh, (1, H, G), (0, w_hh._strides[1], w_hh._strides[0]), w_hh._offset)
        cache = {}
        fused = GRUSteps.for_layer(proj, H) if B else None
        pw = fused.pack_forward(w_hh) if fused else None
        b = contiguous_raw(b_hh) if fused and b_hh is not None else None
        h, ho = h0, 0
        if T > 1 and _one_launch(fused, B, H):        # every step in one launch
            t0, d = (T - 1, -1) if reverse else (0, 1)
            fused.forward_steps(T, B, H, h0, 0, pw, b, proj, t0 * B * G, out, t0 * B * H, act,
                                t0 * B * 4 * H, d)
            h, ho = out, (T - 1 - t0) * B * H
        else:
            for t in _order(T, reverse):
                if fused:
                    fused.forward(B, H, h, ho, pw, b, proj, t * B * G, out, t * B * H, act,
                                  t * B * 4 * H)
                else:
                    gh = gemm(_batch(h, ho, B, H), w_t, b_hh, 0 if b_hh is None else 1,
                              b_cache=cache)
                    gru_fwd_raw(B, H, proj, t * B * G, gh, h, ho, out, t * B * H, act,
                                t * B * 4 * H)
                h, ho = out, t * B * H
        ctx.reverse = reverse
        ctx.save_for_backward(proj, w_hh, b_hh, h0)
        ctx.internal = (out, act)
        return out, _final(h, ho, B, H)

    @staticmethod
    def backward(ctx, dout, dh_n):
        proj, w_hh, b_hh, h0 = ctx.saved_tensors
        reverse = ctx.reverse
        if is_grad_enabled():                    # create_graph: through the composed steps
            ins = (proj, w_hh, b_hh, h0)
            with enable_grad():
                outs = _gru_composed(proj, w_hh, b_hh, h0, reverse)
            return (*recorded_grads(ins, outs, (dout, dh_n)), None)
        out, act = ctx.internal
        dev, dt = proj._storage.device, proj._dtype
        T, B, G = proj._shape
        H = G // 3
        dout = contiguous_raw(dout) if dout is not None else None
        dx = empty_tensor((T, B, G), dt, dev)
        dgh = empty_tensor((T, B, G), dt, dev)   # the gradient of h_prev W_hh^T + b_hh
        w = view_raw(w_hh, (1, G, H), (0,) + w_hh._strides, w_hh._offset)
        cache = {}
        dh = contiguous_raw(dh_n) if dh_n is not None else None
        order = list(_order(T, not reverse))
        fused = GRUSteps.for_layer(proj, H) if B and T > 1 else None
        pw = fused.pack_backward(w_hh) if fused else None
        prev_dhp = None                 # z * dh of the step handled last
        # the fused steps (all but the first) in one launch where that pays
        at_once = T > 2 and _one_launch(fused, B, H)
        for n, t in enumerate(order[:1] if at_once else order):
            hp, hpo = (h0, 0) if n == T - 1 else (out, order[n + 1] * B * H)
            dhp = empty_tensor((B, H), dt, dev)
            if fused and n:     # dh = the step after's dgh times W_hh, in the same kernel
                fused.backward(B, H, dgh, order[n - 1] * B * G, pw, prev_dhp, dout, t * B * H,
                               act, t * B * 4 * H, hp, hpo, dx, t * B * G, t * B * G, dhp)
            else:
                if n:           # dh_prev = z * dh (the kernel's dhp) + dgh @ W_hh, one GEMM
                    dh = gemm(_batch(dgh, order[n - 1] * B * G, B, G), w, prev_dhp, 1,
                              b_cache=cache)
                gru_bwd_raw(B, H, dh, dout, t * B * H, act, t * B * 4 * H, hp, hpo, dx,
                            t * B * G, dgh, t * B * G, dhp)
            prev_dhp = dhp
        if at_once:
            t0, d = order[1], -1 if reverse else 1
            dhp = empty_tensor((B, H), dt, dev)
            fused.backward_steps(T - 1, B, H, dgh, t0 * B * G, pw, prev_dhp, dout, t0 * B * H,
                                 act, t0 * B * 4 * H, h0, 0, T - 2, out, t0 * B * H, dx,
                                 t0 * B * G, dhp, d)
            prev_dhp = dhp
        if T:
            dh = gemm(_batch(dgh, order[-1] * B * G, B, G), w, prev_dhp, 1, b_cache=cache)
        needs = ctx.needs_input_grad
        dw = _weight_grad(dgh, out, h0, reverse) if needs[1] else None
        db = dgh.reshape(T * B, G).sum(0) if needs[2] else None
        dh0 = view_raw(dh, (B, H), (H, 1), dh._offset) if dh is not None else \
            full_raw((B, H), 0, dt, dev)
        return dx, dw, db, dh0, None


GRULayer._backward_cls._handles_none = True


def gru_layer(proj, w_hh, b_hh, h0, reverse=False):
    """(out, h_n) of a GRU layer in one direction over a sequence: proj [T, B, 3H] holds
    x_t @ W_ih^T + b_ih for every step (gate order r, z, n), w_hh is [3H, H], b_hh [3H] or None
    (kept apart from proj: torch's n = tanh(x_n + r * (W_hn h + b_hn))), h0 [B, H]; with
    reverse=True the steps run from T-1 down to 0.

    >>> import clgrad
    >>> from clgrad.ops.rnn_cell import gru_layer
    >>> out, h = gru_layer(clgrad.zeros(2, 1, 3), clgrad.zeros(3, 1), None, clgrad.ones(1, 1))
    >>> out.shape, [round(v, 4) for v in out.flatten().tolist()]
    (clgrad.Size([2, 1, 1]), [0.5, 0.25])
    """
    return GRULayer.apply(proj, w_hh, b_hh, h0, reverse)


def _rnn_composed(proj, w_hh, h0, reverse, nonlinearity):
    """rnn_layer in clgrad ops (recorded): what create_graph differentiates."""
    h, outs, w_t = h0, [None] * proj.shape[0], w_hh.t()
    for t in _order(proj.shape[0], reverse):
        pre = proj[t] + h.matmul(w_t)
        h = pre.relu() if nonlinearity == "relu" else pre.tanh()
        outs[t] = h
    return stack(outs, 0), h


class RNNLayer(Op):
    """out [T, B, H] and h_T of an Elman RNN layer in one direction; proj [T, B, H] is the input
    projection of every step with both biases, w_hh [H, H], h0 [B, H]."""

    _forward_uses_ops = False

    @staticmethod
    def forward(ctx, proj, w_hh, h0, reverse, nonlinearity):
        proj, h0 = contiguous_raw(proj), contiguous_raw(h0)
        dev, dt = proj._storage.device, proj._dtype
        T, B, H = proj._shape
        relu = int(nonlinearity == "relu")
        out = empty_tensor((T, B, H), dt, dev)
        w_t = view_raw(w_hh, (1, H, H), (0, w_hh._strides[1], w_hh._strides[0]), w_hh._offset)
        cache = {}
        h, ho = h0, 0
        for t in _order(T, reverse):
            pre = gemm(_batch(h, ho, B, H), w_t, _batch(proj, t * B * H, B, H), 1,
                       b_cache=cache)
            rnn_fwd_raw(B, H, pre, out, t * B * H, relu)
            h, ho = out, t * B * H
        ctx.reverse, ctx.relu = reverse, relu
        ctx.save_for_backward(proj, w_hh, h0)
        ctx.out = out                            # h of every step: backward's derivative
        return out, _final(h, ho, B, H)

    @staticmethod
    def backward(ctx, dout, dh_n):
        proj, w_hh, h0 = ctx.saved_tensors
        reverse = ctx.reverse
        if is_grad_enabled():                    # create_graph: through the composed steps
            with enable_grad():
                outs = _rnn_composed(proj, w_hh, h0, reverse, "relu" if ctx.relu else "tanh")
            return (*recorded_grads((proj, w_hh, h0), outs, (dout, dh_n)), None, None)
        out = ctx.out
        dev, dt = proj._storage.device, proj._dtype
        T, B, H = proj._shape
        dout = contiguous_raw(dout) if dout is not None else None
        dpre = empty_tensor((T, B, H), dt, dev)
        w = view_raw(w_hh, (1, H, H), (0,) + w_hh._strides, w_hh._offset)
        cache = {}
        dh = contiguous_raw(dh_n) if dh_n is not None else None
        for t in _order(T, not reverse):
            rnn_bwd_raw(B, H, dh, dout, t * B * H, out, t * B * H, dpre, t * B * H, ctx.relu)
            dh = gemm(_batch(dpre, t * B * H, B, H), w, b_cache=cache)
        dw = _weight_grad(dpre, out, h0, reverse) if ctx.needs_input_grad[1] else None
        dh0 = view_raw(dh, (B, H), (H, 1), dh._offset) if dh is not None else \
            full_raw((B, H), 0, dt, dev)
        return dpre, dw, dh0, None, None


RNNLayer._backward_cls._handles_none = True


def rnn_layer(proj, w_hh, h0, reverse=False, nonlinearity="tanh"):
    """(out, h_n) of an Elman RNN layer in one direction over a sequence: h_t = tanh (or relu)
    of proj[t] + h_{t-1} @ W_hh^T, where proj [T, B, H] holds x_t @ W_ih^T + b_ih + b_hh for every
    step, w_hh is [H, H], h0 [B, H]; with reverse=True the steps run from T-1 down to 0.

    >>> import clgrad
    >>> from clgrad.ops.rnn_cell import rnn_layer
    >>> out, h = rnn_layer(clgrad.tensor([[[1.0]], [[-3.0]]]), clgrad.ones(1, 1),
    ...                    clgrad.zeros(1, 1), nonlinearity="relu")
    >>> out.flatten().tolist(), h.item()
    ([1.0, 0.0], 0.0)
    """
    return RNNLayer.apply(proj, w_hh, h0, reverse, nonlinearity)
