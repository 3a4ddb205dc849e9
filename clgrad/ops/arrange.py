"""Rearranging and generating: movedim/moveaxis, rot90, diff, meshgrid, cartesian_prod,
tril_indices, triu_indices, vander, logspace. Written in other clgrad ops (views, cat, index),
so the differentiable ones get their gradients from those.
"""
from .. import dtypes
from .join import cat, stack
from .creation import tensor, linspace
from ..runtime.device import get_device


def _dims(t, dims):
    dims = [dims] if isinstance(dims, int) else list(dims)
    return [t._wrap_dim(d) for d in dims]


def movedim(input, source, destination):
    """Move dims `source` to positions `destination`; the other dims keep their order.

    >>> import clgrad
    >>> clgrad.zeros(2, 3, 4).movedim(0, -1).shape
    clgrad.Size([3, 4, 2])
    """
    src, dst = _dims(input, source), _dims(input, destination)
    if len(src) != len(dst):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({src} dims) "
                           f"should contain the same number of dims as destination ({dst} dims)")
    if len(set(src)) != len(src):
        raise RuntimeError(f"movedim: repeated dim in `source` ({list(source)})")
    if len(set(dst)) != len(dst):
        raise RuntimeError(f"movedim: repeated dim in `destination` ({list(destination)})")
    nd = input.dim()
    perm = [-1] * nd
    for s, d in zip(src, dst):
        perm[d] = s
    rest = iter(d for d in range(nd) if d not in src)
    perm = [p if p >= 0 else next(rest) for p in perm]
    return input.permute(*perm) if nd else input.view(())


def unfold(input, dimension, size, step):
    """All slices of length `size` along `dimension`, `step` apart, as a new last dim (a view;
    Tensor.unfold).

    >>> import clgrad
    >>> clgrad.arange(5).unfold(0, 2, 2).tolist()
    [[0, 1], [2, 3]]
    """
    d = input._wrap_dim(dimension) if input.dim() else 0
    n = input.shape[d] if input.dim() else 1
    if size > n:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {n} but size is {size}")
    if size < 0:
        raise RuntimeError(f"size is {size} but must be >= 0")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    shape, strides = list(input.shape), list(input.stride())
    if not shape:
        return input.as_strided((size,), (1,), input.storage_offset())
    st = strides[d]
    shape[d] = (n - size) // step + 1
    strides[d] = st * step
    return input.as_strided(tuple(shape) + (size,), tuple(strides) + (st,),
                            input.storage_offset())


def rot90(input, k=1, dims=(0, 1)):
    """Rotate by 90 degrees k times in the plane of `dims` (from the first towards the second).

    >>> import clgrad
    >>> clgrad.tensor([[1, 2], [3, 4]]).rot90().tolist()
    [[2, 4], [1, 3]]
    """
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if input.dim() < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {input.dim()}")
    d0, d1 = _dims(input, dims)
    if d0 == d1:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {d0} and "
                           f"dim1 = {d1}")
    k %= 4
    if k == 1:
        return input.flip([d1]).transpose(d0, d1)
    if k == 2:
        return input.flip([d0, d1])
    if k == 3:
        return input.flip([d0]).transpose(d0, d1)
    return input.clone()


def diff(input, n=1, dim=-1, prepend=None, append=None):
    """The n-th forward difference along dim (after joining prepend and append).

    >>> import clgrad
    >>> clgrad.tensor([1, 3, 6, 10]).diff().tolist()
    [2, 3, 4]
    """
    if input.dim() == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    d = input._wrap_dim(dim)
    parts = [p for p in (prepend, input, append) if p is not None]
    x = cat([p if p.dim() else p.expand(*input.shape[:d], 1, *input.shape[d + 1:])
             for p in parts], d) if len(parts) > 1 else input
    for _ in range(n):
        m = x.shape[d]
        if m == 0:
            break
        a, b = x.narrow(d, 1, m - 1), x.narrow(d, 0, m - 1)
        x = (a != b) if x.dtype is dtypes.bool_ else a - b
    return x


def meshgrid(*tensors, indexing=None):
    """Grids from 1-d tensors: with indexing "ij" (torch's default) output k varies along dim k,
    with "xy" the first two dims are swapped (numpy's default).

    >>> import clgrad
    >>> x, y = clgrad.meshgrid(clgrad.tensor([1, 2]), clgrad.tensor([3, 4, 5]), indexing="ij")
    >>> x.shape, y[0].tolist()
    (clgrad.Size([2, 3]), [3, 4, 5])
    """
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    indexing = indexing or "ij"
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f"torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but "
                           f"received: {indexing}")
    for t in tensors:
        if t.dim() > 1:
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list "
                               f"but got: {t.dim()}D")
    ts = [t.reshape(-1) for t in tensors]
    shape = [t.shape[0] for t in ts]
    out = []
    for k, t in enumerate(ts):
        view = [1] * len(ts)
        view[k] = shape[k]
        out.append(t.reshape(view).expand(*shape))
    if indexing == "xy" and len(ts) >= 2:         # numpy's order: the first two dims swapped
        out = [o.transpose(0, 1) for o in out]
    return tuple(out)


def cartesian_prod(*tensors):
    """Every combination of one element from each 1-d tensor, as rows.

    >>> import clgrad
    >>> clgrad.cartesian_prod(clgrad.tensor([1, 2]), clgrad.tensor([3, 4])).tolist()
    [[1, 3], [1, 4], [2, 3], [2, 4]]
    """
    if len(tensors) == 1:
        return tensors[0]
    grids = meshgrid(*tensors, indexing="ij")
    return stack([g.reshape(-1) for g in grids], 1)


def _tri_indices(row, col, offset, upper, dtype, device):
    pairs = [(r, c) for r in range(row) for c in range(col)
             if (c - r >= offset if upper else c - r <= offset)]
    rows = [p[0] for p in pairs]
    cols = [p[1] for p in pairs]
    return tensor([rows, cols], dtype=dtype or dtypes.int64, device=device).reshape(2, len(pairs))


def tril_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    """The (row, col) coordinates of the lower triangle of a row x col matrix, as a 2 x N
    tensor (row-major order).

    >>> import clgrad
    >>> clgrad.tril_indices(3, 3).tolist()
    [[0, 1, 1, 2, 2, 2], [0, 0, 1, 0, 1, 2]]
    """
    return _tri_indices(row, col, offset, False, dtype, device)


def triu_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    """The (row, col) coordinates of the upper triangle of a row x col matrix.

    >>> import clgrad
    >>> clgrad.triu_indices(2, 3, 1).tolist()
    [[0, 0, 1], [1, 2, 2]]
    """
    return _tri_indices(row, col, offset, True, dtype, device)


def vander(x, N=None, increasing=False):
    """The Vandermonde matrix: columns are powers of x (decreasing unless `increasing`).

    >>> import clgrad
    >>> clgrad.vander(clgrad.tensor([1, 2, 3]), N=3).tolist()
    [[1, 1, 1], [4, 2, 1], [9, 3, 1]]
    """
    if x.dim() != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else N
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    base = x if x.dtype.kind == "f" else x.to(dtypes.int64)
    cols = []
    p = base.new_ones(base.shape)
    for _ in range(n):
        cols.append(p)
        p = p * base
    if not increasing:
        cols.reverse()
    return stack(cols, 1) if cols else base.new_zeros((x.shape[0], 0))


def logspace(start, end, steps, base=10.0, *, dtype=None, device=None, requires_grad=False,
             **kw):
    """`steps` numbers from base**start to base**end, evenly spaced in the exponent.

    >>> import clgrad
    >>> clgrad.logspace(0, 2, 3).tolist()
    [1.0, 10.0, 100.0]
    """
    want = dtype or dtypes.get_default_dtype()
    # powers in float64 where the device has it, rounded once: a float32 pow may be an ulp off
    # (NVIDIA's gives 10 ** 2 = 99.99999)
    wide = dtypes.float64 if get_device(device).has_fp64 else dtypes.float32
    exps = linspace(start, end, steps, dtype=wide, device=device)
    out = exps.new_full((), float(base)).pow(exps)
    if out._dtype is not want:
        out = out.to(want)
    return out.requires_grad_(requires_grad) if requires_grad else out


FUNCTIONS = {"movedim": movedim, "moveaxis": movedim, "rot90": rot90, "diff": diff,
             "meshgrid": meshgrid, "cartesian_prod": cartesian_prod,
             "tril_indices": tril_indices, "triu_indices": triu_indices, "vander": vander,
             "logspace": logspace}
METHODS = {"movedim": movedim, "moveaxis": movedim, "rot90": rot90, "diff": diff,
           "unfold": unfold}
