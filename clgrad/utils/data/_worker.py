"""DataLoader worker processes.

Workers load and collate samples on the host: a worker never touches an OpenCL device (a forked
child of a process that holds an OpenCL context must not, and one device queue per process is
what keeps kernels in order). A worker runs in clgrad's host mode (clgrad/_host.py): the tensors
a Dataset makes there (`torch.tensor(...)`, `from_numpy`, `zeros`, casts, arithmetic, views)
are host tensors, and the tensors the dataset object held in the main process are copied to the
host before the workers start. The default collation runs in the worker as numpy
(`host_collate`: the same structure default_collate makes, with numpy arrays where it makes
tensors), and the main process uploads the batch to the default device (`to_device`). Another
collate_fn runs in the main process on the samples the workers loaded (their tensors uploaded
first), so a collate_fn written with clgrad ops works. A TensorDataset is gathered on its device
in the main process (one index_select per tensor). Work that needs a device (an op without a
host form) raises in the worker, naming the op.

Map-style datasets: the main process hands out batches of indices round-robin, keeps
`prefetch_factor` batches per worker in flight and yields results in sampler order. Iterable
datasets: every worker iterates its own copy (use get_worker_info() to shard) and batches are
taken from the workers in turn, as torch does.
"""
import collections.abc
import multiprocessing
import queue
import random
import traceback

import numpy as np
from ... import _host
from ...tensor import Tensor
from ...ops.creation import from_numpy, tensor, manual_seed, default_generator
from ... import dtypes
from ...runtime.device import get_device
from ...runtime import device as dmod

_worker_info = None


class WorkerInfo:
    """What a worker knows about itself: id, num_workers, seed and its copy of the dataset."""

    def __init__(self, id, num_workers, seed, dataset):
        self.id, self.num_workers, self.seed, self.dataset = id, num_workers, seed, dataset

    def __repr__(self):
        return f"WorkerInfo(id={self.id}, num_workers={self.num_workers}, seed={self.seed})"


def get_worker_info():
    """In a DataLoader worker process, its WorkerInfo; in the main process, None.

    >>> from clgrad.utils.data import get_worker_info
    >>> get_worker_info() is None
    True
    """
    return _worker_info


class _Numeric:
    """A collated leaf made of Python numbers: becomes a tensor of this dtype in the main
    process (floats float64, ints int64, as default_collate)."""

    def __init__(self, array):
        self.array = array


def _host_leaf(batch):
    elem = batch[0]
    if isinstance(elem, Tensor):
        return _host.Packed.of_bits(np.stack([b.detach()._read_host() for b in batch]),
                                    elem._dtype)
    if isinstance(elem, np.ndarray):
        return np.stack([np.asarray(b) for b in batch])
    if isinstance(elem, np.generic):
        return np.array(batch)
    if isinstance(elem, bool):
        return _Numeric(np.array(batch, dtype=bool))
    if isinstance(elem, float):
        return _Numeric(np.array(batch, dtype=np.float64))
    if isinstance(elem, int):
        return _Numeric(np.array(batch, dtype=np.int64))
    if isinstance(elem, (str, bytes)):
        return batch
    return NotImplemented


def host_collate(batch):
    """default_collate's structure with numpy arrays in place of tensors (run in workers)."""
    # function-level: import cycle: dataloader imports this module
    from .dataloader import collate_nested
    return collate_nested(batch, _host_leaf)


def to_device(data):
    """Upload the numpy leaves and host tensors of what a worker returned (main process)."""
    if isinstance(data, _host.Packed):
        return data.unpack()
    if isinstance(data, _Numeric):
        a = data.array
        if a.dtype == np.float64 and not get_device(None).has_fp64:
            return tensor(a, dtype=dtypes.get_default_dtype())
        return tensor(a)
    if isinstance(data, np.ndarray):
        if data.dtype.kind in "SaUO":
            return data
        return from_numpy(np.ascontiguousarray(data))
    if isinstance(data, collections.abc.Mapping):
        out = {k: to_device(v) for k, v in data.items()}
        try:
            return type(data)(out)
        except TypeError:
            return out
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(to_device(d) for d in data))
    if isinstance(data, (list, tuple)):
        return type(data)(to_device(d) for d in data)
    return data


class Fetcher:
    """What a worker runs: indices (or the next batch of an iterator) to collated host data,
    or to the list of samples when the main process collates."""

    def __init__(self, dataset, host_collate, auto_collation, batch_size, drop_last):
        self.dataset, self.host_collate = dataset, host_collate
        self.auto_collation, self.batch_size, self.drop_last = auto_collation, batch_size, \
            drop_last

    def __call__(self, what):
        if isinstance(what, collections.abc.Iterator):
            if not self.auto_collation:
                return _host.pack(next(what))
            batch = []
            for sample in what:
                batch.append(sample)
                if len(batch) == self.batch_size:
                    break
            if not batch or (self.drop_last and len(batch) < self.batch_size):
                raise StopIteration
        elif self.auto_collation:
            batch = [self.dataset[i] for i in what]
        else:
            return _host.pack(self.dataset[what])
        return host_collate(batch) if self.host_collate else _host.pack(batch)


class _ExceptionWrapper:
    def __init__(self, worker_id, exc):
        self.type = type(exc)
        self.text = (f"Caught {type(exc).__name__} in DataLoader worker process {worker_id}.\n"
                     f"Original {traceback.format_exc()}")

    def reraise(self):
        try:
            err = self.type(self.text)
        except Exception:
            err = RuntimeError(self.text)
        raise err


def _refuse(*_a, **_k):
    raise RuntimeError(_host.NEEDS_DEVICE.format(what="an OpenCL device queue"))


def _no_devices_in_workers():
    """Host mode: tensors made in the worker are host tensors; any use of an OpenCL device
    fails with a clear error."""
    dmod.Device.queue = property(_refuse)
    _host.enter_host_mode()


def _worker_loop(worker_id, num_workers, seed, dataset, fetch, iterable, index_queue,
                 result_queue, worker_init_fn):
    global _worker_info
    _no_devices_in_workers()
    random.seed(seed)
    manual_seed(seed)
    _worker_info = WorkerInfo(worker_id, num_workers, seed, dataset)
    try:
        if worker_init_fn is not None:
            worker_init_fn(worker_id)
    except Exception as e:
        result_queue.put((worker_id, None, _ExceptionWrapper(worker_id, e)))
        return
    if iterable:
        seq = 0
        try:
            it = iter(dataset)
            while True:
                if index_queue.get() is None:        # the main process asks for one batch
                    return
                try:
                    data = fetch(it)
                except StopIteration:
                    result_queue.put((worker_id, seq, StopIteration))
                    index_queue.get()                # wait for the end of the epoch
                    return
                result_queue.put((worker_id, seq, data))
                seq += 1
        except Exception as e:
            result_queue.put((worker_id, seq, _ExceptionWrapper(worker_id, e)))
            return
    while True:
        task = index_queue.get()
        if task is None:
            return
        idx, indices = task
        try:
            data = fetch(indices)
        except Exception as e:
            data = _ExceptionWrapper(worker_id, e)
        result_queue.put((worker_id, idx, data))


class WorkerPool:
    """num_workers processes serving one DataLoader; lives for one epoch, or for every epoch
    with persistent_workers."""

    def __init__(self, loader, fetch, iterable):
        ctx = loader.multiprocessing_context
        if ctx is None:
            methods = multiprocessing.get_all_start_methods()
            ctx = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
        elif isinstance(ctx, str):
            ctx = multiprocessing.get_context(ctx)
        # the dataset's device tensors, copied to the host once: a worker cannot read the device
        fetch.dataset = _host.hostify(loader.dataset)
        gen = loader.generator or default_generator
        base_seed = (gen.initial_seed() + gen._offset) & 0x7FFFFFFFFFFFFFFF
        gen._offset += 1                   # each epoch's workers get new seeds
        self.n = loader.num_workers
        self.timeout = loader.timeout or None
        self.index_queues = [ctx.Queue() for _ in range(self.n)]
        self.result_queue = ctx.Queue()
        self.workers = []
        for w in range(self.n):
            p = ctx.Process(target=_worker_loop, daemon=True, args=(
                w, self.n, base_seed + w, fetch.dataset, fetch, iterable,
                self.index_queues[w], self.result_queue, loader.worker_init_fn))
            p.start()
            self.workers.append(p)

    def get(self):
        try:
            return self.result_queue.get(timeout=self.timeout)
        except queue.Empty:
            dead = [w for w, p in enumerate(self.workers) if not p.is_alive()]
            if dead:
                raise RuntimeError(f"DataLoader worker (pid(s) "
                                   f"{', '.join(str(self.workers[w].pid) for w in dead)}) "
                                   f"exited unexpectedly") from None
            raise RuntimeError(f"DataLoader timed out after {self.timeout} seconds") from None

    def shutdown(self):
        for q in self.index_queues:
            try:
                q.put(None)
            except (OSError, ValueError):
                pass
        for p in self.workers:
            p.join(timeout=5)
            if p.is_alive():
                p.terminate()
        self.workers = []


def iterate_map_style(pool, batches, prefetch):
    """Yield the fetched batches in order, keeping `prefetch` per worker in flight."""
    batches = iter(batches)
    pending, done, next_send, next_yield = {}, {}, 0, 0
    exhausted = False

    def send():
        nonlocal next_send, exhausted
        try:
            indices = next(batches)
        except StopIteration:
            exhausted = True
            return
        w = next_send % pool.n
        pool.index_queues[w].put((next_send, indices))
        pending[next_send] = w
        next_send += 1

    for _ in range(prefetch * pool.n):
        if exhausted:
            break
        send()
    while next_yield < next_send:
        while next_yield not in done:
            _w, idx, data = pool.get()
            done[idx] = data
        data = done.pop(next_yield)
        del pending[next_yield]
        next_yield += 1
        if not exhausted:
            send()
        if isinstance(data, _ExceptionWrapper):
            data.reraise()
        yield data


def iterate_iterable(pool):
    """Batches from the workers in turn until each has run dry."""
    live = list(range(pool.n))
    for w in live:
        pool.index_queues[w].put(True)
    buffered = collections.defaultdict(collections.deque)
    while live:
        for w in list(live):
            while not buffered[w]:
                wid, _seq, data = pool.get()
                buffered[wid].append(data)
            data = buffered[w].popleft()
            if data is StopIteration:
                live.remove(w)
                continue
            if isinstance(data, _ExceptionWrapper):
                data.reraise()
            pool.index_queues[w].put(True)
            yield data
