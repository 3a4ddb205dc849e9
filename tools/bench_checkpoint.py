"""Peak pool memory of a training step of a deep MLP, without and with activation checkpointing
(clgrad.utils.checkpoint), on the default device (CLGRAD_DEVICE picks another).

    .venv/bin/python tools/bench_checkpoint.py [--depth 32] [--width 512] [--batch 512]

For each mode it prints the peak of clgrad.cl.max_memory_allocated over a forward and backward
(after reset_peak_memory_stats, with the parameters and gradients already allocated), the
memory held before the step, and the step's time.
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import clgrad  # noqa: E402
from clgrad.utils.checkpoint import checkpoint_sequential  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--depth", type=int, default=32)
    ap.add_argument("--width", type=int, default=512)
    ap.add_argument("--batch", type=int, default=512)
    ap.add_argument("--steps", type=int, default=2)
    args = ap.parse_args()
    clgrad.manual_seed(0)
    layers = []
    for _ in range(args.depth):
        layers += [clgrad.nn.Linear(args.width, args.width), clgrad.nn.GELU()]
    net = clgrad.nn.Sequential(*layers)
    opt = clgrad.optim.SGD(net.parameters(), lr=1e-3)
    x = clgrad.randn(args.batch, args.width, requires_grad=True)   # the reentrant mode needs
    # an input that requires grad for the parameters inside to get gradients (as torch)
    dev = x.device
    segments = max(1, int(round(args.depth ** 0.5)))
    modes = [("plain", None), ("checkpoint_sequential reentrant", True),
             ("checkpoint_sequential non-reentrant", False)]
    print(f"device {dev} ({clgrad.cl.get_device_name(dev)}): MLP depth {args.depth}, "
          f"width {args.width}, batch {args.batch}, {segments} segments")
    print(f"{'mode':38s} {'before MiB':>10s} {'peak MiB':>9s} {'peak-before':>12s} {'s/step':>7s}")
    for name, reentrant in modes:
        for step in range(args.steps):
            opt.zero_grad(set_to_none=False)
            clgrad.cl.synchronize(dev)
            before = clgrad.cl.memory_allocated(dev)
            clgrad.cl.reset_peak_memory_stats(dev)
            t0 = time.perf_counter()
            if reentrant is None:
                out = net(x)
            else:
                out = checkpoint_sequential(net, segments, x, use_reentrant=reentrant)
            out.pow(2).mean().backward()
            opt.step()
            del out
            clgrad.cl.synchronize(dev)
            dt = time.perf_counter() - t0
            peak = clgrad.cl.max_memory_allocated(dev)
        mib = 1 / 2 ** 20
        print(f"{name:38s} {before * mib:10.1f} {peak * mib:9.1f} {(peak - before) * mib:12.1f} "
              f"{dt:7.3f}")


if __name__ == "__main__":
    main()
