"""Recordings: the device work of a stretch of Python, captured once and replayed without Python.

While a `Recording` captures, every kernel launch (through the chokepoint `kernels.launch`),
every buffer copy and upload, and every allocation and free of the memory pools is noted. A
replay enqueues the same kernels with the same arguments on the same buffers, in the same order:
no op dispatch, no autograd bookkeeping, no allocation. This is the mechanism under
`clgrad.compile` and `torch.cuda.graph` (CUDA graphs record the same way).

What makes a replay right:
- **Buffers stay the recording's.** Buffers freed during the capture go to the recording's own
  bins (a private pool, as a CUDA graph has) and are handed out again only inside the capture;
  a buffer still held by a tensor at the end is kept alive by a reference to its storage. So no
  tensor made after the capture ever shares a buffer that a replay writes.
- **Each launch gets a kernel object of its own** with its arguments set once; a replay only
  enqueues. A buffer that should change between replays (the next batch) is re-bound
  (`slots_of` + `replay(bindings=...)`).
- **Random draws advance.** Counter offsets handed out by a Philox generator during the capture
  are marked (`philox_offset`); a replay moves each to the generator's offset at replay time and
  advances the generator by what the capture drew, so dropout draws what eager would draw. A
  capture that uses another's offsets (a backward recorded apart from its forward, drawing the
  forward's dropout mask again) passes them as that one's latest replay drew them (`follow`).
- **Index checks report late.** A check's flag is copied into the recording's flags buffer; a
  replay reads that buffer once, without waiting, and the next replay raises IndexError. The
  index kernels clamp an index out of range meanwhile, so the failing replay stays inside its
  tensors.
- **Host work stays on the host.** A call wrapped in `host_call` (a scheduler's step, which keeps
  the learning rate on the host) is not recorded but called again at its place in every replay.
  Device work steered by host values (a fused optimizer's update) is recorded through
  `refreshed`: each replay first sets the scalars of its launches from the host state.
- **What cannot be replayed says why.** A read of device values to the host (`.item()`,
  `print(t)`, control flow on values) makes the recording `broken` with the place it happened:
  its result could steer Python, which a replay does not run. The one exception is a
  `Tensor.item()` that the recording's `item_reads` allows (clgrad.compile allows those whose
  value goes straight into its function's return value): it becomes part of the recording, and
  each replay reads the element again (`items`, each an `ItemRead` with its latest `value`).

>>> import clgrad
>>> x = clgrad.ones(4)
>>> with Recording() as rec:
...     y = x * 2 + 1
>>> _ = x.fill_(5.0); rec.replay(); y.tolist()    # y's buffer gets the new result
[11.0, 11.0, 11.0, 11.0]
"""
import gc
import os
import sys

import numpy as np
import pyopencl as cl

from . import kernels as _kernels
from .device import devices, gate_queues, open_gates
from .memory import Storage
from .side_queue import SideQueue, enqueue_mark, enqueue_wait

# The recording capturing now (one at a time, in one thread), or None.
active = None


def active_recording():
    """The recording capturing now, or None."""
    return active


class ItemRead:
    """One `Tensor.item()` made part of a recording (Recording.read_item): the element of
    device, buffer, byte offset and dtype, read again at every replay into `value` (a Python
    number: convert(host array of one element, dtype) makes it, as Tensor.item does).

    >>> import clgrad
    >>> t = clgrad.tensor([2.5, 4.0])
    >>> r = ItemRead(t[1], lambda host, dt: host.item())
    >>> r.read(), r.value
    (4.0, 4.0)
    """

    __slots__ = ("device", "buf", "offset", "dtype", "convert", "value")

    def __init__(self, t, convert):
        self.device = t._storage.device
        self.buf = t._storage.buf
        self.offset = t._offset * t._dtype.itemsize
        self.dtype = t._dtype
        self.convert = convert
        self.value = None

    def read(self):
        """Read the element (blocking: what was enqueued before runs first); returns its value."""
        host = np.empty(1, self.dtype.np)
        cl.enqueue_copy(self.device.queue, host, self.buf, src_offset=self.offset,
                        is_blocking=True)
        self.value = self.convert(host, self.dtype)
        return self.value


class PhiloxOffset(int):
    """A Philox counter offset handed out during a capture: an int that remembers its generator
    and how far into the capture's draws it lies, so that a replay can move it."""
    __slots__ = ()


def philox_offset(generator, offset):
    """The offset a random op passes to its kernel: marked while a capture runs (see the module
    text), else `offset` itself."""
    rec = active
    if rec is None or rec.paused:
        return offset
    return rec._mark_offset(generator, offset)


def host_call(fn):
    """Decorator: a method whose work is done on the host (an optimizer's step) runs as itself
    during a capture, unrecorded, and is called again at its place in every replay.

    >>> class Counter:
    ...     n = 0
    ...     @host_call
    ...     def step(self):
    ...         self.n += 1
    >>> c = Counter()
    >>> with Recording() as rec:
    ...     c.step()
    >>> rec.replay(); rec.replay(); c.n
    3
    """
    def wrapper(*args, **kwargs):
        rec = active
        if rec is None or rec.paused:
            return fn(*args, **kwargs)
        rec.paused += 1
        try:
            out = fn(*args, **kwargs)
        finally:
            rec.paused -= 1
        rec._ops.append(("host", (fn, args, kwargs)))
        return out
    wrapper.__name__, wrapper.__qualname__ = fn.__name__, fn.__qualname__
    wrapper.__doc__, wrapper.__wrapped__ = fn.__doc__, fn
    return wrapper


def refreshed(update, refresh, host):
    """Run `update()`, device work steered by host values (a fused optimizer's step: its learning
    rate and step count live on the host), so that the capture running now keeps its launches
    rather than calling it again as host work (`host_call`). What `update()` returns is handed to
    `refresh` at every replay, before the launches are enqueued: refresh(made) sets their scalar
    arguments for this replay (`live_scalars`) and returns True, or returns False when the host
    state they were recorded with is gone (a parameter's state replaced): the replay then calls
    `host()` in their place and the recording is stale (`valid()`). Outside a capture, update()
    just runs.

    >>> import clgrad
    >>> x = clgrad.zeros(2)
    >>> def update():
    ...     x.add_(1.0)                         # its kernel's arguments end (..., 1.0, n)
    ...     return live_scalars((1.0,), after=1)
    >>> with Recording() as rec:
    ...     _ = refreshed(update, lambda h: h.set((10.0,), {}) or True, None)
    >>> rec.replay(); x.tolist()
    [11.0, 11.0]
    """
    rec = active
    if rec is None or rec.paused:
        return update()
    start = len(rec._ops)
    made = update()
    inner = rec._ops[start:]
    del rec._ops[start:]
    # one operation for the fusion passes, which leave it as it is: a tensor freed inside it is
    # free from the operation after it
    rec._ops.append(("step", (lambda: refresh(made), host, inner)))
    for ps in rec._frees.values():
        if ps[-1] > start:
            ps[:] = [min(p, start + 1) for p in ps]
    return made


class LiveScalars:
    """The trailing scalar arguments of one recorded launch, which a refresh (`refreshed`) sets
    anew before a replay enqueues it; `values` are those it has now."""
    __slots__ = ("values", "kernel", "first", "types")

    def __init__(self, values):
        self.values = values
        self.kernel = None          # the replay's kernel object, once the capture has finished
        self.first = None           # the argument index of values[0]
        self.types = None           # numpy type of each

    def set(self, values, memo):
        """Pass `values` from the next replay on (only those that changed are set). memo: a
        dict that the calls of one refresh share (launches with like scalars pack them once)."""
        old = self.values
        if values is old:
            return
        key = (old, values, self.types)
        hit = memo.get(key)
        if hit is None:
            hit = memo[key] = [(j, t(new).tobytes()) for j, (o, new, t) in
                               enumerate(zip(old, values, self.types)) if o != new]
        k, first = self.kernel, self.first
        for j, packed in hit:
            # the raw setter: Kernel.set_arg costs ~5 us a call, this ~0.1
            k._set_arg_buf(first + j, packed)
        self.values = values


def live_scalars(values, after=0):
    """Inside `refreshed` during a capture: the scalar arguments `values` of the launch just made
    (followed by `after` more arguments), as a LiveScalars a refresh can change; else None."""
    rec = active
    if rec is None or rec.paused:
        return None
    kind, payload = rec._ops[-1]
    args = payload[4] if kind == "launch" else ()
    first = len(args) - len(values) - after
    if first < 0 or tuple(args[first:first + len(values)]) != tuple(values):
        raise RuntimeError("live_scalars: the last recorded operation is not a launch with "
                           "these scalars")
    live = LiveScalars(values)
    live.first = first
    rec._live[id(payload)] = (payload, live)
    return live


class aside:
    """Work done inside `with aside():` is not recorded (a one-time measurement of the device
    that a capture happens to trigger): it runs now and never in a replay."""

    def __enter__(self):
        self.rec = active
        if self.rec is not None:
            self.rec.paused += 1

    def __exit__(self, *exc):
        if self.rec is not None:
            self.rec.paused -= 1


def checked_read(queue, host, buf, what):
    """Read `buf` (a check's flag) into the numpy array `host`, blocking. A check does not break
    a capture: its replays enqueue the read without waiting, and a later replay (or `check()`)
    raises IndexError with `what` when the flag was set, as a GPU's asynchronous errors do.
    """
    rec = active
    if rec is not None and not rec.paused:
        rec._ops.append(("check", (queue, buf, np.zeros_like(host), what)))
        return rec._copy(queue, host, buf, is_blocking=True)
    return cl.enqueue_copy(queue, host, buf, is_blocking=True)


def check_flag(dev, buf, what, error):
    """A check's int32 flag `buf`: inside a capture, read as checked_read reads it (its replays
    report late) and error() raised at once when set; otherwise read without waiting, error()
    raised at the device's next wait (Device.check_later)."""
    rec = active
    if rec is not None and not rec.paused:
        seen = np.zeros(1, np.int32)
        checked_read(dev.queue, seen, buf, what)
        if seen[0]:
            raise error()
    else:
        dev.check_later(buf, error)


_HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _outside_frame(f):
    """The first frame from f outward whose code is not clgrad's (a user's program), or None."""
    while f is not None and os.path.abspath(f.f_code.co_filename).startswith(_HERE):
        f = f.f_back
    return f


def _where():
    """file:line of the first frame outside clgrad (where a user's program did something)."""
    f = _outside_frame(sys._getframe(2))
    return f"{f.f_code.co_filename}:{f.f_lineno}" if f is not None else "?"


class Recording:
    """The device work of a `with Recording():` block, replayable (see the module text).

    known_storages: storages the caller knows the recording may use (inputs, parameters); any
    other buffer a launch used is found among the live storages at the end of the capture."""

    # fuse(ops, dead, frees) -> ops: the fusion passes over a capture's work
    # (clgrad/kernels/fused.py)
    fuser = None

    def __init__(self, fuse=True):
        self.fuse = fuse
        self._ops = []              # (kind, payload) in program order, while capturing
        self._plan = None           # [(function, args)] after the capture
        self._bins = {}             # (pool id, block size) -> [buffer]: the private pool
        self._pools = {}            # pool id -> pool
        self._frees = {}            # id(buffer) -> [number of ops recorded when it was freed]
        self._held = []             # storages whose buffers the replay uses
        self._offsets = []          # PhiloxOffset values handed out
        self._seeds = {}            # generator -> seed at capture time
        self._drawn = {}            # generator -> counters drawn by the capture
        self._philox = []           # (kernel, arg index, generator, delta, numpy type)
        self._foreign = []          # (kernel, arg index, PhiloxOffset, numpy type): another's
        self._followed = None       # (recording, [(kernel, index, generator, delta, type)])
        self._marks = {}            # id(PhiloxOffset) -> (generator, delta), after the capture
        self.last_base = {}         # generator -> the offset its draws started at, last replay
        self._live = {}             # id(launch payload) -> (payload, LiveScalars)
        self._slots = {}            # id(buffer) -> [(kernel, arg index)]
        self._devices = set()       # devices the replay launches on
        self._gated = set()         # those whose bursts are held behind an event
        self._check_events = []     # (replay number, read event, host flags, [(offset, like,
        #                             message)]) pending: one read of each owner's flags
        self._replays = 0
        self._used = set()          # ids of the buffers the replay uses
        self.kernels = []           # what a replay launches: (device, kernel, gsize, lsize, args)
        self.paused = 0
        self.broken = None          # why the recording cannot replay, or None
        self.stale = False          # a refreshed step fell back to host work (see valid())
        self.launches = 0
        self.capturing = False
        self.two_queues = False     # whether work went to a side queue (runtime/side_queue.py)
        # item_reads(frame) -> bool: whether a Tensor.item() called (through clgrad's own frames)
        # from `frame` may become part of the recording (read_item); None: none may
        self.item_reads = None
        self.items = []             # the ItemReads made part of it, in order

    # -- capture ------------------------------------------------------------------------------
    def __enter__(self):
        global active
        if active is not None:
            raise RuntimeError("a recording is already capturing (captures do not nest)")
        for dev in devices():
            dev.queue                      # enqueue what waits: the capture starts clean
            if dev.pool.recorder is not None:
                raise RuntimeError("a recording is already capturing")
            dev.pool.recorder = self
        self._copy = cl.enqueue_copy
        self._fill = cl.enqueue_fill_buffer
        self._map = cl.enqueue_map_buffer
        cl.enqueue_copy, cl.enqueue_fill_buffer = self._on_copy, self._on_fill
        cl.enqueue_map_buffer = self._on_map
        _kernels.launch_hooks.append(self._on_launch)
        self.capturing = True
        active = self
        return self

    def __exit__(self, *exc):
        global active
        active = None
        self.capturing = False
        _kernels.launch_hooks.remove(self._on_launch)
        cl.enqueue_copy, cl.enqueue_fill_buffer = self._copy, self._fill
        cl.enqueue_map_buffer = self._map
        try:
            if exc[0] is None:
                self._finish()
        finally:
            for dev in devices():
                if dev.pool.recorder is self:
                    dev.pool.recorder = None
            if exc[0] is not None or self.broken:
                self.release()
        return False

    def _on_launch(self, device, kernel, gsize, lsize, args, event):
        if not self.paused:
            if device._on_side is not None:          # replayed on the side queue too
                device = device._on_side
                self.two_queues = True
            self._ops.append(("launch", (device, kernel, gsize, lsize, args)))

    def _on_copy(self, queue, dest, src, **kw):
        if not self.paused:
            host_dest = not isinstance(dest, cl.MemoryObjectHolder)
            host_src = not isinstance(src, cl.MemoryObjectHolder)
            if host_dest:
                self._break(f"a read of device values to the host at {_where()}")
            elif host_src:       # an upload: its bytes are a constant of the recording
                src = np.array(src, copy=True)
                self._ops.append(("copy", (queue, dest, src, kw)))
            else:
                self._ops.append(("copy", (queue, dest, src, kw)))
        return self._copy(queue, dest, src, **kw)

    def _on_fill(self, queue, mem, pattern, offset, size, *a, **kw):
        if not self.paused:
            self._ops.append(("fill", (queue, mem, np.array(pattern, copy=True), offset, size)))
        return self._fill(queue, mem, pattern, offset, size, *a, **kw)

    def read_item(self, t, convert):
        """Tensor.item() of the one-element tensor t during the capture: where item_reads allows
        it, the read becomes an operation of the recording (an ItemRead, in `items`; each replay
        reads the element again) and its value, convert(host element, dtype), is returned;
        otherwise None (the caller reads as ever, which breaks the capture). Complex32 elements
        (two halves) are not taken."""
        if self.paused or self.broken or self.item_reads is None or \
                t._dtype.itemsize != t._dtype.np.itemsize or \
                not self.item_reads(_outside_frame(sys._getframe(1))):
            return None
        read = ItemRead(t, convert)
        self._ops.append(("item", (read.device, read.buf, read)))
        self.paused += 1                  # the read itself is the operation just noted
        try:
            read.device.raise_pending_checks()
            value = read.read()
        finally:
            self.paused -= 1
        self.items.append(read)
        return value

    def _on_map(self, *a, **kw):
        if not self.paused:
            self._break(f"a mapping of device memory to the host at {_where()}")
        return self._map(*a, **kw)

    def _break(self, why):
        if self.broken is None:
            self.broken = why

    def _mark_offset(self, generator, offset):
        seed = self._seeds.setdefault(generator, generator._seed)
        if seed != generator._seed:
            self._break("a generator was re-seeded during the capture")
        base = self._drawn.setdefault(generator, offset)   # the capture's first draw
        marked = PhiloxOffset(offset)
        self._offsets.append((marked, generator, offset - base))
        return marked

    # The private pool: MemoryPool.alloc / free ask these first while a capture runs.
    def alloc(self, pool, nbytes, size):
        if self.paused:
            return None      # host work allocates what it keeps from the shared pool
        free = self._bins.get((id(pool), size))
        return free.pop() if free else None

    def free(self, pool, buf, size):
        self._pools[id(pool)] = pool
        self._bins.setdefault((id(pool), size), []).append(buf)
        if self.capturing:
            # when: a later tensor in this buffer is written before it is read, so what the ops
            # before this point left in it is dead from here (the fusion passes use this). Not
            # after the capture: a collection during _finish would change the dict under the
            # passes that read it.
            self._frees.setdefault(id(buf), []).append(len(self._ops))

    def _bins_now(self):
        """The private bins' (key, buffers) pairs as they are now. Taken with the collector
        off: a collection while the list is made can free a block of a new size into the bins
        (a tensor in a reference cycle), and a dict that grows while it is read raises."""
        was = gc.isenabled()
        gc.disable()
        try:
            return list(self._bins.items())
        finally:
            if was:
                gc.enable()

    # -- from the noted work to a plan --------------------------------------------------------
    def _finish(self):
        if self.broken:
            return
        self.last_base = dict(self._drawn)      # the capture's first draws (see replay)
        for gen, seed in self._seeds.items():
            self._drawn[gen] = gen._offset - self._drawn[gen]
        used = {}                                   # id(buffer) -> buffer
        found_offsets = set()
        marks = self._marks = {id(m): (gen, delta) for m, gen, delta in self._offsets}
        launches = 0
        ops = self._ops
        # (the passes reorder by one queue's order)
        if self.fuse and self.fuser is not None and not self.two_queues:
            # (lists of the bins: a collection here may free blocks into them, new sizes too)
            ops = self.fuser(ops, {id(b) for _, bufs in self._bins_now() for b in bufs},
                             self._frees)
        # a device's queue may be replaced between replays (Device.set_profiling): copies, fills
        # and reads are enqueued on their device's queue of the moment, as launches are
        owners = {d._queue.int_ptr: d for d in devices()}
        owners.update((d._side_queue._queue.int_ptr, d._side_queue) for d in devices()
                      if d._side_queue is not None)

        def plan_of(ops):
            nonlocal launches
            plan = []
            for kind, payload in ops:
                if kind == "launch":
                    device, kernel, gsize, lsize, args = payload
                    k = cl.Kernel(kernel.program, kernel.function_name)
                    k.set_scalar_arg_dtypes(kernel._clgrad_signature)
                    k.set_args(*args)
                    sig = kernel._clgrad_signature
                    for i, a in enumerate(args):
                        if isinstance(a, cl.MemoryObjectHolder):
                            used[id(a)] = a
                            self._slots.setdefault(id(a), []).append((k, i))
                        elif type(a) is PhiloxOffset and id(a) in marks:
                            found_offsets.add(id(a))
                            gen, delta = marks[id(a)]
                            self._philox.append((k, i, gen, delta, sig[i]))
                        elif type(a) is PhiloxOffset:
                            # drawn by another capture (a forward's, whose dropout a backward
                            # draws again): see follow()
                            self._foreign.append((k, i, a, sig[i]))
                    live = self._live.get(id(payload))
                    if live is not None:
                        h = live[1]
                        h.kernel, h.types = k, tuple(sig[h.first:h.first + len(h.values)])
                    plan.append((_enqueue_kernel, (device, k, gsize, lsize)))
                    if device.__class__ is SideQueue:
                        device = device.device
                    self.kernels.append((device, kernel, gsize, lsize, args))
                    self._devices.add(device)
                    launches += 1
                elif kind == "copy":
                    queue, dest, src, kw = payload
                    for m in (dest, src):
                        if isinstance(m, cl.MemoryObjectHolder):
                            used[id(m)] = m
                    kw = {k: v for k, v in kw.items() if k != "is_blocking"}
                    if not isinstance(src, cl.MemoryObjectHolder):
                        # an upload's bytes go to the device once; a replay copies them there
                        # (PoCL waits for the queue to drain before it returns from a host write)
                        src = cl.Buffer(queue.context, cl.mem_flags.READ_ONLY |
                                        cl.mem_flags.COPY_HOST_PTR, hostbuf=src)
                        kw = {"dst_offset": kw.get("dst_offset", 0), "byte_count": src.size}
                    plan.append((_enqueue_copy, (self._copy, owners.get(queue.int_ptr, queue),
                                                 dest, src, kw)))
                elif kind == "check":
                    # the flag goes to its place in the owner's flags buffer, read once at the
                    # end (a read costs ~25-45 us to enqueue on PoCL, a copy ~1)
                    queue, buf, like, _ = payload
                    used[id(buf)] = buf
                    owner, offset = slot[id(payload)]
                    plan.append((_enqueue_copy, (self._copy, owner, flags[owner][0], buf,
                                                 {"dst_offset": offset,
                                                  "byte_count": like.nbytes})))
                elif kind == "fill":
                    queue, mem, pattern, offset, size = payload
                    used[id(mem)] = mem
                    plan.append((_enqueue_fill, (self._fill, owners.get(queue.int_ptr, queue),
                                                 mem, pattern, offset, size)))
                elif kind == "wait":                 # see side_queue.queue_wait
                    plan.append((enqueue_wait, payload))
                elif kind == "mark":                 # and side_queue.mark
                    plan.append((enqueue_mark, (payload,)))
                elif kind == "item":
                    used[id(payload[1])] = payload[1]
                    plan.append((ItemRead.read, (payload[2],)))
                elif kind == "step":             # see refreshed()
                    refresh, host, inner = payload
                    plan.append((_refreshed_step, (self, refresh, (host, (), {}, self._devices),
                                                   plan_of(inner))))
                else:
                    fn, args, kwargs = payload
                    plan.append((_host, (fn, args, kwargs, self._devices)))
            return plan

        flags, slot = {}, {}            # owner -> [buffer, bytes, [(offset, like, what)]]
        for payload in _checks_of(ops):
            queue, _, like, what = payload
            owner = owners.get(queue.int_ptr, queue)
            entry = flags.setdefault(owner, [None, 0, []])
            slot[id(payload)] = (owner, entry[1])
            entry[2].append((entry[1], like, what))
            entry[1] += like.nbytes
        for owner, entry in flags.items():
            entry[0] = cl.Buffer(_queue(owner).context, cl.mem_flags.READ_WRITE |
                                 cl.mem_flags.COPY_HOST_PTR, hostbuf=np.zeros(entry[1], np.uint8))
        plan = plan_of(ops)
        for owner, (buf, size, entries) in flags.items():
            plan.append((_enqueue_flags, (self, self._copy, owner, buf, size, entries)))
        if any(h.kernel is None for _, h in self._live.values()):
            self._break("a launch whose scalars a step refreshes did not reach the replay "
                        "unchanged")
            return
        missing = [m for m, _, _ in self._offsets if id(m) not in found_offsets]
        if missing:
            self._break("a random op's counter offset did not reach its kernel unchanged")
            return
        # Buffers: those in the private bins stay there (the recording's); the bins' others go
        # back to the pool; a used buffer held by a live storage is kept by holding the storage.
        in_bins = set()
        for (pid, size), bufs in self._bins_now():
            keep = []
            for b in bufs:
                if id(b) in used:
                    keep.append(b)
                    in_bins.add(id(b))
                else:
                    self._pools[pid].free_now(b, size)
            bufs[:] = keep
        wanted = {i for i in used if i not in in_bins}
        if wanted:
            # found among the live storages once, here, rather than noted at every allocation
            for obj in gc.get_objects():
                # (getattr: a Storage whose allocation failed has no buffer, and may live on in
                # the frames of a traceback still held)
                if type(obj) is Storage and id(getattr(obj, "buf", None)) in wanted:
                    self._held.append(obj)
                    wanted.discard(id(obj.buf))
                    if not wanted:
                        break
        if wanted:
            self._break("a kernel used a buffer that no live tensor holds")
            return
        self._ops = []
        self._used = set(used)
        self._gated = {d for d in self._devices if d.gate_bursts}
        self._plan = _bursts(plan, self._gated)
        self.launches = launches

    # -- replay ---------------------------------------------------------------------------------
    def uses(self, buf):
        """Whether the replay reads or writes `buf`."""
        return id(buf) in self._used

    def slots_of(self, buf):
        """Where the replay passes `buf` to a kernel: [(kernel, argument index)]."""
        return self._slots.get(id(buf), [])

    def follow(self, source):
        """Make every replay pass the counter offsets this capture took from `source`'s draws
        (a backward drawing a forward's dropout mask again) as `source`'s latest replay drew
        them. Returns whether every such offset is one of `source`'s."""
        entries = []
        for k, i, mark, np_type in self._foreign:
            found = source._marks.get(id(mark)) if source._plan is not None else None
            if found is None:
                return False
            entries.append((k, i) + found + (np_type,))
        self._followed = (source, entries) if entries else None
        return True

    def valid(self):
        """Whether the generators the capture drew from still have their seeds, and every
        refreshed step (`refreshed`) still finds the host state it was recorded with."""
        return not self.stale and all(gen._seed == seed for gen, seed in self._seeds.items())

    def replay(self, bindings=()):
        """Enqueue the recorded work again. bindings: [(slots, buffer)] to pass `buffer` where
        the capture passed another (see `slots_of`)."""
        if self._plan is None:
            raise RuntimeError(f"this recording cannot be replayed: {self.broken or 'empty'}")
        for slots, buf in bindings:         # first: the caller has recorded them as bound
            for k, i in slots:
                k.set_arg(i, buf)
        self.check(wait=False)
        self._replays += 1
        if self._philox:
            base = self.last_base = {gen: gen._offset for gen in self._drawn}
            for k, i, gen, delta, np_type in self._philox:
                k._set_arg_buf(i, np_type(base[gen] + delta).tobytes())   # see LiveScalars.set
            for gen, n in self._drawn.items():
                gen._offset = base[gen] + n
        if self._followed is not None:
            source, entries = self._followed
            for k, i, gen, delta, np_type in entries:
                k._set_arg_buf(i, np_type(source.last_base[gen] + delta).tobytes())
        for dev in self._devices:
            dev.queue                                   # what waits goes first
        for fn, args in self._plan:
            fn(*args)

    def check(self, wait=True):
        """Raise IndexError if an index check of an earlier replay failed. wait=True waits for
        every pending read of a check's flag. wait=False (what a replay does) looks at the reads
        that are done and leaves those of the last replay that are not for the next one, which
        waits for them: the device may still be running the last step while the host enqueues
        this one."""
        pending, self._check_events = self._check_events, []
        late = []
        done = cl.command_execution_status.COMPLETE
        for n, evt, host, entries in pending:
            if not wait and n == self._replays and \
                    evt.command_execution_status != done:
                late.append((n, evt, host, entries))
                continue
            evt.wait()
            if not host.any():
                continue
            for offset, like, what in entries:
                if host[offset:offset + like.nbytes].view(like.dtype)[0]:
                    self._check_events = late
                    raise IndexError(f"{what} (found by a replay of a compiled step: the "
                                     f"failing step is one of the last two before this call)")
        self._check_events = late

    def release(self):
        """Give the private pool's buffers back (the recording cannot replay after this)."""
        for (pid, size), bufs in self._bins_now():
            for b in bufs:
                self._pools[pid].free_now(b, size)
        self._bins = {}
        self._held = []
        self._plan = None
        self.kernels = []

    def __del__(self):
        try:
            if self._bins:
                self.release()
        except Exception:
            pass


def _enqueue_kernel(device, kernel, gsize, lsize):
    cl.enqueue_nd_range_kernel(device._queue, kernel, gsize, lsize)


def _bursts(plan, gated):
    """The plan with each run of device work made one step (_enqueue_burst): kernel launches,
    copies and fills from buffer to buffer, and the optimizer steps among them whose own work is
    all of that kind. Host calls and reads stay steps of their own."""
    out, run = [], []
    for fn, args in plan + [(None, None)]:
        if fn is _enqueue_kernel:
            run.append(args)
            continue
        if fn is _enqueue_copy or fn is _enqueue_fill or fn is enqueue_wait or \
                fn is enqueue_mark:
            run.append((None, fn, args, None))
            continue
        if fn is _refreshed_step:
            inner = _bursts(args[3], gated)
            if all(f is _enqueue_burst for f, _ in inner):
                items = [item for _, (_, burst) in inner for item in burst]
                run.append((None, _refresh, args[:3], len(items)))
                run.extend(items)
                continue
            args = args[:3] + (inner,)
        if run:
            out.append((_enqueue_burst, (gated, run)))
            run = []
        if fn is not None:
            out.append((fn, args))
    return out


def _refresh():
    """A marker in a burst: (None, _refresh, (recording, refresh, host), n) runs refresh() and,
    should it fail, host work in place of the n items that follow (see _refreshed_step)."""


def _enqueue_burst(gated, items):
    # held behind a user event on the devices whose bursts are (gate_queues, Device.flush)
    gates = gate_queues(gated, len(items))
    enqueue = cl.enqueue_nd_range_kernel
    hooks = _kernels.launch_hooks   # the profiler and other observers see replayed launches too
    skip = 0
    try:
        for i, (dev, k, g, l) in enumerate(items):
            if skip:
                skip -= 1
            elif dev is not None:
                evt = enqueue(dev._queue, k, g, l)
                for hook in hooks:
                    hook(dev.device if dev.__class__ is SideQueue else dev, k, g, l, (), evt)
            elif k is not _refresh:
                k(*g)
            else:
                # an optimizer's refresh is host work (a tensor learning rate is read): the
                # gate opens first, and closes again behind it
                open_gates(gates)
                gates = []
                rec, refresh, host = g
                if not refresh():
                    rec.stale = True            # see _refreshed_step
                    _host(*host)
                    skip = l
                gates = gate_queues(gated, len(items) - i - 1 - skip)
    finally:
        open_gates(gates)


def _queue(owner):
    """The queue to enqueue on: a Device's current one, or a queue the capture saw that belongs
    to no device."""
    return owner._queue if owner.__class__ is not cl.CommandQueue else owner


def _enqueue_copy(copy, owner, dest, src, kw):
    copy(_queue(owner), dest, src, **kw)        # buffer to buffer: on the device, without waiting


def _enqueue_flags(rec, copy, owner, buf, size, entries):
    host = np.empty(size, np.uint8)     # its own: the next replay may read the flags again first
    evt = copy(_queue(owner), host, buf, is_blocking=False)
    rec._check_events.append((rec._replays, evt, host, entries))


def _checks_of(ops):
    """The payloads of a capture's checks, those inside refreshed steps included."""
    for kind, payload in ops:
        if kind == "check":
            yield payload
        elif kind == "step":
            yield from _checks_of(payload[2])


def _enqueue_fill(fill, owner, mem, pattern, offset, size):
    fill(_queue(owner), mem, pattern, offset, size)


def _refreshed_step(rec, refresh, host, plan):
    if refresh():
        for fn, args in plan:
            fn(*args)
    else:
        # the state it was recorded with is gone: it runs as itself, and the recording is stale
        # (clgrad.compile records again)
        rec.stale = True
        _host(*host)


def _host(fn, args, kwargs, devices):
    fn(*args, **kwargs)
    for dev in devices:          # its tiny launches wait in the burst queue: send them first
        dev.queue
