"""clgrad benchmarks: one table measured in one run on one device, with ratios.

    python tools/bench.py                 # the default device (CLGRAD_DEVICE picks another)
    python tools/bench.py --quick         # smaller repeat counts
    python tools/bench.py --only kernels  # one section: kernels, autograd, training, compiled
    python tools/bench.py --device pocl --device intel   # the table for each, then side by side

Memory-bound kernels are reported as GB/s and as a fraction of the device's ceiling, which is the
GB/s of clgrad's own copy kernel on the same buffers. Where torch (CPU) or tinygrad (on the same
OpenCL device) is installed, the same workloads run there in the same process and the ratio is
printed (clgrad time / other time: below 1 means clgrad is faster). With several --device, the
table is printed for each device in turn, then clgrad's figures side by side with their ratio to
the first device's.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import clgrad  # noqa: E402


def best_of(fn, repeat, sync):
    fn()
    sync()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - t0)
    return min(times)


def sync_cl():
    clgrad.cl.synchronize()


def nothing():
    pass


class Table:
    def __init__(self):
        self.rows = []

    def add(self, name, value, unit, note="", other=None, other_name="", ratio=None):
        self.rows.append((name, value, unit, note, other, other_name, ratio))
        self.print_row(self.rows[-1])

    @staticmethod
    def print_row(r):
        name, value, unit, note, other, other_name, ratio = r
        o = f"{other:10.2f} {other_name:9s}" if other is not None else " " * 20
        rt = f"{ratio:7.2f}x" if ratio is not None else ""
        print(f"  {name:46s} {value:10.2f} {unit:8s} {note:14s} {o} {rt}", flush=True)


def try_import_torch():
    from bench_compile import steady_malloc
    steady_malloc()                 # torch at its best whatever ran before (see there)
    try:
        import torch
        torch.set_num_threads(os.cpu_count() or 1)
        return torch
    except Exception:
        return None


def try_import_tinygrad():
    """tinygrad on its OpenCL backend (GPU=1), on the same platform as clgrad: it loads the
    system's libOpenCL, so point that loader at the PoCL library pyopencl ships when no ICD is
    registered system-wide."""
    os.environ.setdefault("GPU", "1")
    import glob
    if not glob.glob("/etc/OpenCL/vendors/*.icd") and "OCL_ICD_VENDORS" not in os.environ:
        import pyopencl
        libs = glob.glob(os.path.join(os.path.dirname(pyopencl.__file__), ".libs", "libpocl*.so*"))
        if libs:
            d = tempfile.mkdtemp()
            with open(os.path.join(d, "pocl.icd"), "w") as f:
                f.write(libs[0] + "\n")
            os.environ["OCL_ICD_VENDORS"] = d
    try:
        from tinygrad import Tensor as TTensor, Device  # noqa: F401
        TTensor([1.0]).realize()
        return TTensor
    except Exception:
        return None


# ---------------------------------------------------------------------------------------------
def kernels_section(table, args, torch):
    n = 16 * 1024 * 1024 if not args.quick else 4 * 1024 * 1024
    rep = 10 if not args.quick else 4
    a = clgrad.randn(n)
    b = clgrad.randn(n)
    mb = n * 4
    print(f"\nKernels on {n // (1024 * 1024)}M float32 (GB/s; % of the copy kernel's GB/s)")
    t_copy = best_of(lambda: a.clone(), rep, sync_cl)
    ceiling = 2 * mb / t_copy / 1e9
    tt = None
    if torch is not None:
        ta, tb = torch.randn(n), torch.randn(n)
        tt = best_of(lambda: ta.clone(), rep, nothing)
    table.add("copy (the device's ceiling)", ceiling, "GB/s", "100%",
              2 * mb / tt / 1e9 if tt else None, "torch GB/s", t_copy / tt if tt else None)
    for name, fn, tfn, nbytes in [
        ("add x + y", lambda: a + b, (lambda: ta + tb) if torch else None, 3 * mb),
        ("mul x * y", lambda: a * b, (lambda: ta * tb) if torch else None, 3 * mb),
        ("exp x.exp()", lambda: a.exp(), (lambda: ta.exp()) if torch else None, 2 * mb),
        ("sum x.sum()", lambda: a.sum(), (lambda: ta.sum()) if torch else None, mb),
    ]:
        t = best_of(fn, rep, sync_cl)
        gbs = nbytes / t / 1e9
        tt = best_of(tfn, rep, nothing) if tfn else None
        table.add(name, gbs, "GB/s", f"{100 * gbs / ceiling:5.1f}% ceil",
                  nbytes / tt / 1e9 if tt else None, "torch GB/s", t / tt if tt else None)
    for dt, tdt in ((clgrad.float16, "float16"), (clgrad.bfloat16, "bfloat16")):
        h1, h2 = a.to(dt), b.to(dt)
        t = best_of(lambda: h1 + h2, rep, sync_cl)
        gbs = 3 * n * 2 / t / 1e9
        tt = None
        if torch is not None:
            th1, th2 = ta.to(getattr(torch, tdt)), tb.to(getattr(torch, tdt))
            tt = best_of(lambda: th1 + th2, rep, nothing)
        table.add(f"{tdt} add", gbs, "GB/s", f"{100 * gbs / ceiling:5.1f}% ceil",
                  3 * n * 2 / tt / 1e9 if tt else None, "torch GB/s", t / tt if tt else None)
    del a, b
    if hasattr(clgrad, "matmul") and hasattr(clgrad.Tensor, "__matmul__"):
        print("\nSGEMM (GFLOP/s)")
        for m in (512, 1024, 2048):
            x, y = clgrad.randn(m, m), clgrad.randn(m, m)
            r = 3 if m == 2048 else 5
            try:
                t = best_of(lambda: x @ y, r, sync_cl)
            except NotImplementedError:
                break
            gf = 2 * m ** 3 / t / 1e9
            tt = None
            if torch is not None:
                tx, ty = torch.randn(m, m), torch.randn(m, m)
                tt = best_of(lambda: tx @ ty, r, nothing)
            else:
                nx, ny = np.random.rand(m, m).astype(np.float32), np.random.rand(m, m).astype(
                    np.float32)
                tt = best_of(lambda: nx @ ny, r, nothing)
            table.add(f"sgemm {m}x{m}", gf, "GFLOP/s", "",
                      2 * m ** 3 / tt / 1e9, "torch" if torch else "numpy", t / tt)
    print("\nPer-op overhead (chain of 200 ops on 16-element tensors, no grad)")
    x = clgrad.randn(16)

    def chain():
        y = x
        for _ in range(100):
            y = y * 1.0001 + 0.0001
        return y
    t = best_of(chain, rep, sync_cl)
    tt = None
    if torch is not None:
        tx = torch.randn(16)

        def tchain():
            y = tx
            for _ in range(100):
                y = y * 1.0001 + 0.0001
            return y
        tt = best_of(tchain, rep, nothing)
    table.add("tiny op, forward", t / 200 * 1e6, "us/op", "",
              tt / 200 * 1e6 if tt else None, "torch us", t / tt if tt else None)
    first_use(table)


FIRST_USE = r"""
import time, clgrad
x = clgrad.ones(64); clgrad.cl.synchronize()
cases = [("copy (cast)", lambda: x.half()), ("ew1 (exp)", lambda: x.exp()),
         ("ew2 (add)", lambda: x + x), ("ew3 (where)", lambda: clgrad.where(x > 0, x, x)),
         ("reduce (sum)", lambda: x.sum()), ("random (rand)", lambda: clgrad.rand(64))]
if hasattr(clgrad.Tensor, "__matmul__"):
    m = clgrad.ones(8, 8)
    cases.append(("gemm (matmul)", lambda: m @ m))
if hasattr(clgrad, "softmax"):
    cases.append(("softmax", lambda: clgrad.softmax(x, 0)))
if hasattr(clgrad, "cumsum"):
    cases.append(("scan (cumsum)", lambda: clgrad.cumsum(x, 0)))
if hasattr(clgrad, "index_select"):
    i = clgrad.tensor([0, 3])
    cases.append(("index (index_select)", lambda: clgrad.index_select(x, 0, i)))
for name, fn in cases:
    t = time.perf_counter(); fn(); clgrad.cl.synchronize()
    print(f"{name}\t{time.perf_counter() - t}")
"""


def first_use(table):
    """First use of each kernel family in a fresh process: with empty caches, then with the
    caches the first process filled (PoCL's program cache, or clgrad's binary cache)."""
    with tempfile.TemporaryDirectory() as d:
        env = dict(os.environ, CLGRAD_CACHE_DIR=os.path.join(d, "clgrad"),
                   POCL_CACHE_DIR=os.path.join(d, "pocl"),
                   PYTHONPATH=os.path.dirname(HERE) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        if DEVICE_SPEC is not None:
            # by name: the order of OpenCL devices (cl:N) may differ in the new process
            env["CLGRAD_DEVICE"] = DEVICE_SPEC
        runs = []
        for _ in range(2):
            r = subprocess.run([sys.executable, "-c", FIRST_USE], env=env, capture_output=True,
                               text=True)
            runs.append([(ln.split("\t")[0], float(ln.split("\t")[1]))
                         for ln in r.stdout.strip().splitlines()])
    print("\nFirst use of each kernel family in a new process (ms): cold caches, then warm")
    for (name, cold), (_, warm) in zip(*runs):
        table.add(f"first use {name}", cold * 1e3, "ms cold", f"{warm * 1e3:7.1f} ms warm")


# ---------------------------------------------------------------------------------------------
def autograd_section(table, args, torch, tinygrad):
    rep = 5 if not args.quick else 2
    n = 4 * 1024 * 1024
    print("\nAutograd workloads (forward + backward, ms; ratio = clgrad / other)")
    rng = np.random.default_rng(0)
    xn = rng.standard_normal(n).astype(np.float32)
    wn = rng.standard_normal(n).astype(np.float32)
    bn = rng.standard_normal(n).astype(np.float32)
    x = clgrad.tensor(xn)
    w = clgrad.tensor(wn, requires_grad=True)
    b = clgrad.tensor(bn, requires_grad=True)

    def w1():
        w.grad = b.grad = None
        loss = ((x * w + b).tanh() * 0.5).sum()
        loss.backward()
    t = best_of(w1, rep, sync_cl)
    others = []
    if torch is not None:
        tx, tw, tb = (torch.tensor(v) for v in (xn, wn, bn))
        tw.requires_grad_()
        tb.requires_grad_()

        def tw1():
            tw.grad = tb.grad = None
            ((tx * tw + tb).tanh() * 0.5).sum().backward()
        others.append(("torch", best_of(tw1, rep, nothing)))
    if tinygrad is not None:
        others.append(("tinygrad", tinygrad_w1(tinygrad, xn, wn, bn, rep)))
    _rows(table, "W1 ((x*w+b).tanh()*0.5).sum(), 4M", t * 1e3, "ms", others, 1e3)

    if hasattr(clgrad.Tensor, "__matmul__"):
        m = 1024
        an = rng.standard_normal((m, m)).astype(np.float32)
        bn2 = rng.standard_normal((m, m)).astype(np.float32)
        A = clgrad.tensor(an, requires_grad=True)
        B = clgrad.tensor(bn2, requires_grad=True)

        def w2():
            A.grad = B.grad = None
            (A @ B).sum().backward()
        try:
            t = best_of(w2, rep, sync_cl)
            others = []
            if torch is not None:
                tA, tB = torch.tensor(an, requires_grad=True), torch.tensor(bn2, requires_grad=True)

                def tw2():
                    tA.grad = tB.grad = None
                    (tA @ tB).sum().backward()
                others.append(("torch", best_of(tw2, rep, nothing)))
            if tinygrad is not None:
                others.append(("tinygrad", tinygrad_w2(tinygrad, an, bn2, rep)))
            _rows(table, "W2 (A@B).sum() 1024x1024", t * 1e3, "ms", others, 1e3)
        except NotImplementedError:
            pass

    v = clgrad.randn(16, requires_grad=True)

    def w4():
        v.grad = None
        y = v
        for _ in range(200):
            y = y * 1.0001 + 0.0001
        y.sum().backward()
    t = best_of(w4, rep * 2, sync_cl)
    others = []
    if torch is not None:
        tv = torch.randn(16, requires_grad=True)

        def tw4():
            tv.grad = None
            y = tv
            for _ in range(200):
                y = y * 1.0001 + 0.0001
            y.sum().backward()
        others.append(("torch", best_of(tw4, rep * 2, nothing)))
    if tinygrad is not None:
        others.append(("tinygrad", tinygrad_w4(tinygrad, rep)))
    _rows(table, "W4 200 chained ops on 16 elements + backward", t / 400 * 1e6, "us/op",
          others, 1e6 / 400)


def _rows(table, name, value, unit, others, scale):
    if not others:
        table.add(name, value, unit)
        return
    for i, (oname, ot) in enumerate(others):
        table.add(name if i == 0 else "", value if i == 0 else value, unit if i == 0 else unit,
                  "", ot * scale, oname, value / (ot * scale))


def tinygrad_w1(TT, xn, wn, bn, rep):
    x = TT(xn)
    w = TT(wn, requires_grad=True)
    b = TT(bn, requires_grad=True)

    def f():
        w.grad = b.grad = None
        loss = ((x * w + b).tanh() * 0.5).sum()
        loss.backward()
        w.grad.realize()
        b.grad.realize()
    return best_of(f, rep, _tg_sync(TT))


def tinygrad_w2(TT, an, bn, rep):
    A = TT(an, requires_grad=True)
    B = TT(bn, requires_grad=True)

    def f():
        A.grad = B.grad = None
        (A @ B).sum().backward()
        A.grad.realize()
        B.grad.realize()
    return best_of(f, rep, _tg_sync(TT))


def tinygrad_w4(TT, rep):
    v = TT(np.random.randn(16).astype(np.float32), requires_grad=True)

    def f():
        v.grad = None
        y = v
        for _ in range(200):
            y = y * 1.0001 + 0.0001
        y.sum().backward()
        v.grad.realize()
    return best_of(f, rep, _tg_sync(TT))


def _tg_sync(TT):
    from tinygrad import Device

    def s():
        Device[Device.DEFAULT].synchronize()
    return s


SECTIONS = {"kernels": kernels_section, "autograd": autograd_section}


DEVICE_SPEC = None          # the --device being measured, for the first-use subprocesses


def run_device(args, torch, tinygrad):
    """The whole table on the default device; returns its rows."""
    dev = clgrad.runtime.default_device()
    print(f"\nclgrad {clgrad.__version__} on cl:{dev.index} {dev.name} ({dev.platform_name}), "
          f"{dev.compute_units} compute units, {'CPU' if dev.cpu_paths else 'GPU'} code paths")
    print(f"compared with: {'torch ' + torch.__version__ + ' on the CPU' if torch else 'no torch'}"
          f"{', tinygrad on its default device' if tinygrad else ', no tinygrad'}")
    table = Table()
    if args.only in (None, "kernels"):
        kernels_section(table, args, torch)
        from seq_bench import transformer_ops_section
        transformer_ops_section(table, args, torch)
    if args.only in (None, "autograd"):
        autograd_section(table, args, torch, tinygrad)
    if args.only in (None, "training"):
        try:
            from train_bench import training_section
        except ImportError:
            training_section = None
        if training_section is not None:
            training_section(table, args, torch, tinygrad)
        from seq_bench import gpt_section, sdpa_section, sequence_section
        sequence_section(table, args, torch, tinygrad)
        gpt_section(table, args, torch)
        sdpa_section(table, args, torch)
    if args.only in (None, "compiled"):
        from bench_compile import compiled_section
        compiled_section(table, args, torch)
    return table.rows


def side_by_side(names, tables):
    """clgrad's figure of every row per device, with its ratio to the first device's."""
    print("\nclgrad per device (ratio to the first device: for times above 1 is slower, for "
          "GB/s and GFLOP/s below 1 is slower)")
    print(f"  {'':46s} " + " ".join(f"{n[:20]:>20s}" for n in names))
    values, order = [], []
    for rows in tables:
        found, label = {}, None
        for name, value, unit, *_ in rows:
            label = name or label          # a workload's rows after the first have no name
            found.setdefault((label, unit), value)
            if (label, unit) not in order:
                order.append((label, unit))
        values.append(found)
    for key in order:
        ref = values[0].get(key)
        cols = []
        for found in values:
            x = found.get(key)
            if x is None:
                cols.append(" " * 20)
            else:
                cols.append(f"{x:10.2f} {x / ref:6.2f}x   " if ref else f"{x:10.2f}{'':10s}")
        print(f"  {key[0][:46]:46s} " + " ".join(cols) + f" {key[1]}", flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--only", choices=sorted(SECTIONS) + ["training", "compiled"])
    p.add_argument("--device", action="append", metavar="SPEC",
                   help="device to measure (pocl, intel, cl:N...; as CLGRAD_DEVICE); repeat it "
                        "for several (default: the default device)")
    args = p.parse_args()
    tinygrad = try_import_tinygrad()       # before clgrad touches OpenCL: it may set the loader up
    torch = try_import_torch()
    tables, names = [], []
    global DEVICE_SPEC
    for spec in args.device or [None]:
        if spec is not None:
            clgrad.runtime.device.set_default_device(spec)
            DEVICE_SPEC = spec
        dev = clgrad.runtime.default_device()
        names.append(spec or dev.name)
        tables.append(run_device(args, torch, tinygrad))
    if len(tables) > 1:
        side_by_side(names, tables)


if __name__ == "__main__":
    main()
