"""The copy family (cl_kernels/copy.mako): copies between any layouts and dtypes (casting on the
way), fills, and the index-computed sequences of arange and linspace. Raw launches: no autograd.

>>> import clgrad
>>> x = clgrad.arange(6.0).reshape(2, 3)
>>> copy_into(clgrad.empty(3, 2), x.t()).tolist()
[[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]]
"""
import numpy as np
import pyopencl.cltypes as cltypes

from .. import dtypes
from ..dtypes import ALL as ALL_DTYPES
from ..runtime.family import KernelFamily
from ..runtime.kernels import grid, vec_width
from ..tensor import empty_tensor, numel_of, real_view
from ._layout import (check_dims, collapse, expand_strides, launch_walk, pack8_right, view_raw,
                      walk_grid)

# one program per destination dtype, holding the copies from every source dtype. Complex tensors
# have no program of their own: they are copied as their real views (interleaved (re, im) pairs
# of the real dtype), by these kernels (copy_into, fill_raw).
COPY = KernelFamily("copy", lambda dt: dict(dt=dt, srcs=ALL_DTYPES), ALL_DTYPES)


def check_fp64(dt, dev):
    if (dt is dtypes.float64 or dt is dtypes.complex128) and not dev.has_fp64:
        raise TypeError(f"{dt.name} is not supported on {dev.name} (no cl_khr_fp64); use "
                        f"{'float32' if dt is dtypes.float64 else 'complex64'}")


def _part(t, k):
    """Part k (0 real, 1 imaginary) of complex tensor t, as a real strided view."""
    r = real_view(t)
    return view_raw(r, t._shape, r._strides[:-1], r._offset + k)


def _copy_complex(dst, src):
    """copy_into where either side is complex, through the real views: complex to complex copies
    the (re, im) pairs (casting the parts), real to complex writes the real parts and zeros the
    imaginary ones, complex to real (or bool) takes the real parts (torch's cast; the warning is
    the op layer's)."""
    if dst._dtype.kind == "c" and src._dtype.kind == "c":
        if src._shape != dst._shape:            # broadcast first: the pair dim stays last
            src = view_raw(src, dst._shape, expand_strides(src, dst._shape), src._offset)
        copy_into(real_view(dst), real_view(src))
        return dst
    if dst._dtype.kind == "c":
        copy_into(_part(dst, 0), src)
        fill_raw(_part(dst, 1), 0)
        return dst
    if dst._dtype.kind == "b":           # True where either part is nonzero, as torch
        # function-level: the elementwise family's dispatch imports this module
        from .elementwise import ENTRIES, run
        if src._shape != dst._shape:
            src = view_raw(src, dst._shape, expand_strides(src, dst._shape), src._offset)
        return copy_into(dst, run(ENTRIES["ne"], (src, 0)))
    return copy_into(dst, _part(src, 0))


# Where a kernel is compiled per local size (PoCL), a rows kernel's work-group is as wide as a
# row's vectors (a power of two, at most ROWS_LX), takes as many rows along dimension 1 as there
# are (up to dev.wg) and the rest of dev.wg along dimension 2 where that divides it: a fixed
# 8 x 32 group left 6 of 8 work-items idle on a head of 32 floats and 28 of 32 rows on a merge
# of 4 heads, and ran long rows at half speed (a group's 32 rows of 512 bytes, each in a page of
# its own). The sizes are few (powers of two), and PoCL caches each kernel's code per local size
# on disk: a new one costs 0.25 s once, then 3 ms in later processes. PoCL 3.0, 2-core Xeon,
# float32, best of 5 interleaved, two runs, us, 8 x 32 / fitted: head merge (8, 4, 128, 32)
# 364-376 / 66-69, split 151-159 / 95-97, a mean's gradient times a (32, 64, 32, 32) 2107-2319 /
# 1123-1224, attention scores + mask (8, 4, 128, 128) 367 / 246-268, a 2^20-float transpose of
# rows of 16 2480-2563 / 939-1084, of 1024 616-762 / 434-455, of 100 903-980 / 882-1017.
ROWS_LX = 32
# the tile of copy_t (copy.mako's TT): a transpose of the last two dims
TRANSPOSE_TILE = 16


def _pow2_at_least(n):
    return 1 << max(0, (n - 1).bit_length())


def rows_geometry(dev, L, n6, rest, w):
    """(global, local) size of a rows kernel (copy_r, the elementwise table's <op>_r_): rows of L
    elements taken w at a time along dimension 0, n6 rows along 1, `rest` along 2.

    >>> from clgrad.runtime.device import default_device
    >>> dev = default_device()
    >>> (g, l) = rows_geometry(dev, 32, 4, 1024, 16)
    >>> g[2] == 1024 and all(a % b == 0 for a, b in zip(g, l)) and l[0] * l[1] * l[2] <= dev.wg
    True
    """
    if dev.compiles_per_local_size:
        lx = min(_pow2_at_least(-(-L // w)), ROWS_LX, dev.wg)
        ly = min(dev.wg // lx, _pow2_at_least(n6))
        lz = 1
        while rest % (2 * lz) == 0 and lx * ly * lz * 2 <= dev.wg:
            lz *= 2
        gx = -(-L // (w * lx)) * lx
    else:
        (gx,), (lx,) = grid(dev, -(-L // w))
        ly, lz = max(1, min(dev.wg // lx, n6)), 1      # short rows: several to a work-group
    return (gx, -(-n6 // ly) * ly, rest), (lx, ly, lz)


def copy_into(dst, src):
    """Write src's values (any strides, any dtype, same shape) into dst (any strides): copy_c when
    both are contiguous, copy_r when both have contiguous rows of at least a vector, copy_t
    when the last two dims are transposed (dst's rows contiguous, src's along the dim before),
    else the strided walk copy_s."""
    n = numel_of(dst._shape)
    if n == 0:
        return dst
    dev = dst._storage.device
    check_fp64(dst._dtype, dev)
    check_fp64(src._dtype, dev)
    if dst._dtype.kind == "c" or src._dtype.kind == "c":
        return _copy_complex(dst, src)
    dt, s = dst._dtype, src._dtype.short
    if dst._contig and src._contig and src._shape == dst._shape:
        COPY.launch(dev, dt, "copy_c_" + s, -(-n // vec_width(dev, dt, src._dtype)), dst, src, n)
        return dst
    shape, (ost, sst) = collapse(dst._shape, [list(dst._strides), expand_strides(src, dst._shape)])
    check_dims("copy_", len(shape))
    w = vec_width(dev, dst._dtype, src._dtype)
    # (every dim of size 1 collapses to none: one element, which the walk copies)
    if shape and ost[-1] == 1 and sst[-1] == 1 and shape[-1] >= w:
        # whole rows on both sides: vector loads along each (the walk is scalar)
        L = shape[-1]
        n6 = shape[-2] if len(shape) > 1 else 1
        COPY.launch(dev, dt, "copy_r_" + s, rows_geometry(dev, L, n6, n // (L * n6), w),
                    dst, pack8_right(ost), src, pack8_right(sst), len(shape),
                    pack8_right(shape, 1))
        return dst
    if len(shape) > 1 and ost[-1] == 1 and sst[-2] == 1 and min(shape[-2:]) > 1:
        # a transpose of the last two dims: a tile per work-item (copy_t)
        J, I = shape[-1], shape[-2]
        gx = -(-J // TRANSPOSE_TILE)
        lx = min(8, dev.wg, gx)
        COPY.launch(dev, dt, "copy_t_" + s, ((-(-gx // lx) * lx, -(-I // TRANSPOSE_TILE),
                                              n // (I * J)), (lx, 1, 1)),
                    dst, pack8_right(ost), src, pack8_right(sst), len(shape),
                    pack8_right(shape, 1))
        return dst
    launch_walk(dev, COPY.kernel(dev, dt, "copy_s_" + s), n, shape, dst, pack8_right(ost), src,
                pack8_right(sst))
    return dst


def copy_launch(dev, dt, out, oo, x, xo, shape, ost, sst):
    """(kernel, global size, local size, arguments) of the launch copy_into makes for a copy
    without a cast from buffer x (offset xo, strides sst) to buffer out (oo, ost) over the
    collapsed walk `shape` (at most 8 dims): copy_r for whole rows on both sides, else the walk
    copy_s. For a recording's passes, which build launches from other launches' arguments."""
    n = numel_of(shape)
    s = dt.short
    w = vec_width(dev, dt, dt)
    if shape and ost[-1] == 1 and sst[-1] == 1 and shape[-1] >= w:
        L = shape[-1]
        n6 = shape[-2] if len(shape) > 1 else 1
        gs, ls = rows_geometry(dev, L, n6, n // (L * n6), w)
        return (COPY.kernel(dev, dt, "copy_r_" + s), gs, ls,
                (out, oo, pack8_right(ost), x, xo, pack8_right(sst), len(shape),
                 pack8_right(shape, 1)))
    gs, ls, chunk = walk_grid(dev, n)
    return (COPY.kernel(dev, dt, "copy_s_" + s), gs, ls,
            (out, oo, pack8_right(ost), x, xo, pack8_right(sst), n, chunk, len(shape),
             pack8_right(shape, 1)))


def contiguous_raw(t):
    """t itself when contiguous, else a contiguous copy (not recorded)."""
    if t._contig:
        return t
    out = empty_tensor(t._shape, t._dtype, t._storage.device)
    return copy_into(out, t)


def dense_raw(t):
    """t itself when it is contiguous from the start of its buffer, else a contiguous copy: for
    kernels that take a bare buffer (no element offset), which would read a view's buffer from
    element 0."""
    if t._contig and t._offset == 0:
        return t
    out = empty_tensor(t._shape, t._dtype, t._storage.device)
    return copy_into(out, t)


def cast_raw(t, dt):
    """t converted to dtype dt, as a new contiguous tensor (t itself if it has dt already)."""
    if t._dtype is dt:
        return t
    out = empty_tensor(t._shape, dt, t._storage.device)
    return copy_into(out, t)


def fill_raw(t, value):
    """Fill t (any strides) with a Python number, in place."""
    n = numel_of(t._shape)
    if n == 0:
        return t
    if t._dtype.kind == "c":            # the parts, each a real strided view
        value = complex(value)
        fill_raw(_part(t, 0), value.real)
        fill_raw(_part(t, 1), value.imag)
        return t
    dev = t._storage.device
    value = scalar_for(t._dtype, value)
    if t._contig:
        COPY.launch(dev, t._dtype, "fill_c", -(-n // vec_width(dev, t._dtype)), t, value, n)
    else:
        shape, (st,) = collapse(t._shape, [list(t._strides)])
        check_dims("fill_", len(shape))
        launch_walk(dev, COPY.kernel(dev, t._dtype, "fill_s"), n, shape, t, pack8_right(st), value)
    return t


_PAIR = {"float2": cltypes.float2, "double2": cltypes.double2}


def scalar_for(dt, value):
    """A Python number as the kernel argument for a tensor of dtype dt (compute type): a
    float2 / double2 (re, im) for complex dtypes. A complex number for a real dtype gives its
    real part (callers refuse a nonzero imaginary part first: ops._base.check_fits)."""
    if isinstance(value, complex) and dt.kind != "c":
        value = value.real
    if dt.kind == "f":
        return float(value)
    if dt.kind == "c":
        value = complex(value)
        a = np.zeros((), dtype=_PAIR[dt.ct])
        a["x"], a["y"] = value.real, value.imag
        return a
    if dt.kind == "b":
        return 1 if value else 0
    v = int(value)
    if dt is dtypes.uint8:
        return v & 0xFF
    if dt.itemsize < 8:                  # wrap into the type, as a C cast does
        half = 1 << (8 * dt.itemsize - 1)
        return ((v + half) % (2 * half)) - half
    return v


def full_raw(shape, value, dt, dev):
    check_fp64(dt, dev)
    return fill_raw(empty_tensor(tuple(shape), dt, dev), value)


def arange_raw(n, dt, dev, start=0, step=1):
    """start, start + step, ... (n values) as a new tensor: each element computed from its index."""
    out = empty_tensor((n,), dt, dev)
    if n:
        COPY.launch(dev, dt, "iota", n, out, scalar_for(dt, start), scalar_for(dt, step), n)
    return out


def linspace_raw(out, start, end, step):
    """Fill the float tensor `out` (contiguous, 1-d) with `start` to `end`, `step` apart: the first
    half counted from start, the second from end, as torch does."""
    n = out._shape[0]
    if n:
        COPY.launch(out._storage.device, out._dtype, "linspace", n, out, float(start),
                    float(end), float(step), n)
    return out
