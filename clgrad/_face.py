"""Binds the ops onto `Tensor` (methods and operators) and gathers the `clgrad` namespace.

Tensor knows nothing of the ops; the ops import Tensor; this module joins them by walking each
ops module's FUNCTIONS (exported as clgrad.<name>) and METHODS (bound as Tensor.<name>)."""
import copy as _copy
import numbers

from . import dtypes
from .autograd import engine
from .autograd.node import _add_hook
from .ops import MODULES, creation, index, inplace, join, pointwise, reduce, views
from .ops import activation, methods as _methods
from .ops import complexes as _complexes
from .ops import copies as _copies
from .ops.elementwise import OPS, TABLE, run
from . import tensor as _tensor_layer
from .tensor import Tensor, make_tensor
from .runtime.device import get_device
from ._legacy import NAMES
from .ops._base import copy_into

FUNCTIONS = {}
METHODS = {}


def register(functions=None, methods=None):
    """Add functions to the clgrad namespace and methods to Tensor (ops modules call this)."""
    if functions:
        FUNCTIONS.update(functions)
    if methods:
        METHODS.update(methods)
        for name, fn in methods.items():
            setattr(Tensor, name, fn)


# ---- views and layout --------------------------------------------------------------------------
register(
    functions={n: getattr(views, n) for n in views.__all__},
    methods={
        "view": views.view, "reshape": views.reshape, "view_as": views.view_as,
        "reshape_as": views.reshape_as, "expand": views.expand, "expand_as": views.expand_as,
        "broadcast_to": views.broadcast_to, "permute": views.permute,
        "transpose": views.transpose, "swapaxes": views.swapaxes, "swapdims": views.swapdims,
        "t": views.t, "squeeze": views.squeeze, "unsqueeze": views.unsqueeze,
        "flatten": views.flatten, "unflatten": views.unflatten, "ravel": views.ravel,
        "select": views.select, "narrow": views.narrow, "diagonal": views.diagonal,
        "as_strided": views.as_strided, "unbind": views.unbind, "split": views.split,
        "split_with_sizes": views.split_with_sizes, "chunk": views.chunk,
        "contiguous": views.contiguous, "clone": views.clone, "detach": views.detach,
        "detach_": views.detach_,
    })
Tensor.T = property(lambda self: views.permute(self, tuple(reversed(range(self.ndim))))
                    if self.ndim > 2 else views.t(self))
Tensor.mT = property(views.mT)
Tensor.real = property(_complexes.real, _complexes._set_real)
Tensor.imag = property(_complexes.imag, _complexes._set_imag)
Tensor.H = property(lambda self: _methods.matrix_H(self))
Tensor.mH = property(lambda self: _methods.matrix_mH(self))
Tensor.data = property(lambda self: _data(self), lambda self, v: _set_data(self, v))


def _data(t):
    d = make_tensor(t._storage, t._shape, t._strides, t._offset, t._dtype, t._contig)
    return d


def _set_data(t, v):
    if not isinstance(v, Tensor):
        raise TypeError("data must be a Tensor")
    t._storage, t._shape, t._strides, t._offset = v._storage, v._shape, v._strides, v._offset
    t._dtype, t._contig = v._dtype, v._contig


# ---- dtype conversions ----------------------------------------------------------------------------
def to(self, *args, **kwargs):
    """Convert dtype (and/or device): x.to(clgrad.float64), x.to("cpu"), x.to("cuda:0"),
    x.to("cl:1"), x.to(other).

    >>> import clgrad
    >>> clgrad.tensor([1, 2]).to(clgrad.float32).tolist()
    [1.0, 2.0]
    """
    dtype = kwargs.pop("dtype", None)
    device = kwargs.pop("device", None)
    if isinstance(device, int) and not isinstance(device, bool):
        device = f"cuda:{device}"
    copy = kwargs.pop("copy", False)
    kwargs.pop("non_blocking", None)
    kwargs.pop("memory_format", None)
    if kwargs:
        raise TypeError(f"to() got unexpected keyword arguments {list(kwargs)}")
    for a in args:
        if isinstance(a, Tensor):
            dtype, device = a._dtype, a._storage.device
        elif isinstance(a, dtypes.dtype) or (not isinstance(a, (str, bool)) and a in
                                             (float, int, bool)):
            dtype = a
        elif isinstance(a, int) and not isinstance(a, bool):
            device = f"cuda:{a}"               # torch: x.to(0) is x.to("cuda:0")
        elif isinstance(a, str) or hasattr(a, "index"):
            device = a
        elif isinstance(a, bool):
            pass
        else:
            try:
                dtype = dtypes.as_dtype(a)
            except TypeError:
                raise TypeError(f"to() received an invalid combination of arguments: {a!r}") from None
    out = self
    if device is not None:
        dev = get_device(device)
        if dev is not self._storage.device:
            out = _to_device(out, dev)
    if dtype is not None:
        out = views.to_dtype(out, dtypes.as_dtype(dtype), copy=copy and out is self)
    elif copy and out is self:
        out = views.clone(out)
    return out


def _cuda_spec(device):
    """What x.cuda(device) moves to: "cuda" (the current GPU), "cuda:K" for an int K."""
    if device is None:
        return "cuda"
    return f"cuda:{device}" if isinstance(device, int) else device


def _to_device(t, dev):
    return _copies.ToDevice.apply(t, dev)


def _caster(dt):
    def f(self, memory_format=None):
        return views.to_dtype(self, dt)
    f.__name__ = dt.name
    f.__doc__ = f"x.to({dt})"
    return f


def type_(self, dtype=None, non_blocking=False):
    """torch's Tensor.type: with no argument the legacy type name ('torch.FloatTensor', as torch
    prints it, 'torch.cuda.FloatTensor' on a GPU); otherwise a cast to a dtype or a legacy type
    (a class such as clgrad.LongTensor, or its name)."""
    if dtype is None:
        name = next(n for n, d in NAMES.items() if d is self._dtype)
        return f"torch.{'cuda.' if self.is_cuda else ''}{name}"
    if isinstance(dtype, str) and dtype.rsplit(".", 1)[-1] in NAMES:
        dtype = NAMES[dtype.rsplit(".", 1)[-1]]
    dtype = getattr(dtype, "dtype", dtype)     # a legacy type class
    return views.to_dtype(self, dtypes.as_dtype(dtype))


register(methods={
    "to": to, "float": _caster(dtypes.float32), "double": _caster(dtypes.float64),
    "half": _caster(dtypes.float16), "bfloat16": _caster(dtypes.bfloat16),
    "int": _caster(dtypes.int32), "long": _caster(dtypes.int64), "byte": _caster(dtypes.uint8),
    "char": _caster(dtypes.int8), "short": _caster(dtypes.int16),
    "bool": _caster(dtypes.bool_), "type": type_, "cfloat": _caster(dtypes.complex64),
    "cdouble": _caster(dtypes.complex128), "chalf": _caster(dtypes.complex32),
    "type_as": lambda self, other: views.to_dtype(self, other._dtype),
    "cpu": lambda self, memory_format=None: to(self, "cpu"),
    "cuda": lambda self, device=None, non_blocking=False, memory_format=None:
        to(self, _cuda_spec(device)),
    "cl": lambda self, device=None: to(self, device or "cl"),
})

# ---- elementwise -------------------------------------------------------------------------------
register(functions=pointwise.FUNCTIONS, methods=pointwise.METHODS)


def _number_or_tensor(v):
    return isinstance(v, (Tensor, numbers.Number))


_NEG = OPS["neg"].apply


def _binop(name, reflected=False):
    fn = pointwise.FUNCTIONS[name]

    if reflected:
        def op(self, other):
            if not _number_or_tensor(other):
                return NotImplemented
            return fn(other, self)
    else:
        def op(self, other):
            if not _number_or_tensor(other):
                return NotImplemented
            return fn(self, other)
    return op


def _inplace_op(name):
    meth = pointwise.METHODS[name + "_"]

    def op(self, other):
        if not _number_or_tensor(other):
            return NotImplemented
        return meth(self, other)
    return op


def _mod(self, other):
    if not _number_or_tensor(other):
        return NotImplemented
    return pointwise.remainder(self, other)


def _direct_binop(opcls, reflected=False):
    """The operator for ops whose function is exactly the table op: straight to Op.apply (the
    arithmetic operators are the hottest path of all)."""
    apply = opcls.apply

    if reflected:
        def op(self, other):
            t = type(other)
            if t is float or t is int or t is Tensor or _number_or_tensor(other):
                return apply(other, self)
            return NotImplemented
    else:
        def op(self, other):
            t = type(other)
            if t is float or t is int or t is Tensor or _number_or_tensor(other):
                return apply(self, other)
            return NotImplemented
    return op


for _dunder, _name in (("add", "add"), ("sub", "sub"), ("mul", "mul"), ("truediv", "div"),
                       ("floordiv", "floor_divide"), ("mod", "remainder"), ("pow", "pow"),
                       ("and", "bitwise_and"), ("or", "bitwise_or"), ("xor", "bitwise_xor"),
                       ("lshift", "bitwise_left_shift"), ("rshift", "bitwise_right_shift")):
    if _name in ("add", "sub", "mul", "div"):
        setattr(Tensor, f"__{_dunder}__", _direct_binop(OPS[_name]))
        setattr(Tensor, f"__r{_dunder}__", _direct_binop(OPS[_name], reflected=True))
    else:
        setattr(Tensor, f"__{_dunder}__", _binop(_name))
        setattr(Tensor, f"__r{_dunder}__", _binop(_name, reflected=True))
    if _name + "_" in pointwise.METHODS:
        setattr(Tensor, f"__i{_dunder}__", _inplace_op(_name))
Tensor.__itruediv__ = lambda self, other: pointwise.div_(self, other)
Tensor.__ipow__ = lambda self, other: pointwise.pow_(self, other)
for _dunder, _name in (("eq", "eq"), ("ne", "ne"), ("lt", "lt"), ("le", "le"), ("gt", "gt"),
                       ("ge", "ge")):
    setattr(Tensor, f"__{_dunder}__", _binop(_name))
Tensor.__hash__ = lambda self: id(self)
Tensor.__neg__ = lambda self: _NEG(self)
Tensor.__pos__ = lambda self: self
Tensor.__abs__ = lambda self: pointwise.FUNCTIONS["abs"](self)


def _invert(self):
    if self._dtype is dtypes.bool_:
        return pointwise.FUNCTIONS["logical_not"](self)
    if self._dtype.kind == "f":
        raise TypeError("~ (bitwise_not) is only supported for integer and bool tensors")
    return pointwise.FUNCTIONS["bitwise_not"](self)


Tensor.__invert__ = _invert

# ---- reductions --------------------------------------------------------------------------------
register(functions={n: getattr(reduce, n) for n in reduce.__all__ if not n.endswith("_raw")
                    and n not in ("wrap_dims",)},
         methods={n: getattr(reduce, n) for n in reduce.__all__ if not n.endswith("_raw")
                  and n not in ("wrap_dims", "sum_to")})
Tensor.sum_to_size = lambda self, *size: reduce.sum_to(self, views._shape_arg(size))

# ---- joining, indexing, in-place ---------------------------------------------------------------
register(functions={n: getattr(join, n) for n in join.__all__})
register(methods={"copy_": inplace.copy_, "fill_": inplace.fill_, "zero_": inplace.zero_})


# Tensor.hardshrink / Tensor.prelu: nn.functional's, which live in the ops layer
register(methods={"hardshrink": activation.hardshrink, "prelu": activation.prelu})
for _mod in MODULES:
    if _mod is not pointwise:
        register(getattr(_mod, "FUNCTIONS", None), getattr(_mod, "METHODS", None))


def _iter(self):
    if not self._shape:
        raise TypeError("iteration over a 0-d tensor")
    return iter(views.unbind(self, 0))


Tensor.__iter__ = _iter

# ---- creation ----------------------------------------------------------------------------------
register(functions={n: getattr(creation, n) for n in creation.__all__})


def _new(fn):
    def f(self, *args, dtype=None, device=None, requires_grad=False, **kw):
        if "size" in kw and args:
            raise TypeError(f"new_{fn.__name__}() got multiple values for argument 'size'")
        return fn(*args, dtype=dtype or self._dtype, device=device or self._storage.device,
                  requires_grad=requires_grad, **kw)
    return f


def new_tensor(self, data, dtype=None, device=None, requires_grad=False):
    return creation.tensor(data, dtype=dtype or self._dtype, device=device or self.device,
                           requires_grad=requires_grad)


def new_full(self, size, fill_value, dtype=None, device=None, requires_grad=False):
    return creation.full(size, fill_value, dtype=dtype or self._dtype,
                         device=device or self._storage.device, requires_grad=requires_grad)


register(methods={
    "new_zeros": _new(creation.zeros), "new_ones": _new(creation.ones),
    "new_empty": _new(creation.empty), "new_tensor": new_tensor, "new_full": new_full,
    "uniform_": creation.uniform_, "normal_": creation.normal_,
    "bernoulli_": creation.bernoulli_, "random_": creation.random_,
    "exponential_": creation.exponential_, "cauchy_": creation.cauchy_,
    "log_normal_": creation.log_normal_, "geometric_": creation.geometric_,
    "bernoulli": lambda self, p=None, generator=None: creation.bernoulli(self, p,
                                                                         generator=generator),
})


def tensor_from_data(args, kwargs):
    """torch.Tensor(data) / torch.Tensor(*sizes): the legacy constructor, float32."""
    if len(args) == 1 and not isinstance(args[0], numbers.Number):
        return creation.tensor(args[0], dtype=dtypes.get_default_dtype(), **kwargs)
    return creation.empty(*args, **kwargs)


def deepcopy_tensor(t, memo):
    c = views.clone(t.detach()) if t._requires_grad or t._grad_fn is not None else views.clone(t)
    if t._requires_grad and t._grad_fn is None:
        c._requires_grad = True
    if t._grad is not None:
        c._grad = deepcopy_tensor(t._grad, memo)
    for k, v in t.__dict__.items():
        if not k.startswith("_"):
            setattr(c, k, _copy.deepcopy(v, memo))
    if t._is_param:
        c.__class__ = t.__class__
        c._is_param = True
    memo[id(t)] = c
    return c


# what the tensor layer needs from the ops, filled in here so that its imports point down
Tensor.__deepcopy__ = deepcopy_tensor
_tensor_layer._legacy_constructor = tensor_from_data


# ---- autograd on tensors -----------------------------------------------------------------------
def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
    """Compute the gradient of this tensor w.r.t. graph leaves (accumulated into their .grad).

    >>> import clgrad
    >>> x = clgrad.tensor([2.0], requires_grad=True)
    >>> (x * x).sum().backward()
    >>> x.grad.tolist()
    [4.0]
    """
    engine.backward((self,), None if gradient is None else (gradient,), retain_graph,
                    create_graph, inputs=inputs)


def register_hook(self, hook):
    """hook(grad) runs when the gradient for this tensor is computed; a non-None result
    replaces it. Returns a handle with remove().

    >>> import clgrad
    >>> x = clgrad.ones(2, requires_grad=True)
    >>> h = x.register_hook(lambda g: g * 2)
    >>> x.sum().backward(); x.grad.tolist()
    [2.0, 2.0]
    """
    if not self._requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    fn = self.grad_fn
    if fn is None:
        if self._hooks is None:
            self._hooks = {}
        return _add_hook(self._hooks, hook)
    return fn._register_tensor_pre_hook(self._output_nr, hook)


def register_post_accumulate_grad_hook(self, hook):
    """hook(tensor) runs after this leaf's .grad has been updated."""
    if not self._requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if self.grad_fn is not None:
        raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
    if self._post_acc_hooks is None:
        self._post_acc_hooks = {}
    return _add_hook(self._post_acc_hooks, hook)


def retain_grad(self):
    """Keep this non-leaf tensor's gradient in .grad during backward."""
    if not self._requires_grad:
        raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
    fn = self.grad_fn
    if fn is None or self._retains_grad:
        return
    import weakref
    if fn._retain is None:
        fn._retain = {}
    fn._retain[self._output_nr] = weakref.ref(self)
    self._retains_grad = True


register(methods={"backward": backward, "register_hook": register_hook,
                  "register_post_accumulate_grad_hook": register_post_accumulate_grad_hook,
                  "retain_grad": retain_grad})

# ---- what the autograd core needs from the ops -------------------------------------------------
from .autograd import node as _node  # noqa: E402
from .ops._base import full_raw, size_repr  # noqa: E402

_h = _node.ops
_h.add = lambda a, b: pointwise.add(a, b)
_h.zeros = lambda shape, dt, dev: full_raw(tuple(shape), 0, dt, dev)
_h.ones = lambda shape, dt, dev: full_raw(tuple(shape), 1, dt, dev)
_h.zeros_like = lambda t: full_raw(t._shape, 0, t._dtype, t._storage.device)
_h.sum_to = reduce.sum_to
_h.cast = lambda t, dt: views.to_dtype(t, dt, warn=False)
_h.as_strided = lambda t, shape, strides, offset: views.AsStrided.apply(t, tuple(shape),
                                                                         tuple(strides),
                                                                         t._offset + offset)
_h.view_scatter = views.view_scatter
_h.view_as_real = _complexes.view_as_real
_h.view_as_complex = lambda t: _complexes.view_as_complex(_complexes._pairable(t))
_h.size_repr = lambda shape: f"clgrad.Size({list(shape)})"
_h.detach = views.detach
_h.clone = lambda t: views.Clone.apply(t)


def _add_inplace_raw(old, g):
    if old._contig and old._dtype is g._dtype and not (g._storage is old._storage):
        run(TABLE["add"], (old, g), (), out=old, cdt=old._dtype)
    else:
        copy_into(old, run(TABLE["add"], (old, g)))
    old._vc[0] += 1


_h.add_inplace_raw = _add_inplace_raw


# ---- numpy's argument names --------------------------------------------------------------------
# torch accepts numpy's `axis=` for `dim=` and `keepdims=` for `keepdim=` wherever an op takes a
# dim; every function and method with a `dim` or `keepdim` parameter gets the same aliases.
def _numpy_aliases(fn):
    def with_aliases(*args, **kwargs):
        if kwargs:
            for alias, name in (("axis", "dim"), ("keepdims", "keepdim")):
                if alias in kwargs:
                    if name in kwargs:
                        raise TypeError(f"{fn.__name__}() got both {name!r} and its alias "
                                        f"{alias!r}")
                    kwargs[name] = kwargs.pop(alias)
        return fn(*args, **kwargs)
    _functools.update_wrapper(with_aliases, fn)
    return with_aliases


def _takes_dim(fn):
    try:
        params = _inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return ("dim" in params or "keepdim" in params) and "axis" not in params


import functools as _functools  # noqa: E402
import inspect as _inspect  # noqa: E402

for _table, _bind in ((FUNCTIONS, None), (METHODS, Tensor)):
    for _name, _fn in list(_table.items()):
        if callable(_fn) and _takes_dim(_fn):
            _table[_name] = _numpy_aliases(_fn)
            if _bind is not None:
                setattr(_bind, _name, _table[_name])
