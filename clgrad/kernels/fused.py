"""The fused family (cl_kernels/fused.mako): chains of elementwise ops found in a compiled step's
recording, made one kernel from the elementwise table's own expressions.

When a capture ends, `fuse` walks the recorded launches: a run of consecutive launches of the
elementwise family's contiguous kernels (`<op>_c_<pattern>`, which name their table entry) over
float32 / float64 tensors of one size, each operand walking its buffer (or repeating one element
of it, never written in the run) and every buffer addressed at one offset, becomes one launch of
a generated kernel. Each work-item then
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
from .epilogue import buffer_uses, fold_copies, fold_copy_chains, relu_epilogues

MAX_BUFFERS = 24            # kernel arguments stay far below every device's limit
FLOATS = (dtypes.float32, dtypes.float64)


class Chain:
    """One fused kernel: its buffers' loads, the ops with their operand bindings, the stores, how
    many scalar arguments it takes (s0..), whether it is vector code (VEC elements per
    work-item, as the contiguous kernels) and which buffers it reads one element of (repeated
    operands)."""

    def __init__(self, nbufs, loads, ops, stores, nscalars=0, vector=False, repeated=()):
        self.nbufs, self.loads, self.ops, self.stores = nbufs, tuple(loads), tuple(ops), \
            tuple(stores)
        self.nscalars, self.vector, self.repeated = nscalars, vector, tuple(sorted(repeated))
        text = repr((nbufs, self.loads, self.ops, self.stores, nscalars, vector, self.repeated))
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


def _kernel_homes():
    """The dtype and device of each kernel of an elementwise float program that a device has
    made, by the kernel object's id. (Asking a kernel for its program fails on Intel's runtime
    once the program is released.)"""
    progs = {prog.id: key[1] for key, prog in PROGRAMS.items()
             if len(key) == 2 and key[1] in FLOATS}
    found = {}
    for dev in devices():
        for key, k in list(dev.kernels.items()):
            if len(key) == 2 and key[0] in progs:
                found[id(k)] = (progs[key[0]], dev)
    return found


_specs = {}                   # id(cl.Kernel) -> (the kernel, _spec's answer)
_OUT_X = (0, 2)               # where a launch's (buffer, offset) pairs are: out, x (and y)
_OUT_X_Y = (0, 2, 5)


def _spec(kernel):
    """(entry, dtype, variant, whether the kernel is vector code, where its (buffer, offset)
    pairs are, where its numbers start in its arguments, device) of a contiguous elementwise
    kernel (`<op>_c_<pattern>`) that a chain can take: float32 / float64, tensor operands only,
    a result of the operands' dtype. None for any other kernel. Memoised per kernel."""
    s = _specs.get(id(kernel))
    if s is None or s[0] is not kernel:
        found = None
        name, _, variant = kernel.function_name.rpartition("_c_")
        e = ENTRIES.get(name)
        if e is not None and variant in ("t", "tt", "ts") and e.out != "bool" and \
                not e.group and "f" in e.exprs and set(e.operands) == {"T"}:
            home = _kernel_homes().get(id(kernel))
            if home is not None:
                dt, dev = home
                tt = variant == "tt"
                found = (e, dt, variant, e.vector_code(dt), _OUT_X_Y if tt else _OUT_X,
                         8 if tt else 5, dev)
        s = _specs[id(kernel)] = (kernel, found)
    return s[1]


def _runs(items):
    """Each run of consecutive launches that one fused kernel can take, as (i, j, buffers,
    offsets, structure, numbers) for items[i:j] (j - i >= 2). items: (kernel, gsize, lsize,
    args) per launch, None for other work (a copy, a fill). A run has one device, dtype and size,
    and vector code throughout or scalar code throughout (so that each element is computed by
    the form that computes it unfused); its operands walk their buffers (step 1) or repeat one
    element (step 0: a 0-d tensor operand, a loss scale), each buffer at one offset (element i
    of every launch is element i of every buffer) and walked throughout or repeated throughout
    (a repeated one is never written: element 0 would be another work-item's), at most
    MAX_BUFFERS of them. Buffers are numbered in order of appearance (out, x, y of each launch);
    the structure (the kernels, those numbers, -1 - the number for a repeated operand) is what
    makes two runs one fused kernel."""
    specs = _specs
    i, total = 0, len(items)
    while i < total:
        first = items[i] and _spec(items[i][0])
        if not first or i + 1 == total or not items[i + 1] or _spec(items[i + 1][0]) is None:
            i += 1
            continue
        dt, vec, dev, n = first[1], first[3], first[6], items[i][3][-1]
        slots, bufs, offs, steps, key, numbers = {}, [], [], [], [], []
        j = i
        while j < total and items[j] is not None:
            kernel, _, _, args = items[j]
            s = specs.get(id(kernel))
            spec = s[1] if s is not None and s[0] is kernel else _spec(kernel)
            if spec is None or spec[1] is not dt or spec[3] is not vec or spec[6] is not dev or \
                    args[-1] != n:
                break
            nb, nk = len(bufs), len(key)
            key.append(id(kernel))
            for p in spec[4]:
                b = args[p]
                walks = p == 0 or args[p + 2] == 1     # an operand's step: 1, or 0 (element 0)
                s = slots.get(id(b))
                if s is None:
                    s = slots[id(b)] = len(bufs)
                    bufs.append(b)
                    offs.append(args[p + 1])
                    steps.append(walks)
                elif offs[s] != args[p + 1] or steps[s] != walks:
                    break              # one buffer at two offsets (or walked and repeated, or
                                       # repeated and written) is not element-wise
                key.append(s if walks else -1 - s)
            else:
                if len(bufs) <= MAX_BUFFERS:
                    numbers += args[spec[5]:-1]
                    j += 1
                    continue
            for b in bufs[nb:]:        # the launch does not join: the run ends before it
                del slots[id(b)]
            del bufs[nb:], offs[nb:], steps[nb:], key[nk:]
            break
        if j - i >= 2:
            yield i, j, bufs, offs, key, numbers
            i = j
        else:
            i += 1


def _chain(run, dt, vector, literal, keep):
    """The Chain of a run (as _runs found it): each op the table's expression over earlier
    results, loaded elements and its numbers (literals if `literal`, else the kernel's arguments
    s0.. in order); the buffers it writes are stored where keep(buffer number) says so."""
    slots, reg, loads, body, written, nums, repeated = {}, {}, [], [], {}, 0, set()
    for k, (kernel, _, _, args) in enumerate(run):
        e, _, variant, _, where, start, _ = _spec(kernel)
        for p in where:                     # numbered as _runs numbers them
            slots.setdefault(id(args[p]), len(slots))
        names, values = [], []
        for nm, p in zip("xy", where[1:]):
            b = id(args[p])
            if b not in reg:
                reg[b] = f"l{slots[b]}"
                loads.append((slots[b], reg[b]))
                if args[p + 2] == 0:
                    repeated.add(slots[b])
            names.append(nm)
            values.append(reg[b])
        for m, v in enumerate(args[start:-1]):
            names.append("y" if variant == "ts" and m == 0 else f"p{m - (variant == 'ts')}")
            values.append(_literal(v, dt) if literal else f"s{nums}")
            nums += 1
        var = f"t{k}"
        body.append((var, e.exprs["f"], tuple(names), tuple(values)))
        reg[id(args[0])] = var
        written[slots[id(args[0])]] = var
    stores = sorted((s, var) for s, var in written.items() if keep(s))
    return Chain(len(slots), loads, body, stores, 0 if literal else nums, vector, repeated)


def _geometry(dev, dt, vector, n):
    return grid(dev, -(-n // vec_width(dev, dt)) if vector else n)


def fuse(ops, dead, frees):
    """ops: a recording's (kind, payload) list; dead: ids of the buffers no live tensor holds at
    the end; frees: where tensors were freed (Recording._frees), for the folds of copies and
    relus into the launch before them (clgrad/kernels/epilogue.py), which go first. Returns the
    list with each fusable run replaced by one launch, its numbers baked in and its results
    stored only where something after the run reads them or a live tensor holds them."""
    ops, frees = fold_copy_chains(ops, frees)
    ops, frees = fold_copies(ops, frees, _spec)
    ops, frees = relu_epilogues(ops, frees, _spec)
    last_use = {b: uses[-1] for b, uses in buffer_uses(ops)[0].items()}
    items = [payload[1:] if kind == "launch" else None for kind, payload in ops]
    out, done = [], 0
    for i, j, bufs, offs, _, _ in _runs(items):
        out.extend(ops[done:i])
        done = j
        _, dt, _, vector, _, _, dev = _spec(items[i][0])
        chain = _chain(items[i:j], dt, vector, True, lambda s: id(bufs[s]) not in dead or
                       last_use.get(id(bufs[s]), -1) >= j)
        kernel = get_kernel(dev, FUSED.program((dt, chain)), chain.name)
        n = items[i][3][-1]
        args = [a for pair in zip(bufs, offs) for a in pair] + [n]
        out.append(("launch", (dev, kernel, *_geometry(dev, dt, vector, n), tuple(args))))
    out.extend(ops[done:])
    return out


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
_hot = {}                     # structure -> launches it would have saved, or its fused kernel's
                              # (kernel, vector, geometries), or None (cannot be built)
_SIXTEEN = {dtypes.float32: cltypes.float16, dtypes.float64: cltypes.double16}


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
    out, done = [], 0
    for i, j, bufs, offs, key, numbers in _runs(items):
        key = tuple(key)
        plan = _hot.get(key, 0)
        if type(plan) is int:
            plan += j - i - 1
            if plan < HOT_LAUNCHES:
                if len(_hot) >= MAX_STRUCTURES:
                    _hot.clear()
                _hot[key] = plan
                continue                    # the run stays as it is
            plan = _hot[key] = _build(dev, items[i:j])
            if plan is None:
                continue
        out.extend(items[done:i])
        done = j
        kernel, dt, vector, sizes = plan
        n = items[i][3][-1]
        geometry = sizes.get(n)
        if geometry is None:
            geometry = sizes[n] = _geometry(dev, dt, vector, n)
        args = [a for pair in zip(bufs, offs) for a in pair]
        if numbers:
            packed = np.zeros(-(-len(numbers) // 16) * 16, dt.np)
            packed[:len(numbers)] = numbers
            args.extend(packed.view(_SIXTEEN[dt]))
        args.append(n)
        out.append((kernel, geometry[0], geometry[1], args))
    out.extend(items[done:])
    return out


def _build(dev, run):
    """The fused kernel of a run of held-back launches (its numbers are arguments, every result
    stored), with its dtype, vector flag and a memo of launch geometries; None (the run stays as
    it is) if it cannot be built, with a warning: the launches are never lost."""
    _, dt, _, vector, _, _, _ = _spec(run[0][0])
    chain = _chain(run, dt, vector, False, lambda s: True)
    try:
        kernel = get_kernel(dev, FUSED.program((dt, chain)), chain.name)
    except Exception as err:    # a driver's failure to build must not lose the launches
        warnings.warn(f"clgrad: a run of {len(run)} elementwise launches could not be fused on "
                      f"{dev}: {err}", RuntimeWarning)
        return None
    return kernel, dt, vector, {}


Device.deferred_fuser = fuse_deferred
