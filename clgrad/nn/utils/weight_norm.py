"""The legacy hook-based weight normalisation, torch.nn.utils.weight_norm /
remove_weight_norm (state_dict keys `weight_g`, `weight_v`); new code should use
clgrad.nn.utils.parametrizations.weight_norm."""
import warnings

from ...autograd.grad_mode import no_grad
from ..parameter import Parameter
from .parametrizations import _norm_except_dim, _weight_norm

__all__ = ["WeightNorm", "weight_norm", "remove_weight_norm"]


class WeightNorm:
    """The forward pre-hook that recomputes `module.<name>` from `<name>_g` and `<name>_v`."""

    def __init__(self, name, dim):
        self.name = name
        self.dim = -1 if dim is None else dim

    def compute_weight(self, module):
        g = getattr(module, self.name + "_g")
        v = getattr(module, self.name + "_v")
        return _weight_norm(v, g, self.dim)

    @staticmethod
    def apply(module, name, dim):
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, WeightNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two weight_norm hooks on the same parameter "
                                   f"{name}")
        fn = WeightNorm(name, dim)
        weight = getattr(module, name)
        if type(weight).__name__ == "UninitializedParameter":
            raise ValueError("The module passed to `WeightNorm` can't have uninitialized "
                             "parameters. Make sure to run the dummy forward before applying "
                             "weight normalization")
        del module._parameters[name]
        with no_grad():
            module.register_parameter(name + "_g", Parameter(_norm_except_dim(weight, fn.dim)))
        module.register_parameter(name + "_v", Parameter(weight.detach()))
        setattr(module, name, fn.compute_weight(module))
        module.register_forward_pre_hook(fn)
        return fn

    def remove(self, module):
        with no_grad():
            weight = self.compute_weight(module)
        delattr(module, self.name)
        del module._parameters[self.name + "_g"]
        del module._parameters[self.name + "_v"]
        setattr(module, self.name, Parameter(weight))

    def __call__(self, module, inputs):
        setattr(module, self.name, self.compute_weight(module))


def weight_norm(module, name="weight", dim=0):
    """Legacy weight normalisation: `module.<name>` = g * v / ||v|| recomputed before each
    forward, g and v being parameters `<name>_g` and `<name>_v`. Deprecated in torch in favour of
    parametrizations.weight_norm (and warns the same way).

    >>> import warnings, clgrad
    >>> from clgrad import nn
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     m = nn.utils.weight_norm(nn.Linear(3, 2))
    >>> list(m.state_dict()), m.weight_g.shape
    (['bias', 'weight_g', 'weight_v'], clgrad.Size([2, 1]))
    """
    warnings.warn("`torch.nn.utils.weight_norm` is deprecated in favor of "
                  "`torch.nn.utils.parametrizations.weight_norm`.", FutureWarning, stacklevel=2)
    WeightNorm.apply(module, name, dim)
    return module


def remove_weight_norm(module, name="weight"):
    """Undo the legacy weight_norm: `<name>` becomes a plain parameter holding the current
    normalised value.

    >>> import warnings, clgrad
    >>> from clgrad import nn
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     m = nn.utils.remove_weight_norm(nn.utils.weight_norm(nn.Linear(3, 2)))
    >>> list(m.state_dict())
    ['bias', 'weight']
    """
    for k, hook in list(module._forward_pre_hooks.items()):
        if isinstance(hook, WeightNorm) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return module
    raise ValueError(f"weight_norm of '{name}' not found in {module}")
