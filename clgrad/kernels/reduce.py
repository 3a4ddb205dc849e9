"""The reduce family (cl_kernels/reduce.mako): sum, prod, max/min, argmax/argmin, all/any over
any dims of a strided tensor. One program per input dtype; the table below says, per input
dtype, what each reduction accumulates in, its identity, how it combines and what it returns.
`reduce_raw` picks the kernel (whole rows, strided rows, columns with or without vector loads),
splits long reductions into partial results reduced again, and reduces dims that do not merge in
two stages. Raw launches: no autograd.

>>> import clgrad
>>> x = clgrad.arange(6.0).reshape(2, 3)
>>> reduce_raw("sum", x, (1,), False).tolist(), reduce_raw("argmax", x, (0,), True).tolist()
([3.0, 12.0], [[1, 1, 1]])
"""
import builtins

from .. import dtypes
from ..dtypes import ALL as ALL_DTYPES
from ..runtime.family import KernelFamily
from ..runtime.kernels import few_sizes, group_limit, vec_width
from ..tensor import (alias, complex_view, contiguous_strides, empty_tensor, numel_of,
                      real_view)
from ._layout import collapse, pack8
from .copy import cast_raw, check_fp64, contiguous_raw, copy_into, full_raw

_INT_MIN = {"int": "(-2147483647 - 1)", "long": "(-9223372036854775807L - 1)", "uchar": "0",
            "short": "(-32768)", "char": "(-128)"}
_INT_MAX = {"int": "2147483647", "long": "9223372036854775807L", "uchar": "255",
            "short": "32767", "char": "127"}


def _acc_dtype(dt):
    if dt.kind == "f":
        return dtypes.float64 if dt is dtypes.float64 else dtypes.float32
    return dtypes.int64


def _value_dtype(dt):
    """the dtype values are compared in (16-bit floats in float32)"""
    return dtypes.float32 if dt in (dtypes.float16, dtypes.bfloat16) else dt


class Reduction:
    def __init__(self, name, dt, acc, out, identity, combine, better=None, scaled=False):
        self.name = name
        self.acc = acc
        self.out = out
        self.identity = identity
        self.combine = combine
        self.better = better
        self.is_arg = better is not None
        self.scaled = scaled

    def post(self, v):
        return f"({v}) * scale" if self.scaled else v


def reductions_for(dt):
    acc = _acc_dtype(dt)
    val = _value_dtype(dt)
    sum_out = dt if dt.kind == "f" else dtypes.int64
    rs = [Reduction("sum", dt, acc, sum_out, "0", "a + b", scaled=True),
          Reduction("prod", dt, acc, sum_out, "1", "a * b", scaled=True)]
    if dt.kind == "f":
        lo, hi = "-INFINITY", "INFINITY"
        mx = "(isnan(a) || a > b) ? a : b"
        mn = "(isnan(a) || a < b) ? a : b"
        nan = "(isnan(vb) && !isnan(va))"
        eq = "(vb == va || (isnan(vb) && isnan(va)))"
        bmax = f"(vb > va) || {nan} || ({eq} && ib < ia)"
        bmin = f"(vb < va) || {nan} || ({eq} && ib < ia)"
    else:
        lo, hi = _INT_MIN[val.ct], _INT_MAX[val.ct]
        if dt.kind == "b":
            lo, hi = "0", "1"
        mx = "(a > b) ? a : b"
        mn = "(a < b) ? a : b"
        bmax = "(vb > va) || (vb == va && ib < ia)"
        bmin = "(vb < va) || (vb == va && ib < ia)"
    rs += [Reduction("max", dt, val, dt, lo, mx), Reduction("min", dt, val, dt, hi, mn),
           Reduction("argmax", dt, val, dtypes.int64, lo, mx, better=bmax),
           Reduction("argmin", dt, val, dtypes.int64, hi, mn, better=bmin)]
    if dt is dtypes.bool_:
        rs += [Reduction("all", dt, dtypes.bool_, dtypes.bool_, "1", "a & b"),
               Reduction("any", dt, dtypes.bool_, dtypes.bool_, "0", "a | b")]
    return rs


REDUCTIONS = {dt: {r.name: r for r in reductions_for(dt)} for dt in ALL_DTYPES}
# Where whole programs are built (PoCL), the reductions most scripts use are a unit of their
# own (Program.unit_key): a training step builds them, not prod, min, argmin and the rest.
HOT = ("sum", "argmax", "all", "any")
_HOT_KERNELS = {f"{r}_{kind}" for r in HOT for kind in ("c", "r", "col", "colv")}
REDUCE = KernelFamily("reduce", lambda dt: dict(dt=dt, reductions=list(REDUCTIONS[dt].values())),
                      ALL_DTYPES, hot=lambda dt: _HOT_KERNELS)


def out_shape(shape, dims, keepdim):
    if keepdim:
        return tuple(1 if i in dims else s for i, s in enumerate(shape))
    return tuple(s for i, s in enumerate(shape) if i not in dims)


GROUP_MAX = 256        # the local buffers of reduce.mako's <op>_c / <op>_r kernels


# ---- the raw reduction ----------------------------------------------------------------------------
def reduce_raw(name, x, dims, keepdim, scale=1.0, out_dtype=None):
    """Reduce x over `dims` with reduction `name`; not recorded. Returns a new tensor."""
    dev = x._storage.device
    dt = x._dtype
    check_fp64(dt, dev)
    if dt.kind == "c":
        return _cast_out(_reduce_complex(name, x, dims, keepdim, scale), out_dtype)
    R = REDUCTIONS[dt][name]
    shape = x._shape
    oshape = out_shape(shape, dims, keepdim)
    N = 1
    for d in dims:
        N *= shape[d]
    M = numel_of(oshape)
    out = empty_tensor(oshape, R.out, dev)
    if M == 0:
        return _cast_out(out, out_dtype)
    if N == 0:
        if R.is_arg or name in ("max", "min"):
            raise IndexError(f"{name}(): Expected reduction dim to have non-zero size, got a tensor "
                             f"of shape {list(shape)} reduced over dims {list(dims)}")
        value = 1 if name in ("prod", "all") else 0
        if R.scaled and scale != 1:
            value = value * scale              # the mean of nothing is NaN
        return _cast_out(full_raw(oshape, value, R.out, dev), out_dtype)
    kept = [d for d in range(len(shape)) if d not in dims]
    kshape, (kst,) = collapse([shape[d] for d in kept], [[x._strides[d] for d in kept]])
    rshape, (rst,) = collapse([shape[d] for d in dims], [[x._strides[d] for d in dims]])
    if len(kshape) > 8 or len(rshape) > 8:
        x = cast_raw(x, dt) if x._contig else contiguous_raw(x)
        return reduce_raw(name, x, dims, keepdim, scale, out_dtype)
    if len(rshape) > 1 and not R.is_arg and dt.itemsize < 4 and R.acc.kind == "f" and \
            R.out is dt:
        # 16-bit floats: the two stages below would round their intermediate result to 16 bits,
        # so they run on a float32 copy (one cast), then round once. The single pass walks every
        # reduced element: PoCL, a bfloat16 conv's bias gradient (32, 64, 32, 32) over (0, 2, 3)
        # took 1.5 ms that way.
        return _cast_out(reduce_raw(name, cast_raw(x, R.acc), dims, keepdim, scale),
                         out_dtype or dt)
    if len(rshape) > 1 and not R.is_arg and dt.itemsize >= 4:
        # Reduced dims that do not merge (a mean over batch and space of NCHW, say): reduce the
        # inner ones first, keeping them as size 1, then the others. Each stage is then a plain row
        # or column reduction instead of a per-element walk of the reduced dims.
        # first stage: the innermost run of neighbouring reduced dims (space, in NCHW)
        live = [d for d in dims if shape[d] > 1]
        first = [live[-1]]
        for d in reversed(live[:-1]):
            if d != first[0] - 1:
                break
            first.insert(0, d)
        if len(first) == len(live):
            first = live[-1:]
        part = reduce_raw(name, x, tuple(first), True)
        rest = reduce_raw(name, part, dims, keepdim, scale)
        return _cast_out(rest, out_dtype)
    if not rshape:
        rshape, rst = [1], [0]
    cpu = dev.cpu_paths
    contiguous_rows = len(rshape) == 1 and rst[0] == 1
    column = (not contiguous_rows and len(rshape) == 1 and kshape and kst[-1] == 1
              and M >= 64)
    parts = 1
    if column:
        # one kept dim of stride 1: vector loads across neighbouring outputs
        kind = "colv" if (len(kshape) == 1 and not R.is_arg) else "col"
        L = 1
    else:
        kind = "c" if contiguous_rows else "r"
        if cpu:
            L = 1
            want = dev.compute_units * 4
            if not R.is_arg and M < want and N >= 4096:
                parts = builtins.min(-(-want // M), -(-N // 1024))
        else:
            # any count works (the kernels' tree takes odd counts); within the kernel's limit and
            # its local buffers (GROUP_MAX in reduce.mako)
            L = few_sizes(dev, builtins.min(N, group_limit(
                dev, REDUCE.kernel(dev, dt, f"{name}_{kind}"), GROUP_MAX)))
            want = dev.compute_units * 4
            if not R.is_arg and M < want and N >= L * 64:
                parts = builtins.min(-(-want // M), -(-N // (L * 16)))
    vec = vec_width(dev, dt, R.acc)
    chunk = -(-N // parts)
    chunk = -(-chunk // vec) * vec
    parts = -(-N // chunk)
    final_direct = parts == 1
    if final_direct:
        part = out
    else:
        part = empty_tensor((M * parts,), R.acc, dev)
    acc_scale = float(scale) if R.acc.kind == "f" else int(scale) if R.acc.kind != "b" else 1
    args = (out, part._storage.buf, x, M, N, len(kshape), pack8(kshape), pack8(kst), len(rshape),
            pack8(rshape), pack8(rst), chunk, parts, acc_scale)
    kname = f"{name}_{kind}"
    if kind in ("col", "colv"):
        items = M if kind == "col" else -(-M // (4 * vec))
        # enough work-groups for every compute unit: on a CPU a group runs on one core
        ls = few_sizes(dev, builtins.min(dev.wg, 64, items // (2 * dev.compute_units)))
        REDUCE.launch(dev, dt, kname, ((-(-items // ls) * ls,), (ls,)), *args)
    else:
        REDUCE.launch(dev, dt, kname, ((M * parts * L,), (L,)), *args)
    if final_direct:
        return _cast_out(out, out_dtype)
    # second stage: reduce the partials of each output, in the accumulator's dtype
    partials = alias(part, (M, parts), (parts, 1), 0)
    res = reduce_raw(name, partials, (1,), False, scale)
    res = alias(res, oshape, contiguous_strides(oshape), 0)
    if res._dtype is not R.out:
        res = cast_raw(res, R.out)
    return _cast_out(res, out_dtype)


def _reduce_complex(name, x, dims, keepdim, scale):
    """Complex reductions, without programs of their own: a sum is the sum of the real view (the
    (re, im) pair dim is kept), read back as complex; a product multiplies halves of the reduced
    elements together (the elementwise table's complex mul) until one is left, log2(N) launches."""
    if name == "sum":
        r = reduce_raw("sum", real_view(x), dims, keepdim, scale)
        return complex_view(r, x._dtype)
    if name != "prod":
        raise NotImplementedError(f'"{name}" not implemented for '
                                  f"'{dtypes.TORCH_NAMES[x._dtype]}'")
    # function-level: the elementwise family's dispatch imports the copy family, as this does
    from .elementwise import ENTRIES, run
    shape = x._shape
    kept = [d for d in range(len(shape)) if d not in dims]
    oshape = out_shape(shape, dims, keepdim)
    m, n = numel_of([shape[d] for d in kept]), numel_of([shape[d] for d in dims])
    # (kept..., reduced...) as a contiguous (m, n) matrix
    perm = alias(x, tuple(shape[d] for d in kept + list(dims)),
                 tuple(x._strides[d] for d in kept + list(dims)), x._offset)
    cur = contiguous_raw(perm)
    cur = alias(cur, (m, n), (n, 1), cur._offset)
    if n == 0:
        return full_raw(oshape, 1, x._dtype, x._storage.device)
    while n > 1:
        h = n // 2
        lo = alias(cur, (m, h), (cur._strides[0], 1), cur._offset)
        hi = alias(cur, (m, h), (cur._strides[0], 1), cur._offset + h)
        nxt = run(ENTRIES["mul"], (lo, hi))
        if n % 2:              # the odd one out joins the first product
            last = alias(cur, (m, 1), (cur._strides[0], 1), cur._offset + n - 1)
            first = alias(nxt, (m, 1), (h, 1), 0)
            copy_into(first, run(ENTRIES["mul"], (first, last)))
        cur, n = nxt, h
    return alias(contiguous_raw(cur), oshape, contiguous_strides(oshape), 0)


def _cast_out(t, dt):
    return t if dt is None or t._dtype is dt else cast_raw(t, dt)
