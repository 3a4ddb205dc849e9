"""Variable-length sequences for the recurrent layers: PackedSequence and its helpers, as
torch.nn.utils.rnn.

A PackedSequence (defined in clgrad/nn/_packed_sequence.py, outside this package, so that the
recurrent layers can take one without importing nn.utils) holds the steps of a batch of sequences
sorted by length (longest first), step after step: `data` is [sum of lengths, *], `batch_sizes[t]`
says how many sequences are still running at step t. The recurrent layers take one and return one.

>>> import clgrad
>>> from clgrad.nn.utils.rnn import pack_sequence, pad_packed_sequence
>>> p = pack_sequence([clgrad.tensor([1., 2., 3.]), clgrad.tensor([4., 5.])])
>>> p.data.tolist(), p.batch_sizes.tolist()
([1.0, 4.0, 2.0, 5.0, 3.0], [2, 2, 1])
>>> padded, lengths = pad_packed_sequence(p, batch_first=True)
>>> padded.tolist(), lengths.tolist()
([[1.0, 2.0, 3.0], [4.0, 5.0, 0.0]], [3, 2])
"""
from collections import namedtuple

import numpy as np

from ... import dtypes
from ...ops.creation import full, tensor as _tensor
from ...ops.join import cat, stack
from ...tensor import Tensor
from .._packed_sequence import PackedSequence, _index_tensor, _invert

__all__ = ["PackedSequence", "pack_padded_sequence", "pad_packed_sequence", "pad_sequence",
           "pack_sequence", "unpad_sequence", "unpack_sequence"]


def _lengths_list(lengths):
    if isinstance(lengths, Tensor):
        if lengths.dim() != 1:
            raise RuntimeError(f"pack_padded_sequence(): expected a 1-D lengths tensor, got shape "
                               f"{tuple(lengths.shape)}")
        return [int(v) for v in lengths.tolist()]
    return [int(v) for v in lengths]


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    """Pack a padded batch [T, B, *] ([B, T, *] with batch_first) of sequences of the given
    lengths. With enforce_sorted (the default) the lengths must be decreasing; otherwise the
    batch is sorted here and the order is remembered.

    >>> import clgrad
    >>> from clgrad.nn.utils.rnn import pack_padded_sequence
    >>> x = clgrad.tensor([[1., 2.], [3., 0.]])          # batch_first: two sequences
    >>> pack_padded_sequence(x, [2, 1], batch_first=True).data.tolist()
    [1.0, 3.0, 2.0]
    """
    lens = _lengths_list(lengths)
    B = input.shape[0 if batch_first else 1] if input.dim() >= 2 else 0
    if len(lens) != B:
        raise RuntimeError(f"pack_padded_sequence(): expected {B} lengths for an input of shape "
                           f"{tuple(input.shape)}, got {len(lens)}")
    if any(v <= 0 for v in lens):
        raise RuntimeError("Length of all samples has to be greater than 0, but found an element "
                           "in 'lengths' that is <= 0")
    if enforce_sorted:
        if any(a < b for a, b in zip(lens, lens[1:])):
            raise RuntimeError("`lengths` array must be sorted in decreasing order when "
                               "`enforce_sorted` is True. You can pass `enforce_sorted=False` to "
                               "pack_padded_sequence and/or pack_sequence to sidestep this "
                               "requirement if you do not need ONNX exportability.")
        sorted_indices = None
    else:
        order = sorted(range(B), key=lambda i: -lens[i])       # stable, as torch's sort
        sorted_indices = _index_tensor(order)
        input = input.index_select(0 if batch_first else 1,
                                   sorted_indices.to(input.device))
        lens = [lens[i] for i in order]
    if batch_first:
        input = input.transpose(0, 1)
    T = input.shape[0]
    if lens[0] > T:
        raise RuntimeError(f"pack_padded_sequence(): a length of {lens[0]} exceeds the "
                           f"{T} steps of the input of shape {tuple(input.shape)}")
    batch_sizes = [sum(1 for v in lens if v > t) for t in range(lens[0])]
    data = cat([input[t, :bs] for t, bs in enumerate(batch_sizes)], 0)
    return PackedSequence(data, _index_tensor(batch_sizes), sorted_indices, None)


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """The inverse of pack_padded_sequence: (padded [T, B, *], lengths), in the batch order
    the sequences had before packing.

    >>> import clgrad
    >>> from clgrad.nn.utils.rnn import pack_sequence, pad_packed_sequence
    >>> p = pack_sequence([clgrad.tensor([1.]), clgrad.tensor([2., 3.])], enforce_sorted=False)
    >>> pad_packed_sequence(p, padding_value=-1.0)[0].tolist()
    [[1.0, 2.0], [-1.0, 3.0]]
    """
    data = sequence.data
    batch_sizes = [int(v) for v in sequence.batch_sizes.tolist()]
    B = batch_sizes[0] if batch_sizes else 0
    T = len(batch_sizes)
    if total_length is not None:
        if total_length < T:
            raise ValueError(f"Expected total_length to be at least the length of the longest "
                             f"sequence in input, but got total_length={total_length} and max "
                             f"sequence length being {T}")
    else:
        total_length = T
    rest = tuple(data.shape[1:])
    steps, off = [], 0
    for bs in batch_sizes:
        part = data[off:off + bs]
        if bs < B:
            part = cat([part, full((B - bs,) + rest, padding_value, dtype=data.dtype,
                                   device=data.device)], 0)
        steps.append(part)
        off += bs
    for _ in range(total_length - T):
        steps.append(full((B,) + rest, padding_value, dtype=data.dtype, device=data.device))
    padded = stack(steps, 0) if steps else data.new_zeros((0, 0) + rest)
    lengths = [sum(1 for bs in batch_sizes if bs > b) for b in range(B)]
    if sequence.unsorted_indices is not None:
        unsorted = sequence.unsorted_indices
        padded = padded.index_select(1, unsorted.to(padded.device))
        lengths = [lengths[i] for i in unsorted.tolist()]
    if batch_first:
        padded = padded.transpose(0, 1)
    return padded, _index_tensor(lengths)


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Stack tensors [L_i, *] of different lengths into [max L, B, *] ([B, max L, *] with
    batch_first), filling with padding_value on the right (or the left).

    >>> import clgrad
    >>> from clgrad.nn.utils.rnn import pad_sequence
    >>> pad_sequence([clgrad.tensor([1., 2.]), clgrad.tensor([3.])], batch_first=True).tolist()
    [[1.0, 2.0], [3.0, 0.0]]
    """
    if isinstance(sequences, Tensor):
        sequences = list(sequences.unbind(0))
    if padding_side not in ("left", "right"):
        raise ValueError(f"Expected padding_side to be one of left or right, but got "
                         f"{padding_side}.")
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    L = max(s.shape[0] for s in sequences)
    rows = []
    for s in sequences:
        pad = L - s.shape[0]
        if pad:
            fill = full((pad,) + tuple(s.shape[1:]), padding_value, dtype=s.dtype,
                        device=s.device)
            s = cat([s, fill] if padding_side == "right" else [fill, s], 0)
        rows.append(s)
    return stack(rows, 0 if batch_first else 1)


def pack_sequence(sequences, enforce_sorted=True):
    """Pack a list of tensors [L_i, *] (longest first unless enforce_sorted=False).

    >>> import clgrad
    >>> from clgrad.nn.utils.rnn import pack_sequence
    >>> pack_sequence([clgrad.tensor([1.]), clgrad.tensor([2., 3.])],
    ...               enforce_sorted=False).batch_sizes.tolist()
    [2, 1]
    """
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    """The list of tensors pad_sequence was given, cut to their lengths.

    >>> import clgrad
    >>> from clgrad.nn.utils.rnn import unpad_sequence
    >>> [t.tolist() for t in unpad_sequence(clgrad.tensor([[1., 2.], [3., 0.]]), [2, 1], True)]
    [[1.0, 2.0], [3.0]]
    """
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    return [padded_sequences[i, :n] for i, n in enumerate(_lengths_list(lengths))]


def unpack_sequence(packed_sequences):
    """The list of tensors pack_sequence was given.

    >>> import clgrad
    >>> from clgrad.nn.utils.rnn import pack_sequence, unpack_sequence
    >>> p = pack_sequence([clgrad.tensor([1.]), clgrad.tensor([2., 3.])], enforce_sorted=False)
    >>> [t.tolist() for t in unpack_sequence(p)]
    [[1.0], [2.0, 3.0]]
    """
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths.tolist(), batch_first=True)
