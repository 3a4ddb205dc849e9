"""torch.nn.functional's embedding (rows of a weight picked by indices; padding_idx, max_norm
and scale_grad_by_freq as torch's) and one_hot. embedding_bag, a pooling of embeddings, is in
clgrad/ops/pool.py."""
from .. import dtypes
from ..autograd.function import Function
from ..autograd.grad_mode import is_grad_enabled, no_grad
from .creation import arange, zeros
from .pointwise import where
from ..tensor import Tensor

__all__ = ["embedding", "one_hot"]


class _ScaleGrad(Function):
    """Identity whose backward multiplies the gradient by `scale` (scale_grad_by_freq)."""

    @staticmethod
    def forward(ctx, x, scale):
        ctx.scale = scale
        return x.clone()

    @staticmethod
    def backward(ctx, g):
        return g * ctx.scale, None


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False):
    """Rows of weight picked by the integer indices in input (shape input.shape + (dim,)). The
    row padding_idx gets no gradient; max_norm renormalises the rows used, in place.

    >>> import clgrad, clgrad.nn.functional as F
    >>> w = clgrad.tensor([[0.0, 0.0], [1.0, 2.0], [3.0, 4.0]])
    >>> F.embedding(clgrad.tensor([[2, 1]]), w).tolist()
    [[[3.0, 4.0], [1.0, 2.0]]]
    """
    if not isinstance(input, Tensor) or input.dtype not in (dtypes.int64, dtypes.int32):
        got = f"clgrad.{input.dtype.name.capitalize()}Tensor" if isinstance(input, Tensor) \
            else type(input).__name__
        raise RuntimeError(f"Expected tensor for argument #1 'indices' to have one of the "
                           f"following scalar types: Long, Int; but got {got} instead (while "
                           f"checking arguments for embedding)")
    if sparse:
        raise NotImplementedError("clgrad has no sparse gradients: use sparse=False")
    n = weight.shape[0]
    if padding_idx is not None:
        if not -n <= padding_idx < n:
            raise AssertionError("Padding_idx must be within num_embeddings")
        padding_idx %= n
    flat = input.reshape(-1)
    if max_norm is not None:
        _renorm_rows_(weight, flat, max_norm, norm_type)
    out = weight.index_select(0, flat)
    if scale_grad_by_freq and weight.requires_grad and is_grad_enabled():
        # each row's gradient is divided by how often its index occurs in the batch
        idx = flat.to(dtypes.int64)
        counts = zeros(n, dtype=weight.dtype, device=weight.device)
        counts = counts.index_add(0, idx, counts.new_ones(idx.shape))
        out = _ScaleGrad.apply(out, counts.index_select(0, idx).reciprocal().unsqueeze(1))
    out = out.reshape(tuple(input.shape) + (weight.shape[1],))
    if padding_idx is not None and weight.requires_grad and is_grad_enabled():
        # same values, but the gradient of the padding positions is cut off
        pad_mask = (input == padding_idx).unsqueeze(-1)
        out = where(pad_mask, out.detach(), out)
    return out


def _renorm_rows_(weight, idx, max_norm, norm_type):
    """Scale the rows of weight that idx uses so that their norm is at most max_norm."""
    with no_grad():
        used = zeros(weight.shape[0], device=weight.device).index_fill(
            0, idx.to(dtypes.int64), 1.0) > 0
        norms = weight.norm(norm_type, 1)
        scale = where(used & (norms > max_norm), max_norm / (norms + 1e-7), 1.0)
        weight.mul_(scale.to(weight.dtype).unsqueeze(1))


def one_hot(tensor, num_classes=-1):
    """int64 one-hot encoding along a new last dim (num_classes=-1: max + 1).

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.one_hot(clgrad.tensor([0, 2]), 3).tolist()
    [[1, 0, 0], [0, 0, 1]]
    """
    if tensor.dtype is not dtypes.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if num_classes == -1:
        if tensor.numel() == 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        num_classes = int(tensor.max().item()) + 1
    if tensor.numel():
        # one host read; without it a bad class would give an all-zero row silently
        if bool((tensor < 0).any().item()):
            raise RuntimeError("Class values must be non-negative.")
        if bool((tensor >= num_classes).any().item()):
            raise RuntimeError("Class values must be smaller than num_classes.")
    classes = arange(num_classes, device=tensor.device)
    return (tensor.unsqueeze(-1) == classes).to(dtypes.int64)
