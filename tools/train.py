"""Train a small CNN (or, with --model mlp, an MLP) on drawn shapes generated in code, report the
held-out accuracy, save a checkpoint, reload it and check that it scores the same.

    python tools/train.py                       # the default run: CNN, default device
    python tools/train.py --model mlp --epochs 3 --device pocl
    python tools/train.py --profile trace.json  # also writes a chrome trace of some steps
    python tools/train.py --plot curves.png     # loss and accuracy curves (needs matplotlib)
    python tools/train.py --steps 1             # stop after one step (cold start: cold_start.py)
    python tools/train.py --amp bf16            # autocast to bfloat16 (fp16: with a GradScaler)
    python -m clgrad.distributed.run --nproc-per-node 2 tools/train.py --ddp   # 2 ranks, MPI

The whole program reads like a torch script: `import clgrad as torch` would do.
"""
import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

import numpy as np  # noqa: E402

import clgrad  # noqa: E402
import clgrad.nn as nn  # noqa: E402
import clgrad.nn.functional as F  # noqa: E402
from clgrad.utils.data import DataLoader, TensorDataset  # noqa: E402
from shapes import CLASSES, make_shapes  # noqa: E402


class SmallCNN(nn.Module):
    """conv 1->16, pool, conv 16->32, pool, linear 1568->64->10."""

    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2))
        self.classifier = nn.Sequential(
            nn.Flatten(), nn.Linear(32 * 7 * 7, 64), nn.ReLU(), nn.Linear(64, len(CLASSES)))

    def forward(self, x):
        return self.classifier(self.features(x))


def mlp():
    return nn.Sequential(nn.Flatten(), nn.Linear(28 * 28, 256), nn.ReLU(), nn.Linear(256, 128),
                         nn.ReLU(), nn.Linear(128, len(CLASSES)))


def evaluate(model, loader):
    """Held-out accuracy (and mean loss), without recording a graph."""
    model.eval()
    correct = total = 0
    loss_sum = 0.0
    with clgrad.no_grad():
        for xb, yb in loader:
            logits = model(xb)
            loss_sum += F.cross_entropy(logits, yb, reduction="sum").item()
            correct += (logits.argmax(1) == yb).sum().item()
            total += yb.shape[0]
    model.train()
    return correct / total, loss_sum / total


def progress(iterable, total, desc, quiet=False):
    if quiet:
        return iterable
    try:
        from tqdm import tqdm
        return tqdm(iterable, total=total, desc=desc, unit="batch", leave=True, mininterval=0.5)
    except ImportError:
        return iterable


def main(argv=None):
    p = argparse.ArgumentParser(description="train a small network with clgrad on drawn shapes")
    p.add_argument("--device", default=None, help="cpu, cuda, cuda:K, cl:N, pocl, intel, nvidia, "
                   "amd (default: CLGRAD_DEVICE, else the first GPU, else the CPU)")
    p.add_argument("--model", choices=["cnn", "mlp"], default="cnn")
    p.add_argument("--epochs", type=int, default=8)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--train-size", type=int, default=12000)
    p.add_argument("--test-size", type=int, default=2000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--checkpoint", default=os.path.join(os.getcwd(), "shapes_checkpoint.clgrad"))
    p.add_argument("--profile", metavar="TRACE.json", default=None,
                   help="profile 20 training steps and write a chrome trace")
    p.add_argument("--plot", metavar="CURVES.png", default=None,
                   help="write a PNG of the loss and accuracy curves (needs matplotlib)")
    p.add_argument("--steps", type=int, default=None,
                   help="stop after this many training steps (no evaluation, no checkpoint)")
    p.add_argument("--amp", choices=["off", "bf16", "fp16"], default="off",
                   help="mixed precision: autocast to bfloat16, or to float16 with a GradScaler")
    p.add_argument("--compile", action="store_true",
                   help="torch.compile the model: its forward and backward are recorded once "
                        "and replayed on later steps (docs/compile.md)")
    p.add_argument("--ddp", action="store_true",
                   help="one rank of a data-parallel job (start it with python -m "
                        "clgrad.distributed.run --nproc-per-node N tools/train.py --ddp): "
                        "each rank trains on its share of every epoch, rank 0 reports")
    args = p.parse_args(argv)

    if args.device:
        clgrad.runtime.device.set_default_device(args.device)
    rank, world = 0, 1
    if args.ddp:
        import clgrad.distributed as dist
        dist.init_process_group("mpi")
        rank, world = dist.get_rank(), dist.get_world_size()
    if rank != 0:                      # one report for the whole job
        sys.stdout = open(os.devnull, "w")
    dev = clgrad.runtime.default_device()
    print(f"clgrad {clgrad.__version__} on cl:{dev.index} {dev.name} ({dev.platform_name})"
          + (f", rank 0 of {world}" if args.ddp else ""))
    clgrad.manual_seed(args.seed)

    t0 = time.perf_counter()
    x_train, y_train = make_shapes(args.train_size, seed=args.seed)
    x_test, y_test = make_shapes(args.test_size, seed=args.seed + 1)
    mean, std = float(x_train.mean()), float(x_train.std())
    train = TensorDataset(clgrad.tensor((x_train - mean) / std), clgrad.tensor(y_train))
    test = TensorDataset(clgrad.tensor((x_test - mean) / std), clgrad.tensor(y_test))
    gen = clgrad.Generator().manual_seed(args.seed)
    if args.ddp:
        from clgrad.utils.data.distributed import DistributedSampler
        sampler = DistributedSampler(train, seed=args.seed, drop_last=True)
        train_loader = DataLoader(train, batch_size=args.batch_size, sampler=sampler,
                                  drop_last=True)
    else:
        sampler = None
        train_loader = DataLoader(train, batch_size=args.batch_size, shuffle=True,
                                  drop_last=True, generator=gen)
    test_loader = DataLoader(test, batch_size=500)
    print(f"data: {len(train)} training and {len(test)} held-out images of {len(CLASSES)} "
          f"shapes, made in {time.perf_counter() - t0:.1f} s")

    net = SmallCNN() if args.model == "cnn" else mlp()
    n_params = sum(p.numel() for p in net.parameters())
    print(f"model: {args.model}, {n_params} parameters")
    # under DDP the wrapper averages the gradients over the ranks during backward
    model = clgrad.nn.parallel.DistributedDataParallel(net) if args.ddp else net
    if args.compile:
        model = clgrad.compile(model)
    opt = clgrad.optim.Adam(model.parameters(), lr=args.lr)
    amp_dtype = {"bf16": clgrad.bfloat16, "fp16": clgrad.float16}.get(args.amp)
    # float16's range is narrow: its gradients are scaled (and steps with inf skipped)
    device_type = "cuda" if dev.is_gpu else "cpu"
    scaler = clgrad.amp.GradScaler(device_type, enabled=args.amp == "fp16")
    if amp_dtype is not None:
        print(f"mixed precision: autocast to {args.amp}"
              + (" with a GradScaler" if scaler.is_enabled() else ""))
    sched = clgrad.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=args.epochs * len(train_loader))
    history = []

    if args.profile:
        profile_steps(model, opt, train_loader, args.profile)

    t_train = time.perf_counter()
    steps = 0
    for epoch in range(1, args.epochs + 1):
        if sampler is not None:
            sampler.set_epoch(epoch)
        seen = 0
        loss_acc = clgrad.zeros(())          # summed on the device: no wait per step
        correct = clgrad.zeros((), dtype=clgrad.int64)
        t_epoch = time.perf_counter()
        bar = progress(train_loader, len(train_loader), f"epoch {epoch}/{args.epochs}",
                       quiet=rank != 0)
        for step, (xb, yb) in enumerate(bar):
            if steps == args.steps:
                break
            t_step, cpu_step = time.perf_counter(), time.process_time()
            with clgrad.autocast(device_type, dtype=amp_dtype or clgrad.bfloat16,
                                 enabled=amp_dtype is not None):
                logits = model(xb)
                loss = F.cross_entropy(logits, yb)
            opt.zero_grad()
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            sched.step()
            with clgrad.no_grad():
                loss_acc += loss.detach() * yb.shape[0]
                correct += (logits.argmax(1) == yb).sum()
            seen += yb.shape[0]
            steps += 1
            if steps == 1:
                # the cold-start figure: kernels built (or loaded from the caches) on first use
                clgrad.cl.synchronize()
                first_step = time.perf_counter() - t_step
                (bar.write if hasattr(bar, "write") else print)(
                    f"first step took {first_step:.2f} s (cpu {time.process_time() - cpu_step:.2f}"
                    f" s; kernel builds included)")
            if hasattr(bar, "set_postfix") and (step % 20 == 19 or step == len(train_loader) - 1):
                rate = seen / (time.perf_counter() - t_epoch)
                bar.set_postfix(loss=f"{loss_acc.item() / seen:.3f}",
                                acc=f"{correct.item() / seen:.3f}", samples_s=f"{rate:.0f}")
        if steps == args.steps:
            if hasattr(bar, "close"):
                bar.close()
            print(f"stopped after {steps} steps; first step {first_step:.3f} s")
            return 0
        train_loss, train_acc = loss_acc.item() / seen, correct.item() / seen
        test_acc, test_loss = evaluate(net, test_loader)
        history.append((epoch, train_loss, train_acc, test_loss, test_acc))
        if hasattr(bar, "close"):
            bar.close()
        print(f"epoch {epoch}: train loss {train_loss:.4f} acc {train_acc:.4f} | held-out loss "
              f"{test_loss:.4f} acc {test_acc:.4f} | {seen / (time.perf_counter() - t_epoch):.0f}"
              f" samples/s")
    print(f"training took {time.perf_counter() - t_train:.1f} s")

    final_acc = history[-1][4]
    if rank != 0:                      # every rank holds the same weights: rank 0 saves them
        dist.destroy_process_group()
        return 0
    clgrad.save({"model": net.state_dict(), "optimizer": opt.state_dict(),
                 "normalisation": [mean, std], "epochs": args.epochs}, args.checkpoint)
    restored = SmallCNN() if args.model == "cnn" else mlp()
    ckpt = clgrad.load(args.checkpoint)
    restored.load_state_dict(ckpt["model"])
    restored_acc, _ = evaluate(restored, test_loader)
    print(f"checkpoint {args.checkpoint}: reloaded model scores {restored_acc:.4f} "
          f"({'the same' if restored_acc == final_acc else 'DIFFERENT'})")
    print(f"final held-out accuracy: {final_acc:.4f}")
    if args.plot:
        plot(history, args.plot)
    if args.ddp:
        dist.destroy_process_group()
    return 0 if restored_acc == final_acc else 1


def profile_steps(model, opt, loader, path, steps=20):
    """A few training steps under the profiler: a table of ops with host and device time, and a
    chrome trace (open it in Perfetto or chrome://tracing)."""
    from clgrad.autograd import profiler
    it = iter(loader)
    with profiler.profile(use_device="cl") as prof:
        for _ in range(steps):
            xb, yb = next(it)
            with profiler.record_function("train_step"):
                loss = F.cross_entropy(model(xb), yb)
                opt.zero_grad()
                loss.backward()
                opt.step()
        clgrad.cl.synchronize()
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=15))
    prof.export_chrome_trace(path)
    print(f"chrome trace of {steps} steps written to {path}")


def plot(history, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("--plot needs matplotlib (pip install matplotlib); no plot written")
        return
    h = np.array(history)
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(9, 3.5))
    a1.plot(h[:, 0], h[:, 1], "o-", label="train")
    a1.plot(h[:, 0], h[:, 3], "o-", label="held-out")
    a1.set_xlabel("epoch")
    a1.set_ylabel("cross-entropy")
    a1.legend()
    a2.plot(h[:, 0], h[:, 2], "o-", label="train")
    a2.plot(h[:, 0], h[:, 4], "o-", label="held-out")
    a2.set_xlabel("epoch")
    a2.set_ylabel("accuracy")
    a2.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    print(f"curves written to {path}")


if __name__ == "__main__":
    sys.exit(main())
