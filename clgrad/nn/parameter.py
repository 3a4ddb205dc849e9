"""`Parameter`: a tensor that a `Module` registers as one of its parameters when it is assigned
as an attribute, and `Buffer`, its counterpart for buffers."""
from ..tensor import Tensor, alias
from ..ops.creation import empty


class Parameter(Tensor):
    """A tensor that is a module parameter: assigning one to a Module attribute registers it. It
    shares `data`'s storage and version counter and requires grad unless told otherwise. Ops on a
    Parameter return plain Tensors, as in torch.

    >>> import clgrad
    >>> p = clgrad.nn.Parameter(clgrad.tensor([1.0, 2.0]))
    >>> p.requires_grad, isinstance(p, clgrad.Tensor), type(p * 2).__name__
    (True, True, 'Tensor')
    >>> print(p)
    Parameter containing:
    tensor([1., 2.], requires_grad=True)
    """

    __slots__ = ()            # the same layout as Tensor, so a Tensor can become a Parameter

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            data = empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter(): data must be a Tensor, not {type(data).__name__}")
        t = alias(data)                       # shares storage and version counter, no history
        t.__class__ = cls
        t._is_param = True
        t.requires_grad_(requires_grad)
        return t

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()


class _BufferMeta(type):
    # a Buffer is a plain Tensor carrying a mark, as in torch; isinstance looks for the mark
    def __instancecheck__(cls, obj):
        return isinstance(obj, Tensor) and obj.__dict__.get("_is_buffer", False)


class Buffer(metaclass=_BufferMeta):
    """Marks a tensor to be registered as a buffer when assigned to a Module attribute
    (torch.nn.Buffer): returns a plain Tensor sharing `data`'s storage, with the mark.

    >>> import clgrad
    >>> m = clgrad.nn.Module()
    >>> m.stats = clgrad.nn.Buffer(clgrad.zeros(2), persistent=False)
    >>> [n for n, _ in m.named_buffers()], list(m.state_dict())
    (['stats'], [])
    """

    def __new__(cls, data=None, *, persistent=True):
        if data is None:
            data = empty(0)
        t = alias(data)
        t._requires_grad = data._requires_grad
        t._is_buffer = True
        t.persistent = persistent
        return t


# ---- uninitialized parameters and buffers (lazy modules) ----------------------------------------
# what an uninitialized tensor may still do: be moved, cast, inspected for dtype and device, and
# take part in a module's bookkeeping; every other public Tensor name raises torch's ValueError
_CONVERSIONS = ("size", "copy_", "is_complex", "is_floating_point", "half", "float", "double",
                "bfloat16", "char", "short", "int", "long", "cuda", "cpu", "cl", "to",
                "get_device")
_ALLOWED = frozenset(_CONVERSIONS + ("materialize", "cls_to_become", "requires_grad",
                                     "requires_grad_", "grad", "data", "device", "dtype",
                                     "is_leaf", "grad_fn", "persistent", "shape", "is_cuda",
                                     "share_memory_"))


def _use_error(what, cls):
    return ValueError(f"Attempted to use an uninitialized parameter in {what}. This error "
                      f"happens when you are using a `LazyModule` or explicitly manipulating "
                      f"`torch.nn.parameter.{cls}` objects. When using LazyModules Call `forward` "
                      f"with a dummy batch to initialize the parameters before calling torch "
                      f"functions")


class UninitializedTensorMixin:
    """What UninitializedParameter and UninitializedBuffer share: an empty tensor with a device
    and dtype, waiting for `materialize(shape)`; its shape cannot be read and it takes part in no
    op (torch's errors)."""

    __slots__ = ()

    def __getattribute__(self, name):
        if name[0] != "_" and name not in _ALLOWED and hasattr(Tensor, name):
            raise _use_error(f"Tensor.{name}", type(self).__name__)
        return object.__getattribute__(self, name)

    def materialize(self, shape, device=None, dtype=None):
        """Give it data of `shape` (uninitialized values) on its device and dtype, or the ones
        given, and make it the class it stands for (Parameter, or Tensor for a buffer)."""
        device = self.device if device is None else device
        dtype = self.dtype if dtype is None else dtype
        self.data = empty(shape, device=device, dtype=dtype)
        self.__class__ = self.cls_to_become

    @property
    def shape(self):
        raise RuntimeError("Can't access the shape of an uninitialized parameter or buffer. This "
                           "error usually happens in `load_state_dict` when trying to load an "
                           "uninitialized parameter into an initialized one. Call `forward` to "
                           "initialize the parameters before accessing their attributes.")

    def share_memory_(self):
        raise RuntimeError("Can't share memory on an uninitialized parameter or buffer. Call "
                           "`forward` to initialize the parameters before calling "
                           "`module.share_memory()`.")

    def __repr__(self):
        return f"<{self.__class__.__name__}>"

    def __reduce_ex__(self, proto):
        return (self.__class__, (self.requires_grad,))

    def __deepcopy__(self, memo):
        if id(self) not in memo:
            memo[id(self)] = type(self)(self.requires_grad, self.device, self.dtype)
        return memo[id(self)]


def _plain_method(name):
    def method(self, *args, **kwargs):
        return getattr(alias(self), name)(*args, **kwargs)
    method.__name__ = name
    return method


def _refuse(name):
    def method(self, *args, **kwargs):
        raise _use_error(f"Tensor.{name}", type(self).__name__)
    method.__name__ = name
    return method


for _n in _CONVERSIONS:
    if hasattr(Tensor, _n):               # run on a plain alias: their insides use other methods
        setattr(UninitializedTensorMixin, _n, _plain_method(_n))
# operators are looked up on the type, past __getattribute__
for _n in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or",
           "xor", "lshift", "rshift"):
    for _f in (f"__{_n}__", f"__r{_n}__", f"__i{_n}__"):
        setattr(UninitializedTensorMixin, _f, _refuse(_f))
for _f in ("__neg__", "__pos__", "__abs__", "__invert__", "__getitem__", "__setitem__", "__lt__",
           "__le__", "__gt__", "__ge__", "__len__", "__iter__", "__bool__", "__float__",
           "__int__", "__index__", "__array__"):
    setattr(UninitializedTensorMixin, _f, _refuse(_f))


def is_lazy(param):
    """Whether `param` is an UninitializedParameter or UninitializedBuffer.

    >>> import clgrad
    >>> from clgrad.nn.parameter import is_lazy
    >>> is_lazy(clgrad.nn.UninitializedParameter()), is_lazy(clgrad.nn.Parameter(clgrad.ones(1)))
    (True, False)
    """
    return isinstance(param, UninitializedTensorMixin)


class UninitializedParameter(UninitializedTensorMixin, Parameter):
    """A Parameter whose shape is not known yet (what lazy modules hold until their first
    call): it can be moved and cast, and `materialize(shape)` makes it a Parameter.

    >>> import clgrad
    >>> p = clgrad.nn.UninitializedParameter(dtype=clgrad.float64)
    >>> p
    <UninitializedParameter>
    >>> p.materialize((2, 3))
    >>> type(p).__name__, p.shape, p.dtype
    ('Parameter', clgrad.Size([2, 3]), clgrad.float64)
    """

    __slots__ = ()
    cls_to_become = Parameter

    def __new__(cls, requires_grad=True, device=None, dtype=None):
        return Parameter.__new__(cls, empty(0, device=device, dtype=dtype), requires_grad)


class UninitializedBuffer(UninitializedTensorMixin, Tensor):
    """A buffer whose shape is not known yet; `materialize(shape)` makes it a Tensor.

    >>> import clgrad
    >>> b = clgrad.nn.UninitializedBuffer()
    >>> b.materialize((4,))
    >>> type(b).__name__, b.shape
    ('Tensor', clgrad.Size([4]))
    """

    __slots__ = ()
    cls_to_become = Tensor

    def __new__(cls, requires_grad=False, device=None, dtype=None, persistent=True):
        t = alias(empty(0, device=device, dtype=dtype))
        t.__class__ = cls
        t.requires_grad_(requires_grad)
        t._is_buffer = True
        t.persistent = persistent
        return t
