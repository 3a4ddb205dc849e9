"""Lazy modules: LazyLinear, LazyConv1d/2d/3d, LazyConvTranspose1d/2d/3d, LazyBatchNorm1d/2d/3d
and LazyInstanceNorm1d/2d/3d hold UninitializedParameters until their first call, infer the
input size from it, materialize their parameters and become the non-lazy class (torch's
LazyModuleMixin). Loading a state dict into a lazy module materializes its parameters too.

>>> import clgrad
>>> from clgrad import nn
>>> net = nn.Sequential(nn.LazyLinear(8), nn.ReLU(), nn.LazyLinear(2))
>>> net(clgrad.randn(4, 5)).shape
clgrad.Size([4, 2])
>>> net[0]
Linear(in_features=5, out_features=8, bias=True)
"""
import itertools

from ... import dtypes
from ...autograd.grad_mode import no_grad
from ...ops.creation import tensor
from ..parameter import UninitializedBuffer, UninitializedParameter, is_lazy
from .batchnorm import BatchNorm1d, BatchNorm2d, BatchNorm3d, _BatchNorm
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from .linear import Linear
from .normalization import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d, reset_affine

__all__ = ["LazyModuleMixin", "LazyLinear", "LazyConv1d", "LazyConv2d", "LazyConv3d",
           "LazyConvTranspose1d", "LazyConvTranspose2d", "LazyConvTranspose3d",
           "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d", "LazyInstanceNorm1d",
           "LazyInstanceNorm2d", "LazyInstanceNorm3d"]


class LazyModuleMixin:
    """Mixin for modules whose parameters' shapes come from their first input: a forward
    pre-hook calls `initialize_parameters(*args, **kwargs)`, then checks that nothing is left
    uninitialized and turns the module into `cls_to_become`.

    >>> import clgrad
    >>> from clgrad import nn
    >>> class LazyScale(nn.modules.lazy.LazyModuleMixin, nn.Module):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.w = nn.UninitializedParameter()
    ...     def initialize_parameters(self, x):
    ...         self.w.materialize(x.shape[-1:])
    ...         with clgrad.no_grad():
    ...             self.w.fill_(2.0)
    ...     def forward(self, x):
    ...         return x * self.w
    >>> m = LazyScale()
    >>> m.has_uninitialized_params(), m(clgrad.ones(3)).tolist(), m.has_uninitialized_params()
    (True, [2.0, 2.0, 2.0], False)
    """

    cls_to_become = None

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._initialize_hook = self.register_forward_pre_hook(self._infer_parameters,
                                                               with_kwargs=True)

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        # uninitialized tensors go in as they are (detach would be an op on them)
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if is_lazy(param) or keep_vars \
                    else param.detach()
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buf if is_lazy(buf) or keep_vars else buf.detach()

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        # torch's _lazy_load_hook: what the checkpoint holds gives the shapes
        for name, param in itertools.chain(self._parameters.items(), self._buffers.items()):
            key = prefix + name
            if key in state_dict and param is not None and is_lazy(param) and \
                    not is_lazy(state_dict[key]):
                with no_grad():
                    param.materialize(state_dict[key].shape)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys,
                                      unexpected_keys, error_msgs)

    def initialize_parameters(self, *args, **kwargs):
        """Materialize the parameters from the first call's arguments (each lazy module
        defines it)."""
        raise NotImplementedError(f"initialize_parameters is not implemented for "
                                  f"{self.__class__.__name__}")

    def has_uninitialized_params(self):
        """Whether any parameter or buffer of this module is still uninitialized.

        >>> from clgrad import nn
        >>> nn.LazyLinear(3).has_uninitialized_params()
        True
        """
        return any(is_lazy(t) for t in itertools.chain(self._parameters.values(),
                                                       self._buffers.values()))

    def _infer_parameters(self, module, args, kwargs=None):
        module.initialize_parameters(*args, **(kwargs or {}))
        if module.has_uninitialized_params():
            raise RuntimeError(f"module {self._get_name()} has not been fully initialized")
        module._initialize_hook.remove()
        delattr(module, "_initialize_hook")
        if module.cls_to_become is not None:
            module.__class__ = module.cls_to_become

    def _replicate_for_data_parallel(self):
        raise RuntimeError("Modules with uninitialized parameters can't be used with "
                           "`DataParallel`. Run a dummy forward pass to correctly initialize the "
                           "modules")


class LazyLinear(LazyModuleMixin, Linear):
    """A Linear whose in_features is the last dim of its first input.

    >>> import clgrad
    >>> m = clgrad.nn.LazyLinear(3)
    >>> m
    LazyLinear(in_features=0, out_features=3, bias=True)
    >>> m(clgrad.ones(2, 5)).shape, m.weight.shape, type(m).__name__
    (clgrad.Size([2, 3]), clgrad.Size([3, 5]), 'Linear')
    """

    cls_to_become = Linear

    def __init__(self, out_features, bias=True, device=None, dtype=None):
        super().__init__(0, 0, False)
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_features = out_features
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input):
        if self.has_uninitialized_params():
            with no_grad():
                self.in_features = input.shape[-1]
                self.weight.materialize((self.out_features, self.in_features))
                if self.bias is not None:
                    self.bias.materialize((self.out_features,))
                self.reset_parameters()
        if self.in_features == 0:
            # loaded from a state dict: in_features comes from the weight
            if input.shape[-1] != self.weight.shape[-1]:
                raise AssertionError(f"The in_features inferred from input: {input.shape[-1]} "
                                     f"is not equal to in_features from self.weight: "
                                     f"{self.weight.shape[-1]}")
            self.in_features = input.shape[-1]


class _LazyConvXdMixin(LazyModuleMixin):
    def _setup_lazy(self, out_channels, bias, device, dtype):
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_channels = out_channels
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()

    def _get_in_channels(self, input):
        no_batch = self._nd + 1
        if input.dim() not in (no_batch, no_batch + 1):
            raise RuntimeError(f"Expected {no_batch}D (unbatched) or {no_batch + 1}D (batched) "
                               f"input to {self.__class__.__name__}, but got input of size: "
                               f"{input.shape}")
        return input.shape[1] if input.dim() == no_batch + 1 else input.shape[0]

    def initialize_parameters(self, input, *args, **kwargs):
        if self.has_uninitialized_params():
            self.in_channels = self._get_in_channels(input)
            if self.in_channels % self.groups != 0:
                raise ValueError("in_channels must be divisible by groups")
            if self.transposed:
                shape = (self.in_channels, self.out_channels // self.groups) + self.kernel_size
            else:
                shape = (self.out_channels, self.in_channels // self.groups) + self.kernel_size
            with no_grad():
                self.weight.materialize(shape)
                if self.bias is not None:
                    self.bias.materialize((self.out_channels,))
                self.reset_parameters()


def _lazy_conv(base, doc):
    def __init__(self, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True, padding_mode="zeros", device=None, dtype=None):
        # in and out channels 0 while unknown; bias=False so that no empty bias is made.
        # LazyModuleMixin.__init__ registers the hook and then runs base.__init__
        LazyModuleMixin.__init__(self, 0, 0, kernel_size, stride, padding, dilation, groups,
                                 False, padding_mode)
        self._setup_lazy(out_channels, bias, device, dtype)
    return type(f"Lazy{base.__name__}", (_LazyConvXdMixin, base),
                {"__init__": __init__, "cls_to_become": base, "__doc__": doc,
                 "__module__": __name__})


def _lazy_conv_transpose(base, doc):
    def __init__(self, out_channels, kernel_size, stride=1, padding=0, output_padding=0,
                 groups=1, bias=True, dilation=1, padding_mode="zeros", device=None,
                 dtype=None):
        LazyModuleMixin.__init__(self, 0, 0, kernel_size, stride, padding, output_padding,
                                 groups, False, dilation, padding_mode)
        self._setup_lazy(out_channels, bias, device, dtype)
    return type(f"Lazy{base.__name__}", (_LazyConvXdMixin, base),
                {"__init__": __init__, "cls_to_become": base, "__doc__": doc,
                 "__module__": __name__})


LazyConv1d = _lazy_conv(Conv1d, """A Conv1d whose in_channels is the channel dim of its first
    input.

    >>> import clgrad
    >>> m = clgrad.nn.LazyConv1d(4, 3)
    >>> m(clgrad.ones(2, 5, 8)).shape, m
    (clgrad.Size([2, 4, 6]), Conv1d(5, 4, kernel_size=(3,), stride=(1,)))
    """)
LazyConv2d = _lazy_conv(Conv2d, """A Conv2d whose in_channels is the channel dim of its first
    input.

    >>> import clgrad
    >>> m = clgrad.nn.LazyConv2d(4, 3, padding=1)
    >>> m(clgrad.ones(1, 2, 5, 5)).shape, m.weight.shape
    (clgrad.Size([1, 4, 5, 5]), clgrad.Size([4, 2, 3, 3]))
    """)
LazyConv3d = _lazy_conv(Conv3d, """A Conv3d whose in_channels is the channel dim of its first
    input.

    >>> import clgrad
    >>> m = clgrad.nn.LazyConv3d(2, 2)
    >>> m(clgrad.ones(1, 3, 3, 3, 3)).shape, m.weight.shape
    (clgrad.Size([1, 2, 2, 2, 2]), clgrad.Size([2, 3, 2, 2, 2]))
    """)
LazyConvTranspose1d = _lazy_conv_transpose(ConvTranspose1d, """A ConvTranspose1d whose
    in_channels is the channel dim of its first input.

    >>> import clgrad
    >>> m = clgrad.nn.LazyConvTranspose1d(4, 3, stride=2)
    >>> m(clgrad.ones(2, 5, 4)).shape, m.weight.shape
    (clgrad.Size([2, 4, 9]), clgrad.Size([5, 4, 3]))
    """)
LazyConvTranspose2d = _lazy_conv_transpose(ConvTranspose2d, """A ConvTranspose2d whose
    in_channels is the channel dim of its first input.

    >>> import clgrad
    >>> m = clgrad.nn.LazyConvTranspose2d(2, 2, groups=2)
    >>> m(clgrad.ones(1, 4, 3, 3)).shape, m.weight.shape
    (clgrad.Size([1, 2, 4, 4]), clgrad.Size([4, 1, 2, 2]))
    """)
LazyConvTranspose3d = _lazy_conv_transpose(ConvTranspose3d, """A ConvTranspose3d whose
    in_channels is the channel dim of its first input.

    >>> import clgrad
    >>> m = clgrad.nn.LazyConvTranspose3d(1, 2)
    >>> m(clgrad.ones(1, 2, 2, 2, 2)).shape
    clgrad.Size([1, 1, 3, 3, 3])
    """)


class _LazyNormBase(LazyModuleMixin):
    def __init__(self, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True,
                 device=None, dtype=None, *, bias=True):
        # num_features 0, nothing affine or tracked: the lazy tensors are set below
        super().__init__(0, eps, momentum, False, False, device, dtype, bias=False)
        self.affine = affine
        self.track_running_stats = track_running_stats
        if affine:
            self.weight = UninitializedParameter(device=device, dtype=dtype)
            if bias:
                self.bias = UninitializedParameter(device=device, dtype=dtype)
        if track_running_stats:
            self.running_mean = UninitializedBuffer(device=device, dtype=dtype)
            self.running_var = UninitializedBuffer(device=device, dtype=dtype)
            self.num_batches_tracked = tensor(0, dtype=dtypes.int64, device=device)

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.num_features != 0:
            # torch's _NormBase.reset_parameters: running statistics and the affine weights
            if self.track_running_stats:
                self.running_mean.zero_()
                self.running_var.fill_(1)
                self.num_batches_tracked.zero_()
            reset_affine(self)

    def initialize_parameters(self, input):
        if self.has_uninitialized_params():
            self.num_features = input.shape[1]
            with no_grad():
                if self.affine:
                    self.weight.materialize((self.num_features,))
                    if self.bias is not None:
                        self.bias.materialize((self.num_features,))
                if self.track_running_stats:
                    self.running_mean.materialize((self.num_features,))
                    self.running_var.materialize((self.num_features,))
                self.reset_parameters()


def _lazy_norm(base, name, doc):
    return type(name, (_LazyNormBase, base), {"cls_to_become": base, "__doc__": doc,
                                              "__module__": __name__})


LazyBatchNorm1d = _lazy_norm(BatchNorm1d, "LazyBatchNorm1d", """A BatchNorm1d whose
    num_features is the channel dim (1) of its first input.

    >>> import clgrad
    >>> m = clgrad.nn.LazyBatchNorm1d()
    >>> _ = m(clgrad.randn(4, 3))
    >>> m
    BatchNorm1d(3, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)
    """)
LazyBatchNorm2d = _lazy_norm(BatchNorm2d, "LazyBatchNorm2d", """A BatchNorm2d whose
    num_features is the channel dim (1) of its first input.

    >>> import clgrad
    >>> m = clgrad.nn.LazyBatchNorm2d(affine=False)
    >>> _ = m(clgrad.randn(2, 3, 2, 2))
    >>> sorted(m.state_dict())
    ['num_batches_tracked', 'running_mean', 'running_var']
    """)
LazyBatchNorm3d = _lazy_norm(BatchNorm3d, "LazyBatchNorm3d", """A BatchNorm3d whose
    num_features is the channel dim (1) of its first input.

    >>> import clgrad
    >>> m = clgrad.nn.LazyBatchNorm3d()
    >>> m(clgrad.randn(2, 3, 2, 2, 2)).shape, m.running_mean.shape
    (clgrad.Size([2, 3, 2, 2, 2]), clgrad.Size([3]))
    """)
LazyInstanceNorm1d = _lazy_norm(InstanceNorm1d, "LazyInstanceNorm1d", """An InstanceNorm1d whose
    num_features is dim 1 of its first input (torch's lazy defaults: affine and
    track_running_stats True).

    >>> import clgrad
    >>> m = clgrad.nn.LazyInstanceNorm1d()
    >>> m(clgrad.randn(2, 3, 5)).shape, m.weight.shape
    (clgrad.Size([2, 3, 5]), clgrad.Size([3]))
    """)
LazyInstanceNorm2d = _lazy_norm(InstanceNorm2d, "LazyInstanceNorm2d", """An InstanceNorm2d whose
    num_features is dim 1 of its first input.

    >>> import clgrad
    >>> m = clgrad.nn.LazyInstanceNorm2d(affine=False, track_running_stats=False)
    >>> m(clgrad.randn(2, 3, 4, 4)).shape, type(m).__name__
    (clgrad.Size([2, 3, 4, 4]), 'InstanceNorm2d')
    """)
LazyInstanceNorm3d = _lazy_norm(InstanceNorm3d, "LazyInstanceNorm3d", """An InstanceNorm3d whose
    num_features is dim 1 of its first input.

    >>> import clgrad
    >>> m = clgrad.nn.LazyInstanceNorm3d()
    >>> m(clgrad.randn(1, 2, 2, 2, 2)).shape
    clgrad.Size([1, 2, 2, 2, 2])
    """)
