"""PackedSequence, the type of torch.nn.utils.rnn (exported there): the recurrent layers of
clgrad/nn/modules/rnn.py take and return one. It lives here, not in nn.utils, because nn.utils
imports nn.modules (parametrizations, pruning) and nn.modules may not import it back
(tests/test_layers.py: no import cycle).
"""
from collections import namedtuple

import numpy as np

from ..ops.creation import tensor as _tensor

__all__ = ["PackedSequence"]


def _index_tensor(values):
    return _tensor(np.asarray(values, dtype=np.int64), device="cpu")


class PackedSequence(namedtuple("PackedSequence",
                                ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])):
    """Steps of sorted sequences, packed (see the module's docstring). Made by
    pack_padded_sequence or pack_sequence, not by hand.

    >>> import clgrad
    >>> from clgrad.nn.utils.rnn import pack_sequence
    >>> pack_sequence([clgrad.ones(2, 3), clgrad.ones(1, 3)]).data.shape
    clgrad.Size([3, 3])
    """

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None and sorted_indices is not None:
            unsorted_indices = _invert(sorted_indices)
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args, **kwargs):
        """The same packing with data moved or cast (the index tensors stay)."""
        data = self.data.to(*args, **kwargs)
        return self if data is self.data else self._replace(data=data)

    @property
    def is_cuda(self):
        return self.data.is_cuda

    def is_pinned(self):
        return False


def _invert(perm):
    p = np.asarray(perm.tolist(), dtype=np.int64)
    inv = np.empty_like(p)
    inv[p] = np.arange(len(p))
    return _index_tensor(inv)
