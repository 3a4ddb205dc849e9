"""The norm family (cl_kernels/norm.mako): layer_norm fused, one program per float dtype. Forward
is one kernel (the output and each row's mean and 1/std); backward is one kernel for the input's
gradient and one for the partial sums of the weight's and bias's, reduced by the reduce family.
Rows go a work-item each on the CPU paths (ln_*_row), a work-group each on the GPU ones
(ln_*_group). Raw launches: no autograd.

>>> import clgrad
>>> out, mean, rstd = layer_norm_raw(clgrad.tensor([[1.0, 3.0, 5.0]]), None, None, 3, 1e-5)
>>> [round(v, 4) for v in out.flatten().tolist()], mean.tolist()
([-1.2247, 0.0, 1.2247], [3.0])
"""
from .. import dtypes
from ..runtime.family import KernelFamily
from ..runtime.kernels import few_sizes, grid, group_limit, vec_width
from ..tensor import alias, empty_tensor, numel_of
from ._lines import line_grid
from .copy import cast_raw, check_fp64, contiguous_raw
from .reduce import reduce_raw

NORM = KernelFamily("norm", lambda dt: dict(dt=dt), dtypes.FLOATS)
DTYPES = dtypes.FLOATS   # the dtypes with a fused layer_norm
GROUP_MAX = 256          # the local buffer of norm.mako's *_group kernels
WGRAD_ITEMS = 4096       # ln_wgrad's work-items (chunks of rows x columns) at most


def _acc(dt):
    """The dtype of the saved mean and 1/std (and of the sums): float, double for double."""
    return dtypes.float64 if dt.ct == "double" else dtypes.float32


def _optional(t, x):
    """A kernel's (buffer, offset, present) for t, or x's buffer as a stand-in when t is None."""
    if t is None:
        return x._storage.buf, 0, 0
    return t, 1


def _rows_grid(dev, kernel, rows, L):
    """(global, local size): a work-item per row on the CPU paths, a work-group per row on the
    GPU ones."""
    if dev.cpu_paths:
        return line_grid(dev, rows)
    ls = few_sizes(dev, min(L, group_limit(dev, kernel, GROUP_MAX)))
    return (rows * ls,), (ls,)


def layer_norm_raw(x, weight, bias, L, eps):
    """(out, mean, rstd) of layer_norm over the last L elements of every row of contiguous x;
    not recorded."""
    dev, dt = x._storage.device, x._dtype
    check_fp64(dt, dev)
    rows = numel_of(x._shape) // L
    out = empty_tensor(x._shape, dt, dev)
    mean = empty_tensor((rows,), _acc(dt), dev)
    rstd = empty_tensor((rows,), _acc(dt), dev)
    name = "ln_fwd_row" if dev.cpu_paths else "ln_fwd_group"
    geometry = _rows_grid(dev, NORM.kernel(dev, dt, name), rows, L)
    tail = (rows, L, eps) if dev.cpu_paths else (L, eps)
    NORM.launch(dev, dt, name, geometry, x, *_optional(weight, x), *_optional(bias, x), out,
                mean._storage.buf, rstd._storage.buf, *tail)
    return out, mean, rstd


def layer_norm_backward_raw(g, x, weight, mean, rstd, L, need_x, need_w, need_b):
    """(dx, dw, db) for output gradient g: dw = sum(g * xhat) and db = sum(g) over rows, [L]
    tensors of x's dtype; None where not needed. Not recorded."""
    dev, dt = x._storage.device, x._dtype
    rows = numel_of(x._shape) // L
    g = contiguous_raw(cast_raw(g, dt))
    dx = dw = db = None
    if need_x:
        dx = empty_tensor(x._shape, dt, dev)
        name = "ln_bwd_row" if dev.cpu_paths else "ln_bwd_group"
        geometry = _rows_grid(dev, NORM.kernel(dev, dt, name), rows, L)
        tail = (rows, L) if dev.cpu_paths else (L,)
        NORM.launch(dev, dt, name, geometry, g, x, *_optional(weight, x), mean._storage.buf,
                    rstd._storage.buf, dx, *tail)
    if need_w or need_b:
        parts = max(1, min(rows, WGRAD_ITEMS // L))
        chunk = -(-rows // parts)
        parts = -(-rows // chunk)
        part = empty_tensor((2, parts, L), _acc(dt), dev)
        vec = vec_width(dev, _acc(dt))
        if dev.cpu_paths and L % vec == 0:
            # VEC columns per work-item with vector loads along the rows: on PoCL, which does not
            # pack neighbouring work-items into vector lanes, 1024 rows of 128 floats took
            # ln_wgrad 127-157 us and this 25-37; Intel's CPU runtime, which does, 22-27 either way
            items = L // vec
            ls = few_sizes(dev, min(items, 16))
            geometry = ((-(-items // ls) * ls, parts), (ls, 1))
            name = "ln_wgrad_v"
        else:
            gs, ls = grid(dev, L)
            geometry, name = ((gs[0], parts), (ls[0], 1)), "ln_wgrad"
        NORM.launch(dev, dt, name, geometry, g, x, mean._storage.buf, rstd._storage.buf,
                    part._storage.buf, rows, L, chunk, parts)
        # each its own tensor, so that .grad takes it as it is
        half = lambda i: alias(part, (parts, L), (L, 1), i * parts * L)   # noqa: E731
        if need_w:
            dw = cast_raw(reduce_raw("sum", half(0), (0,), False), dt)
        if need_b:
            db = cast_raw(reduce_raw("sum", half(1), (0,), False), dt)
    return dx, dw, db
