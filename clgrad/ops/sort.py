"""Sorting and selection: sort, argsort, msort, topk, kthvalue, median, nanmedian, unique,
unique_consecutive, searchsorted, bucketize, multinomial.

One kernel family (clgrad.kernels.sort) finds the order: a stable bitonic network over each
row, comparing (value, position) pairs. Values are then gathered from the input with the
differentiable `gather`, so every op here gets its gradient (the gradient of a gather: a scatter
onto the chosen positions), double backward and forward mode from `gather` with no rule of its
own.
"""
import collections

from .. import dtypes
from ..autograd.grad_mode import no_grad
from ..kernels.sort import order_rows_raw, searchsorted_raw
from ..tensor import Tensor
from ._base import contiguous_raw, same_device

SortReturn = collections.namedtuple("sort", ["values", "indices"])
TopkReturn = collections.namedtuple("topk", ["values", "indices"])
KthvalueReturn = collections.namedtuple("kthvalue", ["values", "indices"])
MedianReturn = collections.namedtuple("median", ["values", "indices"])
ModeReturn = collections.namedtuple("mode", ["values", "indices"])


def _check(op, input):
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")


def sort_indices(input, dim=-1, descending=False):
    """The int64 positions along dim that sort input (stable; NaN above every number)."""
    d = input._wrap_dim(dim)
    with no_grad():
        x = input.detach()
        if x.dim() == 0:
            return x.new_zeros((), dtype=dtypes.int64)
        if x.numel() == 0:
            return x.new_zeros(x.shape, dtype=dtypes.int64)
        moved = contiguous_raw(x.transpose(d, -1))
        n = moved.shape[-1]
        order = order_rows_raw(moved.reshape(-1, n), descending)
        return order.reshape(moved.shape).transpose(d, -1).contiguous()


def sort(input, dim=-1, descending=False, stable=False):
    """(values, indices): input sorted along dim (ascending unless `descending`) and where each
    value came from. The sort is always stable; NaN sorts above every number, as in torch.

    >>> import clgrad
    >>> v, i = clgrad.tensor([3.0, 1.0, 2.0, 1.0]).sort()
    >>> v.tolist(), i.tolist()
    ([1.0, 1.0, 2.0, 3.0], [1, 3, 2, 0])
    """
    _check("sort", input)
    idx = sort_indices(input, dim, descending)
    values = input.gather(input._wrap_dim(dim), idx) if input.dim() else input.clone()
    return SortReturn(values, idx)


def argsort(input, dim=-1, descending=False, stable=False):
    """The positions that sort input along dim.

    >>> import clgrad
    >>> clgrad.tensor([[2, 0, 1]]).argsort(dim=1, descending=True).tolist()
    [[0, 2, 1]]
    """
    _check("argsort", input)
    return sort_indices(input, dim, descending)


def msort(input):
    """input sorted along its first dim (sort(input, 0).values).

    >>> import clgrad
    >>> clgrad.tensor([[2, 1], [0, 3]]).msort().tolist()
    [[0, 1], [2, 3]]
    """
    return sort(input, 0).values


def _positions_along(t, dim, pos):
    """The int64 index tensor picking position `pos` (an int or a tensor broadcast along the
    other dims) along dim of t, with dim kept at size 1."""
    shape = list(t.shape)
    shape[dim] = 1
    if isinstance(pos, Tensor):
        return pos.reshape(shape).to(dtypes.int64)
    return t.new_full(shape, pos, dtype=dtypes.int64)


def topk(input, k, dim=-1, largest=True, sorted=True):
    """(values, indices) of the k largest (or smallest) elements along dim, largest first (or
    smallest first).

    >>> import clgrad
    >>> clgrad.tensor([1.0, 5.0, 3.0, 4.0]).topk(2).values.tolist()
    [5.0, 4.0]
    """
    _check("topk", input)
    d = input._wrap_dim(dim)
    n = input.shape[d] if input.dim() else 1
    if not isinstance(k, int) or isinstance(k, bool):
        raise TypeError(f"topk(): argument 'k' must be int, not {type(k).__name__}")
    if not 0 <= k <= n:
        raise RuntimeError(f"topk(): selected index k out of range: k = {k}, but the size of "
                           f"dimension {dim} is {n}")
    if input.dtype == dtypes.bool_:                 # torch: after the range check, even for 0-d
        raise RuntimeError(f"topk does not support bool dtypes (input of shape "
                           f"{list(input.shape)})")
    if input.dim() == 0:              # torch: a 0-d input is its own top-k, for k = 0 and k = 1
        return TopkReturn(input.clone(), input.new_zeros((), dtype=dtypes.int64))
    idx = sort_indices(input, d, descending=largest).narrow(d, 0, k).contiguous()
    return TopkReturn(input.gather(d, idx), idx)


def kthvalue(input, k, dim=-1, keepdim=False):
    """(values, indices) of the k-th smallest element along dim (k counts from 1).

    >>> import clgrad
    >>> clgrad.tensor([3.0, 1.0, 2.0]).kthvalue(2).values.item()
    2.0
    """
    _check("kthvalue", input)
    d = input._wrap_dim(dim)
    n = input.shape[d] if input.dim() else 1
    if isinstance(k, bool) or not hasattr(k, "__index__"):
        raise TypeError(f"kthvalue(): argument 'k' (position 2) must be int, not "
                        f"{type(k).__name__}")
    k = k.__index__()
    if n == 0:                        # torch checks the empty dim before k
        raise IndexError(f"kthvalue(): Expected reduction dim {d} to have non-zero size "
                         f"(input of shape {list(input.shape)}).")
    if not 1 <= k <= n:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d}: "
                           f"k = {k}, size {n}")
    if input.dim() == 0:              # torch returns a 0-d input as is, bool included
        return KthvalueReturn(input.clone(), input.new_zeros((), dtype=dtypes.int64))
    if input.dtype == dtypes.bool_:
        raise NotImplementedError(f"\"kthvalue\" not implemented for 'Bool' (input of shape "
                                  f"{list(input.shape)})")
    return _pick(input, d, keepdim, k - 1, KthvalueReturn)


def _pick(input, d, keepdim, pos, ret, descending=False):
    order = sort_indices(input, d, descending)
    idx = order.gather(d, _positions_along(input, d, pos))
    values = input.gather(d, idx)
    if not keepdim:
        values, idx = values.squeeze(d), idx.squeeze(d)
    return ret(values, idx)


def _median(op, input, dim, keepdim, ignore_nan):
    _check(op, input)
    if dim is None:
        flat = input.reshape(-1)
        if flat.numel() == 0:         # torch: NaN, cast to the dtype as the CPU casts it
            if input.is_floating_point():
                return input.new_full((), float("nan"))
            if input.dtype == dtypes.bool_:
                return input.new_ones(())
            wide = input.dtype in (dtypes.int32, dtypes.int64)
            return input.new_full((), dtypes.iinfo(input.dtype).min if wide else 0)
        if input.dtype == dtypes.bool_:
            raise NotImplementedError(f"\"{op}\" not implemented for 'Bool' (input of shape "
                                      f"{list(input.shape)})")
        return _median(op, flat, 0, False, ignore_nan).values
    d = input._wrap_dim(dim)
    n = input.shape[d] if input.dim() else 1
    if n == 0:
        raise IndexError(f"{op}(): Expected reduction dim {d} to have non-zero size.")
    if input.dtype == dtypes.bool_:   # torch: after the empty-dim check, even for 0-d
        raise NotImplementedError(f"\"{op}\" not implemented for 'Bool' (input of shape "
                                  f"{list(input.shape)})")
    if input.dim() == 0:
        return MedianReturn(input.clone(), input.new_zeros((), dtype=dtypes.int64))
    if input.is_floating_point():
        nans = input.isnan().sum(d, keepdim=True)             # NaN sorts last
        if ignore_nan:        # the lower median of the numbers; all NaN: the first NaN
            pos = ((n - nans - 1).clamp(min=0) // 2)
        else:                 # any NaN: the median is NaN (the first one)
            pos = (nans > 0).long() * (n - nans) + (nans == 0).long() * ((n - 1) // 2)
    else:
        pos = (n - 1) // 2
    return _pick(input, d, keepdim, pos, MedianReturn)


def median(input, dim=None, keepdim=False):
    """The lower median of all elements (a 0-d tensor), or (values, indices) along dim. NaN
    anywhere in a row makes its median NaN.

    >>> import clgrad
    >>> clgrad.tensor([4.0, 1.0, 3.0, 2.0]).median().item()
    2.0
    """
    return _median("median", input, dim, keepdim, False)


def nanmedian(input, dim=None, keepdim=False):
    """median that ignores NaN (NaN only where a row is all NaN).

    >>> import clgrad
    >>> clgrad.tensor([float("nan"), 1.0, 3.0]).nanmedian().item()
    1.0
    """
    return _median("nanmedian", input, dim, keepdim, True)


def _runs(values):
    """For a 1-d tensor: a bool mask of where a new run of equal values starts."""
    starts = values.new_ones(values.shape, dtype=dtypes.bool_)
    if values.numel() > 1:
        starts[1:] = values[1:] != values[:-1]
    return starts


def _unique_sorted(values, order, return_inverse, return_counts, n):
    starts = _runs(values)
    out = [values[starts]]
    if return_inverse:
        run = starts.long().cumsum(0) - 1                     # run number of each sorted element
        inverse = run.new_empty(run.shape)
        inverse[order] = run
        out.append(inverse)
    if return_counts:
        out.append(_run_counts(starts, n))
    return out[0] if len(out) == 1 else tuple(out)


def _dense_ranks(rows):
    """For a contiguous [r, n] tensor: the int64 [r, n] rank of each element among the distinct
    values of its row (0 for the smallest; equal values share a rank)."""
    order = order_rows_raw(rows, False)
    srt = rows.gather(1, order)
    starts = srt.new_ones(srt.shape, dtype=dtypes.bool_)
    if srt.shape[1] > 1:
        starts[:, 1:] = srt[:, 1:] != srt[:, :-1]
    ranks = starts.long().cumsum(1) - 1
    return ranks.new_empty(ranks.shape).scatter_(1, order, ranks)


def _row_ranks(x2d):
    """For an [n, m] tensor (m > 0): the int64 [n] rank of each row among its distinct rows in
    lexicographic order. Every column is ranked in one batched sort; then neighbouring columns
    are merged pairwise (rank_a * n + rank_b, ranked again) until one column is left, so a
    table of m columns takes about log2(m) sorts, not m."""
    n = x2d.shape[0]
    r = _dense_ranks(contiguous_raw(x2d.t()))
    while r.shape[0] > 1:
        half = r.shape[0] // 2
        keys = r[0::2] * n                     # an odd last column pairs with rank 0
        keys[:half] = keys[:half] + r[1::2]
        r = _dense_ranks(contiguous_raw(keys))
    return r[0]


def _run_counts(starts, n):
    """The lengths of the runs that start where the bool mask `starts` is set, in n elements."""
    first = starts.nonzero().reshape(-1)
    ends = starts.new_full((first.numel(),), n, dtype=dtypes.int64)
    if first.numel() > 1:
        ends[:-1] = first[1:]
    return ends - first


def _unique_dim(op, input, dim, consecutive, return_inverse, return_counts):
    """unique / unique_consecutive of the slices of input along dim, as torch's unique_dim:
    slices sorted lexicographically (always, whatever `sorted` says), inverse of shape
    [input.shape[dim]]."""
    if input.dim() == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    d = input._wrap_dim(dim)
    x = input.detach()
    n = x.shape[d]
    if x.numel() == 0:
        if list(x.shape).count(0) > 1:
            raise RuntimeError(f"{op}: number of zero sized dimensions is more than one, so "
                               f"unique cannot be applied (input of shape {list(x.shape)})")
        if n != 0:
            raise RuntimeError(f"{op}: there are 0 sized dimensions, and they aren't selected, "
                               f"so unique cannot be applied (input of shape {list(x.shape)}, "
                               f"dim={dim})")
        empty = x.new_zeros((0,), dtype=dtypes.int64)
        out = [x.clone()] + [empty] * return_inverse + [empty.clone()] * return_counts
        return out[0] if len(out) == 1 else tuple(out)
    moved = x.movedim(d, 0)
    rows = contiguous_raw(moved).reshape(n, -1)
    if consecutive:
        starts = rows.new_ones((n,), dtype=dtypes.bool_)
        if n > 1:
            starts[1:] = (rows[1:] != rows[:-1]).any(1)
        keep = starts.nonzero().reshape(-1)
        inverse = starts.long().cumsum(0) - 1
    else:
        inverse = _row_ranks(rows)
        order = sort_indices(inverse, 0)       # stable: a run's first row is its first in input
        starts = _runs(inverse[order])
        keep = order[starts]
    out = [moved[keep].movedim(0, d).contiguous()]
    if return_inverse:
        out.append(inverse)
    if return_counts:
        out.append(_run_counts(starts, n))
    return out[0] if len(out) == 1 else tuple(out)


def _inverse_shaped(res, return_inverse, shape):
    """unique's result with the inverse indices given input's shape."""
    if not return_inverse:
        return res
    res = list(res)
    res[1] = res[1].reshape(shape)
    return tuple(res)


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """The distinct elements in ascending order; optionally where each input element went
    (`return_inverse`, shaped as input) and how many times each occurs (`return_counts`).
    With `dim`, the distinct slices along dim, sorted lexicographically; the inverse then says
    which unique slice each slice of input is, and counts how often each occurs.

    >>> import clgrad
    >>> u, c = clgrad.tensor([2, 1, 2, 3, 1]).unique(return_counts=True)
    >>> u.tolist(), c.tolist()
    ([1, 2, 3], [2, 2, 1])
    >>> u, inv = clgrad.tensor([[1, 2], [0, 5], [1, 2]]).unique(dim=0, return_inverse=True)
    >>> u.tolist(), inv.tolist()
    ([[0, 5], [1, 2]], [1, 0, 1])
    """
    _check("unique", input)
    if dim is not None:
        with no_grad():
            return _unique_dim("unique", input, dim, False, return_inverse, return_counts)
    with no_grad():
        flat = input.detach().reshape(-1)
        order = sort_indices(flat, 0)
        values = flat[order]
        res = _unique_sorted(values, order, return_inverse, return_counts, flat.numel())
    return _inverse_shaped(res, return_inverse, input.shape)


def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    """Collapse each run of equal neighbours into one element (no sorting).

    >>> import clgrad
    >>> clgrad.tensor([1, 1, 2, 2, 1]).unique_consecutive().tolist()
    [1, 2, 1]
    >>> clgrad.tensor([[1, 2], [1, 2], [0, 1]]).unique_consecutive(dim=0).tolist()
    [[1, 2], [0, 1]]
    """
    _check("unique_consecutive", input)
    if dim is not None:
        with no_grad():
            return _unique_dim("unique_consecutive", input, dim, True, return_inverse,
                               return_counts)
    with no_grad():
        flat = input.detach().reshape(-1)
        order = flat.new_tensor(list(range(flat.numel())), dtype=dtypes.int64) \
            if flat.numel() else flat.new_zeros((0,), dtype=dtypes.int64)
        res = _unique_sorted(flat, order, return_inverse, return_counts, flat.numel())
    return _inverse_shaped(res, return_inverse, input.shape)


def mode(input, dim=-1, keepdim=False):
    """(values, indices): the most frequent value along dim (the smallest on ties) and a position
    where it occurs.

    >>> import clgrad
    >>> clgrad.tensor([3, 1, 3, 1, 2]).mode().values.item()
    1
    """
    _check("mode", input)
    d = input._wrap_dim(dim) if input.dim() else 0
    if input.dim() == 0:
        return ModeReturn(input.clone(), input.new_zeros((), dtype=dtypes.int64))
    with no_grad():
        x = input.detach().transpose(d, -1)
        shape = x.shape
        rows = x.reshape(-1, shape[-1]) if shape[-1] else None
        if rows is None:
            raise IndexError(f"mode(): Expected reduction dim {d} to have non-zero size.")
        order = sort_indices(rows, 1)
        vals = rows.gather(1, order)
        n = shape[-1]
        starts = vals.new_ones(vals.shape, dtype=dtypes.bool_)
        if n > 1:
            starts[:, 1:] = vals[:, 1:] != vals[:, :-1]
        # run length at each position: position - start of its run + 1, via a running max
        pos = vals.new_tensor(list(range(n)), dtype=dtypes.int64).expand(vals.shape)
        run_start = (pos * starts.long()).cummax(1).values
        length = pos - run_start + 1
        best = length.argmax(1, keepdim=True)                 # first maximum: smallest value
        pick = order.gather(1, best)
    idx = pick.reshape(shape[:-1] + (1,)).transpose(d, -1)
    values = input.gather(d, idx.contiguous())
    idx = idx.contiguous()
    if not keepdim:
        values, idx = values.squeeze(d), idx.squeeze(d)
    return ModeReturn(values, idx)


def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None,
                 sorter=None):
    """Where each value of `input` would be inserted into the last dim of `sorted_sequence` to
    keep it sorted: the first position with an element >= the value (`right=True` or
    `side="right"`: > the value).

    >>> import clgrad
    >>> clgrad.searchsorted(clgrad.tensor([1, 3, 5, 7]), clgrad.tensor([3, 6])).tolist()
    [1, 3]
    """
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but "
                               f"got {side}")
        if right and side == "left":
            raise RuntimeError("torch.searchsorted(): side and right can't be set to opposites, "
                               "got side of left while right was True")
        right = side == "right"
    scalar = not isinstance(input, Tensor)
    if scalar:
        input = sorted_sequence.new_tensor(input)
    same_device("searchsorted", [sorted_sequence, input])
    if sorter is not None:
        sorted_sequence = sorted_sequence.gather(-1, sorter)
    seq_shape, val_shape = tuple(sorted_sequence.shape), tuple(input.shape)
    shared = sorted_sequence.dim() == 1
    if not shared and (input.dim() == 0 or seq_shape[:-1] != val_shape[:-1]):
        raise RuntimeError(f"torch.searchsorted(): boundaries tensor should be 1 dimension or "
                           f"the first N-1 dimensions of boundaries tensor and input value "
                           f"tensor must match, but we got boundaries tensor {list(seq_shape)} "
                           f"and input value tensor {list(val_shape)}")
    dt = dtypes.promote_types(sorted_sequence.dtype, input.dtype)
    with no_grad():
        seq = contiguous_raw(sorted_sequence.detach().to(dt))
        val = contiguous_raw(input.detach().to(dt))
        res = searchsorted_raw(seq, val, shared, right)
    if out_int32:
        res = res.int()
    return res


def bucketize(input, boundaries, *, out_int32=False, right=False):
    """The bucket of each value of input among the 1-d sorted `boundaries` (searchsorted with the
    arguments swapped; `right` as torch's bucketize).

    >>> import clgrad
    >>> clgrad.bucketize(clgrad.tensor([0.5, 2.0, 9.0]), clgrad.tensor([1.0, 2.0, 3.0])).tolist()
    [0, 1, 3]
    """
    if not isinstance(boundaries, Tensor) or boundaries.dim() != 1:
        raise RuntimeError(f"bucketize(): boundaries tensor must be 1 dimension, but got dim("
                           f"{boundaries.dim() if isinstance(boundaries, Tensor) else '?'})")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


def multinomial(input, num_samples, replacement=False, *, generator=None):
    """Draw num_samples category indices from each row of non-negative weights (1-d or 2-d
    input). Without replacement each category is drawn at most once (the exponential race of
    torch: keys u^(1/p), largest first), with replacement by inverting the cumulative sum.

    >>> import clgrad
    >>> _ = clgrad.manual_seed(0)
    >>> clgrad.multinomial(clgrad.tensor([0.0, 1.0, 0.0]), 2, replacement=True).tolist()
    [1, 1]
    """
    _check("multinomial", input)
    if input.dim() not in (1, 2):
        raise RuntimeError(f"prob_dist must be 1 or 2 dim, got {input.dim()}")
    if not input.is_floating_point():
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: "
                           f"{str(input.dtype).replace('clgrad.', '').capitalize()}")
    if not isinstance(num_samples, int) or num_samples <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    n = input.shape[-1]
    if not replacement and num_samples > n:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without "
                           "replacement")
    with no_grad():
        p = input.detach().reshape(-1, n).to(dtypes.float64 if input.dtype is dtypes.float64
                                            else dtypes.float32)
        if bool((~p.isfinite()).any()) or bool((p < 0).any()):
            raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
        total = p.sum(1, keepdim=True)
        if bool((total <= 0).any()):
            raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
        rows = p.shape[0]
        if replacement:
            cdf = (p / total).cumsum(1)
            u = cdf.new_empty((rows, num_samples)).uniform_(generator=generator)
            res = searchsorted(cdf, u, right=True).clamp(max=n - 1)
            # a zero-weight category can only be hit through rounding at the end of the row
        else:
            if bool(((p > 0).sum(1) < num_samples).any()):
                raise RuntimeError("invalid multinomial distribution (with replacement=False, "
                                   "not enough non-negative category to sample)")
            u = p.new_empty(p.shape).uniform_(generator=generator)
            keys = u.clamp(min=1e-30).log() / p                # -inf for zero weight
            res = sort_indices(keys, 1, descending=True)[:, :num_samples].contiguous()
    return res.reshape(num_samples) if input.dim() == 1 else res


FUNCTIONS = {
    "sort": sort, "argsort": argsort, "msort": msort, "topk": topk, "kthvalue": kthvalue,
    "median": median, "nanmedian": nanmedian, "mode": mode, "unique": unique,
    "unique_consecutive": unique_consecutive, "searchsorted": searchsorted,
    "bucketize": bucketize, "multinomial": multinomial,
}
METHODS = {
    "sort": sort, "argsort": argsort, "msort": msort, "topk": topk, "kthvalue": kthvalue,
    "median": median, "nanmedian": nanmedian, "mode": mode, "unique": unique,
    "unique_consecutive": unique_consecutive, "multinomial": multinomial,
}
