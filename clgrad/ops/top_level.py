"""torch's top-level functions that compose existing ops: in-place forms (`clgrad.clamp_(x, ...)`),
predicates, creation helpers (`scalar_tensor`, `asarray`, `range`, the signal windows) and a few
integer and float utilities (`gcd`, `lcm`, `frexp`, `nextafter`, `isin`, `combinations`,
`histogram`, `gradient`, `frobenius_norm`, `nuclear_norm`).

No new kernels: each is written in clgrad ops, so what is differentiable in torch differentiates
here through those ops. Bit-level utilities (frexp, nextafter) work on integer views of the float
bits, so a device that flushes subnormals in float arithmetic still gets them right.
"""
import builtins
import itertools
import math
import numbers
import warnings

import numpy as np

from .. import dtypes
from ..tensor import Tensor
from . import creation, join, sort, views
from .pointwise import where
from ..autograd.function import Op

__all__ = ["fill", "scalar_tensor", "asarray", "range", "isin", "gcd", "gcd_", "lcm", "lcm_",
           "frexp", "nextafter", "nextafter_", "combinations", "histogram", "gradient",
           "hann_window", "hamming_window", "blackman_window", "bartlett_window",
           "kaiser_window", "frobenius_norm", "nuclear_norm", "is_storage", "is_distributed",
           "ldexp_", "empty_strided"]


# ---- torch's in-place top-level functions: the Tensor method, called as a function -------------
def _method_alias(name, method, example, result, summary=None):
    def fn(input, *args, **kwargs):
        return getattr(Tensor, method)(input, *args, **kwargs)   # bound by the face, later
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"{summary or name.rstrip('_') + ', in place'}: input.{method}(...) as a "
                  f"function.\n\n    >>> import clgrad\n    >>> {example}\n    {result}\n    ")
    return fn


_ALIASES = {
    "fill_": ("clgrad.fill_(clgrad.zeros(2), 3).tolist()", "[3.0, 3.0]", None),
    "zero_": ("clgrad.zero_(clgrad.ones(2)).tolist()", "[0.0, 0.0]", None),
    "clamp_": ("clgrad.clamp_(clgrad.tensor([-2.0, 0.5, 3.0]), -1, 1).tolist()",
               "[-1.0, 0.5, 1.0]", None),
    "clamp_min_": ("clgrad.clamp_min_(clgrad.tensor([-2.0, 3.0]), 0).tolist()", "[0.0, 3.0]",
                   None),
    "clamp_max_": ("clgrad.clamp_max_(clgrad.tensor([-2.0, 3.0]), 0).tolist()", "[-2.0, 0.0]",
                   None),
    "clip_": ("clgrad.clip_(clgrad.tensor([-2.0, 3.0]), max=1).tolist()", "[-2.0, 1.0]", None),
    "nan_to_num_": ("clgrad.nan_to_num_(clgrad.tensor([float('nan'), 1.0])).tolist()",
                    "[0.0, 1.0]", None),
    "deg2rad_": ("round(clgrad.deg2rad_(clgrad.tensor([180.0])).item(), 4)", "3.1416", None),
    "rad2deg_": ("round(clgrad.rad2deg_(clgrad.tensor([3.141592653589793])).item(), 3)",
                 "180.0", None),
    "sinc_": ("clgrad.sinc_(clgrad.tensor([0.0])).tolist()", "[1.0]", None),
    "logit_": ("clgrad.logit_(clgrad.tensor([0.5])).tolist()", "[0.0]", None),
    "xlogy_": ("clgrad.xlogy_(clgrad.tensor([0.0, 2.0]), 1.0).tolist()", "[0.0, 0.0]",
               None),
    "resize_as_": ("clgrad.resize_as_(clgrad.zeros(2), clgrad.zeros(1, 3)).shape",
                   "clgrad.Size([1, 3])", "resize input to the template's shape"),
    "as_strided_": ("clgrad.as_strided_(clgrad.arange(4.0), (2,), (2,)).tolist()",
                    "[0.0, 2.0]", "make input a strided view of its own storage"),
    "addmv_": ("clgrad.addmv_(clgrad.zeros(2), clgrad.eye(2), clgrad.ones(2)).tolist()",
               "[1.0, 1.0]", None),
    "is_inference": ("clgrad.is_inference(clgrad.zeros(1))", "False",
                     "whether input was made in inference mode"),
    "is_complex": ("clgrad.is_complex(clgrad.zeros(1))", "False",
                   "whether input's dtype is complex (clgrad has none)"),
    "unsafe_chunk": ("len(clgrad.unsafe_chunk(clgrad.zeros(4), 2))", "2",
                     "chunk (torch's form without its view-aliasing checks)"),
    "unsafe_split": ("[t.tolist() for t in clgrad.unsafe_split(clgrad.arange(3.0), 2)]",
                     "[[0.0, 1.0], [2.0]]", "split (torch's form without its aliasing checks)"),
    "unsafe_split_with_sizes": ("[t.numel() for t in clgrad.unsafe_split_with_sizes("
                                "clgrad.zeros(3), [1, 2])]", "[1, 2]",
                                "split_with_sizes (torch's form without its aliasing checks)"),
}
_ALIAS_FNS = {}
for _name, (_ex, _res, _summary) in _ALIASES.items():
    _fn = _method_alias(_name, _name.replace("unsafe_", ""), _ex, _res, _summary)
    _ALIAS_FNS[_name] = _fn
    globals()[_name] = _fn
__all__ += list(_ALIASES)


def ldexp_(input, other):
    """input * 2**other, in place (input keeps its floating dtype).

    >>> import clgrad
    >>> clgrad.ldexp_(clgrad.tensor([1.0, 3.0]), clgrad.tensor([2])).tolist()
    [4.0, 12.0]
    """
    if not input.is_floating_point():
        raise RuntimeError(f"ldexp can't be cast to the desired output type "
                           f"{input.dtype.name.capitalize()}")
    return input.mul_(2.0 ** (other.to(input.dtype) if isinstance(other, Tensor) else other))


def fill(input, value):
    """A new tensor of input's shape, dtype and device, every element value (differentiable in
    a 0-d tensor value; input's gradient is zero).

    >>> import clgrad
    >>> clgrad.fill(clgrad.zeros(2), 3).tolist()
    [3.0, 3.0]
    """
    return views.clone(input).fill_(value)


def is_storage(obj):
    """Whether obj is a storage object: clgrad keeps storages internal (no
    Tensor.untyped_storage), so only its own Storage class answers True.

    >>> import clgrad
    >>> clgrad.is_storage(clgrad.zeros(1))
    False
    """
    from ..runtime.memory import Storage
    return isinstance(obj, Storage)


def is_distributed(input):
    """False: a tensor is never split across processes here (as torch's dense tensors).

    >>> import clgrad
    >>> clgrad.is_distributed(clgrad.zeros(1))
    False
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"is_distributed(): argument 'input' must be Tensor, not "
                        f"{type(input).__name__}")
    return False


# ---- creation ------------------------------------------------------------------------------------
def scalar_tensor(s, *, dtype=None, layout=None, device=None, pin_memory=None,
                  requires_grad=False):
    """A 0-d tensor holding s, of the default float dtype unless dtype says otherwise.

    >>> import clgrad
    >>> t = clgrad.scalar_tensor(3); t.dtype, t.item()
    (clgrad.float32, 3.0)
    """
    if isinstance(s, Tensor):
        s = s.item()
    return creation.tensor(s, dtype=dtype or dtypes.get_default_dtype(), device=device,
                           requires_grad=requires_grad)


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=False):
    """obj as a tensor: a tensor is returned itself when dtype and device already match (copy=True
    forces a copy, copy=False refuses one); other data is copied to the device. OpenCL buffers
    cannot alias host memory, so copy=False on a numpy array or a sequence raises ValueError.

    >>> import clgrad
    >>> t = clgrad.zeros(2); clgrad.asarray(t) is t, clgrad.asarray([1, 2]).dtype
    (True, clgrad.int64)
    """
    if isinstance(obj, Tensor):
        dt = obj.dtype if dtype is None else dtypes.as_dtype(dtype)
        from ..runtime.device import get_device
        dev = obj._storage.device if device is None else get_device(device)
        if copy is False and dt is not obj.dtype:
            raise ValueError(f"can't alias tensor with dtype {obj.dtype} into dtype {dt}.")
        if copy is False and dev is not obj._storage.device:
            raise ValueError(f"can't alias tensor from device {obj.device} to "
                             f"{dev.torch_name if hasattr(dev, 'torch_name') else device}.")
        out = obj.to(device=device, dtype=dt)
        if copy and out is obj:
            out = views.clone(obj)
        if requires_grad:
            out.requires_grad_(True)
        return out
    if copy is False:
        raise ValueError("can't alias host memory into an OpenCL tensor: clgrad copies data to "
                         "the device (use copy=None or copy=True)")
    if dtype is None and isinstance(obj, np.ndarray) and obj.dtype == np.float64:
        dtype = dtypes.float64                       # numpy's own dtype is kept, as torch's
    return creation.tensor(obj, dtype=dtype, device=device, requires_grad=requires_grad)


def range(start=0, end=None, step=1, *, dtype=None, layout=None, device=None, pin_memory=None,
          requires_grad=False):
    """Deprecated in torch: start, start + step, ... up to end INCLUSIVE, of the default float
    dtype unless dtype says otherwise (use arange, which excludes end).

    >>> import clgrad, warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     clgrad.range(1, 4).tolist()
    [1.0, 2.0, 3.0, 4.0]
    """
    warnings.warn("torch.range is deprecated and will be removed in a future release because its "
                  "behavior is inconsistent with Python's range builtin. Instead, use "
                  "torch.arange, which produces values in [start, end).", UserWarning,
                  stacklevel=2)
    if end is None:
        start, end = 0, start
    if step == 0:
        raise RuntimeError("range: step must be nonzero")
    if (end - start) * step < 0:
        raise RuntimeError(f"range: upper bound and larger bound inconsistent with step sign "
                           f"(start={start}, end={end}, step={step})")
    n = int(math.floor((end - start) / step)) + 1
    dt = dtypes.get_default_dtype() if dtype is None else dtypes.as_dtype(dtype)
    vals = start + step * np.arange(n, dtype=np.float64)
    if dt.kind != "f":
        vals = np.trunc(vals).astype(np.int64) if dt is not dtypes.bool_ else vals != 0
    return creation.tensor(vals, dtype=dt, device=device, requires_grad=requires_grad)


def empty_strided(size, stride, *, dtype=None, layout=None, device=None, requires_grad=False,
                  pin_memory=False):
    """An uninitialised tensor with the given size and stride (over a storage just big enough).

    >>> import clgrad
    >>> clgrad.empty_strided((2, 3), (1, 2)).stride()
    (1, 2)
    """
    size, stride = tuple(size), tuple(stride)
    if len(size) != len(stride):
        raise RuntimeError(f"empty_strided: mismatch in length of strides and shape ({size} "
                           f"and {stride})")
    n = 0 if 0 in size else 1 + sum((s - 1) * st for s, st in zip(size, stride))
    base = creation.empty(n, dtype=dtype, device=device)
    out = views.as_strided(base, size, stride).detach()
    return out.requires_grad_(True) if requires_grad else out


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


# ---- deprecated norms (ATen keeps them for TorchScript) ------------------------------------------
def frobenius_norm(input, dim, keepdim=False):
    """sqrt of the sum of squares over dim (at most 2 dims): linalg.vector_norm(input, 2, dim).

    >>> import clgrad
    >>> clgrad.frobenius_norm(clgrad.full((2, 2), 2.0), (0, 1)).item()
    4.0
    """
    dims = (dim,) if isinstance(dim, numbers.Integral) else tuple(dim)
    if len(dims) > 2:
        raise RuntimeError(f"Expected at most 2 dimensions, but got {len(dims)} dimensions "
                           f"instead.")
    from ..linalg import vector_norm
    return vector_norm(input, 2, dims, keepdim)


def nuclear_norm(input, dim=None, keepdim=False):
    """The sum of singular values over two dims (default the last two):
    linalg.matrix_norm(input, "nuc", dim).

    >>> import clgrad
    >>> round(clgrad.nuclear_norm(clgrad.eye(3)).item(), 4)
    3.0
    """
    if isinstance(dim, bool):                              # nuclear_norm(input, keepdim)
        dim, keepdim = None, dim
    from ..linalg import matrix_norm
    return matrix_norm(input, "nuc", (-2, -1) if dim is None else tuple(dim), keepdim)



# ---- ATen's *_copy ops: the view op, then a copy (what functionalisation produces) --------------
def _clone_all(out):
    return tuple(views.clone(t) for t in out) if isinstance(out, (tuple, list)) else \
        views.clone(out)


def _slice(input, dim=0, start=None, end=None, step=1):
    return input[(slice(None),) * (dim % input.ndim) + (slice(start, end, step),)]


_COPIES = {
    # name: (the view, example, its result)
    "alias_copy": (lambda x: x, "clgrad.alias_copy(clgrad.ones(2)).tolist()", "[1.0, 1.0]"),
    "detach_copy": (lambda x: x.detach(), "clgrad.detach_copy(clgrad.ones(1)).requires_grad",
                    "False"),
    "as_strided_copy": (lambda x, size, stride, storage_offset=None:
                        x.as_strided(size, stride, storage_offset),
                        "clgrad.as_strided_copy(clgrad.arange(4.0), (2,), (2,)).tolist()",
                        "[0.0, 2.0]"),
    "diagonal_copy": (lambda x, offset=0, dim1=0, dim2=1: x.diagonal(offset, dim1, dim2),
                      "clgrad.diagonal_copy(clgrad.eye(2)).tolist()", "[1.0, 1.0]"),
    "expand_copy": (lambda x, size, *, implicit=False: x.expand(size),
                    "clgrad.expand_copy(clgrad.ones(1), [3]).is_contiguous()", "True"),
    "permute_copy": (lambda x, dims: x.permute(dims),
                     "clgrad.permute_copy(clgrad.zeros(2, 3), [1, 0]).shape",
                     "clgrad.Size([3, 2])"),
    "select_copy": (lambda x, dim, index: x.select(dim, index),
                    "clgrad.select_copy(clgrad.eye(2), 0, 1).tolist()", "[0.0, 1.0]"),
    "slice_copy": (_slice, "clgrad.slice_copy(clgrad.arange(5.0), 0, 1, 5, 2).tolist()",
                   "[1.0, 3.0]"),
    "split_copy": (lambda x, split_size, dim=0: x.split(split_size, dim),
                   "[t.tolist() for t in clgrad.split_copy(clgrad.arange(3.0), 2)]",
                   "[[0.0, 1.0], [2.0]]"),
    "split_with_sizes_copy": (lambda x, split_sizes, dim=0: x.split_with_sizes(split_sizes, dim),
                              "[t.numel() for t in clgrad.split_with_sizes_copy("
                              "clgrad.zeros(3), [1, 2])]", "[1, 2]"),
    "squeeze_copy": (lambda x, dim=None: x.squeeze() if dim is None else x.squeeze(dim),
                     "clgrad.squeeze_copy(clgrad.zeros(1, 2)).shape", "clgrad.Size([2])"),
    "t_copy": (lambda x: x.t(), "clgrad.t_copy(clgrad.zeros(2, 3)).shape", "clgrad.Size([3, 2])"),
    "transpose_copy": (lambda x, dim0, dim1: x.transpose(dim0, dim1),
                       "clgrad.transpose_copy(clgrad.zeros(2, 3), 0, 1).is_contiguous()", "True"),
    "unbind_copy": (lambda x, dim=0: x.unbind(dim),
                    "[t.tolist() for t in clgrad.unbind_copy(clgrad.eye(2))]",
                    "[[1.0, 0.0], [0.0, 1.0]]"),
    "unfold_copy": (lambda x, dimension, size, step: x.unfold(dimension, size, step),
                    "clgrad.unfold_copy(clgrad.arange(4.0), 0, 2, 2).tolist()",
                    "[[0.0, 1.0], [2.0, 3.0]]"),
    "unsqueeze_copy": (lambda x, dim: x.unsqueeze(dim),
                       "clgrad.unsqueeze_copy(clgrad.zeros(2), 0).shape", "clgrad.Size([1, 2])"),
    "view_copy": (lambda x, size: x.view(size) if isinstance(size, dtypes.dtype) else
                  x.view(*size) if isinstance(size, (tuple, list)) else x.view(size),
                  "clgrad.view_copy(clgrad.arange(4.0), [2, 2]).tolist()",
                  "[[0.0, 1.0], [2.0, 3.0]]"),
}


def _copy_op(name, view, example, result):
    def fn(input, *args, **kwargs):
        return _clone_all(view(input, *args, **kwargs))
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"{name[:-5]} as a new tensor (not a view): ATen's functional form.\n\n"
                  f"    >>> import clgrad\n    >>> {example}\n    {result}\n    ")
    return fn


for _name, _entry in _COPIES.items():
    globals()[_name] = _copy_op(_name, *_entry)
__all__ += list(_COPIES)


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


def norm_except_dim(v, pow=2, dim=0):
    """The pow-norm of v over every dim except dim, keeping dims (weight_norm's g); dim=-1:
    over all of v.

    >>> import clgrad
    >>> n = clgrad.norm_except_dim(clgrad.full((2, 3), 2.0), 2, 0)
    >>> n.shape, [round(v, 4) for v in n.flatten().tolist()]
    (clgrad.Size([2, 1]), [3.4641, 3.4641])
    """
    from ..linalg import vector_norm
    if dim == -1:
        return vector_norm(v, pow)
    dims = tuple(d for d in builtins.range(v.ndim) if d != dim % v.ndim)
    return vector_norm(v, pow, dims, keepdim=True)


def empty_permuted(size, physical_layout, *, dtype=None, layout=None, device=None,
                   requires_grad=False, pin_memory=False):
    """An uninitialised tensor of `size` whose memory holds its dims in physical_layout order
    (physical_layout[0] outermost).

    >>> import clgrad
    >>> clgrad.empty_permuted((2, 3, 4), (0, 2, 1)).stride()
    (12, 1, 3)
    """
    size, perm = tuple(size), tuple(physical_layout)
    if sorted(perm) != list(builtins.range(len(size))):
        raise RuntimeError(f"empty_permuted: physical_layout {list(perm)} is not a permutation "
                           f"of the {len(size)} dims of size {list(size)}")
    base = creation.empty(*[size[p] for p in perm], dtype=dtype, device=device)
    inv = [perm.index(d) for d in builtins.range(len(size))]
    out = base.permute(*inv)
    return out.requires_grad_(True) if requires_grad else out


__all__ += ["unravel_index", "norm_except_dim", "empty_permuted"]


# ---- modified Bessel functions: Cephes' Chebyshev expansions, as torch's (ATen/native/Math.h) ---
# Coefficients from the Cephes Math Library (3-clause BSD), as ATen uses them: exp(-x) I0(x) on
# [0, 8] and exp(-x) sqrt(x) I0(x) on (8, inf), the same for I1 (float32 uses the tails).
_I0_A = (-4.41534164647933937950E-18, 3.33079451882223809783E-17, -2.43127984654795469359E-16,
         1.71539128555513303061E-15, -1.16853328779934516808E-14, 7.67618549860493561688E-14,
         -4.85644678311192946090E-13, 2.95505266312963983461E-12, -1.72682629144155570723E-11,
         9.67580903537323691224E-11, -5.18979560163526290666E-10, 2.65982372468238665035E-9,
         -1.30002500998624804212E-8, 6.04699502254191894932E-8, -2.67079385394061173391E-7,
         1.11738753912010371815E-6, -4.41673835845875056359E-6, 1.64484480707288970893E-5,
         -5.75419501008210370398E-5, 1.88502885095841655729E-4, -5.76375574538582365885E-4,
         1.63947561694133579842E-3, -4.32430999505057594430E-3, 1.05464603945949983183E-2,
         -2.37374148058994688156E-2, 4.93052842396707084878E-2, -9.49010970480476444210E-2,
         1.71620901522208775349E-1, -3.04682672343198398683E-1, 6.76795274409476084995E-1)
_I0_B = (-7.23318048787475395456E-18, -4.83050448594418207126E-18, 4.46562142029675999901E-17,
         3.46122286769746109310E-17, -2.82762398051658348494E-16, -3.42548561967721913462E-16,
         1.77256013305652638360E-15, 3.81168066935262242075E-15, -9.55484669882830764870E-15,
         -4.15056934728722208663E-14, 1.54008621752140982691E-14, 3.85277838274214270114E-13,
         7.18012445138366623367E-13, -1.79417853150680611778E-12, -1.32158118404477131188E-11,
         -3.14991652796324136454E-11, 1.18891471078464383424E-11, 4.94060238822496958910E-10,
         3.39623202570838634515E-9, 2.26666899049817806459E-8, 2.04891858946906374183E-7,
         2.89137052083475648297E-6, 6.88975834691682398426E-5, 3.36911647825569408990E-3,
         8.04490411014108831608E-1)
_I1_A = (2.77791411276104639959E-18, -2.11142121435816608115E-17, 1.55363195773620046921E-16,
         -1.10559694773538630805E-15, 7.60068429473540693410E-15, -5.04218550472791168711E-14,
         3.22379336594557470981E-13, -1.98397439776494371520E-12, 1.17361862988909016308E-11,
         -6.66348972350202774223E-11, 3.62559028155211703701E-10, -1.88724975172282928790E-9,
         9.38153738649577178388E-9, -4.44505912879632808065E-8, 2.00329475355213526229E-7,
         -8.56872026469545474066E-7, 3.47025130813767847674E-6, -1.32731636560394358279E-5,
         4.78156510755005422638E-5, -1.61760815825896745588E-4, 5.12285956168575772895E-4,
         -1.51357245063125314899E-3, 4.15642294431288815669E-3, -1.05640848946261981558E-2,
         2.47264490306265168283E-2, -5.29459812080949914269E-2, 1.02643658689847095384E-1,
         -1.76416518357834055153E-1, 2.52587186443633654823E-1)
_I1_B = (7.51729631084210481353E-18, 4.41434832307170791151E-18, -4.65030536848935832153E-17,
         -3.20952592199342395980E-17, 2.96262899764595013876E-16, 3.30820231092092828324E-16,
         -1.88035477551078244854E-15, -3.81440307243700780478E-15, 1.04202769841288027642E-14,
         4.27244001671195135429E-14, -2.10154184277266431302E-14, -4.08355111109219731823E-13,
         -7.19855177624590851209E-13, 2.03562854414708950722E-12, 1.41258074366137813316E-11,
         3.25260358301548823856E-11, -1.89749581235054123450E-11, -5.58974346219658380687E-10,
         -3.83538038596423702205E-9, -2.63146884688951950684E-8, -2.51223623787020892529E-7,
         -3.88256480887769039346E-6, -1.10588938762623716291E-4, -9.76109749136146840777E-3,
         7.78576235018280120474E-1)


def _chbevl(y, coefs):
    """Clenshaw's recurrence for a Chebyshev series at y (Cephes' chbevl)."""
    b0, b1, b2 = y * 0 + coefs[0], y * 0, y * 0
    for c in coefs[1:]:
        b2, b1 = b1, b0
        b0 = y * b1 - b2 + c
    return 0.5 * (b0 - b2)


def _bessel(x, a, b):
    """exp(|x|) times the [0, 8] series (argument |x|/2 - 2) or, beyond 8, the (8, inf) series
    (argument 32/|x| - 2) over sqrt(|x|). Each branch sees a clamped argument, so the branch not
    taken stays finite and its zero gradient does not turn into NaN."""
    ax = x.abs()
    xa, xb = ax.clamp(max=8.0), ax.clamp(min=8.0)
    near = _chbevl(xa / 2 - 2, a)
    far = _chbevl(32.0 / xb - 2, b) / xb.sqrt()
    return ax.exp() * where(ax <= 8.0, near, far), xa


def _i1(x):
    short = x.dtype is not dtypes.float64             # float32: the tails, as ATen's float path
    v, _ = _bessel(x, _I1_A[12:] if short else _I1_A, _I1_B[18:] if short else _I1_B)
    # I1 is odd; the [0, 8] series is of I1(x)/x, so that branch takes x itself (smooth at 0,
    # where |x| and sign(x) would lose I1's derivative), the other the sign
    return where(x.abs() <= 8.0, v * x.clamp(-8.0, 8.0), v * x.sign())


class I0(Op):
    """I0, the modified Bessel function of the first kind of order 0; d/dx I0 = I1."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return _bessel(x, _I0_A, _I0_B)[0]

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * _i1(x)

    @staticmethod
    def jvp(args, tangents, out):
        return None if tangents[0] is None else tangents[0] * _i1(args[0])


def i0(input):
    """The modified Bessel function of the first kind of order 0, elementwise (integer inputs
    give the default float dtype; 16-bit floats compute in float32). Differentiable: I0' = I1.

    >>> import clgrad
    >>> [round(v, 4) for v in clgrad.i0(clgrad.tensor([0.0, 1.0, -2.0])).tolist()]
    [1.0, 1.2661, 2.2796]
    """
    x = input if input.is_floating_point() else input.to(dtypes.get_default_dtype())
    wide = x.dtype if x.dtype in (dtypes.float32, dtypes.float64) else dtypes.float32
    return I0.apply(x.to(wide)).to(x.dtype)


def i0_(input):
    """i0, in place.

    >>> import clgrad
    >>> x = clgrad.tensor([0.0]); clgrad.i0_(x) is x, round(x.item(), 5)
    (True, 1.0)
    """
    if not input.is_floating_point():
        raise RuntimeError(f"result type Float can't be cast to the desired output type "
                           f"{input.dtype.name.capitalize()}")
    return input.copy_(i0(input))


__all__ += ["i0", "i0_"]


def nonzero_static(input, *, size, fill_value=-1):
    """nonzero with a fixed number of rows: the first `size` indices, padded with fill_value.

    >>> import clgrad
    >>> clgrad.nonzero_static(clgrad.tensor([0, 1, 0, 2]), size=3).flatten().tolist()
    [1, 3, -1]
    """
    nz = input.nonzero()
    k = nz.shape[0]
    if k >= size:
        return nz[:size].contiguous()
    pad = creation.full((size - k, nz.shape[1]), fill_value, dtype=nz.dtype, device=nz.device)
    return join.cat([nz, pad], 0)


__all__ += ["nonzero_static"]

FUNCTIONS = {n: globals()[n] for n in __all__}
METHODS = {"gcd": gcd, "gcd_": gcd_, "lcm": lcm, "lcm_": lcm_, "frexp": frexp,
           "nextafter": nextafter, "nextafter_": nextafter_, "histogram": histogram,
           "ldexp_": ldexp_, "i0": i0, "i0_": i0_, "unsafe_chunk": _ALIAS_FNS["unsafe_chunk"],
           "unsafe_split": _ALIAS_FNS["unsafe_split"],
           "unsafe_split_with_sizes": _ALIAS_FNS["unsafe_split_with_sizes"]}
