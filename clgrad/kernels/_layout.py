"""The layout of strided kernel arguments: dimensions collapsed where every operand is contiguous
across them, per-dim values packed into long8 arguments, and the launch of a kernel that walks
a collapsed iteration space (common.mako's walk). Shared by every family with strided kernels."""
import numpy as np
import pyopencl.cltypes as cltypes

from ..runtime.family import cl_args
from ..runtime.kernels import grid, launch
from ..tensor import Tensor, is_contiguous_layout, make_tensor

MAX_DIMS = 8


def view_raw(t, shape, strides, offset):
    """A view sharing t's storage and version counter (no autograd bookkeeping)."""
    return make_tensor(t._storage, tuple(shape), tuple(strides), offset, t._dtype,
                       is_contiguous_layout(shape, strides), t._vc)


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


def walk_grid(dev, n):
    """(global size, local size, chunk) of a walk over n elements (common.mako's walk): each
    work-item takes a run of `chunk` elements on CPUs, one on GPUs."""
    chunk = 32 if dev.cpu_paths else 1
    gs, ls = grid(dev, -(-n // chunk))
    return gs, ls, chunk


def launch_walk(dev, kernel, n, cshape, *args):
    """Launch a kernel that walks the collapsed iteration shape `cshape` (walk_grid). Tensors
    among `args` expand to buffer and offset."""
    gs, ls, chunk = walk_grid(dev, n)
    launch(dev, kernel, gs, ls, *cl_args(args), n, chunk, len(cshape), pack8_right(cshape, 1))


def check_dims(op, nd):
    if nd > MAX_DIMS:
        raise NotImplementedError(f"{op}: clgrad kernels take at most {MAX_DIMS} strided dimensions "
                                  f"after merging contiguous ones, got {nd}; call .contiguous() "
                                  f"first")
