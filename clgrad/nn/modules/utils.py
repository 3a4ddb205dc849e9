"""torch.nn.modules.utils: the one `_ntuple` of clgrad.nn (modules and functional), and the
`_single` / `_pair` / `_triple` / `_quadruple` that torch code imports from here. A value that
is iterable (a list, a tuple, a torch.Size) becomes a tuple of its elements; anything else is
repeated n times.

>>> from clgrad.nn.modules.utils import _ntuple, _pair
>>> _pair(3), _pair([1, 2]), _ntuple(3)(0)
((3, 3), (1, 2), (0, 0, 0))
"""
import collections.abc
from itertools import repeat

__all__ = []


def _ntuple(n, name="parse"):
    def parse(x):
        if isinstance(x, collections.abc.Iterable):
            return tuple(x)
        return tuple(repeat(x, n))

    parse.__name__ = name
    return parse


_single = _ntuple(1, "_single")
_pair = _ntuple(2, "_pair")
_triple = _ntuple(3, "_triple")
_quadruple = _ntuple(4, "_quadruple")
