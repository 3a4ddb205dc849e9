"""softmax and log_softmax, and the scans (cumsum, cumprod, cummax, cummin, logcumsumexp).

Both families see their input as [outer, L, inner]: outer * inner independent lines of L elements
along `dim` (cl_kernels/softmax.mako, cl_kernels/scan.mako). Their backward passes are ops too,
written so that they can be differentiated again (double backward).
"""
import collections

from .. import dtypes
from ..autograd.op import Op
from ..autograd.grad_mode import state as _state
from ..runtime.kernels import Program, get_kernel, grid, group_limit, launch, render, vec_width
from ..tensor import Tensor, empty_tensor, numel_of
from ._base import cast_raw, check_fp64, collapse, contiguous_raw
from ..kernels.reduce import _INT_MAX, _INT_MIN

ROW, LANES, ONE = 0, 1, 2           # how a line kernel walks (see softmax.mako)


def _lines(t, dim):
    """t seen as lines along dim: (outer, L, inner, outer stride, L stride, inner stride), or None
    when the dims before (or after) dim do not merge into one stride (t is then copied)."""
    shape, strides = t._shape, t._strides
    if not shape:
        return 1, 1, 1, 0, 0, 0
    oshape, (ost,) = collapse(shape[:dim], [strides[:dim]])
    ishape, (ist,) = collapse(shape[dim + 1:], [strides[dim + 1:]])
    if len(oshape) > 1 or len(ishape) > 1:
        return None
    return (numel_of(oshape), shape[dim], numel_of(ishape), ost[0] if ost else 0, strides[dim],
            ist[0] if ist else 0)


def _lines_of(t, dim):
    """(t or a contiguous copy of it, its lines along dim)."""
    lines = _lines(t, dim)
    if lines is None:
        t = contiguous_raw(t)
        lines = _lines(t, dim)
    return t, lines


def _walk(dev, dt, outer, inner, sl, si):
    """(mode, work-items) of a line kernel over these lines."""
    if inner == 1 and sl == 1:
        return ROW, outer
    w = vec_width(dev, dt)
    if si == 1 and inner >= w:
        return LANES, outer * -(-inner // w)
    return ONE, outer * inner


def line_grid(dev, n):
    """(global, local size) for n work-items. A CPU runs each work-group on one core, so there a
    launch of few items gets groups small enough for every core to take some."""
    gs, ls = grid(dev, n)
    if dev.cpu_paths:
        ls = (min(ls[0], -(-n // (4 * dev.compute_units))),)
        gs = (-(-n // ls[0]) * ls[0],)
    return gs, ls


def _bufs(*ts):
    return tuple(None if t is None else t._storage.buf for t in ts)


def _where(c, a, b):
    from .pointwise import where
    return where(c, a, b)


def _check_dtype(op, x):
    if x._dtype.kind != "f":
        raise NotImplementedError(f'"{op}" not implemented for \'{x._dtype.name}\'; pass a '
                                  f'floating point dtype=')


# ---- softmax -------------------------------------------------------------------------------------
SOFTMAX = {dt: Program("softmax", dt.short, render("softmax.mako", dt=dt, fast_exp=False))
           for dt in dtypes.FLOATS}
# the same with native_exp, for the devices where the probe below finds it accurate
SOFTMAX_NATIVE = {dt: Program("softmax", dt.short + "_native",
                              render("softmax.mako", dt=dt, fast_exp=True))
                  for dt in dtypes.FLOATS if dt.ct != "double"}

_PROBE = Program("probe", "native_exp", """
__kernel void probe_native_exp(__global const float *x, __global float *fast, __global float *full)
{
    size_t i = get_global_id(0);
    fast[i] = native_exp(x[i]);
    full[i] = exp(x[i]);
}""")
_NATIVE_EXP_OK = {}


def native_exp_ok(dev):
    """Whether native_exp is as accurate as exp on dev over softmax's arguments (x - max <= 0):
    within 4 ulp of the exact value where exp's result is a normal float, 0 at -inf and NaN at NaN.
    OpenCL leaves native_exp's accuracy to the implementation, so it is measured, once per device.

    >>> import clgrad
    >>> native_exp_ok(clgrad.runtime.default_device()) in (True, False)
    True
    """
    ok = _NATIVE_EXP_OK.get(dev)
    if ok is None:
        import numpy as np
        import pyopencl as cl
        rng = np.random.default_rng(0)
        x = np.concatenate([np.linspace(-87.0, 0.0, 1 << 14), -rng.exponential(3.0, 1 << 14),
                            [0.0, -0.0, -1e-30, -np.inf, np.nan]]).astype(np.float32)
        mf = cl.mem_flags
        xb = cl.Buffer(dev.context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=x)
        fb = cl.Buffer(dev.context, mf.WRITE_ONLY, x.nbytes)
        eb = cl.Buffer(dev.context, mf.WRITE_ONLY, x.nbytes)
        q = dev.queue
        get_kernel(dev, _PROBE, "probe_native_exp")(q, (x.size,), None, xb, fb, eb)
        fast, full = np.empty_like(x), np.empty_like(x)
        cl.enqueue_copy(q, fast, fb)
        cl.enqueue_copy(q, full, eb)
        q.finish()
        with np.errstate(invalid="ignore", over="ignore"):
            exact = np.exp(x.astype(np.float64))
            normal = (exact >= np.finfo(np.float32).tiny) & np.isfinite(x)
            rel = np.abs(fast[normal] - exact[normal]) / exact[normal]
        ok = bool(rel.max() <= 4 * 2.0 ** -23 and fast[x == -np.inf].item() == 0
                  and np.isnan(fast[np.isnan(x)]).all())
        _NATIVE_EXP_OK[dev] = ok
    return ok


def _softmax_program(dev, dt):
    if dt.ct != "double" and native_exp_ok(dev):
        return SOFTMAX_NATIVE[dt]
    return SOFTMAX[dt]


def use_group(dev, L, inner, sl):
    """Whether lines go to a work-group each (local-memory reductions) rather than a work-item:
    on GPUs, for long contiguous rows. A CPU runs a work-group on one core, so there the
    work-item per line, with vector loads, is the fast way."""
    return not dev.cpu_paths and inner == 1 and sl == 1 and L >= 128


GROUP_MAX = 256        # the local buffer of softmax.mako's *_group kernels


def _group_size(dev, L, kernel):
    """Work-items per line: any count (the kernels' tree takes odd ones), within the kernel's
    limit and its local buffer."""
    return min(L, group_limit(dev, kernel, GROUP_MAX))


def softmax_raw(x, dim, log):
    """softmax (or log_softmax) of x along dim into a new contiguous tensor; not recorded."""
    dev, dt = x._storage.device, x._dtype
    check_fp64(dt, dev)
    out = empty_tensor(x._shape, dt, dev)
    if numel_of(x._shape) == 0:
        return out
    x, (outer, L, inner, so, sl, si) = _lines_of(x, dim)
    prog = _softmax_program(dev, dt)
    if use_group(dev, L, inner, sl):
        k = get_kernel(dev, prog, "softmax_group")
        ls = _group_size(dev, L, k)
        launch(dev, k, (outer * ls,), (ls,),
               x._storage.buf, x._offset, so, out._storage.buf, 0, L, int(log))
        return out
    mode, n = _walk(dev, dt, outer, inner, sl, si)
    gs, ls = line_grid(dev, n)
    k = get_kernel(dev, prog, "log_softmax_line" if log else "softmax_line")
    launch(dev, k, gs, ls, x._storage.buf, x._offset, so, sl, si, out._storage.buf, 0, outer, L,
           inner, mode)
    return out


def softmax_backward_raw(g, y, dim, log):
    """The gradient of softmax (log_softmax) at output y for output gradient g; not recorded."""
    dev, dt = y._storage.device, y._dtype
    out = empty_tensor(y._shape, dt, dev)
    if numel_of(y._shape) == 0:
        return out
    # the kernels read g and y with out's (contiguous) layout
    g = contiguous_raw(cast_raw(g, dt))
    y = contiguous_raw(y)
    outer, L, inner = _lines(out, dim)[:3]
    prog = _softmax_program(dev, dt)
    if use_group(dev, L, inner, 1):
        k = get_kernel(dev, prog, "softmax_bwd_group")
        ls = _group_size(dev, L, k)
        launch(dev, k, (outer * ls,), (ls,),
               g._storage.buf, g._offset, y._storage.buf, y._offset, out._storage.buf, 0, L,
               int(log))
        return out
    mode, n = _walk(dev, dt, outer, inner, inner, 1)
    gs, ls = line_grid(dev, n)
    k = get_kernel(dev, prog, "log_softmax_bwd_line" if log else "softmax_bwd_line")
    launch(dev, k, gs, ls, g._storage.buf, g._offset, y._storage.buf, y._offset,
           out._storage.buf, 0, outer, L, inner, mode)
    return out


class Softmax(Op):
    """y = exp(x - max) / sum(exp(x - max)) along dim; backward is the fused
    SoftmaxBackwardData op, itself differentiable."""

    _log = False

    @classmethod
    def forward(cls, ctx, x, dim):
        y = softmax_raw(x, dim, cls._log)
        ctx.dim = dim
        ctx.save_for_backward(y)
        return y

    @classmethod
    def backward(cls, ctx, g):
        y, = ctx.saved_tensors
        back = LogSoftmaxBackwardData if cls._log else SoftmaxBackwardData
        return back.apply(g, y, ctx.dim), None

    @classmethod
    def jvp(cls, args, tangents, y):
        t, dim = tangents[0], args[1]
        if cls._log:
            return t - (t * y.exp()).sum(dim, keepdim=True)
        return SoftmaxBackwardData.apply(t, y, dim)     # the Jacobian is symmetric


class LogSoftmax(Softmax):
    """y = x - max - log(sum(exp(x - max))) along dim."""

    _log = True


class SoftmaxBackwardData(Op):
    """grad_in = y * (g - sum(g * y, dim)): torch's _softmax_backward_data."""

    @staticmethod
    def forward(ctx, g, y, dim):
        ctx.dim = dim
        ctx.save_for_backward(g, y)
        return softmax_backward_raw(g, y, dim, False)

    @staticmethod
    def backward(ctx, gg):
        g, y = ctx.saved_tensors
        dim = ctx.dim
        grad_g = SoftmaxBackwardData.apply(gg, y, dim) if ctx.needs_input_grad[0] else None
        grad_y = None
        if ctx.needs_input_grad[1]:
            grad_y = gg * (g - (g * y).sum(dim, keepdim=True)) - g * (gg * y).sum(dim, keepdim=True)
        return grad_g, grad_y, None


class LogSoftmaxBackwardData(Op):
    """grad_in = g - exp(y) * sum(g, dim): torch's _log_softmax_backward_data."""

    @staticmethod
    def forward(ctx, g, y, dim):
        ctx.dim = dim
        ctx.save_for_backward(g, y)
        return softmax_backward_raw(g, y, dim, True)

    @staticmethod
    def backward(ctx, gg):
        g, y = ctx.saved_tensors
        dim = ctx.dim
        p = y.exp()
        grad_g = gg - (gg * p).sum(dim, keepdim=True) if ctx.needs_input_grad[0] else None
        grad_y = -(gg * p * g.sum(dim, keepdim=True)) if ctx.needs_input_grad[1] else None
        return grad_g, grad_y, None


def _softmax_input(op, input, dim, dtype):
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(input).__name__}")
    if dtype is not None:
        input = input.to(dtypes.as_dtype(dtype))
    if input.numel() or input._dtype.kind == "f":   # torch: an empty tensor needs no kernel
        _check_dtype(op, input)
    return input, input._wrap_dim(dim)


def softmax(input, dim, dtype=None):
    """exp(input) / sum(exp(input)) along dim, computed without overflow; `dtype` casts the input
    first.

    >>> import clgrad
    >>> clgrad.tensor([[1.0, 1.0], [0.0, 1000.0]]).softmax(1).tolist()
    [[0.5, 0.5], [0.0, 1.0]]
    """
    x, d = _softmax_input("softmax", input, dim, dtype)
    return Softmax.apply(x, d)


def log_softmax(input, dim, dtype=None):
    """log(softmax(input)) along dim, computed without overflow.

    >>> import clgrad
    >>> [round(v, 4) for v in clgrad.tensor([0.0, 0.0]).log_softmax(0).tolist()]
    [-0.6931, -0.6931]
    """
    x, d = _softmax_input("log_softmax", input, dim, dtype)
    return LogSoftmax.apply(x, d)


def _softmax_backward_data(grad_output, output, dim, input_dtype=None):
    """The gradient of softmax given its output (torch._softmax_backward_data); differentiable.

    >>> import clgrad
    >>> y = clgrad.tensor([0.5, 0.5])
    >>> clgrad._softmax_backward_data(clgrad.tensor([1.0, 0.0]), y, 0).tolist()
    [0.25, -0.25]
    """
    return SoftmaxBackwardData.apply(grad_output, output, output._wrap_dim(dim))


def _log_softmax_backward_data(grad_output, output, dim, input_dtype=None):
    """The gradient of log_softmax given its output (torch._log_softmax_backward_data).

    >>> import clgrad, math
    >>> y = clgrad.tensor([math.log(0.5), math.log(0.5)])
    >>> clgrad._log_softmax_backward_data(clgrad.tensor([1.0, 0.0]), y, 0).tolist()
    [0.5, -0.5]
    """
    return LogSoftmaxBackwardData.apply(grad_output, output, output._wrap_dim(dim))


# ---- scans ---------------------------------------------------------------------------------------
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
SCAN = {dt: Program("scan", dt.short, render("scan.mako", dt=dt, scans=list(SCANS[dt].values())))
        for dt in dtypes.ALL}


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
    S = SCANS[dt][name]
    out = empty_tensor(x._shape, S.out, dev)
    idx = empty_tensor(x._shape, dtypes.int64, dev) if S.is_arg else None
    if numel_of(x._shape) == 0:
        return out, idx
    if xi is None:
        x, (outer, L, inner, so, sl, si) = _lines_of(x, dim)
    else:                                   # x and xi are block totals: contiguous
        outer, L, inner, so, sl, si = _lines(x, dim)
    xo, oo, osl = x._offset, 0, inner
    if reverse:                             # walk each line (of x and of out) from its end
        xo, sl, oo, osl = xo + (L - 1) * sl, -sl, (L - 1) * inner, -inner
    C = max(2, block_size(dev, outer * inner, L))
    B = -(-L // C)
    lines = (outer, L, inner, C, B)
    xin = (x._storage.buf, xo, so, sl, si)
    if S.is_arg:                            # the index of each element: xi[...] or its position
        xin += (None, 0, 0) if xi is None else (xi._storage.buf, xi._offset, 1)
    prog = SCAN[dt]
    carry = cidx = None
    if B > 1:                               # block totals, then their scan: the carries
        sums = empty_tensor((outer, B, inner), S.acc, dev)
        sidx = empty_tensor((outer, B, inner), dtypes.int64, dev) if S.is_arg else None
        gs, ls = line_grid(dev, outer * B * inner)
        launch(dev, get_kernel(dev, prog, name + "_blocks"), gs, ls, *xin,
               *(_bufs(sidx) if S.is_arg else ()), sums._storage.buf, *lines)
        carry, cidx = scan_raw(name, sums, 1, xi=sidx)
    w = vec_width(dev, dt, S.acc, S.out)
    lanes = not S.is_arg and si == 1 and inner >= w
    gs, ls = line_grid(dev, outer * B * (-(-inner // w) if lanes else inner))
    launch(dev, get_kernel(dev, prog, name + "_scan"), gs, ls, *xin,
           *(_bufs(idx, cidx) if S.is_arg else ()), out._storage.buf, oo, osl, *_bufs(carry),
           *lines, int(lanes))
    return out, idx


class Cumsum(Op):
    """Running sums along dim (from the end when `reverse`); the gradient is the reversed
    running sum of the gradient."""

    @staticmethod
    def forward(ctx, x, dim, reverse):
        ctx.dim, ctx.reverse = dim, reverse
        return scan_raw("cumsum", x, dim, reverse)[0]

    @staticmethod
    def backward(ctx, g):
        return Cumsum.apply(g, ctx.dim, not ctx.reverse), None, None

    @staticmethod
    def jvp(args, tangents, out):
        return Cumsum.apply(tangents[0], *args[1:])


class Cumprod(Op):
    """Running products along dim; backward copes with zeros (_cumprod_backward)."""

    @staticmethod
    def forward(ctx, x, dim):
        out = scan_raw("cumprod", x, dim)[0]
        ctx.dim = dim
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, g):
        x, out = ctx.saved_tensors
        return _cumprod_backward(g, x, out, ctx.dim), None


def _rcumsum(t, dim):
    return Cumsum.apply(t, dim, True)


def _cumprod_backward(g, x, out, dim):
    """d out_k / d x_i = prod(x_j, j <= k, j != i), zeros in x included (as torch's
    cumprod_backward)."""
    if numel_of(x._shape) <= 1 or x._shape[dim] == 1:
        return g
    if _state.grad_enabled:
        # create_graph: a formula whose own derivative is right too. Without zeros the simple
        # one is; with them, torch's O(n^2) sum of products that leave out x_i.
        if not (x == 0).any().item():
            return _rcumsum(g * out, dim) / x
        return _cumprod_backward_quadratic(g, x, dim)
    # O(n) and no host sync: before the first zero of a line out_k / x_i is safe; the first zero
    # collects the products of the non-zeros up to each k before the second zero; after the
    # first zero every product holds it.
    is_zero = x == 0
    zeros_so_far = Cumsum.apply(is_zero, dim, False)
    nonzero = x.masked_fill(is_zero, 1)
    w = g * Cumprod.apply(nonzero, dim)
    before = zeros_so_far == 0
    first = zeros_so_far == 1
    zero = w.new_zeros(())
    grad_before = _rcumsum(w.masked_fill(~before, 0), dim) / nonzero
    grad_first = _rcumsum(w.masked_fill(~first, 0), dim)
    return _where(before, grad_before, _where(first.logical_and(is_zero), grad_first, zero))


def _cumprod_backward_quadratic(g, x, dim):
    """grad_k = sum over j >= k of g_j * prod(x_i, i <= j, i != k), one k at a time."""
    from .join import cat
    n = x._shape[dim]
    cols = []
    for k in range(n):
        parts = []
        if k > 0:
            before = x.narrow(dim, 0, k).prod(dim, keepdim=True)
        else:
            before = x.new_ones(tuple(1 if i == dim else s for i, s in enumerate(x._shape)))
        parts.append(before)
        if k < n - 1:
            parts.append(before * Cumprod.apply(x.narrow(dim, k + 1, n - k - 1), dim))
        left_out = cat(parts, dim) if len(parts) > 1 else parts[0]
        cols.append((g.narrow(dim, k, n - k) * left_out).sum(dim, keepdim=True))
    return cat(cols, dim)


_LOWEST = {dtypes.float32: -3.4028234663852886e38, dtypes.float64: -1.7976931348623157e308,
           dtypes.float16: -65504.0, dtypes.bfloat16: -3.3895313892515355e38}


class Logcumsumexp(Op):
    """log(cumsum(exp(x))) along dim (from the end when `reverse`)."""

    @staticmethod
    def forward(ctx, x, dim, reverse):
        out = scan_raw("logcumsumexp", x, dim, reverse)[0]
        ctx.dim, ctx.reverse = dim, reverse
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, g):
        # sum over the k that x_i reaches of g_k exp(x_i - out_k) (as torch computes it)
        x, out = ctx.saved_tensors
        if not g._shape or numel_of(g._shape) == 0:
            return g, None, None
        pos, neg = _signed_logcumsumexp(g, -out, ctx.dim, not ctx.reverse)
        return (pos + x).exp() - (neg + x).exp(), None, None

    @staticmethod
    def jvp(args, tangents, out):
        # sum over the j that out_k reaches of t_j exp(x_j - out_k); from the backward formula the
        # double-vjp trick would take log|u| at u = 0
        x, dim, reverse = args
        t = tangents[0]
        if not t._shape or numel_of(t._shape) == 0:
            return t
        pos, neg = _signed_logcumsumexp(t, x, dim, reverse)
        return (pos - out).exp() - (neg - out).exp()


def _signed_logcumsumexp(w, a, dim, reverse):
    """The logs of the running sums of w * exp(a) over w's positive and negative parts apart: sums
    of exponentials, kept from overflowing as logcumsumexps."""
    lowest = w.new_full((), _LOWEST[w._dtype])           # log(0), finite: lowest - x is no NaN
    log_abs = w.abs().log()
    pos = Logcumsumexp.apply(_where(w > 0, log_abs, lowest) + a, dim, reverse)
    neg = Logcumsumexp.apply(_where(w < 0, log_abs, lowest) + a, dim, reverse)
    return pos, neg


class Cummax(Op):
    """Running maximum along dim and where it was found; the gradient goes to that index."""

    _which = "cummax"

    @classmethod
    def forward(cls, ctx, x, dim):
        values, indices = scan_raw(cls._which, x, dim)
        ctx.dim = dim
        ctx.save_for_backward(indices)
        ctx.mark_non_differentiable(indices)
        return values, indices

    @staticmethod
    def backward(ctx, g, _gi):
        if g is None:
            return None, None
        idx, = ctx.saved_tensors
        return CummaxminBackward.apply(g, idx, ctx.dim), None

    @staticmethod
    def jvp(args, tangents, out):
        return CummaxminGather.apply(tangents[0], out[1], args[1]), None


class Cummin(Cummax):
    _which = "cummin"


Cummax._backward_cls._handles_none = True       # no zeros made for the indices' gradient
Cummin._backward_cls._handles_none = True


def _index_lines(t, idx, dim):
    """t and idx contiguous, and (L, inner, n) of their lines along dim."""
    t, idx = contiguous_raw(t), contiguous_raw(idx)
    outer, L, inner = _lines(t, dim)[:3]
    return t, idx, L, inner, outer * L * inner


class CummaxminBackward(Op):
    """The gradient of cummax / cummin: g summed onto the chosen indices (torch's
    cummaxmin_backward, a scatter_add)."""

    @staticmethod
    def forward(ctx, g, idx, dim):
        ctx.dim = dim
        ctx.save_for_backward(idx)
        dev, dt = g._storage.device, g._dtype
        g, idx, L, inner, n = _index_lines(g, idx, dim)
        out = empty_tensor(g._shape, dt, dev)
        if n:
            gs, ls = line_grid(dev, n)
            launch(dev, get_kernel(dev, SCAN[dt], "cumext_backward"), gs, ls, g._storage.buf,
                   g._offset, idx._storage.buf, idx._offset, out._storage.buf, 0, L, inner, n)
        return out

    @staticmethod
    def backward(ctx, gg):
        idx, = ctx.saved_tensors
        return CummaxminGather.apply(gg, idx, ctx.dim), None, None


class CummaxminGather(Op):
    """x at the indices cummax / cummin chose (the adjoint of CummaxminBackward)."""

    @staticmethod
    def forward(ctx, x, idx, dim):
        ctx.dim = dim
        ctx.save_for_backward(idx)
        dev, dt = x._storage.device, x._dtype
        x, idx, L, inner, n = _index_lines(x, idx, dim)
        out = empty_tensor(x._shape, dt, dev)
        if n:
            gs, ls = line_grid(dev, n)
            launch(dev, get_kernel(dev, SCAN[dt], "cumext_gather"), gs, ls, x._storage.buf,
                   x._offset, idx._storage.buf, idx._offset, out._storage.buf, 0, L, inner, n)
        return out

    @staticmethod
    def backward(ctx, g):
        idx, = ctx.saved_tensors
        return CummaxminBackward.apply(g, idx, ctx.dim), None, None


def _scan_input(op, input, dim, dtype=None):
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(input).__name__}")
    if dim is None or isinstance(dim, bool):
        raise TypeError(f"{op}(): argument 'dim' must be int, not {type(dim).__name__}")
    if dtype is not None:
        input = input.to(dtypes.as_dtype(dtype))
    return input, input._wrap_dim(dim)


def cumsum(input, dim, *, dtype=None):
    """Running sums along dim; ints and bools accumulate to int64 unless `dtype` says otherwise.

    >>> import clgrad
    >>> clgrad.tensor([1, 2, 3]).cumsum(0).tolist()
    [1, 3, 6]
    """
    x, d = _scan_input("cumsum", input, dim, dtype)
    out = Cumsum.apply(x, d, False)
    return out if dtype is None or out._dtype is x._dtype else cast_raw(out, x._dtype)


def cumprod(input, dim, *, dtype=None):
    """Running products along dim; ints and bools accumulate to int64 unless `dtype` says
    otherwise.

    >>> import clgrad
    >>> clgrad.tensor([1.0, 2.0, 0.0, 4.0]).cumprod(0).tolist()
    [1.0, 2.0, 0.0, 0.0]
    """
    x, d = _scan_input("cumprod", input, dim, dtype)
    out = Cumprod.apply(x, d)
    return out if dtype is None or out._dtype is x._dtype else cast_raw(out, x._dtype)


CummaxReturn = collections.namedtuple("cummax", ["values", "indices"])
CumminReturn = collections.namedtuple("cummin", ["values", "indices"])


def cummax(input, dim):
    """(values, indices): the running maximum along dim and the index it came from (the last one
    on ties; NaN beats everything).

    >>> import clgrad
    >>> clgrad.tensor([1.0, 3.0, 2.0, 3.0]).cummax(0).indices.tolist()
    [0, 1, 1, 3]
    """
    x, d = _scan_input("cummax", input, dim)
    return CummaxReturn(*Cummax.apply(x, d))


def cummin(input, dim):
    """(values, indices): the running minimum along dim and the index it came from.

    >>> import clgrad
    >>> clgrad.tensor([3.0, 1.0, 2.0]).cummin(0).values.tolist()
    [3.0, 1.0, 1.0]
    """
    x, d = _scan_input("cummin", input, dim)
    return CumminReturn(*Cummin.apply(x, d))


def logcumsumexp(input, dim):
    """log(cumsum(exp(input))) along dim, computed without overflow.

    >>> import clgrad
    >>> [round(v, 3) for v in clgrad.tensor([1000.0, 1000.0]).logcumsumexp(0).tolist()]
    [1000.0, 1000.693]
    """
    x, d = _scan_input("logcumsumexp", input, dim)
    _check_dtype("logcumsumexp", x)
    return Logcumsumexp.apply(x, d, False)


FUNCTIONS = {"softmax": softmax, "log_softmax": log_softmax,
             "_softmax_backward_data": _softmax_backward_data,
             "_log_softmax_backward_data": _log_softmax_backward_data,
             "cumsum": cumsum, "cumprod": cumprod, "cummax": cummax, "cummin": cummin,
             "logcumsumexp": logcumsumexp}
METHODS = {"softmax": softmax, "log_softmax": log_softmax, "cumsum": cumsum, "cumprod": cumprod,
           "cummax": cummax, "cummin": cummin, "logcumsumexp": logcumsumexp}
