"""clgrad.utils.hooks: what libraries import from torch.utils.hooks. RemovableHandle is the
handle every clgrad hook registration returns.

>>> import clgrad
>>> from clgrad.utils.hooks import RemovableHandle
>>> hooks = {}
>>> h = RemovableHandle(hooks); hooks[h.id] = print
>>> h.remove(); hooks
{}
"""
import warnings

from ..autograd.node import RemovableHandle

__all__ = ["RemovableHandle", "unserializable_hook", "warn_if_has_hooks"]


def unserializable_hook(f):
    """Mark a hook as one that need not survive serialization (torch's decorator).

    >>> from clgrad.utils.hooks import unserializable_hook
    >>> unserializable_hook(lambda g: g).__torch_unserializable__
    True
    """
    f.__torch_unserializable__ = True
    return f


def warn_if_has_hooks(tensor):
    """Warn when a tensor has backward hooks that are not marked unserializable (torch's check
    before pickling a tensor).

    >>> import clgrad
    >>> from clgrad.utils.hooks import warn_if_has_hooks
    >>> warn_if_has_hooks(clgrad.ones(1))
    """
    hooks = getattr(tensor, "_backward_hooks", None) or getattr(tensor, "_hooks", None)
    if not hooks:
        return
    for h in (hooks.values() if isinstance(hooks, dict) else hooks):
        if not hasattr(h, "__torch_unserializable__"):
            warnings.warn(f"backward hook {h!r} on tensor will not be serialized.  If this is "
                          f"expected, you can decorate the function with "
                          f"@torch.utils.hooks.unserializable_hook to suppress this warning")
