"""torch.cuda's Stream and Event over clgrad's devices. Each device has one in-order command
queue, so every Stream of a device is that queue: work on it runs in the order it was issued,
`stream(s)` / `set_stream` change nothing, and `wait_stream` / `wait_event` are already true.
An Event is a point in the queue: `record` remembers it, `synchronize` waits for it, and with
`enable_timing=True` `elapsed_time` gives the milliseconds between two recorded events (an Event
takes its time when the queue has drained to it, so recording a timed event waits).
"""
import time

from . import device as _device


class Stream:
    """The command queue of a device (default: the current one).

    >>> import clgrad
    >>> s = clgrad.cl.Stream()
    >>> s.synchronize(); s.query(), s == clgrad.cl.current_stream()
    (True, True)
    """

    def __init__(self, device=None, priority=0, **kwargs):
        self.device = _device.get_device(device)
        self.priority = priority

    def __eq__(self, other):
        return isinstance(other, Stream) and other.device is self.device

    def __hash__(self):
        return hash(("stream", id(self.device)))

    def __repr__(self):
        return f"<clgrad Stream on {self.device.name}>"

    def synchronize(self):
        """Wait for everything issued to the device."""
        self.device.synchronize()

    def query(self):
        """Whether everything issued so far has finished. clgrad answers by waiting for it (an
        OpenCL queue can only be asked about a command it was given): always True, later."""
        self.device.queue.finish()
        return True

    def wait_stream(self, stream):
        """One queue per device: work issued to `stream` is already ahead of this one's."""

    def wait_event(self, event):
        """The event's point is already ahead of anything issued after it."""

    def record_event(self, event=None):
        event = event or Event()
        event.record(self)
        return event


class Event:
    """A point in a device's queue.

    >>> import clgrad
    >>> start, end = clgrad.cl.Event(enable_timing=True), clgrad.cl.Event(enable_timing=True)
    >>> start.record(); x = clgrad.ones(1000).sum(); end.record()
    >>> end.synchronize(); start.elapsed_time(end) >= 0
    True
    """

    def __init__(self, enable_timing=False, blocking=False, interprocess=False,
                 external=False):
        self.enable_timing = enable_timing
        self._device = None
        self._time = None

    def record(self, stream=None):
        stream = stream or Stream()
        self._device = stream.device
        if self.enable_timing:            # the time when the queue has drained to this point
            stream.device.queue.finish()
            self._time = time.perf_counter()

    def query(self):
        return self._device is None or Stream(self._device).query()

    def synchronize(self):
        if self._device is not None:
            self._device.synchronize()

    def wait(self, stream=None):
        """Work issued after this call starts after the event: true on an in-order queue."""

    def elapsed_time(self, end_event):
        """Milliseconds from this event to end_event (both recorded with enable_timing=True)."""
        if not (self.enable_timing and end_event.enable_timing):
            raise RuntimeError("Both events must be created with argument 'enable_timing=True'.")
        if self._time is None or end_event._time is None:
            raise RuntimeError("Both events must be recorded before calculating elapsed time.")
        return (end_event._time - self._time) * 1e3


def current_stream(device=None):
    return Stream(device)


default_stream = current_stream


class stream:
    """Context manager selecting a stream: with one queue per device, it changes nothing."""

    def __init__(self, stream):
        self.stream = stream

    def __enter__(self):
        return self.stream

    def __exit__(self, *exc):
        return False


def set_stream(stream):
    """Accepted: every stream of a device is its one queue."""
