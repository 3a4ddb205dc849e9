"""Making tensors: from host data, filled, ranges, identity, and random (Philox, so every device
draws the same numbers for the same seed)."""
import math
import numbers

import numpy as np

from .. import dtypes
from ..runtime import recording as _recording
from ..runtime.device import get_device
from ..kernels.copy import arange_raw, linspace_raw  # noqa: F401 (arange_raw: ops import it here)
from ..kernels.random import draw_raw, random_bits_raw
from ..tensor import Tensor, empty_tensor, numel_of, real_view, upload
from ._base import (check_fits, check_fp64, check_no_internal_overlap, copy_into, fill_raw,
                    full_raw, scalar_for, view_raw)
from .view_geometry import _shape_arg
from .inplace import raw_inplace


def _finish(t, requires_grad):
    if requires_grad:
        t.requires_grad_(True)
    return t


def _dev(device):
    return get_device(device)


def _dtype_or(dtype, default):
    return default if dtype is None else dtypes.as_dtype(dtype)


def _host_array(data):
    """numpy array and the dtype torch would infer for data."""
    if isinstance(data, Tensor):
        return data.detach().numpy(force=True) if data._dtype is not dtypes.bfloat16 else \
            data._read_host(), data._dtype
    if isinstance(data, np.ndarray):
        return data, dtypes.from_numpy_dtype(data.dtype)
    if isinstance(data, (np.generic,)):
        a = np.asarray(data)
        return a, dtypes.from_numpy_dtype(a.dtype)
    try:
        arr = np.asarray(_unwrap(data))
    except ValueError:
        raise ValueError("tensor(): the nested sequences have different lengths (every list at a "
                         "given depth must have the same length)") from None
    if arr.dtype == object:
        raise TypeError(f"can't build a tensor from {type(data).__name__} data with mixed or "
                        f"ragged contents")
    if arr.dtype.kind == "f":
        return arr, dtypes.get_default_dtype()
    if arr.dtype.kind in "iu":
        return arr, dtypes.int64
    if arr.dtype.kind == "b":
        return arr, dtypes.bool_
    if arr.dtype.kind == "c":
        return arr, dtypes.default_complex()
    raise TypeError(f"can't build a tensor from data of type {arr.dtype}")


def _unwrap(data):
    if isinstance(data, Tensor):
        return data.item() if data.numel() == 1 and not data._shape else \
            data.detach().numpy(force=True).tolist()
    if isinstance(data, (list, tuple)):
        return [_unwrap(d) for d in data]
    return data


def tensor(data, dtype=None, device=None, requires_grad=False, pin_memory=False):
    """A tensor holding a copy of `data` (nested lists, numbers, numpy arrays, tensors).

    >>> import clgrad
    >>> clgrad.tensor([[1, 2], [3, 4]]).dtype, clgrad.tensor(2.5).dtype
    (clgrad.int64, clgrad.float32)
    """
    arr, inferred = _host_array(data)
    dt = _dtype_or(dtype, inferred)
    if inferred.kind == "c" and dt.kind != "c" and not isinstance(data, Tensor):
        raise TypeError("must be real number, not complex")        # torch's, for Python data
    dev = _dev(device if device is not None else
               (data.device if isinstance(data, Tensor) else None))
    check_fp64(dt, dev)
    if isinstance(data, Tensor) and data._dtype is dtypes.bfloat16:
        t = empty_tensor(data._shape, dtypes.bfloat16, dev)
        copy_into(t, data)
        if dt is not dtypes.bfloat16:
            t = _cast(t, dt)
        return _finish(t, requires_grad)
    if dt is dtypes.bool_:
        arr = arr.astype(bool)
    return _finish(upload(np.asarray(arr), dt, dev), requires_grad)


def _cast(t, dt):
    out = empty_tensor(t._shape, dt, t._storage.device)
    return copy_into(out, t)


def as_tensor(data, dtype=None, device=None):
    if isinstance(data, Tensor) and (dtype is None or dtypes.as_dtype(dtype) is data._dtype):
        return data
    return tensor(data, dtype=dtype, device=device)


def from_numpy(array):
    """A tensor with a copy of a numpy array (same dtype; device memory is separate).

    >>> import clgrad, numpy as np
    >>> clgrad.from_numpy(np.arange(3, dtype=np.int32)).dtype
    clgrad.int32
    """
    if not isinstance(array, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(array).__name__})")
    dt = dtypes.from_numpy_dtype(array.dtype)
    return upload(array, dt, _dev(None))


def _size_arg(op, size, kw):
    """The shape of a creation op taking `*size`: given positionally, or as torch's `size=`
    keyword (a TypeError when both are given, as torch's)."""
    if "size" in kw:
        if size:
            raise TypeError(f"{op}() got multiple values for argument 'size'")
        size = (kw.pop("size"),)
    return _shape_arg(size)


def empty(*size, dtype=None, device=None, requires_grad=False, **kw):
    """A tensor with unspecified contents.

    >>> import clgrad
    >>> clgrad.empty(2, 3).shape, clgrad.empty(size=(2, 3)).shape
    (clgrad.Size([2, 3]), clgrad.Size([2, 3]))
    """
    shape = _size_arg("empty", size, kw)
    _check_shape(shape)
    dt = _dtype_or(dtype, dtypes.get_default_dtype())
    dev = _dev(device)
    check_fp64(dt, dev)
    return _finish(empty_tensor(shape, dt, dev), requires_grad)


def _check_shape(shape):
    for s in shape:
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: "
                               f"{list(shape)}")


def full(size, fill_value, *, dtype=None, device=None, requires_grad=False, **kw):
    """A tensor of `size` filled with `fill_value` (dtype from the value unless given).

    >>> import clgrad
    >>> clgrad.full((2,), 7).tolist()
    [7, 7]
    """
    shape = _shape_arg((size,) if isinstance(size, int) else size)
    _check_shape(shape)
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    dt = _dtype_or(dtype, dtypes.scalar_dtype(fill_value))
    check_fits(fill_value, dt)
    return _finish(full_raw(shape, fill_value, dt, _dev(device)), requires_grad)


def zeros(*size, dtype=None, device=None, requires_grad=False, **kw):
    """A tensor of zeros.

    >>> import clgrad
    >>> clgrad.zeros(2).tolist()
    [0.0, 0.0]
    """
    shape = _size_arg("zeros", size, kw)
    _check_shape(shape)
    dt = _dtype_or(dtype, dtypes.get_default_dtype())
    return _finish(full_raw(shape, 0, dt, _dev(device)), requires_grad)


def ones(*size, dtype=None, device=None, requires_grad=False, **kw):
    """A tensor of ones.

    >>> import clgrad
    >>> clgrad.ones(2, dtype=clgrad.int32).tolist()
    [1, 1]
    """
    shape = _size_arg("ones", size, kw)
    _check_shape(shape)
    dt = _dtype_or(dtype, dtypes.get_default_dtype())
    return _finish(full_raw(shape, 1, dt, _dev(device)), requires_grad)


def _like(t, dtype, device):
    return (_dtype_or(dtype, t._dtype),
            t._storage.device if device is None else _dev(device))


def empty_like(t, *, dtype=None, device=None, requires_grad=False, **kw):
    dt, dev = _like(t, dtype, device)
    return _finish(empty_tensor(t._shape, dt, dev), requires_grad)


def zeros_like(t, *, dtype=None, device=None, requires_grad=False, **kw):
    """Zeros of t's shape, dtype and device.

    >>> import clgrad
    >>> clgrad.zeros_like(clgrad.ones(2, 2)).sum().item()
    0.0
    """
    dt, dev = _like(t, dtype, device)
    return _finish(full_raw(t._shape, 0, dt, dev), requires_grad)


def ones_like(t, *, dtype=None, device=None, requires_grad=False, **kw):
    """Ones of t's shape, dtype and device."""
    dt, dev = _like(t, dtype, device)
    return _finish(full_raw(t._shape, 1, dt, dev), requires_grad)


def full_like(t, fill_value, *, dtype=None, device=None, requires_grad=False, **kw):
    """fill_value in t's shape, dtype and device."""
    dt, dev = _like(t, dtype, device)
    return _finish(full_raw(t._shape, fill_value, dt, dev), requires_grad)


def arange(start, end=None, step=1, *, dtype=None, device=None, requires_grad=False, **kw):
    """Values from start (0) up to end, step apart; int64 unless a bound or step is a float.

    >>> import clgrad
    >>> clgrad.arange(1, 2, 0.25).tolist()
    [1.0, 1.25, 1.5, 1.75]
    """
    if end is None:
        start, end = 0, start
    vals = [v.item() if isinstance(v, Tensor) else v for v in (start, end, step)]
    start, end, step = vals
    if step == 0:
        raise RuntimeError("step must be nonzero")
    is_float = any(isinstance(v, float) for v in vals)
    dt = _dtype_or(dtype, dtypes.get_default_dtype() if is_float else dtypes.int64)
    import math
    n = math.ceil((end - start) / step)
    if (end - start) * step < 0 and n > 0:
        raise RuntimeError("upper bound and larger bound inconsistent with step sign")
    n = max(0, n)
    dev = _dev(device)
    check_fp64(dt, dev)
    return _finish(arange_raw(n, dt, dev, start, step), requires_grad)


def linspace(start, end, steps, *, dtype=None, device=None, requires_grad=False, **kw):
    """`steps` evenly spaced values from start to end inclusive.

    >>> import clgrad
    >>> clgrad.linspace(0, 1, 5).tolist()
    [0.0, 0.25, 0.5, 0.75, 1.0]
    """
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    dt = _dtype_or(dtype, dtypes.get_default_dtype())
    dev = _dev(device)
    check_fp64(dt, dev)
    out = empty_tensor((steps,), dt, dev)
    if steps:
        if dt.kind != "f":
            vals = np.linspace(start, end, steps)
            return _finish(upload(vals.astype(np.int64) if dt is not dtypes.bool_ else vals != 0,
                                  dt, dev), requires_grad)
        step = (end - start) / (steps - 1) if steps > 1 else 0.0
        if steps == 1:
            end = start
        linspace_raw(out, start, end, step)
    return _finish(out, requires_grad)


def eye(n, m=None, *, dtype=None, device=None, requires_grad=False, **kw):
    """The n x m identity matrix.

    >>> import clgrad
    >>> clgrad.eye(2).tolist()
    [[1.0, 0.0], [0.0, 1.0]]
    """
    m = n if m is None else m
    dt = _dtype_or(dtype, dtypes.get_default_dtype())
    out = full_raw((n, m), 0, dt, _dev(device))
    k = min(n, m)
    if k:
        fill_raw(view_raw(out, (k,), (m + 1,), 0), 1)
    return _finish(out, requires_grad)


# ---- random -----------------------------------------------------------------------------------
class Generator:
    """A Philox stream: a seed and how many numbers were drawn from it.

    >>> import clgrad
    >>> g = clgrad.Generator().manual_seed(3)
    >>> a = clgrad.rand(2, generator=g); _ = g.manual_seed(3)
    >>> a.tolist() == clgrad.rand(2, generator=g).tolist()
    True
    """

    def __init__(self, device=None):
        self.device = device
        self._seed = 67280421310721
        self._offset = 0

    def manual_seed(self, seed):
        seed = int(seed)
        self._seed = seed & 0xFFFFFFFFFFFFFFFF
        self._offset = 0
        return self

    def seed(self):
        import random as _random
        s = _random.SystemRandom().getrandbits(63)
        self.manual_seed(s)
        return s

    def initial_seed(self):
        return self._seed

    def get_state(self):
        return tensor(np.array([self._seed & 0x7FFFFFFFFFFFFFFF, self._seed >> 63, self._offset],
                               dtype=np.int64))

    def set_state(self, state):
        a = state.tolist() if isinstance(state, Tensor) else list(state)
        self._seed = (int(a[0]) | (int(a[1]) << 63)) & 0xFFFFFFFFFFFFFFFF
        self._offset = int(a[2])
        return self

    def take(self, n):
        """(seed, offset) for n draws, and the counter moved past them. While a compiled step
        records, the offset is marked so that each replay draws anew (runtime/recording.py)."""
        off = self._offset
        self._offset += n
        if _recording.active is not None:
            off = _recording.philox_offset(self, off)
        return self._seed, off


default_generator = Generator()


def manual_seed(seed):
    """Seed the default generator: the same seed gives the same numbers on every device.

    >>> import clgrad
    >>> _ = clgrad.manual_seed(0); a = clgrad.rand(3)
    >>> _ = clgrad.manual_seed(0); a.tolist() == clgrad.rand(3).tolist()
    True
    """
    return default_generator.manual_seed(seed)


def seed():
    return default_generator.seed()


def initial_seed():
    return default_generator.initial_seed()


def get_rng_state():
    return default_generator.get_state()


def set_rng_state(state):
    default_generator.set_state(state)


def _draw(kernel, t, generator, *params):
    check_no_internal_overlap(t)
    n = numel_of(t._shape)
    if n == 0:
        return t
    seed, off = (generator or default_generator).take(n)
    return draw_raw(kernel, t, seed, off, *params)


def _float_dtype(dtype, op):
    dt = _dtype_or(dtype, dtypes.get_default_dtype())
    if dt.kind not in "fc":
        raise RuntimeError(f"\"{op}\" not implemented for '{dt.name}'")
    return dt


def rand(*size, generator=None, dtype=None, device=None, requires_grad=False, **kw):
    """Uniform numbers in [0, 1).

    >>> import clgrad
    >>> bool(((clgrad.rand(100) >= 0) & (clgrad.rand(100) < 1)).all())
    True
    """
    dt = _float_dtype(dtype, "uniform")
    t = empty_tensor(_size_arg("rand", size, kw), dt, _dev(device))
    check_fp64(dt, t._storage.device)
    # complex: both parts uniform in [0, 1), drawn as the real view (torch's draw)
    _draw("uniform", real_view(t) if dt.kind == "c" else t, generator, 0.0, 1.0)
    return _finish(t, requires_grad)


def randn(*size, generator=None, dtype=None, device=None, requires_grad=False, **kw):
    """Standard normal numbers.

    >>> import clgrad
    >>> clgrad.randn(2, 3).shape
    clgrad.Size([2, 3])
    """
    dt = _float_dtype(dtype, "normal")
    t = empty_tensor(_size_arg("randn", size, kw), dt, _dev(device))
    check_fp64(dt, t._storage.device)
    if dt.kind == "c":
        # torch's complex normal: each part normal with variance 1/2 (E|z|^2 = 1), drawn as the
        # real view
        _draw("normal", real_view(t), generator, 0.0, math.sqrt(0.5))
        return _finish(t, requires_grad)
    return _finish(_draw("normal", t, generator, 0.0, 1.0), requires_grad)


def randint(low=None, high=None, size=None, *, generator=None, dtype=None, device=None,
            requires_grad=False, **kw):
    """Integers uniform in [low, high).

    >>> import clgrad
    >>> x = clgrad.randint(0, 3, (50,))
    >>> x.dtype, bool(((x >= 0) & (x < 3)).all()), clgrad.randint(high=3, size=(2,)).shape
    (clgrad.int64, True, clgrad.Size([2]))
    """
    if size is None:
        if isinstance(high, (tuple, list)):
            low, high, size = 0, low, high
        else:
            raise TypeError("randint() missing required argument 'size'")
    if high is None:
        low, high = 0, low
    if low is None:
        low = 0
    if high is None:
        raise TypeError("randint() missing required argument 'high'")
    if high <= low:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= "
                           f"to={high}")
    dt = _dtype_or(dtype, dtypes.int64)
    t = empty_tensor(_shape_arg((size,) if isinstance(size, int) else size), dt, _dev(device))
    return _finish(_draw("randint", t, generator, int(low), int(high - low)), requires_grad)


def rand_like(t, *, dtype=None, device=None, requires_grad=False, **kw):
    dt, dev = _like(t, dtype, device)
    return rand(*t._shape, dtype=dt, device=dev, requires_grad=requires_grad)


def randn_like(t, *, dtype=None, device=None, requires_grad=False, **kw):
    dt, dev = _like(t, dtype, device)
    return randn(*t._shape, dtype=dt, device=dev, requires_grad=requires_grad)


def randint_like(t, low, high=None, *, dtype=None, device=None, **kw):
    dt, dev = _like(t, dtype, device)
    return randint(low, high, t._shape, dtype=dt, device=dev)


def uniform_(t, a=0.0, b=1.0, generator=None):
    """Fill t in place with uniform numbers in [a, b) (both parts of a complex t)."""
    def fill():
        _draw("uniform", real_view(t) if t._dtype.kind == "c" else t, generator, float(a),
              float(b))
        return t
    return raw_inplace(t, fill)


def normal_(t, mean=0.0, std=1.0, generator=None):
    """Fill t in place with normal numbers (complex: torch's complex normal, each part with
    variance std^2 / 2)."""
    if t._dtype.kind == "c":
        mean = complex(mean)
        if mean.imag:
            raise RuntimeError("normal_: a complex mean is not supported")
        def fill():
            _draw("normal", real_view(t), generator, mean.real, float(std) * math.sqrt(0.5))
            return t
        return raw_inplace(t, fill)
    return raw_inplace(t, lambda: _draw("normal", t, generator, float(mean), float(std)))


def bernoulli_(t, p=0.5, generator=None):
    return raw_inplace(t, lambda: _draw("bernoulli", t, generator, float(p)))


def random_(t, low=0, high=None, generator=None):
    if high is None:
        low, high = 0, low if low else 2 ** 24
    return raw_inplace(t, lambda: _draw("randint", t, generator, int(low), int(high - low)))


def _transformed_uniform_(t, generator, transform):
    """Fill t in place with transform(u) of uniform draws u in [0, 1), computed in float32 or
    float64 and cast to t's dtype (the inverse-CDF samplers below)."""
    work = dtypes.float64 if t._dtype is dtypes.float64 else dtypes.float32

    def write():
        u = _draw("uniform", empty_tensor(t._shape, work, t._storage.device), generator, 0.0, 1.0)
        copy_into(t, transform(u))
    return raw_inplace(t, write)


def exponential_(t, lambd=1.0, *, generator=None):
    """Fill t in place with exponential draws of rate lambd: -log(1 - u) / lambd.

    >>> import clgrad
    >>> bool((clgrad.empty(100).exponential_(2.0) >= 0).all())
    True
    """
    if t._dtype.kind != "f":
        raise RuntimeError(f"Exponential distribution is a continuous probability distribution. "
                           f"dtype must be a floating point but you specified {t._dtype}")
    if not lambd > 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd}")
    return _transformed_uniform_(t, generator, lambda u: (-u).log1p() * (-1.0 / lambd))


def cauchy_(t, median=0.0, sigma=1.0, *, generator=None):
    """Fill t in place with Cauchy draws: median + sigma * tan(pi * (u - 1/2)).

    >>> import clgrad
    >>> clgrad.empty(3).cauchy_().shape
    clgrad.Size([3])
    """
    if t._dtype.kind != "f":
        raise RuntimeError(f"Cauchy distribution is a continuous probability distribution. "
                           f"dtype must be a floating point but you specified {t._dtype}")
    if not sigma > 0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={sigma}")
    return _transformed_uniform_(t, generator,
                                 lambda u: ((u - 0.5) * math.pi).tan() * sigma + median)


def log_normal_(t, mean=1.0, std=2.0, *, generator=None):
    """Fill t in place with exp of normal draws of the given mean and std.

    >>> import clgrad
    >>> bool((clgrad.empty(50).log_normal_() > 0).all())
    True
    """
    if t._dtype.kind != "f":
        raise RuntimeError(f"log_normal_ not implemented for '{dtypes.TORCH_NAMES[t._dtype]}'")
    if not std > 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std}")
    work = dtypes.float64 if t._dtype is dtypes.float64 else dtypes.float32

    def write():
        z = _draw("normal", empty_tensor(t._shape, work, t._storage.device), generator,
                  float(mean), float(std))
        copy_into(t, z.exp())
    return raw_inplace(t, write)


def geometric_(t, p, *, generator=None):
    """Fill t in place with the number of Bernoulli(p) trials up to the first success (1, 2,
    ...): ceil(log(1 - u) / log(1 - p)), at least 1. Any dtype but bool.

    >>> import clgrad
    >>> bool((clgrad.empty(50, dtype=clgrad.int64).geometric_(0.5) >= 1).all())
    True
    """
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p}")
    return _transformed_uniform_(
        t, generator, lambda u: ((-u).log1p() / math.log1p(-p)).ceil().clamp_min(1.0))


def normal(mean, std=1.0, size=None, *, generator=None, dtype=None, device=None):
    """Normal numbers with the given mean and std (numbers or tensors)."""
    if isinstance(mean, Tensor) or isinstance(std, Tensor):
        ref = mean if isinstance(mean, Tensor) else std
        z = randn(*ref._shape, generator=generator, dtype=ref._dtype, device=ref.device)
        return z * std + mean
    t = empty_tensor(_shape_arg(size), _float_dtype(dtype, "normal"), _dev(device))
    return _draw("normal", t, generator, float(mean), float(std))


def bernoulli(input, p=None, *, generator=None):
    """0/1 draws with probability `input` (or p)."""
    if p is not None:
        t = empty_tensor(input._shape, input._dtype, input._storage.device)
        return _draw("bernoulli", t, generator, float(p))
    u = rand(*input._shape, generator=generator, dtype=input._dtype, device=input.device)
    return (u < input).to(input._dtype)


def randperm(n, *, generator=None, dtype=None, device=None, requires_grad=False, **kw):
    """A random permutation of 0..n-1.

    >>> import clgrad
    >>> sorted(clgrad.randperm(5).tolist())
    [0, 1, 2, 3, 4]
    """
    dev = _dev(device)
    dt = _dtype_or(dtype, dtypes.int64)
    if n == 0:
        return empty_tensor((0,), dt, dev)
    gen = generator or default_generator
    seed, off = gen.take(n)
    keys = random_bits_raw(n, seed, off, dev)._read_host().view(np.uint32)
    order = np.argsort(keys, kind="stable")
    return upload(order, dt, dev)


__all__ = ["tensor", "as_tensor", "from_numpy", "empty", "full", "zeros", "ones", "empty_like",
           "zeros_like", "ones_like", "full_like", "arange", "linspace", "eye", "Generator",
           "default_generator", "manual_seed", "seed", "initial_seed", "get_rng_state",
           "set_rng_state", "rand", "randn", "randint", "rand_like", "randn_like", "randint_like",
           "normal", "bernoulli", "randperm"]
