"""The fused family (cl_kernels/fused.mako): chains of elementwise ops found in a compiled step's
recording, made one kernel from the elementwise table's own expressions.

When a capture ends, `fuse` walks the recorded launches: a run of consecutive launches of the
elementwise family's contiguous kernels (`<op>_c_<pattern>`, which name their table entry) over
float32 / float64 tensors of one size, each operand walking its buffer and every buffer addressed
at one offset, becomes one launch of a generated kernel. Each work-item then
carries one element through the whole run: operands are loaded once, intermediate results stay
in registers, and a result is stored only when something after the run reads its buffer or a
live tensor holds it (a temporary that the step freed is never written).

Element i of every op touches element i of every buffer only, so the fused kernel computes what
the launches computed, in the same order; the arithmetic is the table's, evaluated one element
at a time (the contiguous kernels' vector forms may round the last bit of a transcendental
function differently).

>>> import clgrad
>>> from clgrad.runtime.recording import Recording
>>> x = clgrad.linspace(-1, 1, 1000)
>>> with Recording() as rec:
...     y = ((x * 2 + 1).tanh() - 0.5).exp()
>>> rec.launches          # four table ops, one kernel
1
>>> import numpy as np
>>> _ = x.copy_(clgrad.linspace(0, 2, 1000)); rec.replay()
>>> bool(np.allclose(y.numpy(), np.exp(np.tanh(np.linspace(0, 2, 1000) * 2 + 1) - 0.5), rtol=1e-6))
True
"""
import hashlib
import math
import warnings

import numpy as np
from pyopencl import cltypes

from .. import dtypes
from ..runtime import recording
from ..runtime.device import Device, devices
from ..runtime.family import KernelFamily
from ..runtime.kernels import get_kernel, grid, vec_width
from .elementwise import ENTRIES, PROGRAMS

MAX_BUFFERS = 24            # kernel arguments stay far below every device's limit
FLOATS = (dtypes.float32, dtypes.float64)


class Chain:
    """One fused kernel: its buffers' loads, the ops with their operand bindings, the stores, how
    many scalar arguments it takes (s0..) and whether it is vector code (VEC elements per
    work-item, as the contiguous kernels)."""

    def __init__(self, nbufs, loads, ops, stores, nscalars=0, vector=False):
        self.nbufs, self.loads, self.ops, self.stores = nbufs, tuple(loads), tuple(ops), \
            tuple(stores)
        self.nscalars, self.vector = nscalars, vector
        text = repr((nbufs, self.loads, self.ops, self.stores, nscalars, vector))
        self.name = "fused_" + hashlib.sha256(text.encode()).hexdigest()[:16]
        self._key = text

    def __eq__(self, other):
        return isinstance(other, Chain) and self._key == other._key

    def __hash__(self):
        return hash(self._key)


FUSED = KernelFamily("fused", lambda v: dict(dt=v[0], entries=[], bool_dt=dtypes.bool_,
                                             special=False, chains=[v[1]]),
                     tag=lambda v: f"{v[0].short}_{v[1].name}")


def _literal(v, dt):
    """A number as an exact literal of the compute type (hex floats: no decimal rounding)."""
    v = float(np.float32(v)) if dt is dtypes.float32 else float(v)
    if math.isnan(v):
        return "NAN"
    if math.isinf(v):
        return "INFINITY" if v > 0 else "(-INFINITY)"
    return f"({v.hex()}{'f' if dt is dtypes.float32 else ''})"


def _kernel_dtypes():
    """The dtype of each kernel of an elementwise float program that a device has made, by the
    kernel object's id: what a recorded or held-back launch's kernel is an elementwise kernel of.
    (Asking a kernel for its program fails on Intel's runtime once the program is released.)"""
    progs = {prog.id: key[1] for key, prog in PROGRAMS.items()
             if len(key) == 2 and key[1] in FLOATS}
    found = {}
    for dev in devices():
        for key, k in list(dev.kernels.items()):
            if len(key) == 2 and key[0] in progs:
                found[id(k)] = progs[key[0]]
    return found


def _entry_of(kernel, dts):
    """(entry, dtype, variant) of a contiguous elementwise kernel (`<op>_c_<pattern>`) that a
    chain can take (float32 / float64, tensor operands only, a result of the operands' dtype),
    else None."""
    name, _, variant = kernel.function_name.rpartition("_c_")
    e = ENTRIES.get(name)
    if e is None or variant not in ("t", "tt", "ts"):
        return None
    dt = dts.get(id(kernel))
    if dt is None or e.out == "bool" or e.group or "f" not in e.exprs or \
            set(e.operands) != {"T"}:
        return None
    return e, dt, variant


def _fusable(op, dts):
    """(device, dtype, n, entry, (out buffer, offset), [(operand buffer, offset)], scalar,
    params) of a recorded launch of a contiguous elementwise kernel whose operands all walk
    their buffers (step 1), or None."""
    kind, payload = op
    if kind != "launch":
        return None
    dev, kernel, _, _, args = payload
    found = _entry_of(kernel, dts)
    if found is None:
        return None
    e, dt, variant = found
    operands = [(args[2], args[3])]
    steps = [args[4]]
    scalar = None
    rest = 5
    if variant == "tt":
        operands.append((args[5], args[6]))
        steps.append(args[7])
        rest = 8
    elif variant == "ts":
        scalar = args[5]
        rest = 6
    if any(s != 1 for s in steps):          # 0 repeats an operand's first element
        return None
    return (dev, dt, args[-1], e, (args[0], args[1]), operands, scalar, args[rest:-1])


def fuse(ops, dead):
    """ops: a recording's (kind, payload) list; dead: ids of the buffers no live tensor holds at
    the end. Returns the list with each fusable run replaced by one launch."""
    last_use = {}
    for i, (kind, payload) in enumerate(ops):
        if kind == "launch":
            for a in payload[4]:
                last_use[id(a)] = i
        elif kind in ("copy", "check", "fill"):
            for a in payload[1:3]:
                last_use[id(a)] = i
    dts = _kernel_dtypes()
    out = []
    i = 0
    while i < len(ops):
        first = _fusable(ops[i], dts)
        if first is None:
            out.append(ops[i])
            i += 1
            continue
        run, offsets = [], {}
        j = i
        while j < len(ops):
            f = _fusable(ops[j], dts)
            if f is None or f[0] is not first[0] or f[1] is not first[1] or f[2] != first[2]:
                break
            bufs = [f[4]] + f[5]
            here = {}               # one buffer at two offsets, here or before, is not element-wise
            if any(offsets.get(id(b), here.setdefault(id(b), o)) != o for b, o in bufs):
                break
            new = {id(b) for b, _ in bufs} - offsets.keys()
            if len(offsets) + len(new) > MAX_BUFFERS:
                break
            for b, o in bufs:
                offsets[id(b)] = o
            run.append(f)
            j += 1
        if len(run) < 2:
            out.append(ops[i])
            i += 1
            continue
        out.append(_fused_launch(run, j - 1, last_use, dead))
        i = j
    return out


def _fused_launch(run, end, last_use, dead):
    dev, dt, n = run[0][0], run[0][1], run[0][2]
    slots = {}                    # id(buffer) -> (slot, buffer, offset)
    reg = {}                      # id(buffer) -> the variable holding its current value
    loads, body, written = [], [], {}

    def slot(buf, off):
        s = slots.get(id(buf))
        if s is None:
            s = slots[id(buf)] = (len(slots), buf, off)
        return s[0]

    for k, (_, _, _, e, (obuf, ooff), operands, scalar, params) in enumerate(run):
        names, values = [], []
        for nm, (buf, off) in zip("xyz", operands):
            if id(buf) not in reg:
                s = slot(buf, off)
                reg[id(buf)] = f"l{s}"
                loads.append((s, f"l{s}"))
            names.append(nm)
            values.append(reg[id(buf)])
        if scalar is not None:
            names.append("y")
            values.append(_literal(scalar, dt))
        for p, v in enumerate(params):
            names.append(f"p{p}")
            values.append(_literal(v, dt))
        var = f"t{k}"
        body.append((var, e.exprs["f"], tuple(names), tuple(values)))
        slot(obuf, ooff)
        reg[id(obuf)] = var
        written[id(obuf)] = var
    stores = [(slots[b][0], var) for b, var in written.items()
              if b not in dead or last_use.get(b, -1) > end]
    vector = all(f[3].vector_code(dt) for f in run)
    chain = Chain(len(slots), loads, body, stores, vector=vector)
    kernel = get_kernel(dev, FUSED.program((dt, chain)), chain.name)
    args = []
    for s, buf, off in sorted(slots.values(), key=lambda s: s[0]):
        args += [buf, off]
    args.append(n)
    gs, ls = grid(dev, -(-n // vec_width(dev, dt)) if vector else n)
    return ("launch", (dev, kernel, gs, ls, tuple(args)))


recording.Recording.fuser = staticmethod(fuse)


# ---- eager: runs of the tiny launches a device holds back ------------------------------------
# A device holds back launches of tiny kernels and enqueues them in bursts (Device.defer). When a
# burst holds a run of contiguous elementwise launches over one float dtype and size, the run
# costs one enqueue instead of one per op. A new structure (which kernels, which of them share a
# buffer) is a program build, about 100 ms on PoCL, against about 2 us saved per launch (9 us on
# NVIDIA): a structure is fused once it has been seen often enough to have saved HOT_LAUNCHES
# launches (a 64-launch run on its 4th sighting, a 2-launch run on its 200th); then its kernel
# takes the run's place. Unlike a recording's, an eager run stores every result it writes:
# whether a tensor is read later is not known here, and a tiny tensor's stores cost nothing.
HOT_LAUNCHES = 200
MAX_STRUCTURES = 4096         # structures counted; past that the counts start again
_specs = {}                   # id(cl.Kernel) -> (the kernel, _spec's answer)
_runs = {}                    # structure -> launches it would have saved, or its fused kernel's
                              # (kernel, vector, geometries), or None (cannot be built)
_SIXTEEN = {dtypes.float32: cltypes.float16, dtypes.float64: cltypes.double16}
_OUT_X = (0, 2)                 # where a launch's (buffer, offset) pairs are: out, x (and y)
_OUT_X_Y = (0, 2, 5)


def _spec(kernel):
    """(entry, dtype, variant, whether the kernel is vector code, _OUT_X_Y for two tensor
    operands else (), where its numbers start in its arguments) of a kernel a run can take."""
    s = _specs.get(id(kernel))
    if s is None or s[0] is not kernel:
        found = _entry_of(kernel, _kernel_dtypes())
        if found is not None:
            e, dt, variant = found
            found += (e.vector_code(dt), _OUT_X_Y if variant == "tt" else (),
                      8 if variant == "tt" else 5)
        s = _specs[id(kernel)] = (kernel, found)
    return s[1]


def fuse_deferred(dev, items):
    """items: a device's held-back launches, (kernel, gsize, lsize, args) in order. Returns them
    with each run that has a fused kernel replaced by one launch of it; memory ends as the
    launches would leave it. A run seen for the first time is only counted:

    >>> import clgrad
    >>> d = clgrad.runtime.default_device(); x = clgrad.ones(8); clgrad.cl.synchronize()
    >>> y = (x * 2 + 1) * 3                 # three launches, held back
    >>> items = list(d._deferred)
    >>> [k.function_name for k, *_ in items], len(fuse_deferred(d, items))
    (['mul_c_ts', 'add_c_ts', 'mul_c_ts'], 3)
    >>> y.tolist()
    [9.0, 9.0, 9.0, 9.0, 9.0, 9.0, 9.0, 9.0]
    """
    specs = _specs
    out = []
    i, total = 0, len(items)
    while i < total:
        first = _spec(items[i][0])
        if first is None or i + 1 == total or _spec(items[i + 1][0]) is None:
            out.append(items[i])
            i += 1
            continue
        # one dtype and size; vector code throughout or scalar code throughout, so that each
        # element is computed by the form that computes it unfused
        dt, vec, n = first[1], first[3], items[i][3][-1]
        slots, bufs, offs, key, scalars = {}, [], [], [], []
        j = i
        while j < total:
            kernel, _, _, args = items[j]
            s = specs.get(id(kernel))
            spec = s[1] if s is not None and s[0] is kernel else _spec(kernel)
            if spec is None or spec[1] is not dt or spec[3] is not vec or args[-1] != n or \
                    args[4] != 1 or (spec[4] and args[7] != 1):
                break
            nb, nk = len(bufs), len(key)
            key.append(id(kernel))
            for p in spec[4] or _OUT_X:
                b = args[p]
                s = slots.get(id(b))
                if s is None:
                    s = slots[id(b)] = len(bufs)
                    bufs.append(b)
                    offs.append(args[p + 1])
                elif offs[s] != args[p + 1]:
                    break              # one buffer at two offsets is not element-wise
                key.append(s)
            else:
                if len(bufs) <= MAX_BUFFERS:
                    scalars += args[spec[5]:-1]
                    j += 1
                    continue
            for b in bufs[nb:]:        # the launch does not join: the run ends before it
                del slots[id(b)]
            del bufs[nb:], offs[nb:], key[nk:]
            break
        if j - i < 2:
            out.append(items[i])
            i += 1
            continue
        key = tuple(key)
        plan = _runs.get(key, 0)
        if type(plan) is int:
            plan += j - i - 1
            if plan < HOT_LAUNCHES:
                if len(_runs) >= MAX_STRUCTURES:
                    _runs.clear()
                _runs[key] = plan
                plan = None
            else:
                plan = _runs[key] = _build_run(dev, items[i:j], dt)
        if plan is None:
            out.extend(items[i:j])
        else:
            kernel, vector, sizes = plan
            geometry = sizes.get(n)
            if geometry is None:
                geometry = sizes[n] = grid(dev, -(-n // vec_width(dev, dt)) if vector else n)
            args = []
            for b, o in zip(bufs, offs):
                args += (b, o)
            if scalars:
                packed = np.zeros(-(-len(scalars) // 16) * 16, dt.np)
                packed[:len(scalars)] = scalars
                args.extend(packed.view(_SIXTEEN[dt]))
            args.append(n)
            out.append((kernel, geometry[0], geometry[1], args))
        i = j
    return out


def _build_run(dev, run, dt):
    """The fused kernel of a run of held-back launches (its numbers are arguments s0..), with its
    vector flag and a memo of launch geometries; None (the run stays as it is) if it cannot be
    built, with a warning: the launches are never lost."""
    slots, loads, body, written, nscalars = {}, [], [], {}, 0
    reg = {}
    for k, (kernel, _, _, args) in enumerate(run):
        e, _, variant = _spec(kernel)[:3]
        if variant == "tt":
            operands, nscalar, rest = (args[2], args[5]), 0, 8
        else:
            operands, nscalar, rest = (args[2],), int(variant == "ts"), 5 + (variant == "ts")
        for buf in (args[0],) + operands:           # slots numbered as fuse_deferred numbers them
            slots.setdefault(id(buf), len(slots))
        names, values = [], []
        for nm, buf in zip("xyz", operands):
            if id(buf) not in reg:
                s = slots[id(buf)]
                reg[id(buf)] = f"l{s}"
                loads.append((s, f"l{s}"))
            names.append(nm)
            values.append(reg[id(buf)])
        if nscalar:
            names.append("y")
            values.append(f"s{nscalars}")
            nscalars += 1
        for p in range(len(args) - 1 - rest):
            names.append(f"p{p}")
            values.append(f"s{nscalars}")
            nscalars += 1
        var = f"t{k}"
        body.append((var, e.exprs["f"], tuple(names), tuple(values)))
        reg[id(args[0])] = var
        written[slots[id(args[0])]] = var
    vector = _spec(run[0][0])[3]
    chain = Chain(len(slots), loads, body, sorted(written.items()), nscalars, vector)
    try:
        kernel = get_kernel(dev, FUSED.program((dt, chain)), chain.name)
    except Exception as err:    # a driver's failure to build must not lose the launches
        warnings.warn(f"clgrad: a run of {len(run)} elementwise launches could not be fused on "
                      f"{dev}: {err}", RuntimeWarning)
        return None
    return kernel, vector, {}


Device.deferred_fuser = fuse_deferred
