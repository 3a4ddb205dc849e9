"""A stack of LSTM layers run as a wavefront over two queues.

nn.LSTM runs its layers one after the other: layer l's input projection is one GEMM over the
whole sequence, then its T steps (ops/rnn_cell.py, LSTMLayer). Each step is a small kernel, and
on PoCL a small kernel runs on one core (runtime/side_queue.py), so a layer's steps leave the
other core idle. Here the layers run as a wavefront instead: the steps are cut into chunks, and
layer l does chunk c (its input projection of those steps, one GEMM, then the steps) while layer
l - 1 does chunk c + 1, the odd layers on the device's side queue; layer 0's projection, whose
input is there from the start, is one GEMM over the whole sequence first. The kernels are the
same as layer by layer; what changes is the order and the queue. The backward runs the same way
from the top layer down, in reverse time: layer l does chunk c (its steps, then the gradient of
its input over those steps, which the layer below reads) while layer l + 1 does chunk c - 1; a
layer's weight gradients follow its last chunk, beside the chains of the layers below, both from
one packed copy of its gate gradients.

Used by nn.LSTM where `uses_wavefront` holds: two layers or more, one direction, no proj_size,
no dropout between layers in training, both biases, and a device whose small kernels run on one
core (Device.small_kernels_use_one_core); `WAVEFRONT` (CLGRAD_LSTM_WAVEFRONT=1 / 0) forces it on
or off.

    >>> import clgrad
    >>> L, T, B, F, H = 2, 3, 1, 2, 2
    >>> weights = [clgrad.ones(*s) * 0.1 for _ in range(L)
    ...            for s in ((4 * H, F if _ == 0 else H), (4 * H, H), (4 * H,), (4 * H,))]
    >>> out, h_n, c_n = lstm_stack(clgrad.ones(T, B, F), clgrad.zeros(L, B, H),
    ...                            clgrad.zeros(L, B, H), weights)
    >>> out.shape, h_n.shape
    (clgrad.Size([3, 1, 2]), clgrad.Size([2, 1, 2]))
"""
import os
from contextlib import nullcontext

from ..autograd.grad_mode import enable_grad, is_grad_enabled
from ..autograd.op import Op
from ..kernels.gemm import gemm
from ..runtime.side_queue import join_side_queue, mark, on_side_queue, queue_wait, side_queue
from ..tensor import empty_tensor
from ._base import contiguous_raw, copy_into, recorded_grads, view_raw
from .join import stack
from .rnn_cell import LSTMGrads, LSTMRun, _composed

# None: where uses_wavefront finds it pays; True / False: always / never (CLGRAD_LSTM_WAVEFRONT=1
# or 0 sets it at import)
WAVEFRONT = {"1": True, "0": False}.get(os.environ.get("CLGRAD_LSTM_WAVEFRONT", ""))


def autocast_on():
    """Whether an autocast region is on (nn.LSTM then runs layer by layer, whose ops autocast
    casts as torch's). clgrad.amp replaces it when it installs: the ops layer does not import
    amp, which sits above it."""
    return False


def uses_wavefront(device, num_layers):
    """Whether nn.LSTM's layers (one direction, no proj_size, no dropout between them) run as a
    wavefront (lstm_stack) on `device`.

    >>> import clgrad
    >>> uses_wavefront(clgrad.runtime.default_device(), 1)
    False
    """
    if WAVEFRONT is not None:
        return WAVEFRONT and num_layers > 1
    return num_layers > 1 and device.small_kernels_use_one_core


def chunk_steps(T):
    """Steps per chunk of the wavefront: a quarter of the sequence, at least 8 (a chunk costs
    waits between the queues and a smaller projection GEMM; tools/bench_wavefront.py, 32 steps:
    chunks of 8 took 0.82-0.83 of the layer-by-layer forward's time, of 16 0.87-0.89, of 4
    0.89 in one run).

    >>> chunk_steps(32), chunk_steps(5), chunk_steps(100)
    (8, 8, 25)
    """
    return max(8, -(-T // 4))


def _wavefront(L, n, downward):
    """(layer, chunk) of L layers in n chunks each, in the order the wavefront enqueues them: at
    wave w the layer d layers behind the leading one (layer 0 going up, the top layer going
    down) takes its chunk w - d, the layer farthest behind first.

    >>> list(_wavefront(2, 2, False)), list(_wavefront(2, 2, True))
    ([(0, 0), (1, 0), (0, 1), (1, 1)], [(1, 0), (0, 0), (1, 1), (0, 1)])
    """
    for w in range(n + L - 1):
        for d in range(L - 1, -1, -1):
            if 0 <= w - d < n:
                yield (L - 1 - d if downward else d), w - d


def _queue_of(dev, l):
    """Where layer l runs: the even layers on the device's queue, the odd ones on the side's."""
    return on_side_queue(dev) if l % 2 else nullcontext()


def _project(inp, row0, rows, w_ih, bias, b_cache=None):
    """inp[row0:row0 + rows] ([rows, K] of a contiguous [T * B, K]) @ w_ih^T + bias: a new
    [1, rows, 4H] tensor. b_cache: gemm's, one per layer, so that its chunks pack w_ih^T once."""
    K = w_ih._shape[1]
    G = w_ih._shape[0]
    return gemm(view_raw(inp, (1, rows, K), (0, K, 1), inp._offset + row0 * K),
                view_raw(w_ih, (1, K, G), (0, w_ih._strides[1], w_ih._strides[0]),
                         w_ih._offset),
                view_raw(bias, (1, rows, G), (0, 0, bias._strides[0]), bias._offset), 1,
                b_cache=b_cache)


class LSTMStack(Op):
    """(out [T, B, H] of the last layer, h_n [L, B, H], c_n [L, B, H]) of L LSTM layers over x
    [T, B, F] from h0, c0 [L, B, H]; weights: w_ih, w_hh, b_ih, b_hh of each layer in turn."""

    @staticmethod
    def forward(ctx, x, h0, c0, *weights):
        x, h0, c0 = contiguous_raw(x), contiguous_raw(h0), contiguous_raw(c0)
        dev, dt = x._storage.device, x._dtype
        L = len(weights) // 4
        T, B, F = x._shape
        H = weights[1]._shape[1]
        biases = [contiguous_raw(weights[4 * l + 2] + weights[4 * l + 3]) for l in range(L)]
        runs = [LSTMRun(weights[4 * l + 1], view_raw(h0, (B, H), (H, 1), h0._offset + l * B * H),
                        view_raw(c0, (B, H), (H, 1), c0._offset + l * B * H), T, x)
                for l in range(L)]
        ins = [x] + [r.out for r in runs[:-1]]          # each layer's input, [T, B, *]
        side = side_queue(dev)
        queues = [dev if l % 2 == 0 else side for l in range(L)]
        chunk = chunk_steps(T)
        n = -(-T // chunk)
        done = [[None] * n for _ in range(L)]    # [l][c]: a Mark after layer l's chunk c
        # layer 0's input is there from the start: its projection is one GEMM of all the steps,
        # large enough for every core, instead of one per chunk on layer 0's chain (the compiled
        # LSTM step of tools/bench_compile.py: 0.92-0.99 of the time, five runs in turns)
        first = _project(x, 0, T * B, weights[0], biases[0])
        # each layer's w_ih^T packed once for all its chunks, not once a chunk (the compiled LSTM
        # step: 0.90-0.97 of the time, three runs in turns)
        packed = [{} for _ in range(L)]
        try:
            for l, c in _wavefront(L, n, False):
                lo, hi = c * chunk, min(T, (c + 1) * chunk)
                if l:
                    queue_wait(queues[l], done[l - 1][c])
                with _queue_of(dev, l):
                    if l == 0:
                        runs[l].steps(range(lo, hi), first, 0)
                    else:
                        proj = _project(ins[l], lo * B, (hi - lo) * B, weights[4 * l], biases[l],
                                        packed[l])
                        runs[l].steps(range(lo, hi), proj, lo)
                if l < L - 1:
                    done[l][c] = mark(queues[l])
        finally:
            join_side_queue(dev)         # the main queue goes on after the side's work
        h_n = empty_tensor((L, B, H), dt, dev)
        c_n = empty_tensor((L, B, H), dt, dev)
        for l, run in enumerate(runs):
            h, c = run.finals()
            copy_into(view_raw(h_n, (B, H), (H, 1), l * B * H), h)
            copy_into(view_raw(c_n, (B, H), (H, 1), l * B * H), c)
        ctx.save_for_backward(x, h0, c0, *weights)
        ctx.internal = [(r.out, r.cs, r.act) for r in runs]
        return runs[-1].out, h_n, c_n

    @staticmethod
    def backward(ctx, dout, dh_n, dc_n):
        x, h0, c0, *weights = ctx.saved_tensors
        L = len(weights) // 4
        if is_grad_enabled():                    # create_graph: through the composed layers
            ins = (x, h0, c0, *weights)
            with enable_grad():
                outs = _composed_stack(x, h0, c0, weights)
            return tuple(recorded_grads(ins, outs, (dout, dh_n, dc_n)))
        T, B, F = x._shape
        H = weights[1]._shape[1]
        dev, dt = x._storage.device, x._dtype
        needs = ctx.needs_input_grad
        dh_n, dc_n = (None if g is None else contiguous_raw(g) for g in (dh_n, dc_n))

        def at(t, l):                          # layer l's [B, H] of an [L, B, H] tensor
            return None if t is None else view_raw(t, (B, H), (H, 1), t._offset + l * B * H)
        layers = [LSTMGrads(weights[4 * l + 1], at(h0, l), at(c0, l), False, *ctx.internal[l],
                            at(dh_n, l), at(dc_n, l)) for l in range(L)]
        ins = [x] + [out for out, _, _ in ctx.internal[:-1]]     # each layer's input
        side = side_queue(dev)
        queues = [dev if l % 2 == 0 else side for l in range(L)]
        chunk = chunk_steps(T)
        n = -(-T // chunk)
        top = contiguous_raw(dout) if dout is not None else None
        below = [[None] * n for _ in range(L)]   # [l][k]: layer l's input gradient, chunk k
        grads = [None] * (3 + len(weights))
        finals = [None] * L                      # per layer: (dh0, dc0)
        done = [[None] * n for _ in range(L)]    # [l][k]: a Mark after layer l's chunk k
        packed = [{} for _ in range(L)]          # each layer's w_ih, packed once (as forward)
        queue_wait(side, dev)                    # the side queue starts after what is enqueued
        try:
            # the top layer leads, in reverse time: layer l does chunk k (from the end) while
            # the layer above does chunk k + 1
            for l, k in _wavefront(L, n, True):
                if l < L - 1:
                    queue_wait(queues[l], done[l + 1][k])
                lo, hi = max(0, T - (k + 1) * chunk), T - k * chunk
                with _queue_of(dev, l):
                    g = layers[l]
                    if l == L - 1:
                        g.steps(hi - lo, top)
                    else:
                        g.steps(hi - lo, below[l + 1][k], lo)
                    if l:                        # what the layer below needs of this chunk
                        below[l][k] = _times_w_ih(g.dgates, lo * B, (hi - lo) * B,
                                                  weights[4 * l], packed[l])
                if l:
                    done[l][k] = mark(queues[l])
                if k == n - 1:                   # the layer's last chunk: its gradients, which
                    with _queue_of(dev, l):      # the layer below does not wait for
                        finals[l] = _layer_grads(g, l, ins[l], weights, needs, grads)
        finally:
            join_side_queue(dev)                 # the main queue goes on after the side's work
        del below
        for i, whole in enumerate((1, 2)):              # dh0, dc0
            if needs[whole]:
                grads[whole] = empty_tensor((L, B, H), dt, dev)
                for l in range(L):
                    copy_into(at(grads[whole], l), finals[l][i])
        return tuple(grads)


def _times_w_ih(dgates, row0, rows, w_ih, b_cache=None):
    """dgates[row0:row0 + rows] ([rows, 4H] of [T * B, 4H]) @ w_ih: the gradient of a layer's
    input over those rows, a new contiguous [1, rows, K] tensor. b_cache: gemm's (w_ih packed
    once for a layer's chunks)."""
    G, K = w_ih._shape
    return gemm(view_raw(dgates, (1, rows, G), (0, G, 1), dgates._offset + row0 * G),
                view_raw(w_ih, (1, G, K), (0,) + w_ih._strides, w_ih._offset), b_cache=b_cache)


def _layer_grads(g, l, inp, weights, needs, grads):
    """Layer l's gradients once its steps are done (LSTMGrads g): W_hh's, W_ih's and the biases'
    into grads (the op's argument order), x's for layer 0; returns (dh0, dc0)."""
    T, B, H = g.T, g.B, g.H
    G = 4 * H
    at = 3 + 4 * l                               # w_ih, w_hh, b_ih, b_hh in grads
    # dgates^T packed once for both weight gradients (the compiled LSTM step: 0.94-0.96 of the
    # time, three runs in turns)
    cache = {}
    dgates, grads[at + 1], dh0, dc0 = g.finish(needs[at + 1], cache)
    K = weights[at - 3]._shape[1]
    if needs[at]:
        inp = contiguous_raw(inp)
        dw = gemm(view_raw(dgates, (1, G, T * B), (0, 1, G), dgates._offset),
                  view_raw(inp, (1, T * B, K), (0, K, 1), inp._offset), a_cache=cache)
        grads[at] = view_raw(dw, (G, K), (K, 1), dw._offset)
    if needs[at + 2] or needs[at + 3]:
        db = view_raw(dgates, (T * B, G), (G, 1), dgates._offset).sum(0)
        grads[at + 2] = db if needs[at + 2] else None
        grads[at + 3] = (db.clone() if needs[at + 2] else db) if needs[at + 3] else None
    if l == 0 and needs[0]:
        dx = _times_w_ih(dgates, 0, T * B, weights[0])
        grads[0] = view_raw(dx, (T, B, K), (B * K, K, 1), dx._offset)
    return dh0, dc0


LSTMStack._backward_cls._handles_none = True


def _composed_stack(x, h0, c0, weights):
    """lstm_stack in clgrad ops (recorded): what create_graph differentiates."""
    L = len(weights) // 4
    seq, hs, cs = x, [], []
    for l in range(L):
        w_ih, w_hh, b_ih, b_hh = weights[4 * l:4 * l + 4]
        T, B = seq.shape[0], seq.shape[1]
        proj = (seq.reshape(T * B, seq.shape[2]).matmul(w_ih.t()) + (b_ih + b_hh)) \
            .reshape(T, B, w_ih.shape[0])
        seq, h, c = _composed(proj, w_hh, h0[l], c0[l], False)
        hs.append(h)
        cs.append(c)
    return seq, stack(hs, 0), stack(cs, 0)


def lstm_stack(x, h0, c0, weights):
    """(out, h_n, c_n) of a stack of LSTM layers in one direction, as a wavefront (see the
    module text): x [T, B, F], h0 and c0 [L, B, H], weights the w_ih [4H, F or H], w_hh [4H, H],
    b_ih and b_hh [4H] of each layer in turn (gate order i, f, g, o, as torch's)."""
    return LSTMStack.apply(x, h0, c0, *weights)
