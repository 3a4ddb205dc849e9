"""The rnn family (cl_kernels/rnn.mako): the pointwise part of one recurrent step (LSTM, GRU,
Elman RNN), forward and backward, in one kernel each. The step's GEMM is the caller's (the
layers in clgrad/ops/rnn_cell.py); these kernels read and write [B, *] slices of the layer's
[T, B, *] buffers, so every tensor argument comes with an extra element offset (the step's
slice) added to its own. Each kernel has a `_v` form (a vector of hidden units per work-item,
where H is a multiple of the vector width) and a scalar `_s` form. Raw launches: no autograd.

>>> import clgrad
>>> B, H = 1, 1
>>> gates, c_prev = clgrad.zeros(B, 4 * H), clgrad.ones(B, H)
>>> h, c, act = clgrad.empty(B, H), clgrad.empty(B, H), clgrad.empty(B, 4 * H)
>>> lstm_fwd_raw(B, H, gates, 0, c_prev, 0, h, 0, c, 0, act, 0)
>>> round(h.item(), 4), c.item()
(0.2311, 0.5)
"""
from .. import dtypes
from ..runtime.family import KernelFamily
from ..runtime.kernels import vec_width

RNN = KernelFamily("rnn", lambda dt: dict(dt=dt), dtypes.FLOATS)


def _arg(t, off=0):
    """A tensor argument at an extra element offset (a step's slice of a layer buffer)."""
    return t._storage.buf, t._offset + off


def _opt(g, off, other):
    """An optional gradient argument of the backward kernels: (buffer, offset, present flag); an
    absent one passes the buffer of `other`, never read (some drivers refuse a NULL buffer)."""
    return [*_arg(g, off), 1] if g is not None else [other._storage.buf, 0, 0]


def _launch(name, dev, dt, B, H, *args):
    """The `_v` kernel (a vector of hidden units per work-item) where H allows it."""
    w = vec_width(dev, dt)
    vec = H % w == 0
    if B * H:
        RNN.launch(dev, dt, name + ("_v" if vec else "_s"), B * H // w if vec else B * H, *args,
                   B, H)


def lstm_fwd_raw(B, H, gates, go, c_prev, cpo, h, ho, c, co, act, ao):
    """The LSTM cell on [B, 4H] / [B, H] slices at the given extra element offsets: h, c and the
    activated gates (act) from the gate pre-activations and c_prev."""
    _launch("lstm_fwd", gates._storage.device, gates._dtype, B, H, *_arg(gates, go),
            *_arg(c_prev, cpo), *_arg(h, ho), *_arg(c, co), *_arg(act, ao))


def lstm_bwd_raw(B, H, dh, dh2, dc, act, ao, c_prev, cpo, c, co, dgates, dgo, dcp):
    """The LSTM cell's backward: dgates and dc_prev (dcp). dh, dh2, dc: (tensor, extra offset)
    or None."""
    opt = []
    for g in (dh, dh2, dc):
        opt += _opt(g[0], g[1], act) if g is not None else _opt(None, 0, act)
    _launch("lstm_bwd", act._storage.device, act._dtype, B, H, *opt, *_arg(act, ao),
            *_arg(c_prev, cpo), *_arg(c, co), *_arg(dgates, dgo), *_arg(dcp))


def gru_fwd_raw(B, H, proj, po, gh, h_prev, hpo, h, ho, act, ao):
    """The GRU cell: h from the input projection proj [B, 3H], gh = h_prev W_hh^T + b_hh [B, 3H]
    and h_prev; act [B, 4H] keeps r, z, n and W_hn h + b_hn for backward."""
    _launch("gru_fwd", proj._storage.device, proj._dtype, B, H, *_arg(proj, po), *_arg(gh),
            *_arg(h_prev, hpo), *_arg(h, ho), *_arg(act, ao))


def gru_bwd_raw(B, H, dh, dout, doo, act, ao, h_prev, hpo, dx, dxo, dgh, dgho, dhp):
    """The GRU cell's backward: dx (the projection's gradient), dgh (that of h_prev W_hh^T +
    b_hh) and dhp (z * dh); dh (offset 0) and dout (at doo) may be None."""
    _launch("gru_bwd", act._storage.device, act._dtype, B, H, *_opt(dh, 0, act),
            *_opt(dout, doo, act), *_arg(act, ao), *_arg(h_prev, hpo), *_arg(dx, dxo),
            *_arg(dgh, dgho), *_arg(dhp))


def rnn_fwd_raw(B, H, pre, h, ho, relu):
    """The Elman cell: h = tanh(pre) (or relu)."""
    _launch("rnn_fwd", pre._storage.device, pre._dtype, B, H, *_arg(pre), *_arg(h, ho), relu)


def rnn_bwd_raw(B, H, dh, dout, doo, h, ho, dpre, dpo, relu):
    """The Elman cell's backward: dpre from h and the gradients dh (offset 0) and dout (at doo),
    either of which may be None."""
    _launch("rnn_bwd", h._storage.device, h._dtype, B, H, *_opt(dh, 0, h), *_opt(dout, doo, h),
            *_arg(h, ho), *_arg(dpre, dpo), relu)
