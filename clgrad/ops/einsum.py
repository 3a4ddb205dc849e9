"""einsum and the products and matrix helpers built from it or beside it: tensordot, kron, inner,
cross, trace, diag, diag_embed, diagflat, block_diag, cdist, dist, chain_matmul.

Everything here is written in other clgrad ops (views, sums, batched matmul), so gradients,
double backward and forward mode come from those ops.

einsum contracts its operands two at a time, left to right. Each contraction becomes one batched
GEMM: the labels both operands carry and the result keeps are the batch, the labels only one of
them carries are its rows or columns, and the labels both carry but nothing later needs are the
inner dimension. A label that only one operand carries and nothing later needs is summed out
before the GEMM, and a label repeated within one operand takes the diagonal.
"""
import builtins
import string

from .. import dtypes
from ..tensor import Tensor
from ._base import size_repr, broadcast_shapes
from .join import stack, cat
from .creation import eye, empty

_LETTERS = string.ascii_letters


def _parse(equation, operands):
    """(list of label lists per operand, output label list); labels are ints, ellipsis dims are
    negative ints (-1 is the last ellipsis dim)."""
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(operands):
        raise ValueError("einsum(): more operands were provided than specified in the equation"
                         if len(operands) > len(terms) else
                         "einsum(): fewer operands were provided than specified in the equation")
    ell_dims = 0
    parsed = []
    for term, op in zip(terms, operands):
        if term.count("...") > 1 or term.replace("...", "").count(".") > 0:
            raise ValueError(f"einsum(): found '.' for operand {len(parsed)} that is not part "
                             f"of any ellipsis")
        explicit = [c for c in term.replace("...", "")]
        for c in explicit:
            if c not in _LETTERS:
                raise ValueError(f"einsum(): invalid subscript given at index "
                                 f"{eq.index(c)} in the equation string, subscripts must be "
                                 f"in [a-zA-Z]")
        nd = op.dim()
        if "..." in term:
            n_ell = nd - len(explicit)
            if n_ell < 0:
                raise RuntimeError(f"einsum(): the number of subscripts in the equation "
                                   f"({len(explicit)}) is more than the number of dimensions "
                                   f"({nd}) for operand {len(parsed)}")
            head, tail = term.split("...")
            labels = [_LETTERS.index(c) for c in head] + list(range(-n_ell, 0)) + \
                [_LETTERS.index(c) for c in tail]
            ell_dims = builtins.max(ell_dims, n_ell)
        else:
            if len(explicit) != nd:
                raise RuntimeError(f"einsum(): the number of subscripts in the equation "
                                   f"({len(explicit)}) does not match the number of dimensions "
                                   f"({nd}) for operand {len(parsed)} and no ellipsis was "
                                   f"given")
            labels = [_LETTERS.index(c) for c in explicit]
        parsed.append(labels)
    if arrow:
        if rhs.count("...") > 1:
            raise ValueError("einsum(): found more than one '...' in the output")
        head, _, tail = rhs.partition("...")
        for c in head + tail:
            if c not in _LETTERS:
                raise ValueError(f"einsum(): invalid subscript {c!r} in the output")
        if len(set(head + tail)) != len(head + tail):
            raise ValueError("einsum(): output subscript appears more than once in the output")
        seen = {label for labels in parsed for label in labels}
        for c in head + tail:
            if _LETTERS.index(c) not in seen:
                raise ValueError(f"einsum(): output subscript {c} does not appear in the "
                                 f"equation for any input operand")
        # ellipsis dims the output does not name are summed, as in torch
        out = [_LETTERS.index(c) for c in head] + \
            (list(range(-ell_dims, 0)) if "..." in rhs else []) + \
            [_LETTERS.index(c) for c in tail]
    else:
        counts = {}
        for labels in parsed:
            for l in labels:
                if l >= 0:
                    counts[l] = counts.get(l, 0) + 1
        out = list(range(-ell_dims, 0)) + sorted(l for l, c in counts.items() if c == 1)
    return parsed, out


def _diagonals(t, labels):
    """Take the diagonal for each label repeated within one operand."""
    labels = list(labels)
    while True:
        dup = next((l for i, l in enumerate(labels) if l in labels[:i]), None)
        if dup is None:
            return t, labels
        i = labels.index(dup)
        j = labels.index(dup, i + 1)
        if t.shape[i] != t.shape[j]:
            raise RuntimeError(f"einsum(): subscript {_LETTERS[dup]} is repeated for operand "
                               f"but the sizes don't match, {t.shape[i]} != {t.shape[j]}")
        t = t.diagonal(0, i, j)                   # the diagonal goes last
        labels = [l for k, l in enumerate(labels) if k not in (i, j)] + [dup]


def _sum_labels(t, labels, drop):
    dims = [i for i, l in enumerate(labels) if l in drop]
    if not dims:
        return t, labels
    return t.sum(dims), [l for l in labels if l not in drop]


def _contract(a, la, b, lb, keep):
    """Contract a (labels la) with b (labels lb), keeping the labels in `keep`."""
    sizes = {}
    for t, labels in ((a, la), (b, lb)):
        for i, l in enumerate(labels):
            n = t.shape[i]
            if sizes.get(l, 1) == 1:
                sizes[l] = n
            elif n not in (1, sizes[l]):
                raise RuntimeError(f"einsum(): operands do not broadcast with remapped shapes "
                                   f"(original->remapped): {size_repr(a.shape)} and "
                                   f"{size_repr(b.shape)}")
    batch = [l for l in la if l in lb and l in keep]
    inner = [l for l in la if l in lb and l not in keep]
    a_only = [l for l in la if l not in lb]
    b_only = [l for l in lb if l not in la]
    a = a.permute(*[la.index(l) for l in batch + a_only + inner])
    b = b.permute(*[lb.index(l) for l in batch + inner + b_only])
    a = a.expand(*[sizes[l] for l in batch + a_only + inner])
    b = b.expand(*[sizes[l] for l in batch + inner + b_only])

    def prod(ls):
        p = 1
        for l in ls:
            p *= sizes[l]
        return p
    B, M, K, N = prod(batch), prod(a_only), prod(inner), prod(b_only)
    out = a.reshape(B, M, K).matmul(b.reshape(B, K, N))
    return out.reshape(*[sizes[l] for l in batch + a_only + b_only]), batch + a_only + b_only


def einsum(equation, *operands):
    """Sum of products over the labels of `equation`, torch's grammar: "ij,jk->ik", implicit
    output ("ij,jk" keeps the labels that occur once, in alphabetical order), "..." for
    broadcast dims, repeated labels for diagonals ("ii->i"), also the sublist form
    einsum(a, [0, 1], b, [1, 2], [0, 2]).

    >>> import clgrad
    >>> a = clgrad.arange(6.0).reshape(2, 3)
    >>> clgrad.einsum("ij,kj->ik", a, a).tolist()
    [[5.0, 14.0], [14.0, 50.0]]
    >>> clgrad.einsum("ii", clgrad.eye(3)).item()
    3.0
    """
    if not isinstance(equation, str):               # the sublist form
        args = (equation,) + operands
        ops, subs = list(args[0::2]), list(args[1::2])
        out_sub = subs.pop() if len(subs) == len(ops) else None
        if len(subs) != len(ops):
            out_sub = None
        ops = ops[:len(subs)]

        def letters(sub):
            return "".join("..." if s is Ellipsis else _LETTERS[s] for s in sub)
        equation = ",".join(letters(s) for s in subs) + \
            ("" if out_sub is None else "->" + letters(out_sub))
        operands = tuple(ops)
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not operands:
        raise RuntimeError("einsum(): must provide at least one operand")
    for t in operands:
        if not isinstance(t, Tensor):
            raise TypeError(f"einsum(): argument 'operands' must be a tuple of Tensors, not "
                            f"{type(t).__name__}")
    parsed, out = _parse(equation, operands)
    terms = []
    for t, labels in zip(operands, parsed):
        terms.append(_diagonals(t, labels))
    if len(terms) == 1:
        t, labels = terms[0]
        t, labels = _sum_labels(t, labels, set(labels) - set(out))
        return t.permute(*[labels.index(l) for l in out]) if out else t
    # sum out what only one operand has and nothing else needs
    for k, (t, labels) in enumerate(terms):
        others = {l for j, (_, ls) in enumerate(terms) if j != k for l in ls} | set(out)
        terms[k] = _sum_labels(t, labels, set(labels) - others)
    t, labels = terms[0]
    for k in range(1, len(terms)):
        b, lb = terms[k]
        later = {l for _, ls in terms[k + 1:] for l in ls} | set(out)
        t, labels = _contract(t, labels, b, lb, later)
    return t.permute(*[labels.index(l) for l in out]) if out else t


def tensordot(a, b, dims=2, out=None):
    """Contract the last `dims` dims of a with the first `dims` of b, or the dims named by a pair
    of lists.

    >>> import clgrad
    >>> clgrad.tensordot(clgrad.ones(2, 3, 4), clgrad.ones(3, 4, 5)).shape
    clgrad.Size([2, 5])
    """
    if isinstance(dims, Tensor):
        dims = dims.tolist()
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        da, db = list(range(a.dim() - dims, a.dim())), list(range(dims))
    else:
        da, db = dims
        da = [da] if isinstance(da, int) else list(da)
        db = [db] if isinstance(db, int) else list(db)
    if len(da) != len(db):
        raise RuntimeError("both dimension lists should have same length")
    if a.dtype is not b.dtype:
        raise RuntimeError("both inputs should have same dtype")
    da = [a._wrap_dim(d) for d in da]
    db = [b._wrap_dim(d) for d in db]
    for x, y in zip(da, db):
        if a.shape[x] != b.shape[y]:
            raise RuntimeError(f"contracted dimensions need to match, but first has size "
                               f"{a.shape[x]} in dim {x} and second has size {b.shape[y]} in "
                               f"dim {y}")
    la = list(range(a.dim()))
    lb = list(range(a.dim(), a.dim() + b.dim()))
    for x, y in zip(da, db):
        lb[y] = la[x]
    out_labels = [l for i, l in enumerate(la) if i not in da] + \
        [l for i, l in enumerate(lb) if i not in db]
    t, labels = _contract(a, la, b, lb, set(out_labels))
    return t.permute(*[labels.index(l) for l in out_labels]) if out_labels else t


def inner(input, other):
    """Sum of products over the last dims (a scalar operand multiplies).

    >>> import clgrad
    >>> clgrad.inner(clgrad.tensor([1.0, 2.0]), clgrad.tensor([3.0, 4.0])).item()
    11.0
    """
    if input.dim() == 0 or other.dim() == 0:
        return input * other
    if input.shape[-1] != other.shape[-1]:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but "
                           f"got shapes {size_repr(input.shape)} and {size_repr(other.shape)}")
    return tensordot(input, other, ([-1], [-1]))


def kron(input, other):
    """The Kronecker product.

    >>> import clgrad
    >>> clgrad.kron(clgrad.eye(2), clgrad.ones(2, 2)).tolist()[1]
    [1.0, 1.0, 0.0, 0.0]
    """
    nd = builtins.max(input.dim(), other.dim())
    a = input.reshape((1,) * (nd - input.dim()) + tuple(input.shape))
    b = other.reshape((1,) * (nd - other.dim()) + tuple(other.shape))
    # a[..., i, 1, j, 1] * b[..., 1, k, 1, l] -> interleave the dims
    sa, sb = [], []
    for n in a.shape:
        sa += [n, 1]
    for n in b.shape:
        sb += [1, n]
    prod = a.reshape(sa) * b.reshape(sb)
    return prod.reshape([x * y for x, y in zip(a.shape, b.shape)])


def cross(input, other, dim=None):
    """The cross product of 3-vectors along dim (the first dim of size 3 when dim is None, as
    torch.cross; torch.linalg.cross defaults to -1).

    >>> import clgrad
    >>> clgrad.cross(clgrad.tensor([1.0, 0, 0]), clgrad.tensor([0.0, 1, 0])).tolist()
    [0.0, 0.0, 1.0]
    """
    shape = broadcast_shapes(tuple(input.shape), tuple(other.shape))
    a, b = input.expand(shape), other.expand(shape)
    if dim is None:
        dim = next((i for i, n in enumerate(shape) if n == 3), None)
        if dim is None:
            raise RuntimeError(f"no dimension of size 3 in input: {size_repr(shape)}")
    d = a._wrap_dim(dim)
    if shape[d] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got "
                           f"{input.shape[d] if input.dim() > d else '?'} and "
                           f"{other.shape[d] if other.dim() > d else '?'}")
    a0, a1, a2 = a.unbind(d)
    b0, b1, b2 = b.unbind(d)
    return stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], d)


def trace(input):
    """Sum of the main diagonal of a matrix.

    >>> import clgrad
    >>> clgrad.arange(9.0).reshape(3, 3).trace().item()
    12.0
    """
    if input.dim() != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input.dim()}")
    d = input.diagonal()
    return d.sum() if input.dtype.kind == "f" else d.sum(dtype=dtypes.int64) \
        if input.dtype is not dtypes.int64 else d.sum()


def diag_embed(input, offset=0, dim1=-2, dim2=-1):
    """Matrices whose `offset`-th diagonal along dims dim1, dim2 of the result is the last dim of
    input; zeros elsewhere.

    >>> import clgrad
    >>> clgrad.diag_embed(clgrad.tensor([1.0, 2.0])).tolist()
    [[1.0, 0.0], [0.0, 2.0]]
    """
    if input.dim() == 0:
        raise RuntimeError("diag_embed(): input must be at least 1-dimensional")
    nd = input.dim() + 1
    d1 = dim1 + nd if dim1 < 0 else dim1
    d2 = dim2 + nd if dim2 < 0 else dim2
    for d, given in ((d1, dim1), (d2, dim2)):
        if not 0 <= d < nd:
            raise IndexError(f"Dimension out of range (expected to be in range of [{-nd}, "
                             f"{nd - 1}], but got {given})")
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    n = input.shape[-1] + builtins.abs(offset)
    # row i of an n x n block holds r[i] at column i + offset
    r = _pad_last(input, builtins.max(0, -offset), builtins.max(0, offset))
    block = r.unsqueeze(-1) * _eye_like(input, n, offset)      # [..., n, n]
    batch = [d for d in range(nd) if d not in (d1, d2)]
    src = {d1: nd - 2, d2: nd - 1}
    for k, d in enumerate(batch):
        src[d] = k
    return block.permute(*[src[d] for d in range(nd)])


def _pad_last(t, before, after):
    parts = []
    if before:
        parts.append(t.new_zeros(tuple(t.shape[:-1]) + (before,)))
    parts.append(t)
    if after:
        parts.append(t.new_zeros(tuple(t.shape[:-1]) + (after,)))
    return cat(parts, -1) if len(parts) > 1 else t


def _eye_like(t, n, offset):
    """An n x n 0/1 matrix in t's dtype with ones at (i, i + offset)."""
    e = eye(n, dtype=t.dtype if t.dtype.kind == "f" else dtypes.float32, device=t.device)
    if offset > 0:
        e = _pad_last(e[:, :n - offset], offset, 0)
    elif offset < 0:
        e = _pad_last(e[:, -offset:], 0, -offset)
    return e.to(t.dtype)


def diag(input, diagonal=0):
    """A 1-d input becomes a square matrix with it on the `diagonal`-th diagonal; a matrix gives
    its `diagonal`-th diagonal.

    >>> import clgrad
    >>> clgrad.diag(clgrad.tensor([1, 2])).tolist(), clgrad.eye(2).diag().tolist()
    ([[1, 0], [0, 2]], [1.0, 1.0])
    """
    if input.dim() == 1:
        return diag_embed(input, diagonal)
    if input.dim() == 2:
        return input.diagonal(diagonal).contiguous()
    raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {input.dim()}D")


def diagflat(input, offset=0):
    """input flattened onto the `offset`-th diagonal of a square matrix.

    >>> import clgrad
    >>> clgrad.diagflat(clgrad.tensor([[1, 2]])).tolist()
    [[1, 0], [0, 2]]
    """
    return diag_embed(input.reshape(-1), offset)


def block_diag(*tensors):
    """The matrices (0-d, 1-d or 2-d) placed along the diagonal of one matrix.

    >>> import clgrad
    >>> clgrad.block_diag(clgrad.ones(1, 1), clgrad.ones(2)).tolist()
    [[1.0, 0.0, 0.0], [0.0, 1.0, 1.0]]
    """
    mats = []
    for t in tensors:
        if t.dim() > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer "
                               f"dimensions. Input has {t.dim()} dimensions")
        mats.append(t.reshape(1, 1) if t.dim() == 0 else t.reshape(1, -1) if t.dim() == 1
                    else t)
    if not mats:
        return empty(1, 0)
    dt = mats[0].dtype
    for m in mats[1:]:
        dt = dtypes.promote_types(dt, m.dtype)
    cols = builtins.sum(m.shape[1] for m in mats)
    rows, left = [], 0
    for m in mats:
        right = cols - left - m.shape[1]
        row = _pad_last(m.to(dt), left, right)
        rows.append(row)
        left += m.shape[1]
    return cat(rows, 0)


def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """The p-norm distance between each row of x1 and each row of x2 (batched).

    >>> import clgrad
    >>> clgrad.cdist(clgrad.tensor([[0.0, 0.0]]), clgrad.tensor([[3.0, 4.0]])).item()
    5.0
    """
    if x1.dim() < 2 or x2.dim() < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X1 got: {x1.dim()}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: "
                           f"{x1.shape[-1]} X2: {x2.shape[-1]}")
    if p < 0:
        raise RuntimeError(f"cdist only supports non-negative p values, got {p}")
    diff = x1.unsqueeze(-2) - x2.unsqueeze(-3)                 # [..., P, R, M]
    return _pnorm(diff, p, -1)


def _pnorm(diff, p, dim):
    a = diff.abs()
    if p == 0:
        return (a != 0).to(diff.dtype).sum(dim)
    if p == float("inf"):
        return a.amax(dim)
    if p == 1:
        return a.sum(dim)
    if p == 2:
        # the gradient of sqrt at 0 is infinite: torch's cdist gives 0 there
        sq = (diff * diff).sum(dim)
        safe = sq.clamp(min=1e-300 if diff.dtype is dtypes.float64 else 1e-30)
        return (sq > 0).to(diff.dtype) * safe.sqrt()
    return a.pow(p).sum(dim).pow(1.0 / p)


def dist(input, other, p=2):
    """The p-norm of input - other.

    >>> import clgrad
    >>> clgrad.dist(clgrad.tensor([0.0, 0.0]), clgrad.tensor([3.0, 4.0])).item()
    5.0
    """
    return _pnorm((input - other).reshape(-1), p, 0)


def chain_matmul(*matrices):
    """The product of the matrices, left to right.

    >>> import clgrad
    >>> clgrad.chain_matmul(clgrad.eye(2), clgrad.ones(2, 3)).shape
    clgrad.Size([2, 3])
    """
    if len(matrices) == 1 and isinstance(matrices[0], (list, tuple)):
        matrices = matrices[0]
    out = matrices[0]
    for m in matrices[1:]:
        out = out.matmul(m)
    return out


FUNCTIONS = {"einsum": einsum, "tensordot": tensordot, "inner": inner, "kron": kron,
             "cross": cross, "trace": trace, "diag": diag, "diag_embed": diag_embed,
             "diagflat": diagflat, "block_diag": block_diag, "cdist": cdist, "dist": dist,
             "chain_matmul": chain_matmul}
METHODS = {"inner": inner, "kron": kron, "cross": cross, "trace": trace, "diag": diag,
           "diag_embed": diag_embed, "diagflat": diagflat, "dist": dist}
