"""Module's state dict: saving each module's parameters and persistent buffers under dotted
names, and loading them back with torch's checks and messages. Module (module.py) takes these
functions as its methods, so subclasses override `_save_to_state_dict` / `_load_from_state_dict`
as in torch."""
import itertools
from collections import OrderedDict, namedtuple
from collections.abc import Mapping

from ...autograd.grad_mode import no_grad
from ...tensor import Tensor
from ..parameter import Parameter, is_lazy


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    """What load_state_dict returns: the keys it missed and the ones it did not expect."""

    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


def _save_to_state_dict(self, destination, prefix, keep_vars):
    for name, param in self._parameters.items():
        if param is not None:
            destination[prefix + name] = param if keep_vars else param.detach()
    for name, buf in self._buffers.items():
        if buf is not None and name not in self._non_persistent_buffers_set:
            destination[prefix + name] = buf if keep_vars else buf.detach()


def state_dict(self, *, destination=None, prefix="", keep_vars=False):
    """An ordered dict of every parameter and persistent buffer by dotted name (detached
    tensors sharing the module's data unless keep_vars).

    >>> from clgrad import nn
    >>> list(nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3)).state_dict())
    ['0.weight', '0.bias', '1.weight', '1.bias', '1.running_mean', '1.running_var',
     '1.num_batches_tracked']
    """
    if destination is None:
        destination = OrderedDict()
    self._save_to_state_dict(destination, prefix, keep_vars)
    for name, module in self._modules.items():
        if module is not None:
            module.state_dict(destination=destination, prefix=prefix + name + ".",
                              keep_vars=keep_vars)
    return destination


def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                          unexpected_keys, error_msgs):
    """Load this module's own entries (torch's signature, so subclasses can override it)."""
    assign = local_metadata.get("assign_to_params_buffers", False)
    persistent = {k: v for k, v in self._buffers.items()
                  if k not in self._non_persistent_buffers_set}
    local_state = {k: v for k, v in itertools.chain(self._parameters.items(),
                                                    persistent.items()) if v is not None}
    for name, param in local_state.items():
        key = prefix + name
        if key not in state_dict:
            missing_keys.append(key)
            continue
        value = state_dict[key]
        if not isinstance(value, Tensor):
            error_msgs.append(f'While copying the parameter named "{key}", expected '
                              f'clgrad.Tensor or Tensor-like object from checkpoint but '
                              f'received {type(value)}')
            continue
        if is_lazy(param):                # still uninitialized (so is value): nothing to copy
            continue
        if len(param.shape) == 0 and len(value.shape) == 1:
            value = value[0]              # checkpoints of old torch stored scalars as [1]
        if value.shape != param.shape:
            error_msgs.append(f"size mismatch for {key}: copying a param with shape "
                              f"{value.shape} from checkpoint, the shape in current model is "
                              f"{param.shape}.")
            continue
        try:
            with no_grad():
                if assign:
                    if isinstance(param, Parameter) and not isinstance(value, Parameter):
                        value = Parameter(value, requires_grad=param.requires_grad)
                    else:
                        value.requires_grad_(param.requires_grad)
                    setattr(self, name, value)
                else:
                    param.copy_(value)
        except Exception as ex:
            error_msgs.append(f'While copying the parameter named "{key}", whose dimensions '
                              f'in the model are {param.size()} and whose dimensions in the '
                              f'checkpoint are {value.size()}, an exception occurred : '
                              f'{ex.args}.')
    for key in state_dict:
        if key.startswith(prefix):
            head = key[len(prefix):].split(".", 1)
            if len(head) > 1:
                if head[0] not in self._modules:
                    unexpected_keys.append(key)
            elif head[0] not in local_state:
                unexpected_keys.append(key)


def load_state_dict(self, state_dict, strict=True, assign=False):
    """Copy parameters and buffers from a state dict. strict=True raises on missing or
    unexpected keys; shapes must always match. Returns (missing_keys, unexpected_keys).

    >>> import clgrad
    >>> a, b = clgrad.nn.Linear(2, 2), clgrad.nn.Linear(2, 2)
    >>> b.load_state_dict(a.state_dict())
    <All keys matched successfully>
    >>> clgrad.equal(a.weight, b.weight)
    True
    >>> b.load_state_dict({"weight": a.weight.detach()}, strict=False)
    _IncompatibleKeys(missing_keys=['bias'], unexpected_keys=[])
    """
    if not isinstance(state_dict, Mapping):
        raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
    missing, unexpected, errors = [], [], []
    state_dict = OrderedDict(state_dict)

    metadata = {"assign_to_params_buffers": assign}

    def load(module, prefix):
        module._load_from_state_dict(state_dict, prefix, metadata, True, missing, unexpected,
                                     errors)
        for name, child in module._modules.items():
            if child is not None:
                load(child, prefix + name + ".")
    load(self, "")
    if strict:
        if unexpected:
            errors.insert(0, "Unexpected key(s) in state_dict: {}. ".format(
                ", ".join(f'"{k}"' for k in unexpected)))
        if missing:
            errors.insert(0, "Missing key(s) in state_dict: {}. ".format(
                ", ".join(f'"{k}"' for k in missing)))
    if errors:
        raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(
            self._get_name(), "\n\t".join(errors)))
    return _IncompatibleKeys(missing, unexpected)
