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

import numpy as np

from .. import dtypes
from ..runtime import recording
from ..runtime.device import devices
from ..runtime.family import KernelFamily
from ..runtime.kernels import get_kernel, grid
from .elementwise import ENTRIES, PROGRAMS

MAX_BUFFERS = 24            # kernel arguments stay far below every device's limit
FLOATS = (dtypes.float32, dtypes.float64)


class Chain:
    """One fused kernel: its buffers' loads, the ops with their operand bindings, the stores."""

    def __init__(self, nbufs, loads, ops, stores):
        self.nbufs, self.loads, self.ops, self.stores = nbufs, tuple(loads), tuple(ops), \
            tuple(stores)
        text = repr((nbufs, self.loads, self.ops, self.stores))
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


def _program_dtypes():
    """The dtype of each built elementwise program, by its driver handle: what a recorded
    launch's kernel is an elementwise kernel of."""
    found = {}
    for key, prog in PROGRAMS.items():
        if len(key) == 2 and key[1] in FLOATS:
            for dev in devices():
                for (pid, _), built in list(dev.programs.items()):
                    if pid == prog.id:
                        found[built.int_ptr] = key[1]
    return found


def _fusable(op, dts):
    """(device, dtype, n, entry, (out buffer, offset), [(operand buffer, offset)], scalar,
    params) of a recorded launch of a contiguous elementwise kernel whose operands all walk
    their buffers (step 1), or None."""
    kind, payload = op
    if kind != "launch":
        return None
    dev, kernel, _, _, args = payload
    name, _, variant = kernel.function_name.rpartition("_c_")
    e = ENTRIES.get(name)
    if e is None or variant not in ("t", "tt", "ts"):
        return None
    dt = dts.get(kernel.program.int_ptr)
    if dt is None or e.out == "bool" or e.group or "f" not in e.exprs or \
            set(e.operands) != {"T"}:
        return None
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
    dts = _program_dtypes()
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
            if any(offsets.get(id(b), o) != o for b, o in bufs):
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
    chain = Chain(len(slots), loads, body, stores)
    kernel = get_kernel(dev, FUSED.program((dt, chain)), chain.name)
    args = []
    for s, buf, off in sorted(slots.values(), key=lambda s: s[0]):
        args += [buf, off]
    args.append(n)
    gs, ls = grid(dev, n)
    return ("launch", (dev, kernel, gs, ls, tuple(args)))


recording.Recording.fuser = staticmethod(fuse)
