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
>>> q, lr_half = clgrad.ones(5), (0.5, 0.0, 0.0, 1.0, 0, 0, 0, 1)
>>> _ = update_all("sgd", [(p, g, [None], lr_half), (q, clgrad.ones(5), [None], lr_half)])
>>> p.tolist(), q.tolist()
([-0.5, -0.5, -0.5], [0.5, 0.5, 0.5, 0.5, 0.5])
"""
from .. import dtypes
from ..runtime.family import KernelFamily
from ..runtime.kernels import vec_width
from ..runtime.recording import live_scalars
from .copy import contiguous_raw, copy_into, full_raw

MULTI = 8              # parameters per multi-tensor launch (K in cl_kernels/optim.mako)
OPTIM = KernelFamily("optim", lambda dt: dict(dt=dt, K=MULTI), dtypes.FLOATS)
# Larger parameters launch alone: their launch costs little beside their work, and the W3 MLP's
# (784 x 512, 512 x 512) updates took 5-8% longer in one launch than alone (pip's PoCL on Zen 4)
MULTI_MAX_NUMEL = 1 << 16


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


def update_all(name, items):
    """update(name, param, grad, states, scalars) for each (param, grad, states, scalars) of
    `items`, in as few launches as it can: parameters with the same dtype, device, unused states
    and scalars (one tuple object: an optimizer hands the parameters whose scalars follow from
    one host state the same one), their gradients of their dtype and all of them contiguous, of
    at most MULTI_MAX_NUMEL elements, go MULTI at a time through <name>_x8; any other parameter
    alone. (The updates of different parameters are independent: their order does not matter.)
    Returns each item's LiveScalars (shared by the parameters of one launch) while a step
    capture keeps them, else Nones."""
    lives = [None] * len(items)
    runs = {}                      # key -> indices of the parameters gathered for one launch

    def launch(run):
        if len(run) == 1:
            lives[run[0]] = update(name, *items[run[0]])
        else:
            live = _update_many(name, [items[i] for i in run])
            for i in run:
                lives[i] = live
    for i, (param, grad, states, scalars) in enumerate(items):
        dt = param.dtype
        n = param.numel()
        if n == 0 or n > MULTI_MAX_NUMEL or dt.kind != "f" or grad.dtype is not dt or \
                not param._contig or not grad._contig or grad._shape != param._shape or \
                not all(s is None or (s._contig and s.dtype is dt) for s in states):
            lives[i] = update(name, param, grad, states, scalars)
            continue
        key = (dt, param._storage.device, tuple(s is None for s in states), id(scalars))
        run = runs.setdefault(key, [])
        run.append(i)
        if len(run) == MULTI:
            launch(run)
            del runs[key]
    for run in runs.values():
        launch(run)
    return lives


def _update_many(name, items):
    """One launch of <name>_x8 for 2..MULTI contiguous parameters that share dtype, device,
    unused states and scalars."""
    p0, g0, states0, scalars = items[0]
    dt, dev = p0.dtype, p0._storage.device
    w = vec_width(dev, dt)
    operands, sizes, first = [], [], 0
    for p, g, states, _ in items:
        operands += [p, g] + [p if s is None else s for s in states]
        n = p.numel()
        sizes += [n, first]
        first += -(-n // w)
    for _ in range(MULTI - len(items)):          # unused places: never reached (first = end)
        operands += [p0, g0] + [p0 if s is None else s for s in states0]
        sizes += [0, first]
    OPTIM.launch(dev, dt, name + f"_x{MULTI}", first, *operands, scalars=(*scalars, *sizes))
    live = live_scalars(scalars, after=len(sizes))
    for p, *_ in items:
        p._vc[0] += 1                          # an in-place change, as autograd must see it
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
