"""Host tensors: clgrad tensors whose storage is host memory, for processes that may not use an
OpenCL device (DataLoader workers and other processes forked from one that holds an OpenCL
context: the driver's state does not survive fork, and one queue per device per process is
what keeps kernels in order).

`enter_host_mode()` (called first thing in such a process) makes the process's only device a
host device: `clgrad.tensor`, `from_numpy`, `as_tensor`, the legacy constructors, `zeros`,
`ones`, `full`, `arange`, `empty`, `rand`/`randn`/`randint`/`randperm` and their `_like`
forms make host tensors; views (slicing, indexing with numbers, view/reshape, transpose,
permute, unsqueeze, squeeze, expand) work on them as on device tensors; HOST_OPS below (dtype
casts, arithmetic, clone, stack/cat/split, reductions, indexing with tensors, where,
masked_fill, pad, repeat, roll, rounding, a few functions) and comparisons, fill_ and assignment
run in numpy. Any other op says that it needs a device.

Host tensors cross process boundaries by value (`pack` / `unpack`: their bytes and dtype), and
the receiving process that has a device uploads them there (`to_device`): a DataLoader's main
process, a clgrad.multiprocessing parent.
"""
import numpy as np
import pyopencl as cl

from . import dtypes
from .runtime import device as dmod
from .tensor import Tensor, device as _device_cls, empty_tensor, upload

NEEDS_DEVICE = ("clgrad: {what} needs an OpenCL device, which this process cannot use (a "
                "DataLoader worker, or a process forked from one that holds an OpenCL context). "
                "Tensors made here live on the host and support creation, views, dtype casts, "
                "arithmetic, indexing, reductions, stack/cat and reading values (the list is in "
                "docs/interop.md); do device work in the main process (or after the DataLoader "
                "hands the batch over), or use num_workers=0")


class _HostPool:
    recorder = None

    def alloc(self, nbytes):
        return np.zeros(max(int(nbytes), 1), dtype=np.uint8), None

    def free(self, buf, block):
        pass


class _HostQueue:
    """Stands for a queue in copies between host buffers."""


HOST_QUEUE = _HostQueue()


class HostDevice(dmod.Device):
    """The one device of a host-mode process: memory is numpy, kernels cannot run."""

    queue = HOST_QUEUE

    def __init__(self):                   # no OpenCL context, no queue
        self.index = -1
        self.name = "host"
        self.pool = _HostPool()
        self.torch_device = _device_cls("cpu")
        self.has_fp64 = self.has_fp16 = self.is_cpu = True
        self.is_gpu = self.is_pocl = self.is_simulator = False
        self.unusable = None
        self._deferred = []

    def __repr__(self):
        return "<clgrad host device (no OpenCL in this process)>"

    def __getattr__(self, name):
        # what only an OpenCL device has (its context, programs, kernels): a kernel launch
        if name.startswith("__"):
            raise AttributeError(name)
        raise RuntimeError(NEEDS_DEVICE.format(what=f"a kernel launch (the device's {name})"))

    def flush(self):
        pass


HOST = HostDevice()    # made without OpenCL: host copies can be made in any process
_host_mode = False


def is_host(t):
    return isinstance(t, Tensor) and isinstance(t._storage.device, HostDevice)


def values(t):
    """A host tensor's values as a numpy array (bfloat16 as float32)."""
    return dtypes.from_host_bits(t._read_host(), t._dtype)


def from_values(array, dt=None):
    """A host tensor holding array's values (dt: the clgrad dtype; default: array's)."""
    array = np.asarray(array)
    if dt is None:
        dt = dtypes.from_numpy_dtype(array.dtype)
    return upload(array, dt, HOST)


def host_copy(t):
    """A host tensor with t's values (made in a process that can read t: before fork)."""
    if is_host(t):
        return t
    bits = np.ascontiguousarray(t.detach()._read_host())
    out = empty_tensor(tuple(bits.shape), t._dtype, HOST)
    out._storage.buf[:bits.nbytes] = bits.reshape(-1).view(np.uint8)
    if t._is_param or (t.requires_grad and t.grad_fn is None):
        out.requires_grad_(True)
    return out


def hostify(obj):
    """A shallow copy of obj (a dataset) whose tensor attributes, and tensors in list, tuple
    and dict attributes, are host copies; obj itself when it holds no device tensor."""
    def conv(v, depth=0):
        if isinstance(v, Tensor):
            return host_copy(v)
        if depth < 2 and isinstance(v, (list, tuple)) and not hasattr(v, "_fields"):
            items = [conv(x, depth + 1) for x in v]
            return v if all(a is b for a, b in zip(items, v)) else type(v)(items)
        if depth < 2 and type(v) is dict:
            items = {k: conv(x, depth + 1) for k, x in v.items()}
            return v if all(items[k] is v[k] for k in v) else items
        if depth < 1 and hasattr(v, "__dict__") and not isinstance(v, type):
            return hostify(v)
        return v
    state = getattr(obj, "__dict__", None)
    if not isinstance(state, dict):
        return obj
    new = {k: conv(v) for k, v in state.items()}
    if all(new[k] is state[k] for k in state):
        return obj
    import copy
    out = copy.copy(obj)
    out.__dict__.update(new)
    return out


def host_bits(t):
    """A host tensor's elements in host representation (bf16 as its 16-bit words), read from
    its numpy buffer in any process."""
    dt = t._dtype
    flat = t._storage.buf[:t._storage.nbytes].view(dt.np)
    if not flat.size:
        return np.empty(t._shape, dtype=dt.np)
    return np.array(np.lib.stride_tricks.as_strided(
        flat[t._offset:], shape=t._shape, strides=[s * dt.itemsize for s in t._strides]))


def _read_host_any(self):
    """Tensor._read_host in host mode: host tensors read their numpy buffer; a device tensor
    (inherited through fork) cannot be read here."""
    if not isinstance(self._storage.device, HostDevice):
        raise RuntimeError(NEEDS_DEVICE.format(what="reading a device tensor made before this "
                                                    "process started"))
    return host_bits(self)


_enqueue_copy = cl.enqueue_copy


def _host_enqueue_copy(queue, dest, src, **kw):
    if queue is not HOST_QUEUE:
        return _enqueue_copy(queue, dest, src, **kw)
    d = np.asarray(dest).reshape(-1).view(np.uint8)
    s = np.ascontiguousarray(src).reshape(-1).view(np.uint8)
    so, do = kw.get("src_offset", 0), kw.get("dst_offset", 0)
    n = min(d.size - do, s.size - so)
    d[do:do + n] = s[so:so + n]


# ---- ops in numpy --------------------------------------------------------------------------------
def _out(array, dt):
    return from_values(np.asarray(array, dtype=None if dt is dtypes.bfloat16 else dt.np), dt)


def _val(x):
    return values(x) if isinstance(x, Tensor) else x


def _binary(fn, true_div=False):
    def op(a, b, *rest):
        dt = dtypes.result_type(a, b)
        if true_div and dt.kind in "biu":
            dt = dtypes.get_default_dtype()
        if rest and rest[0] not in (None, 1):            # alpha
            b = _val(b) * rest[0]
        return _out(fn(_val(a), _val(b)), dt)
    return op


def _unary(fn, floating=False):
    def op(t, *rest):
        dt = t._dtype if not floating or t._dtype.kind == "f" else dtypes.get_default_dtype()
        return _out(fn(values(t)), dt)
    return op


def _reduce(fn, mean=False):
    def op(t, dims=None, keepdim=False, dtype=None, *rest):
        dt = dtype or (t._dtype if t._dtype.kind == "f" or mean else dtypes.int64)
        axis = tuple(dims) if dims else None
        return _out(fn(values(t), axis=axis, keepdims=keepdim), dt)
    return op


def _to_copy(t, dt=None, *rest):
    dt = t._dtype if dt is None else dt
    return _out(values(t).astype(np.float32 if dt is dtypes.bfloat16 else dt.np), dt)


def _join(fn):
    def op(dim, *ts):
        dt = dtypes.result_type(*ts)
        return _out(fn([values(t) for t in ts], axis=dim), dt)
    return op


def _minmax(t, dims=None, keepdim=False, which="max", *rest):
    fn = np.max if which in ("max", "amax") else np.min
    axis = tuple(dims) if dims else None
    return _out(fn(values(t), axis=axis, keepdims=keepdim), t._dtype)


def _minmax_dim(t, dim, keepdim=False, which="max", *rest):
    a = values(t)
    idx = (np.argmax if which == "max" else np.argmin)(a, axis=dim)
    if keepdim:
        idx = np.expand_dims(idx, dim)
    vals = np.take_along_axis(a, idx if keepdim else np.expand_dims(idx, dim), axis=dim)
    if not keepdim:
        vals = np.squeeze(vals, dim)
    return _out(vals, t._dtype), _out(idx, dtypes.int64)


def _index(t, dims, *indices):
    key = [slice(None)] * t.dim()
    for d, i in zip(dims, indices):
        key[d] = values(i) if isinstance(i, Tensor) else i
    return _out(values(t)[tuple(key)], t._dtype)


def _where(cond, a, b, *rest):
    dt = dtypes.result_type(a, b)
    return _out(np.where(values(cond), _val(a), _val(b)), dt)


def _pad(t, pad, value=0, *rest):
    if any(p < 0 for p in pad):
        raise RuntimeError(NEEDS_DEVICE.format(what="a negative (cropping) pad"))
    widths = [(0, 0)] * t.dim()
    for k in range(len(pad) // 2):
        widths[t.dim() - 1 - k] = (pad[2 * k], pad[2 * k + 1])
    return _out(np.pad(values(t), widths, constant_values=value), t._dtype)


def _var(t, dims=None, correction=1, keepdim=False, std=False, *rest):
    axis = tuple(dims) if dims else None
    v = np.var(values(t).astype(np.float64), axis=axis, ddof=correction, keepdims=keepdim)
    return _out(np.sqrt(v) if std else v, t._dtype)


def _cumsum(t, dim, *rest):
    dt = t._dtype if t._dtype.kind == "f" else dtypes.int64
    return _out(np.cumsum(values(t), axis=dim), dt)


HOST_OPS = {
    "ToCopy": _to_copy, "Clone": lambda t, *r: _out(values(t), t._dtype),
    "Add": _binary(np.add), "Sub": _binary(np.subtract), "Mul": _binary(np.multiply),
    "Div": _binary(np.true_divide, true_div=True), "Neg": _unary(np.negative),
    "Abs": _unary(np.abs), "Square": _unary(np.square), "Sqrt": _unary(np.sqrt, True),
    "Exp": _unary(np.exp, True), "Log": _unary(np.log, True),
    "Sum": _reduce(np.sum), "Mean": _reduce(np.mean, mean=True),
    "Flip": lambda t, dims, *r: _out(np.flip(values(t), axis=tuple(dims)), t._dtype),
    "Stack": _join(np.stack), "Cat": _join(np.concatenate),
    "Floor": _unary(np.floor), "Ceil": _unary(np.ceil), "Round": _unary(np.round),
    "Trunc": _unary(np.trunc), "Sin": _unary(np.sin, True), "Cos": _unary(np.cos, True),
    "Tanh": _unary(np.tanh, True), "Reciprocal": _unary(np.reciprocal, True),
    "Sigmoid": _unary(lambda a: 1 / (1 + np.exp(-a)), True),
    "Clamp": lambda t, lo=None, hi=None, *r: _out(np.clip(values(t), lo, hi), t._dtype),
    "Remainder": _binary(np.mod), "Prod": _reduce(np.prod),
    "AMax": _minmax, "MaxDim": _minmax_dim, "Index": _index, "Where": _where,
    "IndexSelect": lambda t, dim, i, *r: _out(np.take(values(t), values(i), axis=dim),
                                              t._dtype),
    "Gather": lambda t, dim, i, *r: _out(np.take_along_axis(values(t), values(i), axis=dim),
                                         t._dtype),
    "MaskedFill": lambda t, m, v, *r: _out(np.where(values(m), _val(v), values(t)), t._dtype),
    "Repeat": lambda t, reps, *r: _out(np.tile(values(t), tuple(reps)), t._dtype),
    "SplitWithSizes": lambda t, sizes, dim, *r: tuple(
        _out(p, t._dtype) for p in np.split(values(t), np.cumsum(sizes)[:-1], axis=dim)),
    "ConstantPadNd": _pad, "Var": _var, "Cumsum": _cumsum,
    "Norm2": lambda t, dims=None, keepdim=False, *r: _out(np.sqrt(np.sum(
        values(t).astype(np.float64) ** 2, axis=tuple(dims) if dims else None,
        keepdims=keepdim)), t._dtype),
    "Roll": lambda t, shifts, dims, *r: _out(np.roll(values(t), tuple(shifts), tuple(dims)),
                                             t._dtype),
}


def host_op(cls, args):
    """The op hook of a host-mode process: views as usual, HOST_OPS in numpy, else an error
    that names the op."""
    if not any(is_host(a) for a in args if isinstance(a, Tensor)):
        if any(isinstance(a, Tensor) for a in args):
            raise RuntimeError(NEEDS_DEVICE.format(what=f"{cls.__name__} on a device tensor"))
    if cls._is_view:
        return cls._apply_op(args)
    impl = HOST_OPS.get(cls.__name__)
    if impl is None:
        raise RuntimeError(NEEDS_DEVICE.format(what=f"the op {cls.__name__}"))
    return impl(*args)


def _creation(np_fn):
    def make(*size, dtype=None, device=None, requires_grad=False, **kw):
        if len(size) == 1 and isinstance(size[0], (tuple, list)):
            size = tuple(size[0])
        size = tuple(kw.pop("size", size))
        dt = dtypes.as_dtype(dtype) if dtype is not None else dtypes.get_default_dtype()
        t = _out(np_fn(size, dt, **kw), dt)
        return t.requires_grad_(True) if requires_grad else t
    return make


def _like(maker):
    def make(t, *args, dtype=None, **kw):
        kw.pop("memory_format", None)
        return maker(tuple(t.shape), *args, dtype=dtype or t.dtype, **kw)
    return make


def _rng():
    from .utils.data import get_worker_info         # the worker's seed, as torch seeds it
    info = get_worker_info()
    global _generator
    if _generator is None:
        _generator = np.random.default_rng(info.seed if info is not None else None)
    return _generator


_generator = None


def _arange(start, end=None, step=1, *, dtype=None, device=None, requires_grad=False):
    if end is None:
        start, end = 0, start
    a = np.arange(start, end, step)
    dt = dtypes.as_dtype(dtype) if dtype is not None else (
        dtypes.int64 if a.dtype.kind in "iu" else dtypes.get_default_dtype())
    return _out(a, dt)


def _randint(low, high=None, size=None, *, dtype=None, device=None, generator=None,
             requires_grad=False):
    if size is None:
        low, high, size = 0, low, high
    dt = dtypes.as_dtype(dtype) if dtype is not None else dtypes.int64
    return _out(_rng().integers(low, high, size=tuple(size)), dt)


def _randperm(n, *, dtype=None, device=None, generator=None, requires_grad=False):
    return _out(_rng().permutation(n), dtypes.as_dtype(dtype) if dtype else dtypes.int64)


def _compare(fn):
    def op(a, b):
        return _out(fn(_val(a), _val(b)), dtypes.bool_)
    return op


def _setitem(self, index, value):
    a = values(self)
    a[_host_index(index)] = _val(value)
    self._storage.buf[:] = np.frombuffer(
        np.ascontiguousarray(dtypes.to_host_bits(_full_storage(self, a), self._dtype)).tobytes()
        .ljust(self._storage.buf.size, b"\0"), dtype=np.uint8)


def _full_storage(t, a):
    """The whole storage's values with t's elements replaced by a (t may be a view)."""
    flat = dtypes.from_host_bits(t._storage.buf[:t._storage.nbytes].view(t._dtype.np),
                                 t._dtype).copy()
    view = np.lib.stride_tricks.as_strided(
        flat[t._offset:], shape=t._shape, strides=[s * flat.itemsize for s in t._strides])
    view[...] = a
    return flat


def _host_index(index):
    if isinstance(index, tuple):
        return tuple(_host_index(i) for i in index)
    if isinstance(index, list):
        return np.array([values(i) if isinstance(i, Tensor) else i for i in index])
    return values(index) if isinstance(index, Tensor) else index


def _advanced(key):
    keys = key if isinstance(key, tuple) else (key,)
    return any(isinstance(k, (Tensor, list, np.ndarray)) for k in keys)


def _getitem(original):
    def getitem(self, key):
        # basic indexing stays a view (the usual path); indexing with tensors, lists or masks
        # copies, as in torch, here in numpy (the device path checks bounds with a kernel)
        if is_host(self) and _advanced(key):
            return _out(values(self)[_host_index(key)], self._dtype)
        return original(self, key)
    return getitem


def _fill(self, value):
    _setitem(self, Ellipsis, _val(value))
    return self


def enter_host_mode():
    """Make this process's only device the host device (see the module docstring)."""
    global _host_mode
    if _host_mode:
        return
    _host_mode = True
    dmod.default_device = lambda: HOST
    dmod.cpu_device = lambda: HOST
    dmod.gpus = lambda: [HOST]
    dmod.devices = lambda: [HOST]
    cl.enqueue_copy = _host_enqueue_copy
    Tensor._read_host = _read_host_any
    from .autograd.node import hooks       # function-level: the autograd core sits above
    hooks.op = host_op
    import clgrad
    f = clgrad.Tensor
    for name, fn in (("__eq__", np.equal), ("__ne__", np.not_equal), ("__lt__", np.less),
                     ("__le__", np.less_equal), ("__gt__", np.greater),
                     ("__ge__", np.greater_equal)):
        setattr(f, name, _compare(fn))
    for name, fn in (("eq", np.equal), ("ne", np.not_equal), ("lt", np.less),
                     ("le", np.less_equal), ("gt", np.greater), ("ge", np.greater_equal)):
        setattr(clgrad, name, _compare(fn))
        setattr(f, name, _compare(fn))
    f.__getitem__ = _getitem(f.__getitem__)
    # index_select and gather check their indices with a kernel on the device path
    for name, op in (("index_select", HOST_OPS["IndexSelect"]), ("gather", HOST_OPS["Gather"])):
        def host_first(original, op=op):
            def fn(t, dim, index, *args, **kw):
                return op(t, dim, index) if is_host(t) else original(t, dim, index, *args, **kw)
            return fn
        setattr(f, name, host_first(getattr(f, name)))
        setattr(clgrad, name, host_first(getattr(clgrad, name)))
    where = clgrad.where

    def host_where(condition, input=None, other=None, **kw):
        if is_host(condition) and input is not None:
            return _where(condition, input, other)
        return where(condition, input, other, **kw)
    clgrad.where = host_where
    f.where = lambda self, condition, other: host_where(condition, self, other)
    f.__setitem__ = _setitem
    f.fill_ = _fill
    f.zero_ = lambda self: _fill(self, 0)
    zeros = _creation(lambda s, dt: np.zeros(s))
    ones = _creation(lambda s, dt: np.ones(s))
    empty = _creation(lambda s, dt: np.zeros(s))
    rand = _creation(lambda s, dt, generator=None: _rng().random(s))
    randn = _creation(lambda s, dt, generator=None: _rng().standard_normal(s))

    def full(size, fill_value, *, dtype=None, **kw):
        dt = dtypes.as_dtype(dtype) if dtype is not None else dtypes.result_type(fill_value) \
            if not isinstance(fill_value, float) else dtypes.get_default_dtype()
        return _out(np.full(tuple(size), fill_value), dt)
    for name, fn in (("zeros", zeros), ("ones", ones), ("empty", empty), ("rand", rand),
                     ("randn", randn), ("full", full), ("arange", _arange),
                     ("randint", _randint), ("randperm", _randperm),
                     ("zeros_like", _like(zeros)), ("ones_like", _like(ones)),
                     ("empty_like", _like(empty)), ("rand_like", _like(rand)),
                     ("randn_like", _like(randn))):
        setattr(clgrad, name, fn)
    clgrad.full_like = lambda t, v, dtype=None, **kw: full(tuple(t.shape), v,
                                                           dtype=dtype or t.dtype)

    def new(maker):
        def make(self, *size, dtype=None, **kw):
            kw.pop("device", None), kw.pop("requires_grad", None), kw.pop("pin_memory", None)
            return maker(*size, dtype=dtype or self.dtype, **kw)
        return make
    f.new_zeros, f.new_ones, f.new_empty = new(zeros), new(ones), new(empty)
    f.new_full = lambda self, size, fill_value, dtype=None, **kw: full(
        size, fill_value, dtype=dtype or self.dtype)


# ---- between processes ---------------------------------------------------------------------------
class Packed:
    """A tensor's values on their way to another process (by value: OpenCL buffers cannot be
    shared between processes)."""

    __slots__ = ("bits", "dtype_name", "requires_grad", "parameter", "host")

    def __init__(self, t):
        self.host = is_host(t)
        self.bits = np.ascontiguousarray(host_bits(t) if self.host else t.detach()._read_host())
        self.dtype_name = t._dtype.name
        self.requires_grad = bool(t.requires_grad and t.grad_fn is None)
        self.parameter = bool(t._is_param)

    @classmethod
    def of_bits(cls, bits, dt):
        """A Packed of host bits (a worker's stacked batch)."""
        return _rebuild_packed(np.ascontiguousarray(bits), dt.name, False, False, True)

    def unpack(self, device=None):
        """A tensor on `device`, by default this process's default device (the host device in
        host mode)."""
        dt = dtypes.BY_NAME[self.dtype_name]
        dev = dmod.get_device(None) if device is None else device
        t = empty_tensor(tuple(self.bits.shape), dt, dev)
        if self.bits.size and isinstance(dev, HostDevice):
            t._storage.buf[:self.bits.nbytes] = self.bits.reshape(-1).view(np.uint8)
        elif self.bits.size:
            cl.enqueue_copy(dev.queue, t._storage.buf, self.bits, is_blocking=True)
        if self.parameter:
            from .nn.parameter import Parameter   # function-level: nn sits above this module
            return Parameter(t, requires_grad=self.requires_grad)
        return t.requires_grad_(True) if self.requires_grad else t

    def __reduce__(self):
        return (_rebuild_packed, (self.bits, self.dtype_name, self.requires_grad, self.parameter,
                                  self.host))


def _rebuild_packed(bits, dtype_name, requires_grad, parameter, host=False):
    p = Packed.__new__(Packed)
    p.bits, p.dtype_name, p.requires_grad, p.parameter, p.host = bits, dtype_name, \
        requires_grad, parameter, host
    return p


def pack(data):
    """Replace every tensor in data (dicts, lists, tuples, named tuples) by a Packed."""
    if isinstance(data, Tensor):
        return Packed(data)
    if isinstance(data, dict):
        out = {k: pack(v) for k, v in data.items()}
        try:
            return type(data)(out)
        except TypeError:
            return out
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(pack(d) for d in data))
    if isinstance(data, (list, tuple)):
        return type(data)(pack(d) for d in data)
    return data


def unpack(data):
    """pack's inverse, in the receiving process: tensors on its default device."""
    if isinstance(data, Packed):
        return data.unpack()
    if isinstance(data, dict):
        out = {k: unpack(v) for k, v in data.items()}
        try:
            return type(data)(out)
        except TypeError:
            return out
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(unpack(d) for d in data))
    if isinstance(data, (list, tuple)):
        return type(data)(unpack(d) for d in data)
    return data
