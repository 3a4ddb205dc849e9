"""clgrad.nn.utils.prune: torch's pruning API. Pruning `name` of a module moves the parameter to
`name + "_orig"`, adds the buffer `name + "_mask"` and a forward pre-hook that sets the plain
attribute `name` to orig * mask before each call; pruning the same tensor again combines the
masks (a PruningContainer prunes only what is left); `remove` makes the pruning permanent.
Masks are computed on the host (numpy) from the tensors' values; random methods draw from
clgrad's generator.

>>> import clgrad
>>> from clgrad.nn.utils import prune
>>> m = clgrad.nn.Linear(4, 2)
>>> _ = prune.l1_unstructured(m, "weight", amount=0.5)
>>> int(m.weight_mask.sum().item()), sorted(n for n, _ in m.named_buffers())
(4, ['weight_mask'])
>>> _ = prune.remove(m, "weight"); prune.is_pruned(m)
False
"""
import numbers
from abc import ABC, abstractmethod

import numpy as np
from ...ops.creation import tensor, rand
from ...autograd.grad_mode import no_grad

__all__ = ["BasePruningMethod", "PruningContainer", "Identity", "RandomUnstructured",
           "L1Unstructured", "RandomStructured", "LnStructured", "CustomFromMask", "identity",
           "random_unstructured", "l1_unstructured", "random_structured", "ln_structured",
           "global_unstructured", "custom_from_mask", "remove", "is_pruned"]


def _tensor_like(values, like):
    return tensor(np.asarray(values, dtype=np.float64), dtype=like.dtype, device=like.device)


def _host(t):
    t = t.detach()
    return (t if t.dtype.itemsize == 8 else t.float()).numpy().astype(np.float64)


class BasePruningMethod(ABC):
    """A pruning method: compute_mask(t, default_mask) gives the new mask; apply/prune/remove
    as torch's."""
    _tensor_name = None
    PRUNING_TYPE = None

    def __call__(self, module, inputs):
        setattr(module, self._tensor_name, self.apply_mask(module))

    @abstractmethod
    def compute_mask(self, t, default_mask):
        ...

    def apply_mask(self, module):
        assert self._tensor_name is not None, f"Module {module} has to be pruned"
        mask = getattr(module, self._tensor_name + "_mask")
        orig = getattr(module, self._tensor_name + "_orig")
        return orig * mask.to(dtype=orig.dtype)

    @classmethod
    def apply(cls, module, name, *args, importance_scores=None, **kwargs):
        old_method, found = None, 0
        hooks_to_remove = []
        for k, hook in module._forward_pre_hooks.items():
            if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
                old_method = hook
                hooks_to_remove.append(k)
                found += 1
        assert found <= 1, (f"Avoid adding multiple pruning hooks to the same tensor {name} of "
                            f"module {module}. Use a PruningContainer.")
        for k in hooks_to_remove:
            del module._forward_pre_hooks[k]
        method = cls(*args, **kwargs)
        method._tensor_name = name
        if old_method is not None:
            if isinstance(old_method, PruningContainer):
                old_method.add_pruning_method(method)
                method = old_method
            else:
                container = PruningContainer(old_method)
                container.add_pruning_method(method)
                method = container
        orig = getattr(module, name)
        if importance_scores is not None:
            if tuple(importance_scores.shape) != tuple(orig.shape):
                raise AssertionError(f"importance_scores should have the same shape as parameter "
                                     f"{name} of {module}")
        else:
            importance_scores = orig
        if old_method is None:
            module.register_parameter(name + "_orig", orig)
            del module._parameters[name]
            default_mask = orig.detach().new_ones(tuple(orig.shape))
        else:
            default_mask = getattr(module, name + "_mask").detach().clone()
        try:
            with no_grad():
                mask = method.compute_mask(importance_scores, default_mask=default_mask)
            module.register_buffer(name + "_mask", mask)
            setattr(module, name, method.apply_mask(module))
            module.register_forward_pre_hook(method)
        except Exception as e:
            if old_method is None:
                orig = getattr(module, name + "_orig")
                module.register_parameter(name, orig)
                del module._parameters[name + "_orig"]
            raise e
        return method

    def prune(self, t, default_mask=None, importance_scores=None):
        """The pruned version of t (t * mask)."""
        if importance_scores is not None and tuple(importance_scores.shape) != tuple(t.shape):
            raise AssertionError("importance_scores should have the same shape as tensor t")
        importance_scores = importance_scores if importance_scores is not None else t
        default_mask = default_mask if default_mask is not None else t.new_ones(tuple(t.shape))
        return t * self.compute_mask(importance_scores, default_mask=default_mask)

    def remove(self, module):
        assert self._tensor_name is not None, (f"Module {module} has to be pruned before "
                                               f"pruning can be removed")
        weight = self.apply_mask(module)
        if hasattr(module, self._tensor_name):
            delattr(module, self._tensor_name)
        orig = module._parameters[self._tensor_name + "_orig"]
        orig.data = weight.data
        del module._parameters[self._tensor_name + "_orig"]
        del module._buffers[self._tensor_name + "_mask"]
        setattr(module, self._tensor_name, orig)


class PruningContainer(BasePruningMethod):
    """A sequence of pruning methods on one tensor: each new one prunes only what is left."""

    def __init__(self, *args):
        self._pruning_methods = tuple()
        if len(args) == 1 and not isinstance(args[0], BasePruningMethod) and \
                hasattr(args[0], "__iter__"):
            args = tuple(args[0])
        for method in args:
            self.add_pruning_method(method)

    def add_pruning_method(self, method):
        if not isinstance(method, BasePruningMethod) and method is not None:
            raise TypeError(f"{type(method)} is not a BasePruningMethod subclass")
        elif method is not None and self._tensor_name != method._tensor_name \
                and self._tensor_name is not None:
            raise ValueError(f"Can only add pruning methods acting on the parameter named "
                             f"'{self._tensor_name}' to PruningContainer {self}. Found "
                             f"'{method._tensor_name}'")
        self._pruning_methods += (method,)
        self._tensor_name = method._tensor_name

    def __len__(self):
        return len(self._pruning_methods)

    def __iter__(self):
        return iter(self._pruning_methods)

    def __getitem__(self, idx):
        return self._pruning_methods[idx]

    def compute_mask(self, t, default_mask):
        method = self._pruning_methods[-1]
        tv, old = _host(t), _host(default_mask)
        new = old.copy()
        if method.PRUNING_TYPE == "unstructured":
            keep = old == 1
            part = method._mask_np(tv[keep], np.ones(int(keep.sum())))
            new[keep] = part
        elif method.PRUNING_TYPE == "structured":
            dim = method.dim if method.dim >= 0 else method.dim + tv.ndim
            other = tuple(d for d in range(tv.ndim) if d != dim)
            channels = np.flatnonzero(old.sum(axis=other) != 0)
            sub_t = np.take(tv, channels, axis=dim)
            sub_old = np.take(old, channels, axis=dim)
            part = method._mask_np(sub_t, sub_old)
            idx = [slice(None)] * tv.ndim
            idx[dim] = channels
            new[tuple(idx)] = part
        elif method.PRUNING_TYPE == "global":
            new = method._mask_np(tv, old)
        else:
            raise ValueError(f"Unrecognized PRUNING_TYPE {method.PRUNING_TYPE}")
        return _tensor_like(new * old, default_mask)


def _validate_amount_init(amount):
    if not isinstance(amount, numbers.Real):
        raise TypeError(f"Invalid type for amount: {amount}. Must be int or float.")
    if (isinstance(amount, numbers.Integral) and amount < 0) or (
            not isinstance(amount, numbers.Integral) and (float(amount) > 1.0 or
                                                         float(amount) < 0.0)):
        raise ValueError(f"amount={amount} should either be a float in the range [0, 1] or a "
                         f"non-negative integer")


def _validate_amount(amount, tensor_size):
    if isinstance(amount, numbers.Integral) and amount > tensor_size:
        raise ValueError(f"amount={amount} should be smaller than the number of parameters to "
                         f"prune={tensor_size}")


def _nparams_toprune(amount, tensor_size):
    if isinstance(amount, numbers.Integral):
        return amount
    return round(amount * tensor_size)


def _validate_structured(t):
    if t.ndim <= 1:
        raise ValueError(f"Structured pruning can only be applied to multidimensional tensors. "
                         f"Found tensor of shape {tuple(t.shape)} with {t.ndim} dims")


def _zero_lowest(amount, scores, default_mask):
    """default_mask with the `amount` entries of lowest score (flat, ties in order) set to 0."""
    _validate_amount(amount, scores.size)
    k = _nparams_toprune(amount, scores.size)
    mask = default_mask.copy()
    if k:
        mask.reshape(-1)[np.argsort(scores, kind="stable")[:k]] = 0
    return mask


class _HostMethod(BasePruningMethod):
    """A method whose mask is computed on the host by _mask_np(values, default_mask)."""

    def compute_mask(self, t, default_mask):
        return _tensor_like(self._mask_np(_host(t), _host(default_mask)), default_mask)


class Identity(_HostMethod):
    """Prune nothing: the mask is all ones."""
    PRUNING_TYPE = "unstructured"

    def _mask_np(self, t, default_mask):
        return default_mask

    @classmethod
    def apply(cls, module, name):
        return super().apply(module, name)


def _rand(n):
    """n uniform numbers from clgrad's generator (so manual_seed fixes the random methods)."""
    return rand(n).numpy().astype(np.float64) if n else np.zeros(0)


class RandomUnstructured(_HostMethod):
    """Prune `amount` entries chosen at random."""
    PRUNING_TYPE = "unstructured"

    def __init__(self, amount):
        _validate_amount_init(amount)
        self.amount = amount

    def _mask_np(self, t, default_mask):
        return _zero_lowest(self.amount, -_rand(t.size), default_mask)

    @classmethod
    def apply(cls, module, name, amount):
        return super().apply(module, name, amount=amount)


class L1Unstructured(_HostMethod):
    """Prune the `amount` entries of smallest absolute value."""
    PRUNING_TYPE = "unstructured"

    def __init__(self, amount):
        _validate_amount_init(amount)
        self.amount = amount

    def _mask_np(self, t, default_mask):
        return _zero_lowest(self.amount, np.abs(t).reshape(-1), default_mask)

    @classmethod
    def apply(cls, module, name, amount, importance_scores=None):
        return super().apply(module, name, amount=amount, importance_scores=importance_scores)


def _prune_channels(t, dim, amount, channel_scores, default_mask):
    """default_mask with the `amount` channels along `dim` of lowest score set to 0 (structured
    pruning): the channels of highest score are kept, ties in order. channel_scores(t, dim) is
    called only when some channel goes."""
    _validate_structured(t)
    dim = dim if dim >= 0 else dim + t.ndim
    n = t.shape[dim]
    _validate_amount(amount, n)
    k = _nparams_toprune(amount, n)
    if k == 0:
        return default_mask
    keep = np.zeros(n, bool)
    keep[np.argsort(-channel_scores(t, dim), kind="stable")[:n - k]] = True
    mask = np.zeros_like(default_mask)
    idx = [slice(None)] * t.ndim
    idx[dim] = keep
    mask[tuple(idx)] = 1
    return mask * default_mask


class RandomStructured(_HostMethod):
    """Prune `amount` channels along `dim` chosen at random."""
    PRUNING_TYPE = "structured"

    def __init__(self, amount, dim=-1):
        _validate_amount_init(amount)
        self.amount = amount
        self.dim = dim

    def _mask_np(self, t, default_mask):
        return _prune_channels(t, self.dim, self.amount, lambda t, dim: _rand(t.shape[dim]),
                               default_mask)

    @classmethod
    def apply(cls, module, name, amount, dim=-1):
        return super().apply(module, name, amount=amount, dim=dim)


class LnStructured(_HostMethod):
    """Prune the `amount` channels along `dim` of smallest L`n` norm."""
    PRUNING_TYPE = "structured"

    def __init__(self, amount, n, dim=-1):
        _validate_amount_init(amount)
        self.amount = amount
        self.n = n
        self.dim = dim

    def _mask_np(self, t, default_mask):
        return _prune_channels(t, self.dim, self.amount, self._norms, default_mask)

    def _norms(self, t, dim):
        flat = np.moveaxis(t, dim, 0).reshape(t.shape[dim], -1)
        p = 2 if self.n == "fro" else self.n
        if p == float("inf"):
            return np.abs(flat).max(axis=1)
        if p == -float("inf"):
            return np.abs(flat).min(axis=1)
        if p == 0:
            return (flat != 0).sum(axis=1).astype(np.float64)
        return (np.abs(flat) ** p).sum(axis=1) ** (1.0 / p)

    @classmethod
    def apply(cls, module, name, amount, n, dim, importance_scores=None):
        return super().apply(module, name, amount=amount, n=n, dim=dim,
                             importance_scores=importance_scores)


class CustomFromMask(_HostMethod):
    PRUNING_TYPE = "global"

    def __init__(self, mask):
        self.mask = mask

    def _mask_np(self, t, default_mask):
        return default_mask * _host(self.mask).reshape(default_mask.shape)

    @classmethod
    def apply(cls, module, name, mask):
        return super().apply(module, name, mask=mask)


def identity(module, name):
    """Attach pruning's reparametrisation to `name` without pruning anything.

    >>> import clgrad
    >>> from clgrad.nn.utils import prune
    >>> m = prune.identity(clgrad.nn.Linear(2, 3), "bias")
    >>> m.bias_mask.tolist()
    [1.0, 1.0, 1.0]
    """
    Identity.apply(module, name)
    return module


def random_unstructured(module, name, amount):
    """Prune `amount` (an int count or a float fraction) random entries of `name`.

    >>> import clgrad
    >>> from clgrad.nn.utils import prune
    >>> m = prune.random_unstructured(clgrad.nn.Linear(5, 2), "weight", amount=3)
    >>> int((m.weight_mask == 0).sum().item())
    3
    """
    RandomUnstructured.apply(module, name, amount)
    return module


def l1_unstructured(module, name, amount, importance_scores=None):
    """Prune the `amount` entries of `name` of smallest |importance| (default: |value|).

    >>> import clgrad
    >>> from clgrad.nn.utils import prune
    >>> m = clgrad.nn.Linear(3, 1, bias=False)
    >>> with clgrad.no_grad(): _ = m.weight.copy_(clgrad.tensor([[0.5, -0.1, 2.0]]))
    >>> prune.l1_unstructured(m, "weight", amount=1).weight.tolist()
    [[0.5, -0.0, 2.0]]
    """
    L1Unstructured.apply(module, name, amount=amount, importance_scores=importance_scores)
    return module


def random_structured(module, name, amount, dim):
    """Prune `amount` random channels of `name` along `dim`.

    >>> import clgrad
    >>> from clgrad.nn.utils import prune
    >>> m = prune.random_structured(clgrad.nn.Linear(3, 4), "weight", amount=0.5, dim=0)
    >>> m.weight_mask.sum(1).tolist().count(0.0)
    2
    """
    RandomStructured.apply(module, name, amount, dim)
    return module


def ln_structured(module, name, amount, n, dim, importance_scores=None):
    """Prune the `amount` channels of `name` along `dim` of smallest L`n` norm.

    >>> import clgrad
    >>> from clgrad.nn.utils import prune
    >>> m = clgrad.nn.Linear(2, 2, bias=False)
    >>> with clgrad.no_grad(): _ = m.weight.copy_(clgrad.tensor([[1.0, 1.0], [3.0, 0.0]]))
    >>> prune.ln_structured(m, "weight", amount=1, n=2, dim=0).weight.tolist()
    [[0.0, 0.0], [3.0, 0.0]]
    """
    LnStructured.apply(module, name, amount, n, dim, importance_scores=importance_scores)
    return module


def global_unstructured(parameters, pruning_method, importance_scores=None, **kwargs):
    """Prune the (module, name) pairs of `parameters` together: the mask of pruning_method
    (e.g. L1Unstructured, amount=...) is computed over all their entries at once.

    >>> import clgrad
    >>> from clgrad.nn.utils import prune
    >>> a, b = clgrad.nn.Linear(2, 2), clgrad.nn.Linear(2, 2)
    >>> prune.global_unstructured([(a, "weight"), (b, "weight")],
    ...                           pruning_method=prune.L1Unstructured, amount=4)
    >>> int(a.weight_mask.sum().item() + b.weight_mask.sum().item())
    4
    """
    if not isinstance(parameters, (list, tuple)) and not hasattr(parameters, "__iter__"):
        raise TypeError("global_unstructured(): parameters is not an Iterable")
    parameters = list(parameters)
    importance_scores = importance_scores if importance_scores is not None else {}
    if not isinstance(importance_scores, dict):
        raise TypeError("global_unstructured(): importance_scores must be of type dict")
    scores = [_host(importance_scores.get((m, n), getattr(m, n))).reshape(-1)
              for m, n in parameters]
    defaults = [_host(getattr(m, n + "_mask")).reshape(-1) if hasattr(m, n + "_mask")
                else np.ones(s.size) for (m, n), s in zip(parameters, scores)]
    method = pruning_method(**kwargs)
    method._tensor_name = "temp"
    if method.PRUNING_TYPE != "unstructured":
        raise TypeError(f'Only "unstructured" PRUNING_TYPE supported for the `pruning_method`. '
                        f'Found method {pruning_method} of type {method.PRUNING_TYPE}')
    container = PruningContainer(method)
    flat = np.concatenate(scores) if scores else np.zeros(0)
    old = np.concatenate(defaults) if defaults else np.zeros(0)
    keep = old == 1
    new = old.copy()
    new[keep] = method._mask_np(flat[keep], np.ones(int(keep.sum())))
    del container
    pointer = 0
    for (module, name), s in zip(parameters, scores):
        param = getattr(module, name)
        part = new[pointer:pointer + s.size].reshape(tuple(param.shape))
        custom_from_mask(module, name, mask=_tensor_like(part, param))
        pointer += s.size


def custom_from_mask(module, name, mask):
    """Prune `name` with the given mask (combined with an existing one).

    >>> import clgrad
    >>> from clgrad.nn.utils import prune
    >>> m = prune.custom_from_mask(clgrad.nn.Linear(2, 1), "bias", clgrad.tensor([0.0]))
    >>> m.bias.abs().tolist()
    [0.0]
    """
    CustomFromMask.apply(module, name, mask)
    return module


def remove(module, name):
    """Make the pruning of `name` permanent: the parameter `name` holds orig * mask, and
    name_orig, name_mask and the hook are gone. ValueError if `name` is not pruned.

    >>> import clgrad
    >>> from clgrad.nn.utils import prune
    >>> m = prune.identity(clgrad.nn.Linear(2, 1), "weight")
    >>> sorted(n for n, _ in prune.remove(m, "weight").named_parameters())
    ['bias', 'weight']
    """
    for k, hook in module._forward_pre_hooks.items():
        if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return module
    raise ValueError(f"Parameter '{name}' of module {module} has to be pruned before pruning "
                     f"can be removed")


def is_pruned(module):
    """Whether the module or any submodule has a pruning hook.

    >>> import clgrad
    >>> from clgrad.nn.utils import prune
    >>> m = clgrad.nn.Sequential(clgrad.nn.Linear(2, 2))
    >>> prune.is_pruned(m), prune.is_pruned(prune.identity(m[0], "weight") and m)
    (False, True)
    """
    for _, submodule in module.named_modules():
        for hook in submodule._forward_pre_hooks.values():
            if isinstance(hook, BasePruningMethod):
                return True
    return False
