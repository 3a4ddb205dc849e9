"""Autocast to bfloat16 against float32 for the same training steps, interleaved in one process.

tools/bench.py's training section times the float32 steps, then the autocast ones, each once: on
a machine whose speed drifts between runs their ratio drifts with it. Here each round times
every step once (W3 MLP with Adam, the W5 CNN with SGD, each in float32 and under autocast to
bfloat16, as tools/train_bench.py builds them), and the best of the rounds is kept, so the two
dtypes meet the same machine.

    python tools/bench_amp.py [--rounds 12]
"""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clgrad  # noqa: E402
from train_bench import _data, make_models, make_step  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=12)
    args = ap.parse_args()
    dev = clgrad.runtime.default_device()
    device_type = "cpu" if dev.is_cpu else "cuda"
    rng = np.random.default_rng(0)
    xn, yn = _data(rng, (784,), 10, 256)
    cx, cy = _data(rng, (3, 32, 32), 10, 32)
    steps = {}
    for name, kind, opt, x, y in (("W3 Adam", 0, "adam", xn, yn), ("W5 SGD", 1, "sgd", cx, cy)):
        for amp in (None, clgrad.bfloat16):
            clgrad.manual_seed(0)
            model = make_models(clgrad.nn)[kind]
            steps[(name, amp)] = make_step(clgrad, model, opt, clgrad.tensor(x), clgrad.tensor(y),
                                           amp, device_type)
    for step in steps.values():              # build every kernel first
        step()
        step()
    best = dict.fromkeys(steps, float("inf"))
    for _ in range(args.rounds):
        for key, step in steps.items():
            clgrad.cl.synchronize()
            t = time.perf_counter()
            step()
            clgrad.cl.synchronize()
            best[key] = min(best[key], time.perf_counter() - t)
    print(f"device: {dev.name} ({dev.platform_name}); ms per step, best of {args.rounds} "
          "interleaved rounds")
    print(f"{'step':10} {'float32':>8} {'bf16':>8} {'bf16/f32':>8}")
    for name in ("W3 Adam", "W5 SGD"):
        f32, bf16 = best[(name, None)], best[(name, clgrad.bfloat16)]
        print(f"{name:10} {f32 * 1e3:8.2f} {bf16 * 1e3:8.2f} {bf16 / f32:8.2f}")


if __name__ == "__main__":
    main()
