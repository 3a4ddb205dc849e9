"""Containers: Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict."""
import operator
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from itertools import chain, islice

from ...tensor import Tensor
from ..parameter import Parameter
from .module import Module, _addindent


class Container(Module):
    """torch's deprecated Container: a Module whose keyword arguments become its children.

    >>> import clgrad, warnings
    >>> with warnings.catch_warnings(record=True):
    ...     c = clgrad.nn.Container(fc=clgrad.nn.Linear(1, 1))
    >>> list(dict(c.named_children()))
    ['fc']
    """

    def __init__(self, **kwargs):
        super().__init__()
        import warnings
        warnings.warn("nn.Container is deprecated. All of it's functionality is now "
                      "implemented in nn.Module. Subclass that instead.", stacklevel=2)
        for name, module in kwargs.items():
            self.add_module(name, module)

__all__ = ["Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict"]


class Sequential(Module):
    """Modules applied one after the other; built from modules or an OrderedDict of them.

    >>> import clgrad
    >>> from clgrad import nn
    >>> net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    >>> net(clgrad.ones(3, 4)).shape, len(net), net[-1]
    (clgrad.Size([3, 2]), 3, Linear(in_features=8, out_features=2, bias=True))
    >>> net[:2]
    Sequential(
      (0): Linear(in_features=4, out_features=8, bias=True)
      (1): ReLU()
    )
    """

    def __init__(self, *args):
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for key, module in args[0].items():
                self.add_module(key, module)
        else:
            for idx, module in enumerate(args):
                self.add_module(str(idx), module)

    def _item_by_idx(self, iterator, idx):
        size = len(self)
        idx = operator.index(idx)
        if not -size <= idx < size:
            raise IndexError(f"index {idx} is out of range")
        return next(islice(iterator, idx % size, None))

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)(OrderedDict(list(self._modules.items())[idx]))
        return self._item_by_idx(self._modules.values(), idx)

    def __setitem__(self, idx, module):
        setattr(self, self._item_by_idx(self._modules.keys(), idx), module)

    def __delitem__(self, idx):
        if isinstance(idx, slice):
            for key in list(self._modules)[idx]:
                delattr(self, key)
        else:
            delattr(self, self._item_by_idx(self._modules.keys(), idx))
        # keep the numbering dense, as torch does
        self._modules = OrderedDict((str(i), m) for i, m in enumerate(self._modules.values()))

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __add__(self, other):
        if not isinstance(other, Sequential):
            raise ValueError(f"add operator supports only objects of Sequential class, but "
                             f"{type(other)} is given.")
        out = Sequential()
        for layer in chain(self, other):
            out.append(layer)
        return out

    def append(self, module):
        """Add a module at the end; returns self."""
        self.add_module(str(len(self)), module)
        return self

    def insert(self, index, module):
        """Insert a module before position index; returns self."""
        if not isinstance(module, Module):
            raise AssertionError(f"module should be of type: {Module}")
        n = len(self._modules)
        if not -n <= index <= n:
            raise IndexError(f"Index out of range: {index}")
        if index < 0:
            index += n
        for i in range(n, index, -1):
            self._modules[str(i)] = self._modules[str(i - 1)]
        self._modules[str(index)] = module
        return self

    def extend(self, sequential):
        """Append every module of an iterable; returns self."""
        for layer in sequential:
            self.append(layer)
        return self

    def forward(self, input):
        for module in self._modules.values():
            input = module(input)
        return input


class ModuleList(Module):
    """A list of modules that registers them (so their parameters are found).

    >>> from clgrad import nn
    >>> layers = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)])
    >>> layers.append(nn.ReLU())
    ModuleList(
      (0-2): 3 x Linear(in_features=2, out_features=2, bias=True)
      (3): ReLU()
    )
    >>> len(list(layers.parameters()))
    6
    """

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self += modules

    def _abs_index(self, idx):
        idx = operator.index(idx)
        if not -len(self) <= idx < len(self):
            raise IndexError(f"index {idx} is out of range")
        return str(idx % len(self))

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)(list(self._modules.values())[idx])
        return self._modules[self._abs_index(idx)]

    def __setitem__(self, idx, module):
        setattr(self, self._abs_index(idx), module)

    def __delitem__(self, idx):
        if isinstance(idx, slice):
            for k in list(self._modules)[idx]:
                delattr(self, k)
        else:
            delattr(self, self._abs_index(idx))
        self._modules = OrderedDict((str(i), m) for i, m in enumerate(self._modules.values()))

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __iadd__(self, modules):
        return self.extend(modules)

    def __add__(self, other):
        out = ModuleList()
        for i, module in enumerate(chain(self, other)):
            out.add_module(str(i), module)
        return out

    def __repr__(self):
        # runs of identical children print once, as torch does: (0-2): 3 x Linear(...)
        reprs = [repr(m) for m in self]
        if not reprs:
            return self._get_name() + "()"
        blocks = []                          # [start, end, repr]
        for i, r in enumerate(reprs):
            if blocks and blocks[-1][2] == r:
                blocks[-1][1] = i
            else:
                blocks.append([i, i, r])
        lines = []
        for start, end, r in blocks:
            line = f"({start}): {r}" if start == end else \
                f"({start}-{end}): {end - start + 1} x {r}"
            lines.append(_addindent(line, 2))
        return self._get_name() + "(\n  " + "\n  ".join(lines) + "\n)"

    def insert(self, index, module):
        """Insert a module before position index."""
        for i in range(len(self._modules), index, -1):
            self._modules[str(i)] = self._modules[str(i - 1)]
        self._modules[str(index)] = module

    def append(self, module):
        """Add a module at the end; returns self."""
        self.add_module(str(len(self)), module)
        return self

    def pop(self, key):
        """Remove and return the module at index key."""
        v = self[key]
        del self[key]
        return v

    def extend(self, modules):
        """Append every module of an iterable; returns self."""
        if not isinstance(modules, Iterable):
            raise TypeError("ModuleList.extend should be called with an iterable, but got " +
                            type(modules).__name__)
        offset = len(self)
        for i, module in enumerate(modules):
            self.add_module(str(offset + i), module)
        return self


class ModuleDict(Module):
    """An ordered dict of modules that registers them.

    >>> from clgrad import nn
    >>> heads = nn.ModuleDict({"cls": nn.Linear(4, 3), "box": nn.Linear(4, 2)})
    >>> list(heads.keys()), "cls" in heads, len(heads)
    (['cls', 'box'], True, 2)
    """

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key):
        return self._modules[key]

    def __setitem__(self, key, module):
        self.add_module(key, module)

    def __delitem__(self, key):
        del self._modules[key]

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules)

    def __contains__(self, key):
        return key in self._modules

    def clear(self):
        """Remove every module."""
        self._modules.clear()

    def pop(self, key):
        """Remove and return the module at key."""
        v = self[key]
        del self[key]
        return v

    def keys(self):
        return self._modules.keys()

    def items(self):
        return self._modules.items()

    def values(self):
        return self._modules.values()

    def update(self, modules):
        """Add modules from a mapping or an iterable of (key, module) pairs."""
        if not isinstance(modules, Iterable):
            raise TypeError("ModuleDict.update should be called with an iterable of key/value "
                            "pairs, but got " + type(modules).__name__)
        if isinstance(modules, (Mapping, ModuleDict)):
            for key, module in modules.items():
                self[key] = module
            return
        for j, m in enumerate(modules):
            if not isinstance(m, Iterable):
                raise TypeError(f"ModuleDict update sequence element #{j} should be Iterable; "
                                f"is {type(m).__name__}")
            if len(m) != 2:
                raise ValueError(f"ModuleDict update sequence element #{j} has length {len(m)}; "
                                 f"2 is required")
            self[m[0]] = m[1]


class ParameterList(Module):
    """A list of parameters that registers them (tensors are wrapped as Parameters).

    >>> import clgrad
    >>> ps = clgrad.nn.ParameterList([clgrad.zeros(2), clgrad.zeros(3)])
    >>> [n for n, _ in ps.named_parameters()], len(ps)
    (['0', '1'], 2)
    """

    def __init__(self, values=None):
        super().__init__()
        self._size = 0
        if values is not None:
            self.extend(values)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return ParameterList([self[i] for i in range(len(self))[idx]])
        idx = operator.index(idx)
        if not -len(self) <= idx < len(self):
            raise IndexError(f"index {idx} is out of range")
        return getattr(self, str(idx % len(self)))

    def __setitem__(self, idx, param):
        idx = operator.index(idx) % len(self)
        if not isinstance(param, Parameter):
            param = Parameter(param)
        setattr(self, str(idx), param)

    def __len__(self):
        return self._size

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def __iadd__(self, parameters):
        return self.extend(parameters)

    def append(self, value):
        """Add a parameter at the end; returns self."""
        self._size += 1
        self[self._size - 1] = value
        return self

    def extend(self, values):
        """Append every parameter of an iterable; returns self."""
        for v in values:
            self.append(v)
        return self

    def extra_repr(self):
        return _parameter_lines(enumerate(self))


class ParameterDict(Module):
    """An ordered dict of parameters that registers them (tensors are wrapped as Parameters).

    >>> import clgrad
    >>> ps = clgrad.nn.ParameterDict({"scale": clgrad.ones(2), "shift": clgrad.zeros(2)})
    >>> [n for n, _ in ps.named_parameters()], "scale" in ps, type(ps["shift"]).__name__
    (['scale', 'shift'], True, 'Parameter')
    """

    def __init__(self, parameters=None):
        super().__init__()
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, key):
        return self._parameters[key]

    def __setitem__(self, key, value):
        if value is not None and not isinstance(value, Parameter):
            if not isinstance(value, Tensor):
                raise TypeError(f"ParameterDict holds tensors (made Parameters) or None, not "
                                f"{type(value).__name__}")
            value = Parameter(value)
        self.register_parameter(key, value)

    def __delitem__(self, key):
        del self._parameters[key]

    def __len__(self):
        return len(self._parameters)

    def __iter__(self):
        return iter(self._parameters)

    def __contains__(self, key):
        return key in self._parameters

    def keys(self):
        return self._parameters.keys()

    def items(self):
        return self._parameters.items()

    def values(self):
        return self._parameters.values()

    def get(self, key, default=None):
        """The parameter at key, or default."""
        return self._parameters.get(key, default)

    def pop(self, key):
        """Remove and return the parameter at key."""
        v = self[key]
        del self[key]
        return v

    def clear(self):
        """Remove every parameter."""
        self._parameters.clear()

    def update(self, parameters):
        """Add parameters from a mapping or an iterable of (key, tensor) pairs."""
        if isinstance(parameters, (Mapping, ParameterDict)):
            pairs = parameters.items()
        elif isinstance(parameters, Iterable):
            pairs = []
            for j, kv in enumerate(parameters):
                if not isinstance(kv, Iterable) or len(kv) != 2:
                    raise ValueError(f"ParameterDict update sequence element #{j} should be a "
                                     f"(key, value) pair")
                pairs.append(kv)
        else:
            raise TypeError("ParametersDict.update should be called with an iterable of "
                            "key/value pairs, but got " + type(parameters).__name__)
        for key, value in pairs:
            self[key] = value

    def extra_repr(self):
        return _parameter_lines(self._parameters.items())


def _parameter_lines(pairs):
    """torch's listing of a parameter container: one line per (key, parameter)."""
    lines = []
    for k, p in pairs:
        if p is None:
            lines.append(f"  ({k}): None")
            continue
        size = "x".join(str(s) for s in p.size())
        lines.append(f"  ({k}): Parameter containing: [clgrad.{p.dtype.name} of size {size}]")
    return "\n".join(lines)
