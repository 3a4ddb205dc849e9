"""Write the torch checkpoints that tests/test_torch_checkpoints.py loads (run with torch
installed; the tests themselves never import torch):

    .venv/bin/python tools/make_torch_checkpoints.py

`--check` instead has clgrad write a checkpoint in torch's format (clgrad.save(...,
_use_new_zipfile_serialization=True)) and loads it with torch.load (weights_only and mmap),
comparing every value: the other direction, which the tests cannot check without torch.

Each NAME.pt is written by torch.save and NAME.npz beside it holds the same tensors' values as
numpy arrays (bfloat16 as its 16-bit words, key "<name>.bf16bits"), so the tests compare what
clgrad.load reads with what torch wrote.
"""
import os
from collections import OrderedDict

import numpy as np
import torch

OUT = os.path.join(os.path.dirname(__file__), "..", "tests", "data", "torch_checkpoints")


def host(t):
    t = t.detach()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(np.uint16)
    return t.numpy()


def arrays(prefix, obj, out):
    """Every tensor in obj as out[path] = numpy values."""
    if isinstance(obj, torch.Tensor):
        key = prefix + (".bf16bits" if obj.dtype == torch.bfloat16 else "")
        out[key] = host(obj)
    elif isinstance(obj, dict):
        for k, v in obj.items():
            arrays(f"{prefix}/{k}", v, out)
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            arrays(f"{prefix}/{i}", v, out)
    return out


def write(name, obj):
    torch.save(obj, os.path.join(OUT, name + ".pt"))
    np.savez(os.path.join(OUT, name + ".npz"), **arrays("", obj, {}))


class TinyGPT(torch.nn.Module):
    """The shape of nanoGPT's model (embeddings, a block's layers, a tied head), small."""

    def __init__(self, vocab=11, block=8, d=8):
        super().__init__()
        self.wte = torch.nn.Embedding(vocab, d)
        self.wpe = torch.nn.Embedding(block, d)
        self.ln = torch.nn.LayerNorm(d)
        self.attn = torch.nn.Linear(d, 3 * d)
        self.proj = torch.nn.Linear(d, d, bias=False)
        self.head = torch.nn.Linear(d, vocab, bias=False)
        self.head.weight = self.wte.weight                  # tied: one storage, two keys
        self.register_buffer("mask", torch.tril(torch.ones(block, block, dtype=torch.bool)))

    def forward(self, idx):
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1]))
        x = x + self.proj(self.attn(self.ln(x))[..., :x.shape[-1]])
        return self.head(x)


def main():
    os.makedirs(OUT, exist_ok=True)
    g = torch.Generator().manual_seed(0)
    # every dtype a state dict holds
    sd = OrderedDict()
    sd["f32"] = torch.randn(3, 4, generator=g)
    sd["f16"] = torch.randn(5, generator=g).half()
    sd["bf16"] = torch.tensor([1.0, -2.5, 3.140625, 1e30, -0.0])
    sd["bf16"] = sd["bf16"].bfloat16()
    sd["f64"] = torch.randn(2, 2, generator=g, dtype=torch.float64)
    sd["i64"] = torch.tensor([0, -1, 2 ** 62, -(2 ** 63)])
    sd["i32"] = torch.arange(6, dtype=torch.int32).reshape(2, 3)
    sd["i8"] = torch.tensor([-128, 0, 127], dtype=torch.int8)
    sd["u8"] = torch.tensor([0, 200, 255], dtype=torch.uint8)
    sd["bool"] = torch.tensor([True, False, True])
    sd["scalar"] = torch.tensor(2.5)
    sd["empty"] = torch.zeros(0, 3)
    write("dtypes", sd)

    # complex tensors (interleaved (re, im) pairs in torch and in clgrad)
    write("complex", {"c64": torch.tensor([1 + 2j, -3.5j, 0.25], dtype=torch.complex64),
                      "c128": torch.randn(2, 2, generator=g, dtype=torch.complex128)})

    # views sharing one storage: a slice, a transpose and an offset row of the same base
    base = torch.arange(24, dtype=torch.float32).reshape(4, 6)
    write("views", {"base": base, "row": base[2], "cols": base[:, 1:4], "t": base.t(),
                    "strided": base[::2, ::3]})

    # a nanoGPT-like checkpoint: model state dict (tied weights), AdamW's state, scalars, config
    torch.manual_seed(0)
    model = TinyGPT()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.95), weight_decay=0.1)
    idx = torch.randint(0, 11, (2, 8))
    for _ in range(2):
        loss = model(idx).logsumexp(-1).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    model_args = dict(n_layer=1, n_head=1, n_embd=8, block_size=8, bias=True, vocab_size=11,
                      dropout=0.0)
    ckpt = {"model": model.state_dict(), "optimizer": opt.state_dict(),
            "model_args": model_args, "iter_num": 2, "best_val_loss": loss.detach(),
            "config": {"out_dir": "out", "eval_interval": 2000, "learning_rate": 6e-4,
                       "betas": (0.9, 0.95), "decay_lr": True, "dtype": "float32"}}
    write("nanogpt", ckpt)
    np.savez(os.path.join(OUT, "nanogpt_logits.npz"), idx=idx.numpy(),
             logits=model(idx).detach().numpy())

    # a whole module (torch.save(model)): loads with weights_only=False or its classes allowed
    torch.manual_seed(0)
    whole = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.BatchNorm1d(4))
    whole(torch.randn(8, 3))                            # running statistics that are not 0 / 1
    whole.eval()
    torch.save(whole, os.path.join(OUT, "whole_module.pt"))
    x = torch.randn(5, 3)
    np.savez(os.path.join(OUT, "whole_module.npz"), x=x.numpy(), y=whole(x).detach().numpy())

    # a parameter pickled as a Parameter (nn.Parameter inside a plain dict)
    write("parameter", {"p": torch.nn.Parameter(torch.ones(2, 2)),
                        "frozen": torch.nn.Parameter(torch.zeros(3), requires_grad=False)})


def check():
    import sys
    import tempfile
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
    import clgrad
    m = clgrad.nn.Sequential(clgrad.nn.Linear(3, 4), clgrad.nn.ReLU(), clgrad.nn.Linear(4, 2))
    base = clgrad.arange(24, dtype=clgrad.float32).reshape(4, 6)
    obj = {"model": m.state_dict(), "param": m[0].weight, "base": base, "t": base.t(),
           "row": base[2], "bf16": clgrad.tensor([1.5, -2.0], dtype=clgrad.bfloat16),
           "f16": clgrad.tensor([0.5], dtype=clgrad.float16), "bool": clgrad.tensor([True]),
           "i64": clgrad.tensor([2 ** 62, -5]), "u8": clgrad.tensor([250], dtype=clgrad.uint8),
           "size": clgrad.Size([2, 3]), "dtype": clgrad.float16, "step": 3, "empty":
           clgrad.zeros(0, 3), "scalar": clgrad.tensor(2.5)}
    path = os.path.join(tempfile.mkdtemp(), "from_clgrad.pt")
    clgrad.save(obj, path, _use_new_zipfile_serialization=True)
    for mmap in (False, True):
        back = torch.load(path, mmap=mmap)                  # weights_only=True, torch's default
        for key, value in obj.items():
            got = back[key]
            if isinstance(value, clgrad.Tensor):
                want = value.detach().float().numpy() if value.dtype is clgrad.bfloat16 else \
                    value.detach().numpy()
                assert str(got.dtype) == str(value.dtype).replace("clgrad", "torch"), key
                np.testing.assert_array_equal(got.detach().float().numpy() if got.dtype ==
                                              torch.bfloat16 else got.detach().numpy(), want)
        assert type(back["param"]) is torch.nn.Parameter
        assert back["t"].untyped_storage().data_ptr() == back["base"].untyped_storage().data_ptr()
        assert back["size"] == torch.Size([2, 3]) and back["dtype"] is torch.float16
        tm = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
        tm.load_state_dict(back["model"])
    print(f"torch {torch.__version__} loads clgrad's checkpoint: {len(obj)} entries match")


if __name__ == "__main__":
    import sys
    check() if "--check" in sys.argv else main()
