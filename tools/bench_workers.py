"""From what size a kernel gets more than one core of a CPU device.

Chains of launches of one synthetic kernel (n work-groups of one work-item, each a fixed run of
independent float16 FMAs, about 0.5 us on a Zen 5 core), in order on one queue as a replay enqueues
them, timed per launch (wall clock, best of 10 chains of 200), with the device's own worker threads
and, on PoCL, again in a child process with one (POCL_MAX_PTHREAD_COUNT=1), and as two chains of
half the length on two queues, enqueued in turns. The ratio one / all is what the other threads add
at that size: 1.0 means the kernel ran on one core; the two queues' column is what a second
independent chain of the same kernels gets.

PoCL's pthread workers sleep on a condition variable whenever no command is ready, and an
in-order queue readies each command only when the one before it completes: every launch wakes
the workers again. On a VM that wake-up can take tens of microseconds, so a chain of small kernels
(an LSTM's recurrent steps, 10-15 us each) runs on the one thread that finished the kernel
before. Runtimes whose workers spin a while before they sleep (Intel's, on TBB) share small
kernels as well.

    python tools/bench_workers.py [--device pocl] [--sizes 8,32,128,1024]
"""
import argparse
import os
import subprocess
import sys
import time
import warnings

import numpy as np
import pyopencl as cl

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import clgrad  # noqa: E402

SOURCE = """__kernel void work(__global float16 *b, int iters) {
    float16 a0 = b[0], a1 = b[1], a2 = b[2], a3 = b[3], a4 = b[4], a5 = b[5], a6 = b[6];
    float16 a7 = b[7], m = b[8];
    for (int i = 0; i < iters; i++) {       /* eight chains: the FMA units' throughput */
        a0 = fma(a0, m, m); a1 = fma(a1, m, m); a2 = fma(a2, m, m); a3 = fma(a3, m, m);
        a4 = fma(a4, m, m); a5 = fma(a5, m, m); a6 = fma(a6, m, m); a7 = fma(a7, m, m);
    }
    b[16 + get_global_id(0)] = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;
}"""
ITERS = 500


def per_launch(sizes, chain=200, rounds=10, two_queues=True):
    """{n: (best us per launch of one chain of n-work-group launches, the same for two chains of
    half the length on two queues, enqueued in turns, or None without two_queues)} on the
    default device."""
    dev = clgrad.runtime.default_device()
    queues = [dev.queue, cl.CommandQueue(dev.context, dev.cl_device)]
    size = 64 * (16 + max(sizes))
    kernels, bufs = [], []          # the buffers held: a kernel argument does not hold one
    for queue in queues:                        # one kernel and buffer per chain
        with warnings.catch_warnings():        # Intel's runtime reports its vectoriser's log
            warnings.simplefilter("ignore", cl.CompilerWarning)
            kernel = cl.Program(dev.context, SOURCE).build().work
        buf = cl.Buffer(dev.context, cl.mem_flags.READ_WRITE, size)
        cl.enqueue_fill_buffer(queue, buf, np.float32(0.5), 0, size)
        kernel.set_args(buf, np.int32(ITERS))
        kernels.append(kernel)
        bufs.append(buf)
    out = {}
    for n in sizes:
        times = [None, None]
        for chains in ((1, 2) if two_queues else (1,)):
            for _ in range(20):                 # the kernel's first runs (its build on PoCL)
                for q, k in zip(queues[:chains], kernels):
                    cl.enqueue_nd_range_kernel(q, k, (n,), (1,))
            for q in queues:
                q.finish()
            best = float("inf")
            for _ in range(rounds):
                t = time.perf_counter()
                for _ in range(chain // chains):
                    for q, k in zip(queues[:chains], kernels):
                        cl.enqueue_nd_range_kernel(q, k, (n,), (1,))
                for q in queues:
                    q.finish()
                best = min(best, (time.perf_counter() - t) / chain * 1e6)
            times[chains - 1] = best
        out[n] = tuple(times)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", help="CLGRAD_DEVICE for the measurement (default: as set)")
    ap.add_argument("--sizes", default="1,8,32,64,128,256,1024",
                    help="work-groups per launch, comma-separated")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.device:
        os.environ["CLGRAD_DEVICE"] = args.device
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.child:                              # one line of numbers for the parent
        print(" ".join(f"{v[0]:.3f}" for v in per_launch(sizes, two_queues=False).values()))
        return
    dev = clgrad.runtime.default_device()
    print(f"cl:{dev.index} {dev.name} ({dev.platform_name}), {dev.compute_units} compute "
          f"units; us per launch, in-order chains of 200, best of 10")
    every = per_launch(sizes)
    one = None
    if dev.is_pocl:
        env = dict(os.environ, POCL_MAX_PTHREAD_COUNT="1", CLGRAD_DEVICE=f"cl:{dev.index}")
        line = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", "--sizes",
                               args.sizes], env=env, capture_output=True, text=True,
                              check=True).stdout.split("\n")[-2]
        one = dict(zip(sizes, map(float, line.split())))
    print(f"{'work-groups':>11} {'all threads':>12} {'one thread':>11} {'one / all':>9} "
          f"{'two queues':>11}")
    for n in sizes:
        single, two = every[n]
        one_cols = f"{one[n]:11.2f} {one[n] / single:9.2f}" if one else f"{'':11} {'':9}"
        print(f"{n:11d} {single:12.2f} {one_cols} {two:11.2f}")


if __name__ == "__main__":
    main()
