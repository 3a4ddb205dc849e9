"""Samplers: which indices a DataLoader visits, and in which batches."""
from ...ops.creation import randint, randperm

__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "BatchSampler"]


class Sampler:
    """Base class: an iterable of dataset indices.

    >>> from clgrad.utils.data import Sampler
    >>> class Evens(Sampler):
    ...     def __init__(self, n): self.n = n
    ...     def __iter__(self): return iter(range(0, self.n, 2))
    >>> list(Evens(5))
    [0, 2, 4]
    """

    def __init__(self, data_source=None):
        pass

    def __iter__(self):
        raise NotImplementedError


class SequentialSampler(Sampler):
    """0, 1, ..., len(data_source) - 1.

    >>> from clgrad.utils.data import SequentialSampler
    >>> list(SequentialSampler(range(4)))
    [0, 1, 2, 3]
    """

    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


class RandomSampler(Sampler):
    """A random permutation of the indices each epoch (or num_samples draws with
    replacement), from `generator` or clgrad's default generator, so clgrad.manual_seed makes
    the order reproducible.

    >>> import clgrad
    >>> from clgrad.utils.data import RandomSampler
    >>> g = clgrad.Generator().manual_seed(1)
    >>> sorted(RandomSampler(range(5), generator=g))
    [0, 1, 2, 3, 4]
    """

    CHUNK = 32                        # indices drawn at a time with replacement

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(self.replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got "
                            f"replacement={self.replacement}")
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got "
                             f"num_samples={self.num_samples}")

    @property
    def num_samples(self):
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        n = len(self.data_source)
        if self.replacement:
            # drawn lazily in chunks, as torch does: num_samples may be astronomically large
            # (int(1e10) is a common way to say "forever")
            for _ in range(self.num_samples // self.CHUNK):
                yield from randint(0, n, (self.CHUNK,), generator=self.generator).tolist()
            rest = self.num_samples % self.CHUNK
            if rest:
                yield from randint(0, n, (rest,), generator=self.generator).tolist()
            return
        for _ in range(self.num_samples // n):
            yield from randperm(n, generator=self.generator).tolist()
        rest = self.num_samples % n
        if rest:
            yield from randperm(n, generator=self.generator).tolist()[:rest]

    def __len__(self):
        return self.num_samples


class BatchSampler(Sampler):
    """Group a sampler's indices into lists of batch_size (the last one shorter unless
    drop_last).

    >>> from clgrad.utils.data import BatchSampler, SequentialSampler
    >>> list(BatchSampler(SequentialSampler(range(5)), 2, drop_last=False))
    [[0, 1], [2, 3], [4]]
    """

    def __init__(self, sampler, batch_size, drop_last):
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer value, but got "
                             f"batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got "
                             f"drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self):
        batch = []
        for idx in self.sampler:
            batch.append(idx)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self):
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size
