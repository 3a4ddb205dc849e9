"""Padding layers: constant (and zero), reflection, replication and circular, in 1, 2 and 3
dims, all over clgrad.nn.functional.pad."""
from .. import functional as F
from .module import Module

__all__ = []


class _PadNd(Module):
    mode = "constant"
    dims = 1

    def __init__(self, padding, value=None):
        super().__init__()
        n = 2 * self.dims
        if isinstance(padding, int):
            padding = (padding,) * n
        padding = tuple(padding)
        if len(padding) != n or not all(isinstance(p, int) for p in padding):
            raise ValueError(f"{type(self).__name__}: padding must be an int or {n} ints, got "
                             f"{padding!r}")
        self.padding = padding
        self.value = value

    def forward(self, input):
        return F.pad(input, self.padding, self.mode, self.value)

    def extra_repr(self):
        if type(self).__name__.startswith("ConstantPad"):
            return f"padding={self.padding}, value={self.value}"
        return f"{self.padding}"


def _pad_class(kind, mode, dims, doc, constant=False):
    if constant:
        def __init__(self, padding, value):
            _PadNd.__init__(self, padding, value)
    elif kind == "ZeroPad":
        def __init__(self, padding):
            _PadNd.__init__(self, padding, 0.0)
    else:
        def __init__(self, padding):
            _PadNd.__init__(self, padding)
    cls = type(f"{kind}{dims}d", (_PadNd,), {"mode": mode, "dims": dims, "__init__": __init__,
                                             "__doc__": doc, "__module__": __name__})
    globals()[cls.__name__] = cls
    __all__.append(cls.__name__)


for _dims in (1, 2, 3):
    _pad_class("ConstantPad", "constant", _dims, f"""Pad the last {_dims} dim(s) with `value`.

    >>> import clgrad
    >>> clgrad.nn.ConstantPad1d(1, 7.0)(clgrad.zeros(1, 2)).tolist()
    [[7.0, 0.0, 0.0, 7.0]]
    """, constant=True)
    _pad_class("ZeroPad", "constant", _dims, f"""Pad the last {_dims} dim(s) with zeros.

    >>> import clgrad
    >>> clgrad.nn.ZeroPad2d((1, 0, 0, 1))(clgrad.ones(1, 1, 1)).tolist()
    [[[0.0, 1.0], [0.0, 0.0]]]
    """)
    _pad_class("ReflectionPad", "reflect", _dims, f"""Pad the last {_dims} dim(s) with their
    reflection about the edge elements.

    >>> import clgrad
    >>> clgrad.nn.ReflectionPad1d(2)(clgrad.tensor([[1.0, 2.0, 3.0]])).tolist()
    [[3.0, 2.0, 1.0, 2.0, 3.0, 2.0, 1.0]]
    """)
    _pad_class("ReplicationPad", "replicate", _dims, f"""Pad the last {_dims} dim(s) with
    copies of the edge elements.

    >>> import clgrad
    >>> clgrad.nn.ReplicationPad1d((1, 2))(clgrad.tensor([[1.0, 2.0]])).tolist()
    [[1.0, 1.0, 2.0, 2.0, 2.0]]
    """)
    _pad_class("CircularPad", "circular", _dims, f"""Pad the last {_dims} dim(s) by wrapping
    around.

    >>> import clgrad
    >>> clgrad.nn.CircularPad1d(1)(clgrad.tensor([[1.0, 2.0, 3.0]])).tolist()
    [[3.0, 1.0, 2.0, 3.0, 1.0]]
    """)
