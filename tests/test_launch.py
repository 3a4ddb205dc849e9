"""The one launch chokepoint (clgrad.runtime.kernels.launch): every kernel clgrad enqueues goes
through it, and every launch takes its geometry from the one grid()."""
import numpy as np
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


def test_a_familys_argument_expansion_is_cl_args(device):
    """KernelFamily.launch expands its arguments with a function made once per kernel from the
    kernel's signature (runtime.family.expander); for every kernel of every family it gives what
    cl_args gives, in each form a call takes: a tensor at each buffer (all the arguments, or
    those up to the last tensor, the rest given as scalars), raw buffers with their offsets."""
    import importlib
    import pkgutil

    import clgrad.kernels
    from clgrad.runtime.family import KernelFamily, cl_args, expander
    t = clgrad.arange(6.0)[2:]
    buf = object()                      # local memory, or a buffer with no offset after it
    checked = 0
    for m in pkgutil.iter_modules(clgrad.kernels.__path__):
        mod = importlib.import_module(f"clgrad.kernels.{m.name}")
        for fam in [v for v in vars(mod).values() if isinstance(v, KernelFamily)]:
            for prog in list(fam._programs.values()):
                for name, sig in prog.signatures.items():
                    tensors, raw, j = [], [], 0
                    while j < len(sig):
                        if sig[j] is None and j + 1 < len(sig) and sig[j + 1] is not None and \
                                np.dtype(sig[j + 1]).kind in "iu":
                            tensors.append(t)
                            raw += [t._storage.buf, t._offset]
                            j += 2
                        else:
                            tensors.append(buf if sig[j] is None else 1)
                            raw.append(tensors[-1])
                            j += 1
                    last = max([i for i, a in enumerate(tensors) if a is t], default=-1)
                    expand = expander(sig)
                    for args in (tensors, tensors[:last + 1], raw):
                        assert expand(tuple(args)) == cl_args(tuple(args)), (fam.name, name)
                    checked += 1
    assert checked > 100
