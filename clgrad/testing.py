"""torch.testing: `assert_close` and `make_tensor`, for test files that use torch as their oracle.

The comparison follows torch's rules: tensors must agree in shape, device and dtype (unless
`check_device` / `check_dtype` is False), values are close when `|actual - expected| <= atol +
rtol * |expected|` with torch's default tolerances per dtype, NaNs are equal only with
`equal_nan=True`, Python numbers compare as numbers, and sequences and mappings compare element
by element. A failure raises AssertionError with torch's message ("Tensor-likes are not close!",
the mismatch count, the greatest differences and where they are).

    >>> import clgrad
    >>> clgrad.testing.assert_close(clgrad.tensor([1.0, 2.0]), clgrad.tensor([1.0, 2.0 + 1e-7]))
    >>> clgrad.testing.assert_close(clgrad.tensor([1.0, 2.0]), clgrad.tensor([1.0, 2.5]))
    Traceback (most recent call last):
    ...
    AssertionError: Tensor-likes are not close!
    <BLANKLINE>
    Mismatched elements: 1 / 2 (50.0%)
    Greatest absolute difference: 0.5 at index (1,) (up to 1e-05 allowed)
    Greatest relative difference: 0.2 at index (1,) (up to 1.3e-06 allowed)
"""
import collections.abc
import math
import warnings

import numpy as np
from .tensor import Tensor
from .ops.creation import as_tensor, tensor


# torch's default (rtol, atol) per dtype; every other dtype compares exactly
_PRECISIONS = {"float16": (1e-3, 1e-5), "bfloat16": (1.6e-2, 1e-5), "float32": (1.3e-6, 1e-5),
               "float64": (1e-7, 1e-7)}
_NUMBER_DTYPE = {bool: "bool", int: "int64", float: "float64", complex: "complex128"}

__all__ = ["assert_close", "assert_allclose", "make_tensor"]


def _tensor_type():
    return Tensor


def _name(dtype):
    return getattr(dtype, "name", str(dtype)).replace("clgrad.", "")


def _tolerances(names, rtol, atol):
    if (rtol is None) != (atol is None):
        raise ValueError("Both 'rtol' and 'atol' must be either specified or omitted, but got "
                         f"no {'rtol' if rtol is None else 'atol'}.")
    if rtol is not None:
        return rtol, atol
    pairs = [_PRECISIONS.get(n, (0.0, 0.0)) for n in names]
    return max(p[0] for p in pairs), max(p[1] for p in pairs)


def _diff_lines(equal, abs_diff, abs_idx, atol, rel_diff, rel_idx, rtol):
    def line(kind, diff, idx, tol):
        text = f"{kind.title()} difference: {diff}" if idx is None else \
            f"Greatest {kind} difference: {diff} at index {idx}"
        return text + ("" if equal else f" (up to {tol} allowed)")
    return [line("absolute", abs_diff, abs_idx, atol), line("relative", rel_diff, rel_idx, rtol)]


def _scalar_message(actual, expected, rtol, atol):
    abs_diff = abs(actual - expected)
    rel_diff = math.inf if expected == 0 else abs_diff / abs(expected)
    equal = rtol == 0 and atol == 0
    lines = [f"Scalars are not {'equal' if equal else 'close'}!", "",
             f"Expected {expected} but got {actual}."]
    return "\n".join(lines + _diff_lines(equal, abs_diff, None, atol, rel_diff, None, rtol))


class _Mismatch(Exception):
    def __init__(self, exc, msg, where=()):
        super().__init__(msg)
        self.exc, self.msg, self.where = exc, msg, where


def _compare_numbers(actual, expected, rtol, atol, equal_nan, check_dtype):
    if check_dtype and type(actual) is not type(expected):
        raise _Mismatch(AssertionError, f"The (d)types do not match: {type(actual)} != "
                                        f"{type(expected)}.")
    if actual == expected:
        return
    if equal_nan and _isnan(actual) and _isnan(expected):
        return
    rtol, atol = _tolerances([_NUMBER_DTYPE[type(actual)], _NUMBER_DTYPE[type(expected)]],
                             rtol, atol)
    diff = abs(actual - expected)
    if math.isfinite(diff) and diff <= atol + rtol * abs(expected):
        return
    raise _Mismatch(AssertionError, _scalar_message(actual, expected, rtol, atol))


def _isnan(x):
    return isinstance(x, (float, complex)) and x != x


def _host(t):
    """A tensor's values as a numpy array that keeps its kind (bfloat16 read as float32)."""
    return np.asarray(t.detach().cpu().numpy())


def _compare_tensors(actual, expected, rtol, atol, equal_nan, check_device, check_dtype,
                     check_stride):
    def mismatch(attr, a, e):
        raise _Mismatch(AssertionError,
                        f"The values for attribute '{attr}' do not match: {a} != {e}.")
    if tuple(actual.shape) != tuple(expected.shape):
        mismatch("shape", actual.shape, expected.shape)
    if check_stride and actual.stride() != expected.stride():
        mismatch("stride()", actual.stride(), expected.stride())
    if check_device and actual.device != expected.device:
        mismatch("device", actual.device, expected.device)
    if check_dtype and actual.dtype != expected.dtype:
        mismatch("dtype", actual.dtype, expected.dtype)
    rtol, atol = _tolerances([_name(actual.dtype), _name(expected.dtype)], rtol, atol)
    a, e = _host(actual), _host(expected)
    if a.dtype == np.bool_ and e.dtype == np.bool_:
        a, e = a.astype(np.int64), e.astype(np.int64)
    floating = np.issubdtype(a.dtype, np.inexact) or np.issubdtype(e.dtype, np.inexact)
    a = a.astype(np.float64 if floating else np.int64)
    e = e.astype(np.float64 if floating else np.int64)
    with np.errstate(invalid="ignore", over="ignore"):
        close = np.isclose(a, e, rtol=rtol, atol=atol, equal_nan=equal_nan) if floating else \
            np.abs(a - e) <= atol + rtol * np.abs(e)
        if floating:                   # an infinity matches only the same infinity (as torch)
            close |= (a == e)
    if close.all():
        return
    if a.ndim == 0:
        raise _Mismatch(AssertionError, _scalar_message(a.item(), e.item(), rtol, atol))
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        abs_diff = np.abs(a - e).astype(np.float64)
        abs_diff[close] = 0
        rel_diff = abs_diff / np.abs(e)
        rel_diff[close] = 0
    abs_at = int(np.argmax(abs_diff))          # a NaN is the greatest, as torch.max has it
    rel_at = int(np.argmax(rel_diff))
    n, bad = close.size, int((~close).sum())
    equal = rtol == 0 and atol == 0

    def idx(flat):
        return tuple(int(i) for i in np.unravel_index(flat, close.shape))

    def value(x):
        return x.item() if floating else int(x)
    lines = [f"Tensor-likes are not {'equal' if equal else 'close'}!", "",
             f"Mismatched elements: {bad} / {n} ({bad / n:.1%})"]
    lines += _diff_lines(equal, value(abs_diff.flat[abs_at]), idx(abs_at), atol,
                         rel_diff.flat[rel_at].item(), idx(rel_at), rtol)
    raise _Mismatch(AssertionError, "\n".join(lines))


def _compare(actual, expected, where, opts):
    Tensor = _tensor_type()
    seq = collections.abc.Sequence
    if isinstance(actual, seq) and isinstance(expected, seq) and \
            not isinstance(actual, str) and not isinstance(expected, str):
        if len(actual) != len(expected):
            raise _Mismatch(AssertionError, f"The length of the sequences mismatch: "
                                            f"{len(actual)} != {len(expected)}", where)
        for i, (a, e) in enumerate(zip(actual, expected)):
            _compare(a, e, where + (i,), opts)
        return
    mapping = collections.abc.Mapping
    if isinstance(actual, mapping) and isinstance(expected, mapping):
        ka, ke = set(actual), set(expected)
        if ka != ke:
            raise _Mismatch(AssertionError,
                            "The keys of the mappings do not match:\n"
                            f"Missing keys in the actual mapping: {sorted(ke - ka)}\n"
                            f"Additional keys in the actual mapping: {sorted(ka - ke)}", where)
        try:
            keys = sorted(ka)
        except TypeError:
            keys = list(ka)
        for k in keys:
            _compare(actual[k], expected[k], where + (k,), opts)
        return
    try:
        if actual is None or expected is None:
            if not (actual is None and expected is None):
                raise _Mismatch(AssertionError, f"None mismatch: {actual} is not {expected}")
            return
        if isinstance(actual, (bool, np.bool_)) and isinstance(expected, (bool, np.bool_)):
            if bool(actual) is not bool(expected):
                raise _Mismatch(AssertionError,
                                f"Booleans mismatch: {bool(actual)} is not {bool(expected)}")
            return
        numbers = (int, float, complex, np.number)
        if isinstance(actual, numbers) and isinstance(expected, numbers) and \
                not isinstance(actual, bool) and not isinstance(expected, bool):
            a = actual.item() if isinstance(actual, np.number) else actual
            e = expected.item() if isinstance(expected, np.number) else expected
            _compare_numbers(a, e, opts["rtol"], opts["atol"], opts["equal_nan"],
                             opts["check_dtype"])
            return
        related = isinstance(actual, type(expected)) or isinstance(expected, type(actual))
        if not related or (not opts["allow_subclasses"] and type(actual) is not type(expected)):
            raise _Mismatch(TypeError, "No comparison pair was able to handle inputs of type "
                                       f"{type(actual)} and {type(expected)}.")
        if not isinstance(actual, Tensor):
            try:
                actual, expected = as_tensor(actual), as_tensor(expected)
            except Exception:
                raise _Mismatch(TypeError, "No comparison pair was able to handle inputs of "
                                           f"type {type(actual)} and {type(expected)}.") from None
        _compare_tensors(actual, expected, opts["rtol"], opts["atol"], opts["equal_nan"],
                         opts["check_device"], opts["check_dtype"], opts["check_stride"])
    except _Mismatch as m:
        m.where = where
        raise


def assert_close(actual, expected, *, allow_subclasses=True, rtol=None, atol=None,
                 equal_nan=False, check_device=True, check_dtype=True, check_layout=True,
                 check_stride=False, msg=None):
    """Assert that `actual` and `expected` are close, as torch.testing.assert_close.

    >>> import clgrad
    >>> clgrad.testing.assert_close({"w": clgrad.ones(2)}, {"w": clgrad.ones(2)})
    >>> clgrad.testing.assert_close(1.0, 1.0 + 1e-9)
    """
    __tracebackhide__ = True
    opts = dict(allow_subclasses=allow_subclasses, rtol=rtol, atol=atol, equal_nan=equal_nan,
                check_device=check_device, check_dtype=check_dtype, check_stride=check_stride)
    try:
        _compare(actual, expected, (), opts)
    except _Mismatch as m:
        text = m.msg
        if m.where:
            text += "\n\nThe failure occurred for item " + "".join(f"[{w!r}]" for w in m.where)
        if msg is not None:
            text = msg(text) if callable(msg) else msg
        raise m.exc(text) from None


def assert_allclose(actual, expected, rtol=None, atol=None, equal_nan=True, msg=""):
    """torch.testing.assert_allclose (deprecated in torch since 1.12): looser defaults, dtypes
    not checked.

    >>> import clgrad, warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     clgrad.testing.assert_allclose(clgrad.tensor([1.0]), [1.00001])
    """
    warnings.warn("`torch.testing.assert_allclose()` is deprecated since 1.12 and will be removed "
                  "in a future release. Please use `torch.testing.assert_close()` instead.",
                  FutureWarning, stacklevel=2)
    Tensor = _tensor_type()
    if not isinstance(actual, Tensor):
        actual = tensor(actual)
    if not isinstance(expected, Tensor):
        expected = tensor(expected, dtype=actual.dtype)
    if rtol is None and atol is None:
        loose = {"float16": (1e-3, 1e-3), "float32": (1e-4, 1e-5), "float64": (1e-5, 1e-8)}
        pairs = [loose.get(_name(t.dtype), (0.0, 0.0)) for t in (actual, expected)]
        rtol, atol = max(p[0] for p in pairs), max(p[1] for p in pairs)
    assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan, check_dtype=False,
                 msg=msg or None)


def make_tensor(*shape, dtype, device=None, low=None, high=None, requires_grad=False,
                noncontiguous=False, exclude_zero=False, memory_format=None):
    """A tensor of `shape` filled with values drawn uniformly from [low, high), as
    torch.testing.make_tensor (defaults: [-9, 9] for numbers, [0, 10) for unsigned, {False,
    True} for bool).

    >>> import clgrad
    >>> t = clgrad.testing.make_tensor(2, 3, dtype=clgrad.float32, low=-1, high=1)
    >>> t.shape, bool((t.abs() <= 1).all())
    (clgrad.Size([2, 3]), True)
    """
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    name = _name(dtype)
    rng = np.random.default_rng()
    if name == "bool":
        values = rng.integers(0, 2, size=shape).astype(bool)
    else:
        lo_default, hi_default = (0, 10) if name == "uint8" else (-9, 9)
        lo = lo_default if low is None else low
        hi = hi_default if high is None else high
        if lo > hi:
            raise ValueError(f"make_tensor: low must be less than or equal to high, but got "
                             f"low={lo} and high={hi}")
        if getattr(dtype, "is_floating_point", False):
            values = rng.uniform(lo, hi, size=shape)
            if exclude_zero:
                values[values == 0] = np.finfo(np.float32).eps
        else:
            lo_i, hi_i = math.ceil(lo), math.floor(hi)
            values = rng.integers(lo_i, max(hi_i, lo_i + 1), size=shape)
            if exclude_zero:
                values[values == 0] = 1 if hi_i > 1 else -1
    t = tensor(values, dtype=dtype, device=device)
    if noncontiguous and t.numel() > 1:
        wide = tensor(np.repeat(values[..., None], 2, axis=-1), dtype=dtype, device=device)
        t = wide[..., 0]
    if requires_grad:
        t.requires_grad_(True)
    return t
