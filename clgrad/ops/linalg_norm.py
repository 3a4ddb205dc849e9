"""torch.linalg's norms composed from clgrad ops: vector_norm (any order, through
clgrad.ops.reduce.norm), matrix_norm ('fro', 'nuc', +-1, +-2, +-inf, with torch's checks in
torch's order) and norm, which picks one of them as torch.linalg.norm does."""
import math

from .. import dtypes
from .reduce import norm as _norm


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None, out=None):
    """The vector ord-norm over dim (all elements when None): 2, 1, inf, -inf, 0 (count of
    non-zeros) or any real ord, as torch.linalg.vector_norm.

    >>> import clgrad
    >>> clgrad.linalg.vector_norm(clgrad.tensor([3.0, -4.0]), ord=float("inf")).item()
    4.0
    """
    return _norm(x, 2 if ord == 2 else ord, dim, keepdim, dtype)


def _check_matrix_dims(op, A, dim, ord="fro"):
    """torch's checks of a matrix norm, in its order: dtype, rank, order, the pair of dims."""
    if A._dtype.kind not in "fc":      # complex: |a| sums, or the singular values (real)
        raise RuntimeError(f"linalg.{op}: Expected a floating point or complex tensor as input. "
                           f"Got {dtypes.TORCH_NAMES[A._dtype]}")
    if A.dim() < 2:
        raise RuntimeError(f"linalg.{op}: The input tensor A must have at least 2 dimensions.")
    if ord not in ("fro", "nuc", 2, -2, math.inf, -math.inf, 1, -1):
        raise RuntimeError(f"linalg.{op}: Order {ord} not supported.")
    dim = [dim] if isinstance(dim, int) else list(dim)
    if len(dim) != 2:
        raise RuntimeError(f"linalg.{op}: dim must be a 2-tuple. Got "
                           f"{' '.join(str(d) for d in dim)}")
    d0, d1 = (A._wrap_dim(d) for d in dim)
    if d0 == d1:
        raise RuntimeError(f"linalg.{op}: dims must be different. Got ({dim[0]}, {dim[1]})")
    return d0, d1


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None, out=None):
    """The matrix norm over the two dims: 'fro', inf / -inf (largest / smallest absolute row
    sum), 1 / -1 (column sums), 'nuc', 2 and -2 (the sum, largest and smallest singular value), as
    torch.linalg.matrix_norm.

    >>> import clgrad
    >>> A = clgrad.tensor([[1.0, -2.0], [3.0, 4.0]])
    >>> clgrad.linalg.matrix_norm(A, ord=1).item(), clgrad.linalg.matrix_norm(A, float("inf")).item()
    (6.0, 7.0)
    """
    d0, d1 = _check_matrix_dims("matrix_norm", A, dim, ord)   # torch: A's dtype, not dtype's
    if dtype is not None:
        A = A.to(dtypes.as_dtype(dtype))
    if ord == "fro":
        return vector_norm(A, 2, (d0, d1), keepdim)
    if ord in ("nuc", 2, -2):
        # function-level: import cycle: linalg_decomp imports linalg_lu, which imports this module
        from .linalg_decomp import singular_norm
        return singular_norm(A, ord, d0, d1, keepdim)
    if ord in (math.inf, -math.inf, 1, -1):
        rows, cols = (d1, d0) if ord in (math.inf, -math.inf) else (d0, d1)
        s = A.abs().sum(rows, keepdim=True)
        if ord > 0 and not s.shape[cols]:     # torch: the largest sum of none is 0
            r = s.sum(cols, keepdim=True)
        else:
            r = s.amax(cols, keepdim=True) if ord > 0 else s.amin(cols, keepdim=True)
        return r if keepdim else r.squeeze(max(d0, d1)).squeeze(min(d0, d1))
    raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")


def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None, out=None):
    """torch.linalg.norm: a vector norm (dim an int, or A 1-D, or no ord and no dim: the 2-norm
    of all elements) or a matrix norm (dim a pair, or A 2-D with an ord).

    >>> import clgrad
    >>> clgrad.linalg.norm(clgrad.tensor([[3.0, 0.0], [0.0, 4.0]])).item()
    5.0
    """
    if isinstance(dim, int):
        dim = (dim,)
    if dim is not None and len(dim) not in (1, 2):
        raise RuntimeError(f"linalg.norm: If dim is specified, it must be of length 1 or 2. Got "
                           f"{list(dim)}")
    if dim is not None and len(dim) == 2 or (dim is None and ord is not None and A.dim() == 2):
        return matrix_norm(A, "fro" if ord is None else ord, tuple(dim or (-2, -1)), keepdim,
                           dtype=dtype)
    if dim is None and ord is not None and A.dim() != 1:
        raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be "
                           f"1D or 2D. Got {A.dim()}D.")
    return vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype)
