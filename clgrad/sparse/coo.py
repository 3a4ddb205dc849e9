"""Sparse COO tensors with torch's API, backed by a dense tensor.

A `SparseCooTensor` is a `Tensor` subclass: the object itself is the dense tensor (every element,
zeros included), and it carries the COO description beside it: `_indices()` (an int64 tensor of
shape (sparse_dim, nnz)), `_values()` (shape (nnz, *dense dims)) and whether they are coalesced.
The dense tensor is made from the values by one scatter-add (duplicates add up, as torch's
coalesce does), so gradients reach the values through every op that reads the tensor.

What that means for a program written against torch:
- memory is that of the dense tensor (plus indices and values): an N x N adjacency takes N*N
  elements, whatever its nnz;
- matrix products with a sparse operand (`torch.sparse.mm`, `torch.mm`, `@`) are dense GEMMs;
- the ops torch keeps sparse here (`t`, `transpose`, negation, sums and products of sparse
  tensors and numbers, `coalesce`, `sum` over some dims, `to`, `detach`, `clone`) return sparse
  tensors; every other op sees the dense tensor and returns a dense result where torch would
  return a sparse one or raise;
- a sparse tensor made with `requires_grad=True` is a leaf whose `.grad` is dense.

>>> import clgrad
>>> a = clgrad.sparse_coo_tensor([[0, 1], [1, 0]], [2.0, 3.0], (2, 2))
>>> a.is_sparse, a.layout, a.to_dense().tolist()
(True, clgrad.sparse_coo, [[0.0, 2.0], [3.0, 0.0]])
"""
import numpy as np

from .. import dtypes
from ..autograd.grad_mode import no_grad
from ..ops.creation import from_numpy, tensor as _tensor, zeros
from ..tensor import Tensor, sparse_coo, strided

__all__ = ["SparseCooTensor", "sparse_coo_tensor", "is_sparse"]


def is_sparse(t):
    return isinstance(t, SparseCooTensor)


def _dense(t):
    """The tensor as a plain dense Tensor (a view of a sparse one: its gradient reaches it)."""
    return Tensor.view(t, t.shape) if isinstance(t, SparseCooTensor) else t


def _as_index_array(indices, op):
    if isinstance(indices, Tensor):
        if indices.dtype not in (dtypes.int64, dtypes.int32, dtypes.int16, dtypes.int8,
                                 dtypes.uint8):
            raise RuntimeError(f"{op}(): indices must be an int64 tensor, got {indices.dtype}")
        arr = indices.numpy()
    else:
        arr = np.asarray(indices)
        if arr.size and arr.dtype.kind not in "iu":
            raise RuntimeError(f"{op}(): indices must be an int64 tensor")
    arr = arr.astype(np.int64, copy=False)
    if arr.ndim != 2:
        if arr.ndim == 1 and arr.size == 0:
            arr = arr.reshape(1, 0)
        else:
            raise RuntimeError(f"{op}(): indices must be sparse_dim x nnz, but got: "
                               f"{list(arr.shape)}")
    return arr


def _linear(idx, sparse_size):
    """Each entry's position in the flattened sparse dims (row-major)."""
    lin = np.zeros(idx.shape[1], np.int64)
    for d, n in enumerate(sparse_size):
        lin = lin * n + idx[d]
    return lin


def _build(idx, values, size, coalesced, requires_grad=False, device=None):
    """A SparseCooTensor from host indices (sparse_dim, nnz), device values (nnz, *dense dims)
    and the full size: the dense tensor is zeros with the values added at their positions."""
    sparse_dim = idx.shape[0]
    sparse_size = tuple(size[:sparse_dim])
    dense_size = tuple(size[sparse_dim:])
    nrows = int(np.prod(sparse_size, dtype=np.int64))
    device = values.device if device is None else device
    lin = _linear(idx, sparse_size)
    flat = zeros((nrows,) + dense_size, dtype=values.dtype, device=device)
    if idx.shape[1]:
        flat = flat.index_add(0, from_numpy(lin).to(device), values)
    out = flat.reshape(tuple(size))
    if requires_grad:
        out = out.detach().requires_grad_(True)
    out.__class__ = SparseCooTensor
    out._sp_idx = idx
    out._sp_indices = from_numpy(idx.copy()).to(device)
    out._sp_values = values
    out._sp_lin = lin
    out._sp_coalesced = bool(coalesced)
    out._sp_leaf = requires_grad
    return out


def _check_size(idx, size, op):
    for d in range(idx.shape[0]):
        if idx.shape[1] and idx[d].min() < 0:
            raise RuntimeError(f"{op}(): found negative index {int(idx[d].min())} for dim {d}")
        if idx.shape[1] and idx[d].max() >= size[d]:
            raise RuntimeError(f"size is inconsistent with indices: for dim {d}, size is "
                               f"{size[d]} but found index {int(idx[d].max())}")


def sparse_coo_tensor(indices, values, size=None, *, dtype=None, device=None, pin_memory=False,
                      requires_grad=False, check_invariants=None, is_coalesced=None):
    """A sparse COO tensor with `values` at the coordinates in the columns of `indices`
    (sparse_dim x nnz); `size` defaults to one past the largest index of each dim, followed by
    the values' dense dims. Duplicate coordinates add up. Dense-backed: see clgrad.sparse.coo.
    Indices are always checked against the size (RuntimeError), as a dense tensor is written.

    >>> import clgrad
    >>> s = clgrad.sparse_coo_tensor([[0, 2, 0], [1, 0, 1]], [1.0, 2.0, 3.0])
    >>> s.shape, s._nnz(), s.is_coalesced(), s.to_dense().tolist()
    (clgrad.Size([3, 2]), 3, False, [[0.0, 4.0], [0.0, 0.0], [2.0, 0.0]])
    """
    idx = _as_index_array(indices, "sparse_coo_tensor")
    if not isinstance(values, Tensor):
        values = _tensor(values, dtype=dtype, device=device)
    else:
        values = values.to(device=device or values.device, dtype=dtype or values.dtype)
    if values.ndim == 0:
        raise RuntimeError("sparse_coo_tensor(): values must have at least one dimension "
                           "(nnz, *dense dims)")
    if values.shape[0] != idx.shape[1]:
        raise RuntimeError(f"indices and values must have same nnz, but got nnz from indices: "
                           f"{idx.shape[1]}, nnz from values: {values.shape[0]}")
    sparse_dim = idx.shape[0]
    dense_size = tuple(values.shape[1:])
    if size is None:
        size = tuple(int(idx[d].max()) + 1 if idx.shape[1] else 0 for d in range(sparse_dim)) + \
            dense_size
    else:
        size = tuple(int(s) for s in size)
        if len(size) != sparse_dim + len(dense_size):
            raise RuntimeError(f"number of dimensions must be sparse_dim ({sparse_dim}) + "
                               f"dense_dim ({len(dense_size)}), but got {len(size)}")
        if size[sparse_dim:] != dense_size:
            raise RuntimeError(f"values has incorrect size, expected {list(size[sparse_dim:])},"
                               f" got {list(dense_size)}")
    _check_size(idx, size, "sparse_coo_tensor")
    if is_coalesced is None:
        is_coalesced = idx.shape[1] < 2          # as torch: fewer than two entries
    if requires_grad:
        # a leaf is kept coalesced, so that its values can be read back from it exactly
        c = _build(idx, values.detach(), size, is_coalesced).coalesce()
        return _build(c._sp_idx, c._sp_values.detach(), size, True, requires_grad=True)
    return _build(idx, values, size, is_coalesced)


class SparseCooTensor(Tensor):
    """A sparse COO tensor (torch's layout=torch.sparse_coo), dense-backed: see the module
    docstring. Make one with `clgrad.sparse_coo_tensor` or `Tensor.to_sparse()`."""

    __slots__ = ()               # Tensor's layout: a dense result becomes one in place

    # ---- what torch's sparse tensors report -----------------------------------------------
    @property
    def layout(self):
        return sparse_coo

    @property
    def is_sparse(self):
        return True

    def sparse_dim(self):
        return self._sp_idx.shape[0]

    def dense_dim(self):
        return self.ndim - self._sp_idx.shape[0]

    def _nnz(self):
        return self._sp_idx.shape[1]

    def is_coalesced(self):
        return self._sp_coalesced

    def _indices(self):
        return self._sp_indices

    def _values(self):
        if self._sp_coalesced:
            # read from the dense tensor (each element once, the coordinates being unique): so
            # the values follow in-place changes of it, and a leaf's stay connected to it
            return self._gather(_dense(self))
        return self._sp_values

    def indices(self):
        if not self._sp_coalesced:
            raise RuntimeError("Cannot get indices on an uncoalesced tensor, please call "
                               ".coalesce() first")
        return self._sp_indices

    def values(self):
        if not self._sp_coalesced:
            raise RuntimeError("Cannot get values on an uncoalesced tensor, please call "
                               ".coalesce() first")
        return self._values()

    def _gather(self, dense, lin=None):
        """dense's elements at this tensor's coordinates (nnz, *dense dims)."""
        lin = self._sp_lin if lin is None else lin
        rows = dense.reshape((-1,) + tuple(self.shape[self.sparse_dim():]))
        return rows.index_select(0, from_numpy(lin).to(self.device))

    def coalesce(self):
        """The same tensor with sorted, unique coordinates (duplicates summed).

        >>> import clgrad
        >>> s = clgrad.sparse_coo_tensor([[1, 0, 1]], [1.0, 2.0, 3.0]).coalesce()
        >>> s.indices().tolist(), s.values().tolist()
        ([[0, 1]], [2.0, 4.0])
        """
        if self._sp_coalesced:
            return self
        lin, first = np.unique(self._sp_lin, return_index=True)
        idx = self._sp_idx[:, first]
        return _build(idx, self._gather(_dense(self), lin), tuple(self.shape), True)

    def to_dense(self, dtype=None, *, masked_grad=None):
        """A dense (strided) copy; gradients flow back to the values."""
        out = Tensor.clone(_dense(self))
        return out if dtype is None else out.to(dtype)

    def to_sparse(self, *args, **kwargs):
        return self

    to_sparse_coo = to_sparse

    def _with_values(self, values, idx=None, coalesced=None):
        return _build(self._sp_idx if idx is None else idx, values, tuple(self.shape),
                      self._sp_coalesced if coalesced is None else coalesced)

    # ---- the ops that stay sparse in torch ------------------------------------------------
    def t(self):
        if self.sparse_dim() != 2 or self.ndim != 2:
            raise RuntimeError(f"t() expects a tensor with <= 2 sparse and 0 dense dimensions, "
                               f"but got {self.sparse_dim()} sparse and {self.dense_dim()} "
                               f"dense dimensions")
        return self.transpose(0, 1)

    def transpose(self, dim0, dim1):
        d0, d1 = self._wrap_dim(dim0), self._wrap_dim(dim1)
        if d0 >= self.sparse_dim() or d1 >= self.sparse_dim():
            raise RuntimeError("transpose(): clgrad's sparse tensors transpose sparse dims only")
        idx = self._sp_idx.copy()
        idx[[d0, d1]] = idx[[d1, d0]]
        size = list(self.shape)
        size[d0], size[d1] = size[d1], size[d0]
        return _build(idx, self._values(), tuple(size), False)

    def __neg__(self):
        return self._with_values(-self._values())

    neg = __neg__

    def _scalar(self, other):
        return not isinstance(other, Tensor) or (other.ndim == 0 and not is_sparse(other))

    def mul(self, other):
        if self._scalar(other):
            return self._with_values(self._values() * other)
        return Tensor.mul(_dense(self), _dense(other))

    def __mul__(self, other):
        return self.mul(other)

    def __rmul__(self, other):
        return self.mul(other)

    def div(self, other, *, rounding_mode=None):
        if self._scalar(other) and rounding_mode is None:
            return self._with_values(self._values() / other)
        return Tensor.div(_dense(self), _dense(other), rounding_mode=rounding_mode)

    def __truediv__(self, other):
        return self.div(other)

    def add(self, other, *, alpha=1):
        if is_sparse(other):
            if tuple(other.shape) != tuple(self.shape) or \
                    other.sparse_dim() != self.sparse_dim():
                raise RuntimeError(f"add: expected sizes to match, got {list(self.shape)} and "
                                   f"{list(other.shape)}")
            vals = other._values() if alpha == 1 else other._values() * alpha
            from ..ops.join import cat
            out = _build(np.concatenate([self._sp_idx, other._sp_idx], 1),
                         cat([self._values(), vals.to(self._values().dtype)]),
                         tuple(self.shape), False)
            # as torch: the sum of two coalesced tensors is coalesced
            return out.coalesce() if self._sp_coalesced and other._sp_coalesced else out
        return Tensor.add(_dense(self), other, alpha=alpha)

    def __add__(self, other):
        return self.add(other)

    def __radd__(self, other):
        return Tensor.add(_dense(self), other)

    def sub(self, other, *, alpha=1):
        return self.add(other, alpha=-alpha) if is_sparse(other) else \
            Tensor.sub(_dense(self), other, alpha=alpha)

    def __sub__(self, other):
        return self.sub(other)

    def sum(self, dim=None, keepdim=False, dtype=None):
        from . import sum as sparse_sum
        if dim is None:
            return Tensor.sum(_dense(self), dtype=dtype)
        return sparse_sum(self, dim, dtype=dtype)

    def detach(self):
        with no_grad():
            return self._with_values(self._sp_values.detach() if not self._sp_leaf else
                                     self._values().detach())

    def clone(self, *, memory_format=None):
        return self._with_values(Tensor.clone(self._values()))

    def to(self, *args, **kwargs):
        values = self._values().to(*args, **kwargs)
        if values is self._values():
            return self
        return _build(self._sp_idx, values, tuple(self.shape), self._sp_coalesced)

    def double(self):
        return self.to(dtypes.float64)

    def float(self):
        return self.to(dtypes.float32)

    def half(self):
        return self.to(dtypes.float16)

    def cpu(self):
        return self.to("cpu")

    def cuda(self, device=None, non_blocking=False):
        return self.to("cuda" if device is None else device)

    def __deepcopy__(self, memo):
        out = _build(self._sp_idx.copy(), Tensor.clone(self._values().detach()),
                     tuple(self.shape), self._sp_coalesced, requires_grad=self.requires_grad)
        memo[id(self)] = out
        return out

    def __repr__(self, *, tensor_contents=None):
        pad = " " * len("tensor(indices=")
        ind = repr(self._sp_indices).replace("\n", "\n" + pad)
        vals = repr(self._values().detach()).replace("\n", "\n" + " " * len("       values="))
        extra = ""
        if self.dtype is not dtypes.float32:
            extra += f", dtype={self.dtype}"
        if self.grad_fn is not None:
            extra += f", grad_fn=<{self.grad_fn.name()}>"
        elif self.requires_grad:
            extra += ", requires_grad=True"
        return (f"tensor(indices={ind},\n       values={vals},\n       size={tuple(self.shape)},"
                f" nnz={self._nnz()}, layout=clgrad.sparse_coo{extra})")


# ---- what dense tensors answer (bound onto Tensor by the namespace) --------------------------
def to_sparse(self, sparse_dim=None, *, layout=None, blocksize=None, dense_dim=None):
    """The tensor as a sparse COO tensor of its nonzero elements (the first `sparse_dim` dims
    sparse, all by default); its values' gradient reaches the nonzero elements.

    >>> import clgrad
    >>> s = clgrad.tensor([[0.0, 1.0], [2.0, 0.0]]).to_sparse()
    >>> s.indices().tolist(), s.values().tolist()
    ([[0, 1], [1, 0]], [1.0, 2.0])
    """
    if layout not in (None, sparse_coo):
        raise RuntimeError(f"to_sparse: clgrad builds the sparse_coo layout only, not {layout}")
    if blocksize is not None:
        raise RuntimeError("to_sparse: blocksize is for the block layouts, which clgrad lacks")
    nd = self.ndim
    if sparse_dim is None:
        sparse_dim = nd if dense_dim is None else nd - dense_dim
    if not 0 <= sparse_dim <= nd:
        raise RuntimeError(f"sparse_dim must be in [0, {nd}], but got {sparse_dim}")
    host = self.detach().numpy()
    if sparse_dim == 0:
        idx = np.zeros((0, 1), np.int64)
        nz = np.zeros(1, np.int64)
    else:
        flat = host.reshape(host.shape[:sparse_dim] + (-1,))
        mask = np.any(flat != 0, axis=-1) if flat.shape[-1] else np.zeros(flat.shape[:-1], bool)
        idx = np.stack(np.nonzero(mask)).astype(np.int64).reshape(sparse_dim, -1)
        nz = _linear(idx, self.shape[:sparse_dim])
    rows = self.reshape((-1,) + tuple(self.shape[sparse_dim:])) if sparse_dim else \
        self.unsqueeze(0)
    values = rows.index_select(0, from_numpy(nz).to(self.device))
    return _build(idx, values, tuple(self.shape), True)


def _dense_only(name, message):
    def method(self, *args, **kwargs):
        raise RuntimeError(f"{name} expected sparse coordinate tensor layout but got Strided"
                           if message is None else message)
    method.__name__ = name
    method.__doc__ = "Sparse tensors only: a dense tensor raises torch's RuntimeError."
    return method


DENSE_METHODS = {
    "to_sparse": to_sparse,
    "to_sparse_coo": lambda self: to_sparse(self),
    "coalesce": _dense_only("coalesce", None),
    "is_coalesced": _dense_only("is_coalesced", "is_coalesced expected sparse coordinate "
                                "tensor layout but got Strided"),
    "indices": _dense_only("indices", None),
    "values": _dense_only("values", None),
    "_indices": _dense_only("_indices", None),
    "_values": _dense_only("_values", None),
    "_nnz": _dense_only("_nnz", None),
    "sparse_dim": lambda self: 0,
    "dense_dim": lambda self: self.ndim,
}
