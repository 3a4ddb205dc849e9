"""torch's numeric utilities, composed of clgrad ops: integer (`gcd`, `lcm`), float bits (`frexp`,
`nextafter`), sets and counts (`isin`, `combinations`, `histogram`), flat indices as coordinates
(`unravel_index`), finite differences
(`gradient`) and the signal windows (`i0` is a table kernel: ops/special.py).

No new kernels. Bit-level utilities work on integer views of the float bits, so a device that
flushes subnormals in float arithmetic still gets them right.
"""
import builtins
import itertools
import math
import numbers

import numpy as np

from .. import dtypes
from ..tensor import Tensor
from . import creation, join, sort, views
from .pointwise import where

__all__ = ["isin", "gcd", "gcd_", "lcm", "lcm_", "frexp", "nextafter", "nextafter_",
           "combinations", "histogram", "gradient", "hann_window", "hamming_window",
           "blackman_window", "bartlett_window", "kaiser_window"]


# ---- windows: computed in float64 on the host, like arange/linspace's host paths ----------------
def _window(name, n, periodic, dtype, device, requires_grad, values):
    if n < 0:
        raise RuntimeError(f"{name} requires non-negative window_length, got window_length={n}")
    dt = dtypes.get_default_dtype() if dtype is None else dtypes.as_dtype(dtype)
    if dt.kind != "f":
        raise RuntimeError(f"{name} expects floating point dtypes, got: {dt}")
    if n <= 1:
        w = np.ones(n)
    else:
        m = n + 1 if periodic else n                  # periodic: one more point, then drop it
        w = values(np.arange(m, dtype=np.float64), m)[:n]
    return creation.tensor(w, dtype=dt, device=device, requires_grad=requires_grad)


def _cosine_sum(coefs):
    def values(k, m):
        return sum(c * np.cos(2 * np.pi * i * k / (m - 1)) for i, c in enumerate(coefs))
    return values


def hann_window(window_length, periodic=True, *, dtype=None, layout=None, device=None,
                pin_memory=False, requires_grad=False):
    """0.5 - 0.5 cos(2πk / (N - 1)); periodic: the first N of an N+1 window.

    >>> import clgrad
    >>> clgrad.hann_window(4).tolist()
    [0.0, 0.5, 1.0, 0.5]
    """
    return _window("hann_window", window_length, periodic, dtype, device, requires_grad,
                   _cosine_sum((0.5, -0.5)))


def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None,
                   layout=None, device=None, pin_memory=False, requires_grad=False):
    """alpha - beta cos(2πk / (N - 1)); periodic: the first N of an N+1 window.

    >>> import clgrad
    >>> [round(v, 4) for v in clgrad.hamming_window(3, periodic=False).tolist()]
    [0.08, 1.0, 0.08]
    """
    return _window("hamming_window", window_length, periodic, dtype, device, requires_grad,
                   _cosine_sum((alpha, -beta)))


def blackman_window(window_length, periodic=True, *, dtype=None, layout=None, device=None,
                    pin_memory=False, requires_grad=False):
    """0.42 - 0.5 cos(2πk / (N - 1)) + 0.08 cos(4πk / (N - 1)).

    >>> import clgrad
    >>> [round(v, 4) for v in clgrad.blackman_window(4).tolist()[1:]]
    [0.34, 1.0, 0.34]
    """
    return _window("blackman_window", window_length, periodic, dtype, device, requires_grad,
                   _cosine_sum((0.42, -0.5, 0.08)))


def bartlett_window(window_length, periodic=True, *, dtype=None, layout=None, device=None,
                    pin_memory=False, requires_grad=False):
    """The triangular window 1 - |2k / (N - 1) - 1|.

    >>> import clgrad
    >>> clgrad.bartlett_window(5, periodic=False).tolist()
    [0.0, 0.5, 1.0, 0.5, 0.0]
    """
    return _window("bartlett_window", window_length, periodic, dtype, device, requires_grad,
                   lambda k, m: 1 - np.abs(2 * k / (m - 1) - 1))


def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, layout=None,
                  device=None, pin_memory=False, requires_grad=False):
    """I0(beta sqrt(1 - (2k / (N - 1) - 1)²)) / I0(beta).

    >>> import clgrad
    >>> [round(v, 4) for v in clgrad.kaiser_window(3, periodic=False, beta=1.0).tolist()]
    [0.7898, 1.0, 0.7898]
    """
    return _window("kaiser_window", window_length, periodic, dtype, device, requires_grad,
                   lambda k, m: np.i0(beta * np.sqrt(np.clip(1 - (2 * k / (m - 1) - 1) ** 2,
                                                             0, None))) / np.i0(beta))


# ---- integer utilities ---------------------------------------------------------------------------
def _int_operands(op, a, b):
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        raise TypeError(f"{op}(): expected a Tensor argument")
    ref = a if isinstance(a, Tensor) else b
    dt = dtypes.result_type(a, b)
    if dt.kind not in "iu":
        raise NotImplementedError(f'"{op}" not implemented for '
                                  f"'{dt.name.capitalize()}' (integer tensors only)")
    a = a.to(dt) if isinstance(a, Tensor) else creation.full((), a, dtype=dt, device=ref.device)
    b = b.to(dt) if isinstance(b, Tensor) else creation.full((), b, dtype=dt, device=ref.device)
    shape = views._shape_arg(tuple(np.broadcast_shapes(tuple(a.shape), tuple(b.shape))))
    return a.expand(shape).abs(), b.expand(shape).abs()


def gcd(input, other):
    """The greatest common divisor of each pair (non-negative; gcd(0, 0) = 0). Integer tensors.

    >>> import clgrad
    >>> clgrad.gcd(clgrad.tensor([-4, 0, 7]), clgrad.tensor([6, -5, 3])).tolist()
    [2, 5, 1]
    """
    a, b = _int_operands("gcd", input, other)
    # Euclid on all pairs at once; a pair whose b reached 0 keeps its a. At most ~log_phi(max)
    # rounds (93 for int64), each one host check.
    while bool((b != 0).any()):
        nz = b != 0
        a, b = where(nz, b, a), where(nz, a % where(nz, b, 1), 0)
    return a.contiguous()


def lcm(input, other):
    """The least common multiple of each pair (non-negative; 0 if either is 0). Integer tensors.

    >>> import clgrad
    >>> clgrad.lcm(clgrad.tensor([-4, 0, 7]), clgrad.tensor([6, -5, 3])).tolist()
    [12, 0, 21]
    """
    a, b = _int_operands("lcm", input, other)
    g = gcd(a, b)
    zero = g == 0
    return where(zero, 0, a // where(zero, 1, g) * b)


def gcd_(input, other):
    """gcd, in place.

    >>> import clgrad
    >>> x = clgrad.tensor([4, 9]); clgrad.gcd_(x, clgrad.tensor([6, 3])).tolist()
    [2, 3]
    """
    return input.copy_(gcd(input, other))


def lcm_(input, other):
    """lcm, in place.

    >>> import clgrad
    >>> x = clgrad.tensor([4, 9]); clgrad.lcm_(x, clgrad.tensor([6, 3])).tolist()
    [12, 9]
    """
    return input.copy_(lcm(input, other))


# ---- float bits ----------------------------------------------------------------------------------
# (int view dtype, mantissa bits, exponent field mask, exponent bias for a mantissa in [0.5, 1))
_BITS = {"float32": (dtypes.int32, 23, 0xFF, 126), "float64": (dtypes.int64, 52, 0x7FF, 1022)}


def frexp(input):
    """(mantissa, exponent) with input = mantissa * 2**exponent, |mantissa| in [0.5, 1)
    (0, inf and nan give themselves and exponent 0). exponent is int32.

    >>> import clgrad
    >>> m, e = clgrad.frexp(clgrad.tensor([8.0, -3.0, 0.0]))
    >>> m.tolist(), e.tolist()
    ([0.5, -0.75, 0.0], [4, 2, 0])
    """
    if not input.is_floating_point():
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    x = input.detach()
    wide = x.dtype if x.dtype.name in _BITS else dtypes.float32   # 16-bit floats: exact in f32
    x = x.to(wide).contiguous()
    idt, mbits, emask, bias = _BITS[wide.name]
    bits = x.view(idt)
    field = (bits >> mbits) & emask
    # subnormals: scale by 2**64 (exact) to normalise them, then count the 64 back
    sub = (field == 0) & (x != 0)
    if bool(sub.any()):
        x = where(sub, x * 2.0 ** 64, x).contiguous()
        bits = x.view(idt)
        field = (bits >> mbits) & emask
    special = (field == 0) | (field == emask)            # 0 (after scaling), inf, nan
    mant_bits = (bits & ~(emask << mbits)) | (bias << mbits)
    mant = where(special, x, mant_bits.contiguous().view(wide))
    exp = where(special, 0, field - bias - where(sub, 64, 0)).to(dtypes.int32)
    return mant.to(input.dtype), exp


def nextafter(input, other):
    """The next float after input in the direction of other (other itself where equal).
    float32 and float64.

    >>> import clgrad
    >>> clgrad.nextafter(clgrad.tensor([1.0]), clgrad.tensor([2.0])).item() > 1.0
    True
    """
    dt = dtypes.result_type(input, other)
    if dt.name not in _BITS:
        raise NotImplementedError(f'"nextafter" not implemented for \'{dt.name.capitalize()}\' '
                                  f"(clgrad: float32 and float64)")
    ref = input if isinstance(input, Tensor) else other
    x = input.to(dt) if isinstance(input, Tensor) else creation.full((), input, dtype=dt,
                                                                    device=ref.device)
    y = other.to(dt) if isinstance(other, Tensor) else creation.full((), other, dtype=dt,
                                                                    device=ref.device)
    shape = tuple(np.broadcast_shapes(tuple(x.shape), tuple(y.shape)))
    x, y = x.detach().expand(shape).contiguous(), y.detach().expand(shape).contiguous()
    idt, mbits, emask, _ = _BITS[dt.name]
    sign = -(1 << (idt.itemsize * 8 - 1))                 # the sign bit as a signed integer
    inf_bits = emask << mbits
    bx, by = x.view(idt), y.view(idt)
    # floats ordered as integers: non-negative bits as they are, negative as -(magnitude)
    ox = where(bx < 0, -(bx & ~sign), bx)
    oy = where(by < 0, -(by & ~sign), by)
    nan = ((bx & ~sign) > inf_bits) | ((by & ~sign) > inf_bits)
    o = where(oy > ox, ox + 1, ox - 1)                    # (a scalar where would be int64)
    # back to bits; stepping onto zero keeps x's sign (C's nextafter: +-0 from +-denormal_min)
    bits = where(o < 0, (-o) | sign, where(o == 0, bx & sign, o))
    out = where(ox == oy, y, bits.contiguous().view(dt))
    return where(nan, x + y, out)


def nextafter_(input, other):
    """nextafter, in place.

    >>> import clgrad
    >>> x = clgrad.tensor([1.0]); clgrad.nextafter_(x, clgrad.tensor([0.0])).item() < 1.0
    True
    """
    return input.copy_(nextafter(input, other))


# ---- sets, combinations, histograms --------------------------------------------------------------
def isin(elements, test_elements, *, assume_unique=False, invert=False):
    """Whether each element of `elements` is in `test_elements` (either may be a number).

    >>> import clgrad
    >>> clgrad.isin(clgrad.tensor([1, 2, 3]), clgrad.tensor([2, 5])).tolist()
    [False, True, False]
    """
    if not isinstance(elements, Tensor) and not isinstance(test_elements, Tensor):
        raise TypeError("isin(): expected elements or test_elements to be a Tensor")
    ref = elements if isinstance(elements, Tensor) else test_elements
    dt = dtypes.result_type(elements, test_elements)
    e = elements.to(dt) if isinstance(elements, Tensor) else \
        creation.full((), elements, dtype=dt, device=ref.device)
    t = test_elements.to(dt).flatten() if isinstance(test_elements, Tensor) else \
        creation.full((1,), test_elements, dtype=dt, device=ref.device)
    e = e.detach()
    if t.numel() == 0:
        found = creation.zeros(e.shape, dtype=dtypes.bool_, device=e.device)
    else:
        s = sort.sort(t.detach())[0]                       # binary search in the sorted tests
        idx = sort.searchsorted(s, e).clamp(max=s.numel() - 1)
        found = s[idx] == e
    return found.logical_not() if invert else found


def combinations(input, r=2, with_replacement=False):
    """The r-length combinations of a 1-D tensor's elements, as rows (itertools' order).

    >>> import clgrad
    >>> clgrad.combinations(clgrad.tensor([1, 2, 3])).tolist()
    [[1, 2], [1, 3], [2, 3]]
    """
    if input.ndim != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input.shape)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return input.new_empty((0,))
    pick = itertools.combinations_with_replacement if with_replacement else \
        itertools.combinations
    idx = list(pick(np.arange(input.shape[0]), r))
    if not idx:
        return input.new_empty((0, r))
    return input[creation.tensor(np.array(idx, dtype=np.int64), device=input.device)]


def _linspace_like_torch(lo, hi, steps, npdt):
    """torch's linspace values (from both ends toward the middle, one rounding per value, as its
    fused multiply-add gives for float32), so histogram's edges match torch's bit for bit in
    float32 (float64 may differ in the last bit)."""
    lo, hi = npdt(lo), npdt(hi)
    step = np.float64((hi - lo) / npdt(steps - 1))
    k = np.arange(steps)
    vals = np.where(k < steps // 2, np.float64(lo) + step * k,
                    np.float64(hi) - step * (steps - k - 1))
    return vals.astype(npdt)


def histogram(input, bins=100, *, range=None, weight=None, density=False):
    """(hist, bin_edges): counts (or summed weights) of input's values per bin. bins is a count
    (equal bins over range, by default input's min to max) or a 1-D tensor of increasing edges;
    the last bin includes its right edge; values outside are not counted. density divides by
    the total and the bin widths. Floating tensors.

    >>> import clgrad
    >>> h, e = clgrad.histogram(clgrad.tensor([1.0, 2.0, 1.0]), bins=4, range=(0.0, 3.0))
    >>> h.tolist(), e.tolist()
    ([0.0, 2.0, 1.0, 0.0], [0.0, 0.75, 1.5, 2.25, 3.0])
    """
    if not input.is_floating_point():
        raise NotImplementedError(f"\"histogramdd\" not implemented for "
                                  f"'{input.dtype.name.capitalize()}' (floating tensors only)")
    x = input.detach().flatten()
    if isinstance(bins, Tensor):
        if bins.ndim != 1 or bins.numel() < 1:
            raise RuntimeError(f"histogram: bins must be a 1-D tensor with at least one edge, "
                               f"got shape {list(bins.shape)}")
        edges = bins.detach().to(input.dtype)
    else:
        if bins <= 0:
            raise RuntimeError(f"histogram: bins must be > 0, but got {bins}")
        if range is not None:
            lo, hi = float(range[0]), float(range[1])
        elif x.numel():
            lo, hi = x.min().item(), x.max().item()
        else:
            lo, hi = 0.0, 1.0
        if lo > hi:
            raise RuntimeError(f"histogram: min should not exceed max, got min {lo} max {hi}")
        if lo == hi:                                       # as torch: widen an empty range
            lo, hi = lo - 0.5, hi + 0.5
        npdt = np.float64 if input.dtype is dtypes.float64 else np.float32
        edges = creation.tensor(_linspace_like_torch(lo, hi, bins + 1, npdt), dtype=input.dtype,
                                device=input.device)
    nb = edges.numel() - 1
    hist = creation.zeros(nb + 1, dtype=input.dtype, device=input.device)
    if nb > 0 and x.numel():
        b = sort.searchsorted(edges, x, right=True) - 1
        b = where(x == edges[-1], nb - 1, b)               # the last bin is closed
        b = where((b < 0) | (b >= nb), nb, b)              # outside: into a spare bin, dropped
        w = creation.ones(x.shape, dtype=input.dtype, device=input.device) if weight is None \
            else weight.detach().to(input.dtype).flatten()
        hist.index_add_(0, b, w)
    hist = hist[:nb].contiguous()
    if density:
        hist = hist / (hist.sum() * (edges[1:] - edges[:-1]))
    return hist, edges


# ---- finite differences --------------------------------------------------------------------------
def _diff(t, dim, a, b):
    return t.narrow(dim, a, b)


def gradient(input, *, spacing=1, dim=None, edge_order=1):
    """numpy's gradient: central differences inside, one-sided (edge_order 1 or 2) at the ends,
    one tensor per dim. spacing: a number, one per dim, or coordinate tensors per dim.

    >>> import clgrad
    >>> clgrad.gradient(clgrad.tensor([1.0, 4.0, 9.0, 16.0]))[0].tolist()
    [3.0, 4.0, 6.0, 7.0]
    """
    if edge_order not in (1, 2):
        raise RuntimeError(f"torch.gradient only supports edge_order=1 and edge_order=2, got "
                           f"{edge_order}")
    dims = list(builtins.range(input.ndim)) if dim is None else \
        [dim] if isinstance(dim, numbers.Integral) else list(dim)
    dims = [d % input.ndim if input.ndim else d for d in dims]
    if isinstance(spacing, (numbers.Number, Tensor)) and not (
            isinstance(spacing, Tensor) and spacing.ndim == 1 and len(dims) == 1):
        spacing = [spacing] * len(dims)
    spacing = list(spacing)
    if len(spacing) != len(dims):
        raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar or a "
                           f"list of length {len(dims)}, got a list of length {len(spacing)}")
    x = input if input.is_floating_point() else input.to(dtypes.get_default_dtype())
    out = []
    for d, h in zip(dims, spacing):
        n = x.shape[d]
        if n < edge_order + 1:
            raise RuntimeError("torch.gradient expected each dimension size to be at least "
                               "edge_order+1")
        out.append(_gradient_1d(x, d, h, edge_order, n))
    return tuple(out)


def _gradient_1d(f, d, h, order, n):
    sl = (lambda a, b: _diff(f, d, a, b - a))              # f[a:b] along d
    if isinstance(h, Tensor) and h.ndim == 1:              # coordinates: numpy's non-uniform
        if h.shape[0] != n:
            raise RuntimeError(f"torch.gradient expected each tensor to be on the same device "
                               f"and of size {n} along dim {d}, got {h.shape[0]}")
        shape = [1] * f.ndim
        shape[d] = n - 1
        dx = (h[1:] - h[:-1]).to(f.dtype).reshape(shape)
        dx1, dx2 = _diff(dx, d, 0, n - 2), _diff(dx, d, 1, n - 2)
        a = -dx2 / (dx1 * (dx1 + dx2))
        b = (dx2 - dx1) / (dx1 * dx2)
        c = dx1 / (dx2 * (dx1 + dx2))
        inner = a * sl(0, n - 2) + b * sl(1, n - 1) + c * sl(2, n)
        first_dx, last_dx = _diff(dx, d, 0, 1), _diff(dx, d, n - 2, 1)
        if order == 1:
            first = (sl(1, 2) - sl(0, 1)) / first_dx
            last = (sl(n - 1, n) - sl(n - 2, n - 1)) / last_dx
        else:
            d1, d2 = first_dx, _diff(dx, d, 1, 1)
            first = (-(2 * d1 + d2) / (d1 * (d1 + d2)) * sl(0, 1)
                     + (d1 + d2) / (d1 * d2) * sl(1, 2) - d1 / (d2 * (d1 + d2)) * sl(2, 3))
            d1, d2 = _diff(dx, d, n - 3, 1), last_dx
            last = (d2 / (d1 * (d1 + d2)) * sl(n - 3, n - 2)
                    - (d2 + d1) / (d1 * d2) * sl(n - 2, n - 1)
                    + (2 * d2 + d1) / (d2 * (d1 + d2)) * sl(n - 1, n))
    else:
        h = float(h.item() if isinstance(h, Tensor) else h)
        inner = (sl(2, n) - sl(0, n - 2)) / (2 * h)
        if order == 1:
            first = (sl(1, 2) - sl(0, 1)) / h
            last = (sl(n - 1, n) - sl(n - 2, n - 1)) / h
        else:
            first = (-1.5 * sl(0, 1) + 2 * sl(1, 2) - 0.5 * sl(2, 3)) / h
            last = (0.5 * sl(n - 3, n - 2) - 2 * sl(n - 2, n - 1) + 1.5 * sl(n - 1, n)) / h
    return join.cat([first, inner, last], d)


def unravel_index(indices, shape):
    """The coordinates in an array of `shape` of flat (C order) indices: a tuple of tensors.

    >>> import clgrad
    >>> [t.tolist() for t in clgrad.unravel_index(clgrad.tensor([5, 7]), (2, 4))]
    [[1, 1], [1, 3]]
    """
    if not isinstance(indices, Tensor):
        indices = creation.tensor(indices)
    if indices.dtype.kind not in "iu" or indices.dtype is dtypes.bool_:
        raise TypeError(f"expected 'indices' to be integer dtype, but got {indices.dtype}")
    shape = (shape,) if isinstance(shape, numbers.Integral) else tuple(shape)
    if any(d < 0 for d in shape):
        raise ValueError(f"'shape' cannot have negative values, but got {shape}")
    n = math.prod(shape)
    if indices.numel() and bool(((indices < -n) | (indices >= n)).any()):
        raise ValueError(f"unravel_index: index out of bounds for shape {list(shape)}")
    flat = indices.long() % n if n else indices.long()     # negative indices count from the end
    out = []
    for d in reversed(shape):
        out.append(flat % d)
        flat = flat // d
    return tuple(reversed(out))


__all__ += ["unravel_index"]
FUNCTIONS = {n: globals()[n] for n in __all__}
METHODS = {"gcd": gcd, "gcd_": gcd_, "lcm": lcm, "lcm_": lcm_, "frexp": frexp,
           "nextafter": nextafter, "nextafter_": nextafter_, "histogram": histogram}
