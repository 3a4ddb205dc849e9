"""The optim family (cl_kernels/optim.mako): the fused update kernels of the optimizers (SGD, Adam /
AdamW, RMSprop) and GradScaler's unscale. One kernel per parameter and step does the whole update
(gradient transforms, state, parameter) in one pass over memory. Raw launches: no autograd; a
parameter is changed in place and its version counter bumped, as autograd must see it.

>>> import clgrad
>>> p, g = clgrad.ones(3), clgrad.full((3,), 2.0)
>>> update("sgd", p, g, [None], (0.5, 0.0, 0.0, 1.0, 0, 0, 0, 1))     # lr 0.5, no momentum
>>> p.tolist()
[0.0, 0.0, 0.0]
>>> amp_unscale([g], 0.5), g.tolist()
(False, [1.0, 1.0, 1.0])
"""
from .. import dtypes
from ..runtime.family import KernelFamily
from ..runtime.kernels import vec_width
from ..runtime.recording import live_scalars
from .copy import contiguous_raw, copy_into, full_raw

OPTIM = KernelFamily("optim", lambda dt: dict(dt=dt), dtypes.FLOATS)


def _flat(t):
    """t itself when contiguous, else a contiguous copy (written back by _run)."""
    return t if t._contig else contiguous_raw(t)


def update(name, param, grad, states, scalars):
    """Launch kernel `name` on param (updated in place), grad and the state tensors (contiguous,
    param's shape and dtype; None for a state the options leave unused); `scalars` are the
    kernel's scalar arguments in its order (cl_kernels/optim.mako). Returns the launch's scalars
    as a recording.LiveScalars while a step capture keeps them (recording.refreshed), else
    None."""
    n = param.numel()
    if n == 0:
        return None
    dt = param.dtype
    if dt.kind != "f":
        raise RuntimeError(f"optimizers update floating-point parameters, got {dt}")
    if grad.dtype is not dt:
        grad = grad.to(dt)
    dev = param._storage.device
    p, g = _flat(param), _flat(grad)
    # an unused state: any valid buffer will do
    OPTIM.launch(dev, dt, name, -(-n // vec_width(dev, dt)), p, g,
                 *[p if s is None else s for s in states], scalars=(*scalars, n))
    live = live_scalars(scalars, after=1)
    if p is not param:
        copy_into(param, p)
    param._vc[0] += 1                          # an in-place change, as autograd must see it
    return live


def amp_unscale(grads, inv_scale):
    """GradScaler's unscale: every gradient times inv_scale, in place, by one kernel launch each;
    whether any element was inf or NaN. The launches share one int32 flag per device, read once
    at the end: no host round trip per gradient."""
    flags = {}
    for g in grads:
        n = g.numel()
        if n == 0:
            continue
        dt, dev = g.dtype, g._storage.device
        if dt.kind != "f":
            raise RuntimeError(f"GradScaler unscales floating-point gradients, got {dt}")
        found = flags.get(dev)
        if found is None:
            found = flags[dev] = full_raw((1,), 0, dtypes.int32, dev)
        flat = _flat(g)
        OPTIM.launch(dev, dt, "amp_unscale", -(-n // vec_width(dev, dt)), flat, inv_scale,
                     found._storage.buf, n)
        if flat is not g:
            copy_into(g, flat)
        g._vc[0] += 1
    return any(bool(f.item()) for f in flags.values())
