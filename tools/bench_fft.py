"""clgrad.fft timings against torch.fft on the same CPU, measured in one run.

    python tools/bench_fft.py            # every workload, on the default device
    python tools/bench_fft.py --rounds 3 # fewer rounds (noisier)
    python tools/bench_fft.py --device pocl --device intel   # each device in turn

Each workload runs in rounds that alternate clgrad and torch, and the best time of each is kept,
so that a neighbour's load on shared cores hits both alike. torch runs with as many threads as
the OpenCL device has compute units. Ratios are clgrad time / torch time (below 1: clgrad is
faster).

Workloads: a 1-d batch (64 x 4096 complex64 fft, the same of 64 x 4096 float32 through rfft),
lengths that are not powers of two (64 x 1000: mixed radices; 64 x 1009, a prime: Bluestein's),
a 2-d image (512 x 512 complex64 fft2, and rfft2 of a float32 one), and fft + backward of the
1-d batch (for a given output gradient).
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import clgrad  # noqa: E402
import clgrad.fft  # noqa: E402
# the alternating best-of rounds, and the device loop, of the convolution benchmark
from bench_conv import compare, each_device, rounds_and_devices  # noqa: E402


def workloads(torch, rounds):
    rng = np.random.default_rng(0)

    def pair(shape, complex_):
        a = rng.standard_normal(shape).astype(np.float32)
        if complex_:
            a = (a + 1j * rng.standard_normal(shape)).astype(np.complex64)
        return clgrad.tensor(a), torch.tensor(a)

    x, tx = pair((64, 4096), True)
    compare("fft 64 x 4096 complex64", lambda: clgrad.fft.fft(x), lambda: torch.fft.fft(tx),
            rounds)
    r, tr = pair((64, 4096), False)
    compare("rfft 64 x 4096 float32", lambda: clgrad.fft.rfft(r), lambda: torch.fft.rfft(tr),
            rounds)
    b, tb = pair((64, 1000), True)
    compare("fft 64 x 1000 complex64 (radices 8, 5, 5, 5)", lambda: clgrad.fft.fft(b),
            lambda: torch.fft.fft(tb), rounds)
    p, tp = pair((64, 1009), True)
    compare("fft 64 x 1009 complex64 (a prime: Bluestein)", lambda: clgrad.fft.fft(p),
            lambda: torch.fft.fft(tp), rounds)
    im, tim = pair((512, 512), True)
    compare("fft2 512 x 512 complex64", lambda: clgrad.fft.fft2(im),
            lambda: torch.fft.fft2(tim), rounds)
    ri, tri = pair((512, 512), False)
    compare("rfft2 512 x 512 float32", lambda: clgrad.fft.rfft2(ri),
            lambda: torch.fft.rfft2(tri), rounds)
    # forward and backward of the transform alone (a given output gradient)
    xg, txg = x.clone().requires_grad_(), tx.clone().requires_grad_()
    g, tg = pair((64, 4096), True)
    compare("fft 64 x 4096 complex64 fwd+bwd", lambda: clgrad.fft.fft(xg).backward(g),
            lambda: torch.fft.fft(txg).backward(tg), rounds)


def main():
    args = rounds_and_devices()
    for torch in each_device(args.device):
        workloads(torch, args.rounds)


if __name__ == "__main__":
    main()
