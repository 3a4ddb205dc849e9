"""What a wavefront over an LSTM's layers on two queues would save.

A design not built yet (see docs/implementations.md, "Small kernels run on one core under PoCL"):
the forward of a 2-layer LSTM (tools/bench_compile.py's: T=32, batch 16, 64 -> 128) run layer by
layer on one queue, as clgrad runs it, against a wavefront on two queues, where layer 1 computes
chunk c of the steps (its input projection of the chunk, then the chunk's steps) on a second queue
while layer 0 runs chunk c + 1. Both use the fused step kernels (clgrad.kernels.rnn.LSTMSteps) and
the GEMM; their outputs are compared bit for bit. ms per forward, best of --rounds rounds of 3, the
forms timed in turns (bench_compile.interleaved).

    python tools/bench_wavefront.py [--rounds 15] [--chunks 4,8,16]
"""
import argparse
import os
import sys

import numpy as np
import pyopencl as cl

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clgrad  # noqa: E402
from bench_compile import interleaved  # noqa: E402
from clgrad.kernels.rnn import LSTMSteps  # noqa: E402
from clgrad.ops._base import view_raw  # noqa: E402
from clgrad.ops.linalg import gemm  # noqa: E402
from clgrad.tensor import empty_tensor  # noqa: E402

T, B, IN, H = 32, 16, 64, 128
G = 4 * H


class Layers:
    """Two LSTM layers' weights and buffers, and their forward in both forms."""

    def __init__(self):
        self.dev = dev = clgrad.runtime.default_device()
        rng = np.random.default_rng(0)

        def t(*shape):
            return clgrad.tensor(rng.standard_normal(shape).astype(np.float32) * 0.1)
        self.x = t(T * B, IN)
        self.w_ih, self.w_hh, self.bias = [t(G, IN), t(G, H)], [t(G, H), t(G, H)], [t(G), t(G)]
        self.h0, self.c0 = clgrad.zeros(B, H), clgrad.zeros(B, H)
        self.steps = LSTMSteps.for_layer(self.x, H)
        if self.steps is None:
            raise SystemExit(f"{dev}: no fused LSTM steps here (the GEMM is not the packed kind)")
        self.packed = [self.steps.pack_forward(w) for w in self.w_hh]
        new = lambda *s: [empty_tensor(s, clgrad.float32, dev) for _ in range(2)]  # noqa: E731
        self.out, self.cs, self.act = new(T, B, H), new(T, B, H), new(T, B, G)
        self.main = dev.queue
        self.side = cl.CommandQueue(dev.context, dev.cl_device)

    def project(self, layer, inp, row0, rows):
        """inp[row0:row0 + rows] @ w_ih^T + b_ih (+ b_hh), a new (1, rows, 4H) tensor."""
        K = inp._shape[-1]
        w, b = self.w_ih[layer], self.bias[layer]
        return gemm(view_raw(inp, (1, rows, K), (0, K, 1), inp._offset + row0 * K),
                    view_raw(w, (1, K, G), (0, 1, K), w._offset),
                    view_raw(b, (1, rows, G), (0, 0, 1), b._offset), 1)

    def run_steps(self, layer, lo, hi, proj, first):
        out, cs = self.out[layer], self.cs[layer]
        for s in range(lo, hi):
            h, ho, c, co = ((self.h0, 0, self.c0, 0) if s == 0 else
                            (out, (s - 1) * B * H, cs, (s - 1) * B * H))
            self.steps.forward(B, H, h, ho, self.packed[layer], proj, (s - first) * B * G, c,
                               co, out, s * B * H, cs, s * B * H, self.act[layer], s * B * G)

    def out0(self):
        return view_raw(self.out[0], (T * B, H), (H, 1), self.out[0]._offset)

    def layered(self):
        self.run_steps(0, 0, T, self.project(0, self.x, 0, T * B), 0)
        self.run_steps(1, 0, T, self.project(1, self.out0(), 0, T * B), 0)
        self.dev.synchronize()

    def wavefront(self, chunk):
        dev, keep = self.dev, []
        proj0 = self.project(0, self.x, 0, T * B)
        for c in range(T // chunk):
            self.run_steps(0, c * chunk, (c + 1) * chunk, proj0, 0)
            dev.queue                           # held-back launches go to the main queue first
            done = cl.enqueue_marker(self.main)
            dev._queue = self.side              # (the design's private switch, by hand here)
            try:
                cl.enqueue_barrier(self.side, wait_for=[done])
                proj1 = self.project(1, self.out0(), c * chunk * B, chunk * B)
                keep.append(proj1)              # held until both queues are done: no reuse
                self.run_steps(1, c * chunk, (c + 1) * chunk, proj1, c * chunk)
                dev.queue
            finally:
                dev._queue = self.main
        cl.enqueue_barrier(self.main, wait_for=[cl.enqueue_marker(self.side)])
        dev.synchronize()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--chunks", default="4,8,16", help="steps per chunk, comma-separated")
    args = ap.parse_args()
    chunks = [int(c) for c in args.chunks.split(",") if T % int(c) == 0]
    layers = Layers()
    layers.layered()
    ref = layers.out[1].numpy().copy()
    forms = {"layer by layer": layers.layered}
    for c in chunks:
        layers.wavefront(c)
        if not np.array_equal(layers.out[1].numpy(), ref):
            raise SystemExit(f"the wavefront's outputs (chunks of {c}) differ from layer by layer")
        forms[f"wavefront, chunks of {c}"] = lambda c=c: layers.wavefront(c)
    dev = layers.dev
    best = interleaved({k: (fn, dev.synchronize) for k, fn in forms.items()}, args.rounds)
    print(f"cl:{dev.index} {dev.name}: 2-layer LSTM forward, T={T}, batch {B}, {IN} -> {H}; "
          f"ms, best of {args.rounds} rounds of 3 in turns (outputs equal bit for bit)")
    base = best["layer by layer"]
    for k, v in best.items():
        print(f"  {k:24} {v * 1e3:7.3f}  {v / base:5.2f}")


if __name__ == "__main__":
    main()
