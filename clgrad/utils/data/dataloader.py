"""DataLoader and the default collation of samples into batches."""
import collections.abc
import re

import numpy as np

from ... import _host, dtypes
from ...ops.creation import from_numpy, tensor
from ...ops.join import stack
from ...runtime.device import get_device
from ...tensor import Tensor
from .dataset import IterableDataset, TensorDataset
from .sampler import BatchSampler, RandomSampler, SequentialSampler
from . import _worker

__all__ = ["DataLoader", "default_collate", "default_convert"]

_COLLATE_ERROR = ("default_collate: batch must contain tensors, numpy arrays, numbers, dicts or "
                  "lists; found {}")
_NP_STR_OBJ = re.compile(r"[SaUO]")


def default_convert(data):
    """numpy arrays (also inside dicts, lists and tuples) to tensors; anything else as it is.

    >>> import numpy as np
    >>> from clgrad.utils.data import default_convert
    >>> default_convert({"x": np.ones(2), "name": "a"})["x"].tolist()
    [1.0, 1.0]
    """
    if isinstance(data, np.ndarray) and _NP_STR_OBJ.search(data.dtype.str) is None:
        return from_numpy(data)
    if isinstance(data, collections.abc.Mapping):
        return {k: default_convert(v) for k, v in data.items()}
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, (list, tuple)):
        return type(data)(default_convert(d) for d in data)
    return data


def default_collate(batch):
    """Samples to a batch, as torch does: tensors and numpy arrays are stacked, numbers become
    a tensor (float64 for floats, int64 for ints), strings stay a list, and dicts, tuples and
    lists are collated field by field (tuples come back as lists).

    >>> import clgrad
    >>> from clgrad.utils.data import default_collate
    >>> out = default_collate([(clgrad.zeros(2), 1), (clgrad.ones(2), 2)])
    >>> out[0].shape, out[1].tolist()
    (clgrad.Size([2, 2]), [1, 2])
    """
    return collate_nested(batch, _device_leaf)


def _device_leaf(batch):
    """default_collate of a batch of leaves (tensors, arrays, numbers, strings), or
    NotImplemented for a container."""
    elem = batch[0]
    if isinstance(elem, Tensor):
        return stack(batch, 0)
    if isinstance(elem, np.ndarray):
        if _NP_STR_OBJ.search(elem.dtype.str) is not None:
            raise TypeError(_COLLATE_ERROR.format(elem.dtype))
        return stack([from_numpy(np.ascontiguousarray(b)) for b in batch], 0)
    if isinstance(elem, np.generic):
        return tensor(np.array(batch))
    if isinstance(elem, float):
        dev = get_device(None)
        return tensor(batch, dtype=dtypes.float64 if dev.has_fp64 else
                      dtypes.get_default_dtype())
    if isinstance(elem, int):
        return tensor(batch)
    if isinstance(elem, (str, bytes)):
        return batch
    return NotImplemented


def collate_nested(batch, leaf):
    """Collate a batch the way default_collate walks it: `leaf(batch)` collates leaves (and
    returns NotImplemented for anything else); dicts, named tuples, tuples and lists are collated
    field by field (tuples come back as lists). The workers use it with a numpy leaf."""
    out = leaf(batch)
    if out is not NotImplemented:
        return out
    elem = batch[0]
    if isinstance(elem, collections.abc.Mapping):
        out = {key: collate_nested([d[key] for d in batch], leaf) for key in elem}
        try:
            return type(elem)(out)
        except TypeError:
            return out
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):
        return type(elem)(*(collate_nested(s, leaf) for s in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        size = len(elem)
        if any(len(e) != size for e in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        collated = [collate_nested(s, leaf) for s in zip(*batch)]
        if isinstance(elem, tuple):
            return collated
        try:
            return type(elem)(collated)
        except TypeError:
            return collated
    raise TypeError(_COLLATE_ERROR.format(type(elem)))


class DataLoader:
    """Iterate over a dataset in batches: batch_size samples at a time (None: one sample, not
    collated into a batch), shuffled each epoch by `generator` (or clgrad's default generator,
    so clgrad.manual_seed makes the order reproducible), the last short batch dropped with
    drop_last, and samples collated by collate_fn. With num_workers > 0, worker processes load
    the samples (see clgrad/utils/data/_worker.py: they run on the host only, tensors the
    Dataset makes there are host tensors, and the batches are uploaded here); worker_init_fn, prefetch_factor, persistent_workers, timeout and
    multiprocessing_context work as in torch. pin_memory is accepted and has no effect.

    >>> import clgrad
    >>> from clgrad.utils.data import DataLoader, TensorDataset
    >>> ds = TensorDataset(clgrad.randn(10, 3), clgrad.arange(10))
    >>> loader = DataLoader(ds, batch_size=4, shuffle=True, drop_last=True,
    ...                     generator=clgrad.Generator().manual_seed(0))
    >>> len(loader), [x.shape for x, y in loader]
    (2, [clgrad.Size([4, 3]), clgrad.Size([4, 3])])
    """

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None,
                 num_workers=0, collate_fn=None, pin_memory=False, drop_last=False, timeout=0,
                 worker_init_fn=None, multiprocessing_context=None, generator=None, *,
                 prefetch_factor=None, persistent_workers=False, pin_memory_device="",
                 in_order=True):
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to "
                             "disable multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing."
                             "let num_workers > 0 to enable multiprocessing, otherwise set "
                             "prefetch_factor to None.")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = 2 if prefetch_factor is None and num_workers else prefetch_factor
        self.persistent_workers = persistent_workers
        self.multiprocessing_context = multiprocessing_context
        self._pool = None
        self.pin_memory = pin_memory
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        iterable = isinstance(dataset, IterableDataset)
        if iterable:
            if shuffle not in (False, None):
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified shuffle "
                                 f"option, but got shuffle={shuffle}")
            if sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified sampler "
                                 f"option, but got sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified "
                                 f"batch_sampler option, but got batch_sampler={batch_sampler}")
        shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, "
                                 "shuffle, sampler, and drop_last")
            batch_size = None
            drop_last = False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually "
                             "exclusive with drop_last")
        if sampler is None and not iterable:
            sampler = RandomSampler(dataset, generator=generator) if shuffle else \
                SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None and not iterable:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        if collate_fn is None:
            collate_fn = default_collate if batch_size is not None or batch_sampler is not None \
                else default_convert
        self.collate_fn = collate_fn

    @property
    def _auto_collation(self):
        return self.batch_sampler is not None

    def _fetch(self, indices):
        ds = self.dataset
        if type(ds) is TensorDataset and self.collate_fn is default_collate:
            # one gather per tensor instead of stacking the samples one by one (same result)
            out = []
            for t in ds.tensors:
                idx = tensor(indices, dtype=dtypes.int64, device=t.device)
                out.append(t.index_select(0, idx))
            return out
        return self.collate_fn([ds[i] for i in indices])

    def _iter_iterable(self):
        if self.batch_size is None:
            for sample in self.dataset:
                yield self.collate_fn(sample)
            return
        batch = []
        for sample in self.dataset:
            batch.append(sample)
            if len(batch) == self.batch_size:
                yield self.collate_fn(batch)
                batch = []
        if batch and not self.drop_last:
            yield self.collate_fn(batch)

    def __iter__(self):
        if self.num_workers and type(self.dataset) is not TensorDataset:
            yield from self._iter_workers()
        elif isinstance(self.dataset, IterableDataset):
            yield from self._iter_iterable()
        elif self._auto_collation:
            for indices in self.batch_sampler:
                yield self._fetch(indices)
        else:
            for index in self.sampler:
                yield self.collate_fn(self.dataset[index])

    def _iter_workers(self):
        iterable = isinstance(self.dataset, IterableDataset)
        auto = self.batch_size is not None if iterable else self._auto_collation
        on_host = self.collate_fn is default_collate
        pool = self._pool
        if pool is None or not self.persistent_workers or iterable:
            fetch = _worker.Fetcher(self.dataset, on_host, auto, self.batch_size, self.drop_last)
            pool = _worker.WorkerPool(self, fetch, iterable)
        self._pool = None
        complete = False
        try:
            if iterable:
                results = _worker.iterate_iterable(pool)
            else:
                results = _worker.iterate_map_style(
                    pool, self.batch_sampler if auto else self.sampler, self.prefetch_factor)
            for data in results:
                yield _worker.to_device(data) if on_host else self.collate_fn(
                    _host.unpack(data))
            complete = True
        finally:
            # a pool is kept only after a whole epoch: one left midway has batches in flight
            if complete and self.persistent_workers and not iterable:
                self._pool = pool
            else:
                pool.shutdown()

    def __del__(self):
        pool = getattr(self, "_pool", None)
        if pool is not None:
            pool.shutdown()

    def __len__(self):
        if isinstance(self.dataset, IterableDataset):
            n = len(self.dataset)
            if self.batch_size is None:
                return n
            return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
        return len(self.batch_sampler if self._auto_collation else self.sampler)
