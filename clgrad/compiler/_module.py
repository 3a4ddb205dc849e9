"""OptimizedModule: what `clgrad.compile(module)` returns, as torch's does (the module is
`_orig_mod`, so state_dict keys start with "_orig_mod."; other attributes are the module's)."""
from ..nn.modules.module import Module


class OptimizedModule(Module):
    """A module whose calls are compiled (clgrad.compile).

    >>> import clgrad
    >>> lin = clgrad.nn.Linear(3, 2)
    >>> net = clgrad.compile(lin)
    >>> net._orig_mod is lin, net.in_features, net(clgrad.ones(1, 3)).shape
    (True, 3, clgrad.Size([1, 2]))
    """

    def __init__(self, mod, compiled):
        super().__init__()
        self._orig_mod = mod
        object.__setattr__(self, "_compiled", compiled)

    def forward(self, *args, **kwargs):
        return self._compiled(*args, **kwargs)

    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self._modules["_orig_mod"], name)

    def __repr__(self):
        return f"OptimizedModule({self._orig_mod!r})"
