"""Compiled steps against eager (tools/bench.py's "compiled" section, or run alone):

W4   200 chained elementwise ops on 16 elements + backward
W3   784-512-512-10 ReLU MLP, batch 256, cross-entropy, SGD momentum / Adam
W5   conv-conv-pool-linear CNN, batch 32 of 3x32x32, SGD
GPT  tools/train_gpt.py's model (4 layers x 128, T=128, batch 8), AdamW
LSTM 2-layer LSTM 64 -> 128 over 32 steps, batch 16, linear head, Adam
LSTM item  the same step returning loss.item(): a host read that is the return value, which a
     replay makes again (torch.compile breaks its graph there)

For each: ms per step of clgrad eager, clgrad compiled (clgrad.compile of the whole step), torch
eager and torch.compile (inductor) of the same step on this CPU (on CUDA when clgrad runs on a GPU
and torch has CUDA), timed in turns (each round gives each of the four an untimed call and three
timed ones; best of all), so that the machine's drift hits all four alike (see interleaved); then
the step's kernel launches, the host time per launch of a replay (best of 10; none for a replay
that reads a value, which waits for the device), and the record time (the first compiled call
that records; its kernels are built already by the warm-up).

With --kernels, each row is followed by the profiler's table of one compiled step's kernels by
device time (on a GPU, where its own time is most of a compiled step: docs/implementations.md).

    python tools/bench_compile.py [--quick] [--only W3,GPT] [--no-torch-compile] [--kernels]
"""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clgrad  # noqa: E402


def best(fn, rep, sync):
    fn()
    sync()
    times = []
    for _ in range(rep):
        t = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - t)
    return min(times)


def interleaved(steps, rep, inner=3):
    """{name: best seconds} of steps {name: (step, sync)}, timed in turns: `rep` rounds, each
    giving every step (in reverse order every other round) one untimed call, then `inner` timed
    ones. The machine's speed drifts by 20-80% over seconds on shared cores: timed one after
    another, each step would get its own share of the drift and their ratio would carry it,
    while in turns they share it. The untimed call lets what ran before settle (torch's OpenMP
    threads spin for a while after its work, PoCL's after theirs) and leaves the step's
    threads awake and its data in the caches, as in a training loop."""
    names = list(steps)
    times = {k: [] for k in names}
    for r in range(rep):
        for k in (names if r % 2 == 0 else names[::-1]):
            fn, sync = steps[k]
            fn()
            sync()
            for _ in range(inner):
                t = time.perf_counter()
                fn()
                sync()
                times[k].append(time.perf_counter() - t)
    return {k: min(v) for k, v in times.items()}


def steady_malloc():
    """Pin glibc malloc's mmap and trim thresholds (64 / 256 MiB), so that torch runs at its best
    whatever ran before it in the process. torch's CPU tensors come from malloc, whose threshold
    for mmap-ing a block rises with the largest block freed so far: the LSTM step took torch
    6.3-6.6 ms in a fresh process and 3.2 after the GPT step had run (every large tensor a fresh
    mmap and its page faults, then not), 3.3-3.5 with the thresholds pinned. No-op off glibc."""
    import ctypes
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(-3, 64 << 20)          # M_MMAP_THRESHOLD
        libc.mallopt(-1, 256 << 20)         # M_TRIM_THRESHOLD
    except (OSError, AttributeError):
        pass


def cl_sync():
    clgrad.cl.synchronize()


def nothing():
    pass


# ---- the steps, written once for torch and clgrad -------------------------------------------------
def w4_step(lib):
    v = lib.randn(16, requires_grad=True)

    def step():
        v.grad = None
        y = v
        for _ in range(200):
            y = y * 1.0001 + 0.0001
        y.sum().backward()
        return v.grad
    return step


def model_step(lib, which, read=False):
    from train_bench import make_models
    rng = np.random.default_rng(0)
    lib.manual_seed(0)
    if which in ("W3 SGD", "W3 Adam"):
        model = make_models(lib.nn)[0]
        x, y = rng.standard_normal((256, 784)).astype(np.float32), rng.integers(0, 10, 256)
    elif which == "W5":
        model = make_models(lib.nn)[1]
        x, y = rng.standard_normal((32, 3, 32, 32)).astype(np.float32), rng.integers(0, 10, 32)
    elif which == "LSTM":
        class Net(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.rnn = lib.nn.LSTM(64, 128, num_layers=2, batch_first=True)
                self.head = lib.nn.Linear(128, 10)

            def forward(self, x):
                return self.head(self.rnn(x)[0][:, -1])
        model = Net()
        x, y = rng.standard_normal((16, 32, 64)).astype(np.float32), rng.integers(0, 10, 16)
    else:
        raise ValueError(which)
    x, y = lib.tensor(x), lib.tensor(y.astype(np.int64))
    opt = lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9) if "SGD" in which or \
        which == "W5" else lib.optim.Adam(model.parameters(), lr=1e-3)

    def step():
        opt.zero_grad()
        loss = lib.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss.item() if read else loss
    return step


def gpt_step(lib):
    from train_gpt import gpt_class
    rng = np.random.default_rng(0)
    lib.manual_seed(0)
    model = gpt_class(lib)(65, 128, d=128, layers=4, heads=4)
    opt = lib.optim.AdamW(model.parameters(), lr=3e-4)
    x = lib.tensor(rng.integers(0, 65, (8, 128)).astype(np.int64))
    y = lib.tensor(rng.integers(0, 65, (8, 128)).astype(np.int64))

    def step():
        opt.zero_grad()
        logits = model(x)
        loss = lib.nn.functional.cross_entropy(logits.view(-1, logits.shape[-1]), y.view(-1))
        loss.backward()
        opt.step()
        return loss
    return step


CASES = {"W4": w4_step, "W3 SGD": lambda lib: model_step(lib, "W3 SGD"),
         "W3 Adam": lambda lib: model_step(lib, "W3 Adam"),
         "W5": lambda lib: model_step(lib, "W5"), "GPT": gpt_step,
         "LSTM": lambda lib: model_step(lib, "LSTM"),
         "LSTM item": lambda lib: model_step(lib, "LSTM", read=True)}


def launches_of(step):
    from clgrad.runtime import kernels
    n = [0]

    def hook(*a):
        n[0] += 1
    kernels.launch_hooks.append(hook)
    try:
        step()
        cl_sync()
    finally:
        kernels.launch_hooks.remove(hook)
    return n[0]


def kernel_table(cstep, rows=10):
    """The kernels of one compiled step by device time (the profiler's table; PoCL's device times
    overlap and overstate on a CPU, a GPU's are the kernels' own)."""
    from clgrad.autograd import profiler
    cl_sync()
    with profiler.profile(use_device="cl") as prof:
        cstep()
        cl_sync()
    return prof.key_averages().table(sort_by="self_device_time_total", row_limit=rows)


def run(names, rep, torch_compile, kernels=False):
    steady_malloc()
    try:
        import torch
        torch.set_num_threads(os.cpu_count())
    except ImportError:
        torch = None
    dev = clgrad.runtime.default_device()
    # on a GPU, torch runs on CUDA when it can (the same GPU, through NVIDIA's own stack)
    torch_sync, where = nothing, "the same CPU"
    if torch is not None and dev.is_gpu and torch.cuda.is_available():
        torch.set_default_device("cuda")
        torch_sync, where = torch.cuda.synchronize, f"CUDA ({torch.cuda.get_device_name()})"
    print(f"device: {dev.name} ({dev.platform_name}); ms per step, best of {rep} rounds of 3 "
          f"in turns; "
          f"ratios against torch {torch.__version__ if torch else '(absent)'} on {where}")
    head = f"{'step':10} {'eager':>8} {'compiled':>9} {'torch':>8} {'t.compile':>9} " \
           f"{'comp/torch':>10} {'comp/t.comp':>11} {'eager/torch':>11} {'launches':>8} " \
           f"{'us/launch':>9} {'record s':>8}"
    print(head)
    rows = []
    for name in names:
        eager = CASES[name](clgrad)
        eager()
        cl_sync()
        n = launches_of(eager)
        cstep = clgrad.compile(CASES[name](clgrad))
        cstep()                       # warm-up: eager
        cl_sync()
        t0 = time.perf_counter()
        cstep()                       # records
        cl_sync()
        t_record = time.perf_counter() - t0
        var = next(iter(cstep._variants.values()))
        replayed = var.rec.launches if var.rec is not None else 0
        # host time of a replay alone (no wait for the device): the enqueue loop, best of 10
        # (one replay's figure varied 10x from run to run on a 2-core machine, where the host
        # shares the cores with the device's threads). A replay that reads a value it returns
        # waits for the device there: no figure.
        us = float("nan")
        if var.rec is not None and not var.rec.items:
            hosts = []
            for _ in range(10):
                cl_sync()
                t0 = time.perf_counter()
                var.rec.replay()
                hosts.append(time.perf_counter() - t0)
            cl_sync()
            us = min(hosts) / max(1, replayed) * 1e6
        steps = {"eager": (eager, cl_sync), "compiled": (cstep, cl_sync)}
        if torch is not None:
            steps["torch"] = (CASES[name](torch), torch_sync)
            if torch_compile:
                try:
                    tc = torch.compile(CASES[name](torch))
                    tc()
                    steps["t.compile"] = (tc, torch_sync)
                except Exception as e:           # inductor missing a compiler, say
                    print(f"  torch.compile failed on {name}: {type(e).__name__}: {e}")
        t = interleaved(steps, rep)
        t_eager, t_comp = t["eager"], t["compiled"]
        t_torch, t_tc = t.get("torch", float("nan")), t.get("t.compile", float("nan"))
        row = (name, t_eager * 1e3, t_comp * 1e3, t_torch * 1e3, t_tc * 1e3,
               t_comp / t_torch, t_comp / t_tc, t_eager / t_torch, replayed or n, us, t_record)
        rows.append(row)
        print(f"{row[0]:10} {row[1]:8.2f} {row[2]:9.2f} {row[3]:8.2f} {row[4]:9.2f} "
              f"{row[5]:10.2f} {row[6]:11.2f} {row[7]:11.2f} {row[8]:8d} {row[9]:9.2f} "
              f"{row[10]:8.2f}")
        if var.why_eager:
            print(f"  {name}: not replayed: {var.why_eager}")
        if kernels:
            print(kernel_table(cstep))
    return rows


def compiled_section(table, args, torch):
    """tools/bench.py's rows: each compiled step against torch eager and torch.compile."""
    rows = run(list(CASES), 3 if args.quick else 10, torch is not None)
    for name, te, tc, tt, ttc, *_ in rows:
        table.add(f"{name} step, clgrad.compile", tc, "ms", "", tt, "torch", tc / tt)
        table.add("", tc, "ms", "", ttc, "torch.compile", tc / ttc)
        table.add("", tc, "ms", "", te, "clgrad eager", tc / te)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="3 rounds instead of 10")
    ap.add_argument("--only", default=",".join(CASES), help="comma-separated case names")
    ap.add_argument("--no-torch-compile", action="store_true")
    ap.add_argument("--kernels", action="store_true",
                    help="after each step's row, its compiled step's kernels by device time")
    args = ap.parse_args()
    run([n.strip() for n in args.only.split(",")], 3 if args.quick else 10,
        not args.no_torch_compile, args.kernels)


if __name__ == "__main__":
    main()
