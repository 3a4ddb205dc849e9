"""Host time of one kernel launch: written by hand through the chokepoint (runtime.kernels.launch)
against the kernel family's launch (KernelFamily.launch: kernel lookup, grid, tensor arguments
expanded), on one device, main-thread CPU time, best of 5 x 2000 launches (tiny launches, so
they go to the driver in bursts; the driver's time is included in both). Then the same two with
the driver's part cut out (the chokepoint's launch_args replaced by a no-op): clgrad's own host
time per launch, the steadier figure on a loaded machine.

    python tools/bench_launch.py            # on CLGRAD_DEVICE / the default device
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import clgrad  # noqa: E402
from clgrad import dtypes  # noqa: E402
from clgrad.kernels.copy import COPY  # noqa: E402
from clgrad.runtime import family, kernels  # noqa: E402
from clgrad.runtime.kernels import get_kernel, grid, launch  # noqa: E402


def main():
    dev = clgrad.runtime.default_device()
    x = clgrad.empty(3)
    k = get_kernel(dev, COPY[dtypes.float32], "iota")

    def by_hand():
        launch(dev, k, *grid(dev, 3), x._storage.buf, x._offset, 0.0, 1.0, 3)

    def by_family():
        COPY.launch(dev, dtypes.float32, "iota", 3, x, 0.0, 1.0, 3)

    def measure(note):
        for f in (by_hand, by_family, by_hand, by_family):
            for _ in range(200):
                f()
            clgrad.cl.synchronize()
            best = 1e9
            for _ in range(5):
                t0 = time.thread_time()
                for _ in range(2000):
                    f()
                clgrad.cl.synchronize()
                best = min(best, (time.thread_time() - t0) / 2000 * 1e6)
            print(f"  {f.__name__:10s} {best:6.2f} us{note}")

    print(f"launch of a 5-argument kernel on cl:{dev.index} {dev.name} ({dev.platform_name})")
    measure("")
    real = kernels.launch_args
    kernels.launch_args = family.launch_args = lambda *a: None
    try:
        measure("  (no driver: clgrad's host time)")
    finally:
        kernels.launch_args = family.launch_args = real


if __name__ == "__main__":
    main()
