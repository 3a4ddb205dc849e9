"""torch.nn.modules.utils: the `_ntuple` of clgrad (defined once in clgrad/ops/window_args.py,
beside the checked argument parsers of convolution and pooling), and the `_single` / `_pair` /
`_triple` / `_quadruple` that torch code imports from here. A value that is iterable (a list, a
tuple, a torch.Size) becomes a tuple of its elements; anything else is repeated n times.

>>> from clgrad.nn.modules.utils import _ntuple, _pair
>>> _pair(3), _pair([1, 2]), _ntuple(3)(0)
((3, 3), (1, 2), (0, 0, 0))
"""
from ...ops.window_args import _ntuple

__all__ = []

_single = _ntuple(1, "_single")
_pair = _ntuple(2, "_pair")
_triple = _ntuple(3, "_triple")
_quadruple = _ntuple(4, "_quadruple")
