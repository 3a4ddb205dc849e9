"""scaled_dot_product_attention forward + backward in its two forms, fused and composed, on one
device, measured in one run: the figures behind the CPU paths' choice of form
(clgrad.kernels.attention.rows_faster) and each against torch on the same CPU.

    python tools/bench_attention.py              # the grid, on the default device
    python tools/bench_attention.py --rounds 3   # fewer rounds (noisier)
    python tools/bench_attention.py --device intel

Each shape (batch, heads, T, head size) runs causal and not, in rounds that alternate the fused
form (SDPBackend.FLASH_ATTENTION), the composed one (MATH) and torch; the best time of each is
kept, so that a neighbour's load on shared cores hits all alike. "fused/comp" below 1: the fused
kernels are faster; "chosen" is the form F.scaled_dot_product_attention takes with every backend
enabled.
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import clgrad  # noqa: E402
import clgrad.nn.functional as F  # noqa: E402
from clgrad.nn.attention import SDPBackend, sdpa_kernel  # noqa: E402
from bench_conv import each_device, rounds_and_devices  # noqa: E402
from clgrad.ops.attention import made_by_fused_kernels  # noqa: E402

SHAPES = [(8, 4, 64, 32), (8, 4, 128, 32), (4, 4, 128, 64), (4, 4, 256, 64), (4, 4, 512, 64),
          (1, 4, 1024, 64), (2, 2, 256, 128)]


def _best(fn, sync, rounds_times):
    t0 = time.perf_counter()
    fn()
    sync()
    rounds_times.append(time.perf_counter() - t0)


def main():
    args = rounds_and_devices()
    for torch in each_device(args.device):
        print(f"  {'B x H x T x d':16} {'mask':6} {'fused':>8} {'composed':>9} {'torch':>8} "
              f"{'fused/comp':>10} {'chosen':>7}  (ms, forward + backward)")
        for B, H, T, D in SHAPES:
            for causal in (True, False):
                q, k, v = (clgrad.randn(B, H, T, D, requires_grad=True) for _ in range(3))
                tq, tk, tv = (torch.randn(B, H, T, D, requires_grad=True) for _ in range(3))

                def ours(backend):
                    def run():
                        with sdpa_kernel(backend):
                            F.scaled_dot_product_attention(q, k, v, is_causal=causal).sum() \
                                .backward()
                    return run

                def theirs():
                    torch.nn.functional.scaled_dot_product_attention(
                        tq, tk, tv, is_causal=causal).sum().backward()
                runs = {"fused": ours(SDPBackend.FLASH_ATTENTION),
                        "composed": ours(SDPBackend.MATH), "torch": theirs}
                times = {name: [] for name in runs}
                for name, fn in runs.items():          # warm-up: builds, allocations
                    fn()
                    clgrad.cl.synchronize()
                for _ in range(args.rounds):
                    for name, fn in runs.items():
                        for _ in range(3):
                            _best(fn, clgrad.cl.synchronize if name != "torch" else lambda: None,
                                  times[name])
                f, c, t = (min(times[n]) * 1e3 for n in ("fused", "composed", "torch"))
                with sdpa_kernel(list(SDPBackend)):
                    out = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                chosen = "fused" if made_by_fused_kernels(out) else "comp"
                print(f"  {f'{B}x{H}x{T}x{D}':16} {'causal' if causal else 'none':6} {f:8.2f} "
                      f"{c:9.2f} {t:8.2f} {f / c:10.2f} {chosen:>7}", flush=True)


if __name__ == "__main__":
    main()
