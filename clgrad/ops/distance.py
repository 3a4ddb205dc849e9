"""torch.nn.functional's distance functions: cosine_similarity, pairwise_distance and pdist,
composed of clgrad ops (so they differentiate to any order)."""
import math

from .arrange import triu_indices
from .pointwise import where
from ..tensor import Tensor
from .reduce import norm

__all__ = ["cosine_similarity", "pairwise_distance", "pdist"]


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """x1 . x2 / max(|x1| |x2|, eps) along dim, broadcasting.

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.cosine_similarity(clgrad.tensor([[1.0, 0.0]]), clgrad.tensor([[1.0, 1.0]])).tolist()
    [0.7071067690849304]
    """
    w12 = (x1 * x2).sum(dim)
    n12 = ((x1 * x1).sum(dim) * (x2 * x2).sum(dim)).clamp_min(eps * eps).sqrt()
    return w12 / n12


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """The p-norm of x1 - x2 + eps over the last dimension.

    >>> import clgrad, clgrad.nn.functional as F
    >>> round(F.pairwise_distance(clgrad.tensor([[3.0, 0.0]]), clgrad.tensor([[0.0, 4.0]])).item(), 4)
    5.0
    """
    return norm(x1 - x2 + eps, p, -1, keepdim)


def pdist(input, p=2):
    """The p-norm distances between the rows of an (N, M) input, for every pair i < j in
    row-major order (N * (N - 1) / 2 values). The gradient at a zero distance is zero, as
    torch's.

    >>> import clgrad, clgrad.nn.functional as F
    >>> F.pdist(clgrad.tensor([[0.0, 0.0], [3.0, 4.0], [0.0, 1.0]])).tolist()
    [5.0, 1.0, 4.242640495300293]
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"pdist(): argument 'input' must be Tensor, not {type(input).__name__}")
    if input.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.ndim}D")
    if not input.dtype.is_floating_point:
        raise RuntimeError("pdist only supports floating-point dtypes")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    N = input.shape[0]
    ij = triu_indices(N, N, 1, device=input.device)
    d = (input[ij[0]] - input[ij[1]]).abs()                    # [pairs, M]
    if p == 0:
        return (d != 0).to(input.dtype).sum(-1)
    if math.isinf(p):
        return d.amax(-1) if d.shape[-1] else d.sum(-1)
    s = (d * d).sum(-1) if p == 2 else (d ** p).sum(-1)
    # a zero sum gets a zero gradient: the root only sees positive sums
    pos = s > 0
    safe = where(pos, s, 1.0)
    root = safe.sqrt() if p == 2 else safe ** (1.0 / p)
    return where(pos, root, 0.0)
