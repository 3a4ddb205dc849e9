"""The sort family (cl_kernels/sort.mako), one program per dtype: a stable bitonic network that
orders each row of a tensor (comparing (value, position) pairs, NaN above every number; 16-bit
floats compared as float32 keys), and the binary search of searchsorted. Raw launches: no
autograd.

>>> import clgrad
>>> order_rows_raw(clgrad.tensor([[3.0, 1.0, 2.0, 1.0]]), False).tolist()
[[1, 3, 2, 0]]
>>> searchsorted_raw(clgrad.tensor([1, 3, 5]), clgrad.tensor([3, 6]), True, False).tolist()
[1, 3]
"""
from .. import dtypes
from ..runtime.family import KernelFamily
from ..runtime.kernels import grid, launch
from ..tensor import alias, empty_tensor, numel_of

SORT = KernelFamily("sort", lambda dt: dict(dt=dt), dtypes.ALL)


def _key_dtype(dt):
    return dtypes.float32 if dt in (dtypes.float16, dtypes.bfloat16) else dt


def order_rows_raw(rows2d, descending):
    """Positions that sort each row of a contiguous [rows, n] tensor, as an int64 [rows, n]."""
    dev, dt = rows2d._storage.device, rows2d._dtype
    rows, n = rows2d._shape
    P = 1
    while P < n:
        P <<= 1
    keys = empty_tensor((rows, P), _key_dtype(dt), dev)
    idx = empty_tensor((rows, P), dtypes.int64, dev)
    SORT.launch(dev, dt, "sort_init", rows * P, rows2d, keys._storage.buf, idx._storage.buf, rows,
                n, P)
    # the network's log2(P) * (log2(P) + 1) / 2 steps: the kernel and geometry looked up once,
    # each step straight to the chokepoint (its arguments are buffers and numbers, nothing to
    # expand), as launch_walk does
    step = SORT.kernel(dev, dt, "sort_step")
    gs, ls = grid(dev, rows * (P // 2))
    keys, idx_buf = keys._storage.buf, idx._storage.buf
    k = 2
    while k <= P:
        j = k // 2
        while j >= 1:
            launch(dev, step, gs, ls, keys, idx_buf, rows, n, P, k, j, int(descending))
            j //= 2
        k *= 2
    return alias(idx, (rows, n), (P, 1), 0) if P != n else idx


def searchsorted_raw(seq, val, shared, right):
    """For contiguous `seq` (sorted along its last dim; one row for all when `shared`) and `val`
    of the same dtype: the int64 position (of val's shape) where each value of val would go in
    its row of seq, after equal elements when `right`."""
    dev = seq._storage.device
    res = empty_tensor(val._shape, dtypes.int64, dev)
    total = numel_of(val._shape)
    if total:
        nb = seq._shape[-1] if seq._shape else 1
        nv = val._shape[-1] if val._shape else 1
        rows = total // nv
        SORT.launch(dev, seq._dtype, "searchsorted", total, seq, val, res._storage.buf, rows, nv,
                    nb, int(shared), int(right))
    return res
