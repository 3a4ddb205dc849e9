"""Build every kernel program for a device, so that the first run of a script does not wait for
the compiler (the driver's program cache, or clgrad's binary cache, keeps the results).

    python tools/prebuild.py               # the default device (CLGRAD_DEVICE picks another)
    python tools/prebuild.py --family ew2  # only some families
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import clgrad  # noqa: E402
from clgrad.runtime.kernels import ALL_PROGRAMS, get_kernel  # noqa: E402


def main():
    p = argparse.ArgumentParser(description="build every clgrad kernel for a device")
    p.add_argument("--family", action="append", help="only these template families")
    p.add_argument("--device", default=None, help="cl:N, pocl, nvidia, ...")
    args = p.parse_args()
    dev = clgrad.runtime.get_device(args.device)
    progs = [pr for pr in ALL_PROGRAMS if not args.family or pr.family in args.family]
    if not dev.has_fp64:
        progs = [pr for pr in progs if "f64" not in pr.variant]
    try:
        from tqdm import tqdm
    except ImportError:
        tqdm = None
    total = sum(len(pr.signatures) for pr in progs)
    print(f"building {len(progs)} programs ({total} kernels) for cl:{dev.index} {dev.name}")
    t0 = time.perf_counter()
    bar = tqdm(total=total, unit="kernel") if tqdm else None
    for pr in progs:
        if bar:
            bar.set_description(pr.name)
        for name in pr.signatures:
            get_kernel(dev, pr, name)
            if bar:
                bar.update(1)
        if not bar:
            print(f"  {pr.name}: {len(pr.signatures)} kernels")
    if bar:
        bar.close()
    print(f"done in {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
