"""A caching pool of device buffers, one per device, with the statistics `clgrad.cl.memory_*` reads.

Freed buffers are kept in bins of rounded sizes and handed out again; the in-order queue makes the
reuse safe, because every kernel that used the old tensor was enqueued before any kernel that
writes the new one.
"""
import gc
import threading

import pyopencl as cl


class OutOfMemoryError(RuntimeError):
    """Raised when the pool cannot provide a buffer even after freeing its cache.

    >>> issubclass(OutOfMemoryError, RuntimeError)
    True
    """


def _fmt(n):
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n} {unit}" if unit == "bytes" else f"{n:.2f} {unit}"
        n /= 1024


def rounded_size(nbytes):
    """The size of the block the pool hands out for a request: at least 512 bytes, then at most
    1/8 over the request, so that blocks of similar sizes land in the same bin.

    >>> rounded_size(1), rounded_size(1000), rounded_size(1 << 20)
    (512, 1024, 1048576)
    """
    if nbytes <= 512:
        return 512
    step = 1 << max(0, (nbytes - 1).bit_length() - 3)
    return -(-nbytes // step) * step


class MemoryPool:
    """Hands out `cl.Buffer`s for one device and keeps freed ones for reuse."""

    def __init__(self, context, total_bytes, max_alloc):
        self.context = context
        self.total_bytes = total_bytes
        self.max_alloc = max_alloc
        self.cap = None                    # set by set_per_process_memory_fraction
        self.recorder = None               # the capturing Recording (runtime/recording.py)
        self.holding = None                # frees held back while a side queue may still use
        #                                    them (runtime/side_queue.py), or None
        self._bins = {}                    # rounded size -> [cl.Buffer]
        self._pending = []                 # freed (buffer, size) not yet put in their bin
        self._lock = threading.Lock()
        self.allocated = 0                 # bytes in blocks held by tensors
        self.cached = 0                    # bytes in free blocks kept for reuse
        self.peak_allocated = 0
        self.peak_reserved = 0
        self.num_alloc_calls = 0
        self.num_cache_hits = 0
        self.num_device_allocs = 0
        self.num_frees = 0
        self.num_ooms = 0

    # -- the two calls on the hot path ------------------------------------------------------
    def alloc(self, nbytes):
        """Return (buffer, block_size) for at least `nbytes` bytes."""
        size = 512 if nbytes <= 512 else rounded_size(nbytes)
        rec = self.recorder
        if rec is not None:                # a capture hands out its own freed blocks first
            buf = rec.alloc(self, nbytes, size)
            if buf is not None:
                return buf, size
        with self._lock:
            if self._pending:
                self._drain()
            self.num_alloc_calls += 1
            free = self._bins.get(size)
            if free:
                buf = free.pop()
                self.cached -= size
                self.num_cache_hits += 1
            else:
                buf = self._new_block(nbytes, size)
            self.allocated += size
            if self.allocated > self.peak_allocated:
                self.peak_allocated = self.allocated
        return buf, size

    def free(self, buf, size):
        # Called from Storage.__del__, which can run anywhere (inside alloc too, when allocating
        # triggers the garbage collector): a list append is atomic, so no lock is taken here;
        # the next alloc (or a statistics read) files the block. During a capture the block
        # goes to the recording's own bins (runtime/recording.py): a replay may still write it.
        held = self.holding
        if held is not None:
            held.append((buf, size))
            return
        rec = self.recorder
        if rec is not None:
            rec.free(self, buf, size)
            return
        self._pending.append((buf, size))

    def free_now(self, buf, size):
        """Give a block back to the pool, bypassing any capture (a recording releasing it)."""
        self._pending.append((buf, size))

    def _drain(self):
        """File freed blocks into their bins (the caller holds the lock)."""
        pending = self._pending
        while pending:
            buf, size = pending.pop()
            self.allocated -= size
            self.cached += size
            self.num_frees += 1
            self._bins.setdefault(size, []).append(buf)

    def settle(self):
        """Account for every freed block (statistics readers call this first)."""
        with self._lock:
            self._drain()

    # -- slow path --------------------------------------------------------------------------
    def _new_block(self, nbytes, size):
        if size > self.max_alloc:
            self._raise(nbytes, f"the device's largest single buffer is {_fmt(self.max_alloc)}")
        for attempt in range(2):
            if self.cap is not None and self.allocated + self.cached + size > self.cap:
                self._drop_cache()
            if self.cap is None or self.allocated + size <= self.cap:
                try:
                    buf = cl.Buffer(self.context, cl.mem_flags.READ_WRITE, size)
                    self.num_device_allocs += 1
                    reserved = self.allocated + self.cached + size
                    if reserved > self.peak_reserved:
                        self.peak_reserved = reserved
                    return buf
                except (cl.MemoryError, cl.RuntimeError, cl.LogicError):
                    if attempt:
                        break
            if attempt == 0:
                # Tensors that are garbage but not yet collected still hold blocks.
                self._lock.release()
                try:
                    gc.collect()
                finally:
                    self._lock.acquire()
                self._drain()
                self._drop_cache()
        self._raise(nbytes, None)

    def _raise(self, nbytes, why):
        self.num_ooms += 1
        limit = f" of a {_fmt(self.cap)} cap" if self.cap is not None else \
            f" of {_fmt(self.total_bytes)} device memory"
        msg = (f"out of device memory: tried to allocate {_fmt(nbytes)}; {_fmt(self.allocated)} "
               f"in use by tensors{limit}, {_fmt(self.cached)} cached by the pool")
        if why:
            msg += f" ({why})"
        raise OutOfMemoryError(msg)

    def empty_cache(self):
        with self._lock:
            self._drain()
            self._drop_cache()

    def _drop_cache(self):
        self._bins.clear()          # dropping the cl.Buffer objects releases them
        self.cached = 0

    def reset_peak(self):
        with self._lock:
            self._drain()
            self.peak_allocated = self.allocated
            self.peak_reserved = self.allocated + self.cached

    def stats(self):
        with self._lock:
            self._drain()
            return {
                "allocated_bytes": self.allocated,
                "reserved_bytes": self.allocated + self.cached,
                "cached_bytes": self.cached,
                "peak_allocated_bytes": self.peak_allocated,
                "peak_reserved_bytes": self.peak_reserved,
                "num_alloc_calls": self.num_alloc_calls,
                "num_cache_hits": self.num_cache_hits,
                "num_device_allocs": self.num_device_allocs,
                "num_frees": self.num_frees,
                "num_ooms": self.num_ooms,
                "cap_bytes": self.cap,
            }


class Storage:
    """One pooled buffer and the device it lives on; shared by a tensor and all its views.
    The block goes back to the pool the moment the last tensor that uses it is dropped."""

    __slots__ = ("buf", "nbytes", "device", "_block", "__weakref__")

    def __init__(self, device, nbytes):
        self.device = device
        self.nbytes = nbytes
        self.buf, self._block = device.pool.alloc(nbytes)

    def __del__(self):
        try:
            self.device.pool.free(self.buf, self._block)
        except Exception:       # interpreter shutdown: the pool may be gone already
            pass
