"""torch's top-level autocast state functions (`clgrad.is_autocast_enabled`,
`clgrad.set_autocast_dtype`, the deprecated cpu/gpu forms, the cast cache and the nesting
counter), exported as clgrad.<name>. They read and change the state of the autocast regions
themselves (clgrad/amp/autocast_mode.py: `autocast`, its per-thread stack and cast cache).
"""
import warnings

from .. import dtypes
from . import autocast_mode

__all__ = ["is_autocast_enabled", "set_autocast_enabled", "get_autocast_dtype",
           "set_autocast_dtype", "is_autocast_cpu_enabled", "set_autocast_cpu_enabled",
           "get_autocast_cpu_dtype", "set_autocast_cpu_dtype", "get_autocast_gpu_dtype",
           "set_autocast_gpu_dtype", "is_autocast_cache_enabled", "set_autocast_cache_enabled",
           "clear_autocast_cache", "autocast_increment_nesting", "autocast_decrement_nesting"]

_settings = {"autocast_nesting": 0}     # torch's counter of entered regions (by hand)


def _set_state(device_type, enabled=None, dtype=None):
    """Change the innermost autocast state of device_type in place, as torch's setters do (an
    enclosing autocast region restores its own on exit); outside any region, the base state."""
    amp = autocast_mode
    if device_type not in ("cuda", "cpu"):
        raise RuntimeError(f"User specified an unsupported autocast device_type "
                           f"'{device_type}'")
    stack = amp._state.stack
    for i in reversed(range(len(stack))):
        if stack[i][0] == device_type:
            break
    else:
        stack.insert(0, (device_type, amp.DEFAULT_DTYPE[device_type], False, True))
        i = 0
    dev, dt, on, cache = stack[i]
    stack[i] = (dev, dtype or dt, on if enabled is None else bool(enabled), cache)
    if enabled and not amp._installed:
        amp.install()


def is_autocast_enabled(device_type=None):
    """Whether autocast is on for device_type ("cuda" when not given, as torch's).

    >>> import clgrad
    >>> clgrad.is_autocast_enabled(), clgrad.is_autocast_enabled("cpu")
    (False, False)
    """
    return autocast_mode.is_autocast_enabled(device_type)


def set_autocast_enabled(device_type, enabled=None):
    """Turn autocast on or off for device_type (or, with one argument, for "cuda").

    >>> import clgrad
    >>> clgrad.set_autocast_enabled("cpu", True); clgrad.is_autocast_enabled("cpu")
    True
    >>> clgrad.set_autocast_enabled("cpu", False)
    """
    if enabled is None:
        device_type, enabled = "cuda", device_type
    _set_state(device_type, enabled=enabled)


def get_autocast_dtype(device_type):
    """The lower-precision dtype autocast uses for device_type.

    >>> import clgrad
    >>> clgrad.get_autocast_dtype("cpu")
    clgrad.bfloat16
    """
    return autocast_mode.get_autocast_dtype(device_type)


def set_autocast_dtype(device_type, dtype):
    """Set the lower-precision dtype autocast uses for device_type (float16 or bfloat16).

    >>> import clgrad
    >>> clgrad.set_autocast_dtype("cpu", clgrad.float16); clgrad.get_autocast_dtype("cpu")
    clgrad.float16
    >>> clgrad.set_autocast_dtype("cpu", clgrad.bfloat16)
    """
    if dtype not in (dtypes.float16, dtypes.bfloat16):
        raise RuntimeError(f"Currently, {device_type} autocast only supports float16 and "
                           f"bfloat16 as the autocast dtype, got {dtype}")
    _set_state(device_type, dtype=dtype)


def _deprecated(old, new):
    warnings.warn(f"torch.{old}() is deprecated. Please use torch.{new} instead.",
                  DeprecationWarning, stacklevel=3)


def is_autocast_cpu_enabled():
    """Deprecated: is_autocast_enabled("cpu").

    >>> import clgrad, warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     clgrad.is_autocast_cpu_enabled()
    False
    """
    _deprecated("is_autocast_cpu_enabled", "is_autocast_enabled('cpu')")
    return is_autocast_enabled("cpu")


def set_autocast_cpu_enabled(enabled):
    """Deprecated: set_autocast_enabled("cpu", enabled).

    >>> import clgrad, warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     clgrad.set_autocast_cpu_enabled(False)
    """
    _deprecated("set_autocast_cpu_enabled", "set_autocast_enabled('cpu', enabled)")
    set_autocast_enabled("cpu", enabled)


def get_autocast_cpu_dtype():
    """Deprecated: get_autocast_dtype("cpu").

    >>> import clgrad, warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     clgrad.get_autocast_cpu_dtype()
    clgrad.bfloat16
    """
    _deprecated("get_autocast_cpu_dtype", "get_autocast_dtype('cpu')")
    return get_autocast_dtype("cpu")


def set_autocast_cpu_dtype(dtype):
    """Deprecated: set_autocast_dtype("cpu", dtype).

    >>> import clgrad, warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     clgrad.set_autocast_cpu_dtype(clgrad.bfloat16)
    """
    _deprecated("set_autocast_cpu_dtype", "set_autocast_dtype('cpu', dtype)")
    set_autocast_dtype("cpu", dtype)


def get_autocast_gpu_dtype():
    """Deprecated: get_autocast_dtype("cuda").

    >>> import clgrad, warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     clgrad.get_autocast_gpu_dtype()
    clgrad.float16
    """
    _deprecated("get_autocast_gpu_dtype", "get_autocast_dtype('cuda')")
    return get_autocast_dtype("cuda")


def set_autocast_gpu_dtype(dtype):
    """Deprecated: set_autocast_dtype("cuda", dtype).

    >>> import clgrad, warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     clgrad.set_autocast_gpu_dtype(clgrad.float16)
    """
    _deprecated("set_autocast_gpu_dtype", "set_autocast_dtype('cuda', dtype)")
    set_autocast_dtype("cuda", dtype)


def is_autocast_cache_enabled():
    """Whether the innermost autocast region caches the casts of its weights (True outside any).

    >>> import clgrad
    >>> clgrad.is_autocast_cache_enabled()
    True
    """
    stack = autocast_mode._state.stack
    return stack[-1][3] if stack else autocast_mode._cache_default


def set_autocast_cache_enabled(enabled):
    """Turn the cast cache of the innermost autocast region on or off (outside any region: the
    default of the regions that follow).

    >>> import clgrad
    >>> clgrad.set_autocast_cache_enabled(True)
    """
    stack = autocast_mode._state.stack
    if stack:
        dev, dt, on, _ = stack[-1]
        stack[-1] = (dev, dt, on, bool(enabled))
    else:
        autocast_mode._cache_default = bool(enabled)


def clear_autocast_cache():
    """Drop the weights' casts autocast has cached.

    >>> import clgrad
    >>> clgrad.clear_autocast_cache()
    """
    autocast_mode._state.cache.clear()


def autocast_increment_nesting():
    """torch's counter of entered autocast regions (for code that manages it by hand): +1,
    returns the new count.

    >>> import clgrad
    >>> clgrad.autocast_increment_nesting(), clgrad.autocast_decrement_nesting()
    (1, 0)
    """
    _settings["autocast_nesting"] += 1
    return _settings["autocast_nesting"]


def autocast_decrement_nesting():
    """-1 (not below 0), returns the new count; torch clears the cast cache at 0, as here.

    >>> import clgrad
    >>> clgrad.autocast_decrement_nesting()
    0
    """
    _settings["autocast_nesting"] = max(0, _settings["autocast_nesting"] - 1)
    if _settings["autocast_nesting"] == 0:
        clear_autocast_cache()
    return _settings["autocast_nesting"]
