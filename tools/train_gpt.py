"""Train a small character-level GPT on the project's own text (its docs and sources), show the
loss falling, save a checkpoint, reload it and check it gives the same loss, then sample a
continuation.

    python tools/train_gpt.py                         # the default run (a few minutes on a CPU)
    python tools/train_gpt.py --steps 50 --layers 2   # a quick look
    python tools/train_gpt.py --device intel --prompt "def "

The model is the usual decoder-only transformer: token and position embeddings, pre-norm blocks
of causal self-attention (F.scaled_dot_product_attention with is_causal=True) and a GELU MLP, a
final LayerNorm and a linear head. It reads like a torch script: `import clgrad as torch` would do.
"""
import argparse
import glob
import math
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

import numpy as np  # noqa: E402

import clgrad  # noqa: E402
import clgrad.nn as nn  # noqa: E402
import clgrad.nn.functional as F  # noqa: E402


def corpus():
    """The project's docs and Python sources, concatenated: ~1 MB of text it ships itself."""
    files = sorted(glob.glob(os.path.join(ROOT, "docs", "*.md"))) + \
        sorted(glob.glob(os.path.join(ROOT, "clgrad", "**", "*.py"), recursive=True))
    return "\n".join(open(f, encoding="utf-8").read() for f in files)


def gpt_class(lib):
    """The GPT model class written against `lib` (clgrad, or torch for the benchmark)."""
    nn, F = lib.nn, lib.nn.functional

    class CausalSelfAttention(nn.Module):
        def __init__(self, d, heads):
            super().__init__()
            self.heads = heads
            self.qkv = nn.Linear(d, 3 * d)
            self.proj = nn.Linear(d, d)

        def forward(self, x):
            B, T, C = x.shape
            q, k, v = self.qkv(x).split(C, dim=2)
            q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2)
                       for t in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            return self.proj(y.transpose(1, 2).reshape(B, T, C))

    class Block(nn.Module):
        def __init__(self, d, heads):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.attn = CausalSelfAttention(d, heads)
            self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

        def forward(self, x):
            x = x + self.attn(self.ln1(x))
            return x + self.mlp(self.ln2(x))

    class GPT(nn.Module):
        """A decoder-only transformer over `vocab` tokens and contexts of up to `context`."""

        def __init__(self, vocab, context, d=128, layers=4, heads=4):
            super().__init__()
            self.context = context
            self.tok = nn.Embedding(vocab, d)
            self.pos = nn.Embedding(context, d)
            self.blocks = nn.Sequential(*[Block(d, heads) for _ in range(layers)])
            self.ln = nn.LayerNorm(d)
            self.head = nn.Linear(d, vocab)

        def forward(self, idx):
            T = idx.shape[1]
            x = self.tok(idx) + self.pos(lib.arange(T, device=idx.device))
            return self.head(self.ln(self.blocks(x)))

        @lib.no_grad()
        def generate(self, idx, n, temperature=0.8):
            """Continue idx [1, T] by n tokens drawn from the softmax of the last logits."""
            for _ in range(n):
                logits = self(idx[:, -self.context:])[:, -1] / temperature
                nxt = lib.multinomial(F.softmax(logits, dim=-1), 1)
                idx = lib.cat([idx, nxt], dim=1)
            return idx
    return GPT


GPT = gpt_class(clgrad)


def batches(data, context, batch, rng):
    """Random windows of the encoded text: inputs and the next characters."""
    starts = rng.integers(0, len(data) - context - 1, batch)
    x = np.stack([data[s:s + context] for s in starts])
    y = np.stack([data[s + 1:s + context + 1] for s in starts])
    return clgrad.tensor(x), clgrad.tensor(y)


def loss_of(model, x, y):
    logits = model(x)
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))


def train_step(model, opt, sched, x, y):
    """One optimizer step on the batch (x, y), gradients clipped to norm 1, the schedule
    advanced; returns the loss, still on the device."""
    loss = loss_of(model, x, y)
    opt.zero_grad()
    loss.backward()
    clgrad.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    sched.step()
    return loss


def progress(total):
    try:
        from tqdm import tqdm
        return tqdm(total=total, desc="training", unit="step", mininterval=0.5)
    except ImportError:
        return None


def add_model_args(p):
    """The model and training options train_gpt.py and soak.py share."""
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--context", type=int, default=64)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--d-model", type=int, default=128)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--seed", type=int, default=0)


def main(argv=None):
    p = argparse.ArgumentParser(description="train a character-level GPT with clgrad")
    p.add_argument("--device", default=None, help="cpu, cuda, cl:N, pocl, intel, ...")
    p.add_argument("--steps", type=int, default=600)
    p.add_argument("--compile", action="store_true",
                   help="compile the whole training step (forward, backward, clipping, AdamW, "
                        "schedule): recorded once, replayed after (docs/compile.md)")
    add_model_args(p)
    p.add_argument("--sample", type=int, default=300, help="characters to generate at the end")
    p.add_argument("--prompt", default="import clgrad\n")
    p.add_argument("--checkpoint", default=os.path.join(os.getcwd(), "gpt_checkpoint.clgrad"))
    args = p.parse_args(argv)

    if args.device:
        clgrad.runtime.device.set_default_device(args.device)
    dev = clgrad.runtime.default_device()
    print(f"clgrad {clgrad.__version__} on cl:{dev.index} {dev.name} ({dev.platform_name})")
    clgrad.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)

    text = corpus()
    chars = sorted(set(text) | set(args.prompt))
    stoi = {c: i for i, c in enumerate(chars)}
    data = np.array([stoi[c] for c in text], dtype=np.int64)
    split = int(len(data) * 0.95)
    train, held = data[:split], data[split:]
    print(f"text: {len(text)} characters of the project's docs and sources, "
          f"{len(chars)} distinct")

    model = GPT(len(chars), args.context, args.d_model, args.layers, args.heads)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"model: {args.layers} layers, d={args.d_model}, {args.heads} heads, context "
          f"{args.context}, {n_params} parameters")
    opt = clgrad.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    sched = clgrad.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=args.steps)
    xh, yh = batches(held, args.context, 64, np.random.default_rng(args.seed + 1))

    def held_out_loss(m):
        m.eval()
        with clgrad.no_grad():
            v = loss_of(m, xh, yh).item()
        m.train()
        return v

    print(f"held-out loss before training: {held_out_loss(model):.3f} "
          f"(uniform guessing: {math.log(len(chars)):.3f})")
    bar = progress(args.steps)
    curve, t0 = [], time.perf_counter()
    run_sum = clgrad.zeros(())
    every = max(1, args.steps // 10)
    step_fn = clgrad.compile(train_step) if args.compile else train_step
    for step in range(1, args.steps + 1):
        x, y = batches(train, args.context, args.batch, rng)
        loss = step_fn(model, opt, sched, x, y)
        with clgrad.no_grad():
            run_sum += loss.detach()
        if step % every == 0 or step == args.steps:
            n = every if step % every == 0 else step % every
            curve.append((step, run_sum.item() / n))
            run_sum = clgrad.zeros(())
            if bar is not None:
                bar.set_postfix(loss=f"{curve[-1][1]:.3f}")
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    took = time.perf_counter() - t0
    print(f"training: {args.steps} steps in {took:.1f} s ({took / args.steps * 1e3:.0f} ms a step)")
    print("loss curve (step: mean training loss since the previous line):")
    for s, v in curve:
        print(f"  {s:6d}: {v:.3f} {'#' * max(1, int(v * 10))}")
    final = held_out_loss(model)
    print(f"held-out loss after training: {final:.3f}")

    clgrad.save({"model": model.state_dict(), "chars": "".join(chars),
                 "config": [args.context, args.d_model, args.layers, args.heads]},
                args.checkpoint)
    ckpt = clgrad.load(args.checkpoint)
    context, d, layers, heads = ckpt["config"]
    restored = GPT(len(ckpt["chars"]), context, d, layers, heads)
    restored.load_state_dict(ckpt["model"])
    again = held_out_loss(restored)
    print(f"checkpoint {args.checkpoint}: reloaded model's held-out loss {again:.3f} "
          f"({'the same' if abs(again - final) < 1e-5 else 'DIFFERENT'})")

    if args.sample:
        restored.eval()
        idx = clgrad.tensor([[stoi[c] for c in args.prompt]])
        out = restored.generate(idx, args.sample)[0].tolist()
        print("sample:\n" + "".join(chars[i] for i in out))
    return 0 if abs(again - final) < 1e-5 else 1


if __name__ == "__main__":
    sys.exit(main())
