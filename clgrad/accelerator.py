"""clgrad.accelerator: torch 2.6+'s device-agnostic API over clgrad's GPUs, which (as in
clgrad.cuda) torch's vocabulary calls "cuda". Where there is no GPU, current_accelerator()
is None, device_count() is 0 and the calls that need a device raise RuntimeError, as torch's.

>>> import clgrad
>>> acc = clgrad.accelerator.current_accelerator()
>>> acc is None or acc.type == "cuda"
True
>>> clgrad.accelerator.is_available() == clgrad.cuda.is_available()
True
"""
from . import cuda as _cuda
from .tensor import device

__all__ = ["current_accelerator", "current_device_index", "current_device_idx", "device_count",
           "device_index", "is_available", "set_device_index", "set_device_idx", "synchronize",
           "empty_cache", "memory_allocated", "max_memory_allocated", "memory_reserved",
           "max_memory_reserved", "memory_stats", "reset_peak_memory_stats",
           "reset_accumulated_memory_stats", "current_stream"]

_NONE = "Cannot access accelerator device when none is available."


def _check():
    if not _cuda.is_available():
        raise RuntimeError(_NONE)


def is_available():
    """Whether there is an accelerator (a GPU OpenCL device).

    >>> import clgrad
    >>> clgrad.accelerator.is_available() == (clgrad.accelerator.device_count() > 0)
    True
    """
    return _cuda.is_available()


def device_count():
    """How many accelerator devices there are (0 where there is none).

    >>> import clgrad
    >>> clgrad.accelerator.device_count() == clgrad.cuda.device_count()
    True
    """
    return _cuda.device_count()


def current_accelerator(check_available=False):
    """clgrad.device("cuda") where there is a GPU, else None (check_available is accepted as
    torch's: with no GPU, None either way).

    >>> import clgrad
    >>> a = clgrad.accelerator.current_accelerator(check_available=True)
    >>> a is None or str(a) == "cuda"
    True
    """
    return device("cuda") if _cuda.is_available() else None


def current_device_index():
    """Index of the current accelerator device; RuntimeError where there is none.

    >>> import clgrad
    >>> not clgrad.accelerator.is_available() or clgrad.accelerator.current_device_index() >= 0
    True
    """
    _check()
    return _cuda.current_device()


def set_device_index(device, /):
    """Make `device` (an int, "cuda:K", a clgrad.device; None does nothing) the current one.

    >>> import clgrad
    >>> if clgrad.accelerator.is_available():
    ...     clgrad.accelerator.set_device_index(clgrad.accelerator.current_device_index())
    """
    _check()
    if device is not None:
        _cuda.set_device(device)


current_device_idx = current_device_index           # torch's deprecated spellings
set_device_idx = set_device_index


class device_index:
    """Context manager: the current accelerator device is `device` inside (None: unchanged).

    >>> import clgrad
    >>> with clgrad.accelerator.device_index(None):
    ...     pass
    """

    def __init__(self, device, /):
        self.idx = device
        self.prev = None

    def __enter__(self):
        if self.idx is not None:
            self.prev = current_device_index()
            set_device_index(self.idx)

    def __exit__(self, *exc):
        if self.idx is not None:
            set_device_index(self.prev)
        return False


def synchronize(device=None, /):
    """Wait for the work queued on the accelerator device.

    >>> import clgrad
    >>> if clgrad.accelerator.is_available(): clgrad.accelerator.synchronize()
    """
    _check()
    _cuda.synchronize(device)


def _mem(name):
    def f(device_index=None, /):
        _check()
        return getattr(_cuda, name)(device_index)
    f.__name__ = name
    f.__doc__ = (f"clgrad.cuda.{name} of the accelerator device; RuntimeError where there is "
                 f"none.\n\n    >>> import clgrad\n    >>> clgrad.accelerator.is_available() or "
                 f"clgrad.accelerator.device_count() == 0\n    True\n")
    return f


memory_allocated = _mem("memory_allocated")
max_memory_allocated = _mem("max_memory_allocated")
memory_reserved = _mem("memory_reserved")
max_memory_reserved = _mem("max_memory_reserved")
memory_stats = _mem("memory_stats")
reset_peak_memory_stats = _mem("reset_peak_memory_stats")
reset_accumulated_memory_stats = _mem("reset_accumulated_memory_stats")


def empty_cache():
    """Give the accelerator's pooled memory back; RuntimeError where there is none.

    >>> import clgrad
    >>> if clgrad.accelerator.is_available(): clgrad.accelerator.empty_cache()
    """
    _check()
    _cuda.empty_cache()


def current_stream(device=None, /):
    """The accelerator device's stream (its one in-order OpenCL queue, as clgrad.cuda's).

    >>> import clgrad
    >>> not clgrad.accelerator.is_available() or clgrad.accelerator.current_stream() is not None
    True
    """
    _check()
    return _cuda.current_stream(device)
