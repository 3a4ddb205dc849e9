"""The one launch chokepoint (clgrad.runtime.kernels.launch): every kernel clgrad enqueues goes
through it, and every launch takes its geometry from the one grid()."""
import pyopencl as cl

import clgrad
from clgrad import nn
from clgrad.ops.elementwise import TABLE
from clgrad.runtime import kernels


class _Counting:
    """Counts the kernels the driver is asked to run (pyopencl's Kernel.__call__), independent of
    clgrad's own bookkeeping, and the launches the chokepoint reports."""

    def __init__(self, monkeypatch):
        self.driver, self.hooked = 0, []
        real = cl.Kernel.__call__

        def counted(kernel, *args, **kw):
            self.driver += 1
            return real(kernel, *args, **kw)
        monkeypatch.setattr(cl.Kernel, "__call__", counted)
        monkeypatch.setattr(kernels, "launch_hooks", [self.hook])

    def hook(self, device, kernel, gsize, lsize, args, evt):
        self.hooked.append((kernel.function_name, gsize, lsize))


def test_every_launch_of_a_training_step_goes_through_the_chokepoint(device, monkeypatch):
    clgrad.manual_seed(0)
    model = nn.Sequential(nn.Linear(12, 16), nn.GELU(), nn.LayerNorm(16), nn.Dropout(0.1),
                          nn.Linear(16, 3))
    opt = clgrad.optim.AdamW(model.parameters(), lr=1e-2)
    x, y = clgrad.randn(8, 12), clgrad.tensor([0, 1, 2, 0, 1, 2, 0, 1])
    loss = nn.functional.cross_entropy(model(x), y)          # warm: kernels built outside
    loss.backward()
    opt.step()
    clgrad.cl.synchronize()
    count = _Counting(monkeypatch)
    for _ in range(2):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
    loss.item()
    clgrad.cl.synchronize()
    assert count.driver > 20
    assert len(count.hooked) == count.driver


def test_the_elementwise_fast_path_takes_grid_geometry(device, monkeypatch):
    """The contiguous elementwise path memoises its geometry; it must be grid()'s (PoCL: one
    local size per kernel; a work-group limit that is not a power of two)."""
    count = _Counting(monkeypatch)
    memo = TABLE["mul"].kernels           # the fast path's plans, geometry memoised per size
    was = device.wg
    try:
        for wg in (was, 192):
            device.wg = wg
            memo.clear()                  # plans made under another work-group size
            for n in (1, 3, 100, 1000, 5000):
                a = clgrad.ones(n)
                count.hooked.clear()
                (a * 3.0).sum().item()
                name, gs, ls = count.hooked[0]
                items = -(-n // kernels.vec_width(device, clgrad.float32))
                assert (gs, ls) == kernels.grid(device, items), (name, n, wg)
                assert ls[0] <= wg and gs[0] % ls[0] == 0
    finally:
        device.wg = was
        memo.clear()
