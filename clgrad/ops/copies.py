"""The ops that copy on purpose: contiguous, clone, dtype casts (their gradient passes through);
and detach, which shares the data without the history."""
import warnings

from .. import dtypes
from ..autograd.op import Op
from ..kernels._layout import view_raw
from ..kernels.elementwise import output_order
from ..tensor import alias, empty_tensor, upload_bits
from ._base import copy_into


def empty_preserving(x, dtype):
    """An uninitialised tensor of x's shape laid out as x is (torch's preserve_format: a
    transposed or permuted x gives the same strides; dims ordered as the elementwise results'),
    at the start of its own storage."""
    order = None if x._contig else output_order(x._shape, [x])
    if order is None:
        return empty_tensor(x._shape, dtype, x._storage.device)
    t = empty_tensor(tuple(x._shape[d] for d in order), dtype, x._storage.device)
    inverse = [order.index(d) for d in range(len(order))]
    return view_raw(t, [t._shape[i] for i in inverse], [t._strides[i] for i in inverse], 0)


class Clone(Op):
    @staticmethod
    def forward(ctx, x, preserve=False):
        out = empty_preserving(x, x._dtype) if preserve else \
            empty_tensor(x._shape, x._dtype, x._storage.device)
        return copy_into(out, x)

    @staticmethod
    def backward(ctx, g):
        return g, None

    @staticmethod
    def jvp(args, tangents, out):
        return Clone.apply(tangents[0], *args[1:])


class ToCopy(Op):
    @staticmethod
    def forward(ctx, x, dtype):
        return copy_into(empty_preserving(x, dtype), x)

    @staticmethod
    def backward(ctx, g):
        # a real input of a cast to complex takes the real part of the gradient (no warning)
        return to_dtype(g, ctx._in_meta[0][1], warn=False), None

    @staticmethod
    def jvp(args, tangents, out):
        return ToCopy.apply(tangents[0], args[1])


def to_device_raw(x, dev):
    """x's values in a new tensor on `dev` (not recorded). OpenCL contexts share no buffers, so
    the values go through the host, as their bits."""
    return upload_bits(x._read_host(), x._shape, x._dtype, dev)


class ToDevice(Op):
    """x.to(device) for another device (torch's ToCopyBackward0): the gradient moves back."""

    _node_name = "ToCopyBackward0"

    @staticmethod
    def forward(ctx, x, dev):
        ctx.src_device = x._storage.device
        return to_device_raw(x, dev)

    @staticmethod
    def backward(ctx, g):
        return ToDevice.apply(g, ctx.src_device), None

    @staticmethod
    def jvp(args, tangents, out):
        return ToDevice.apply(tangents[0], args[1])


# ---- the functions ------------------------------------------------------------------------------
def contiguous(x, memory_format=None):
    """x itself when contiguous, else a contiguous copy.

    >>> import clgrad
    >>> clgrad.zeros(2, 3).t().contiguous().is_contiguous()
    True
    """
    if x._contig:
        return x
    return Clone.apply(x)


def clone(x, memory_format=None):
    """A copy with its own memory (recorded: the gradient passes through), laid out as x is, as
    torch's default (preserve_format) does.

    >>> import clgrad
    >>> clgrad.tensor([1, 2]).clone().tolist()
    [1, 2]
    >>> clgrad.zeros(2, 3).t().clone().stride()
    (1, 3)
    """
    return Clone.apply(x, True)


def to_dtype(x, dtype, copy=False, warn=True):
    """x cast to dtype (x itself if it has it, unless copy). A complex x cast to a real dtype
    loses its imaginary parts, with torch's warning (once) unless warn is False."""
    dtype = dtypes.as_dtype(dtype)
    if dtype is x._dtype and not copy:
        return x
    if warn and x._dtype.kind == "c" and dtype.kind not in "cb":
        warn_discard_imag()
    return ToCopy.apply(x, dtype)


_warned_discard = [False]


def warn_discard_imag():
    """torch's warning (once per process) when a cast drops imaginary parts."""
    if not _warned_discard[0]:
        _warned_discard[0] = True
        warnings.warn("Casting complex values to real discards the imaginary part",
                      UserWarning, stacklevel=4)


def detach(x):
    """A tensor sharing x's data (and version counter) with no history.

    >>> import clgrad
    >>> clgrad.ones(2, requires_grad=True).detach().requires_grad
    False
    """
    d = alias(x)
    return d


def detach_(x):
    if x._base is not None and (x._base._requires_grad or x._grad_fn is not None):
        raise RuntimeError("Can't detach views in-place. Use detach() instead. If you are using "
                           "DistributedDataParallel (DDP) for training ...")
    x._grad_fn = None
    x._requires_grad = False
    x._output_nr = 0
    return x


__all__ = ["contiguous", "clone", "to_dtype", "detach", "detach_"]
