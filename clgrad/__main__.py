"""`python -m clgrad`: list the OpenCL devices of every installed implementation with what they
can do, then run a short self-check on each (forward against numpy, a backward pass) with
timings. Arguments name the devices to check (`python -m clgrad pocl intel`); none checks all."""
import sys
import time

import numpy as np
from clgrad.runtime.device import compile_target, NO_DEVICE_HELP


def _fmt_bytes(n):
    return f"{n / 2**30:.1f} GiB" if n >= 2**30 else f"{n / 2**20:.0f} MiB"


def _pocl_build(d):
    """Which PoCL a device is: its release, its LLVM, whose build (pip's wheel or a distribution's
    package) and the CPU it compiles for; two PoCLs can sit side by side (docs/implementations.md)."""
    import re
    llvm = re.search(r"LLVM ([\d.]+)", d.platform.version)
    distro = re.search(r"debian|ubuntu|fedora|suse", d.driver_version, re.I)
    who = "a distribution's package" if distro else "pip's wheel or a local build"
    return (f"PoCL {d.driver_version} ({who}), LLVM {llvm.group(1) if llvm else '?'}, "
            f"compiling for {compile_target(d) or '?'}")


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    # function-level: the clgrad namespace, imported when the command runs
    import clgrad
    devs = clgrad.cl.devices()
    if not devs:
        print(NO_DEVICE_HELP.format(why=""))
        return 1
    print(f"clgrad {clgrad.__version__}: {len(devs)} OpenCL device(s)")
    for d in devs:
        c = d.capabilities()
        print(f"  cl:{d.index}  {c['name']}  [{c['platform']}, {c['type']}, {c['version']}]")
        print(f"        {c['compute_units']} compute units, {_fmt_bytes(c['global_mem_bytes'])} "
              f"memory, {c['local_mem_bytes'] // 1024} KiB local, work-groups up to "
              f"{c['max_work_group_size']}, fp64 {'yes' if c['fp64'] else 'no'}, fp16 "
              f"{'yes' if c['fp16'] else 'no (half storage only)'}")
        if d.is_pocl:
            print(f"        {_pocl_build(d)}")
        if d.unusable:
            print(f"        NOT USABLE HERE: {d.unusable}")
    try:
        default = clgrad.runtime.default_device()
    except clgrad.runtime.device.NoDeviceError as e:
        print(f"default device: none ({e})")
        return 1
    print(f"default device: cl:{default.index}"
          + ("  (CLGRAD_GPU_PATHS=1: every device takes the GPU code paths)"
             if clgrad.runtime.device.gpu_paths_forced() else ""))
    ok = True
    # `python -m clgrad intel pocl` checks only those devices (names as CLGRAD_DEVICE takes them)
    checked = [clgrad.runtime.get_device(spec) for spec in argv] if argv else devs
    if all(dev.unusable for dev in checked):
        print("\nno device that can build kernels here was named: nothing checked")
        return 1
    for dev in checked:
        if dev.unusable:
            # a platform limit, reported above, not a wrong result: the other devices are checked
            print(f"\nself-check on cl:{dev.index} ({dev.name}, {dev.platform_name}): not run, "
                  "the device cannot build kernels on this machine (see above)")
            continue
        ok &= self_check(clgrad, dev)
    print("\nall good" if ok else "\nSOME CHECKS FAILED")
    return 0 if ok else 1


def self_check(clgrad, dev):
    """Forward against numpy and one backward pass on `dev`, with first-use and warm timings.
    A simulator gets small sizes and no repeats."""
    n, reps = (32, 0) if dev.is_simulator else (256, 10)
    print(f"\nself-check on cl:{dev.index} ({dev.name}, {dev.platform_name}):")
    ok = True
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n)).astype(np.float32)
    b = rng.standard_normal((n, n)).astype(np.float32)

    def check(name, fn, ref, tol=1e-4):
        nonlocal ok
        t0 = time.perf_counter()
        out = fn()
        first = time.perf_counter() - t0
        t0 = time.perf_counter()
        for _ in range(reps):
            out = fn()
        warm = (time.perf_counter() - t0) / max(reps, 1)
        err = float(np.max(np.abs(np.asarray(out, dtype=np.float64) - ref)))
        good = err <= tol * max(1.0, float(np.max(np.abs(ref))))
        ok &= good
        then = f"then {warm * 1e3:7.3f} ms" if reps else " " * 16
        print(f"  {'ok  ' if good else 'FAIL'} {name:34s} first use {first * 1e3:7.1f} ms, "
              f"{then}   (max error {err:.1e})")

    x, y = clgrad.tensor(a, device=dev), clgrad.tensor(b, device=dev)
    check("elementwise (x * y + 1).tanh()", lambda: ((x * y + 1).tanh()).numpy(),
          np.tanh(a * b + 1))
    check("reduction x.sum(1)", lambda: x.sum(1).numpy(), a.sum(1, dtype=np.float64))
    check("matmul x @ y", lambda: (x @ y).numpy(), a.astype(np.float64) @ b)
    w = clgrad.tensor(a, requires_grad=True, device=dev)

    def backward():
        w.grad = None
        loss = ((w * y).sigmoid() * 2).sum()
        loss.backward()
        return w.grad.numpy()
    s = 1 / (1 + np.exp(-(a * b)))
    check("backward of ((w * y).sigmoid() * 2).sum()", backward, 2 * s * (1 - s) * b)
    return ok


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
