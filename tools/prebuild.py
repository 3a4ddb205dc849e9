"""Build every kernel for a device, so that the first run of a script does not wait for the
compiler (the driver's program cache, or clgrad's binary cache, keeps the results). Kernels are
built in the units that a script would build them in (each kernel alone, or the whole program:
`Program.unit_key`), so what is prebuilt is what scripts look up.

    python tools/prebuild.py               # the default device (CLGRAD_DEVICE picks another)
    python tools/prebuild.py --family ew2  # only some families
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import clgrad  # noqa: E402
from clgrad.runtime.kernels import ALL_PROGRAMS, built_kernels, get_kernel  # noqa: E402


def main():
    p = argparse.ArgumentParser(description="build every clgrad kernel for a device")
    p.add_argument("--family", action="append", help="only these template families")
    p.add_argument("--device", default=None, help="cl:N, pocl, intel, nvidia, ...")
    args = p.parse_args()
    dev = clgrad.runtime.get_device(args.device)
    progs = [pr for pr in ALL_PROGRAMS if not args.family or pr.family in args.family]
    if not dev.has_fp64:
        progs = [pr for pr in progs if "f64" not in pr.variant]
    units = []                          # (program, unit key, its kernels)
    for pr in progs:
        keys = {}
        for name in pr.signatures:
            keys.setdefault(pr.unit_key(dev, name), []).append(name)
        units += [(pr, key, names) for key, names in keys.items()]
    total = sum(len(names) for _, _, names in units)
    print(f"building {total} kernels of {len(progs)} programs in {len(units)} units for "
          f"cl:{dev.index} {dev.name}")
    try:
        from tqdm import tqdm
        bar = tqdm(units, unit="unit", smoothing=0.1)
    except ImportError:
        bar = None
    t0 = time.perf_counter()
    for i, (pr, key, names) in enumerate(bar if bar is not None else units):
        if bar is not None:
            bar.set_description(pr.unit(key).name[:40])
        elif i % 50 == 0:
            print(f"  {i}/{len(units)} units, {time.perf_counter() - t0:.0f} s")
        built = built_kernels(pr.build(dev, key))
        for name in names:
            if name in built:          # not those that the build options leave out (#ifdef)
                get_kernel(dev, pr, name)
    print(f"done in {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
