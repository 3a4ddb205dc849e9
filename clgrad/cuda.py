"""clgrad.cuda mirrors torch.cuda for the GPU OpenCL devices, which torch's vocabulary calls
"cuda:0", "cuda:1", ... (as PyTorch on ROCm presents AMD GPUs): a program that asks
`torch.cuda.is_available()` gets True exactly when clgrad has a GPU. An int argument is an index
among the GPUs; `clgrad.cl` is the same over every OpenCL device.

>>> import clgrad
>>> clgrad.cuda.device_count() == len([d for d in clgrad.cl.devices()
...                                    if d.is_gpu and not d.is_simulator])
True
"""
import collections

from . import cl as _cl
from .runtime import device as _device
from .runtime import streams as _streams
from .runtime.streams import Event, set_stream, stream
from .runtime.memory import OutOfMemoryError
from .ops import creation as _creation        # the generator (one for every device)

_Properties = collections.namedtuple(
    "_CudaDeviceProperties", "name major minor total_memory multi_processor_count "
    "max_work_group_size local_memory_bytes fp16 fp64 platform")


def is_available():
    """Whether there is a GPU OpenCL device (Oclgrind, a simulator, does not count).

    >>> import clgrad
    >>> clgrad.cuda.is_available() == bool(clgrad.runtime.device.gpus())
    True
    """
    return bool(_device.gpus())


def device_count():
    """How many GPU OpenCL devices there are."""
    return len(_device.gpus())


def is_initialized():
    return _device._devices is not None


def init():
    _device.devices()


def _gpu(device=None):
    if device is None:
        return _device.get_device("cuda")
    if isinstance(device, int):
        return _device.get_device(f"cuda:{device}")
    dev = _device.get_device(device)
    if not dev.is_gpu or dev.is_simulator:
        raise ValueError(f"Expected a cuda device, but got: {device}")
    return dev


def current_device():
    """Index (among the GPUs) of the GPU that "cuda" means."""
    _gpu()                                      # raises where there is no GPU
    return _device._cuda_current


def set_device(device):
    """Make `device` (an int, "cuda:K" or a clgrad.device) the GPU that "cuda" means."""
    _device.set_cuda_device(device)


class device:
    """Context manager that makes a GPU the current one: `with clgrad.cuda.device(1): ...`."""

    def __init__(self, device):
        self.idx = _device.gpus().index(_gpu(device)) if device is not None else None
        self.prev = None

    def __enter__(self):
        self.prev = _device._cuda_current
        if self.idx is not None:
            _device._cuda_current = self.idx

    def __exit__(self, *exc):
        _device._cuda_current = self.prev
        return False


def get_device_name(device=None):
    return _gpu(device).name


def get_device_capability(device=None):
    """(major, minor) of the device's OpenCL C version: torch returns the compute capability,
    which OpenCL devices do not have."""
    v = _gpu(device).version.split()[1] if len(_gpu(device).version.split()) > 1 else "1.2"
    major, _, minor = v.partition(".")
    return int(major), int(minor or 0)


def get_device_properties(device=None):
    d = _gpu(device)
    major, minor = get_device_capability(device)
    return _Properties(d.name, major, minor, d.global_mem_size, d.compute_units,
                       d.max_work_group_size, d.local_mem_size, d.has_fp16, d.has_fp64,
                       d.platform_name)


def is_bf16_supported(including_emulation=True):
    """bfloat16 is stored as 16 bits and computed in float32 on every device."""
    return is_available()


def synchronize(device=None):
    _gpu(device).synchronize()


def manual_seed(seed):
    """Seed the generator. clgrad has one counter-based generator for every device (the same
    numbers on any vendor), so this is clgrad.manual_seed."""
    _creation.manual_seed(seed)


manual_seed_all = manual_seed


def seed():
    return _creation.seed()


seed_all = seed


def initial_seed():
    return _creation.initial_seed()


def _stat(name, none=None):
    """clgrad.cl's statistic `name` of a GPU. Where there is no GPU, torch's counters read
    before CUDA starts: `none()` (0, an empty dict); without `none` that is an error, as torch's
    reset_peak_memory_stats and memory_summary need a GPU."""
    def f(device=None):
        if none is not None and not _device.gpus():
            return none()
        return getattr(_cl, name)(_gpu(device))
    f.__name__ = name
    f.__doc__ = f"clgrad.cl.{name} of a GPU device (default: the current one)" + (
        f"; {none()!r} where there is no GPU, as torch's.\n\n    >>> import clgrad\n"
        f"    >>> clgrad.cuda.is_available() or not clgrad.cuda.{name}()\n    True\n"
        if none is not None else ".")
    return f


memory_allocated = _stat("memory_allocated", int)
max_memory_allocated = _stat("max_memory_allocated", int)
memory_reserved = _stat("memory_reserved", int)
max_memory_reserved = _stat("max_memory_reserved", int)
reset_peak_memory_stats = _stat("reset_peak_memory_stats")
reset_max_memory_allocated = reset_peak_memory_stats
memory_stats = _stat("memory_stats", collections.OrderedDict)
memory_summary = _stat("memory_summary")
get_per_process_memory_fraction = _stat("get_per_process_memory_fraction")


def set_per_process_memory_fraction(fraction, device=None):
    _cl.set_per_process_memory_fraction(fraction, _gpu(device))


def get_rng_state(device="cuda"):
    """The generator's state (one generator serves every device, as clgrad.get_rng_state)."""
    _gpu(None if device == "cuda" else device)
    return _creation.get_rng_state()


def set_rng_state(new_state, device="cuda"):
    _gpu(None if device == "cuda" else device)
    _creation.set_rng_state(new_state)


def get_rng_state_all():
    return [get_rng_state() for _ in range(device_count())]


def set_rng_state_all(new_states):
    for state in new_states:
        set_rng_state(state)


def mem_get_info(device=None):
    """(free, total) bytes of a GPU: total is the device's memory, free what clgrad's pool has
    not taken from it (OpenCL does not report other processes' use)."""
    d = _gpu(device)
    return d.global_mem_size - memory_reserved(d), d.global_mem_size


memory_cached = memory_reserved                 # torch's deprecated names
max_memory_cached = max_memory_reserved
reset_max_memory_cached = reset_peak_memory_stats
reset_accumulated_memory_stats = reset_peak_memory_stats


def memory_stats_as_nested_dict(device=None):
    """memory_stats with its dotted keys ("a.b") as nested dicts."""
    out = {}
    for key, value in memory_stats(device).items():
        node = out
        *path, last = key.split(".")
        for part in path:
            node = node.setdefault(part, {})
        node[last] = value
    return out


def current_stream(device=None):
    """The Stream of a GPU: its one in-order queue (see clgrad.runtime.streams)."""
    return _streams.Stream(_gpu(device))


default_stream = current_stream


class Stream(_streams.Stream):
    """torch.cuda.Stream on a GPU: the device's queue."""

    def __init__(self, device=None, priority=0, **kwargs):
        super().__init__(_gpu(device), priority)


def empty_cache():
    """Give every GPU pool's cached blocks back to its device."""
    for d in _device.gpus():
        d.pool.empty_cache()


__all__ = ["is_available", "device_count", "is_initialized", "init", "current_device",
           "set_device", "device", "get_device_name", "get_device_capability",
           "get_device_properties", "is_bf16_supported", "synchronize", "manual_seed",
           "manual_seed_all", "seed", "seed_all", "initial_seed", "memory_allocated",
           "max_memory_allocated", "memory_reserved", "max_memory_reserved",
           "reset_peak_memory_stats", "reset_max_memory_allocated", "memory_stats",
           "memory_summary", "get_per_process_memory_fraction",
           "set_per_process_memory_fraction", "empty_cache", "OutOfMemoryError",
           "get_rng_state", "set_rng_state", "get_rng_state_all", "set_rng_state_all",
           "mem_get_info", "memory_cached", "max_memory_cached", "reset_max_memory_cached",
           "reset_accumulated_memory_stats", "memory_stats_as_nested_dict", "current_stream",
           "default_stream", "Stream", "Event", "stream", "set_stream"]
