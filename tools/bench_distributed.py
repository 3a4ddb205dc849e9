"""Distributed figures, measured in one run: all-reduce bus bandwidth of clgrad (device tensor,
through a host buffer) against plain mpi4py Allreduce of the same bytes from numpy, and the DDP
step time of an MLP on N ranks against 1 rank.

    python tools/bench_distributed.py --nproc 2     # starts itself on N ranks with the launcher

Bus bandwidth is torch's convention for all-reduce: bytes * 2 * (n - 1) / n / time.
"""
import argparse
import os
import subprocess
import sys
import time


def _allreduce_rows(dist, clgrad, np, MPI, sizes, reps):
    comm = MPI.COMM_WORLD
    n = comm.Get_size()
    rows = []
    for mb in sizes:
        count = int(mb * (1 << 20)) // 4
        t = clgrad.ones(count)
        a = np.ones(count, np.float32)
        out = np.empty_like(a)
        for fn in (lambda: dist.all_reduce(t), lambda: comm.Allreduce(a, out)):
            fn()                                          # warm up
        times = {}
        for name, fn in (("clgrad", lambda: dist.all_reduce(t)),
                         ("mpi4py", lambda: comm.Allreduce(a, out))):
            comm.Barrier()
            t0 = time.perf_counter()
            for _ in range(reps):
                fn()
            clgrad.cl.synchronize()
            times[name] = (time.perf_counter() - t0) / reps
        bus = lambda s: count * 4 * 2 * (n - 1) / n / s / 1e9   # noqa: E731
        rows.append((mb, bus(times["clgrad"]), bus(times["mpi4py"])))
    return rows


def _ddp_step(dist, clgrad, steps, world):
    clgrad.manual_seed(0)
    model = clgrad.nn.Sequential(clgrad.nn.Linear(784, 512), clgrad.nn.ReLU(),
                                 clgrad.nn.Linear(512, 512), clgrad.nn.ReLU(),
                                 clgrad.nn.Linear(512, 10))
    if world > 1:
        model = clgrad.nn.parallel.DistributedDataParallel(model, bucket_cap_mb=1)
    opt = clgrad.optim.SGD(model.parameters(), lr=0.01)
    x = clgrad.randn(256 // world, 784)
    y = clgrad.randint(0, 10, (256 // world,))
    for i in range(steps + 2):
        if i == 2:
            clgrad.cl.synchronize()
            t0 = time.perf_counter()
        opt.zero_grad()
        clgrad.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    clgrad.cl.synchronize()
    return (time.perf_counter() - t0) / steps


def rank_main(args):
    import numpy as np
    from mpi4py import MPI
    import clgrad
    import clgrad.distributed as dist
    dist.init_process_group()
    rows = _allreduce_rows(dist, clgrad, np, MPI, [1, 4, 16, 64], args.reps)
    step = _ddp_step(dist, clgrad, args.steps, dist.get_world_size())
    if dist.get_rank() == 0:
        print(f"all-reduce on {dist.get_world_size()} ranks, float32, bus bandwidth GB/s:")
        print(f"{'MiB':>5} {'clgrad':>8} {'mpi4py':>8} {'ratio':>6}")
        for mb, c, m in rows:
            print(f"{mb:>5} {c:>8.2f} {m:>8.2f} {c / m:>6.2f}")
        print(f"DDP step (MLP 784-512-512-10, global batch 256): {step * 1e3:.1f} ms on "
              f"{dist.get_world_size()} ranks")
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--nproc", type=int, default=2)
    p.add_argument("--reps", type=int, default=10)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--rank", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.rank:
        return rank_main(args)
    here = os.path.abspath(__file__)
    common = ["--reps", str(args.reps), "--steps", str(args.steps), "--rank"]
    subprocess.run([sys.executable, "-m", "clgrad.distributed.run", "--nproc-per-node",
                    str(args.nproc), here] + common, check=True)
    # the same DDP model on one process, for the step-time ratio
    import clgrad
    import clgrad.distributed as dist
    print(f"single process, same model and global batch: "
          f"{_ddp_step(dist, clgrad, args.steps, 1) * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
