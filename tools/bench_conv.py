"""Convolution and pooling timings against torch on the same CPU, measured in one run.

    python tools/bench_conv.py            # every workload
    python tools/bench_conv.py --rounds 3 # fewer rounds (noisier)
    python tools/bench_conv.py --device pocl --device intel   # each device in turn

Each workload runs in rounds that alternate clgrad and torch, and the best time of each is kept,
so that a neighbour's load on shared cores hits both alike. torch runs with as many threads as
the OpenCL device has compute units. Ratios are clgrad time / torch time (below 1: clgrad is
faster).

Workloads: conv 3->32 and 32->64 (3x3, padding 1) on a batch of 32 32x32 images, forward and
forward + backward (input, weight and bias gradients for the second, weight and bias for the
first, as in training); max_pool2d 2x2 on 32x64x32x32; and W5, one training step of
conv(3->32) ReLU conv(32->64) ReLU global-mean-pool linear(64->10) cross-entropy backward SGD.
"""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import clgrad  # noqa: E402
import clgrad.nn.functional as F  # noqa: E402


def timed(fn, sync):
    t0 = time.perf_counter()
    fn()
    sync()
    return time.perf_counter() - t0


def compare(name, ours, theirs, rounds, repeat=3):
    """Best of rounds x repeat runs of each, alternating."""
    ours()
    clgrad.cl.synchronize()
    theirs()
    a = b = float("inf")
    for _ in range(rounds):
        for _ in range(repeat):
            a = min(a, timed(ours, clgrad.cl.synchronize))
        for _ in range(repeat):
            b = min(b, timed(theirs, lambda: None))
    print(f"  {name:44s} {a * 1e3:8.2f} ms  torch {b * 1e3:8.2f} ms  ratio {a / b:5.2f}x",
          flush=True)
    return a, b


def conv_workloads(torch, rounds):
    rng = np.random.default_rng(0)
    tF = torch.nn.functional
    for cin, cout, grad_input in ((3, 32, False), (32, 64, True)):
        xn = rng.standard_normal((32, cin, 32, 32)).astype(np.float32)
        wn = (rng.standard_normal((cout, cin, 3, 3)) * 0.1).astype(np.float32)
        bn = rng.standard_normal(cout).astype(np.float32)
        gn = rng.standard_normal((32, cout, 32, 32)).astype(np.float32)
        x = clgrad.tensor(xn, requires_grad=grad_input)
        w = clgrad.tensor(wn, requires_grad=True)
        b = clgrad.tensor(bn, requires_grad=True)
        g = clgrad.tensor(gn)
        tx = torch.tensor(xn, requires_grad=grad_input)
        tw = torch.tensor(wn, requires_grad=True)
        tb = torch.tensor(bn, requires_grad=True)
        tg = torch.tensor(gn)

        def fwd():
            with clgrad.no_grad():
                F.conv2d(x, w, b, padding=1)

        def tfwd():
            with torch.no_grad():
                tF.conv2d(tx, tw, tb, padding=1)

        def fb():
            F.conv2d(x, w, b, padding=1).backward(g)

        def tfb():
            tF.conv2d(tx, tw, tb, padding=1).backward(tg)
        tag = f"conv {cin}->{cout} 3x3 p1, 32x{cin}x32x32"
        compare(tag + " fwd", fwd, tfwd, rounds)
        compare(tag + " fwd+bwd", fb, tfb, rounds)


def pool_workloads(torch, rounds):
    rng = np.random.default_rng(1)
    xn = rng.standard_normal((32, 64, 32, 32)).astype(np.float32)
    gn = rng.standard_normal((32, 64, 16, 16)).astype(np.float32)
    x, g = clgrad.tensor(xn, requires_grad=True), clgrad.tensor(gn)
    tx, tg = torch.tensor(xn, requires_grad=True), torch.tensor(gn)

    def fwd():
        with clgrad.no_grad():
            F.max_pool2d(x, 2)

    def tfwd():
        with torch.no_grad():
            torch.nn.functional.max_pool2d(tx, 2)

    def fb():
        F.max_pool2d(x, 2).backward(g)

    def tfb():
        torch.nn.functional.max_pool2d(tx, 2).backward(tg)
    compare("max_pool2d 2x2, 32x64x32x32 fwd", fwd, tfwd, rounds)
    compare("max_pool2d 2x2, 32x64x32x32 fwd+bwd", fb, tfb, rounds)


def w5(torch, rounds):
    rng = np.random.default_rng(2)
    xn = rng.standard_normal((32, 3, 32, 32)).astype(np.float32)
    yn = rng.integers(0, 10, 32)

    def build(lib):
        lib.manual_seed(0)
        nn = lib.nn
        model = nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(),
                              nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(),
                              nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10))
        opt = lib.optim.SGD(model.parameters(), lr=0.01)
        x, y = lib.tensor(xn), lib.tensor(yn)

        def step():
            opt.zero_grad()
            loss = lib.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
        return step
    compare("W5 conv net training step, batch 32", build(clgrad), build(torch), rounds)


def each_device(specs):
    """For each device spec (None: the default device): make it the default, give torch as many
    threads as it has compute units, print what is compared, and yield torch."""
    import torch
    for spec in specs or [None]:
        if spec is not None:
            clgrad.runtime.device.set_default_device(spec)
        dev = clgrad.runtime.device.default_device()
        torch.set_num_threads(dev.compute_units)
        print(f"device: {dev.name} ({dev.platform_name}), torch {torch.__version__} with "
              f"{torch.get_num_threads()} threads")
        yield torch


def rounds_and_devices():
    """The command line of the benchmarks that alternate rounds against torch (this one,
    bench_fft, bench_attention): --rounds N and --device SPEC (repeatable)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--device", action="append", metavar="SPEC",
                    help="device to measure (pocl, intel, cl:N...); repeat it for several")
    return ap.parse_args()


def main():
    args = rounds_and_devices()
    for torch in each_device(args.device):
        conv_workloads(torch, args.rounds)
        pool_workloads(torch, args.rounds)
        w5(torch, args.rounds)


if __name__ == "__main__":
    main()
