"""A device's second in-order queue, for ops that run two chains of small kernels at once.

On PoCL a kernel of less than ~30 us of work runs on one core: the worker threads sleep whenever
no command is ready, and an in-order queue readies a command only once the one before it is done
(docs/implementations.md, "Small kernels run on one core under PoCL"). An op that has two such
chains to run, independent for a while (the layers of a stacked LSTM as a wavefront: layer 1 on
chunk c of the steps while layer 0 runs chunk c + 1), gives the second core work by putting one
of them on a second queue of the same device:

    queue_wait(side, dev)              # the side queue starts after what dev's queue holds
    with on_side_queue(dev) as side:   # launches, copies and fills in here go to the side queue
        ...
    join_side_queue(dev)               # and dev's queue goes on only after the side's work

The op orders the queues itself: queue_wait(a, b) makes queue a wait for all that queue b holds
now, queue_wait(a, mark(b)) for what b held when marked (a layer's chunk, not the next chunk
enqueued since). It starts with the side queue waiting for the main one: a buffer the pool hands out may have been freed by a tensor that queued kernels on the main
queue still read. From the first stretch on the side queue until join_side_queue, the device's
pool holds back every buffer freed (MemoryPool.holding), since either queue may still use it
while the other could be handed it. A recording (runtime/recording.py) notes on which queue each
launch went and each wait, and replays them so.

    >>> import clgrad
    >>> dev = clgrad.runtime.default_device()
    >>> x = clgrad.ones(4)
    >>> side = side_queue(dev)
    >>> queue_wait(side, dev)
    >>> with on_side_queue(dev):
    ...     y = x * 2
    >>> join_side_queue(dev)
    >>> y.tolist()
    [2.0, 2.0, 2.0, 2.0]
"""
import contextlib

import pyopencl as cl


class SideQueue:
    """A device's second in-order queue, made with its main queue's properties (so that the
    profiler's events carry device times on it too). It stands where a recording's plan names a
    device (`_queue`); `device` is the device it belongs to."""

    def __init__(self, device):
        self.device = device
        self._queue = cl.CommandQueue(device.context, device.cl_device,
                                      properties=device._queue.properties)

    def __repr__(self):
        return f"<side queue of {self.device}>"


def side_queue(device):
    """The device's SideQueue, made on first use and made again when the main queue's
    properties changed (Device.set_profiling)."""
    side = device._side_queue
    if side is None or side._queue.properties != device._queue.properties:
        if side is not None:
            side._queue.finish()
        side = device._side_queue = SideQueue(device)
    return side


@contextlib.contextmanager
def on_side_queue(device):
    """Within it, the device's work (launches, copies, fills) goes to its side queue; yields the
    SideQueue. Not for host reads: order the queues with queue_wait first. The pool holds back
    what is freed from the first of these until join_side_queue."""
    side = side_queue(device)
    if device._on_side is not None:
        raise RuntimeError(f"on_side_queue({device}): already on the side queue")
    main = device.queue                  # (launches held back go to the main queue first)
    if device.pool.holding is None:
        device.pool.holding = []
    device._queue, device._on_side = side._queue, side
    try:
        yield side
    finally:
        device.queue                     # those held back in here go to the side queue
        device._queue, device._on_side = main, None


class Mark:
    """A point in a queue's work (`mark`), for a queue_wait on just what came before it."""
    __slots__ = ("owner", "event")

    def __init__(self, owner):
        self.owner = owner
        self.event = None               # the marker of the latest enqueue (replays enqueue anew)


def _ready(owner, what):
    dev = owner.device if owner.__class__ is SideQueue else owner
    if dev._on_side is not None:
        raise RuntimeError(f"{what}: call it outside on_side_queue")
    dev.queue                            # launches held back go first


def _note(op):
    from .recording import active
    if active is not None and not active.paused:
        active._ops.append(op)
        active.two_queues = True


def mark(owner):
    """A Mark after all that the queue of `owner` (a Device, meaning its main queue, or a
    SideQueue) holds now: queue_wait(other, mark) waits for that much and no more, while
    `owner` goes on with what it gets next."""
    _ready(owner, "mark")
    m = Mark(owner)
    enqueue_mark(m)
    _note(("mark", m))
    return m


def queue_wait(waiter, waited):
    """Make the queue of `waiter` (a Device, meaning its main queue, or a SideQueue) wait for
    all that the queue of `waited` holds now, or for a Mark: a barrier on `waiter`'s queue."""
    _ready(waiter, "queue_wait")
    if waited.__class__ is not Mark:
        _ready(waited, "queue_wait")
    enqueue_wait(waiter, waited)
    _note(("wait", (waiter, waited)))


def join_side_queue(device):
    """The end of an op's work on the side queue: the device's queue waits for the side one, and
    the pool gets back what it held since (see the module text)."""
    queue_wait(device, side_queue(device))
    pool = device.pool
    held, pool.holding = pool.holding, None
    for buf, size in held or ():
        pool.free(buf, size)


def enqueue_mark(m):
    m.event = cl.enqueue_marker(m.owner._queue)


def enqueue_wait(waiter, waited):
    evt = waited.event if waited.__class__ is Mark else cl.enqueue_marker(waited._queue)
    cl.enqueue_barrier(waiter._queue, wait_for=[evt])
