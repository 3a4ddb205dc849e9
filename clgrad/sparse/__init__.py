"""clgrad.sparse: torch.sparse's functions over clgrad's dense-backed sparse COO tensors
(clgrad.sparse.coo says what is dense-backed: memory and products are those of the dense
tensor).

>>> import clgrad
>>> adj = clgrad.sparse_coo_tensor([[0, 1, 1], [1, 0, 1]], [1.0, 1.0, 1.0], (2, 2))
>>> clgrad.sparse.mm(adj, clgrad.ones(2, 3)).tolist()
[[1.0, 1.0, 1.0], [2.0, 2.0, 2.0]]
"""
import numpy as np

from ..ops.softmax import log_softmax as _log_softmax, softmax as _softmax
from ..ops.creation import from_numpy, ones
from ..ops.linalg import addmm as _addmm, mm as _mm
from .coo import SparseCooTensor, _build, _dense, _linear, is_sparse, sparse_coo_tensor

__all__ = ["addmm", "as_sparse_gradcheck", "check_sparse_tensor_invariants", "mm", "sum",
           "softmax", "log_softmax", "spmm", "smm", "dsmm", "hspmm"]


def mm(mat1, mat2, reduce=None):
    """Matrix product with a sparse operand (a dense GEMM here): dense result for sparse @
    dense, sparse for sparse @ sparse; gradients reach the sparse operand's values.

    >>> import clgrad
    >>> a = clgrad.tensor([[0.0, 2.0], [1.0, 0.0]]).to_sparse()
    >>> clgrad.sparse.mm(a, clgrad.tensor([[1.0], [3.0]])).tolist()
    [[6.0], [1.0]]
    """
    if reduce is not None:
        raise RuntimeError("sparse.mm: reduce is for the sparse CSR layout, which clgrad lacks")
    out = _mm(_dense(mat1), _dense(mat2))
    return out.to_sparse() if is_sparse(mat1) and is_sparse(mat2) else out


def spmm(input, mat2):
    """torch.spmm: `mm` with a sparse first operand.

    >>> import clgrad
    >>> clgrad.spmm(clgrad.eye(2).to_sparse(), clgrad.ones(2, 1)).tolist()
    [[1.0], [1.0]]
    """
    return mm(input, mat2)


def _rows_of(mat1, out, full_rows):
    """out (a dense product) as a sparse tensor over the rows mat1 has entries in: each such
    row whole (hybrid, torch's hspmm) or element by element (torch's smm)."""
    rows = np.unique(mat1._sp_idx[0])
    if full_rows:
        idx = rows[None, :]
    else:
        ncol = out.shape[1]
        idx = np.stack([np.repeat(rows, ncol), np.tile(np.arange(ncol), len(rows))])
    lin = idx[0] if full_rows else idx[0] * out.shape[1] + idx[1]
    src = out if full_rows else out.reshape(-1)
    return _build(idx, src.index_select(0, from_numpy(lin).to(out.device)), tuple(out.shape),
                  True)


def smm(input, mat):
    """torch.smm: sparse @ dense as a sparse tensor (every element of the rows input has
    entries in).

    >>> import clgrad
    >>> clgrad.smm(clgrad.eye(2).to_sparse(), clgrad.ones(2, 2))._nnz()
    4
    """
    return _rows_of(input, mm(input, mat), False)


def hspmm(mat1, mat2):
    """torch.hspmm: sparse @ dense as a hybrid sparse tensor (the rows mat1 has entries in,
    each a dense row).

    >>> import clgrad
    >>> h = clgrad.hspmm(clgrad.tensor([[0.0], [2.0]]).to_sparse(), clgrad.ones(1, 3))
    >>> h.indices().tolist(), h.values().tolist()
    ([[1]], [[2.0, 2.0, 2.0]])
    """
    return _rows_of(mat1, mm(mat1, mat2), True)


def dsmm(input, mat2):
    """torch.dsmm: sparse @ dense, dense result (as `mm`).

    >>> import clgrad
    >>> clgrad.dsmm(clgrad.eye(2).to_sparse(), clgrad.ones(2, 1)).tolist()
    [[1.0], [1.0]]
    """
    return mm(input, mat2)


def sparse_mask(self, mask):
    """Tensor.sparse_mask: self's elements at the coordinates of the sparse tensor mask.

    >>> import clgrad
    >>> m = clgrad.sparse_coo_tensor([[1]], [9.0], (3,))
    >>> clgrad.tensor([4.0, 5.0, 6.0]).sparse_mask(m).to_dense().tolist()
    [0.0, 5.0, 0.0]
    """
    if not is_sparse(mask):
        raise RuntimeError(f"sparse_mask(): expected mask to be a sparse COO tensor, got layout "
                           f"{mask.layout}")
    if tuple(mask.shape) != tuple(self.shape):
        raise RuntimeError(f"sparse_mask(): operands have incompatible sizes; self has size "
                           f"{list(self.shape)} but mask has size {list(mask.shape)}")
    c = mask.coalesce()
    return _build(c._sp_idx, c._gather(_dense(self)), tuple(self.shape), True)


def as_sparse_gradcheck(gradcheck):
    """torch's wrapper that lets gradcheck take sparse inputs: clgrad's sparse tensors are
    dense-backed, so gradcheck takes them as they are and this returns it unchanged.

    >>> import clgrad
    >>> clgrad.sparse.as_sparse_gradcheck(clgrad.autograd.gradcheck) is clgrad.autograd.gradcheck
    True
    """
    return gradcheck


def addmm(mat, mat1, mat2, *, beta=1.0, alpha=1.0):
    """beta * mat + alpha * (mat1 @ mat2) with a sparse mat1 (dense result).

    >>> import clgrad
    >>> clgrad.sparse.addmm(clgrad.ones(1, 1), clgrad.eye(1).to_sparse(), clgrad.ones(1, 1),
    ...                     beta=2.0).tolist()
    [[3.0]]
    """
    return _addmm(_dense(mat), _dense(mat1), _dense(mat2), beta=beta, alpha=alpha)


def _dims(input, dim, op):
    dims = [dim] if isinstance(dim, int) else list(dim)
    return sorted({input._wrap_dim(d) for d in dims})


def sum(input, dim=None, dtype=None):
    """Sum of a sparse tensor's elements: over every dim a dense 0-d tensor; over some dims a
    sparse tensor of the remaining ones (dense once every sparse dim is summed).

    >>> import clgrad
    >>> s = clgrad.sparse_coo_tensor([[0, 1, 1], [2, 0, 2]], [1.0, 2.0, 3.0], (2, 3))
    >>> clgrad.sparse.sum(s).item(), clgrad.sparse.sum(s, 1).to_dense().tolist()
    (6.0, [1.0, 5.0])
    """
    if not is_sparse(input):
        raise RuntimeError(f"sparse.sum: expected a sparse tensor, got layout {input.layout}")
    dense = _dense(input)
    if dim is None:
        return dense.sum(dtype=dtype)
    dims = _dims(input, dim, "sparse.sum")
    out = dense.sum(dims, dtype=dtype)
    keep = [d for d in range(input.sparse_dim()) if d not in dims]
    if not keep:
        return out
    sizes = [input.shape[d] for d in keep]
    lin, first = np.unique(_linear(input._sp_idx[keep], sizes), return_index=True)
    rows = out.reshape((-1,) + tuple(out.shape[len(keep):]))
    values = rows.index_select(0, from_numpy(lin).to(out.device))
    return _build(input._sp_idx[keep][:, first], values, tuple(out.shape), True)


def _masked(op, input, dim, dtype):
    """op (softmax or log_softmax) along dim over the specified elements only (the others are
    -inf, as torch's sparse softmax takes them); the result has input's coalesced indices."""
    if not is_sparse(input):
        raise RuntimeError(f"sparse.{op.__name__}: expected a sparse tensor, got layout "
                           f"{input.layout}")
    c = input.coalesce()
    vals = c._values()
    specified = _dense(_build(c._sp_idx, ones(vals.shape, dtype=vals.dtype, device=vals.device),
                              tuple(c.shape), True)) != 0
    x = _dense(c).masked_fill(~specified, float("-inf"))
    y = op(x, dim, dtype=dtype)
    return _build(c._sp_idx, c._gather(y), tuple(c.shape), True)


def softmax(input, dim, *, dtype=None):
    """Softmax along dim over the specified elements of a sparse tensor (unspecified ones count
    as -inf, and stay unspecified).

    >>> import clgrad
    >>> s = clgrad.sparse_coo_tensor([[0, 0, 1], [0, 2, 1]], [1.0, 1.0, 5.0], (2, 3))
    >>> clgrad.sparse.softmax(s, 1).to_dense().tolist()
    [[0.5, 0.0, 0.5], [0.0, 1.0, 0.0]]
    """
    return _masked(_softmax, input, dim, dtype)


def log_softmax(input, dim, *, dtype=None):
    """log of `softmax` over the specified elements.

    >>> import clgrad
    >>> s = clgrad.sparse_coo_tensor([[0, 1]], [1.0, 1.0], (3,))
    >>> round(clgrad.sparse.log_softmax(s, 0).values()[0].item(), 4)
    -0.6931
    """
    return _masked(_log_softmax, input, dim, dtype)


class check_sparse_tensor_invariants:
    """torch's switch for checking sparse tensors' indices. clgrad checks them always (a dense
    tensor is written from them), so this is on and enabling or disabling changes nothing.

    >>> import clgrad
    >>> with clgrad.sparse.check_sparse_tensor_invariants():
    ...     clgrad.sparse.check_sparse_tensor_invariants.is_enabled()
    True
    """

    def __init__(self, enable=True):
        self._enable = enable

    @staticmethod
    def is_enabled():
        return True

    @staticmethod
    def enable():
        pass

    @staticmethod
    def disable():
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def __call__(self, fn):
        return fn
