"""`Tensor` as data: storage, shape, strides, element offset, dtype, the version counter shared by
views, the autograd slots, host interop and repr. No math lives here: the ops are bound onto the
class by `clgrad._face`.
"""
import numpy as np
import pyopencl as cl

from . import dtypes
from ._grad_state import state as _grad_state
from .runtime.device import (TORCH_TYPES as _TORCH_TYPES, _OTHER_TYPES, get_device,
                             torch_name)
from .runtime import family as _family
from .runtime import recording as _recording
from .runtime.memory import Storage
from ._format import format_tensor


class Size(tuple):
    """A tensor's shape: a tuple that prints like torch.Size.

    >>> import clgrad
    >>> clgrad.zeros(2, 3).shape
    clgrad.Size([2, 3])
    """

    def __repr__(self):
        return f"clgrad.Size({list(self)})"

    def numel(self):
        n = 1
        for s in self:
            n *= s
        return n


# the words device() resolves to an OpenCL device beside torch's types and "cl" (CLGRAD_DEVICE and
# .to() take any fragment of a device's name; device() takes only these, so that an unknown
# name is an error that needs no device discovery)
IMPLEMENTATION_WORDS = ("pocl", "intel", "nvidia", "amd", "apple", "arm", "mali", "qualcomm",
                        "adreno", "rusticl", "mesa", "clover", "oclgrind", "gpu")


class device:
    """A device as torch names it: `device("cpu")` (the CPU OpenCL device), `device("cuda:0")`
    (the first GPU OpenCL device), `device("cuda", 1)`; clgrad's own `device("cl:N")` (index N
    over every OpenCL device) and implementation words (`device("pocl")`) are resolved to the
    name tensors report: "cpu", "cuda:K", or "cl:N" for a device with no torch name (a second
    CPU implementation, a simulator). Like torch's, making one checks nothing; using it does.
    A device equals only a device (`device("cpu") == "cpu"` is False, as in torch); a name that
    is neither torch's nor clgrad's is torch's RuntimeError.

    >>> import clgrad
    >>> clgrad.device("cuda:1")
    device(type='cuda', index=1)
    >>> clgrad.device("cpu").type, str(clgrad.device("cuda", 0))
    ('cpu', 'cuda:0')
    """

    __slots__ = ("type", "index")

    def __init__(self, type, index=None):
        if isinstance(type, device):
            self.type, self.index = type.type, type.index
            return
        if not isinstance(type, (str, int)) and hasattr(type, "platform_name"):   # a Device
            self.type, self.index = torch_name(type)
            return
        if isinstance(type, int):                      # torch: device(0) is cuda:0
            self.type, self.index = "cuda", type
            return
        if not isinstance(type, str):
            raise TypeError(f"device() received an invalid combination of arguments - got "
                            f"({type.__class__.__name__})")
        typ, colon, num = type.strip().partition(":")
        if colon and not num.isdigit():
            raise RuntimeError(f"Invalid device string: '{type}'")
        if index is not None and colon:
            raise RuntimeError(f"type (string) must not include an index because index was "
                               f"passed explicitly: {type}")
        idx = int(num) if colon else index
        if idx is not None and idx < 0:
            raise RuntimeError(f"Device index must not be negative, got {idx}")
        if typ in ("cpu", "cuda") or typ in _OTHER_TYPES:   # torch's types, case and all
            self.type, self.index = typ, idx           # ("mps" fails where it is used)
            return
        word = typ.lower()
        if word != "cl" and word not in IMPLEMENTATION_WORDS:
            # an unknown name is torch's error, without looking for OpenCL devices
            raise RuntimeError(f"Expected one of {', '.join(_TORCH_TYPES)} device type at start "
                               f"of device string: {type} (clgrad also takes 'cl', 'cl:N' and "
                               f"the implementation words {', '.join(IMPLEMENTATION_WORDS)})")
        spec = word if idx is None else f"{word}:{idx}"    # "cl", "cl:N", "pocl", "intel", ...
        self.type, self.index = torch_name(get_device(spec))

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __repr__(self):
        return f"device(type='{self.type}'" + ("" if self.index is None else f", index={self.index}") + ")"

    def __eq__(self, other):
        # as torch's: only a device equals a device; a string is never equal (not even "cpu")
        if not isinstance(other, device):
            return NotImplemented
        return self.type == other.type and self.index == other.index

    def __hash__(self):
        return hash((self.type, self.index))

    def __reduce__(self):
        return device, (self.type, self.index)


class layout:
    """A tensor's memory layout, as torch.layout: `clgrad.strided` (every dense tensor) or
    `clgrad.sparse_coo` (tensors made by clgrad.sparse_coo_tensor and to_sparse).

    >>> import clgrad
    >>> clgrad.zeros(2).layout, clgrad.zeros(2).layout == clgrad.strided
    (clgrad.strided, True)
    """

    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"clgrad.{self.name}"

    def __reduce__(self):
        return self.name         # pickles as the module-level instance of that name


strided = layout("strided")
sparse_coo = layout("sparse_coo")

_STRIDES = {}


def contiguous_strides(shape):
    """Row-major strides of a shape (memoised: the same few shapes come back all the time)."""
    st = _STRIDES.get(shape)
    if st is None:
        strides = []
        s = 1
        for n in reversed(shape):
            strides.append(s)
            s *= n
        st = tuple(reversed(strides))
        if len(_STRIDES) < 4096:
            _STRIDES[tuple(shape)] = st
    return st


_LAYOUTS = {}


def layout_of(shape):
    """(number of elements, row-major strides) of a shape, memoised like contiguous_strides."""
    lay = _LAYOUTS.get(shape)
    if lay is None:
        lay = (numel_of(shape), contiguous_strides(shape))
        if len(_LAYOUTS) < 4096:
            _LAYOUTS[tuple(shape)] = lay
    return lay


def is_contiguous_layout(shape, strides):
    s = 1
    for n, st in zip(reversed(shape), reversed(strides)):
        if n != 1 and st != s:
            return False
        s *= n
    return True


def numel_of(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def _host_item(host, dt):
    """The Python number of the one element of `host` (dt's host representation)."""
    return dtypes.from_host_bits(host, dt).reshape(()).item()


class Tensor:
    """A multi-dimensional array on an OpenCL device, with torch's attributes and methods.

    >>> import clgrad
    >>> x = clgrad.tensor([[1.0, 2.0], [3.0, 4.0]])
    >>> (x.shape, x.dtype, x.T.is_contiguous())
    (clgrad.Size([2, 2]), clgrad.float32, False)
    """

    __slots__ = ("_storage", "_shape", "_strides", "_offset", "_dtype", "_vc", "_contig",
                 "_requires_grad", "_grad_fn", "_output_nr", "_base", "__dict__", "__weakref__")

    # Rarely set fields live in the instance __dict__ and default to these class attributes.
    _grad = None
    _retains_grad = False
    _hooks = None                 # leaf tensors: {handle id: hook}
    _post_acc_hooks = None
    _acc = None                   # weakref to this leaf's AccumulateGrad node
    _fw = None                    # forward-mode tangent (autograd.forward_ad), or None
    _inference = False
    _view_vc_at = 0               # version at which a view's grad_fn was made
    _view_multi = False           # made by a multi-output view op (unbind, split, ...)
    _view_no_grad = False         # a view made under no_grad of a tensor that requires grad
    _is_param = False

    def __new__(cls, *args, **kwargs):
        if cls is Tensor and args and not isinstance(args[0], Storage):
            # Tensor(data): torch.Tensor's legacy constructor, a float tensor from data
            return _legacy_constructor(args, kwargs)
        return object.__new__(cls)

    def __init__(self, *args, **kwargs):
        pass

    # ---- metadata -------------------------------------------------------------------------
    @property
    def shape(self):
        return Size(self._shape)

    def size(self, dim=None):
        """The shape, or the length of one dimension.

        >>> import clgrad
        >>> clgrad.zeros(2, 3).size(-1)
        3
        """
        if dim is None:
            return Size(self._shape)
        return self._shape[self._wrap_dim(dim)]

    def _wrap_dim(self, dim, ndim=None):
        n = len(self._shape) if ndim is None else ndim
        lo, hi = (-1, 0) if n == 0 else (-n, n - 1)
        if not isinstance(dim, (int, np.integer)) or isinstance(dim, bool):
            raise TypeError(f"dim must be an int, got {type(dim).__name__}")
        if dim < lo or dim > hi:
            raise IndexError(f"Dimension out of range (expected to be in range of [{lo}, {hi}], "
                             f"but got {dim})")
        return int(dim) % n if n else 0

    def dim(self):
        return len(self._shape)

    ndimension = dim

    @property
    def ndim(self):
        return len(self._shape)

    def numel(self):
        return numel_of(self._shape)

    nelement = numel

    def stride(self, dim=None):
        if dim is None:
            return tuple(self._strides)
        return self._strides[self._wrap_dim(dim)]

    def storage_offset(self):
        return self._offset

    def is_contiguous(self, memory_format=None):
        return self._contig

    @property
    def dtype(self):
        return self._dtype

    def element_size(self):
        return self._dtype.itemsize

    @property
    def itemsize(self):
        return self._dtype.itemsize

    @property
    def nbytes(self):
        return self.numel() * self._dtype.itemsize

    @property
    def device(self):
        dev = self._storage.device
        name = dev.torch_device
        if name is None:
            name = dev.torch_device = device(dev)
        return name

    @property
    def _device(self):
        return self._storage.device

    @property
    def is_cuda(self):
        """Whether the tensor is on a GPU OpenCL device (a "cuda" device)."""
        return self.device.type == "cuda"

    @property
    def is_cpu(self):
        """Whether the tensor is on the CPU OpenCL device (the "cpu" device)."""
        return self.device.type == "cpu"

    @property
    def layout(self):
        return strided

    @property
    def is_sparse(self):
        return False

    @property
    def volatile(self):
        """torch's long-removed volatile flag: always False (use no_grad)."""
        return False

    @property
    def name(self):
        """Named tensors are not supported: None, as for torch's unnamed tensors."""
        return None

    # the other backends and layouts torch names: never, for a dense OpenCL tensor
    is_sparse_csr = is_quantized = is_nested = is_meta = is_mkldnn = is_mps = is_xpu = \
        is_ipu = is_xla = is_vulkan = is_maia = is_mtia = is_sparse

    def is_floating_point(self):
        return self._dtype.kind == "f"

    def is_complex(self):
        return self._dtype.kind == "c"

    def is_conj(self):
        """False: clgrad's conj() materialises the conjugate (no lazy conjugate bit)."""
        return False

    def is_neg(self):
        return False

    def is_inference(self):
        return self._inference

    def data_ptr(self):
        return id(self._storage) + self._offset * self._dtype.itemsize

    def __len__(self):
        if not self._shape:
            raise TypeError("len() of a 0-d tensor")
        return self._shape[0]

    def __hash__(self):
        return id(self)

    # ---- autograd slots -------------------------------------------------------------------
    @property
    def requires_grad(self):
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value):
        self.requires_grad_(bool(value))

    def requires_grad_(self, requires_grad=True):
        """Set whether autograd records operations on this leaf; returns self.

        >>> import clgrad
        >>> clgrad.zeros(2).requires_grad_().requires_grad
        True
        """
        if self._grad_fn is not None and not requires_grad:
            raise RuntimeError("you can only change requires_grad flags of leaf variables. If you "
                               "want to use a computed variable in a subgraph that doesn't require "
                               "differentiation use var_no_grad = var.detach().")
        if requires_grad and self._dtype.kind not in "fc":
            raise RuntimeError(f"only Tensors of floating point and complex dtype can require "
                               f"gradients")
        if requires_grad and self._inference and not _grad_state.inference:
            pass  # torch allows setting the flag; saving it for backward raises later
        if self._grad_fn is None:
            self._requires_grad = bool(requires_grad)
        return self

    @property
    def is_leaf(self):
        return self._grad_fn is None and (self._base is None or self.grad_fn is None)

    @property
    def grad_fn(self):
        if self._base is not None:
            # function-level: points up on purpose (views are the autograd core's)
            from .autograd.views import refresh_view_grad_fn
            refresh_view_grad_fn(self)
        return self._grad_fn

    @property
    def output_nr(self):
        return self._output_nr

    @property
    def grad(self):
        return self._grad

    @grad.setter
    def grad(self, value):
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(f"assigned grad expected to be a Tensor or None but got grad of "
                                f"type {type(value).__name__}")
            if value._dtype is not self._dtype:
                raise RuntimeError(f"assigned grad has data of a different type: expected "
                                   f"{self._dtype}, got {value._dtype}")
            if value._shape != self._shape:
                raise RuntimeError(f"assigned grad has data of a different size: expected "
                                   f"{list(self._shape)}, got {list(value._shape)}")
            if value._storage.device is not self._storage.device:
                raise RuntimeError(f"assigned grad has data located on a different device: "
                                   f"expected {self.device}, got {value.device}")
        self._grad = value

    @grad.deleter
    def grad(self):
        self._grad = None

    @property
    def retains_grad(self):
        return self._retains_grad

    @property
    def _version(self):
        return self._vc[0]

    @property
    def _is_view(self):
        return self._base is not None

    def _is_view_method(self):
        return self._base is not None

    # ---- host interop ---------------------------------------------------------------------
    def _read_host(self):
        """The elements as a numpy array in host representation (bf16 as uint16 bits). Only the
        span of storage the view covers is read, then numpy applies the strides."""
        dt = self._dtype
        shape = self._shape
        if dt.itemsize != dt.np.itemsize:       # complex32: its (re, im) halves, pair last
            return real_view(self)._read_host()
        n = numel_of(shape)
        if n == 0:
            return np.empty(shape, dtype=dt.np)
        lo = hi = self._offset
        for s, st in zip(shape, self._strides):
            if st >= 0:
                hi += (s - 1) * st
            else:
                lo += (s - 1) * st
        span = np.empty(hi - lo + 1, dtype=dt.np)
        dev = self._storage.device
        dev.raise_pending_checks()
        cl.enqueue_copy(dev.queue, span, self._storage.buf, src_offset=lo * dt.itemsize,
                        is_blocking=True)
        if self._contig:
            return span.reshape(shape)
        isz = dt.itemsize
        view = np.lib.stride_tricks.as_strided(
            span[self._offset - lo:], shape=shape, strides=[st * isz for st in self._strides])
        return np.array(view)

    def numpy(self, *, force=False):
        """The values as a new numpy array (a copy: device memory is not host memory).

        >>> import clgrad
        >>> clgrad.arange(3).numpy()
        array([0, 1, 2])
        """
        if self._requires_grad and not force:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use "
                               "tensor.detach().numpy() instead.")
        if self._dtype is dtypes.bfloat16 and not force:
            raise TypeError("Got unsupported ScalarType BFloat16: numpy has no bfloat16; use "
                            ".float().numpy()")
        return dtypes.from_host_bits(self._read_host(), self._dtype)

    def __array__(self, dtype=None, copy=None):
        a = dtypes.from_host_bits(self._read_host(), self._dtype)
        return a if dtype is None else a.astype(dtype)

    def item(self):
        """The value of a one-element tensor as a Python number.

        >>> import clgrad
        >>> clgrad.tensor([2.5]).item()
        2.5
        """
        n = self.numel()
        if n != 1:
            raise RuntimeError(f"a Tensor with {n} elements cannot be converted to Scalar")
        rec = _recording.active
        if rec is not None:               # a capture may make the read part of its work
            value = rec.read_item(self, _host_item)
            if value is not None:
                return value
        return _host_item(self._read_host(), self._dtype)

    def tolist(self):
        """The values as (nested) Python lists.

        >>> import clgrad
        >>> clgrad.tensor([[1, 2], [3, 4]]).tolist()
        [[1, 2], [3, 4]]
        """
        return dtypes.from_host_bits(self._read_host(), self._dtype).tolist()

    def __bool__(self):
        n = self.numel()
        if n != 1:
            raise RuntimeError(f"Boolean value of Tensor with {'more than one' if n else 'no'} "
                               f"value{'s' if n else ''} is ambiguous")
        return bool(self.item())

    def __float__(self):
        return float(self._real_item("double"))

    def __int__(self):
        return int(self._real_item("int64_t"))

    def _real_item(self, name):
        """item() for float() / int(): a complex value only without an imaginary part, as
        torch."""
        v = self.item()
        if isinstance(v, complex):
            if v.imag != 0:
                raise RuntimeError(f"value cannot be converted to type {name} without overflow")
            return v.real
        return v

    def __index__(self):
        if self._dtype.kind not in "iub" or self.numel() != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def __complex__(self):
        return complex(self.item())

    def __repr__(self, *, tensor_contents=None):
        return format_tensor(self)

    def __format__(self, spec):
        if not self._shape and spec:
            return self.item().__format__(spec)
        return repr(self)

    def __reduce_ex__(self, proto):
        raise TypeError("clgrad tensors are not pickled (that would let a file run code); use "
                        "clgrad.save / clgrad.load")

    # __deepcopy__ is bound by the face (clgrad._face.deepcopy_tensor): copying needs the ops


_new = object.__new__
# Tensor(data) / Tensor(*sizes), torch's legacy constructor: made by the ops, so the face fills it
# in (clgrad._face.tensor_from_data); the tensor layer imports nothing above it
_legacy_constructor = None


def make_tensor(storage, shape, strides, offset, dt, contig, vc=None):
    """Wrap a storage as a tensor. The hot path of every op: set only the slots."""
    t = _new(Tensor)
    t._storage = storage
    t._shape = shape
    t._strides = strides
    t._offset = offset
    t._dtype = dt
    t._vc = [0] if vc is None else vc
    t._contig = contig
    t._requires_grad = False
    t._grad_fn = None
    t._output_nr = 0
    t._base = None
    if _grad_state.inference:
        t._inference = True
    return t


def empty_tensor(shape, dt, device):
    """A new contiguous tensor with uninitialised contents."""
    n, strides = layout_of(shape)
    return make_tensor(Storage(device, n * dt.itemsize), shape, strides, 0, dt, True)


def upload(array, dt, device):
    """A new tensor holding a numpy array's values (converted to dt)."""
    host = dtypes.to_host_bits(array, dt)
    shape = tuple(host.shape) if dt.itemsize == host.itemsize else tuple(host.shape[:-1])
    return upload_bits(host, shape, dt, device)


def upload_bits(host, shape, dt, device):
    """A new tensor of `shape` whose buffer receives `host`, already in dt's host representation
    (what _read_host gives: bfloat16 as its bits, complex32 as float16 pairs)."""
    t = empty_tensor(shape, dt, device)
    if host.size:
        cl.enqueue_copy(device.queue, t._storage.buf, np.ascontiguousarray(host),
                        is_blocking=True)
    return t


def real_view(t):
    """The real view of a complex tensor (torch.view_as_real's geometry, no autograd): shape + (2,),
    strides doubled plus a last stride of 1, offset doubled, over the same storage."""
    shape = t._shape + (2,)
    strides = tuple(2 * st for st in t._strides) + (1,)
    return make_tensor(t._storage, shape, strides, 2 * t._offset, t._dtype.real, t._contig,
                       t._vc)


def complex_view(t, dt=None):
    """The complex view of a real tensor whose last dim is (re, im) with stride 1, even strides
    and offset (view_as_complex's geometry, no autograd; checked by the caller)."""
    shape = t._shape[:-1]
    strides = tuple(st // 2 for st in t._strides[:-1])
    return make_tensor(t._storage, shape, strides, t._offset // 2,
                       dt or t._dtype.to_complex(), is_contiguous_layout(shape, strides), t._vc)


def alias(t, shape=None, strides=None, offset=None):
    """A tensor over the same storage and version counter, without autograd history."""
    shape = t._shape if shape is None else shape
    strides = t._strides if strides is None else strides
    return make_tensor(t._storage, shape, strides, t._offset if offset is None else offset,
                       t._dtype, t._contig if shape is t._shape and strides is t._strides
                       else is_contiguous_layout(shape, strides), t._vc)


# a tensor among a kernel launch's arguments expands to its buffer and element offset
_family.TENSOR_TYPE = Tensor
