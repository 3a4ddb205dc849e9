"""The index family (cl_kernels/index.mako): reads and writes at addresses moved by index tensors.
A `gather` reads data at those addresses, a `scatter` writes there, `scatter_add` adds there
atomically (duplicate indices sum) and `scatter_combine` multiplies or takes the maximum or
minimum by compare-and-swap; besides them the bounds check of index tensors, the two passes of
nonzero, tril / triu (`tri`) and the class targets of nll_loss. Raw launches: no autograd (the
ops are clgrad/ops/index.py, subscript.py, scatter_gather.py, scatter_reduce.py).

Each launch walks an iteration shape: the data operands give their strides over it, and up to
SLOTS index tensors ("slots") each add (its value, wrapped when negative) * mul to the data
address. More index tensors than that are folded into one by the caller (ops/index.py).

Accumulation uses atomics (but index_add of contiguous rows on CPU code paths, by lines:
index_add_lines_raw): integer atomic_add, and compare-and-swap loops for floats and for 16-
and 8-bit types (on the 32-bit word that holds the element). 64-bit types need
cl_khr_int64_base_atomics; on a device without it scatter_add is done on the host with numpy.

>>> import clgrad
>>> x = clgrad.arange(9.0).reshape(3, 3)
>>> i = clgrad.tensor([2, 0])
>>> gather_raw(x, (2,), [0], 0, [Slot(i, [1], 3, 3)]).tolist()       # rows 2 and 0, column 0
[6.0, 0.0]
>>> tri_raw(clgrad.empty(3, 3), x, 0, False).tolist()
[[0.0, 0.0, 0.0], [3.0, 4.0, 0.0], [6.0, 7.0, 8.0]]
>>> nonzero_raw(clgrad.tensor([0, 3, 0, 5])).tolist()
[[1], [3]]
"""
import numpy as np
import pyopencl as cl

from .. import dtypes
from ..dtypes import ALL as ALL_DTYPES
from ..runtime.family import KernelFamily
from ..runtime.kernels import grid, vec_width
from ..runtime.recording import checked_read
from ..tensor import empty_tensor, numel_of, real_view, upload
from ._layout import (check_dims, collapse, expand_strides, launch_walk, pack8, pack8_right,
                      view_raw)
from ._lines import line_grid
from .copy import contiguous_raw, scalar_for

SLOTS = 4               # index tensors one launch takes; more are folded into one by the caller
INDEX = KernelFamily("index", lambda dt: dict(dt=dt, SLOTS=SLOTS, lines=False), ALL_DTYPES)
# index_add by lines (index_add_lines_v): programs of their own, so that the index programs every
# indexing op and strided copy builds are not rebuilt for it
LINES_DTYPES = [dt for dt in ALL_DTYPES if dt.kind in "fiu"]
INDEX_LINES = KernelFamily("index", lambda dt: dict(dt=dt, SLOTS=SLOTS, lines=True),
                           LINES_DTYPES, tag=lambda dt: dt.short + "_lines")
_ZERO8 = pack8([])


class Slot:
    """An index tensor as the kernels read it: at iteration coordinates c its value is
    t[t._offset + c . strides]; that value, wrapped by `size` when negative, moves the data address
    by value * mul."""

    __slots__ = ("t", "strides", "mul", "size")

    def __init__(self, t, strides, mul, size):
        self.t, self.strides, self.mul, self.size = t, list(strides), mul, size


def _launch(name, dt, dev, shape, operands, slots, scalars=()):
    """Launch kernel `name` over `shape`: operands are the data operands' (tensor, element
    offset in its storage, strides over shape), scalars the arguments that follow them in the
    kernel's signature."""
    if len(slots) > SLOTS:
        raise ValueError(f"{name}: {len(slots)} index tensors, the kernels take {SLOTS}: fold "
                         f"them first (ops.index.fit_slots)")
    cshape, cst = collapse(shape, [list(st) for _, _, st in operands] + [s.strides for s in slots])
    check_dims(name, len(cshape))
    args = []
    for (t, off, _), st in zip(operands, cst):
        args += [t._storage.buf, off, pack8_right(st)]
    args += list(scalars)
    args.append(len(slots))
    for k in range(SLOTS):
        if k < len(slots):
            s = slots[k]
            args += [s.t, pack8_right(cst[len(operands) + k]), s.mul, s.size]
        else:                                    # an unused slot: any buffer, never read
            args += [operands[0][0]._storage.buf, 0, _ZERO8, 0, 1]
    launch_walk(dev, INDEX.kernel(dev, dt, name), numel_of(shape), cshape, *args)


def real_part_of(t, k):
    """Part k (0 real, 1 imaginary) of complex t as a real strided view (same storage)."""
    r = real_view(t)
    return view_raw(r, t._shape, r._strides[:-1], r._offset + k)


def gather_raw(x, shape, strides, offset, slots):
    """A new contiguous tensor of `shape` whose element c is x's storage at
    offset + c . strides + the slots' terms."""
    dev = x._storage.device
    out = empty_tensor(tuple(shape), x._dtype, dev)
    if out.numel():
        _launch("gather", x._dtype, dev, shape, [(out, out._offset, out._strides),
                                                 (x, offset, strides)], slots)
    return out


def scatter_raw(dst, shape, strides, offset, src, src_strides, slots, accumulate=False, alpha=1):
    """For every c in `shape`: dst's storage at offset + c . strides + the slots' terms gets
    src (of dst's dtype) at src._offset + c . src_strides, or has it added (times alpha)."""
    dt, dev = dst._dtype, dst._storage.device
    if not numel_of(shape):
        return dst
    if accumulate and dt.kind == "c":
        # complex: each part accumulated into the real view's parts (addresses in part units:
        # strides, offsets and the slots' steps doubled)
        rslots = [Slot(s.t, s.strides, 2 * s.mul, s.size) for s in slots]
        for k in (0, 1):
            scatter_raw(real_part_of(dst, k), shape, [2 * st for st in strides], 2 * offset + k,
                        real_part_of(src, k), [2 * st for st in src_strides], rslots, True,
                        complex(alpha).real)
        return dst
    if accumulate and dt.ct in ("double", "long") and not dev.has_int64_atomics:
        return _scatter_add_host(dst, shape, strides, offset, src, src_strides, slots, alpha)
    operands = [(dst, offset, strides), (src, src._offset, src_strides)]
    if accumulate:
        _launch("scatter_add", dt, dev, shape, operands, slots, [scalar_for(dt, alpha)])
    else:
        _launch("scatter", dt, dev, shape, operands, slots)
    return dst


# index_add by lines wants at least this many vectors of lines per compute unit; with fewer, a
# few work-items walking a long index alone would be the launch
LINES_PER_UNIT = 2
# Set by clgrad.use_deterministic_algorithms: index_add of contiguous rows goes by lines (sums in
# index order: the same bits on every run) on every code path and however few the lines, where
# it would otherwise scatter with atomic adds, whose order (and so the last bits) can vary on a GPU
deterministic = False


def index_add_lines_raw(dst, dim, index, src, alpha=1):
    """dst.index_add_(dim, index, src, alpha=alpha) by lines (cl_kernels/index.mako's
    index_add_lines_v: a work-item per vector of lines across dim walks the whole index, no
    atomics, sums in index order) where that is the way: CPU code paths (any path under
    use_deterministic_algorithms, however few the lines), a real or integer dtype, an int64
    index (1-d), the dims before dim one stride in both tensors and those after
    it contiguous in both, a multiple of the vector width, and enough lines. Returns whether it
    ran (else the caller scatters). The index is checked already. An embedding's backward
    (PoCL, 1024 rows of 128 floats into 65): 16.5 us against 438 by atomics.

    >>> import clgrad                    # index_add_ comes here first (by lines on CPU paths)
    >>> d = clgrad.zeros(3, 64); s = clgrad.ones(4, 64)
    >>> d.index_add_(0, clgrad.tensor([2, 0, 2, 2]), s)[:, 0].tolist()
    [1.0, 0.0, 3.0]
    """
    dev, dt = dst._storage.device, dst._dtype
    if not (dev.cpu_paths or deterministic) or dt not in LINES_DTYPES or \
            index._dtype is not dtypes.int64 or src._dtype is not dt or len(index._shape) != 1 or \
            len(dst._shape) != len(src._shape) or not dst._shape:
        return False
    N = index._shape[0]
    shape = dst._shape[:dim] + (N,) + dst._shape[dim + 1:]
    sst = expand_strides(src, shape)
    oshape, (d_so, s_so) = collapse(dst._shape[:dim], [dst._strides[:dim], sst[:dim]])
    ishape, (d_si, s_si) = collapse(shape[dim + 1:], [dst._strides[dim + 1:], sst[dim + 1:]])
    outer, inner, w = numel_of(oshape), numel_of(ishape), vec_width(dev, dt)
    if len(oshape) > 1 or len(ishape) != 1 or d_si != [1] or s_si != [1] or inner % w or \
            (outer * inner // w < LINES_PER_UNIT * dev.compute_units and not deterministic):
        return False
    if N == 0:
        return True
    d_so, s_so = (d_so[0], s_so[0]) if oshape else (0, 0)
    # (line_grid: work-groups small enough for every core to take some)
    INDEX_LINES.launch(dev, dt, "index_add_lines_v", line_grid(dev, outer * inner // w),
                       dst._storage.buf, dst._offset, d_so, dst._strides[dim], src._storage.buf,
                       src._offset, s_so, sst[dim], index, index._strides[0], dst._shape[dim],
                       outer, inner, N, scalar_for(dt, alpha))
    return True


def combine_raw(dst, shape, strides, src, src_strides, slots, op):
    """scatter_reduce's compare-and-swap combine: dst's storage at dst._offset + c . strides +
    the slots' terms becomes itself times (op 0), the maximum with (1) or the minimum with (2)
    src at src._offset + c . src_strides, for every c in `shape`."""
    if dst._dtype.kind == "c":
        raise NotImplementedError(f'"scatter_reduce" not implemented for '
                                  f"'{dtypes.TORCH_NAMES[dst._dtype]}'")
    _launch("scatter_combine", dst._dtype, dst._storage.device, shape,
            [(dst, dst._offset, strides), (src, src._offset, src_strides)], slots, [op])
    return dst


def copy_raw(dst, src):
    """dst <- src for tensors of one dtype and shape, any strides (src may be broadcast): the
    scatter kernel with no index, whose chunked walk beats a per-element strided copy on CPUs."""
    return scatter_raw(dst, dst._shape, dst._strides, dst._offset, src,
                       expand_strides(src, dst._shape), [])


def _scatter_add_host(dst, shape, strides, offset, src, src_strides, slots, alpha):
    """scatter_add for 64-bit types on a device without 64-bit atomics: np.add.at on the host."""
    n = numel_of(shape)
    coords = np.indices(shape).reshape(len(shape), n)
    addr = np.full(n, offset, dtype=np.int64) + sum(c * s for c, s in zip(coords, strides))
    for s in slots:
        v = view_raw(s.t, shape, s.strides, s.t._offset)._read_host().reshape(-1)
        addr = addr + np.where(v < 0, v + s.size, v) * s.mul
    vals = view_raw(src, shape, src_strides, src._offset)._read_host().reshape(-1)
    lo, hi = int(addr.min()), int(addr.max())
    span = np.empty(hi - lo + 1, dtype=dst._dtype.np)
    q, isz = dst._storage.device.queue, dst._dtype.itemsize
    cl.enqueue_copy(q, span, dst._storage.buf, src_offset=lo * isz, is_blocking=True)
    np.add.at(span, addr - lo, vals * np.asarray(alpha, dtype=span.dtype))
    cl.enqueue_copy(q, dst._storage.buf, span, dst_offset=lo * isz, is_blocking=True)
    return dst


def first_bad(checks):
    """checks: [(int64 index tensor, lo, hi)]. None when every index lies in [lo, hi), else
    (position in checks, first bad value). One host sync; the host only reads the indices again
    to name the culprit when there is one."""
    live = [(k, t, lo, hi) for k, (t, lo, hi) in enumerate(checks) if t.numel()]
    if not live:
        return None
    dev = live[0][1]._storage.device
    # the flag is uploaded rather than filled: a fill would build the int32 copy program for
    # one zero (a script's first gather paid ~0.4 s on PoCL for it)
    flag = upload(np.zeros(1, np.int32), dtypes.int32, dev)
    kern = INDEX.kernel(dev, dtypes.int64, "check_index")
    for _, t, lo, hi in live:
        shape, (st,) = collapse(t._shape, [list(t._strides)])
        check_dims("index", len(shape))
        launch_walk(dev, kern, t.numel(), shape, t, pack8_right(st), lo, hi, flag._storage.buf)
    seen = np.zeros(1, np.int32)
    checked_read(dev.queue, seen, flag._storage.buf, "index out of range")
    if not seen[0]:
        return None
    for k, t, lo, hi in live:
        a = t._read_host().reshape(-1)
        bad = np.flatnonzero((a < lo) | (a >= hi))
        if bad.size:
            return k, int(a[bad[0]])
    return None          # pragma: no cover - the flag and the host disagree


def nonzero_raw(x):
    """The coordinates of x's nonzero elements in row-major order: int64 (count, x.ndim).

    A compaction without barriers: each work-item counts the nonzeros of its chunk, the host turns
    the counts into starting rows (it has to wait for the total anyway), each work-item writes the
    coordinates of its chunk's nonzeros from its row on."""
    if x._dtype.kind == "c":                  # nonzero where either part is
        # function-level: elementwise's dispatch imports the copy family, as this module does
        from .elementwise import ENTRIES, run
        x = run(ENTRIES["ne"], (x, 0))
    dev = x._storage.device
    nd = len(x._shape)
    check_dims("nonzero", nd)
    n = x.numel()
    if n == 0:
        return empty_tensor((0, nd), dtypes.int64, dev)
    x = contiguous_raw(x)
    chunk = max(64, -(-n // 8192))               # at most 8192 counts travel to the host
    groups = -(-n // chunk)
    counts = empty_tensor((groups,), dtypes.int64, dev)
    geometry = grid(dev, groups)
    INDEX.launch(dev, x._dtype, "nz_count", geometry, x, n, chunk, counts._storage.buf)
    host = np.empty(groups, np.int64)
    cl.enqueue_copy(dev.queue, host, counts._storage.buf, is_blocking=True)
    total = int(host.sum())
    if not (total and nd):
        return empty_tensor((total, nd), dtypes.int64, dev)
    # + the spare rows of nz_write, one per work-item
    out = empty_tensor((total + groups, nd), dtypes.int64, dev)
    starts = upload(np.cumsum(host) - host, dtypes.int64, dev)
    INDEX.launch(dev, x._dtype, "nz_write", geometry, x, starts._storage.buf, out._storage.buf,
                 total, n, chunk, nd, pack8_right(x._shape, 1))
    return view_raw(out, (total, nd), out._strides, 0)


def tri_raw(out, x, diagonal, upper):
    """out <- tril(x, diagonal) (or triu); out may be x itself."""
    n = x.numel()
    if n == 0:
        return out
    dev = x._storage.device
    rows, cols = x._shape[-2], x._shape[-1]
    shape, (ost, xst) = collapse(x._shape, [list(out._strides), list(x._strides)])
    check_dims("tril", len(shape))
    launch_walk(dev, INDEX.kernel(dev, x._dtype, "tri"), n, shape, out, pack8_right(ost), x,
                pack8_right(xst), rows, cols, diagonal, int(upper))
    return out


def class_targets_raw(target, ignore_index, dt):
    """(safe, w) for class-index targets (int64): safe is target with the ignore_index entries
    replaced by 0, w is 1 (dtype dt) where a target counts and 0 where it is ignored; one kernel
    instead of a comparison, a select, a negation and a cast. Not recorded (neither needs a
    gradient)."""
    dev = target._storage.device
    t = contiguous_raw(target)
    safe = empty_tensor(t._shape, dtypes.int64, dev)
    w = empty_tensor(t._shape, dt, dev)
    n = numel_of(t._shape)
    if n:
        INDEX.launch(dev, dt, "class_targets", n, t, n, int(ignore_index), safe._storage.buf,
                     w._storage.buf)
    return safe, w
