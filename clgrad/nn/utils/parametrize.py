"""clgrad.nn.utils.parametrize: express a parameter or buffer as a function of other tensors
(torch.nn.utils.parametrize). `register_parametrization(module, "weight", P)` moves the tensor to
`module.parametrizations.weight.original` and turns `module.weight` into a property that
computes `P(original)` at each access; assigning to it runs `P.right_inverse`.

>>> import clgrad
>>> from clgrad import nn
>>> from clgrad.nn.utils import parametrize
>>> class Symmetric(nn.Module):
...     def forward(self, X):
...         return X.triu() + X.triu(1).mT
>>> m = parametrize.register_parametrization(nn.Linear(3, 3), "weight", Symmetric())
>>> W = m.weight
>>> clgrad.equal(W, W.T), type(m).__name__, parametrize.is_parametrized(m, "weight")
(True, 'ParametrizedLinear', True)
"""
import collections.abc
from contextlib import contextmanager
from copy import deepcopy

from ...autograd.grad_mode import no_grad
from ...tensor import Tensor
from ..modules.container import ModuleDict, ModuleList
from ..modules.module import Module
from ..parameter import Parameter

__all__ = ["cached", "ParametrizationList", "register_parametrization", "is_parametrized",
           "remove_parametrizations", "type_before_parametrizations",
           "transfer_parametrizations_and_params"]

_cache_enabled = 0
_cache = {}


@contextmanager
def cached():
    """Inside this context a parametrized tensor is computed once, at its first access, and the
    result reused (for a weight used several times in one forward, e.g. in an RNN).

    >>> import clgrad
    >>> from clgrad import nn
    >>> from clgrad.nn.utils import parametrize
    >>> class Double(nn.Module):
    ...     def forward(self, X):
    ...         return X * 2
    >>> m = parametrize.register_parametrization(nn.Linear(2, 2), "weight", Double())
    >>> with parametrize.cached():
    ...     m.weight is m.weight
    True
    >>> m.weight is m.weight
    False
    """
    global _cache, _cache_enabled
    _cache_enabled += 1
    try:
        yield
    finally:
        _cache_enabled -= 1
        if not _cache_enabled:
            _cache = {}


def _register_parameter_or_buffer(module, name, X):
    if isinstance(X, Parameter):
        module.register_parameter(name, X)
    else:
        module.register_buffer(name, X)


def _maybe_set(dest, src):
    # torch's dest.set_(src): dest (the very Parameter an optimizer may hold) takes src's data
    dest.data = src


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor of a module, applied in order, and the unconstrained
    tensor(s) they act on: `original`, or `original0`, `original1`, ... when the first
    parametrization's right_inverse returns a sequence. Made by register_parametrization.

    >>> import clgrad
    >>> from clgrad import nn
    >>> from clgrad.nn.utils import parametrize
    >>> class Neg(nn.Module):
    ...     def forward(self, X):
    ...         return -X
    >>> m = parametrize.register_parametrization(nn.Linear(2, 2), "weight", Neg())
    >>> type(m.parametrizations.weight).__name__, m.parametrizations.weight.original.shape
    ('ParametrizationList', clgrad.Size([2, 2]))
    """

    def __init__(self, modules, original, unsafe=False):
        if len(modules) == 0:
            raise ValueError("ParametrizationList requires one or more modules.")
        super().__init__(modules)
        self.unsafe = unsafe
        original_shape, original_dtype = original.shape, original.dtype
        # the stored tensor(s) are what the parametrizations map back to `original`
        with no_grad():
            new = original
            for module in reversed(self):
                if hasattr(module, "right_inverse"):
                    try:
                        new = module.right_inverse(new)
                    except NotImplementedError:
                        pass
        if not isinstance(new, Tensor) and not isinstance(new, collections.abc.Sequence):
            raise ValueError(f"'right_inverse' must return a Tensor or a Sequence of tensors "
                             f"(list, tuple...). Got {type(new).__name__}")
        self.is_tensor = isinstance(new, Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)
        if self.is_tensor:
            if original.dtype != new.dtype:
                raise ValueError(f"When `right_inverse` outputs one tensor, it may not change "
                                 f"the dtype.\noriginal.dtype: {original.dtype}\n"
                                 f"right_inverse(original).dtype: {new.dtype}")
            if original.device != new.device:
                raise ValueError(f"When `right_inverse` outputs one tensor, it may not change "
                                 f"the device.\noriginal.device: {original.device}\n"
                                 f"right_inverse(original).device: {new.device}")
            # keep the same object: an optimizer holding the parameter keeps working
            with no_grad():
                _maybe_set(original, new)
            _register_parameter_or_buffer(self, "original", original)
        else:
            for i, originali in enumerate(new):
                if not isinstance(originali, Tensor):
                    raise ValueError(f"'right_inverse' must return a Tensor or a Sequence of "
                                     f"tensors (list, tuple...). Got element {i} of the sequence "
                                     f"with type {type(originali).__name__}.")
                if isinstance(original, Parameter):
                    originali = Parameter(originali, original.requires_grad)
                originali.requires_grad_(original.requires_grad)
                _register_parameter_or_buffer(self, f"original{i}", originali)
        if not self.unsafe:
            Z = self()
            if not isinstance(Z, Tensor):
                raise ValueError(f"A parametrization must return a tensor. Got "
                                 f"{type(Z).__name__}.")
            if Z.dtype != original_dtype:
                raise ValueError(f"Registering a parametrization may not change the dtype of the "
                                 f"tensor, unless `unsafe` flag is enabled.\nunparametrized "
                                 f"dtype: {original_dtype}\nparametrized dtype: {Z.dtype}")
            if Z.shape != original_shape:
                raise ValueError(f"Registering a parametrization may not change the shape of the "
                                 f"tensor, unless `unsafe` flag is enabled.\nunparametrized "
                                 f"shape: {original_shape}\nparametrized shape: {Z.shape}")

    def right_inverse(self, value):
        """Store what makes the parametrized tensor equal `value` (the inverse maps in reverse
        order); what assigning to the parametrized attribute does."""
        with no_grad():
            for module in reversed(self):
                if hasattr(module, "right_inverse"):
                    value = module.right_inverse(value)
                else:
                    raise RuntimeError(f"parametrization {type(module).__name__} does not "
                                       f"implement right_inverse.")
            if self.is_tensor:
                if not isinstance(value, Tensor):
                    raise ValueError(f"`right_inverse` should return a tensor. Got "
                                     f"{type(value).__name__}")
                if value.dtype != self.original.dtype:
                    raise ValueError(f"The tensor returned by `right_inverse` has dtype "
                                     f"{value.dtype} while `original` has dtype "
                                     f"{self.original.dtype}")
                _maybe_set(self.original, value)
            else:
                if not isinstance(value, collections.abc.Sequence):
                    raise ValueError(f"'right_inverse' must return a sequence of tensors. Got "
                                     f"{type(value).__name__}.")
                if len(value) != self.ntensors:
                    raise ValueError(f"'right_inverse' must return a sequence of tensors of "
                                     f"length {self.ntensors}. Got a sequence of length "
                                     f"{len(value)}.")
                for i, tensor in enumerate(value):
                    original_i = getattr(self, f"original{i}")
                    if not isinstance(tensor, Tensor):
                        raise ValueError(f"`right_inverse` must return a sequence of tensors. "
                                         f"Got element {i} of type {type(tensor).__name__}")
                    if original_i.dtype != tensor.dtype:
                        raise ValueError(f"Tensor {i} returned by `right_inverse` has dtype "
                                         f"{tensor.dtype} while `original{i}` has dtype "
                                         f"{original_i.dtype}")
                    _maybe_set(original_i, tensor)

    def forward(self):
        if self.is_tensor:
            x = self[0](self.original)
        else:
            x = self[0](*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for module in list(self)[1:]:
            x = module(x)
        return x


def _default_deepcopy(self, memo):
    obj = memo.get(id(self))
    if obj is not None:
        return obj
    replica = self.__new__(self.__class__)
    memo[id(self)] = replica
    replica.__dict__ = deepcopy(self.__dict__, memo)
    return replica


def _getstate(self):
    raise RuntimeError("Serialization of parametrized modules is only supported through "
                       "state_dict(). See:\nhttps://pytorch.org/tutorials/beginner/"
                       "saving_loading_models.html#saving-loading-a-general-checkpoint-for-"
                       "inference-and-or-resuming-training")


def _inject_new_class(module):
    # a subclass per parametrized module, so that its properties do not leak to other instances
    cls = module.__class__

    def _load_from_state_dict(self, state_dict, prefix, *args):
        # what torch's load_state_dict pre-hooks do here: rename keys of older checkpoints
        for hook in self.__dict__.get("_parametrize_load_hooks", ()):
            hook(state_dict, prefix)
        cls._load_from_state_dict(self, state_dict, prefix, *args)

    dct = {"__getstate__": _getstate, "_load_from_state_dict": _load_from_state_dict}
    if not hasattr(cls, "__deepcopy__"):
        dct["__deepcopy__"] = _default_deepcopy
    module.__class__ = type(f"Parametrized{cls.__name__}", (cls,), dct)


def _inject_property(module, tensor_name):
    if hasattr(module, tensor_name):
        raise AssertionError(f"Module already has an attribute named '{tensor_name}'")

    def get_parametrized(self):
        parametrization = self.parametrizations[tensor_name]
        if not _cache_enabled:
            return parametrization()
        key = (id(self), tensor_name)
        tensor = _cache.get(key)
        if tensor is None:
            tensor = _cache[key] = parametrization()
        return tensor

    def set_original(self, value):
        self.parametrizations[tensor_name].right_inverse(value)

    setattr(module.__class__, tensor_name, property(get_parametrized, set_original))


def _same_dtype_and_shape(a, b, message):
    """Raise ValueError(message(attribute)) unless a and b agree in dtype and shape."""
    for what in ("dtype", "shape"):
        if getattr(a, what) != getattr(b, what):
            raise ValueError(message(what))


def register_parametrization(module, tensor_name, parametrization, *, unsafe=False):
    """Make `module.<tensor_name>` the output of `parametrization` applied to the stored
    unconstrained tensor; registering on an already parametrized tensor appends to its list.
    unsafe=True allows the parametrization to change the shape or dtype.

    >>> import clgrad
    >>> from clgrad import nn
    >>> from clgrad.nn.utils import parametrize
    >>> class Skew(nn.Module):
    ...     def forward(self, X):
    ...         return X.triu(1) - X.triu(1).T
    >>> m = parametrize.register_parametrization(nn.Linear(3, 3), "weight", Skew())
    >>> (m.weight + m.weight.T).abs().max().item()
    0.0
    >>> sorted(m.state_dict())
    ['bias', 'parametrizations.weight.original']
    """
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        if not unsafe:
            Y = getattr(module, tensor_name)
            X = parametrization(Y)
            if not isinstance(X, Tensor):
                raise ValueError(f"A parametrization must return a tensor. Got "
                                 f"{type(X).__name__}.")
            _same_dtype_and_shape(X, Y, lambda what: (
                f"Registering a parametrization may not change the {what} of the tensor, "
                f"unless the `unsafe` flag is enabled.\nmodule.{tensor_name}.{what}: "
                f"{getattr(Y, what)}\nparametrization(module.{tensor_name}).{what}: "
                f"{getattr(X, what)}"))
            if hasattr(parametrization, "right_inverse"):
                try:
                    Z = parametrization.right_inverse(X)
                except NotImplementedError:
                    pass
                else:
                    if not isinstance(Z, Tensor):
                        raise ValueError(f"parametrization.right_inverse must return a tensor. "
                                         f"Got: {type(Z).__name__}")
                    _same_dtype_and_shape(Z, Y, lambda what: (
                        f"The tensor returned by parametrization.right_inverse must have the "
                        f"same {what} as module.{tensor_name}, unless the `unsafe` flag is "
                        f"enabled.\nmodule.{tensor_name}.{what}: {getattr(Y, what)}\n"
                        f"returned {what}: {getattr(Z, what)}"))
        module.parametrizations[tensor_name].append(parametrization)
        module.parametrizations[tensor_name].unsafe |= unsafe
    elif tensor_name in module._buffers or tensor_name in module._parameters:
        original = getattr(module, tensor_name)
        parametrizations = ParametrizationList([parametrization], original, unsafe=unsafe)
        delattr(module, tensor_name)
        if not is_parametrized(module):
            _inject_new_class(module)
            module.parametrizations = ModuleDict()
        _inject_property(module, tensor_name)
        module.parametrizations[tensor_name] = parametrizations
    else:
        raise ValueError(f"Module '{module}' does not have a parameter, a buffer, or a "
                         f"parametrized element with name '{tensor_name}'")
    return module


def is_parametrized(module, tensor_name=None):
    """Whether `module` has a parametrization (on `tensor_name`, if given).

    >>> from clgrad import nn
    >>> from clgrad.nn.utils import parametrize
    >>> parametrize.is_parametrized(nn.Linear(2, 2))
    False
    """
    parametrizations = getattr(module, "parametrizations", None)
    if parametrizations is None or not isinstance(parametrizations, ModuleDict):
        return False
    if tensor_name is None:
        return len(parametrizations) > 0
    return tensor_name in parametrizations


def remove_parametrizations(module, tensor_name, leave_parametrized=True):
    """Undo register_parametrization on `tensor_name`: it becomes a plain parameter (or buffer)
    again, holding the current parametrized value (leave_parametrized=True) or the stored
    unconstrained one. The module gets its own class back once nothing is parametrized.

    >>> import clgrad
    >>> from clgrad import nn
    >>> from clgrad.nn.utils import parametrize
    >>> class Double(nn.Module):
    ...     def forward(self, X):
    ...         return X * 2
    >>> m = nn.Linear(2, 2)
    >>> w = m.weight.detach().clone()
    >>> m = parametrize.register_parametrization(m, "weight", Double())
    >>> m = parametrize.remove_parametrizations(m, "weight")
    >>> type(m).__name__, type(m.weight).__name__, clgrad.equal(m.weight, w * 2)
    ('Linear', 'Parameter', True)
    """
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    parametrizations = module.parametrizations[tensor_name]
    if parametrizations.is_tensor:
        original = parametrizations.original
        if leave_parametrized:
            with no_grad():
                t = getattr(module, tensor_name)
                _maybe_set(original, t)
    elif leave_parametrized:
        t = getattr(module, tensor_name)
        original = Parameter(t.detach()) if t.requires_grad else t
    else:
        raise ValueError("Cannot leave unparametrized (`leave_parametrized=False`) a tensor that "
                         "is parametrized in terms of a sequence of tensors.")
    delattr(module.__class__, tensor_name)
    del module.parametrizations[tensor_name]
    _register_parameter_or_buffer(module, tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = module.__class__.__bases__[0]
    return module


def type_before_parametrizations(module):
    """The module's class as it was before any parametrization was registered.

    >>> from clgrad import nn
    >>> from clgrad.nn.utils import parametrizations, parametrize
    >>> m = parametrizations.weight_norm(nn.Linear(2, 2))
    >>> parametrize.type_before_parametrizations(m).__name__
    'Linear'
    """
    if is_parametrized(module):
        return module.__class__.__bases__[0]
    return type(module)


def transfer_parametrizations_and_params(from_module, to_module, tensor_name=None):
    """Register on `to_module` the parametrizations of `from_module` (all, or `tensor_name`'s),
    sharing their `original` tensors.

    >>> import clgrad
    >>> from clgrad import nn
    >>> from clgrad.nn.utils import parametrizations, parametrize
    >>> a = parametrizations.weight_norm(nn.Linear(2, 2))
    >>> b = parametrize.transfer_parametrizations_and_params(a, nn.Linear(2, 2))
    >>> clgrad.equal(a.weight, b.weight)
    True
    """
    if is_parametrized(from_module):
        names = list(from_module.parametrizations) if tensor_name is None else [tensor_name]
        for name in names:
            if not hasattr(to_module, name):
                setattr(to_module, name, Parameter(getattr(from_module, name).detach()))
            for param_func in from_module.parametrizations[name]:
                register_parametrization(to_module, name, param_func)
            src = from_module.parametrizations[name]
            dst = to_module.parametrizations[name]
            if hasattr(src, "original"):
                dst.original = src.original
            else:
                num = 0
                while hasattr(src, f"original{num}"):
                    setattr(dst, f"original{num}", getattr(src, f"original{num}"))
                    num += 1
    return to_module
