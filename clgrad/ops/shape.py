"""Shape ops that copy: flip, roll, repeat, tile, repeat_interleave, tril/triu and constant
padding.

Most are one or two strided copies over views the host describes, run by the gather/scatter
kernels of cl_kernels/index.mako with no index: flip reads a view with negative strides, roll
copies two slices per rolled dim, repeat reads x with stride 0 along the repeated blocks, padding
fills and copies the kept region. tril/triu have their own small kernel there. Every backward is
written in clgrad ops, so higher derivatives work.
"""
import numbers

import numpy as np

from .. import dtypes
from ..autograd.op import Op
from ..kernels.index import copy_raw, gather_raw, tri_raw
from ..tensor import Tensor, contiguous_strides, empty_tensor, numel_of, upload
from . import views
from ._base import MAX_DIMS, collapse, contiguous_raw, full_raw, size_repr, view_raw
from .index import linear_jvp
from .scatter_gather import index_select
from .inplace import apply_inplace


def _ints(args, what):
    """Varargs or one sequence of ints, as a tuple."""
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        args = tuple(args[0])
    out = []
    for a in args:
        if isinstance(a, Tensor):
            a = int(a.item())
        if not isinstance(a, numbers.Integral) or isinstance(a, bool):
            raise TypeError(f"{what} must be a tuple of ints, but got {type(a).__name__}")
        out.append(int(a))
    return tuple(out)


def _dims(op, x, dims):
    nd = len(x._shape)
    out = tuple(views._wrap(d, nd) for d in dims)
    if not nd:
        return ()                       # the one "dim" of a 0-d tensor: nothing to do
    for d in out:
        if out.count(d) > 1:
            raise RuntimeError(f"{op}(): dim {d} appears multiple times in the list of dims")
    return out


# ---- flip ----------------------------------------------------------------------------------------
def _flip_raw(x, dims):
    """A contiguous copy of x reversed along dims: the copy of a view with negated strides."""
    shape, strides, off = x._shape, list(x._strides), x._offset
    for d in dims:
        if shape[d] > 1:
            off += (shape[d] - 1) * strides[d]
            strides[d] = -strides[d]
    return gather_raw(x, shape, strides, off, [])


class Flip(Op):
    _linear, _constants = (0,), ()
    jvp = classmethod(linear_jvp)

    @staticmethod
    def forward(ctx, x, dims):
        ctx.dims = dims
        return _flip_raw(x, dims)

    @staticmethod
    def backward(ctx, g):
        return Flip.apply(g, ctx.dims), None


def flip(input, *dims, **kw):
    """A copy of input with the order of elements reversed along dims.

    >>> import clgrad
    >>> clgrad.arange(6).view(2, 3).flip(1).tolist(), clgrad.arange(3).flip(dims=(0,)).tolist()
    ([[2, 1, 0], [5, 4, 3]], [2, 1, 0])
    """
    dims = _keyword("flip", "dims", dims, kw)
    if not dims:
        raise TypeError('flip() missing 1 required positional arguments: "dims"')
    return Flip.apply(input, _dims("flip", input, _ints(dims, "dims")))


def fliplr(input):
    """input reversed along dim 1 (left to right); input must have at least 2 dims.

    >>> import clgrad
    >>> clgrad.tensor([[1, 2], [3, 4]]).fliplr().tolist()
    [[2, 1], [4, 3]]
    """
    if len(input._shape) < 2:
        raise RuntimeError(f"fliplr(): Input must be >= 2-d (got {size_repr(input._shape)}).")
    return flip(input, 1)


def flipud(input):
    """input reversed along dim 0 (up to down); input must have at least 1 dim.

    >>> import clgrad
    >>> clgrad.tensor([[1, 2], [3, 4]]).flipud().tolist()
    [[3, 4], [1, 2]]
    """
    if not input._shape:
        raise RuntimeError("flipud(): Input must be >= 1-d.")
    return flip(input, 0)


# ---- roll ----------------------------------------------------------------------------------------
def _narrow(t, dim, start, length):
    st = t._strides
    shape = t._shape[:dim] + (length,) + t._shape[dim + 1:]
    return view_raw(t, shape, st, t._offset + start * st[dim])


def _roll_raw(x, shifts, dims):
    """x rolled: element i along dim moves to (i + shift) % size; two copies per dim."""
    if not dims:                    # roll the flattened tensor, then restore the shape
        xc = contiguous_raw(x)
        n = numel_of(x._shape)
        flat = _roll_raw(view_raw(xc, (n,), (1,), xc._offset), shifts, (0,))
        return view_raw(flat, x._shape, contiguous_strides(x._shape), flat._offset)
    cur = x
    for s, d in zip(shifts, dims):
        n = cur._shape[d]
        s = s % n if n else 0
        out = empty_tensor(cur._shape, cur._dtype, cur._storage.device)
        copy_raw(_narrow(out, d, 0, s), _narrow(cur, d, n - s, s))
        copy_raw(_narrow(out, d, s, n - s), _narrow(cur, d, 0, n - s))
        cur = out
    return cur


class Roll(Op):
    _linear, _constants = (0,), ()
    jvp = classmethod(linear_jvp)

    @staticmethod
    def forward(ctx, x, shifts, dims):
        ctx.shifts, ctx.dims = shifts, dims
        return _roll_raw(x, shifts, dims)

    @staticmethod
    def backward(ctx, g):
        return Roll.apply(g, tuple(-s for s in ctx.shifts), ctx.dims), None, None


def roll(input, shifts, dims=None):
    """input with its elements shifted along dims (wrapping around); without dims, the flattened
    tensor is rolled and the shape restored.

    >>> import clgrad
    >>> clgrad.arange(6).view(2, 3).roll(1, 1).tolist(), clgrad.arange(4).roll(-1).tolist()
    ([[2, 0, 1], [5, 3, 4]], [1, 2, 3, 0])
    """
    shifts = _ints((shifts,), "shifts")
    dims = () if dims is None else _ints((dims,), "dims")
    if not shifts:
        raise RuntimeError("roll(): `shifts` required")
    if dims and len(shifts) != len(dims):
        raise RuntimeError(f"roll(): shifts and dimensions must align. shifts: {len(shifts)}, "
                           f"dims:{len(dims)}")
    if not dims and len(shifts) != 1:
        raise RuntimeError(f"roll(): shifts and dimensions must align. shifts: {len(shifts)}, "
                           f"dims:0")
    if dims and not input._shape:
        raise IndexError("roll(): Dimension specified as 0 but tensor has no dimensions")
    dims = tuple(views._wrap(d, len(input._shape)) for d in dims)     # repeats roll again
    return Roll.apply(input, shifts, dims)


# ---- repeat, tile, repeat_interleave -------------------------------------------------------------
def _repeat_geometry(shape, reps):
    """x.repeat(reps) read as blocks: dims (r0, s0, r1, s1, ...) where s are x's sizes (padded
    with leading 1s). Returns that shape, the output's strides over it and the output shape."""
    xs = (1,) * (len(reps) - len(shape)) + tuple(shape)
    out_shape = tuple(r * s for r, s in zip(reps, xs))
    ost = contiguous_strides(out_shape)
    inter, inter_st = [], []
    for r, s, st in zip(reps, xs, ost):
        inter += [r, s]
        inter_st += [s * st, st]
    return tuple(inter), inter_st, out_shape


def _repeat_raw(x, reps):
    inter, ost, out_shape = _repeat_geometry(x._shape, reps)
    out = empty_tensor(out_shape, x._dtype, x._storage.device)
    if not numel_of(out_shape):
        return out
    lead = len(reps) - len(x._shape)
    xst = []
    for i in range(len(reps)):
        xst += [0, x._strides[i - lead] if i >= lead else 0]    # blocks read x again: stride 0
    dst = view_raw(out, inter, ost, out._offset)
    src = view_raw(x, inter, xst, x._offset)
    shape, _ = collapse(inter, [ost, xst])
    if len(shape) > MAX_DIMS:       # too many dims for one strided copy: one dim at a time
        cur = x
        for i in range(len(reps)):
            one = [1] * len(reps)
            one[i] = reps[i]
            cur = _repeat_raw(cur, tuple(one))
        return cur
    copy_raw(dst, src)
    return out


class Repeat(Op):
    _linear, _constants = (0,), ()
    jvp = classmethod(linear_jvp)

    @staticmethod
    def forward(ctx, x, reps):
        ctx.reps = reps
        return _repeat_raw(x, reps)

    @staticmethod
    def backward(ctx, g):
        # sum the blocks: g as (r0, s0, r1, s1, ...) summed over the r dims
        shape = ctx._in_meta[0][0]
        inter, _, _ = _repeat_geometry(shape, ctx.reps)
        gs = g.reshape(inter).sum(tuple(range(0, len(inter), 2)))
        return gs.reshape(shape), None


def _keyword(op, name, args, kw):
    """args, or torch's keyword form name=... (views.keyword_sizes); another keyword is a
    TypeError."""
    args = views.keyword_sizes(op, name, args, kw.pop(name, None))
    if kw:
        raise TypeError(f"{op}() got an unexpected keyword argument '{next(iter(kw))}'")
    return args


def repeat(input, *sizes, **kw):
    """input tiled sizes[i] times along each dim (sizes may add leading dims).

    >>> import clgrad
    >>> clgrad.tensor([1, 2]).repeat(2, 2).tolist(), clgrad.tensor([1]).repeat(repeats=[2]).tolist()
    ([[1, 2, 1, 2], [1, 2, 1, 2]], [1, 1])
    """
    sizes = _keyword("repeat", "repeats", sizes, kw)
    if not sizes:
        raise TypeError('repeat() missing 1 required positional arguments: "repeats"')
    reps = _ints(sizes, "repeats")
    if len(reps) < len(input._shape):
        raise RuntimeError(f"Number of dimensions of repeat dims can not be smaller than number of "
                           f"dimensions of tensor (repeats {list(reps)}, tensor "
                           f"{size_repr(input._shape)})")
    if any(r < 0 for r in reps):
        bad = [r * s for r, s in zip(reps, (1,) * (len(reps) - len(input._shape)) + input._shape)]
        raise RuntimeError(f"Trying to create tensor with negative dimension "
                           f"{min(bad)}: {size_repr(bad)}")
    if not reps:
        return views.clone(input)
    return Repeat.apply(input, reps)


def tile(input, *dims, **kw):
    """input repeated dims[i] times along each dim; dims is padded with leading 1s to input's
    number of dims (unlike repeat's).

    >>> import clgrad
    >>> clgrad.tensor([[1, 2]]).tile((2,)).tolist(), clgrad.tensor([1, 2]).tile(2, 1).tolist()
    ([[1, 2, 1, 2]], [[1, 2], [1, 2]])
    """
    reps = _ints(_keyword("tile", "dims", dims, kw), "dims")
    reps = (1,) * (len(input._shape) - len(reps)) + reps
    return repeat(input, reps)


def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):
    """Each element (each slice along dim) repeated `repeats` times in place; repeats is an int or
    a tensor with one count per slice. Without dim the input is flattened first.
    repeat_interleave(counts) alone gives each index repeated counts[i] times.

    >>> import clgrad
    >>> x = clgrad.tensor([[1, 2], [3, 4]])
    >>> x.repeat_interleave(2).tolist(), x.repeat_interleave(clgrad.tensor([1, 2]), 0).tolist()
    ([1, 1, 2, 2, 3, 3, 4, 4], [[1, 2], [3, 4], [3, 4]])
    """
    if repeats is None:                      # repeat_interleave(counts)
        counts = input
        if len(counts._shape) != 1:
            raise RuntimeError("repeat_interleave only accept 1D vector as repeat")
        if counts._dtype not in (dtypes.int32, dtypes.int64):
            raise RuntimeError(f"repeat_interleave: repeats must be an integer tensor, got "
                               f"{counts._dtype}")
        host = _counts(counts, output_size)
        return upload(np.repeat(np.arange(len(host)), host).astype(np.int64), counts._dtype,
                      counts._storage.device)
    if dim is None:
        input = views.flatten(input)
        d = 0
    else:
        d = views._wrap(dim, len(input._shape))
    if isinstance(repeats, Tensor) and repeats._shape == ():
        repeats = int(repeats.item())
    if isinstance(repeats, Tensor):
        if len(repeats._shape) != 1:
            raise RuntimeError("repeats must be 0-dim or 1-dim tensor")
        n = input._shape[d] if input._shape else 1
        if repeats._shape[0] == 1 and n != 1:
            return repeat_interleave(input, int(repeats.item()), d)
        if repeats._shape[0] != n:
            raise RuntimeError(f"repeats must have the same size as input along dim, but got "
                               f"repeats.size(0) = {repeats._shape[0]} and input.size({d}) = {n}")
        host = _counts(repeats, output_size)
        idx = upload(np.repeat(np.arange(n), host).astype(np.int64), dtypes.int64,
                     input._storage.device)
        return index_select(input, d, idx)
    r = int(repeats)
    if r < 0:
        raise RuntimeError("repeat_interleave: Repeats must be non-negative")
    if not input._shape:
        input = views.reshape(input, 1)
    shape = input._shape
    if output_size is not None and output_size != shape[d] * r:
        raise RuntimeError("repeat_interleave: allocated size does not match required size")
    # a view with a stride-0 dim of r after dim, copied by reshape
    big = views.expand(views.unsqueeze(input, d + 1), shape[:d + 1] + (r,) + shape[d + 1:])
    return views.reshape(big, shape[:d] + (shape[d] * r,) + shape[d + 1:])


def _counts(repeats, output_size):
    host = repeats._read_host().astype(np.int64)
    if (host < 0).any():
        raise RuntimeError("repeat_interleave: repeats can not be negative")
    if output_size is not None and output_size != int(host.sum()):
        raise RuntimeError("repeat_interleave: allocated size does not match required size")
    return host


# ---- tril / triu ---------------------------------------------------------------------------------
class Tril(Op):
    upper = False
    _linear, _constants = (0,), ()
    jvp = classmethod(linear_jvp)

    @classmethod
    def forward(cls, ctx, x, diagonal):
        ctx.diagonal = diagonal
        return tri_raw(empty_tensor(x._shape, x._dtype, x._storage.device), x, diagonal,
                       cls.upper)

    @classmethod
    def backward(cls, ctx, g):
        return cls.apply(g, ctx.diagonal), None


class Triu(Tril):
    upper = True


def _tri_check(op, x):
    if len(x._shape) < 2:
        raise RuntimeError(f"{op}: input tensor must have at least 2 dimensions (got "
                           f"{size_repr(x._shape)})")


def tril(input, diagonal=0):
    """The lower triangle of the last two dims: elements with col - row <= diagonal, others 0.

    >>> import clgrad
    >>> clgrad.ones(3, 3).tril().tolist()
    [[1.0, 0.0, 0.0], [1.0, 1.0, 0.0], [1.0, 1.0, 1.0]]
    """
    _tri_check("tril", input)
    return Tril.apply(input, int(diagonal))


def triu(input, diagonal=0):
    """The upper triangle of the last two dims: elements with col - row >= diagonal, others 0.

    >>> import clgrad
    >>> clgrad.ones(2, 3).triu(1).tolist()
    [[0.0, 1.0, 1.0], [0.0, 0.0, 1.0]]
    """
    _tri_check("triu", input)
    return Triu.apply(input, int(diagonal))


def _tri_(op, name):
    def f_(self, diagonal=0):
        _tri_check(name, self)
        d = int(diagonal)
        return apply_inplace(op, self, d, fast=lambda: tri_raw(self, self, d, op.upper),
                             name=name)
    f_.__name__ = name
    f_.__doc__ = f"In-place {name[:-1]}."
    return f_


tril_ = _tri_(Tril, "tril_")
triu_ = _tri_(Triu, "triu_")


# ---- constant padding ----------------------------------------------------------------------------
def _pad_plan(shape, pad):
    """For pads (left, right) per trailing dim: the output shape and, per dim, where the kept part
    of x starts in x and in the output and how long it is (negative pads crop)."""
    out, plan = list(shape), [(0, 0, n) for n in shape]
    for i in range(len(pad) // 2):
        d = len(shape) - 1 - i
        lo, hi, n = pad[2 * i], pad[2 * i + 1], shape[d]
        size = n + lo + hi
        if size < 0:
            raise RuntimeError(f"constant_pad_nd(): the input size {n}, plus negative padding "
                               f"{lo} and {hi} resulted in a negative output size, which is "
                               f"invalid. Check dimension {d} of your input.")
        keep = max(0, n - max(-lo, 0) - max(-hi, 0))
        out[d] = size
        plan[d] = (max(-lo, 0), max(lo, 0), keep)
    return tuple(out), plan


class ConstantPadNd(Op):
    _linear, _constants = (0,), (2,)        # the tangent is padded with zeros
    jvp = classmethod(linear_jvp)

    @staticmethod
    def forward(ctx, x, pad, value):
        ctx.pad = pad
        shape, plan = _pad_plan(x._shape, pad)
        out = full_raw(shape, value, x._dtype, x._storage.device)
        kept = tuple(k for _, _, k in plan)
        if numel_of(kept):
            xo = x._offset + sum(s * st for (s, _, _), st in zip(plan, x._strides))
            oo = out._offset + sum(s * st for (_, s, _), st in zip(plan, out._strides))
            copy_raw(view_raw(out, kept, out._strides, oo), view_raw(x, kept, x._strides, xo))
        return out

    @staticmethod
    def backward(ctx, g):
        # the adjoint of padding is cropping, and of cropping padding with zeros
        return ConstantPadNd.apply(g, tuple(-p for p in ctx.pad), 0), None, None


def constant_pad_nd(input, pad, value=0):
    """input padded with `value`: pad = (left, right) for the last dim, then for the one before,
    and so on; negative pads remove elements.

    >>> import clgrad
    >>> clgrad.constant_pad_nd(clgrad.tensor([[1, 2]]), (1, -1, 1, 0)).tolist()
    [[0, 0], [0, 1]]
    """
    pad = _ints((pad,), "pad")
    if len(pad) % 2:
        raise RuntimeError(f"constant_pad_nd(): Length of pad must be even but instead it equals "
                           f"{len(pad)}")
    if len(pad) > 2 * len(input._shape):
        raise RuntimeError(f"constant_pad_nd(): Length of pad should be no more than twice the "
                           f"number of dimensions of the input. Pad length is {len(pad)} while "
                           f"the input has {len(input._shape)} dimensions.")
    return ConstantPadNd.apply(input, pad, value)


def pad(input, pad, mode="constant", value=None):
    """torch.nn.functional.pad: pad = (left, right) for the last dim, then the one before, and so
    on; negative pads crop. mode "constant" fills with `value` (any number of dims); "reflect",
    "replicate" and "circular" repeat the input's own elements and pad the last 1 to 3 dims of
    an input with one or two leading (batch, channel) dims.

    >>> import clgrad
    >>> from clgrad.ops.shape import pad
    >>> pad(clgrad.tensor([1.0, 2.0]), (2, 1), value=9.0).tolist()
    [9.0, 9.0, 1.0, 2.0, 9.0]
    >>> x = clgrad.tensor([[1.0, 2.0, 3.0]])
    >>> [pad(x, (2, 1), mode=m).tolist() for m in ("reflect", "replicate", "circular")]
    [[[3.0, 2.0, 1.0, 2.0, 3.0, 2.0]], [[1.0, 1.0, 1.0, 2.0, 3.0, 3.0]], [[2.0, 3.0, 1.0, 2.0, 3.0, 1.0]]]
    """
    pad_ = _ints((pad,), "pad")
    if len(pad_) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    if len(pad_) > 2 * len(input._shape):
        raise RuntimeError(f"Padding length should be less than or equal to two times the input "
                           f"dimension but got padding length {len(pad_)} and input of dimension "
                           f"{len(input._shape)}")
    if mode == "constant":
        return constant_pad_nd(input, pad_, 0 if value is None else value)
    if mode not in _SOURCE_INDEX:
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if value is not None and value != 0:
        raise RuntimeError(f'Padding mode "{mode}" doesn\'t take in value argument')
    return _pad_from_input(input, pad_, mode)


def _circular_source(size, n, lo, hi):
    # as torch does it: negative pads crop first, positive ones then wrap within what is left
    start = max(-lo, 0)
    kept = n - start - max(-hi, 0)
    if kept <= 0 and size > 0:
        raise RuntimeError("Negative padding value is resulting in an empty dimension")
    return start + (np.arange(size, dtype=np.int64) - max(lo, 0)) % max(kept, 1)


# the input position that each output position of a padded dim of size n reads from
_SOURCE_INDEX = {
    "reflect": lambda size, n, lo, hi:
        (n - 1) - np.abs((n - 1) - np.abs(np.arange(size, dtype=np.int64) - lo)),
    "replicate": lambda size, n, lo, hi: np.clip(np.arange(size, dtype=np.int64) - lo, 0, n - 1),
    "circular": _circular_source,
}


def _pad_from_input(x, pad, mode):
    """The non-constant pad modes: one index_select per padded dim, with indices made on the
    host (so the gradient is index_select's: padded copies add back into their source)."""
    k = len(pad) // 2
    nd = len(x._shape)
    if not k + 1 <= nd <= k + 2:
        raise NotImplementedError(
            f"Padding size {2 * k} is not supported for {nd}D input tensor.\n"
            f"Supported combinations for non-constant padding:\n"
            f"  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
            f"  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
            f"  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)")
    if 0 in x._shape[nd - k - 1:] and (mode != "circular" or 0 in x._shape[nd - k:]):
        raise RuntimeError(f"Expected {k + 1}D or {k + 2}D (batch mode) tensor with possibly 0 "
                           f"batch size and other non-zero dimensions for input, but got: "
                           f"{list(x._shape)}")
    out = x
    for i in range(k):
        d = nd - 1 - i
        lo, hi = pad[2 * i], pad[2 * i + 1]
        n = x._shape[d]
        size = n + lo + hi
        if mode == "reflect" and (lo >= n or hi >= n):
            raise RuntimeError(f"Argument #4: Padding size should be less than the corresponding "
                               f"input dimension, but got: padding ({lo}, {hi}) at dimension {d} "
                               f"of input {list(x._shape)}")
        if mode == "circular":
            if lo > n or hi > n:
                raise RuntimeError("Padding value causes wrapping around more than once.")
            if size < 0:
                raise RuntimeError("Negative padding value is resulting in an empty dimension")
        elif size < 1:
            raise RuntimeError(f"input ({'WHD'[i]}: {n}) is too small. Calculated output "
                               f"{'WHD'[i]}: {size}")
        if lo == 0 and hi == 0:
            continue
        index = _SOURCE_INDEX[mode](size, n, lo, hi)
        out = index_select(out, d, upload(index, dtypes.int64, x._storage.device))
    return out


FUNCTIONS = {
    "flip": lambda input, dims: flip(input, dims), "fliplr": fliplr, "flipud": flipud,
    "roll": roll, "tile": tile, "repeat_interleave": repeat_interleave, "tril": tril,
    "triu": triu, "constant_pad_nd": constant_pad_nd,
}
FUNCTIONS["flip"].__doc__ = flip.__doc__
METHODS = {
    "flip": flip, "fliplr": fliplr, "flipud": flipud, "roll": roll, "repeat": repeat,
    "tile": tile, "repeat_interleave": repeat_interleave, "tril": tril, "triu": triu,
    "tril_": tril_, "triu_": triu_,
}
