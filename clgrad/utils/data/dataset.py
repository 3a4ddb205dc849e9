"""Datasets: map-style (Dataset, TensorDataset, Subset, ConcatDataset) and IterableDataset."""
import bisect
import math

from ...ops.creation import randperm

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "ConcatDataset", "Subset",
           "random_split"]


class Dataset:
    """A map-style dataset: subclasses define __getitem__(index) and usually __len__.

    >>> from clgrad.utils.data import Dataset
    >>> class Squares(Dataset):
    ...     def __len__(self): return 4
    ...     def __getitem__(self, i): return i * i
    >>> [Squares()[i] for i in range(4)]
    [0, 1, 4, 9]
    """

    def __getitem__(self, index):
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other):
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """A dataset that is iterated rather than indexed (streams, generators).

    >>> from clgrad.utils.data import DataLoader, IterableDataset
    >>> class Count(IterableDataset):
    ...     def __iter__(self): return iter(range(5))
    >>> [b.tolist() for b in DataLoader(Count(), batch_size=2)]
    [[0, 1], [2, 3], [4]]
    """

    def __iter__(self):
        raise NotImplementedError("Subclasses of IterableDataset should implement __iter__.")


class TensorDataset(Dataset):
    """Sample i is (t[i] for each tensor t); the tensors share their first dimension. A
    DataLoader over it gathers whole batches at once on the device.

    >>> import clgrad
    >>> ds = clgrad.utils.data.TensorDataset(clgrad.zeros(5, 3), clgrad.arange(5))
    >>> len(ds), ds[2][1].item()
    (5, 2)
    """

    def __init__(self, *tensors):
        if not all(tensors[0].size(0) == t.size(0) for t in tensors):
            raise AssertionError("Size mismatch between tensors")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self):
        return self.tensors[0].size(0)


class ConcatDataset(Dataset):
    """Datasets one after another.

    >>> import clgrad
    >>> from clgrad.utils.data import ConcatDataset, TensorDataset
    >>> ds = ConcatDataset([TensorDataset(clgrad.arange(3)), TensorDataset(clgrad.arange(2))])
    >>> len(ds), ds[4][0].item()
    (5, 1)
    """

    def __init__(self, datasets):
        self.datasets = list(datasets)
        if not self.datasets:
            raise AssertionError("datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise AssertionError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = []
        total = 0
        for d in self.datasets:
            total += len(d)
            self.cumulative_sizes.append(total)

    def __len__(self):
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx):
        if idx < 0:
            if -idx > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            idx += len(self)
        k = bisect.bisect_right(self.cumulative_sizes, idx)
        start = self.cumulative_sizes[k - 1] if k else 0
        return self.datasets[k][idx - start]


class Subset(Dataset):
    """The samples of dataset at the given indices.

    >>> import clgrad
    >>> from clgrad.utils.data import Subset, TensorDataset
    >>> sub = Subset(TensorDataset(clgrad.arange(10)), [7, 2])
    >>> len(sub), sub[0][0].item()
    (2, 7)
    """

    def __init__(self, dataset, indices):
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __len__(self):
        return len(self.indices)


def random_split(dataset, lengths, generator=None):
    """Split a dataset into non-overlapping random Subsets of the given lengths (or fractions
    of the whole, the remainder spread round-robin as torch does).

    >>> import clgrad
    >>> from clgrad.utils.data import TensorDataset, random_split
    >>> train, val = random_split(TensorDataset(clgrad.arange(10)), [0.8, 0.2],
    ...                           generator=clgrad.Generator().manual_seed(0))
    >>> len(train), len(val), sorted(train.indices + val.indices) == list(range(10))
    (8, 2, True)
    """
    n = len(dataset)
    lengths = list(lengths)
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        sizes = [int(math.floor(n * frac)) for frac in lengths]
        for i in range(n - sum(sizes)):
            sizes[i % len(sizes)] += 1
        lengths = sizes
    if sum(lengths) != n:
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    perm = randperm(n, generator=generator).tolist()
    out, offset = [], 0
    for length in lengths:
        out.append(Subset(dataset, perm[offset:offset + length]))
        offset += length
    return out
