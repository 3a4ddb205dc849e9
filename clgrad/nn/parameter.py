"""`Parameter`: a tensor that a `Module` registers as one of its parameters when it is assigned
as an attribute, and `Buffer`, its counterpart for buffers."""
from ..tensor import Tensor, alias


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
            from ..ops.creation import empty
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
            from ..ops.creation import empty
            data = empty(0)
        t = alias(data)
        t._requires_grad = data._requires_grad
        t._is_buffer = True
        t.persistent = persistent
        return t
