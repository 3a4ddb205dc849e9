"""Recurrent layers: RNN, LSTM, GRU and their cells, with torch's parameter names, shapes, gate
order and initialisation, so a torch state_dict loads and gives torch's numbers.

Each layer and direction projects the input of every step with one GEMM. RNN, GRU and an LSTM
without proj_size over a whole (unpacked) sequence then run as one fused op each
(clgrad/ops/rnn_cell.py: per step one GEMM and one gate kernel, W_hh's gradient one GEMM at the
end). Otherwise (packed sequences, LSTM with proj_size) each step adds the projected hidden state
(one GEMM) and applies the gates: LSTM's in one fused kernel, RNN's and GRU's as composed ops.
Packed sequences run step by step on the sequences still running, as torch does: at step t the
first batch_sizes[t] rows.
"""
import math

from ...ops.creation import empty, zeros
from ...ops.join import cat, stack
from ...ops import lstm_stack as _stack
from ...ops.rnn_cell import gru_layer, lstm_layer, rnn_layer
from ...ops.rnn_step import gru_step, lstm_step, rnn_step
from ...tensor import Tensor
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .._packed_sequence import PackedSequence
from .module import Module

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}
# False runs every layer step by step in composed ops (the fused layer ops' reference, and the
# baseline of tools/seq_bench.py)
_FUSED = True


def _take(state, n):
    """The first n rows of a state (a tensor or an (h, c) pair)."""
    if isinstance(state, tuple):
        return tuple(s[:n] for s in state)
    return state[:n]


def _merge(new, old, n):
    """new (n rows) on top of the rows of old past n: the sequences that are not running."""
    if isinstance(new, tuple):
        return tuple(_merge(a, b, n) for a, b in zip(new, old))
    return new if n == old.shape[0] else cat([new, old[n:]], 0)


class RNNBase(Module):
    """The layers' common machinery (torch.nn.RNNBase): parameters per layer and direction,
    the sequence loop, packed sequences, initial states."""

    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__()
        if mode not in _GATES:
            raise ValueError(f"Unrecognized RNN mode: {mode}")
        if not isinstance(dropout, (int, float)) or not 0 <= dropout <= 1 or \
                isinstance(dropout, bool):
            raise ValueError("dropout should be a number in range [0, 1] representing the "
                             "probability of an element being zeroed")
        if not isinstance(hidden_size, int) or hidden_size <= 0:
            raise ValueError("hidden_size must be an integer greater than zero")
        if not isinstance(num_layers, int) or num_layers <= 0:
            raise ValueError("num_layers must be an integer greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable "
                             "projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if proj_size and mode != "LSTM":
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if dropout > 0 and num_layers == 1:
            import warnings
            warnings.warn(f"dropout option adds dropout after all but last recurrent layer, so "
                          f"non-zero dropout expects num_layers greater than 1, but got "
                          f"dropout={dropout} and num_layers={num_layers}", stacklevel=3)
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        dirs = 2 if bidirectional else 1
        gate = _GATES[mode] * hidden_size
        real_hidden = proj_size or hidden_size
        self._flat_weights_names = []
        for layer in range(num_layers):
            for d in range(dirs):
                sfx = f"_l{layer}" + ("_reverse" if d else "")
                layer_in = input_size if layer == 0 else real_hidden * dirs
                shapes = [("weight_ih", (gate, layer_in)), ("weight_hh", (gate, real_hidden))]
                if bias:
                    shapes += [("bias_ih", (gate,)), ("bias_hh", (gate,))]
                if proj_size:
                    shapes.append(("weight_hr", (proj_size, hidden_size)))
                for name, shape in shapes:
                    setattr(self, name + sfx, Parameter(empty(shape, device=device, dtype=dtype)))
                    self._flat_weights_names.append(name + sfx)
        self.reset_parameters()

    def reset_parameters(self):
        """Every weight and bias from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)), as torch."""
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for w in self.parameters():
            init.uniform_(w, -stdv, stdv)

    @property
    def _flat_weights(self):
        return [getattr(self, n) for n in self._flat_weights_names]

    def flatten_parameters(self):
        """Accepted for torch compatibility: clgrad keeps no fused weight buffer."""

    def _weights(self, layer, d):
        sfx = f"_l{layer}" + ("_reverse" if d else "")
        get = lambda n: getattr(self, n + sfx, None)  # noqa: E731
        return get("weight_ih"), get("weight_hh"), get("bias_ih"), get("bias_hh"), \
            get("weight_hr")

    def _step(self, x_proj, state, w_hh, b_hh, w_hr):
        if self.mode == "LSTM":
            return lstm_step(x_proj, state, w_hh, b_hh, w_hr)
        if self.mode == "GRU":
            return gru_step(x_proj, state, w_hh, b_hh)
        act = (lambda t: t.tanh()) if self.mode == "RNN_TANH" else (lambda t: t.relu())
        return rnn_step(act, x_proj, state, w_hh, b_hh)

    def _stacks(self, x):
        """Whether forward runs the layers as one wavefront (lstm_stack): an LSTM of two layers
        or more, in one direction, with both biases, no proj_size and no dropout between its
        layers, outside autocast (whose casts the layers' own ops take), on a device where that
        pays (lstm_stack.uses_wavefront)."""
        return (_FUSED and self.mode == "LSTM" and not self.bidirectional and self.bias and
                not self.proj_size and not (self.dropout and self.training) and
                not _stack.autocast_on() and
                _stack.uses_wavefront(x._storage.device, self.num_layers))

    def _run_sequence(self, x, state, layer, d):
        """One layer in one direction over a whole [T, B, F] sequence; returns the output
        [T, B, H_out] and the final state."""
        w_ih, w_hh, b_ih, b_hh, w_hr = self._weights(layer, d)
        T, B = x.shape[0], x.shape[1]

        def project(bias):                       # every step's input projection: one GEMM
            return F.linear(x.reshape(T * B, x.shape[2]), w_ih, bias).reshape(T, B, len(w_ih))

        def both():
            return b_ih + b_hh if b_ih is not None else None
        if _FUSED and self.mode == "LSTM" and w_hr is None:
            # both biases in the one GEMM of the input projection, then the fused layer
            out, h, c = lstm_layer(project(both()), w_hh, state[0], state[1], bool(d))
            return out, (h, c)
        if _FUSED and self.mode == "GRU":
            # b_hh stays out of the projection: b_hn sits inside r * (W_hn h + b_hn)
            return gru_layer(project(b_ih), w_hh, b_hh, state, bool(d))
        if _FUSED and self.mode != "LSTM":       # RNN_TANH, RNN_RELU
            return rnn_layer(project(both()), w_hh, state, bool(d),
                             "relu" if self.mode == "RNN_RELU" else "tanh")
        # step by step (an LSTM with proj_size), the gates in the fused cell kernel for LSTM
        steps = project(b_ih).unbind(0)          # one op: its backward is one stack
        outs = [None] * T
        for t in (range(T - 1, -1, -1) if d else range(T)):
            outs[t], state = self._step(steps[t], state, w_hh, b_hh, w_hr)
        return stack(outs, 0), state

    def _run_direction(self, steps_x, batch_sizes, state, layer, d):
        """One layer in one direction over the steps (inputs [bs_t, in]); returns the outputs
        per step and the final state."""
        w_ih, w_hh, b_ih, b_hh, w_hr = self._weights(layer, d)
        # the input projection of every step at once: one GEMM
        proj = F.linear(cat(steps_x, 0) if len(steps_x) > 1 else steps_x[0], w_ih, b_ih)
        # one split, not a slice per step: the backward of a split is one cat, where each
        # slice's backward would write a gradient of the whole projection
        proj = proj.split(batch_sizes, 0)
        order = range(len(batch_sizes) - 1, -1, -1) if d else range(len(batch_sizes))
        outs = [None] * len(batch_sizes)
        for t in order:
            bs = batch_sizes[t]
            out, new = self._step(proj[t], _take(state, bs), w_hh, b_hh, w_hr)
            state = _merge(new, state, bs)
            outs[t] = out
        return outs, state

    def _check_input(self, x, batched):
        expected = 3 if batched else 2
        if x.dim() != expected:
            raise ValueError(f"{type(self).__name__}: Expected input to be 2D or 3D, got "
                             f"{x.dim()}D instead")
        if x.shape[-1] != self.input_size:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected "
                               f"{self.input_size}, got {x.shape[-1]}")

    def _initial(self, hx, B, like, sorted_indices):
        dirs = 2 if self.bidirectional else 1
        real_hidden = self.proj_size or self.hidden_size
        shapes = [(self.num_layers * dirs, B, real_hidden)]
        if self.mode == "LSTM":
            shapes.append((self.num_layers * dirs, B, self.hidden_size))
        if hx is None:
            states = [zeros(s, dtype=like.dtype, device=like.device) for s in shapes]
        else:
            states = list(hx) if self.mode == "LSTM" else [hx]
            if self.mode == "LSTM" and len(states) != 2:
                raise RuntimeError("LSTM: expected hx to be a tuple (h_0, c_0)")
            for s, shape, name in zip(states, shapes, ("hidden", "cell")):
                if tuple(s.shape) != shape:
                    raise RuntimeError(f"Expected {name} size {shape}, got {tuple(s.shape)}")
            if sorted_indices is not None:
                states = [s.index_select(1, sorted_indices.to(s.device)) for s in states]
        return states

    def forward(self, input, hx=None):
        packed = isinstance(input, PackedSequence)
        dirs = 2 if self.bidirectional else 1
        if packed:
            data = input.data
            batch_sizes = [int(v) for v in input.batch_sizes.tolist()]
            B = batch_sizes[0]
            steps, off = [], 0
            for bs in batch_sizes:
                steps.append(data[off:off + bs])
                off += bs
            if data.dim() != 2 or data.shape[-1] != self.input_size:
                raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected "
                                   f"{self.input_size}, got {data.shape[-1]}")
            batched, like = True, data
        else:
            if not isinstance(input, Tensor):
                raise TypeError(f"{type(self).__name__}: expected a Tensor or PackedSequence, "
                                f"got {type(input).__name__}")
            batched = input.dim() == 3
            self._check_input(input, batched)
            x = input if batched else input.unsqueeze(1)
            if batched and self.batch_first:
                x = x.transpose(0, 1)
            T, B = x.shape[0], x.shape[1]
            if T == 0:
                raise RuntimeError("Expected sequence length to be larger than 0 in RNN")
            batch_sizes = [B] * T
            steps = list(x.unbind(0))
            like = x
            if not batched and hx is not None:
                hx = tuple(h.unsqueeze(1) for h in hx) if self.mode == "LSTM" else \
                    hx.unsqueeze(1)
        states = self._initial(hx, B, like, input.sorted_indices if packed else None)
        finals = [[] for _ in states]
        h_n = None
        if not packed and T and self._stacks(x):
            # the layers as a wavefront over two queues (ops/lstm_stack.py)
            weights = [w for layer in range(self.num_layers) for w in self._weights(layer, 0)[:4]]
            seq, *h_n = _stack.lstm_stack(x, states[0], states[1], weights)
            steps = None
        elif not packed and T:
            # every sequence runs every step: the layers take whole [T, B, F] tensors
            seq = x
            for layer in range(self.num_layers):
                per_dir = []
                for d in range(dirs):
                    k = layer * dirs + d
                    s0 = tuple(s[k] for s in states) if self.mode == "LSTM" else states[0][k]
                    out, sT = self._run_sequence(seq, s0, layer, d)
                    per_dir.append(out)
                    for f, s in zip(finals, sT if self.mode == "LSTM" else (sT,)):
                        f.append(s)
                seq = cat(per_dir, -1) if dirs == 2 else per_dir[0]
                if self.dropout and self.training and layer < self.num_layers - 1:
                    seq = F.dropout(seq, self.dropout)
            steps = None
        for layer in range(self.num_layers if packed or not T else 0):
            per_dir = []
            for d in range(dirs):
                k = layer * dirs + d
                s0 = tuple(s[k] for s in states) if self.mode == "LSTM" else states[0][k]
                if not steps:
                    outs, sT = [], s0
                else:
                    outs, sT = self._run_direction(steps, batch_sizes, s0, layer, d)
                per_dir.append(outs)
                for f, s in zip(finals, sT if self.mode == "LSTM" else (sT,)):
                    f.append(s)
            steps = [cat([o[t] for o in per_dir], -1) if dirs == 2 else per_dir[0][t]
                     for t in range(len(batch_sizes))]
            if self.dropout and self.training and layer < self.num_layers - 1:
                steps = [F.dropout(s, self.dropout) for s in steps]
        if h_n is None:
            h_n = [stack(f, 0) for f in finals]
        if packed:
            if input.unsorted_indices is not None:
                h_n = [h.index_select(1, input.unsorted_indices.to(h.device)) for h in h_n]
            out = PackedSequence(cat(steps, 0), input.batch_sizes, input.sorted_indices,
                                 input.unsorted_indices)
        else:
            if steps is None:
                out = seq
            elif steps:
                out = stack(steps, 0)
            else:
                out = like.new_zeros((0, B, dirs * (self.proj_size or self.hidden_size)))
            if not batched:
                out = out.squeeze(1)
                h_n = [h.squeeze(1) for h in h_n]
            elif self.batch_first:
                out = out.transpose(0, 1)
        return out, (tuple(h_n) if self.mode == "LSTM" else h_n[0])

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout:g}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s


def _layer_args(args, kwargs, names):
    """torch's layers take their options positionally too: (input_size, hidden_size,
    num_layers, ...)."""
    for name, value in zip(names, args):
        if name in kwargs:
            raise TypeError(f"got multiple values for argument '{name}'")
        kwargs[name] = value
    return kwargs


class RNN(RNNBase):
    """Elman RNN: h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh) (or relu with
    nonlinearity='relu'), over num_layers layers, optionally bidirectional.

    >>> import clgrad
    >>> rnn = clgrad.nn.RNN(10, 20, 2)
    >>> out, h_n = rnn(clgrad.randn(5, 3, 10), clgrad.zeros(2, 3, 20))
    >>> out.shape, h_n.shape
    (clgrad.Size([5, 3, 20]), clgrad.Size([2, 3, 20]))
    """

    def __init__(self, *args, **kwargs):
        kwargs = _layer_args(args, kwargs, ["input_size", "hidden_size", "num_layers",
                                            "nonlinearity", "bias", "batch_first", "dropout",
                                            "bidirectional"])
        nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or "
                             f"'relu'.")
        self.nonlinearity = nonlinearity
        super().__init__("RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU", **kwargs)


class LSTM(RNNBase):
    """Long short-term memory: gates i, f, g, o from x_t and h_{t-1}; c_t = f*c_{t-1} + i*g,
    h_t = o*tanh(c_t) (projected to proj_size when it is set). forward(input, (h_0, c_0))
    returns (output, (h_n, c_n)).

    >>> import clgrad
    >>> lstm = clgrad.nn.LSTM(10, 20, 2, batch_first=True)
    >>> out, (h_n, c_n) = lstm(clgrad.randn(3, 5, 10))
    >>> out.shape, h_n.shape, c_n.shape
    (clgrad.Size([3, 5, 20]), clgrad.Size([2, 3, 20]), clgrad.Size([2, 3, 20]))
    """

    def __init__(self, *args, **kwargs):
        kwargs = _layer_args(args, kwargs, ["input_size", "hidden_size", "num_layers", "bias",
                                            "batch_first", "dropout", "bidirectional",
                                            "proj_size"])
        super().__init__("LSTM", **kwargs)


class GRU(RNNBase):
    """Gated recurrent unit: r, z gates and the candidate n = tanh(x W_in^T + b_in +
    r * (h W_hn^T + b_hn)); h_t = (1 - z) * n + z * h_{t-1}.

    >>> import clgrad
    >>> gru = clgrad.nn.GRU(10, 20, bidirectional=True)
    >>> out, h_n = gru(clgrad.randn(5, 3, 10))
    >>> out.shape, h_n.shape
    (clgrad.Size([5, 3, 40]), clgrad.Size([2, 3, 20]))
    """

    def __init__(self, *args, **kwargs):
        kwargs = _layer_args(args, kwargs, ["input_size", "hidden_size", "num_layers", "bias",
                                            "batch_first", "dropout", "bidirectional"])
        super().__init__("GRU", **kwargs)


# ---- cells: one step, parameters weight_ih, weight_hh, bias_ih, bias_hh ---------------------------
class RNNCellBase(Module):
    """The cells' common parameters (torch.nn.RNNCellBase)."""

    def __init__(self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None):
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.weight_ih = Parameter(empty((num_chunks * hidden_size, input_size), device=device,
                                         dtype=dtype))
        self.weight_hh = Parameter(empty((num_chunks * hidden_size, hidden_size), device=device,
                                         dtype=dtype))
        if bias:
            self.bias_ih = Parameter(empty(num_chunks * hidden_size, device=device, dtype=dtype))
            self.bias_hh = Parameter(empty(num_chunks * hidden_size, device=device, dtype=dtype))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for w in self.parameters():
            init.uniform_(w, -stdv, stdv)

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            s += f", nonlinearity={self.nonlinearity}"
        return s

    def _prepare(self, input, hx, n_states):
        name = type(self).__name__
        if input.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        if input.shape[-1] != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {input.shape[-1]} "
                               f"expected {self.input_size}")
        batched = input.dim() == 2
        x = input if batched else input.unsqueeze(0)
        B = x.shape[0]
        if hx is None:
            states = [zeros((B, self.hidden_size), dtype=x.dtype, device=x.device)
                      for _ in range(n_states)]
        else:
            states = list(hx) if n_states == 2 else [hx]
            states = [s if batched else s.unsqueeze(0) for s in states]
            for s in states:
                if tuple(s.shape) != (B, self.hidden_size):
                    raise RuntimeError(f"{name}: expected hidden state of shape "
                                       f"{(B, self.hidden_size) if batched else (self.hidden_size,)}"
                                       f", got {tuple(s.shape) if batched else tuple(s.shape[1:])}")
        return x, states, batched


class RNNCell(RNNCellBase):
    """One step of an Elman RNN: h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh) (or relu).

    >>> import clgrad
    >>> cell = clgrad.nn.RNNCell(10, 20)
    >>> cell(clgrad.randn(3, 10)).shape
    clgrad.Size([3, 20])
    """

    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None,
                 dtype=None):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity: {nonlinearity}")
        self.nonlinearity = nonlinearity
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)

    def forward(self, input, hx=None):
        x, (h,), batched = self._prepare(input, hx, 1)
        act = (lambda t: t.tanh()) if self.nonlinearity == "tanh" else (lambda t: t.relu())
        h, _ = rnn_step(act, F.linear(x, self.weight_ih, self.bias_ih), h, self.weight_hh,
                         self.bias_hh)
        return h if batched else h.squeeze(0)


class LSTMCell(RNNCellBase):
    """One LSTM step: (h', c') from x and (h, c).

    >>> import clgrad
    >>> cell = clgrad.nn.LSTMCell(10, 20)
    >>> h, c = cell(clgrad.randn(3, 10))
    >>> h.shape, c.shape
    (clgrad.Size([3, 20]), clgrad.Size([3, 20]))
    """

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)

    def forward(self, input, hx=None):
        x, states, batched = self._prepare(input, hx, 2)
        _, (h, c) = lstm_step(F.linear(x, self.weight_ih, self.bias_ih), tuple(states),
                               self.weight_hh, self.bias_hh, None)
        return (h, c) if batched else (h.squeeze(0), c.squeeze(0))


class GRUCell(RNNCellBase):
    """One GRU step: h' from x and h.

    >>> import clgrad
    >>> cell = clgrad.nn.GRUCell(10, 20)
    >>> cell(clgrad.randn(3, 10), clgrad.zeros(3, 20)).shape
    clgrad.Size([3, 20])
    """

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)

    def forward(self, input, hx=None):
        x, (h,), batched = self._prepare(input, hx, 1)
        h, _ = gru_step(F.linear(x, self.weight_ih, self.bias_ih), h, self.weight_hh,
                         self.bias_hh)
        return h if batched else h.squeeze(0)
