"""What running an LSTM's layers as a wavefront on two queues saves (ops/lstm_stack.py).

The 2-layer LSTM of tools/bench_compile.py (T=32, batch 16, 64 -> 128): its forward, and its
forward with backward, each recorded once (runtime/recording.py) and replayed, layer by layer
(clgrad.ops.lstm_stack.WAVEFRONT = False) and as the wavefront (True) with chunks of --chunks
steps. The outputs and gradients of the forms are compared bit for bit first. ms per replay,
best of --rounds rounds of 3, the forms timed in turns (bench_compile.interleaved).

    python tools/bench_wavefront.py [--rounds 15] [--chunks 8,16]
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clgrad  # noqa: E402
from bench_compile import interleaved  # noqa: E402
from clgrad.ops import lstm_stack  # noqa: E402
from clgrad.runtime.recording import Recording  # noqa: E402

T, B, IN, H = 32, 16, 64, 128


def recorded(model, x, chunk, backward):
    """A Recording of model(x) (and of the backward of its output's sum), made with the
    wavefront in chunks of `chunk` steps (None: layer by layer), and what it computes."""
    lstm_stack.WAVEFRONT = chunk is not None
    real = lstm_stack.chunk_steps
    lstm_stack.chunk_steps = (lambda n: chunk) if chunk else real

    def run():
        x.grad = None
        model.zero_grad()
        with clgrad.set_grad_enabled(backward):
            out, (h, c) = model(x)
            if backward:
                (out.square().sum() + h.sum() + c.sum()).backward()
        return [out.detach()] + ([x.grad] + [p.grad for p in model.parameters()]
                                 if backward else [])
    try:
        run()                                  # kernels built, pool warm
        rec = Recording()
        with rec:
            got = run()
    finally:
        lstm_stack.chunk_steps = real
        lstm_stack.WAVEFRONT = None
    clgrad.cl.synchronize()
    rec.replay()
    return rec, [t.numpy().copy() for t in got]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--chunks", default="8,16", help="steps per chunk, comma-separated")
    args = ap.parse_args()
    dev = clgrad.runtime.default_device()
    clgrad.manual_seed(0)
    model = clgrad.nn.LSTM(IN, H, num_layers=2)
    rng = np.random.default_rng(0)
    x = clgrad.tensor(rng.standard_normal((T, B, IN)).astype(np.float32), requires_grad=True)
    chunks = [None] + [int(c) for c in args.chunks.split(",")]
    forms, keep = {}, []
    for backward in (False, True):
        ref = None
        for chunk in chunks:
            rec, got = recorded(model, x, chunk, backward)
            if ref is None:
                ref = got
            elif not all(np.array_equal(a, b) for a, b in zip(got, ref)):
                raise SystemExit(f"the wavefront (chunks of {chunk}) differs from layer by layer")
            name = ("forward + backward" if backward else "forward") + \
                (f", wavefront in chunks of {chunk}" if chunk else ", layer by layer")
            forms[name] = (rec.replay, clgrad.cl.synchronize)
            keep.append(rec)
    best = interleaved(forms, args.rounds)
    print(f"cl:{dev.index} {dev.name}: 2-layer LSTM, T={T}, batch {B}, {IN} -> {H}; ms per "
          f"replay, best of {args.rounds} rounds of 3 in turns (results equal bit for bit)")
    base = {}
    for k, v in best.items():
        what = k.split(",")[0]
        base.setdefault(what, v)
        print(f"  {k:45} {v * 1e3:7.3f}  {v / base[what]:5.2f}")


if __name__ == "__main__":
    main()
