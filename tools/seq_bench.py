"""Sequence-model benchmarks for tools/bench.py (its "training" section):

LSTM LM: one training step of a character language model: embedding 96 -> 64, a 2-layer LSTM of
    256 hidden units, linear head, cross-entropy, Adam; batch 32 of 64 steps.
GRU LM: the same with a 2-layer GRU, run by the fused layer op and (the row below it) step by
    step in composed ops, in the same process.

The same model and data run in torch (CPU) where it is installed, in the same process, timed in
turns with clgrad's (each round calls each once untimed, then three times timed; best of all).
"""
import numpy as np

import clgrad


def _in_turns(steps, rep):
    """(clgrad's best seconds, [(name, best seconds) of the others, in order]) of steps
    {name: (step, sync)}, the first clgrad's, timed in turns (bench_compile.interleaved), so
    that the machine's drift hits them alike."""
    from bench_compile import interleaved
    times = interleaved(steps, rep)
    first = next(iter(steps))
    return times.pop(first), list(times.items())


def make_lstm_lm(lib, vocab=96, emb=64, hidden=256, layers=2, kind="LSTM"):
    nn = lib.nn

    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(vocab, emb)
            self.lstm = getattr(nn, kind)(emb, hidden, layers, batch_first=True)
            self.head = nn.Linear(hidden, vocab)

        def forward(self, x):
            out, _ = self.lstm(self.emb(x))
            return self.head(out)
    return LM()


def make_lm_step(lib, model, x, y):
    opt = lib.optim.Adam(model.parameters(), lr=1e-3)

    def step():
        opt.zero_grad()
        logits = model(x)
        loss = lib.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                               y.reshape(-1))
        loss.backward()
        opt.step()
    return step


def sequence_section(table, args, torch, tinygrad):
    from bench import _rows, nothing, sync_cl
    rep = 5 if not args.quick else 2
    rng = np.random.default_rng(0)
    xn = rng.integers(0, 96, (32, 64)).astype(np.int64)
    yn = rng.integers(0, 96, (32, 64)).astype(np.int64)
    name = "LSTM LM 2x256, batch 32 x 64 steps, Adam"
    clgrad.manual_seed(0)
    steps = {"clgrad": (make_lm_step(clgrad, make_lstm_lm(clgrad), clgrad.tensor(xn),
                                     clgrad.tensor(yn)), sync_cl)}
    if torch is not None:
        torch.manual_seed(0)
        steps["torch"] = (make_lm_step(torch, make_lstm_lm(torch), torch.tensor(xn),
                                       torch.tensor(yn)), nothing)
    t, others = _in_turns(steps, rep)
    _rows(table, name, t * 1e3, "ms", others, 1e3)

    from clgrad.nn.modules import rnn as rnn_module

    def gru_step(lib):
        lib.manual_seed(0)
        return make_lm_step(lib, make_lstm_lm(lib, kind="GRU"), lib.tensor(xn), lib.tensor(yn))
    composed = gru_step(clgrad)

    def composed_step():                # the layer step by step in composed ops
        rnn_module._FUSED = False
        try:
            composed()
        finally:
            rnn_module._FUSED = True
    steps = {"clgrad": (gru_step(clgrad), sync_cl), "composed": (composed_step, sync_cl)}
    if torch is not None:
        steps["torch"] = (gru_step(torch), nothing)
    t, others = _in_turns(steps, rep)
    t_composed = others.pop(0)[1]
    _rows(table, "GRU LM 2x256, batch 32 x 64 steps, Adam", t * 1e3, "ms", others, 1e3)
    _rows(table, "  the same, composed steps", t_composed * 1e3, "ms", others, 1e3)


def gpt_section(table, args, torch):
    """GPT: one AdamW step of tools/train_gpt.py's model, 4 layers, d=128, 4 heads, T=128,
    batch 8, vocabulary 96."""
    from bench import _rows, nothing, sync_cl
    from train_gpt import gpt_class
    rep = 5 if not args.quick else 2
    rng = np.random.default_rng(0)
    xn = rng.integers(0, 96, (8, 128)).astype(np.int64)
    yn = rng.integers(0, 96, (8, 128)).astype(np.int64)

    def make(lib):
        lib.manual_seed(0)
        model = gpt_class(lib)(96, 128, 128, 4, 4)
        opt = lib.optim.AdamW(model.parameters(), lr=1e-3)
        x, y = lib.tensor(xn), lib.tensor(yn)

        def step():
            opt.zero_grad()
            logits = model(x)
            lib.nn.functional.cross_entropy(logits.reshape(-1, 96), y.reshape(-1)).backward()
            opt.step()
        return step
    steps = {"clgrad": (make(clgrad), sync_cl)}
    if torch is not None:
        steps["torch"] = (make(torch), nothing)
    t, others = _in_turns(steps, rep)
    _rows(table, "GPT 4x128, 4 heads, T=128, batch 8, AdamW", t * 1e3, "ms", others, 1e3)


def sdpa_section(table, args, torch):
    """F.scaled_dot_product_attention forward and backward, causal, B=4, H=4, T=512, d=64."""
    from bench import _rows, nothing, sync_cl
    rep = 5 if not args.quick else 2
    rng = np.random.default_rng(0)
    qkv = [rng.standard_normal((4, 4, 512, 64)).astype(np.float32) for _ in range(3)]

    def make(lib):
        q, k, v = (lib.tensor(a, requires_grad=True) for a in qkv)

        def step():
            q.grad = k.grad = v.grad = None
            lib.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True).sum() \
                .backward()
        return step
    from clgrad.nn.attention import SDPBackend, sdpa_kernel
    def forced(backend):
        step = make(clgrad)

        def run():
            with sdpa_kernel(backend):
                step()
        return run
    steps = {"clgrad": (make(clgrad), sync_cl),
             "fused": (forced(SDPBackend.FLASH_ATTENTION), sync_cl),
             "composed": (forced(SDPBackend.MATH), sync_cl)}
    if torch is not None:
        steps["torch"] = (make(torch), nothing)
    t, others = _in_turns(steps, rep)
    forms, others = others[:2], others[2:]
    _rows(table, "SDPA causal fwd+bwd, 4x4 heads, T=512, d=64", t * 1e3, "ms", others, 1e3)
    for name, t in forms:
        _rows(table, f"  the same, {name} form", t * 1e3, "ms", others, 1e3)


def transformer_ops_section(table, args, torch):
    """The GPT step's row-wise ops at its shapes, forward + backward: GELU on [1024, 512],
    softmax on [8, 4, 128, 128] (the composed attention's), layer_norm on [8, 128, 128]."""
    from bench import _rows, nothing, sync_cl
    rep = 20 if not args.quick else 8
    rng = np.random.default_rng(0)
    print("\nTransformer ops, forward + backward (us per call)")
    cases = [  # (name, shape, the op on lib made once: a function of x)
        ("GELU [1024, 512]", (1024, 512), lambda lib: lib.nn.functional.gelu),
        ("softmax [8, 4, 128, 128], last dim", (8, 4, 128, 128),
         lambda lib: lambda x: x.softmax(-1)),
        ("layer_norm [8, 128, 128] with weight and bias", (8, 128, 128),
         lambda lib: lib.nn.LayerNorm(128)),
    ]
    for name, shape, make_op in cases:
        a = rng.standard_normal(shape).astype(np.float32)
        ga = rng.standard_normal(shape).astype(np.float32)

        def make(lib):
            op = make_op(lib)
            x, g = lib.tensor(a, requires_grad=True), lib.tensor(ga)

            def step():
                x.grad = None
                op(x).backward(g)
            return step
        steps = {"clgrad": (make(clgrad), sync_cl)}
        if torch is not None:
            steps["torch"] = (make(torch), nothing)
        t, others = _in_turns(steps, rep)
        _rows(table, name, t * 1e6, "us", others, 1e6)
