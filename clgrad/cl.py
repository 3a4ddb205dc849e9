"""clgrad.cl mirrors torch.cuda: devices, synchronisation and the memory pool's statistics.

>>> import clgrad
>>> clgrad.cl.is_available()
True
"""
from .runtime import device as _device
from .runtime.memory import OutOfMemoryError
from .runtime.streams import Event, Stream, current_stream, default_stream, set_stream, stream


def is_available():
    """Whether at least one OpenCL device can be used."""
    return bool(_device.devices())


def devices():
    """The usable OpenCL devices; index N is "cl:N"."""
    return list(_device.devices())


def device_count():
    return len(_device.devices())


def _dev(device):
    return _device.get_device(device)


def current_device():
    """Index of the default device."""
    return _device.default_device().index


def set_device(device):
    _device.set_default_device(device)


def get_device_name(device=None):
    return _dev(device).name


def get_device_capability(device=None):
    """What the device can do (a dict: fp16, fp64, local memory, work-group size, vendor ...)."""
    return _dev(device).capabilities()


def get_device_properties(device=None):
    return _dev(device).capabilities()


def synchronize(device=None):
    """Wait until every queued operation on the device has finished."""
    _dev(device).synchronize()


def _pool(device):
    pool = _dev(device).pool
    pool.settle()
    return pool


def memory_allocated(device=None):
    """Bytes in blocks held by live tensors."""
    return _pool(device).allocated


def max_memory_allocated(device=None):
    return _pool(device).peak_allocated


def memory_reserved(device=None):
    """Bytes the pool holds from the device: in use plus cached."""
    p = _pool(device)
    return p.allocated + p.cached


def max_memory_reserved(device=None):
    return _pool(device).peak_reserved


def reset_peak_memory_stats(device=None):
    _dev(device).pool.reset_peak()


reset_max_memory_allocated = reset_peak_memory_stats


def empty_cache(device=None):
    """Give the pool's cached blocks back to the device."""
    for d in ([_dev(device)] if device is not None else _device.devices()):
        d.pool.empty_cache()


def memory_stats(device=None):
    """Counters of the device's pool: allocations, cache hits, bytes in use and cached, peaks."""
    return _dev(device).pool.stats()


def memory_summary(device=None):
    s = memory_stats(device)
    return "\n".join(f"{k:24s} {v}" for k, v in s.items())


def set_per_process_memory_fraction(fraction, device=None):
    """Cap what the pool may hold at `fraction` of the device's memory (1.0 removes the cap)."""
    if not 0 <= fraction <= 1:
        raise ValueError(f"Invalid fraction value: {fraction}. Allowed range: 0~1")
    d = _dev(device)
    d.pool.cap = None if fraction >= 1 else int(fraction * d.global_mem_size)


def get_per_process_memory_fraction(device=None):
    d = _dev(device)
    return 1.0 if d.pool.cap is None else d.pool.cap / d.global_mem_size


__all__ = ["is_available", "devices", "device_count", "current_device", "set_device",
           "get_device_name", "get_device_capability", "get_device_properties", "synchronize",
           "memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved",
           "reset_peak_memory_stats", "empty_cache", "memory_stats", "memory_summary",
           "set_per_process_memory_fraction", "OutOfMemoryError", "Stream", "Event",
           "current_stream", "default_stream", "stream", "set_stream"]
