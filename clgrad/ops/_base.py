"""What every op family shares: shapes and broadcasting, collapsing dimensions for strided
kernels, the raw (not recorded) copy, cast and fill kernels, and argument checks with torch's
messages."""
import math

import numpy as np
import pyopencl.cltypes as cltypes

from .. import dtypes
from ..dtypes import ALL as ALL_DTYPES
from ..runtime.kernels import Program, get_kernel, grid, launch, render, vec_width
from ..tensor import (Tensor, contiguous_strides, empty_tensor, is_contiguous_layout, make_tensor,
                      numel_of)

MAX_DIMS = 8


def size_repr(shape):
    return f"[{', '.join(str(s) for s in shape)}]"


def broadcast_shapes(*shapes):
    """torch.broadcast_shapes, with torch's error.

    >>> broadcast_shapes((2, 1), (3,))
    (2, 3)
    """
    if len(shapes) == 2 and shapes[0] == shapes[1]:
        return shapes[0]
    ndim = max(len(s) for s in shapes)
    out = [1] * ndim
    for s in shapes:
        off = ndim - len(s)
        for i, n in enumerate(s):
            o = out[off + i]
            if o == 1:
                out[off + i] = n
            elif n != 1 and n != o:
                raise RuntimeError(f"The size of tensor a ({o}) must match the size of tensor b "
                                   f"({n}) at non-singleton dimension {off + i}")
    return tuple(out)


def expand_strides(t, shape):
    """Strides that make tensor t read as `shape` (0 on broadcast dimensions)."""
    nd = len(shape)
    off = nd - len(t._shape)
    st = [0] * nd
    for i, (n, s) in enumerate(zip(t._shape, t._strides)):
        st[off + i] = 0 if n == 1 else s
    return st


def collapse(shape, strides_list):
    """Drop size-1 dimensions and merge neighbours that are contiguous with each other in every
    operand; returns (shape, [strides per operand])."""
    dims = [i for i, n in enumerate(shape) if n != 1]
    new_shape = []
    new_strides = [[] for _ in strides_list]
    for d in dims:
        if new_shape:
            mergeable = all(st[d] * shape[d] == ns[-1] for st, ns in zip(strides_list, new_strides))
            if mergeable:
                new_shape[-1] *= shape[d]
                for st, ns in zip(strides_list, new_strides):
                    ns[-1] = st[d]
                continue
        new_shape.append(shape[d])
        for st, ns in zip(strides_list, new_strides):
            ns.append(st[d])
    return new_shape, new_strides


_ZERO8 = np.zeros((), dtype=cltypes.long8)


_PACKED = {}


def pack8(values):
    """A long8 kernel argument from up to 8 integers. Memoised: a training step packs the same
    few shapes and strides hundreds of times (never mutated: the driver copies an argument when
    it is set)."""
    key = tuple(values)
    a = _PACKED.get(key)
    if a is None:
        a = _ZERO8.copy()
        for i, v in enumerate(key):
            a[f"s{i}"] = v
        if len(_PACKED) >= 4096:
            _PACKED.clear()
        _PACKED[key] = a
    return a


def pack8_right(values, fill=0):
    """A long8 kernel argument holding up to 8 per-dim values right-aligned (strided kernels'
    innermost dim is always the last component); the unused leading ones are `fill`."""
    return pack8([fill] * (MAX_DIMS - len(values)) + list(values))


def launch_walk(dev, kernel, n, cshape, *args):
    """Launch a kernel that walks the collapsed iteration shape `cshape` (common.mako's walk):
    each work-item takes a run of `chunk` elements on CPUs, one on GPUs."""
    chunk = 32 if dev.cpu_paths else 1
    gs, ls = grid(dev, -(-n // chunk))
    launch(dev, kernel, gs, ls, *args, n, chunk, len(cshape), pack8_right(cshape, 1))


def check_dims(op, nd):
    if nd > MAX_DIMS:
        raise NotImplementedError(f"{op}: clgrad kernels take at most {MAX_DIMS} strided dimensions "
                                  f"after merging contiguous ones, got {nd}; call .contiguous() "
                                  f"first")


def same_device(op, tensors):
    dev = None
    for t in tensors:
        if isinstance(t, Tensor):
            d = t._storage.device
            if dev is None:
                dev = d
            elif d is not dev:
                raise RuntimeError(f"{op}: Expected all tensors to be on the same device, but found "
                                   f"at least two devices, cl:{dev.index} and cl:{d.index}!")
    return dev


# ---- copies, casts and fills (raw: no autograd) ------------------------------------------------

COPY = {dt: Program("copy", dt.short, render("copy.mako", dt=dt, srcs=ALL_DTYPES))
        for dt in ALL_DTYPES}


def check_fp64(dt, dev):
    if dt is dtypes.float64 and not dev.has_fp64:
        raise TypeError(f"float64 is not supported on {dev.name} (no cl_khr_fp64); use float32")


def copy_into(dst, src):
    """Write src's values (any strides, any dtype, same shape) into dst (any strides): copy_c when
    both are contiguous, copy_r when both have contiguous rows of at least a vector, else the
    strided walk copy_s."""
    n = numel_of(dst._shape)
    if n == 0:
        return dst
    dev = dst._storage.device
    check_fp64(dst._dtype, dev)
    check_fp64(src._dtype, dev)
    prog = COPY[dst._dtype]
    s = src._dtype.short
    if dst._contig and src._contig and src._shape == dst._shape:
        k = get_kernel(dev, prog, "copy_c_" + s)
        gs, ls = grid(dev, -(-n // vec_width(dev, dst._dtype, src._dtype)))
        launch(dev, k, gs, ls, dst._storage.buf, dst._offset, src._storage.buf, src._offset, n)
        return dst
    shape, (ost, sst) = collapse(dst._shape, [list(dst._strides), expand_strides(src, dst._shape)])
    check_dims("copy_", len(shape))
    w = vec_width(dev, dst._dtype, src._dtype)
    # (every dim of size 1 collapses to none: one element, which the walk copies)
    if shape and ost[-1] == 1 and sst[-1] == 1 and shape[-1] >= w:
        # whole rows on both sides: vector loads along each (the walk is scalar)
        L = shape[-1]
        n6 = shape[-2] if len(shape) > 1 else 1
        (gx,), (lx,) = grid(dev, -(-L // w))
        ly = max(1, min(dev.wg // lx, n6))            # short rows: several to a work-group
        launch(dev, get_kernel(dev, prog, "copy_r_" + s), (gx, -(-n6 // ly) * ly, n // (L * n6)),
               (lx, ly, 1), dst._storage.buf, dst._offset, pack8_right(ost), src._storage.buf,
               src._offset, pack8_right(sst), len(shape), pack8_right(shape, 1))
        return dst
    launch_walk(dev, get_kernel(dev, prog, "copy_s_" + s), n, shape, dst._storage.buf,
                dst._offset, pack8_right(ost), src._storage.buf, src._offset, pack8_right(sst))
    return dst


# ---- memory overlap of in-place writes (torch's rules) -------------------------------------------
INTERNAL_OVERLAP = ("unsupported operation: more than one element of the written-to tensor refers "
                    "to a single memory location. Please clone() the tensor before performing the "
                    "operation.")
PARTIAL_OVERLAP = ("unsupported operation: some elements of the input tensor and the written-to "
                   "tensor refer to a single memory location. Please clone() the tensor before "
                   "performing the operation.")


def check_no_internal_overlap(t):
    """Raise torch's error when writing into t would write some memory more than once: a zero
    stride over a dim of size > 1 (an expanded tensor), or any other layout whose elements share
    memory (as_strided, unfold). torch lets the latter through as too hard to tell, and its result
    then depends on the order the elements are visited; clgrad raises where it can prove the
    overlap. A contiguous tensor cannot overlap itself, so the common case costs one attribute
    read."""
    if t._contig or 0 in t._shape:         # an empty tensor writes nothing
        return
    dims = sorted((abs(st), n) for n, st in zip(t._shape, t._strides) if n != 1)
    reach = 0                   # the largest offset the dims of smaller strides can reach
    for st, n in dims:
        if st == 0:
            raise RuntimeError(INTERNAL_OVERLAP)
        if st <= reach:
            break
        reach += (n - 1) * st
    else:
        return                  # each stride steps past everything below it: no overlap
    n = numel_of(t._shape)
    if n <= 1 << 16:            # prove it by listing the offsets (rare layouts, small sizes)
        offsets = np.zeros((), dtype=np.int64)
        for st, m in dims:
            offsets = np.add.outer(offsets, np.arange(m, dtype=np.int64) * st)
        if np.unique(offsets).size < n:
            raise RuntimeError(INTERNAL_OVERLAP)


def _dense(t):
    """Whether t's elements fill a block of its storage exactly once (torch's
    is_non_overlapping_and_dense): a permutation of a contiguous layout."""
    if t._contig:
        return True
    expected = 1
    for st, n in sorted((st, n) for n, st in zip(t._shape, t._strides) if n != 1):
        if st != expected:
            return False
        expected *= n
    return True


def check_no_partial_overlap(out, t):
    """Raise torch's error when input t and the written-to tensor out share some memory but not
    all of it in the same layout (writing out would change inputs still to be read). Same memory
    with the same strides (x.add_(x)) is fine. Where the layouts are not dense torch cannot tell,
    and lets it through; clgrad's in-place paths then go through a temporary."""
    if t is out or not isinstance(t, Tensor) or t._storage is not out._storage:
        return
    n, m = numel_of(out._shape), numel_of(t._shape)
    if n == 0 or m == 0 or not (_dense(out) and _dense(t)):
        return
    a0, b0 = out._offset, t._offset
    if a0 == b0 and n == m and out._strides == t._strides:
        return
    if a0 < b0 + m and b0 < a0 + n:
        raise RuntimeError(PARTIAL_OVERLAP)


def check_inplace_overlap(out, inputs, internal=True):
    """Both of torch's checks for an op that writes `out` reading `inputs` (in place or out=)."""
    if internal and not out._contig:
        check_no_internal_overlap(out)
    storage = out._storage
    for t in inputs:            # on the in-place hot path: the common case is two compares
        if type(t) is Tensor and t._storage is storage and t is not out:
            check_no_partial_overlap(out, t)


def contiguous_raw(t):
    """t itself when contiguous, else a contiguous copy (not recorded)."""
    if t._contig:
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
    n = numel_of(t._shape)
    if n == 0:
        return t
    dev = t._storage.device
    prog = COPY[t._dtype]
    value = scalar_for(t._dtype, value)
    if t._contig:
        k = get_kernel(dev, prog, "fill_c")
        gs, ls = grid(dev, -(-n // vec_width(dev, t._dtype)))
        launch(dev, k, gs, ls, t._storage.buf, t._offset, value, n)
    else:
        shape, (st,) = collapse(t._shape, [list(t._strides)])
        check_dims("fill_", len(shape))
        launch_walk(dev, get_kernel(dev, prog, "fill_s"), n, shape, t._storage.buf, t._offset,
                    pack8_right(st), value)
    return t


def scalar_for(dt, value):
    """A Python number as the kernel argument for a tensor of dtype dt (compute type)."""
    if dt.kind == "f":
        return float(value)
    if dt.kind == "b":
        return 1 if value else 0
    v = int(value)
    if dt is dtypes.uint8:
        return v & 0xFF
    if dt.itemsize < 8:                  # wrap into the type, as a C cast does
        half = 1 << (8 * dt.itemsize - 1)
        return ((v + half) % (2 * half)) - half
    return v


# torch's names for the types in its "cannot be converted" message; float64 and bfloat16 are not
# checked (a number too large for bfloat16 becomes inf there, as in torch)
_OVERFLOW_NAMES = {dtypes.int8: "int8_t", dtypes.uint8: "uint8_t", dtypes.int16: "int16_t",
                   dtypes.int32: "int", dtypes.int64: "int64_t", dtypes.float16: "c10::Half",
                   dtypes.float32: "float"}
_FLOAT_MAX = {dtypes.float16: 65504.0, dtypes.float32: 3.4028234663852886e38}


def check_fits(value, dt):
    """torch's check where a Python number fills a tensor (full, fill_, masked_fill): a value
    outside dt's range is a RuntimeError, not a silent wrap. Unsigned types take -max..max (a
    negative number wraps), as torch's c10::overflows allows.

    >>> import clgrad
    >>> clgrad.full((2,), 300, dtype=clgrad.int8)
    Traceback (most recent call last):
    RuntimeError: value cannot be converted to type int8_t without overflow
    """
    name = _OVERFLOW_NAMES.get(dt)
    if name is None or isinstance(value, (bool, np.bool_)):
        return
    v = float(value) if isinstance(value, (float, np.floating)) else int(value)
    if dt.kind == "f":
        bad = math.isfinite(v) and abs(v) > _FLOAT_MAX[dt]
    elif isinstance(v, float) and not math.isfinite(v):
        bad = True
    else:
        bits = 8 * dt.itemsize
        hi = (1 << bits) - 1 if dt.kind == "u" else (1 << (bits - 1)) - 1
        lo = -hi if dt.kind == "u" else -hi - 1
        bad = not lo <= int(v) <= hi
    if bad:
        raise RuntimeError(f"value cannot be converted to type {name} without overflow")


def full_raw(shape, value, dt, dev):
    check_fp64(dt, dev)
    return fill_raw(empty_tensor(tuple(shape), dt, dev), value)


def view_raw(t, shape, strides, offset):
    """A view sharing t's storage and version counter (no autograd bookkeeping)."""
    return make_tensor(t._storage, tuple(shape), tuple(strides), offset, t._dtype,
                       is_contiguous_layout(shape, strides), t._vc)


__all__ = ["size_repr", "broadcast_shapes", "expand_strides", "collapse", "pack8", "pack8_right",
           "launch_walk", "check_dims",
           "same_device", "copy_into", "check_no_internal_overlap", "check_no_partial_overlap",
           "check_inplace_overlap", "contiguous_raw", "cast_raw", "fill_raw", "full_raw",
           "scalar_for", "view_raw", "contiguous_strides", "empty_tensor", "numel_of",
           "recorded_grads"]


def recorded_grads(ins, outs, grads):
    """The gradients of ins (None where not required) through outs, recomputed by composed ops
    and differentiated with create_graph: what a fused op's backward returns when it is itself
    recorded (double backward), so that its gradient differentiates again. Entries of grads may
    be None (outputs without a gradient)."""
    from ..autograd.engine import grad
    pairs = [(o, g) for o, g in zip(outs, grads) if g is not None]
    want = [x for x in ins if x is not None and x.requires_grad]
    got = iter(grad([o for o, _ in pairs], want, [g for _, g in pairs], create_graph=True,
                    allow_unused=True))
    return [next(got) if x is not None and x.requires_grad else None for x in ins]
