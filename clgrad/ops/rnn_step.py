"""One step of each RNN kind, and torch's top-level RNN cell ops.

- `rnn_step`, `lstm_step`, `gru_step`: one step from the step's input projection (input W_ihᵀ +
  b_ih, computed by the caller, for a whole sequence at once where it can) and the state; what
  nn.RNNCell / LSTMCell / GRUCell and the packed or projected layers of clgrad/nn/modules/rnn.py
  run. LSTM's gates are one fused kernel (clgrad/ops/rnn_cell.py).
- `rnn_tanh_cell`, `rnn_relu_cell`, `lstm_cell`, `gru_cell` (exported as clgrad.<name>): one
  step each with ATen's argument list (input, hx, w_ih, w_hh, b_ih, b_hh) and torch's checks,
  through the same step functions.
"""
from ..tensor import Tensor
from . import rnn_cell as _fused
from . import dispatch

__all__ = ["rnn_tanh_cell", "rnn_relu_cell", "lstm_cell", "gru_cell"]


def _linear(x, w, b=None):
    # through nn.functional's namespace: an autocast region's wrapper of linear applies to the
    # steps' GEMMs (ops.dispatch), as nn's layers had it
    return dispatch.F.linear(x, w, b)


# ---- one step of each kind: x_proj is input @ W_ih^T + b_ih, already computed -------------------
def rnn_step(act, x_proj, h, w_hh, b_hh):
    h = act(x_proj + _linear(h, w_hh, b_hh))
    return h, h


def lstm_step(x_proj, state, w_hh, b_hh, w_hr):
    h, c = state
    gates = x_proj + _linear(h, w_hh, b_hh)
    # the gates (torch's order: input, forget, cell, output) in one kernel, forward and backward
    h, c = _fused.lstm_cell(gates, c)
    if w_hr is not None:
        h = _linear(h, w_hr)                           # proj_size: h is projected down
    return h, (h, c)


def gru_step(x_proj, h, w_hh, b_hh):
    gh = _linear(h, w_hh, b_hh)
    xr, xz, xn = x_proj.chunk(3, -1)                     # torch's order: reset, update, new
    hr, hz, hn = gh.chunk(3, -1)
    r = (xr + hr).sigmoid()
    z = (xz + hz).sigmoid()
    n = (xn + r * hn).tanh()                             # b_hn stays inside r * (...), as torch
    h = (1 - z) * n + z * h
    return h, h


# ---- one step of each RNN kind: ATen's (input, hx, w_ih, w_hh, b_ih, b_hh) -----------------------
def _size(name, what, t, d):
    """t.size(d), with torch's IndexError where t has no dim d (the cells' 1-d inputs)."""
    if t.ndim == 0:
        raise IndexError(f"Dimension specified as {d} but tensor has no dimensions ({name}: "
                         f"{what} of shape [])")
    if d >= t.ndim:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-t.ndim}, "
                         f"{t.ndim - 1}], but got {d}) ({name}: {what} of shape "
                         f"{list(t.shape)})")
    return t.shape[d]


def _proj(name, input, hx, w_ih, b_ih, w_hh, c=None):
    """torch's checks of a cell's input and hidden states (the op's: a 1-d input has no dim 1,
    an IndexError; nn's cell modules unsqueeze it first), then the input's projection."""
    if _size(name, "input", input, 1) != _size(name, "w_ih", w_ih, 1):
        raise RuntimeError(f"input has inconsistent input_size: got {input.shape[1]} expected "
                           f"{w_ih.shape[1]} ({name}: input of shape {list(input.shape)}, w_ih "
                           f"of shape {list(w_ih.shape)})")
    H = _size(name, "w_hh", w_hh, 1)
    for k, h in enumerate((hx,) if c is None else (hx, c)):
        if input.shape[0] != _size(name, f"hidden{k}", h, 0):
            raise RuntimeError(f"Input batch size {input.shape[0]} doesn't match hidden{k} "
                               f"batch size {h.shape[0]} ({name}: input of shape "
                               f"{list(input.shape)}, hidden{k} of shape {list(h.shape)})")
        if _size(name, f"hidden{k}", h, 1) != H:
            raise RuntimeError(f"hidden{k} has inconsistent hidden_size: got {h.shape[1]}, "
                               f"expected {H} ({name}: hidden{k} of shape {list(h.shape)}, w_hh "
                               f"of shape {list(w_hh.shape)})")
    if input.ndim != 2 or hx.ndim != 2 or c is not None and c.ndim != 2:
        raise RuntimeError(f"{name}: expected 2-D input and hidden state, got input "
                           f"{list(input.shape)} and hx {list(hx.shape)}")
    return _linear(input, w_ih, b_ih)


def rnn_tanh_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """tanh(input W_ihᵀ + b_ih + hx W_hhᵀ + b_hh).

    >>> import clgrad
    >>> clgrad.rnn_tanh_cell(clgrad.zeros(1, 3), clgrad.zeros(1, 2), clgrad.ones(2, 3),
    ...                      clgrad.ones(2, 2)).tolist()
    [[0.0, 0.0]]
    """
    x_proj = _proj("rnn_tanh_cell", input, hx, w_ih, b_ih, w_hh)
    return rnn_step(Tensor.tanh, x_proj, hx, w_hh, b_hh)[0]


def rnn_relu_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """relu(input W_ihᵀ + b_ih + hx W_hhᵀ + b_hh).

    >>> import clgrad
    >>> clgrad.rnn_relu_cell(clgrad.ones(1, 3), clgrad.zeros(1, 2), clgrad.ones(2, 3),
    ...                      clgrad.ones(2, 2)).tolist()
    [[3.0, 3.0]]
    """
    x_proj = _proj("rnn_relu_cell", input, hx, w_ih, b_ih, w_hh)
    return rnn_step(Tensor.relu, x_proj, hx, w_hh, b_hh)[0]


def lstm_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One LSTM step: hx is (h, c); returns (h', c'). Gate order i, f, g, o as torch's.

    >>> import clgrad
    >>> h, c = clgrad.lstm_cell(clgrad.zeros(1, 3), (clgrad.zeros(1, 2), clgrad.zeros(1, 2)),
    ...                         clgrad.ones(8, 3), clgrad.ones(8, 2))
    >>> h.tolist(), c.tolist()
    ([[0.0, 0.0]], [[0.0, 0.0]])
    """
    if len(hx) != 2:
        raise RuntimeError(f"lstm_cell expects two hidden states (got {len(hx)})")
    h, c = hx
    return lstm_step(_proj("lstm_cell", input, h, w_ih, b_ih, w_hh, c), (h, c), w_hh, b_hh,
                      None)[1]


def gru_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One GRU step (gate order r, z, n as torch's; b_hn inside r * (...)).

    >>> import clgrad
    >>> clgrad.gru_cell(clgrad.zeros(1, 3), clgrad.zeros(1, 2), clgrad.ones(6, 3),
    ...                 clgrad.ones(6, 2)).tolist()
    [[0.0, 0.0]]
    """
    return gru_step(_proj("gru_cell", input, hx, w_ih, b_ih, w_hh), hx, w_hh, b_hh)[0]
