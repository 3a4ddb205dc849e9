"""The scan family (cl_kernels/scan.mako): the inclusive scans cumsum, cumprod, cummax, cummin
and logcumsumexp along one dim, forwards or from the end, one program per dtype, and the
gradient kernels of cummax / cummin (scatter onto the chosen indices, and its adjoint gather).
The input is seen as lines along the dim (clgrad.kernels._lines); long lines are cut into
blocks whose totals are scanned in turn (the carries). Raw launches: no autograd.

>>> import clgrad
>>> out, idx = scan_raw("cummax", clgrad.tensor([[1.0, 3.0, 2.0, 3.0]]), 1)
>>> out.tolist(), idx.tolist()
([[1.0, 3.0, 3.0, 3.0]], [[0, 1, 1, 3]])
>>> scan_raw("cumsum", clgrad.tensor([1, 2, 3]), 0, reverse=True)[0].tolist()
[6, 5, 3]
"""
from .. import dtypes
from ..runtime.family import KernelFamily
from ..runtime.kernels import vec_width
from ..tensor import alias, complex_view, empty_tensor, numel_of, real_view
from ._lines import line_grid, lines, lines_of
from .copy import check_fp64, contiguous_raw, copy_into
from .reduce import _INT_MAX, _INT_MIN


class Scan:
    """One scan of one input dtype: scan.mako emits <name>_blocks and <name>_scan for it."""

    def __init__(self, name, acc, out, identity, combine=None, better=None):
        self.name = name
        self.acc = acc                  # what it computes and keeps block totals in
        self.out = out
        self.identity = identity
        self.combine = combine          # the running a and the next value b -> new running value
        self.better = better            # cummax / cummin: whether the next b replaces the running a
        self.is_arg = better is not None


def scans_for(dt):
    acc = dtypes.float64 if dt is dtypes.float64 else dtypes.float32 if dt.kind == "f" else \
        dtypes.int64
    val = dtypes.float32 if dt in (dtypes.float16, dtypes.bfloat16) else dt
    out = dt if dt.kind == "f" else dtypes.int64          # ints and bools accumulate to int64
    ss = [Scan("cumsum", acc, out, "0", "a + b"), Scan("cumprod", acc, out, "1", "a * b")]
    if dt.kind == "f":
        ss.append(Scan("logcumsumexp", acc, dt, "-INFINITY", "LOGADDEXP(a, b)"))
        # as torch: a NaN wins (and a later NaN takes its place), ties go to the later element
        ss += [Scan("cummax", val, dt, "-INFINITY", better="isnan(b) | (b >= a)"),
               Scan("cummin", val, dt, "INFINITY", better="isnan(b) | (b <= a)")]
    else:
        lo, hi = ("0", "1") if dt is dtypes.bool_ else (_INT_MIN[dt.ct], _INT_MAX[dt.ct])
        ss += [Scan("cummax", val, dt, lo, better="b >= a"),
               Scan("cummin", val, dt, hi, better="b <= a")]
    return {s.name: s for s in ss}


SCANS = {dt: scans_for(dt) for dt in dtypes.ALL}
SCAN = KernelFamily("scan", lambda dt: dict(dt=dt, scans=list(SCANS[dt].values())), dtypes.ALL)


def _bufs(*ts):
    return tuple(None if t is None else t._storage.buf for t in ts)


def block_size(dev, lines, L):
    """Elements per block of a scan: the whole line when there are lines enough to fill the
    device, else blocks enough that lines * blocks does (but not tiny ones)."""
    want, least = (dev.compute_units * 4, 4096) if dev.cpu_paths else (dev.compute_units * 256, 256)
    if lines >= want or L < 2 * least:
        return L
    return max(least, -(-L // -(-want // lines)))


def scan_raw(name, x, dim, reverse=False, xi=None):
    """The inclusive scan `name` of x along dim, from the end of each line when `reverse`; not
    recorded. Returns (out, indices); indices are None but for cummax / cummin. xi: the index of
    each element of x (for the scan of block totals), else its position."""
    dev, dt = x._storage.device, x._dtype
    check_fp64(dt, dev)
    if dt.kind == "c":
        # complex: the running sum of the real view along the same dim (the pair dim is last);
        # the running product by doubling steps of the table's complex mul; the ordering scans
        # refuse complex, as torch's
        if name == "cumprod" and xi is None and not reverse:
            return _cumprod_complex(x, dim), None
        if name != "cumsum" or xi is not None:
            raise NotImplementedError(f'"{name}" not implemented for '
                                      f"'{dtypes.TORCH_NAMES[dt]}'")
        r = scan_raw("cumsum", real_view(x), dim, reverse)[0]
        return complex_view(r, dt), None
    S = SCANS[dt][name]
    out = empty_tensor(x._shape, S.out, dev)
    idx = empty_tensor(x._shape, dtypes.int64, dev) if S.is_arg else None
    if numel_of(x._shape) == 0:
        return out, idx
    if xi is None:
        x, (outer, L, inner, so, sl, si) = lines_of(x, dim)
    else:                                   # x and xi are block totals: contiguous
        outer, L, inner, so, sl, si = lines(x, dim)
    xo, oo, osl = x._offset, 0, inner
    if reverse:                             # walk each line (of x and of out) from its end
        xo, sl, oo, osl = xo + (L - 1) * sl, -sl, (L - 1) * inner, -inner
    C = max(2, block_size(dev, outer * inner, L))
    B = -(-L // C)
    shape = (outer, L, inner, C, B)
    xin = (x._storage.buf, xo, so, sl, si)
    if S.is_arg:                            # the index of each element: xi[...] or its position
        xin += (None, 0, 0) if xi is None else (xi, 1)
    carry = cidx = None
    if B > 1:                               # block totals, then their scan: the carries
        sums = empty_tensor((outer, B, inner), S.acc, dev)
        sidx = empty_tensor((outer, B, inner), dtypes.int64, dev) if S.is_arg else None
        SCAN.launch(dev, dt, name + "_blocks", line_grid(dev, outer * B * inner), *xin,
                    *(_bufs(sidx) if S.is_arg else ()), sums._storage.buf, *shape)
        carry, cidx = scan_raw(name, sums, 1, xi=sidx)
    w = vec_width(dev, dt, S.acc, S.out)
    lanes = not S.is_arg and si == 1 and inner >= w
    items = outer * B * (-(-inner // w) if lanes else inner)
    SCAN.launch(dev, dt, name + "_scan", line_grid(dev, items), *xin,
                *(_bufs(idx, cidx) if S.is_arg else ()), out._storage.buf, oo, osl,
                *_bufs(carry), *shape, int(lanes))
    return out, idx


def _cumprod_complex(x, dim):
    """The running product of a complex x along dim without a program of its own: a copy of x,
    then for s = 1, 2, 4, ... out[s:] *= out[:-s] (Hillis and Steele's scan; each step one launch
    of the elementwise table's complex mul into a new tensor, copied back), ceil(log2 L) steps."""
    from .elementwise import ENTRIES, run      # function-level, as in reduce's complex prod
    dev, shape = x._storage.device, x._shape
    out = empty_tensor(shape, x._dtype, dev)
    copy_into(out, x)
    if not shape:
        return out
    L, st = shape[dim], out._strides[dim]
    s = 1
    while s < L and numel_of(shape):
        part = shape[:dim] + (L - s,) + shape[dim + 1:]
        hi = alias(out, part, out._strides, out._offset + s * st)
        lo = alias(out, part, out._strides, out._offset)
        copy_into(hi, run(ENTRIES["mul"], (hi, lo)))
        s *= 2
    return out


def _index_lines(t, idx, dim):
    """t and idx contiguous, and (L, inner, n) of their lines along dim."""
    t, idx = contiguous_raw(t), contiguous_raw(idx)
    outer, L, inner = lines(t, dim)[:3]
    return t, idx, L, inner, outer * L * inner


def cumext_backward_raw(g, idx, dim):
    """The gradient of cummax / cummin for output gradient g: g summed onto the chosen indices
    idx along dim (torch's cummaxmin_backward); a new contiguous tensor, not recorded."""
    return _cumext("cumext_backward", g, idx, dim)


def cumext_gather_raw(x, idx, dim):
    """x at the indices cummax / cummin chose (the adjoint of cumext_backward_raw); a new
    contiguous tensor, not recorded."""
    return _cumext("cumext_gather", x, idx, dim)


def _cumext(name, t, idx, dim):
    dev, dt = t._storage.device, t._dtype
    t, idx, L, inner, n = _index_lines(t, idx, dim)
    out = empty_tensor(t._shape, dt, dev)
    if n:
        SCAN.launch(dev, dt, name, line_grid(dev, n), t, idx, out, L, inner, n)
    return out
