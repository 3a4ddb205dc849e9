"""`Module`, the base class of every layer: it keeps its parameters, buffers and child modules in
ordered dicts (filled by attribute assignment), walks them recursively, converts them, saves and
loads them as a state dict, and runs hooks around `forward` and in backward."""
from collections import OrderedDict

from ...autograd.grad_mode import no_grad
from ...tensor import Tensor
from ... import dtypes
from ..parameter import Buffer, Parameter
from . import _module_hooks, _module_state_dict
from ._module_state_dict import _IncompatibleKeys  # noqa: F401  torch's home of the name
from ...runtime.device import get_device

__all__ = ["Module"]


def _typename(obj):
    """How torch names a type in its messages: 'int', 'clgrad.FloatTensor', 'mypkg.Thing'."""
    if isinstance(obj, Tensor):
        return f"clgrad.{obj.dtype.name.capitalize()}Tensor"
    cls = obj if isinstance(obj, type) else type(obj)
    module = cls.__module__
    return cls.__qualname__ if module in ("builtins", None) else f"{module}.{cls.__qualname__}"


def _addindent(s, spaces):
    lines = s.split("\n")
    if len(lines) == 1:
        return s
    return lines[0] + "\n" + "\n".join(" " * spaces + line for line in lines[1:])


class Module:
    """Base class for all neural network modules: subclass it, assign parameters, buffers and
    submodules as attributes in `__init__`, and define `forward`.

    >>> import clgrad
    >>> from clgrad import nn
    >>> class Net(nn.Module):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.fc = nn.Linear(3, 2)
    ...         self.scale = nn.Parameter(clgrad.ones(1))
    ...     def forward(self, x):
    ...         return self.fc(x) * self.scale
    >>> net = Net()
    >>> [name for name, _ in net.named_parameters()]
    ['scale', 'fc.weight', 'fc.bias']
    >>> net(clgrad.ones(4, 3)).shape
    clgrad.Size([4, 2])
    """

    training: bool
    _version = 1

    def __init__(self):
        # the bookkeeping dicts go straight into __dict__: __setattr__ reads them
        setattr_ = super().__setattr__
        setattr_("training", True)
        setattr_("_parameters", OrderedDict())
        setattr_("_buffers", OrderedDict())
        setattr_("_non_persistent_buffers_set", set())
        setattr_("_modules", OrderedDict())
        setattr_("_forward_pre_hooks", OrderedDict())
        setattr_("_forward_pre_hooks_with_kwargs", set())
        setattr_("_forward_hooks", OrderedDict())
        setattr_("_forward_hooks_with_kwargs", set())
        setattr_("_forward_hooks_always_called", set())
        setattr_("_backward_pre_hooks", OrderedDict())
        setattr_("_backward_hooks", OrderedDict())

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required '
                                  f'"forward" function')

    # ---- registration ------------------------------------------------------------------------
    def register_buffer(self, name, tensor, persistent=True):
        """Add a buffer: state that is not a parameter (a running mean, say), kept in state_dict
        unless persistent=False, and converted by .to() with the parameters.

        >>> import clgrad
        >>> m = clgrad.nn.Module()
        >>> m.register_buffer("count", clgrad.zeros(1))
        >>> list(m.state_dict())
        ['count']
        """
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"buffer name should be a string. Got {_typename(name)}")
        if "." in name:
            raise KeyError('buffer name can\'t contain "."')
        if name == "":
            raise KeyError('buffer name can\'t be empty string ""')
        if hasattr(self, name) and name not in self._buffers:
            raise KeyError(f"attribute '{name}' already exists")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{_typename(tensor)}' object to buffer '{name}' "
                            f"(clgrad Tensor or None required)")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def register_parameter(self, name, param):
        """Add a parameter (a Parameter, or None for an absent one such as a disabled bias).

        >>> import clgrad
        >>> m = clgrad.nn.Module()
        >>> m.register_parameter("w", clgrad.nn.Parameter(clgrad.zeros(2)))
        >>> m.w.shape
        clgrad.Size([2])
        """
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"parameter name should be a string. Got {_typename(name)}")
        if "." in name:
            raise KeyError('parameter name can\'t contain "."')
        if name == "":
            raise KeyError('parameter name can\'t be empty string ""')
        if hasattr(self, name) and name not in self._parameters:
            raise KeyError(f"attribute '{name}' already exists")
        if param is None:
            self._parameters[name] = None
            return
        if not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{_typename(param)}' object to parameter '{name}' "
                            f"(clgrad.nn.Parameter or None required)")
        if param.grad_fn is not None:
            raise ValueError(f"Cannot assign non-leaf Tensor to parameter '{name}'. Model "
                             f"parameters must be created explicitly. To express '{name}' as a "
                             f"function of another Tensor, compute the value in the forward() "
                             f"method.")
        self._parameters[name] = param

    def add_module(self, name, module):
        """Add a child module (what assigning one as an attribute does).

        >>> from clgrad import nn
        >>> m = nn.Module()
        >>> m.add_module("act", nn.ReLU())
        >>> m
        Module(
          (act): ReLU()
        )
        """
        if not isinstance(module, Module) and module is not None:
            raise TypeError(f"{_typename(module)} is not a Module subclass")
        if not isinstance(name, str):
            raise TypeError(f"module name should be a string. Got {_typename(name)}")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        if "." in name:
            raise KeyError(f'module name can\'t contain ".", got: {name}')
        if name == "":
            raise KeyError('module name can\'t be empty string ""')
        self._modules[name] = module

    register_module = add_module

    def __setattr__(self, name, value):
        def remove_from(*containers):
            for d in containers:
                if name in d:
                    if isinstance(d, dict):
                        del d[name]
                    else:
                        d.discard(name)

        params = self.__dict__.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            remove_from(self.__dict__, self._buffers, self._modules,
                        self._non_persistent_buffers_set)
            self.register_parameter(name, value)
            return
        if params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as parameter '{name}' "
                                f"(clgrad.nn.Parameter or None expected)")
            self.register_parameter(name, value)
            return
        modules = self.__dict__.get("_modules")
        if isinstance(value, Module):
            if modules is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            remove_from(self.__dict__, self._parameters, self._buffers,
                        self._non_persistent_buffers_set)
            modules[name] = value
            return
        if modules is not None and name in modules:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as child module '{name}' "
                                f"(clgrad.nn.Module or None expected)")
            modules[name] = value
            return
        buffers = self.__dict__.get("_buffers")
        if isinstance(value, Buffer) or (buffers is not None and name in buffers):
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{_typename(value)}' as buffer '{name}' "
                                f"(clgrad.nn.Buffer, clgrad.Tensor or None expected)")
            if isinstance(value, Buffer):
                persistent = value.persistent
            else:
                persistent = name not in self._non_persistent_buffers_set
            self.register_buffer(name, value, persistent)
            return
        super().__setattr__(name, value)

    def __getattr__(self, name):
        # only called when normal lookup fails: parameters, buffers and modules live in dicts
        d = self.__dict__
        for store in ("_parameters", "_buffers", "_modules"):
            if store in d and name in d[store]:
                return d[store][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name):
        if name in self._parameters:
            del self._parameters[name]
        elif name in self._buffers:
            del self._buffers[name]
            self._non_persistent_buffers_set.discard(name)
        elif name in self._modules:
            del self._modules[name]
        else:
            super().__delattr__(name)

    def __dir__(self):
        keys = list(super().__dir__()) + list(self._parameters) + list(self._modules) + \
            list(self._buffers)
        return sorted(k for k in set(keys) if not k[0].isdigit())

    # ---- walking the tree --------------------------------------------------------------------
    def _named_members(self, get_members, prefix="", recurse=True, remove_duplicate=True):
        seen = set()
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) \
            if recurse else [(prefix, self)]
        for module_prefix, module in modules:
            for k, v in get_members(module):
                if v is None or id(v) in seen:
                    continue
                if remove_duplicate:
                    seen.add(id(v))
                yield module_prefix + ("." if module_prefix else "") + k, v

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        """(name, Parameter) pairs, this module's first, then its children's (each once).

        >>> from clgrad import nn
        >>> [n for n, p in nn.Sequential(nn.Linear(2, 2), nn.ReLU()).named_parameters()]
        ['0.weight', '0.bias']
        """
        return self._named_members(lambda m: m._parameters.items(), prefix, recurse,
                                   remove_duplicate)

    def parameters(self, recurse=True):
        """The parameters (what an optimizer is given).

        >>> from clgrad import nn
        >>> sum(p.numel() for p in nn.Linear(3, 2).parameters())
        8
        """
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        """(name, buffer) pairs.

        >>> from clgrad import nn
        >>> [n for n, _ in nn.BatchNorm1d(3).named_buffers()]
        ['running_mean', 'running_var', 'num_batches_tracked']
        """
        return self._named_members(lambda m: m._buffers.items(), prefix, recurse,
                                   remove_duplicate)

    def buffers(self, recurse=True):
        """The buffers.

        >>> from clgrad import nn
        >>> [b.shape for b in nn.BatchNorm1d(2).buffers()]
        [clgrad.Size([2]), clgrad.Size([2]), clgrad.Size([])]
        """
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def named_children(self):
        """(name, module) for the direct children.

        >>> from clgrad import nn
        >>> [n for n, _ in nn.Sequential(nn.ReLU(), nn.Tanh()).named_children()]
        ['0', '1']
        """
        seen = set()
        for name, module in self._modules.items():
            if module is not None and id(module) not in seen:
                seen.add(id(module))
                yield name, module

    def children(self):
        """The direct children.

        >>> from clgrad import nn
        >>> list(nn.Sequential(nn.ReLU(), nn.Sequential(nn.Tanh())).children())
        [ReLU(), Sequential(
          (0): Tanh()
        )]
        """
        for _, m in self.named_children():
            yield m

    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        """(name, module) for this module ('') and every descendant, depth first.

        >>> from clgrad import nn
        >>> [n for n, _ in nn.Sequential(nn.Linear(1, 1), nn.Sequential(nn.ReLU())).named_modules()]
        ['', '0', '1', '1.0']
        """
        if memo is None:
            memo = set()
        if id(self) in memo:
            return
        if remove_duplicate:
            memo.add(id(self))
        yield prefix, self
        for name, module in self._modules.items():
            if module is None:
                continue
            yield from module.named_modules(memo, prefix + ("." if prefix else "") + name,
                                            remove_duplicate)

    def modules(self):
        """This module and every descendant.

        >>> from clgrad import nn
        >>> [type(m).__name__ for m in nn.Sequential(nn.Linear(1, 1)).modules()]
        ['Sequential', 'Linear']
        """
        for _, m in self.named_modules():
            yield m

    def get_submodule(self, target):
        """The descendant at dotted path `target` ('' is this module).

        >>> from clgrad import nn
        >>> nn.Sequential(nn.Sequential(nn.ReLU())).get_submodule("0.0")
        ReLU()
        """
        if target == "":
            return self
        mod = self
        for item in target.split("."):
            if item not in mod._modules:
                raise AttributeError(mod._get_name() + " has no attribute `" + item + "`")
            mod = mod._modules[item]
            if not isinstance(mod, Module):
                raise AttributeError("`" + item + "` is not an nn.Module")
        return mod

    def get_parameter(self, target):
        """The parameter at dotted path `target`.

        >>> from clgrad import nn
        >>> nn.Sequential(nn.Linear(2, 3)).get_parameter("0.bias").shape
        clgrad.Size([3])
        """
        module_path, _, name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, name):
            raise AttributeError(mod._get_name() + " has no attribute `" + name + "`")
        param = getattr(mod, name)
        if not isinstance(param, Parameter):
            raise AttributeError("`" + name + "` is not an nn.Parameter")
        return param

    def get_buffer(self, target):
        """The buffer at dotted path `target`.

        >>> from clgrad import nn
        >>> nn.Sequential(nn.BatchNorm1d(3)).get_buffer("0.running_mean").tolist()
        [0.0, 0.0, 0.0]
        """
        module_path, _, name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if name not in mod._buffers:
            raise AttributeError(mod._get_name() + " has no attribute `" + name + "`")
        return mod._buffers[name]

    def apply(self, fn):
        """Call fn on every child (recursively), then on this module; returns self.

        >>> from clgrad import nn
        >>> net = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 1))
        >>> _ = net.apply(lambda m: nn.init.zeros_(m.bias) if isinstance(m, nn.Linear) else None)
        >>> net[1].bias.tolist()
        [0.0]
        """
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    # ---- modes and gradients -----------------------------------------------------------------
    def train(self, mode=True):
        """Set training mode (dropout active, batch norm updating its statistics); returns self.

        >>> from clgrad import nn
        >>> net = nn.Sequential(nn.Dropout()).eval()
        >>> net.training, net[0].training, net.train().training
        (False, False, True)
        """
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self):
        """Evaluation mode: same as train(False).

        >>> from clgrad import nn
        >>> nn.Dropout().eval().training
        False
        """
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        """Set requires_grad on every parameter (False freezes the module); returns self.

        >>> from clgrad import nn
        >>> all(not p.requires_grad for p in nn.Linear(2, 2).requires_grad_(False).parameters())
        True
        """
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none=True):
        """Reset the parameters' gradients: to None (default) or to zeros.

        >>> import clgrad
        >>> lin = clgrad.nn.Linear(2, 1)
        >>> lin(clgrad.ones(1, 2)).sum().backward()
        >>> lin.zero_grad(); lin.weight.grad is None
        True
        """
        for p in self.parameters():
            if p.grad is None:
                continue
            if set_to_none:
                p.grad = None
            else:
                g = p.grad
                if g.grad_fn is not None:
                    g.detach_()
                else:
                    g.requires_grad_(False)
                g.zero_()

    # ---- conversions -------------------------------------------------------------------------
    def _apply(self, fn):
        """Replace every parameter's data, gradient and buffer by fn(it). Parameters stay the same
        objects (their .data changes), so optimizers holding them keep working."""
        for module in self.children():
            module._apply(fn)
        with no_grad():
            for param in self._parameters.values():
                if param is None:
                    continue
                new = fn(param)
                if new is not param:
                    param.data = new
                if param.grad is not None:
                    g = fn(param.grad)
                    if g is not param.grad:
                        param._grad = g
            for key, buf in self._buffers.items():
                if buf is not None:
                    self._buffers[key] = fn(buf)
        return self

    def to(self, *args, **kwargs):
        """Move and/or cast the parameters and buffers: .to(device), .to(dtype),
        .to(device, dtype), .to(tensor). Only floating-point tensors change dtype. In place;
        returns self.

        >>> import clgrad
        >>> lin = clgrad.nn.Linear(2, 2).to(clgrad.float64)
        >>> lin.weight.dtype, type(lin.weight).__name__
        (clgrad.float64, 'Parameter')
        """
        device, dtype = _parse_to(args, kwargs)
        if dtype is not None and not dtype.is_floating_point:
            raise TypeError(f"nn.Module.to only accepts floating point or complex dtypes, but "
                            f"got desired dtype={dtype}")

        def convert(t):
            if dtype is not None and t.is_floating_point():
                return t.to(device=device, dtype=dtype)
            return t.to(device=device) if device is not None else t
        return self._apply(convert)

    def _cast_floats(self, dt):
        return self._apply(lambda t: t.to(dt) if t.is_floating_point() else t)

    def float(self):
        """Cast floating-point parameters and buffers to float32; returns self.

        >>> import clgrad
        >>> clgrad.nn.Linear(1, 1).half().float().weight.dtype
        clgrad.float32
        """
        return self._cast_floats(dtypes.float32)

    def double(self):
        """Cast floating-point parameters and buffers to float64; returns self.

        >>> import clgrad
        >>> clgrad.nn.Linear(1, 1).double().bias.dtype
        clgrad.float64
        """
        return self._cast_floats(dtypes.float64)

    def half(self):
        """Cast floating-point parameters and buffers to float16; returns self.

        >>> import clgrad
        >>> clgrad.nn.BatchNorm1d(2).half().running_var.dtype
        clgrad.float16
        """
        return self._cast_floats(dtypes.float16)

    def bfloat16(self):
        """Cast floating-point parameters and buffers to bfloat16; returns self.

        >>> import clgrad
        >>> clgrad.nn.Linear(1, 1).bfloat16().weight.dtype
        clgrad.bfloat16
        """
        return self._cast_floats(dtypes.bfloat16)

    def share_memory(self):
        """torch's Module.share_memory: calls share_memory_() on every parameter and buffer;
        returns self. OpenCL buffers cannot be shared between processes, so this changes
        nothing: tensors sent to another process go by value (see clgrad.multiprocessing).

        >>> import clgrad
        >>> m = clgrad.nn.Linear(1, 1).share_memory()
        >>> type(m).__name__
        'Linear'
        """
        for t in list(self.parameters()) + list(self.buffers()):
            t.share_memory_()
        return self

    def cpu(self):
        """Move parameters and buffers to the CPU OpenCL device ("cpu"); returns self.

        >>> import clgrad
        >>> clgrad.nn.Linear(1, 1).cpu().weight.device
        device(type='cpu')
        """
        return self._apply(lambda t: t.cpu())

    def cuda(self, device=None):
        """Move parameters and buffers to a GPU OpenCL device ("cuda", or "cuda:K" for an int
        K); returns self. Raises RuntimeError where there is no GPU.

        >>> import clgrad
        >>> m = clgrad.nn.Linear(1, 1)
        >>> m.cuda() is m if clgrad.cuda.is_available() else True
        True
        """
        return self._apply(lambda t: t.cuda(device))

    def cl(self, device=None):
        """Move parameters and buffers to an OpenCL device by clgrad's name ("cl:N", an index over
        every OpenCL device; default: the default device); returns self.

        >>> import clgrad
        >>> dev = clgrad.cl.devices()[-1]
        >>> clgrad.nn.Linear(1, 1).cl(f"cl:{dev.index}").weight.device == clgrad.device(dev)
        True
        """
        return self._apply(lambda t: t.cl(device))

    # ---- state dict (clgrad/nn/modules/_module_state_dict.py) ------------------------------------
    _save_to_state_dict = _module_state_dict._save_to_state_dict
    state_dict = _module_state_dict.state_dict
    _load_from_state_dict = _module_state_dict._load_from_state_dict
    load_state_dict = _module_state_dict.load_state_dict

    # ---- hooks (clgrad/nn/modules/_module_hooks.py) -----------------------------------------------
    register_forward_pre_hook = _module_hooks.register_forward_pre_hook
    register_forward_hook = _module_hooks.register_forward_hook
    register_full_backward_pre_hook = _module_hooks.register_full_backward_pre_hook
    register_full_backward_hook = _module_hooks.register_full_backward_hook

    _compiled_call = None         # set by compile()

    def __call__(self, *args, **kwargs):
        if self._compiled_call is not None:
            return self._compiled_call(*args, **kwargs)
        if not (self._forward_pre_hooks or self._forward_hooks or self._backward_hooks or
                self._backward_pre_hooks):
            return self.forward(*args, **kwargs)
        return self._call_with_hooks(args, kwargs)

    def _call_uncompiled(self, *args, **kwargs):
        if not (self._forward_pre_hooks or self._forward_hooks or self._backward_hooks or
                self._backward_pre_hooks):
            return self.forward(*args, **kwargs)
        return self._call_with_hooks(args, kwargs)

    def compile(self, *args, **kwargs):
        """Compile this module's calls in place (torch's Module.compile; the arguments are
        clgrad.compile's).

        >>> import clgrad
        >>> lin = clgrad.nn.Linear(2, 2); lin.compile()
        >>> lin(clgrad.ones(1, 2)).shape
        clgrad.Size([1, 2])
        """
        from ...compiler import compile as _compile
        object.__setattr__(self, "_compiled_call", _compile(self._call_uncompiled, *args,
                                                            **kwargs))

    _call_with_hooks = _module_hooks._call_with_hooks

    # ---- printing ----------------------------------------------------------------------------
    def _get_name(self):
        return type(self).__name__

    def extra_repr(self):
        """The module's own settings as shown inside its repr; subclasses override it.

        >>> import clgrad
        >>> clgrad.nn.Linear(2, 3).extra_repr()
        'in_features=2, out_features=3, bias=True'
        """
        return ""

    def __repr__(self):
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = [f"({key}): " + _addindent(repr(module), 2)
                       for key, module in self._modules.items()]
        lines = extra_lines + child_lines
        main = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                main += extra_lines[0]
            else:
                main += "\n  " + "\n  ".join(lines) + "\n"
        return main + ")"


def _parse_to(args, kwargs):
    """(device, dtype) from the arguments of Module.to, as torch accepts them."""
    device = kwargs.pop("device", None)
    dtype = kwargs.pop("dtype", None)
    kwargs.pop("non_blocking", None)
    kwargs.pop("memory_format", None)
    if kwargs:
        raise TypeError(f"to() got unexpected keyword arguments {sorted(kwargs)}")
    for a in args:
        if isinstance(a, Tensor):
            device, dtype = a.device, a.dtype
        elif isinstance(a, dtypes.dtype):
            dtype = a
        elif isinstance(a, bool):
            continue                       # non_blocking given positionally
        elif a is not None:
            device = a
    if isinstance(device, int) and not isinstance(device, bool):
        device = f"cuda:{device}"          # torch: module.to(0) is module.to("cuda:0")
    if device is not None:
        device = get_device(device)
    if dtype is not None:
        dtype = dtypes.as_dtype(dtype)
    return device, dtype
