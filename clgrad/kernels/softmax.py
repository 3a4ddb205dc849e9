"""The softmax family (cl_kernels/softmax.mako): softmax and log_softmax along one dim, forward
and backward, one program per float dtype, plus a second set built with native_exp for the
devices where a probe finds it as accurate as exp. The input is seen as lines along the dim
(clgrad.kernels._lines); a line goes to a work-item (walking a row, vector lanes across
neighbouring lines, or one line alone) or, on GPUs for long rows, to a work-group. Raw launches:
no autograd.

>>> import clgrad
>>> softmax_raw(clgrad.tensor([[1.0, 1.0], [0.0, 1000.0]]), 1, False).tolist()
[[0.5, 0.5], [0.0, 1.0]]
>>> softmax_backward_raw(clgrad.tensor([1.0, 0.0]), clgrad.tensor([0.5, 0.5]), 0, False).tolist()
[0.25, -0.25]
"""
import numpy as np
import pyopencl as cl

from .. import dtypes
from ..runtime.family import KernelFamily
from ..runtime.recording import aside
from ..runtime.kernels import Program, few_sizes, get_kernel, group_limit, vec_width
from ..tensor import empty_tensor, numel_of
from ._lines import line_grid, lines, lines_of
from .copy import cast_raw, check_fp64, contiguous_raw

ROW, LANES, ONE = 0, 1, 2           # how a line kernel walks (see softmax.mako)

SOFTMAX = KernelFamily("softmax", lambda dt: dict(dt=dt, fast_exp=False), dtypes.FLOATS)
# the same with native_exp, for the devices where the probe below finds it accurate
SOFTMAX_NATIVE = KernelFamily("softmax", lambda dt: dict(dt=dt, fast_exp=True),
                              [dt for dt in dtypes.FLOATS if dt.ct != "double"],
                              tag=lambda dt: dt.short + "_native")

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
    OpenCL leaves native_exp's accuracy to the implementation, so it is measured, once per device
    (on buffers of its own, synchronously: a measurement, not one of clgrad's launches).

    >>> import clgrad
    >>> native_exp_ok(clgrad.runtime.default_device()) in (True, False)
    True
    """
    ok = _NATIVE_EXP_OK.get(dev)
    if ok is None:
        with aside():         # a measurement, never part of a compiled step's recording
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


def softmax_family(dev, dt):
    """The family whose program softmax of dtype dt uses on dev: with native_exp where the probe
    found it accurate."""
    if dt.ct != "double" and native_exp_ok(dev):
        return SOFTMAX_NATIVE
    return SOFTMAX


def _walk(dev, dt, outer, inner, sl, si):
    """(mode, work-items) of a line kernel over these lines."""
    if inner == 1 and sl == 1:
        return ROW, outer
    w = vec_width(dev, dt)
    if si == 1 and inner >= w:
        return LANES, outer * -(-inner // w)
    return ONE, outer * inner


def use_group(dev, L, inner, sl):
    """Whether lines go to a work-group each (local-memory reductions) rather than a work-item:
    on GPUs, for long contiguous rows. A CPU runs a work-group on one core, so there the
    work-item per line, with vector loads, is the fast way."""
    return not dev.cpu_paths and inner == 1 and sl == 1 and L >= 128


GROUP_MAX = 256        # the local buffer of softmax.mako's *_group kernels


def _group_size(dev, L, kernel):
    """Work-items per line: any count (the kernels' tree takes odd ones), within the kernel's
    limit and its local buffer; of few sizes where each size is a build (few_sizes)."""
    return few_sizes(dev, min(L, group_limit(dev, kernel, GROUP_MAX)))


def softmax_raw(x, dim, log):
    """softmax (or log_softmax) of x along dim into a new contiguous tensor; not recorded."""
    dev, dt = x._storage.device, x._dtype
    check_fp64(dt, dev)
    out = empty_tensor(x._shape, dt, dev)
    if numel_of(x._shape) == 0:
        return out
    x, (outer, L, inner, so, sl, si) = lines_of(x, dim)
    fam = softmax_family(dev, dt)
    if use_group(dev, L, inner, sl):
        ls = _group_size(dev, L, fam.kernel(dev, dt, "softmax_group"))
        fam.launch(dev, dt, "softmax_group", ((outer * ls,), (ls,)), x, so, out, L, int(log))
        return out
    mode, n = _walk(dev, dt, outer, inner, sl, si)
    fam.launch(dev, dt, "log_softmax_line" if log else "softmax_line", line_grid(dev, n), x, so,
               sl, si, out, outer, L, inner, mode)
    return out


def causal_rows(dev, x):
    """Whether softmax_causal_raw takes x on dev: CPU code paths (GPUs give long rows a work-group
    each, and there add the mask instead)."""
    return dev.cpu_paths and x._shape != () and x._dtype.kind == "f"


def softmax_causal_raw(x, rows, first):
    """softmax along the last dim of causal attention scores x (..., rows, S): row r is query
    (r % rows) + first, which sees keys 0 to itself; the keys after it get 0 (what a -inf mask
    added first gives). Where causal_rows holds; not recorded.

    >>> import clgrad
    >>> softmax_causal_raw(clgrad.zeros(2, 2), 2, 0).tolist()
    [[1.0, 0.0], [0.5, 0.5]]
    """
    dev, dt = x._storage.device, x._dtype
    check_fp64(dt, dev)
    out = empty_tensor(x._shape, dt, dev)
    if numel_of(x._shape) == 0:
        return out
    dim = len(x._shape) - 1
    x, (outer, S, inner, so, sl, si) = lines_of(x, dim)
    if sl != 1:                          # the kernel reads rows with vector loads
        x = contiguous_raw(x)
        outer, S, inner, so = lines(x, dim)[:4]
    softmax_family(dev, dt).launch(dev, dt, "softmax_causal_row", line_grid(dev, outer), x, so,
                                   out, outer, S, rows, first)
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
    outer, L, inner = lines(out, dim)[:3]
    fam = softmax_family(dev, dt)
    if use_group(dev, L, inner, 1):
        ls = _group_size(dev, L, fam.kernel(dev, dt, "softmax_bwd_group"))
        fam.launch(dev, dt, "softmax_bwd_group", ((outer * ls,), (ls,)), g, y, out, L, int(log))
        return out
    mode, n = _walk(dev, dt, outer, inner, inner, 1)
    fam.launch(dev, dt, "log_softmax_bwd_line" if log else "softmax_bwd_line", line_grid(dev, n),
               g, y, out, outer, L, inner, mode)
    return out
