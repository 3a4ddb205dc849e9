"""Work-group sizes that follow the data come in few sizes where each size is a build
(runtime.kernels.few_sizes; PoCL generates a kernel's code for each local size it is launched
with): the scan, softmax, column-sum and attention kernels, on lines and sequences of many
lengths, launch with powers of two (attention with one size whatever the length), and give the
same results as with the sizes the data asks for. Run on every device by making it one that
builds per size."""
import numpy as np
import pytest

import clgrad
import clgrad.nn.functional as F
from clgrad.nn.attention import SDPBackend, sdpa_kernel
from clgrad.runtime import kernels
from helpers import assert_close


def test_few_sizes_are_powers_of_two_not_above_the_size(device, monkeypatch):
    monkeypatch.setattr(device, "compiles_per_local_size", True)
    got = [kernels.few_sizes(device, n) for n in (0, 1, 2, 3, 7, 8, 43, 64, 255, 256)]
    assert got == [1, 1, 2, 2, 4, 8, 32, 64, 128, 256]
    monkeypatch.setattr(device, "compiles_per_local_size", False)
    assert [kernels.few_sizes(device, n) for n in (0, 3, 43)] == [1, 3, 43]


def _local_sizes(fn):
    seen = {}

    def hook(dev, k, g, l, args, evt):
        if l is not None:
            seen.setdefault(k.function_name, set()).add(tuple(l))
    kernels.launch_hooks.append(hook)
    try:
        fn()
    finally:
        kernels.launch_hooks.remove(hook)
    return seen


def _np_attention(q, k, v):
    s = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])
    L, S = s.shape[-2:]
    s = np.where(np.tril(np.ones((L, S), bool)), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    return (p / p.sum(-1, keepdims=True)) @ v


def test_data_dependent_groups_come_in_few_sizes(device, code_paths, monkeypatch):
    monkeypatch.setattr(device, "compiles_per_local_size", True)
    rng = np.random.default_rng(0)
    outs = []

    def work():
        for n in (3, 11, 43, 200, 700):
            a = rng.standard_normal((n, 5)).astype(np.float32)
            x = clgrad.tensor(a, device=device)
            a = a.astype(np.float64)           # references in float64: sums of 700 round
            outs.append((x.cumsum(0), np.cumsum(a, 0)))
            outs.append((x.t().softmax(1), np.exp(a.T) / np.exp(a.T).sum(1, keepdims=True)))
            outs.append((x.sum(0), a.sum(0)))
            b = rng.standard_normal((3, n)).astype(np.float32)
            outs.append((clgrad.tensor(b, device=device).sum(1), b.astype(np.float64).sum(1)))
        with sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.MATH], set_priority=True):
            for L in (5, 11, 40):
                q, k, v = (rng.standard_normal((2, L, 6)).astype(np.float32) for _ in range(3))
                ts = [clgrad.tensor(a, device=device, requires_grad=True) for a in (q, k, v)]
                out = F.scaled_dot_product_attention(*ts, is_causal=True)
                out.sum().backward()
                outs.append((out, _np_attention(q, k, v)))
                with sdpa_kernel(SDPBackend.MATH):
                    ms = [clgrad.tensor(a, device=device, requires_grad=True) for a in (q, k, v)]
                    F.scaled_dot_product_attention(*ms, is_causal=True).sum().backward()
                outs.extend((t.grad, m.grad.numpy()) for t, m in zip(ts, ms))

    seen = _local_sizes(work)
    for got, want in outs:
        assert_close(got, want, clgrad.float32, rtol=1e-4, atol=1e-4)
    for name, sizes in seen.items():
        for size in sizes:
            assert all(s & (s - 1) == 0 for s in size), (name, sizes)
    attention = {n: s for n, s in seen.items() if n.startswith("attn_")}
    if attention:                  # the fused kernels ran (where the rows kernels did not)
        assert all(len(s) == 1 for s in attention.values()), attention
    # the scans of lines of five lengths took fewer sizes than lengths
    scans = seen.get("cumsum_scan") or seen.get("cumsum_blocks") or set()
    assert 1 <= len(scans) < 5, seen
