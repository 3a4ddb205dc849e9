"""Run every kernel of clgrad under the Oclgrind simulator and fail on anything it reports.

Oclgrind (`pip install clgrad[oclgrind]`) interprets OpenCL kernels work-item by work-item and
checks every memory access: out-of-bounds reads and writes, data races between work-items
(OCLGRIND_DATA_RACES), barriers that only part of a work-group reaches, and misuses of the OpenCL
API (OCLGRIND_CHECK_API). This tool drives every kernel family through clgrad's ops at small sizes
chosen to cross the vector, work-group and tile boundaries, in both code paths
(`Device.set_code_paths(cpu=True)` and `cpu=False`), the CPU ones also with Intel's runtime's
vector widths ("wide") and with PoCL's on an AVX-512 target ("pocl512"), records which kernels
ran, and exits non-zero
on any Oclgrind report, on any op that failed, and on any kernel that never ran.

    python tools/check_kernels.py               # the full check (a few minutes)
    python tools/check_kernels.py --self-test   # Oclgrind catches planted defects
    python tools/check_kernels.py --families reduce,scan --paths gpu

The uninitialised-memory check (OCLGRIND_UNINITIALIZED) stays off: Oclgrind 19.10 aborts on the
LLVM `freeze` instruction that current compilers emit.
"""
import argparse
import atexit
import contextlib
import os
import re
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


# ---- Oclgrind's log ------------------------------------------------------------------------------
# Oclgrind writes one block per finding: a line that says what it is, then indented lines
# (kernel, work-items, the instruction, the source line).
_KERNEL = re.compile(r"^\s*Kernel:\s*(\S+)", re.M)
_FUNCTION = re.compile(r"^\s*Function:\s*(\S+)", re.M)
_LINE = re.compile(r"^\s*At line (\d+)", re.M)
_CREATING = re.compile(r"When creating kernel '(\w+)'")
_WHAT = re.compile(r"(Undefined external function: \S+|Invalid (?:read|write)|[\w-]+ data race"
                   r"|Work-group divergence|Work-item divergence|Uninitialized value"
                   r"|Oclgrind - OpenCL runtime error)")


def _blocks(text):
    block = []
    for line in text.splitlines():
        if line.strip() and not line[0].isspace() and block and \
                not line.startswith("When creating kernel"):
            yield "\n".join(block).rstrip()
            block = []
        if line.strip() or block:
            block.append(line)
    if block:
        yield "\n".join(block).rstrip()


def parse_log(text):
    """The findings in a piece of Oclgrind's output, one per distinct (what, kernel or API
    function, source line): a list of dicts with keys what, kernel, line, count and text (the
    first block). A block starts at a line that is not indented; every block counts, so nothing
    Oclgrind says is dropped.

    >>> f = parse_log("Invalid write of size 4 at global memory address 0x10\\n"
    ...               "\\tKernel: oob\\n\\tAt line 2 (column 61) of input.cl:\\n")
    >>> f[0]["what"], f[0]["kernel"], f[0]["line"]
    ('Invalid write', 'oob', '2')
    """
    found = {}
    for block in _blocks(text):
        head = block.split("\n", 1)[0].strip()
        m = _WHAT.match(head)
        what = m.group(1) if m else head
        k = _KERNEL.search(block) or _FUNCTION.search(block) or _CREATING.search(block)
        line = _LINE.search(block)
        key = (what, k.group(1) if k else "?", line.group(1) if line else "?")
        if key in found:
            found[key]["count"] += 1
        else:
            found[key] = {"what": what, "kernel": key[1], "line": key[2], "count": 1,
                          "text": block}
    return list(found.values())


# API errors that are pyopencl probing, not clgrad's kernels: (function, text in the block, why)
IGNORED = [
    ("clGetDeviceInfo", "CL_INVALID_VALUE",
     "pyopencl asks for device properties of later OpenCL versions; Oclgrind (OpenCL 1.2) answers "
     "CL_INVALID_VALUE and pyopencl takes that as 'absent'"),
    ("clCreateKernel", "Kernel '_source' not found",
     "pyopencl looks for a `_source` attribute on a program, which its __getattr__ turns into a "
     "kernel lookup"),
]


def ignored(finding):
    """The reason a finding is pyopencl's own probing and not a defect, else None."""
    if not finding["what"].startswith("Oclgrind - OpenCL runtime error"):
        return None
    for func, text, why in IGNORED:
        if finding["kernel"] == func and text in finding["text"]:
            return why
    return None


class OclgrindLog:
    """Oclgrind's diagnostics, read back piece by piece. Kernel checks go to the file named by
    OCLGRIND_LOG; API errors (OCLGRIND_CHECK_API) go to the process's stderr whatever that says,
    so stderr is sent to a second file (at the descriptor level: the messages come from C++) and
    whatever in it is not Oclgrind's is passed on to the real stderr."""

    def __init__(self, log_path, err_path):
        self.files = [Path(log_path), Path(err_path)]
        self.pos = [0, 0]
        sys.stderr.flush()
        self.real_stderr = os.fdopen(os.dup(2), "w", buffering=1)
        fd = os.open(err_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(fd, 2)
        os.close(fd)

    def _read(self, i):
        try:
            with open(self.files[i], "rb") as f:
                f.seek(self.pos[i])
                data = f.read()
        except FileNotFoundError:
            return ""
        self.pos[i] += len(data)
        return data.decode("utf-8", "replace")

    def new_text(self):
        sys.stderr.flush()
        text = self._read(0)
        for block in _blocks(self._read(1)):
            if block.startswith(("Oclgrind", "Undefined external function")):
                text += "\n" + block + "\n"
            else:
                self.real_stderr.write(block + "\n")
        return text


def setup_oclgrind_env(log_path):
    """Oclgrind reads its settings when the ICD loader loads it, i.e. at the first platform
    query: this must run before clgrad lists its devices."""
    os.environ["OCLGRIND_DATA_RACES"] = "1"
    os.environ["OCLGRIND_CHECK_API"] = "1"
    os.environ["OCLGRIND_LOG"] = str(log_path)
    os.environ.pop("OCLGRIND_UNINITIALIZED", None)     # aborts on LLVM's freeze, see above
    os.environ.pop("OCLGRIND_QUICK", None)


def find_oclgrind():
    """The Oclgrind device, or None when the simulator is not installed."""
    import clgrad
    for d in clgrad.cl.devices():
        if d.is_simulator:
            return d
    return None


def exact_buffers(pool):
    """Give every tensor a buffer of its own size on this pool's device. The pool's blocks are at
    least 512 bytes and up to 1/8 larger than asked, so an access past a tensor's end would
    usually land in the same block and Oclgrind would not see it. Sizes are rounded up to whole
    32-bit words only: kernels may touch the word that holds a tensor's last byte (the pool
    promises whole words; index.mako's acc_add relies on it)."""
    import pyopencl as cl

    def alloc(nbytes):
        size = max(4, -(-nbytes // 4) * 4)
        rec = pool.recorder            # a capture hands out its own freed buffers first
        buf = rec.alloc(pool, nbytes, size) if rec is not None else None
        if buf is None:
            buf = cl.Buffer(pool.context, cl.mem_flags.READ_WRITE, size)
        return buf, size

    def free(buf, size):
        if pool.recorder is not None:  # a replay may still use it: the recording keeps it
            pool.recorder.free(pool, buf, size)
        # otherwise the buffer is released with its last reference

    pool.alloc, pool.free = alloc, free


# ---- recording launches --------------------------------------------------------------------------
class _Recorded:
    """A cl.Kernel stand-in that notes each launch, then forwards it."""

    __slots__ = ("_k", "_key", "_rec")

    def __init__(self, k, key, rec):
        self._k, self._key, self._rec = k, key, rec

    def __call__(self, *args, **kw):
        self._rec.launched(self._key)
        return self._k(*args, **kw)

    def __getattr__(self, name):
        return getattr(self._k, name)


class Recorder:
    """Which (program, kernel) pairs were launched, per code path. Installs itself by wrapping
    clgrad.runtime.kernels._make_kernel (called once per kernel and device, off the hot path), so
    the memoised kernels the ops keep are the recording stand-ins."""

    def __init__(self):
        from clgrad.runtime import kernels
        self.kernels = kernels
        self.path = None
        self.step = None
        self.runs = defaultdict(set)           # path -> {(program id, kernel name)}
        self.step_kernels = defaultdict(set)    # step -> {(program id, kernel name)}
        self.built = defaultdict(set)           # path -> {program id}
        orig = kernels._make_kernel

        def make_kernel(device, program, name):
            k = orig(device, program, name)
            if isinstance(k, _Recorded):
                return k
            rec = _Recorded(k, (program.id, name), self)
            device.kernels[(program.id, name)] = rec
            self.built[self.path].add(program.id)
            return rec

        kernels._make_kernel = make_kernel

    def launched(self, key):
        self.runs[self.path].add(key)
        self.step_kernels[(self.path, self.step)].add(key)


# ---- driving the ops -----------------------------------------------------------------------------
FAILURES = []      # (what was called, exception text): ops that raised, kernels that would not run


def _try(label, fn, *args, **kw):
    """fn(*args, **kw), noting instead of raising a failure, so one op that fails does not hide
    the kernels of the ops after it."""
    try:
        return fn(*args, **kw)
    except Exception as e:
        FAILURES.append((label, f"{type(e).__name__}: {str(e)[:300]}"))
        return None


def _np_values(dt, shape, rng, low=1):
    import numpy as np
    n = int(np.prod(shape)) if shape else 1
    if dt.kind == "b":
        v = rng.integers(0, 2, n).astype(bool)
    elif dt.kind == "f":
        v = rng.uniform(0.1, 0.9, n)
    elif dt.kind == "c":
        v = rng.uniform(0.1, 0.9, n) + 1j * rng.uniform(-0.9, 0.9, n)
    else:                   # small positive ints: no division by zero, no overflow
        v = rng.integers(low, 6, n)
    return v.reshape(shape)


def _t(dt, shape, dev, rng, low=1):
    import clgrad
    return clgrad.tensor(_np_values(dt, shape, rng, low), dtype=dt, device=dev)


def _strided(dt, shape, dev, rng):
    """A non-contiguous tensor of `shape` (the transpose of a contiguous one)."""
    return _t(dt, shape[::-1], dev, rng).permute(*range(len(shape) - 1, -1, -1))


def _gapped(dt, shape, dev, rng):
    """A tensor of `shape` whose elements are not dense in memory (every other element of its
    last dim): the elementwise ops run their strided kernels on it. (A transposed operand is
    dense: its result is laid out as it is and takes the contiguous kernel.)"""
    return _t(dt, tuple(shape[:-1]) + (2 * shape[-1],), dev, rng)[..., ::2]


def drive_elementwise(dev, dt, rng):
    """Every table entry for this dtype, contiguous, strided and by rows, tensor-tensor,
    tensor-scalar and scalar-tensor, through the table's evaluation (what every elementwise op
    runs)."""
    from clgrad import dtypes
    from clgrad.ops.elementwise import TABLE, run
    from clgrad.runtime.kernels import vec_width
    n_c = 13 if dt.itemsize < 8 else 7               # not a multiple of the vector width: tails
    n_r = 2 * vec_width(dev, dt) + 3
    for e in TABLE.values():
        if dt.kind not in e.exprs:
            continue
        params = [2 if dt.kind != "f" else 0.5] * e.nparams
        for layout in ("contiguous", "strided", "rows"):
            def arg(kind, k):
                d = dt if kind == "T" else dtypes.bool_
                if layout == "contiguous":
                    return _t(d, (n_c,), dev, rng)
                if layout == "strided":
                    return _gapped(d, (3, 5), dev, rng)
                # whole rows of two vectors and a tail in a wider buffer (the rows kernel); the
                # second operand repeats one element along each row (stride 0)
                if k == 0:
                    return _t(d, (3, 2 * n_r), dev, rng)[:, :n_r]
                return _t(d, (3, 1), dev, rng).expand(3, n_r)
            for pat in e.patterns:
                ops = []
                for k, (kind, p) in enumerate(zip(e.operands, pat)):
                    ops.append(arg(kind, k) if p == "t" else
                               (True if dt.kind == "b" else 2 if dt.kind != "f" else 0.5))
                _try(f"{e.name} {pat} {layout}", run, e, ops, params, cdt=dt)
    # several work-groups and a tail; an operand repeated by stride 0 (contiguous kernel) and a
    # broadcast one (strided kernel)
    for name in ("add", "neg", "where", "logical_not", "eq"):
        e = TABLE.get(name)
        if e is None or dt.kind not in e.exprs:
            continue
        big = [_t(dt if k == "T" else dtypes.bool_, (2100,), dev, rng) for k in e.operands]
        _try(f"{name} of 2100", run, e, big, [], cdt=dt)
        if e.arity > 1:
            one = [_t(dt if k == "T" else dtypes.bool_, (1,), dev, rng) for k in e.operands]
            _try(f"{name} with a repeated operand", run, e, [big[0]] + one[1:], [], cdt=dt)
            col = [_t(dt if k == "T" else dtypes.bool_, (3, 1), dev, rng) for k in e.operands]
            row = [_t(dt if k == "T" else dtypes.bool_, (1, 5), dev, rng) for k in e.operands]
            _try(f"{name} broadcast", run, e, [col[0]] + row[1:], [], cdt=dt)


def drive_copy(dev, dt, rng):
    """Casting copies from every dtype (contiguous, transposed, strided, whole rows), fill,
    arange, linspace."""
    import clgrad
    from clgrad.dtypes import ALL
    for src in ALL:
        a = _t(src, (37,), dev, rng)
        clgrad.empty(37, dtype=dt, device=dev).copy_(a)
        dst = clgrad.empty((3, 5), dtype=dt, device=dev)
        dst.copy_(_strided(src, (3, 5), dev, rng))              # a transpose: copy_t
        dst = clgrad.empty((19, 37), dtype=dt, device=dev)      # tiles cut at both edges
        dst.copy_(_strided(src, (19, 37), dev, rng))
        clgrad.empty((3, 5), dtype=dt, device=dev).copy_(_t(src, (3, 10), dev, rng)[:, ::2])
        # rows contiguous on both sides (copy_r): 37 crosses every vector width with a tail
        rows = _t(src, (2, 3, 4, 37), dev, rng).permute(2, 0, 1, 3)
        clgrad.empty((4, 2, 3, 37), dtype=dt, device=dev).copy_(rows)
    clgrad.empty(29, dtype=dt, device=dev).fill_(1)
    clgrad.empty((4, 6), dtype=dt, device=dev)[:, ::2].fill_(1)
    if dt.kind != "b":
        clgrad.arange(0, 21, dtype=dt, device=dev)
        clgrad.linspace(0, 5, 11, dtype=dt, device=dev)


def drive_reduce(dev, dt, rng):
    """Every reduction of the dtype's program over a whole tensor, rows, columns (vectorised and
    not) and a strided walk, with sizes crossing the work-group size and the split into partial
    sums; then the public ops."""
    from clgrad.kernels.reduce import reduce_raw, reductions_for
    x = _t(dt, (3, 300), dev, rng)
    cols = _t(dt, (5, 70), dev, rng)            # >= 64 kept columns of stride 1: colv
    cols2 = _t(dt, (5, 3, 80), dev, rng)[:, :, :70]   # two kept dims of stride 1: col
    small = _t(dt, (7, 5), dev, rng)            # a column reduction of few outputs: r
    long_row = _t(dt, (1, 17000), dev, rng)     # few rows, long: partial sums, second stage
    for R in reductions_for(dt):
        for t, dims in ((x, (0, 1)), (x, (1,)), (cols, (0,)), (cols2, (0,)), (small, (0,)),
                        (long_row, (1,))):
            _try(f"{R.name} over {dims} of {tuple(t.shape)}", reduce_raw, R.name, t, dims, False)
    if dt.kind == "b":
        _try("all/any", lambda: (x.all(), x.any(0), cols.all(-1)))
        return
    _try("public reductions", lambda: (x.sum(), x.sum(-1), cols.prod(0), small.amax(0),
                                       small.argmin(0), x.max(-1), cols.min(0), x.argmax(),
                                       _t(dt, (2, 3, 4, 5), dev, rng).sum((0, 2))))


def drive_scan(dev, dt, rng):
    """Every scan of the dtype's program along the last dim and an outer one, short and blocked,
    forwards and reversed; the cummax/cummin gradient kernels."""
    import clgrad
    from clgrad.kernels import scan as ks
    from clgrad.ops import scan as sc
    long_len = 8300 if dev.cpu_paths else 600   # blocked scans: see kernels.scan.block_size
    for t in (_t(dt, (3, 9), dev, rng), _t(dt, (2, long_len), dev, rng)):
        for name in ks.SCANS[dt]:
            for d in (1, 0):
                _try(f"{name} dim {d} of {tuple(t.shape)}", ks.scan_raw, name, t, d)
        _try("reverse", ks.scan_raw, "cumsum", t, 1, reverse=True)
    _try("public scans", lambda: (t.cumsum(0), t.cummax(1)))
    if dt.kind != "f":
        return
    g = _t(dt, (3, 9), dev, rng)
    for d in (0, 1):
        idx = _t(dt, (3, 9), dev, rng).cummax(d)[1]
        _try("cummax backward", sc.CummaxminBackward.apply, g, idx, d)
        _try("cummax double backward", sc.CummaxminGather.apply, g, idx, d)
    x = _t(dt, (3, 9), dev, rng).requires_grad_()
    v, _ = x.cummin(1)
    _try("cummin grad", lambda: clgrad.autograd.grad(v.sum(), x, create_graph=True))
    _try("logcumsumexp grad", lambda: x.logcumsumexp(0).sum().backward())


def drive_softmax(dev, dt, rng):
    """softmax and log_softmax with their gradients over short and long lines (the one-group
    path of GPUs), contiguous and strided."""
    import clgrad
    import clgrad.nn.functional as F
    from clgrad.kernels import softmax as sm
    probed = sm.native_exp_ok(dev)             # runs the probe kernel once
    # both programs, whatever the probe found: with native_exp and with the full-precision exp
    for native in (True, False):
        sm._NATIVE_EXP_OK[dev] = native
        # rows, long rows (one work-group per line on GPUs), lines across vector lanes with a
        # tail, one work-item per line
        for shape, dim in (((3, 7), -1), ((4, 300), -1), ((5, 6, 3), 1), ((6, 5), 0),
                           ((2, 5, 10), 1), ((3, 4, 3), 1)):
            for f in (F.softmax, F.log_softmax):
                x = _t(dt, shape, dev, rng).requires_grad_()
                y = f(x, dim)
                y.backward(clgrad.ones_like(y))
        x = _strided(dt, (300, 4), dev, rng)
        F.softmax(x, 0); F.log_softmax(x, 0)
        # causal attention scores (CPU paths): rows with a vector tail, more queries than keys,
        # an offset (a block of query rows)
        from clgrad.ops.softmax import CausalSoftmax
        if sm.causal_rows(dev, x):
            for shape, first in (((2, 9, 11), 0), ((3, 4, 19), 5)):
                x = _t(dt, shape, dev, rng).requires_grad_()
                CausalSoftmax.apply(x, first).backward(clgrad.ones(shape, dtype=dt))
    sm._NATIVE_EXP_OK[dev] = probed


def drive_norm(dev, dt, rng):
    """layer_norm forward and backward: rows shorter and longer than the vector width and the
    work-group (with tails), with and without weight and bias, a strided input."""
    import clgrad
    import clgrad.nn.functional as F
    # (rows of 40 and 48 take the weight gradient's vector kernel at vector widths 8 and 16)
    for shape, k in (((3, 7), 1), ((4, 300), 1), ((2, 3, 40), 2), ((5, 1), 1), ((3, 48), 1)):
        ns = shape[len(shape) - k:]
        for affine in ((True, True), (True, False), (False, True), (False, False)):
            x = _t(dt, shape, dev, rng).requires_grad_()
            w = _t(dt, ns, dev, rng).requires_grad_() if affine[0] else None
            b = _t(dt, ns, dev, rng).requires_grad_() if affine[1] else None
            y = F.layer_norm(x, ns, w, b)
            y.backward(clgrad.ones_like(y))
    F.layer_norm(_strided(dt, (6, 9), dev, rng), (9,))


def drive_index(dev, dt, rng):
    """gather, scatter, scatter_add, scatter_reduce, nonzero, tril/triu, index checks."""
    import numpy as np
    import clgrad
    x = _t(dt, (5, 7), dev, rng)
    idx = clgrad.tensor(rng.integers(0, 5, (5, 7)), dtype=clgrad.int64, device=dev)
    x.gather(0, idx)
    x.t().gather(1, idx.t())
    src = _t(dt, (5, 7), dev, rng)
    # scatter writes each target once: with duplicate indices which write wins is undefined
    # (as in torch), and Oclgrind rightly calls it a race
    perm = clgrad.tensor(np.argsort(rng.random((5, 7)), axis=0), dtype=clgrad.int64, device=dev)
    clgrad.zeros((5, 7), dtype=dt, device=dev).scatter(0, perm, src)
    clgrad.zeros((5, 7), dtype=dt, device=dev).scatter_add(0, idx, src)
    # scatter_reduce's compare-and-swap combinations, duplicates included, a strided source
    if dt.kind != "c":           # (complex: neither ordered nor combined by compare-and-swap)
        for red in ("prod", "amax", "amin"):
            x.scatter_reduce(0, idx, src, red)
        x.scatter_reduce(1, idx, src.t().contiguous().t(), "amax", include_self=False)
    clgrad.nonzero(_t(dt, (3, 50), dev, rng, low=0))
    clgrad.nonzero(_t(dt, (200,), dev, rng, low=0))
    x.tril(); x.triu(1); x.t().tril(-1)
    x[idx[0, :3]]
    # index_add by lines (CPU paths): duplicate rows, a row offset in both tensors, lines
    # enough for its condition; duplicates must not race (a work-item owns its lines)
    from clgrad.kernels.index import LINES_DTYPES, LINES_PER_UNIT
    if dt in LINES_DTYPES and dev.cpu_paths:
        cols = 2 * LINES_PER_UNIT * dev.compute_units * dev.vec
        rows = clgrad.tensor([3, 0, 3, 1, 3], dtype=clgrad.int64, device=dev)
        dst = clgrad.zeros((2, 5, cols), dtype=dt, device=dev)
        dst[:, 1:].index_add_(1, rows, _t(dt, (2, 5, cols), dev, rng)[:, :5])
    if dt.kind == "f":                       # cross-entropy's targets, one ignored
        from clgrad.kernels.index import class_targets_raw
        class_targets_raw(clgrad.tensor([1, -100, 3], device=dev), -100, dt)


def drive_random(dev, dt, rng):
    import clgrad
    t = clgrad.empty((37,), dtype=dt, device=dev)
    t[::2].random_(0, 2)
    t.random_(0, 2)
    if dt.kind == "f":
        t.uniform_(); t.normal_(); t.bernoulli_(0.3); t[::3].normal_()
        # the rejection samplers over their regions, one parameter given strided
        from clgrad._sampling import _standard_gamma, _standard_gamma_grad
        a = clgrad.tensor([0.3, 1.0, 2.5, 20.0, 0.0] * 4, dtype=dt, device=dev)
        x = _standard_gamma(a[::2])
        _standard_gamma_grad(a[::2], x)
        _standard_gamma_grad(a, clgrad.tensor([0.1, 1.5, 2.5, 25.0, 19.0] * 4, dtype=dt,
                                                     device=dev))
        clgrad.poisson(a * 4); clgrad.binomial(a * 30, a / 21); clgrad.binomial(a * 30, 1 - a / 21)
    if dt is clgrad.int32:
        clgrad.randperm(40, device=dev)


def drive_gemm(dev, dt, rng):
    """Products of every shape class: small, matrix-vector, dot, batched, and tiled/packed ones
    whose sizes cross the tile edges."""
    a = _t(dt, (37, 45), dev, rng)
    b = _t(dt, (45, 41), dev, rng)
    a @ b
    a.t().contiguous().t() @ b.t().contiguous().t()
    (a.t() @ a)
    _t(dt, (2, 3, 4), dev, rng) @ _t(dt, (2, 4, 5), dev, rng)
    a @ _t(dt, (45,), dev, rng)
    _t(dt, (45,), dev, rng) @ b
    v = _t(dt, (5000,), dev, rng)
    if dt.kind == "f":
        v @ v
    _t(dt, (3, 45), dev, rng) @ b
    _t(dt, (17, 45), dev, rng) @ b
    # more than DIRECT_A_ROWS rows of a column-major A: packed (the shapes above read A in place);
    # of a row-major one, packed (pack_a_rows) where it has more than DIRECT_A_ELEMENTS
    _t(dt, (45, 70), dev, rng).t() @ b
    from clgrad.kernels import gemm as gemm_kernels
    with _direct_a_limit(gemm_kernels, 0):
        _t(dt, (70, 45), dev, rng) @ b
    _relu_folded(lambda: (a @ b, _t(dt, (45, 70), dev, rng).t() @ b,
                          _t(dt, (2, 3), dev, rng) @ _t(dt, (3, 4), dev, rng)), dt)
    # the "lanes" kernels (Intel's CPU runtime's configuration), with a small one: a B that is
    # packed (41 columns: a partial panel; a transposed B) and one read in place (40 columns)
    with _configured(gemm_kernels, dev, {"kind": "lanes", "MR": 3, "NJ": 2, "LX": 4, "LY": 2}):
        a @ b
        a @ _t(dt, (41, 45), dev, rng).t()
        a.t().contiguous().t() @ _t(dt, (45, 40), dev, rng)
        _relu_folded(lambda: (a @ b, a.t().contiguous().t() @ _t(dt, (45, 40), dev, rng)), dt)
    # the packed kernels with 512-bit vectors (PoCL's configuration on AVX-512 CPUs), A read in
    # place and packed
    with _configured(gemm_kernels, dev, {"kind": "packed", "MR": 3, "NV": 1, "VW": 16, "LX": 2,
                                         "LY": 2}):
        a @ b
        _t(dt, (45, 70), dev, rng).t() @ b
        with _direct_a_limit(gemm_kernels, 0):
            _t(dt, (70, 45), dev, rng) @ b
        _relu_folded(lambda: (a @ b, _t(dt, (45, 70), dev, rng).t() @ b), dt)


def _relu_folded(products, dt):
    """The products' relus, and relu gradients of them, recorded and replayed: the EPI_RELU and
    EPI_MASK builds a recording folds them into (clgrad/kernels/epilogue.py; float32 and float64
    only)."""
    from clgrad.ops.elementwise import threshold_backward
    from clgrad.runtime.recording import Recording
    if dt.kind != "f" or dt.itemsize < 4:
        return
    masks = [y.sin() for y in products()]          # relu outputs (any values) of their shapes
    with Recording() as rec:
        kept = [y.relu() for y in products()]
        kept += [threshold_backward(y, m) for y, m in zip(products(), masks)]
    rec.replay()
    for d, k, gs, ls, args in rec.kernels:      # once more through the noted kernels
        k(d.queue, gs, ls, *args)
    rec.release()
    del kept


@contextlib.contextmanager
def _direct_a_limit(gemm_kernels, elements):
    """Run a block with the packed GEMM reading a row-major A in place only up to `elements`."""
    prev, gemm_kernels.DIRECT_A_ELEMENTS = gemm_kernels.DIRECT_A_ELEMENTS, elements
    try:
        yield
    finally:
        gemm_kernels.DIRECT_A_ELEMENTS = prev


@contextlib.contextmanager
def _configured(kernels, dev, cfg):
    """Run a block with configuration cfg of a tuned family (clgrad.kernels.gemm or .conv)."""
    prev = kernels.set_config(dev, cfg)
    try:
        yield
    finally:
        kernels.set_config(dev, prev)


def drive_conv(dev, dt, rng):
    """conv2d forward and its gradients, stride 1 and 2, grouped, with and without bias."""
    import clgrad
    import clgrad.nn.functional as F
    for stride, groups, bias in ((1, 1, True), (2, 2, False), (1, 2, True)):
        x = _t(dt, (2, 4, 9, 11), dev, rng).requires_grad_()
        w = _t(dt, (6, 4 // groups, 3, 3), dev, rng).requires_grad_()
        b = _t(dt, (6,), dev, rng).requires_grad_() if bias else None
        y = F.conv2d(x, w, b, stride=stride, padding=1, groups=groups)
        y.backward(clgrad.ones_like(y))
    x = _t(dt, (1, 3, 17, 40), dev, rng).requires_grad_()
    w = _t(dt, (5, 3, 1, 1), dev, rng).requires_grad_()
    y = F.conv2d(x, w)
    y.backward(clgrad.ones_like(y))

    def whole_rows():
        # output rows of whole vectors (64 and 32 wide), whose gradient a 16-bit program's
        # weight gradient reads as stored (its _st kernels)
        for stride in (1, 2):
            w = _t(dt, (4, 3, 3, 3), dev, rng).requires_grad_()
            y = F.conv2d(_t(dt, (2, 3, 5, 64), dev, rng), w, stride=stride, padding=1)
            y.backward(clgrad.ones_like(y))
    whole_rows()
    # 16-wide vectors (PoCL's configuration on AVX-512 CPUs), stride 1 and 2
    from clgrad.kernels import conv as conv_kernels
    with _configured(conv_kernels, dev, {"MR": 3, "NV": 1, "MW": 2, "TJ": 3, "LY": 2, "LX": 3,
                                         "VW": 16}):
        for stride in (1, 2):
            x = _t(dt, (2, 4, 9, 35), dev, rng).requires_grad_()
            w = _t(dt, (6, 4, 3, 3), dev, rng).requires_grad_()
            y = F.conv2d(x, w, stride=stride, padding=1)
            y.backward(clgrad.ones_like(y))
        whole_rows()
        _relu_folded(lambda: [F.conv2d(_t(dt, (2, 4, 9, 35), dev, rng), _t(dt, (6, 4, 3, 3), dev,
                                                                           rng), padding=1)], dt)
    x, w = _t(dt, (2, 4, 9, 11), dev, rng), _t(dt, (6, 4, 3, 3), dev, rng)
    _relu_folded(lambda: [F.conv2d(x, w, _t(dt, (6,), dev, rng), padding=1)], dt)


def drive_pool(dev, dt, rng):
    import clgrad
    import clgrad.nn.functional as F
    for f, kw in ((F.max_pool2d, dict(kernel_size=3, stride=2, padding=1)),
                  (F.avg_pool2d, dict(kernel_size=3, stride=2, padding=1)),
                  (F.adaptive_avg_pool2d, dict(output_size=(3, 4)))):
        x = _t(dt, (2, 3, 9, 11), dev, rng).requires_grad_()
        y = f(x, **kw)
        y.backward(clgrad.ones_like(y))


def drive_optim(dev, dt, rng):
    import clgrad
    for make in (lambda p: clgrad.optim.SGD(p, lr=0.1, momentum=0.9, nesterov=True),
                 lambda p: clgrad.optim.SGD(p, lr=0.1),
                 lambda p: clgrad.optim.Adam(p, lr=0.1, amsgrad=True, weight_decay=0.1),
                 lambda p: clgrad.optim.AdamW(p, lr=0.1),
                 lambda p: clgrad.optim.RMSprop(p, lr=0.1, momentum=0.5, centered=True)):
        # p and r in one launch of the multi-tensor kernel, q (strided) alone
        p = _t(dt, (37,), dev, rng).requires_grad_()
        r = _t(dt, (5,), dev, rng).requires_grad_()
        q = _strided(dt, (3, 5), dev, rng).detach().requires_grad_()
        opt = make([p, r, q])
        for _ in range(2):
            opt.zero_grad()
            ((p * p).sum() + (r * r).sum() + (q * q).sum()).backward()
            opt.step()
    # GradScaler's fused unscale (a tail, a strided gradient, an inf)
    from clgrad.amp.grad_scaler import _unscale_and_check
    g = _t(dt, (37,), dev, rng)
    g[3] = float("inf")
    assert _unscale_and_check([g, _strided(dt, (3, 5), dev, rng)], 0.5)


def drive_loss(dev, dt, rng):
    """cross_entropy's and nll_loss's rows kernels: the loss (more rows than the work-group,
    ignored targets, a target out of range) and the gradients, strided scores and targets, mean
    and sum."""
    import clgrad
    import clgrad.nn.functional as F
    from clgrad.kernels.loss import DTYPES
    if dt not in DTYPES:
        return
    for rows, C in ((300, 7), (3, 40)):
        t = clgrad.tensor(rng.integers(0, C, 2 * rows), dtype=clgrad.int64, device=dev)[::2]
        t[1] = -100
        for x in (_t(dt, (rows, C), dev, rng), _strided(dt, (rows, C), dev, rng)):
            for red in ("mean", "sum"):
                x = x.detach().requires_grad_()
                F.cross_entropy(x, t, reduction=red).backward()
                F.nll_loss(x, t, reduction=red).backward()
    try:                                   # the flag set: IndexError at the next wait
        F.cross_entropy(_t(dt, (4, 3), dev, rng), clgrad.tensor([0, 3, 1, 2], device=dev))
        dev.synchronize()
        FAILURES.append(("cross_entropy, a target out of range", "no IndexError"))
    except IndexError:
        pass


def drive_sort(dev, dt, rng):
    """sort / argsort (rows not a power of two, both directions, along a strided dim) and
    searchsorted (shared and per-row sequences, both sides)."""
    import clgrad
    x = _t(dt, (3, 13), dev, rng, low=0)
    x.sort(1)
    x.sort(0, descending=True)
    x.t().argsort(1)
    seq = x.sort(1).values
    clgrad.searchsorted(seq, x)
    clgrad.searchsorted(seq[0], x, right=True)


def drive_linalg(dev, dt, rng):
    """LU (pivoting, a zero pivot, sizes below and above the work-group), the solves, and
    Cholesky (a positive-definite and a failing matrix)."""
    import clgrad
    if dt.name not in ("float32", "float64", "complex64", "complex128"):
        return
    a = _t(dt, (2, 37, 37), dev, rng)
    clgrad.linalg.solve(a, _t(dt, (2, 37, 3), dev, rng))
    clgrad.linalg.det(_t(dt, (3, 3), dev, rng))
    clgrad.linalg.det(clgrad.zeros(4, 4, dtype=dt, device=dev))
    s = _t(dt, (2, 19, 19), dev, rng)
    clgrad.linalg.cholesky_ex(s @ s.mH + 19 * clgrad.eye(19, dtype=dt, device=dev))
    clgrad.linalg.cholesky_ex(-clgrad.eye(3, dtype=dt, device=dev))


def drive_linalg_decomp(dev, dt, rng):
    """Householder QR (rows above and below the work-group, a zero column, with and without Q),
    Jacobi eigh (n = 9 crosses a group of 8) and the one-sided Jacobi SVD, tall and wide."""
    import clgrad
    if dt.name in ("complex64", "complex128"):        # complex: the Hermitian Jacobi eigh only
        s = _t(dt, (2, 9, 9), dev, rng)
        clgrad.linalg.eigh(s + s.mH)
        return
    if dt.name not in ("float32", "float64"):
        return
    a = _t(dt, (2, 37, 5), dev, rng)
    a[:, :, 2] = 0
    clgrad.linalg.qr(a)
    clgrad.linalg.qr(_t(dt, (3, 6), dev, rng), mode="complete")
    clgrad.linalg.qr(_t(dt, (4, 4), dev, rng), mode="r")
    s = _t(dt, (2, 9, 9), dev, rng)
    clgrad.linalg.eigh(s + s.mT)
    clgrad.linalg.svd(_t(dt, (9, 4), dev, rng))
    clgrad.linalg.svd(_t(dt, (2, 3, 7), dev, rng), full_matrices=False)


def drive_rnn(dev, dt, rng):
    """The fused LSTM cell and layer, GRU and Elman (tanh, relu) layers, forward and backward
    (with and without the gradients of c, h and the outputs), with H a multiple of the vector
    width (the _v kernels: 16 covers every VEC and VEC8) and not (the _s kernels); the LSTM
    steps with the cell in the GEMM (LSTMSteps, GRUSteps) on packed configurations, a launch a
    step and a range of steps in one launch."""
    from clgrad.ops import rnn_cell
    from clgrad.ops.rnn_cell import gru_layer, lstm_cell, lstm_layer, rnn_layer
    one_launch = rnn_cell.ONE_LAUNCH           # forced below, whatever the device
    for H in (5, 16):
        g = _t(dt, (3, 4 * H), dev, rng).requires_grad_()
        c = _t(dt, (3, H), dev, rng).requires_grad_()
        h, c2 = lstm_cell(g, c)
        (h.sum() + c2.sum()).backward()
        lstm_cell(g, c)[0].sum().backward()
        proj = _t(dt, (3, 2, 4 * H), dev, rng).requires_grad_()
        w = _t(dt, (4 * H, H), dev, rng).requires_grad_()
        h0 = _t(dt, (2, H), dev, rng).requires_grad_()
        c0 = _t(dt, (2, H), dev, rng).requires_grad_()
        rnn_cell.ONE_LAUNCH = False            # a launch a step, then a range at once
        out, hn, cn = lstm_layer(proj, w, h0, c0, reverse=H == 16)
        (out.sum() + hn.sum() + cn.sum()).backward()
        rnn_cell.ONE_LAUNCH = True
        lstm_layer(proj, w, h0, c0)[1].sum().backward()
        proj = _t(dt, (3, 2, 3 * H), dev, rng).requires_grad_()
        w = _t(dt, (3 * H, H), dev, rng).requires_grad_()
        b = _t(dt, (3 * H,), dev, rng).requires_grad_()
        rnn_cell.ONE_LAUNCH = False
        out, hn = gru_layer(proj, w, b, h0, reverse=H == 16)
        (out.sum() + hn.sum()).backward()
        rnn_cell.ONE_LAUNCH = True
        gru_layer(proj, w, None, h0)[1].sum().backward()
        rnn_cell.ONE_LAUNCH = one_launch
        proj = _t(dt, (3, 2, H), dev, rng).requires_grad_()
        w = _t(dt, (H, H), dev, rng).requires_grad_()
        for nl in ("tanh", "relu"):
            out, hn = rnn_layer(proj, w, h0, H == 16, nl)
            (out.sum() + hn.sum()).backward()
            rnn_layer(proj, w, h0, H != 16, nl)[0].sum().backward()
    # the LSTM and GRU steps with the cell in the GEMM's epilogue (a packed GEMM configuration):
    # 3 rows in blocks of 2 (LSTM) and 4 (GRU: LSTMSteps.rows), H = 12 / 48 units in tiles of 4
    # vectors (partly inside backward), 4 and 16 wide, GRU with and without b_hh
    from clgrad.kernels import gemm as gemm_kernels
    for vw in (4, 16):
        with _configured(gemm_kernels, dev, {"kind": "packed", "MR": 6, "NV": 2, "VW": vw,
                                             "LX": 1, "LY": 2}):
            H = 12 if vw == 4 else 48
            args = [_t(dt, s, dev, rng).requires_grad_()
                    for s in ((3, 3, 4 * H), (4 * H, H), (3, H), (3, H))]
            # the steps of a range at once either way in time; a launch a step
            for reverse, at_once in ((False, True), (True, True), (True, False)):
                rnn_cell.ONE_LAUNCH = at_once
                out, hn, cn = lstm_layer(*args, reverse=reverse)
                (out.sum() + cn.sum()).backward()
            args = [_t(dt, s, dev, rng).requires_grad_()
                    for s in ((3, 3, 3 * H), (3 * H, H), (3 * H,), (3, H))]
            for at_once in (False, True):
                rnn_cell.ONE_LAUNCH = at_once
                out, hn = gru_layer(*args, reverse=vw == 4)
                (out.sum() + hn.sum()).backward()
                gru_layer(args[0], args[1], None, args[3], reverse=vw != 4)[0].sum().backward()
            _t(dt, (45, 70), dev, rng).t() @ _t(dt, (45, 9), dev, rng)    # A packed
            with _direct_a_limit(gemm_kernels, 0):                      # a row-major one
                _t(dt, (70, 45), dev, rng) @ _t(dt, (45, 9), dev, rng)
    rnn_cell.ONE_LAUNCH = one_launch
    # the unfused steps (a product, then the cell kernel) where the GEMM is not packed
    with _configured(gemm_kernels, dev, {"kind": "lanes", "MR": 3, "NJ": 2, "LX": 4, "LY": 2}):
        args = [_t(dt, s, dev, rng).requires_grad_() for s in ((3, 2, 48), (48, 16), (2, 16))]
        gru_layer(args[0], args[1], None, args[2])[0].sum().backward()


def drive_attention(dev, dt, rng):
    """The fused attention kernels forward and backward: key rows crossing a local tile (S = 34 >
    BK), value columns crossing a chunk (Ev = 66 > EC, two launches), a broadcast bool mask,
    causal masking with dropout, grouped-query heads; a double backward regenerates the
    dropout mask (attn_dropout_mask)."""
    import clgrad
    import clgrad.nn.functional as F
    from clgrad.nn.attention import SDPBackend, sdpa_kernel
    q = _t(dt, (1, 2, 3, 3), dev, rng).requires_grad_()
    k = _t(dt, (1, 1, 34, 3), dev, rng).requires_grad_()
    v = _t(dt, (1, 1, 34, 66), dev, rng).requires_grad_()
    mask = clgrad.tensor(rng.random((3, 34)) < 0.7, device=dev)
    # the CPU code paths pick the composed form at these sizes: ask for the fused kernels
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True).sum().backward()
        out = F.scaled_dot_product_attention(q, k.expand(1, 2, 34, 3), v.expand(1, 2, 34, 66),
                                             is_causal=True, dropout_p=0.3)
        g, = clgrad.autograd.grad(out.sum(), q, create_graph=True)
        g.sum().backward()
        drive_attention_rows(dev, dt, rng)


def drive_attention_rows(dev, dt, rng):
    """The CPU paths' register-blocked attention kernels (attention_rows.mako), on any device:
    rows crossing MR blocks, keys crossing tiles of 16 and (past 256) of 32, a bool mask with
    grouped-query heads and a second column launch (Ev = 80), causal with dropout, backward in
    one launch per tile of rows (ROWS_CACHE = 1: the launches add)."""
    import clgrad
    import clgrad.nn.functional as F
    from clgrad.kernels import attention as ka
    from clgrad.nn.attention import SDPBackend, sdpa_kernel
    if not dev.cpu_paths or dt not in (clgrad.float32, clgrad.float64):
        return
    was = ka.rows_on, ka.ROWS_CACHE
    ka.rows_on = lambda d: True
    try:
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            for L, S, Ev, cache in ((5, 37, 80, was[1]), (3, 260, 16, 1)):
                ka.ROWS_CACHE = cache
                q = _t(dt, (1, 2, L, 16), dev, rng).requires_grad_()
                k = _t(dt, (1, 1, S, 16), dev, rng).requires_grad_()
                v = _t(dt, (1, 1, S, Ev), dev, rng).requires_grad_()
                mask = clgrad.tensor(rng.random((L, S)) < 0.7, device=dev)
                F.scaled_dot_product_attention(q, k, v, attn_mask=mask,
                                               enable_gqa=True).sum().backward()
                F.scaled_dot_product_attention(q, k.expand(1, 2, S, 16), v.expand(1, 2, S, Ev),
                                               is_causal=True, dropout_p=0.3).sum().backward()
    finally:
        ka.rows_on, ka.ROWS_CACHE = was


def drive_fft(dev, dt, rng):
    """The transforms of clgrad.ops.fft on (re, im) pairs: powers of two (8: one radix-8 pass;
    16: radix 2 then 8), 105 (radices 3, 5, 7), a Bluestein length (11, through 32), length 1,
    real and strided inputs, the Hermitian extension (c2r) and the gradients; single long rows
    for the passes (below)."""
    import clgrad
    from clgrad.kernels.fft import FFT_DTYPES, clear_cache
    from clgrad.ops import fft as f
    if dt not in FFT_DTYPES:
        return
    clear_cache()               # the twiddle tables and filters are built anew on each path
    for n in (8, 16, 11, 1, 105):
        p = _t(dt, (2, n, 2), dev, rng).requires_grad_()
        f.c2c(p, [0, 1], False, 0.5).sum().backward()
        f.c2c(_t(dt, (n, 3, 2), dev, rng).transpose(0, 1), [1], True, 1.0)
        x = _t(dt, (2, n), dev, rng).requires_grad_()
        y = f.r2c(x, [1], [n], False, 1.0)
        h = y.detach().requires_grad_()
        (y.sum() + f.c2r(h, [1], n, True, 1.0 / n).sum()).backward()
    # single rows forward, for the passes: radix 8 runs as fft_r8v1 (first pass, dense rows),
    # fft_r8v (sub-transforms of at least VEC / VEC8) or fft_r8 (the rest). On the CPU paths
    # 512 = 8^3 (r8v1, r8v at every vector width) and 1024 = 2 * 8^3 (r2, then r8 over
    # sub-transforms of 2); on the GPU path (rows up to local_max, 1024 / 512, go to fft_local)
    # 2048 = 4 * 8^3 (r4), 4096 = 8^4 (r8v1) and in float32 8192 = 2 * 8^4 (r8 over
    # sub-transforms of 2 < VEC), in float64 1024 and a 4096 whose rows are not dense (r8 first)
    lengths = (512, 1024) if dev.cpu_paths else \
        (2048, 4096, 8192) if dt is clgrad.float32 else (1024, 2048, 4096)
    for n in lengths:
        f.c2c(_t(dt, (1, n, 2), dev, rng), [1], False, 1.0)
    if not dev.cpu_paths and dt is clgrad.float64:
        f.c2c(_t(dt, (4096, 2, 2), dev, rng).transpose(0, 1), [1], False, 1.0)

def drive_fused(dev, dt, rng):
    """A recorded chain of elementwise ops (a tensor-tensor, tensor-scalar and parameter op, an
    in-place op, a repeated 0-d operand and a result a live tensor holds) fused into one kernel,
    replayed: the kernels clgrad.compile makes; then the same chain eagerly, fused as a burst of
    held-back launches (clgrad/kernels/fused.py)."""
    from clgrad.runtime.recording import Recording
    if dt.kind != "f" or dt.itemsize < 4:
        return
    for n in (1, 37, 1000):
        x, w, s = _t(dt, (n,), dev, rng), _t(dt, (n,), dev, rng), _t(dt, (), dev, rng)
        with Recording() as rec:
            a = x * 1.5 + w
            b = (a.sigmoid() - s).abs().clamp(0.1, 0.3)
            b.mul_(a)
            del a
        rec.replay()
        for d, k, gs, ls, args in rec.kernels:      # once more through the noted kernels
            if k.function_name.startswith("fused_"):
                k(d.queue, gs, ls, *args)
        rec.release()
    # eager: a burst's run of held-back launches, fused from its second sighting on (numbers are
    # kernel arguments), in vector form and, through digamma's scalar kernels, in scalar form
    from clgrad.kernels import fused
    hot, fused.HOT_LAUNCHES = fused.HOT_LAUNCHES, 1
    try:
        for n in (1, 37, 1000):
            x, w = _t(dt, (n,), dev, rng), _t(dt, (n,), dev, rng)
            for c in (1.5, 2.5):
                s = _t(dt, (), dev, rng)
                dev.queue.finish()
                a = x * c + w * s
                b = (a.sigmoid() - 0.5).abs().clamp(0.1, 0.3)
                b.mul_(a)
                dev.queue.finish()
                (x.abs() + c).digamma().digamma()
                dev.queue.finish()
    finally:
        fused.HOT_LAUNCHES = hot


# family -> the function that drives its ops for one dtype
DRIVERS = {
    "ew": drive_elementwise, "copy": drive_copy, "reduce": drive_reduce, "scan": drive_scan,
    "softmax": drive_softmax, "index": drive_index, "random": drive_random, "gemm": drive_gemm,
    "conv": drive_conv, "pool": drive_pool, "optim": drive_optim, "sort": drive_sort,
    "linalg": drive_linalg, "linalg_decomp": drive_linalg_decomp, "rnn": drive_rnn,
    "attention": drive_attention, "norm": drive_norm, "fft": drive_fft, "fused": drive_fused,
    "loss": drive_loss,
}
# the families with programs for complex dtypes (the others reach complex tensors through their
# real views, docs/internals.md)
COMPLEX_FAMILIES = {"ew", "index", "linalg", "linalg_decomp"}
FLOAT_ONLY = {"loss", "norm", "softmax", "conv", "pool", "optim", "linalg", "linalg_decomp",
              "rnn", "attention", "fft", "fused"}

# Kernels a program contains but that no op launches for its dtype / code path, with the reason.
# (program family, kernel name, which programs) -> reason
UNREACHABLE = [
    ("copy", "iota", lambda p: p.variant == "b8", "arange of bool is an error, as in torch"),
    ("random", "random_bits", lambda p: p.variant != "i32",
     "randperm draws its keys with the int32 program only"),
]


def _gemm_expected(prog):
    """The kernels of a gemm program that its configuration compiles in (of an EPI_RELU or
    EPI_MASK build: the products drive_gemm's relus fold into)."""
    if "-DEPI_" in prog.options:
        if "-DNJ=" in prog.options:
            return {"gemm_lanes", "gemm_lanes_db"}
        if "-DMR=" in prog.options:
            return {"gemm_packed", "gemm_packed_da"}
        return {"gemm_tiled"} if "-DTM=" in prog.options else {"gemm_small"}
    if prog.options == "":
        return {"gemm_small"}
    for kind in ("lstm", "gru"):               # clgrad.kernels.rnn.LSTMSteps' / GRUSteps'
        if f"-D{kind.upper()}_STEPS" in prog.options:
            return {"pack_b", "pack_b_gates", f"{kind}_step_fwd", f"{kind}_step_bwd",
                    f"{kind}_steps_fwd", f"{kind}_steps_bwd"}
    if "-DNJ=" in prog.options:
        return {"pack_b", "gemm_lanes", "gemm_lanes_db"}
    if "-DMR=" in prog.options:
        return {"pack_a", "pack_a_rows", "pack_b", "gemm_packed"}
    return {"gemm_tiled"}


# The paths the check runs: "wide" is the CPU paths with the vector widths Intel's CPU runtime
# gets on an AVX-512 CPU (clgrad.runtime.device.vector_widths), "pocl512" those of PoCL 3.1+ on
# an AVX-512 target (16 floats, 4 doubles). pip's PoCL 3.0 on an AVX-512 target takes the same
# widths with vectors assembled from scalar loads (LDV_16 in common.mako), which touch the same
# elements as vload16: "pocl512" checks its accesses too, and "cpu" the assembled loads.
PATH_VECTORS = {"wide": (16, 8, True), "pocl512": (16, 4, True)}


def _kind(path):
    """The code path ("cpu" or "gpu") a checked path takes."""
    return "gpu" if path == "gpu" else "cpu"


# Kernels only one code path launches: (family, kernel, path that never launches it, why)
PATH_ONLY = [
    ("softmax", "softmax_group", "cpu", "the one-work-group-per-line softmax is a GPU path"),
    ("softmax", "softmax_bwd_group", "cpu", "the one-work-group-per-line softmax is a GPU path"),
    ("norm", "ln_fwd_group", "cpu", "layer_norm's work-group per row is a GPU path"),
    ("norm", "ln_bwd_group", "cpu", "layer_norm's work-group per row is a GPU path"),
    ("norm", "ln_fwd_row", "gpu", "layer_norm's work-item per row is a CPU path"),
    ("norm", "ln_bwd_row", "gpu", "layer_norm's work-item per row is a CPU path"),
    ("norm", "ln_wgrad_v", "gpu", "layer_norm's weight gradient by vectors of columns is a CPU "
                                  "path"),
    ("softmax", "softmax_causal_row", "gpu", "the causal scores' softmax by rows is a CPU path "
                                              "(GPUs add the mask)"),
    ("index", "index_add_lines_v", "gpu", "index_add by lines is a CPU path (GPUs add "
                                          "atomically)"),
    ("fft", "fft_local", "cpu", "the work-group-per-row FFT in local memory is a GPU path"),
]


def expected_kernels(prog, path=None):
    names = set(prog.signatures)
    if prog.family == "gemm":
        names &= _gemm_expected(prog)
    elif prog.family == "conv" and "-DEPI_" in prog.options:
        names &= {"conv_fwd_1"}                # drive_conv's relus fold into stride-1 ones
    skipped = {}
    for fam, name, applies, why in UNREACHABLE:
        if prog.family == fam and name in names and applies(prog):
            names.discard(name)
            skipped[name] = why
    for fam, name, never_path, why in PATH_ONLY:
        if prog.family == fam and name in names and _kind(path) == never_path:
            names.discard(name)
            skipped[name] = f"{why} (not counted in the {path} path)"
    return names, skipped


# ---- the check -----------------------------------------------------------------------------------
def self_test(dev, log):
    """Run a racy kernel, an out-of-bounds write, a divergent barrier and a read one element past
    the end of a 13-element tensor (which the pool's rounded blocks would hide); return the
    findings."""
    import pyopencl as cl
    import clgrad
    src = """
    __kernel void race(__global float *a) { a[0] = (float)get_global_id(0); }
    __kernel void oob(__global float *a) { a[get_global_id(0) + 1] = 1.0f; }
    __kernel void diverge(__global float *a) {
        if (get_local_id(0) < 2) barrier(CLK_LOCAL_MEM_FENCE);
        a[get_global_id(0)] = 1.0f;
    }
    __kernel void past_end(__global float *out, __global const float *x) { out[0] = x[13]; }"""
    prog = cl.Program(dev.context, src).build()
    buf = cl.Buffer(dev.context, cl.mem_flags.READ_WRITE, 16)
    log.new_text()
    for name in ("race", "oob", "diverge"):
        getattr(prog, name)(dev.queue, (4,), (4,), buf)
    x = clgrad.zeros(13, device=dev)
    prog.past_end(dev.queue, (1,), (1,), buf, x._storage.buf)
    dev.queue.finish()
    return parse_log(log.new_text())


SELF_TEST_WANT = {("Write-write data race", "race"), ("Invalid write", "oob"),
                  ("Work-group divergence", "diverge"), ("Invalid read", "past_end")}


def run_self_test(dev, log):
    found = self_test(dev, log)
    whats = {(f["what"], f["kernel"]) for f in found}
    missing = SELF_TEST_WANT - whats
    for f in found:
        if ignored(f):
            continue
        print(f"  caught: {f['what']} in {f['kernel']} (line {f['line']}, x{f['count']})")
    if missing:
        print(f"SELF-TEST FAILED: Oclgrind did not report {sorted(missing)}")
        return 1
    print("self-test passed: Oclgrind reports races, out-of-bounds accesses (past a tensor's end "
          "too) and barrier divergence")
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--self-test", action="store_true",
                    help="only check that Oclgrind catches a race and an out-of-bounds write")
    ap.add_argument("--families", default=",".join(DRIVERS),
                    help="comma-separated families to drive (default: all)")
    ap.add_argument("--paths", default="cpu,wide,pocl512,gpu",
                    help="code paths: cpu (PoCL's vectors), wide (the CPU paths with Intel's "
                         "runtime's 16-wide native vector loads), pocl512 (PoCL's on an AVX-512 "
                         "target: 16 floats, 4 doubles), gpu (default: all four)")
    ap.add_argument("--dtypes", default="", help="comma-separated dtype names (default: all)")
    ap.add_argument("--show", type=int, default=3, help="log blocks printed per finding kind")
    args = ap.parse_args(argv)

    tmp = tempfile.mkdtemp(prefix="clgrad-oclgrind-")
    atexit.register(shutil.rmtree, tmp, True)
    setup_oclgrind_env(Path(tmp) / "oclgrind.log")
    log = OclgrindLog(os.environ["OCLGRIND_LOG"], Path(tmp) / "stderr.txt")
    import clgrad
    from clgrad import dtypes
    from clgrad.runtime.device import set_default_device
    dev = find_oclgrind()
    if dev is None:
        print("Oclgrind is not installed: pip install clgrad[oclgrind]")
        return 2
    log.new_text()          # discovery's queries of optional device properties are not findings
    set_default_device(dev)
    exact_buffers(dev.pool)
    if args.self_test:
        return run_self_test(dev, log)
    if run_self_test(dev, log):
        return 1
    rec = Recorder()
    families = [f for f in args.families.split(",") if f]
    paths = [p for p in args.paths.split(",") if p]
    wanted = [w for w in args.dtypes.split(",") if w]
    dts = [d for d in dtypes.ALL + dtypes.COMPLEX
           if not wanted or d.short in wanted or d.name.split(".")[-1] in wanted]
    steps = []
    for path in paths:
        for fam in families:
            for dt in dts:
                if fam in FLOAT_ONLY and dt.kind != "f" and not (
                        dt.kind == "c" and fam in COMPLEX_FAMILIES):
                    continue
                if dt.kind == "c" and fam not in COMPLEX_FAMILIES:
                    continue
                if fam == "gemm" and dt.kind == "b":
                    continue
                if dt in (dtypes.float64, dtypes.complex128) and not dev.has_fp64:
                    continue
                steps.append((path, fam, dt))
    from tqdm import tqdm
    import numpy as np
    findings = []                 # (path, family, dtype, finding, programs)
    errors = []                   # (path, family, dtype, exception)
    skipped_api = defaultdict(int)  # reason -> count of ignored API messages
    t0 = time.perf_counter()
    seconds = defaultdict(float)  # (path, family) -> seconds its steps took, for the report
    bar = tqdm(steps, unit="step", dynamic_ncols=True, file=log.real_stderr)
    current = None
    for path, fam, dt in bar:
        if path != current:
            dev.queue.finish()
            dev.set_code_paths(cpu=_kind(path) == "cpu", vectors=PATH_VECTORS.get(path))
            rec.path = current = path
        bar.set_description(f"{path} {fam} {dt.short}")
        rec.step = (fam, dt)
        rng = np.random.default_rng(0)
        n_failed = len(FAILURES)
        t_step = time.perf_counter()
        try:
            DRIVERS[fam](dev, dt, rng)
            dev.queue.finish()
        except Exception as e:           # a kernel that failed to build or run, or an op error
            errors.append((path, fam, dt, f"{type(e).__name__}: {str(e)[:300]}"))
            try:
                dev.queue.finish()
            except Exception:
                pass
        seconds[(path, fam)] += time.perf_counter() - t_step
        errors.extend((path, fam, dt, f"{what}: {e}") for what, e in FAILURES[n_failed:])
        for f in parse_log(log.new_text()):
            why = ignored(f)
            if why:
                skipped_api[why] += f["count"]
                continue
            ran = {pid for pid, name in rec.step_kernels[(path, rec.step)] if name == f["kernel"]}
            findings.append((path, fam, dt, f, ran))
    bar.close()
    wall = time.perf_counter() - t0
    return report(rec, paths, findings, errors, wall, args.show, families, skipped_api,
                  {d.short for d in dts}, seconds)


def report(rec, paths, findings, errors, wall, show, families, skipped_api, shorts, seconds):
    from clgrad.runtime.kernels import ALL_PROGRAMS
    from clgrad.kernels.attention import ROWS
    from clgrad.kernels.conv import CONV
    from clgrad.kernels.gemm import GEMM
    # the programs built with a configuration's options (GEMM's gemm_small program has none),
    # and the rows attention kernels' (a variant per vector width and head size)
    config_progs = {p.id for fam in (CONV, GEMM) for (_, opts), p in fam._programs.items()
                    if opts} | {p.id for p in ROWS._programs.values()}
    fam_of = {"ew1": "ew", "ew2": "ew", "ew3": "ew", "attention_rows": "attention"}
    per_prog = defaultdict(int)
    for path, fam, dt, f, ran in findings:
        for pid in ran:
            per_prog[(path, pid)] += 1
    rows, never, skipped_all = [], [], {}
    for path in paths:
        for p in ALL_PROGRAMS:
            if fam_of.get(p.family, p.family) not in families or \
                    p.variant.split("_")[0] not in shorts:
                continue
            # a configuration-specific program (GEMM, conv) belongs to the paths that built it
            if p.id in config_progs and p.id not in rec.built[path]:
                continue
            want, skipped = expected_kernels(p, path)
            for name, why in skipped.items():
                skipped_all.setdefault((p.family, name, why), set()).add(p.name)
            ran = {name for pid, name in rec.runs[path] if pid == p.id}
            missing = sorted(want - ran)
            never.extend((path, p.name, m) for m in missing)
            rows.append((path, p.family, p.variant, len(want & ran), len(want),
                         per_prog[(path, p.id)]))
    print()
    print(f"{'path':4}  {'family':8} {'dtype':18} {'kernels run':>13}  {'Oclgrind reports':>16}")
    for path, fam, var, n_run, n_all, n_rep in rows:
        mark = "" if n_run == n_all and not n_rep else "  <--"
        print(f"{path:4}  {fam:8} {var:18} {n_run:>5} / {n_all:<5}  {n_rep:>16}{mark}")
    total_run = sum(r[3] for r in rows)
    total = sum(r[4] for r in rows)
    print(f"total: {total_run} / {total} kernels run, {len(findings)} Oclgrind findings, "
          f"{len(errors)} failed steps, {wall:.0f} s")
    # where the simulator's time goes (CI's budget): the slowest families first
    for path in paths:
        took = sorted(((s, fam) for (p, fam), s in seconds.items() if p == path), reverse=True)
        print(f"seconds on {path}: " + ", ".join(f"{fam} {s:.0f}" for s, fam in took))
    for (fam, name, why), progs in sorted(skipped_all.items()):
        print(f"not counted: {name} in {len(progs)} {fam} programs: {why}")
    for why, n in skipped_api.items():
        print(f"ignored: {n} API messages: {why}")
    ok = True
    if findings:
        ok = False
        print(f"\n{len(findings)} Oclgrind findings:")
        shown = defaultdict(int)
        for path, fam, dt, f, ran in findings:
            print(f"  [{path} {fam} {dt.short}] {f['what']} in {f['kernel']} line {f['line']} "
                  f"(x{f['count']})")
            if shown[f["what"]] < show:
                shown[f["what"]] += 1
                print("    " + f["text"].replace("\n", "\n    "))
    if errors:
        ok = False
        print(f"\n{len(errors)} steps failed:")
        for path, fam, dt, e in errors:
            print(f"  [{path} {fam} {dt.short}] {e}")
    if never:
        ok = False
        print(f"\n{len(never)} kernels never ran:")
        for path, pname, k in never:
            print(f"  [{path}] {pname}: {k}")
    print("\nOK" if ok else "\nFAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
