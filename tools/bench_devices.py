"""GEMM and training workloads on several OpenCL devices, interleaved in one process.

    python tools/bench_devices.py                       # pocl and intel
    python tools/bench_devices.py pocl intel --rounds 8

On a shared machine a neighbour's load hits whichever device runs at that moment; running every
workload on every device in turn, round after round, and keeping each one's best time makes the
ratios between devices meaningful (tools/bench.py --device measures one device after the other).
Workloads: float32 1024 x 1024 matmul; W2, (A @ B).sum() forward and backward at 1024; W3, one
SGD-momentum step of the 784-512-512-10 MLP on a batch of 256; W5, one SGD step of the
conv-conv-pool-linear network on a batch of 32 3x32x32 images (tools/train_bench.py).
"""
import argparse
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import clgrad  # noqa: E402
from clgrad.runtime.device import set_default_device  # noqa: E402
from train_bench import _data, make_models, make_step  # noqa: E402


def timed(fn):
    t0 = time.perf_counter()
    fn()
    clgrad.cl.synchronize()
    return time.perf_counter() - t0


def workloads(rng_seed=0):
    """{name: function} on the default device."""
    rng = np.random.default_rng(rng_seed)
    an = rng.standard_normal((1024, 1024)).astype(np.float32)
    bn = rng.standard_normal((1024, 1024)).astype(np.float32)
    xn, yn = _data(rng, (784,), 10, 256)
    cx, cy = _data(rng, (3, 32, 32), 10, 32)
    A = clgrad.tensor(an, requires_grad=True)
    B = clgrad.tensor(bn, requires_grad=True)

    def mm():
        with clgrad.no_grad():
            A @ B

    def w2():
        A.grad = B.grad = None
        (A @ B).sum().backward()
    clgrad.manual_seed(0)
    mlp, cnn = make_models(clgrad.nn)
    return {"sgemm 1024": mm, "W2 (A@B).sum() fwd+bwd 1024": w2,
            "W3 MLP step, SGD momentum": make_step(clgrad, mlp, "sgd", clgrad.tensor(xn),
                                                   clgrad.tensor(yn)),
            "W5 CNN step, SGD": make_step(clgrad, cnn, "sgd", clgrad.tensor(cx),
                                          clgrad.tensor(cy))}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("devices", nargs="*", default=["pocl", "intel"],
                   help="device specs (as CLGRAD_DEVICE); the first is the reference")
    p.add_argument("--rounds", type=int, default=8)
    args = p.parse_args()
    work = {}
    for spec in args.devices:
        set_default_device(spec)
        work[spec] = workloads()
        for fn in work[spec].values():          # builds and first launches
            fn()
            fn()
        clgrad.cl.synchronize()
    names = list(work[args.devices[0]])
    best = {s: dict.fromkeys(names, float("inf")) for s in args.devices}
    for _ in range(args.rounds):
        for name in names:
            for spec in args.devices:
                set_default_device(spec)
                for _ in range(3):
                    best[spec][name] = min(best[spec][name], timed(work[spec][name]))
    ref = args.devices[0]
    print(f"best of {args.rounds} interleaved rounds of 3 (ms); ratio to {ref}")
    print(f"  {'workload':30s}" + "".join(f"{s:>12s}" for s in args.devices))
    for name in names:
        cols = "".join(f"{best[s][name] * 1e3:12.1f}" for s in args.devices)
        ratios = " ".join(f"{best[s][name] / best[ref][name]:.2f}x" for s in args.devices[1:])
        print(f"  {name:30s}{cols}   {ratios}", flush=True)


if __name__ == "__main__":
    main()
