"""The one argument parser of convolution and pooling (the 2-d ops in clgrad.ops.conv, the 3-d
ones in clgrad.ops.conv_composed and clgrad.ops.pool3d): an int, or a list or tuple of one or n
ints, as an n-tuple, pooling's window geometry (torch's pooling_output_shape and shape checks)
and adaptive pooling's output size, with torch's messages; and the one `_ntuple` (torch's
lenient form, re-exported by clgrad.nn.modules.utils with `_single` / `_pair` / `_triple`).

>>> conv_ints("conv2d", "stride", 2, 2), pool_ints("max_pool3d", "stride", (), 3, (2, 2, 2))
((2, 2), (2, 2, 2))
>>> _ntuple(3)(0), _ntuple(2)([1, 2])
((0, 0, 0), (1, 2))
"""
import collections.abc
import numbers
from itertools import repeat

_REQUIRED = object()
_COUNT = {1: "one", 2: "two", 3: "three"}


def int_tuple(op, name, v, n, mismatch, default=_REQUIRED):
    """v as an n-tuple of ints: an int or a one-element sequence repeats. `mismatch(v)` is the
    RuntimeError's message for a sequence of another length. With a default (pooling), None
    stands for it, and so does an empty sequence where the default is not None (pooling's
    stride=() is the kernel size); without one, None is torch's TypeError."""
    if default is not _REQUIRED and (v is None or (isinstance(v, (tuple, list)) and len(v) == 0
                                                   and default is not None)):
        return default
    if isinstance(v, numbers.Integral) and not isinstance(v, bool):
        return (int(v),) * n
    if isinstance(v, (tuple, list)) and all(isinstance(e, numbers.Integral) for e in v):
        if len(v) == 1:
            return (int(v[0]),) * n
        if len(v) == n:
            return tuple(int(e) for e in v)
        raise RuntimeError(mismatch(v))
    raise TypeError(f"{op}(): argument '{name}' must be tuple of ints, not {type(v).__name__}")


def conv_ints(op, name, v, n, what="convolution dimensions"):
    """A convolution's stride, padding, dilation or output_padding as an n-tuple."""
    return int_tuple(op, name, v, n, lambda v: (
        f"expected {name} to be a single integer value or a list of {n} values to match the "
        f"{what}, but got {name}={list(v)}"))


def pool_ints(op, name, v, nd, default=None):
    """A pooling window's kernel_size, stride, padding or dilation as an nd-tuple (None, and
    for a default that is not None an empty sequence, give `default`)."""
    return int_tuple(op, name, v, nd, lambda v: (
        f"{op}: {name} must either be a single int, or a tuple of {_COUNT[nd]} ints"), default)


def pool_size(n, k, s, p, d, ceil_mode):
    """torch's pooling_output_shape: a window may start in the left padding or in the input,
    never in the right padding."""
    eff = d * (k - 1) + 1
    o = (n + 2 * p - eff + ((s - 1) if ceil_mode else 0)) // s + 1
    if ceil_mode and (o - 1) * s >= n + p:
        o -= 1
    return o


def _each(prefix, dims, values):
    return " ".join(f"{prefix}{c}: {v}" for c, v in zip(dims, values))


def pool_geometry(op, x, nd, kernel_size, stride, padding, dilation, ceil_mode):
    """(kernel_size, stride, padding, dilation, output sizes) of an nd-d pooling of x (whose last
    nd dims are pooled, the one before them its channels), each an nd-tuple, stride defaulting
    to the kernel size; torch's errors for windows and outputs that cannot be."""
    k = pool_ints(op, "kernel_size", kernel_size, nd)
    s = pool_ints(op, "stride", stride, nd, default=k)
    p = pool_ints(op, "padding", padding, nd)
    d = pool_ints(op, "dilation", dilation, nd)
    dims = "THW"[-nd:]
    if any(v <= 0 for v in k):
        raise RuntimeError(f"kernel size should be greater than zero, but got "
                           f"{_each('k', dims, k)}")
    if any(v <= 0 for v in s):
        raise RuntimeError("stride should not be zero" if nd == 2 else
                           f"stride should be greater than zero, but got {_each('d', dims, s)}")
    if any(v <= 0 for v in d):
        raise RuntimeError(f"dilation should be greater than zero, but got "
                           f"{_each('dilation', dims, d)}")
    for kk, pp, dd in zip(k, p, d):
        if pp < 0 or pp > (dd * (kk - 1) + 1) // 2:
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got "
                               f"pad={pp}, kernel_size={kk} and dilation={dd}")
    for kk, pp in zip(k, p):          # torch's second check: of the kernel itself
        if pp > kk // 2:
            raise RuntimeError(f"pad should be smaller than or equal to half of kernel size, but "
                               f"got pad={pp}, kernel_size={kk} (dilation {d})")
    sizes = tuple(x._shape[-nd:])
    out = tuple(pool_size(n, *a, ceil_mode) for n, *a in zip(sizes, k, s, p, d))
    if any(o < 1 for o in out):
        C = x._shape[-nd - 1]
        raise RuntimeError(f"Given input size: ({C}x{'x'.join(map(str, sizes))}). Calculated "
                           f"output size: ({C}x{'x'.join(map(str, out))}). Output size is too "
                           f"small")
    return k, s, p, d, out


def adaptive_size(op, x, output_size, nd):
    """An adaptive pooling's output_size as an nd-tuple: an int, or nd entries of which None
    keeps x's size in that dim; torch's errors otherwise."""
    if isinstance(output_size, (tuple, list)):
        if len(output_size) != nd:
            raise RuntimeError(f"{op}: output_size must be {nd}")
        out = tuple(x._shape[-nd + i] if v is None else v for i, v in enumerate(output_size))
    else:
        out = (output_size,) * nd
    if not all(isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in out):
        raise TypeError(f"{op}(): argument 'output_size' must be tuple of ints, not "
                        f"{type(output_size).__name__}")
    out = tuple(int(v) for v in out)
    if any(v < 0 for v in out):
        raise RuntimeError(f"{op}: elements of output_size must be greater than or equal to 0 "
                           f"but received {{{', '.join(map(str, out))}}}")
    return out


def _ntuple(n, name="parse"):
    """torch's nn.modules.utils._ntuple: an iterable (list, tuple, Size) becomes a tuple of its
    elements, anything else is repeated n times (no checks: conv_ints and pool_ints check)."""
    def parse(x):
        if isinstance(x, collections.abc.Iterable):
            return tuple(x)
        return tuple(repeat(x, n))

    parse.__name__ = name
    return parse
