"""Soak: train the GPT of tools/train_gpt.py for many steps and watch the memory pool. After a
warm-up (the pool has met every shape the step uses) the pool must stay flat: the same bytes held
by tensors and reserved from the device at the same point of every step, and no new device
allocations. Growth means a leak: tensors kept alive across steps (a graph, saved tensors, an
optimizer's state) or blocks the pool never reuses.

    python tools/soak.py                          # 10,000 steps of train_gpt.py's default model
    python tools/soak.py --small --steps 300      # a quick look: a 1-layer model, small batches
    python tools/soak.py --device intel --every 500

Every --every steps it prints the pool's memory (allocated: in blocks held by tensors; reserved:
allocated plus cached) and the process's resident memory, then a verdict: FLAT or GROWING, with
the numbers. Exit status 0 when flat, 1 when growing. Not a test: it takes minutes to hours.
"""
import argparse
import gc
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402

import clgrad  # noqa: E402
from train_gpt import GPT, add_model_args, batches, corpus, train_step  # noqa: E402

SMALL = dict(batch=8, context=32, layers=1, d_model=32, heads=2)


def rss_bytes():
    """The process's resident memory (Linux), None elsewhere."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def mib(n):
    return "n/a" if n is None else f"{n / 2**20:.2f} MiB"


def signed_mib(n):
    return "n/a" if n is None else f"{n / 2**20:+.2f} MiB"


def main(argv=None):
    p = argparse.ArgumentParser(description="soak the GPT training step and check the memory "
                                            "pool stays flat")
    p.add_argument("--device", default=None, help="cpu, cuda, cl:N, pocl, intel, ...")
    p.add_argument("--steps", type=int, default=10000)
    p.add_argument("--small", action="store_true",
                   help="a small config: " + ", ".join(f"{k}={v}" for k, v in SMALL.items()))
    add_model_args(p)
    p.add_argument("--every", type=int, default=None,
                   help="print the pool's memory every N steps (default: steps / 20)")
    p.add_argument("--warmup", type=int, default=None,
                   help="steps before the pool must be flat (default: 5%% of the steps, at "
                        "least 20)")
    p.add_argument("--tolerance", type=int, default=0,
                   help="bytes the pool may move after warm-up and still count as flat")
    args = p.parse_args(argv)
    if args.small:
        for k, v in SMALL.items():
            setattr(args, k, v)
    every = args.every or max(1, args.steps // 20)
    warmup = min(args.steps, args.warmup if args.warmup is not None
                 else max(20, args.steps // 20))

    if args.device:
        clgrad.runtime.device.set_default_device(args.device)
    dev = clgrad.runtime.default_device()
    print(f"clgrad {clgrad.__version__} on cl:{dev.index} {dev.name} ({dev.platform_name})")
    clgrad.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    text = corpus()
    chars = sorted(set(text))
    stoi = {c: i for i, c in enumerate(chars)}
    data = np.array([stoi[c] for c in text], dtype=np.int64)
    model = GPT(len(chars), args.context, args.d_model, args.layers, args.heads)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"model: {args.layers} layers, d={args.d_model}, {args.heads} heads, context "
          f"{args.context}, batch {args.batch}, {n_params} parameters; {args.steps} steps, "
          f"warm-up {warmup}, memory every {every}")
    opt = clgrad.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    sched = clgrad.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=args.steps)

    def sample(step):
        stats = clgrad.cl.memory_stats(dev)
        return dict(step=step, allocated=stats["allocated_bytes"],
                    reserved=stats["reserved_bytes"], device_allocs=stats["num_device_allocs"],
                    rss=rss_bytes())

    try:
        from tqdm import tqdm
        bar = tqdm(total=args.steps, desc="soak", unit="step", mininterval=1.0)
        say = bar.write
    except ImportError:
        bar, say = None, print
    say(f"{'step':>7} {'allocated':>12} {'reserved':>12} {'device allocs':>14} {'rss':>12} "
        f"{'loss':>7}")
    samples, t0 = [], time.perf_counter()
    run_sum = clgrad.zeros(())
    for step in range(1, args.steps + 1):
        x, y = batches(data, args.context, args.batch, rng)
        loss = train_step(model, opt, sched, x, y)
        with clgrad.no_grad():
            run_sum += loss.detach()
        del x, y, loss
        if step == warmup or step % every == 0 or step == args.steps:
            mean = run_sum.item() / (step - (samples[-1]["step"] if samples else 0))
            run_sum = clgrad.zeros(())
            s = sample(step)
            s["loss"] = mean
            samples.append(s)
            say(f"{step:7d} {mib(s['allocated']):>12} {mib(s['reserved']):>12} "
                f"{s['device_allocs']:14d} {mib(s['rss']):>12} {mean:7.3f}")
            if bar is not None:
                bar.set_postfix(alloc=mib(s["allocated"]), reserved=mib(s["reserved"]))
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    took = time.perf_counter() - t0
    gc.collect()

    after = [s for s in samples if s["step"] >= warmup]
    base, last = after[0], after[-1]
    alloc = [s["allocated"] for s in after]
    res = [s["reserved"] for s in after]
    moved_alloc = max(alloc) - min(alloc)
    moved_res = max(res) - base["reserved"]
    new_blocks = last["device_allocs"] - base["device_allocs"]
    flat = moved_alloc <= args.tolerance and moved_res <= args.tolerance and new_blocks == 0
    print(f"{args.steps} steps in {took:.1f} s ({took / args.steps * 1e3:.1f} ms a step)")
    print(f"after warm-up (step {base['step']} to {last['step']}, {len(after)} samples):")
    print(f"  allocated {mib(base['allocated'])} -> {mib(last['allocated'])} "
          f"(range {mib(min(alloc))} .. {mib(max(alloc))}, moved {moved_alloc} bytes)")
    print(f"  reserved  {mib(base['reserved'])} -> {mib(last['reserved'])} "
          f"(peak {mib(max(res))}, {moved_res} bytes over the warm-up's)")
    print(f"  new device allocations: {new_blocks}")
    rss_growth = None if base["rss"] is None else last["rss"] - base["rss"]
    print(f"  process resident memory {mib(base['rss'])} -> {mib(last['rss'])} "
          f"({signed_mib(rss_growth)}; host memory, for information)")
    print(f"  loss {samples[0]['loss']:.3f} -> {last['loss']:.3f}")
    print(f"verdict: {'FLAT' if flat else 'GROWING'}: pool memory "
          + (f"constant after warm-up (allocated {mib(last['allocated'])}, reserved "
             f"{mib(last['reserved'])})" if flat else
             f"moved after warm-up: allocated by {moved_alloc} bytes, reserved by {moved_res} "
             f"bytes, {new_blocks} new device allocations (tolerance {args.tolerance} bytes)"))
    return 0 if flat else 1


if __name__ == "__main__":
    sys.exit(main())
