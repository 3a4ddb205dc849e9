"""The rest of torch.Tensor's surface, built from ops clgrad has: in-place variants of
out-of-place ops, in-place view changes, splits, the complex-number no-ops of a real-only
library, predicates, and small composites (vdot, cov, corrcoef, addr, addbmm, matrix_power,
renorm, put/put_, the *_scatter ops, fill_diagonal_). The methods on a tensor's storage and
memory (new, resize_, set_, apply_, pin_memory, ...) are clgrad/ops/storage.py.

An in-place variant computes the op out of place and copies the result in with copy_, which
gives torch's rules: the result is cast to the tensor's dtype, the version counter moves, and
autograd records the copy (a leaf that requires grad refuses it).
"""
import builtins

from .. import dtypes
from ..tensor import Tensor
from ._base import size_repr
from .creation import eye

# in-place variant name -> out-of-place method name
INPLACE_OF = {
    "addmm_": "addmm", "addmv_": "addmv", "baddbmm_": "baddbmm", "addr_": "addr",
    "arctan2_": "atan2", "clamp_max_": "clamp_max", "clamp_min_": "clamp_min",
    "cumprod_": "cumprod", "cumsum_": "cumsum", "deg2rad_": "deg2rad", "rad2deg_": "rad2deg",
    "erfinv_": "erfinv", "float_power_": "float_power", "greater_": "greater",
    "greater_equal_": "greater_equal", "less_": "less", "less_equal_": "less_equal",
    "not_equal_": "not_equal", "heaviside_": "heaviside", "logical_not_": "logical_not",
    "logit_": "logit", "sinc_": "sinc", "xlogy_": "xlogy", "renorm_": "renorm",
    "addbmm_": "addbmm",
}


def _inplace(name, outplace):
    def method(self, *args, **kwargs):
        result = getattr(self, outplace)(*args, **kwargs)
        if tuple(result.shape) != tuple(self.shape):
            raise RuntimeError(f"output with shape {size_repr(self.shape)} doesn't match the "
                               f"broadcast shape {size_repr(result.shape)}")
        return self.copy_(result)
    method.__name__ = name
    method.__doc__ = f"In place: self.copy_(self.{outplace}(...))."
    return method


# in-place view changes: the tensor itself takes the view's shape, strides and offset
VIEW_INPLACE = {"squeeze_": "squeeze", "unsqueeze_": "unsqueeze", "t_": "t",
                "transpose_": "transpose", "swapaxes_": "transpose", "swapdims_": "transpose",
                "as_strided_": "as_strided"}


def _view_inplace(name, view_name):
    def method(self, *args, **kwargs):
        if self.requires_grad:
            raise RuntimeError(f"{name}(): clgrad changes the view of a tensor that requires "
                               f"grad only out of place; use x = x.{view_name}(...)")
        v = getattr(self, view_name)(*args, **kwargs)
        self._shape, self._strides, self._offset = v._shape, v._strides, v._offset
        self._contig = v._contig
        return self
    method.__name__ = name
    method.__doc__ = f"In place: this tensor becomes self.{view_name}(...) (same storage)."
    return method


def tensor_split(input, indices_or_sections, dim=0):
    """Split into n nearly equal parts (an int: the first size % n parts one longer) or at the
    given indices, along dim; every part is a view.

    >>> import clgrad
    >>> [p.tolist() for p in clgrad.arange(7).tensor_split(3)]
    [[0, 1, 2], [3, 4], [5, 6]]
    """
    d = input._wrap_dim(dim)
    n = input.shape[d]
    if isinstance(indices_or_sections, Tensor):
        indices_or_sections = indices_or_sections.tolist()
    if isinstance(indices_or_sections, int):
        k = indices_or_sections
        if k <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {k}")
        q, r = divmod(n, k)
        bounds, start = [], 0
        for i in range(k):
            start += q + (1 if i < r else 0)
            bounds.append(start)
        bounds = bounds[:-1]
    else:
        bounds = list(indices_or_sections)
    parts, start = [], 0
    for b in bounds + [n]:
        b = builtins.min(builtins.max(b, start), n)
        parts.append(input.narrow(d, start, b - start))
        start = b
    return tuple(parts)


def _split_dim(op, input, sections, dim, least):
    if input.dim() < least:
        raise RuntimeError(f"torch.{op} requires a tensor with at least {least} dimension, but "
                           f"got a tensor with {input.dim()} dimensions!")
    if isinstance(sections, int) and input.shape[dim] % sections:
        raise RuntimeError(f"torch.{op} attempted to split along dimension {dim}, but the size "
                           f"of the dimension {input.shape[dim]} is not divisible by the split_"
                           f"size {sections}!")
    return tensor_split(input, sections, dim)


def hsplit(input, sections):
    """tensor_split along dim 1 (dim 0 for 1-d input), equal parts only for an int.

    >>> import clgrad
    >>> [p.shape for p in clgrad.zeros(2, 4).hsplit(2)]
    [clgrad.Size([2, 2]), clgrad.Size([2, 2])]
    """
    return _split_dim("hsplit", input, sections, 1 if input.dim() > 1 else 0, 1)


def vsplit(input, sections):
    """tensor_split along dim 0 of an input of at least 2 dims."""
    return _split_dim("vsplit", input, sections, 0, 2)


def dsplit(input, sections):
    """tensor_split along dim 2 of an input of at least 3 dims."""
    return _split_dim("dsplit", input, sections, 2, 3)


def vdot(input, other):
    """The dot product of two 1-d tensors, the first conjugated (real: dot).

    >>> import clgrad
    >>> clgrad.vdot(clgrad.tensor([1.0, 2.0]), clgrad.tensor([3.0, 4.0])).item()
    11.0
    """
    return input.conj().dot(other)


def addr(input, vec1, vec2, *, beta=1, alpha=1):
    """beta * input + alpha * outer(vec1, vec2).

    >>> import clgrad
    >>> clgrad.addr(clgrad.zeros(2, 2), clgrad.ones(2), clgrad.ones(2)).tolist()
    [[1.0, 1.0], [1.0, 1.0]]
    """
    prod = vec1.outer(vec2)
    return (input if beta == 1 else input * beta) + (prod if alpha == 1 else prod * alpha) \
        if beta != 0 else prod * alpha + input.new_zeros(())


def addbmm(input, batch1, batch2, *, beta=1, alpha=1):
    """beta * input + alpha * the sum over the batch of batch1[i] @ batch2[i].

    >>> import clgrad
    >>> clgrad.addbmm(clgrad.zeros(2, 2), clgrad.ones(3, 2, 1), clgrad.ones(3, 1, 2)).tolist()
    [[3.0, 3.0], [3.0, 3.0]]
    """
    prod = batch1.bmm(batch2).sum(0)
    return (input * beta if beta != 1 else input) + (prod * alpha if alpha != 1 else prod) \
        if beta != 0 else prod * alpha


def matrix_power(input, n):
    """input @ input @ ... (n times) by repeated squaring; n = 0 gives the identity, a negative
    n the power of the inverse.

    >>> import clgrad
    >>> clgrad.tensor([[1.0, 1.0], [0.0, 1.0]]).matrix_power(3).tolist()
    [[1.0, 3.0], [0.0, 1.0]]
    """
    if input.dim() < 2 or input.shape[-1] != input.shape[-2]:
        raise RuntimeError(f"linalg.matrix_power: A must be batches of square matrices, but "
                           f"they are {input.shape[-2] if input.dim() > 1 else '?'} by "
                           f"{input.shape[-1] if input.dim() else '?'} matrices")
    if n < 0:
        # function-level: import cycle: linalg_lu imports methods
        from .linalg_lu import inv
        return matrix_power(inv(input), -n)
    result, base = None, input
    while n:
        if n & 1:
            result = base if result is None else result.matmul(base)
        n >>= 1
        if n:
            base = base.matmul(base)
    if result is None:
        return eye(input.shape[-1], dtype=input.dtype, device=input.device).expand(
            input.shape).contiguous()
    return result if result is not input else input.clone()


def cov(input, *, correction=1, fweights=None, aweights=None):
    """The covariance matrix of the variables in input's rows (observations in columns).

    >>> import clgrad
    >>> clgrad.tensor([[0.0, 1.0, 2.0], [2.0, 1.0, 0.0]]).cov().tolist()
    [[1.0, -1.0], [-1.0, 1.0]]
    """
    if input.dim() > 2:
        raise ValueError(f"cov(): expected input to have two or fewer dimensions but got an "
                         f"input with {input.dim()} dimensions")
    x = input.reshape(1, -1) if input.dim() < 2 else input
    if not x.is_floating_point():
        x = x.to(dtypes.get_default_dtype())
    n = x.shape[1]
    w = None
    if fweights is not None:
        w = fweights.to(x.dtype)
    if aweights is not None:
        w = aweights.to(x.dtype) if w is None else w * aweights.to(x.dtype)
    if w is None:
        mean = x.mean(1, keepdim=True)
        norm = n - correction
        c = (x - mean).matmul((x - mean).t()) / builtins.max(norm, 0)
    else:
        wsum = w.sum()
        mean = (x * w).sum(1, keepdim=True) / wsum
        xm = x - mean
        if correction == 0:
            norm = wsum
        elif aweights is None:
            norm = wsum - correction
        else:
            norm = wsum - correction * (w * aweights.to(x.dtype)).sum() / wsum
        c = (xm * w).matmul(xm.t()) / norm.clamp(min=0)
    return c.squeeze() if input.dim() < 2 else c


def corrcoef(input):
    """Pearson correlation coefficients of the variables in input's rows, clipped to [-1, 1].

    >>> import clgrad
    >>> clgrad.tensor([[1.0, 2.0, 3.0], [3.0, 2.0, 1.0]]).corrcoef().tolist()
    [[1.0, -1.0], [-1.0, 1.0]]
    """
    c = cov(input)
    if c.dim() == 0:
        return c / c
    d = c.diagonal().sqrt()
    return (c / d.unsqueeze(1) / d.unsqueeze(0)).clamp(-1, 1)


def renorm(input, p, dim, maxnorm):
    """Each sub-tensor along dim whose p-norm exceeds maxnorm is scaled down to norm maxnorm.

    >>> import clgrad
    >>> clgrad.tensor([[3.0, 4.0], [0.3, 0.4]]).renorm(2, 0, 1.0).tolist()[0]
    [0.6000000238418579, 0.800000011920929]
    """
    d = input._wrap_dim(dim)
    others = [k for k in range(input.dim()) if k != d]
    norms = input.abs().pow(p).sum(others, keepdim=True).pow(1.0 / p) if others else \
        input.abs()
    scale = (maxnorm / (norms + 1e-7)).clamp(max=1.0)
    return input * scale


def put_(input, index, source, accumulate=False):
    """Write source into input's elements at `index` (positions in the flattened tensor);
    `accumulate` adds instead.

    >>> import clgrad
    >>> x = clgrad.zeros(2, 2)
    >>> x.put_(clgrad.tensor([0, 3]), clgrad.tensor([1.0, 2.0])).tolist()
    [[1.0, 0.0], [0.0, 2.0]]
    """
    n = input.numel()
    idx = index.reshape(-1).long()
    idx = idx + (idx < 0).long() * n
    flat = input.reshape(-1)
    values = source.reshape(-1).to(input.dtype)
    if flat._storage is input._storage:
        flat.index_put_((idx,), values, accumulate=accumulate)
        return input
    # not viewable as 1-d (a transposed tensor): through a row-major copy, written back
    flat = flat.index_put((idx,), values, accumulate=accumulate)
    return input.copy_(flat.view(input.shape))


def put(input, index, source, accumulate=False):
    """put_ on a copy.

    >>> import clgrad
    >>> clgrad.zeros(3).put(clgrad.tensor([1]), clgrad.tensor([5.0])).tolist()
    [0.0, 5.0, 0.0]
    """
    return put_(input.clone(), index, source, accumulate)


def _scatter_view(input, src, make_view):
    out = input.clone()
    view = make_view(out)
    if tuple(view.shape) != tuple(src.shape):
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = "
                           f"{size_repr(src.shape)}, slice size = {size_repr(view.shape)}")
    view.copy_(src)
    return out


def select_scatter(input, src, dim, index):
    """A copy of input with src written into input.select(dim, index).

    >>> import clgrad
    >>> clgrad.zeros(2, 2).select_scatter(clgrad.ones(2), 0, 0).tolist()
    [[1.0, 1.0], [0.0, 0.0]]
    """
    return _scatter_view(input, src, lambda t: t.select(dim, index))


def slice_scatter(input, src, dim=0, start=None, end=None, step=1):
    """A copy of input with src written into the slice start:end:step of dim."""
    def view(t):
        sl = [slice(None)] * t.dim()
        sl[dim] = slice(start, end, step)
        return t[tuple(sl)]
    return _scatter_view(input, src, view)


def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1):
    """A copy of input with src written into input.diagonal(offset, dim1, dim2)."""
    return _scatter_view(input, src, lambda t: t.diagonal(offset, dim1, dim2))


def as_strided_scatter(input, src, size, stride, storage_offset=None):
    """A copy of input with src written into input.as_strided(size, stride, storage_offset).

    >>> import clgrad
    >>> clgrad.zeros(4).as_strided_scatter(clgrad.ones(2), (2,), (2,)).tolist()
    [1.0, 0.0, 1.0, 0.0]
    """
    return _scatter_view(input, src, lambda t: t.as_strided(size, stride, storage_offset))


def fill_diagonal_(input, fill_value, wrap=False):
    """Fill the main diagonal (all dims equal: every i, i, ..., i) in place; `wrap` continues a
    tall matrix's diagonal every N + 1 rows, as numpy.

    >>> import clgrad
    >>> clgrad.zeros(2, 3).fill_diagonal_(5.0).tolist()
    [[5.0, 0.0, 0.0], [0.0, 5.0, 0.0]]
    """
    if input.dim() < 2:
        raise RuntimeError("dimensions must larger than 1")
    if input.dim() > 2 and len(set(input.shape)) != 1:
        raise RuntimeError("all dimensions of input must be of equal length")
    if input.dim() == 2:
        rows, cols = input.shape
        if wrap and rows > cols + 1:
            step = cols + 1
            for start in range(0, rows, step):
                input[start:start + cols].diagonal().fill_(fill_value)
            return input
        input.diagonal().fill_(fill_value)
        return input
    n = input.shape[0]
    flat = input.view(-1)
    step = builtins.sum(input.stride())
    flat[0:n * step:step].fill_(fill_value)
    return input


def is_signed(self):
    """Whether the dtype holds negative numbers."""
    return self.dtype.is_signed


def is_nonzero(self):
    """The truth of a one-element tensor (errors otherwise, as torch)."""
    if self.numel() != 1:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous" if
                           self.numel() == 0 else "Boolean value of Tensor with more than one "
                           "value is ambiguous")
    return bool(self.item())


def get_device(self):
    """torch's device index: -1 on the CPU device, K on "cuda:K", N on "cl:N"."""
    d = self.device
    return -1 if d.type == "cpu" else d.index


def _same(self):
    return self


def _false(self):
    return False


def isposinf(input):
    """Where input is +inf."""
    return (input == float("inf")) if input.is_floating_point() else input.new_zeros(
        input.shape, dtype=dtypes.bool_)


def isneginf(input):
    """Where input is -inf."""
    return (input == float("-inf")) if input.is_floating_point() else input.new_zeros(
        input.shape, dtype=dtypes.bool_)


def isreal(input):
    """Where input is real: everywhere for a real tensor, where the imaginary part is 0 for a
    complex one."""
    if input._dtype.kind == "c":
        return input.imag == 0
    return input.new_ones(input.shape, dtype=dtypes.bool_)


def ldexp(input, other):
    """input * 2**other.

    >>> import clgrad
    >>> clgrad.ldexp(clgrad.tensor([1.0]), clgrad.tensor([3])).item()
    8.0
    """
    x = input if input.is_floating_point() else input.to(dtypes.get_default_dtype())
    return x * (2.0 ** (other.to(x.dtype) if isinstance(other, Tensor) else other))


def narrow_copy(input, dim, start, length):
    """input.narrow(...) as a new tensor."""
    return input.narrow(dim, start, length).clone()


def is_same_size(self, other):
    return tuple(self.shape) == tuple(other.shape)


def adjoint(input):
    """The conjugate transpose of the last two dims (the transpose, for real tensors)."""
    return input.transpose(-2, -1).conj()


def matrix_H(self):
    """Tensor.H: the conjugate transpose of a matrix; a 0-d tensor is returned as it is."""
    if self.ndim not in (0, 2):
        raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors). Got "
                           f"{self.ndim}-D tensor." + (" For batches of matrices, consider "
                                                       "using tensor.mH" if self.ndim > 2 else ""))
    return self.t().conj() if self.ndim == 2 else self


def matrix_mH(self):
    """Tensor.mH: the conjugate transpose of the last two dims."""
    if self.ndim < 2:
        raise RuntimeError(f"tensor.mH is only supported on matrices or batches of matrices. "
                           f"Got {self.ndim}-D tensor.")
    return self.transpose(-2, -1).conj()


FUNCTIONS = {
    "tensor_split": tensor_split, "hsplit": hsplit, "vsplit": vsplit, "dsplit": dsplit,
    "vdot": vdot, "addr": addr, "addbmm": addbmm, "matrix_power": matrix_power, "cov": cov,
    "corrcoef": corrcoef, "renorm": renorm, "put": put, "select_scatter": select_scatter,
    "slice_scatter": slice_scatter, "diagonal_scatter": diagonal_scatter, "isposinf": isposinf,
    "isneginf": isneginf, "isreal": isreal, "ldexp": ldexp, "narrow_copy": narrow_copy,
    "adjoint": adjoint, "positive": _same, "is_neg": _false,
    "is_nonzero": is_nonzero, "is_same_size": is_same_size, "is_signed": is_signed,
    "as_strided_scatter": as_strided_scatter,
}
METHODS = dict(FUNCTIONS)
METHODS.update({
    "put_": put_, "fill_diagonal_": fill_diagonal_, "get_device": get_device,
    "is_distributed": _false,
    "to_dense": lambda self, dtype=None, *, masked_grad=None: self if dtype is None else
    self.to(dtype),
})
METHODS.update({n: _inplace(n, o) for n, o in INPLACE_OF.items()})
METHODS.update({n: _view_inplace(n, v) for n, v in VIEW_INPLACE.items()})
