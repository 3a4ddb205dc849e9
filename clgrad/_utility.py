"""torch's process-wide settings and small utilities at top level: threads, print options,
typename, the legacy default tensor type, the determinism and warn-always flags, get_device and
the autocast state functions.

What each means on OpenCL is said in its docstring: where clgrad has nothing to switch (threads,
determinism), the setting is validated and kept, so that code that sets and reads it back runs,
and the docstring says what clgrad does instead.
"""
import os
import warnings

from . import _format, _legacy, dtypes
from .tensor import Tensor

__all__ = ["get_num_threads", "set_num_threads", "get_num_interop_threads",
           "set_num_interop_threads", "init_num_threads", "set_printoptions", "typename",
           "set_default_tensor_type", "use_deterministic_algorithms",
           "are_deterministic_algorithms_enabled", "is_deterministic_algorithms_warn_only_enabled",
           "set_deterministic_debug_mode", "get_deterministic_debug_mode", "set_warn_always",
           "is_warn_always_enabled", "get_device", "compiled_with_cxx11_abi",
           "is_autocast_enabled", "set_autocast_enabled", "get_autocast_dtype",
           "set_autocast_dtype", "is_autocast_cpu_enabled", "set_autocast_cpu_enabled",
           "get_autocast_cpu_dtype", "set_autocast_cpu_dtype", "get_autocast_gpu_dtype",
           "set_autocast_gpu_dtype", "is_autocast_cache_enabled", "set_autocast_cache_enabled",
           "clear_autocast_cache", "autocast_increment_nesting", "autocast_decrement_nesting",
           "set_flush_denormal", "is_vulkan_available"]

_settings = {"threads": os.cpu_count() or 1, "interop_threads": os.cpu_count() or 1,
             "deterministic": 0, "warn_always": False, "autocast_nesting": 0}


# ---- threads -------------------------------------------------------------------------------------
def _positive_int(op, n):
    if isinstance(n, bool) or not isinstance(n, int):
        raise RuntimeError(f"{op} expects an int, but got {type(n).__name__}")
    if n <= 0:
        raise RuntimeError(f"{op} expects a positive integer")


def get_num_threads():
    """The intra-op thread count last set (default: the host's CPU count). clgrad's kernels run
    on OpenCL devices whose drivers pick their own parallelism when they start (PoCL:
    POCL_MAX_PTHREAD_COUNT), so the value is kept for code that reads it back, not applied.

    >>> import clgrad
    >>> clgrad.get_num_threads() >= 1
    True
    """
    return _settings["threads"]


def set_num_threads(int):  # noqa: A002 -- torch's argument name
    """Set the value get_num_threads returns (a positive int; see there for what it means here).

    >>> import clgrad
    >>> n = clgrad.get_num_threads(); clgrad.set_num_threads(2); clgrad.get_num_threads()
    2
    >>> clgrad.set_num_threads(n)
    """
    _positive_int("set_num_threads", int)
    _settings["threads"] = int


def get_num_interop_threads():
    """The inter-op thread count last set (default: the host's CPU count); kept, not applied:
    clgrad enqueues ops from the calling thread in order.

    >>> import clgrad
    >>> clgrad.get_num_interop_threads() >= 1
    True
    """
    return _settings["interop_threads"]


def set_num_interop_threads(int):  # noqa: A002
    """Set the value get_num_interop_threads returns (a positive int).

    >>> import clgrad
    >>> n = clgrad.get_num_interop_threads(); clgrad.set_num_interop_threads(n)
    """
    _positive_int("set_num_interop_threads", int)
    _settings["interop_threads"] = int


def init_num_threads():
    """torch initialises its thread pools here; clgrad has none (a no-op).

    >>> import clgrad
    >>> clgrad.init_num_threads()
    """


# ---- printing ------------------------------------------------------------------------------------
_PROFILES = {"default": (4, 1000, 3, 80), "short": (2, 1000, 2, 80),
             "full": (4, float("inf"), 3, 80)}


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None,
                     profile=None, sci_mode=None):
    """How tensors print: digits after the point, the element count past which they are
    summarised, the items kept at each edge when summarised, the line width, a profile
    ("default", "short", "full") for the first four, and sci_mode (True / False to force or
    refuse scientific notation, None to choose as torch does).

    >>> import clgrad
    >>> clgrad.set_printoptions(precision=2); print(clgrad.tensor([1.2345]))
    tensor([1.23])
    >>> clgrad.set_printoptions(profile="default")
    """
    if profile is not None:
        if profile not in _PROFILES:
            raise ValueError(f"set_printoptions: unknown profile {profile!r}: expected "
                             f"'default', 'short' or 'full'")
        (_format.PRECISION, _format.THRESHOLD, _format.EDGEITEMS,
         _format.LINEWIDTH) = _PROFILES[profile]
    if precision is not None:
        _format.PRECISION = precision
    if threshold is not None:
        _format.THRESHOLD = threshold
    if edgeitems is not None:
        _format.EDGEITEMS = edgeitems
    if linewidth is not None:
        _format.LINEWIDTH = linewidth
    _format.SCI_MODE = sci_mode                   # torch resets it with every call, as here


def typename(obj, /):
    """The type of obj as a string: a tensor's legacy type name, else module.qualname.

    >>> import clgrad
    >>> clgrad.typename(clgrad.zeros(1, device="cpu")), clgrad.typename(1)
    ('torch.FloatTensor', 'int')
    """
    if isinstance(obj, Tensor):
        return obj.type()
    module = getattr(obj, "__module__", "") or ""
    if hasattr(obj, "__qualname__"):
        qualname = obj.__qualname__
    elif hasattr(obj, "__name__"):
        qualname = obj.__name__
    else:
        module = obj.__class__.__module__ or ""
        qualname = obj.__class__.__qualname__
    return qualname if module in ("", "builtins") else f"{module}.{qualname}"


def set_default_tensor_type(t, /):
    """Deprecated in torch: make a legacy type's dtype the default (a floating one), and for the
    clgrad.cuda types also make "cuda" the default device. clgrad's CPU legacy types make tensors
    on the default device (see clgrad._legacy), so they leave the device as it is.

    >>> import clgrad, warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     clgrad.set_default_tensor_type(clgrad.DoubleTensor)
    >>> clgrad.get_default_dtype()
    clgrad.float64
    >>> clgrad.set_default_dtype(clgrad.float32)
    """
    warnings.warn("torch.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use "
                  "torch.set_default_dtype() and torch.set_default_device() as alternatives.",
                  UserWarning, stacklevel=2)
    cuda = False
    if isinstance(t, str):
        parts = t.split(".")
        if len(parts) < 2 or parts[0] not in ("torch", "clgrad") or \
                parts[-1] not in _legacy.NAMES or parts[1:-1] not in ([], ["cuda"]):
            raise TypeError(f"invalid type: '{t}'")
        dt, cuda = _legacy.NAMES[parts[-1]], parts[1:-1] == ["cuda"]
    elif isinstance(t, _legacy._LegacyType):
        dt, cuda = t.dtype, t.is_cuda
    else:
        raise TypeError(f"invalid type object: only floating-point types are supported as the "
                        f"default type, got {t!r}")
    if dt.kind != "f":
        raise TypeError("only floating-point types are supported as the default type")
    dtypes.set_default_dtype(dt)
    if cuda:
        from . import set_default_device
        set_default_device("cuda")


# ---- determinism and warnings --------------------------------------------------------------------
_DEBUG_MODES = {"default": 0, "warn": 1, "error": 2}


def use_deterministic_algorithms(mode, *, warn_only=False):
    """Record torch's determinism setting (read back by are_deterministic_algorithms_enabled and
    get_deterministic_debug_mode). clgrad does not switch implementations: reductions, GEMM and
    convolutions always run in one fixed order, but float accumulation through scatter_add,
    index_add, index_put(accumulate=True), bincount and the backward of gather and indexing uses
    atomic adds, whose order (and so the last bits) can vary between runs.

    >>> import clgrad
    >>> clgrad.use_deterministic_algorithms(True); clgrad.are_deterministic_algorithms_enabled()
    True
    >>> clgrad.use_deterministic_algorithms(False)
    """
    if not isinstance(mode, bool):
        raise TypeError(f"use_deterministic_algorithms(): argument 'mode' must be bool, not "
                        f"{type(mode).__name__}")
    _settings["deterministic"] = 0 if not mode else 1 if warn_only else 2


def are_deterministic_algorithms_enabled():
    """Whether use_deterministic_algorithms(True) is in effect (see there).

    >>> import clgrad
    >>> clgrad.are_deterministic_algorithms_enabled()
    False
    """
    return _settings["deterministic"] != 0


def is_deterministic_algorithms_warn_only_enabled():
    """Whether it was set with warn_only=True.

    >>> import clgrad
    >>> clgrad.is_deterministic_algorithms_warn_only_enabled()
    False
    """
    return _settings["deterministic"] == 1


def set_deterministic_debug_mode(debug_mode):
    """The same setting by level: "default"/0 off, "warn"/1 warn only, "error"/2 on.

    >>> import clgrad
    >>> clgrad.set_deterministic_debug_mode("warn"); clgrad.get_deterministic_debug_mode()
    1
    >>> clgrad.set_deterministic_debug_mode(0)
    """
    if isinstance(debug_mode, str):
        if debug_mode not in _DEBUG_MODES:
            raise RuntimeError(f"invalid value of debug_mode, expected one of `default`, `warn`, "
                               f"`error`, but got {debug_mode}")
        debug_mode = _DEBUG_MODES[debug_mode]
    elif isinstance(debug_mode, int) and not isinstance(debug_mode, bool):
        if debug_mode not in (0, 1, 2):
            raise RuntimeError(f"invalid value of debug_mode, expected 0, 1, or 2, but got "
                               f"{debug_mode}")
    else:
        raise TypeError(f"debug_mode must be str or int, but got {type(debug_mode).__name__}")
    _settings["deterministic"] = debug_mode


def get_deterministic_debug_mode():
    """0, 1 or 2: see set_deterministic_debug_mode.

    >>> import clgrad
    >>> clgrad.get_deterministic_debug_mode()
    0
    """
    return _settings["deterministic"]


def set_warn_always(b, /):
    """Record torch's warn-always flag (torch then repeats warnings it gives once); clgrad keeps
    it for is_warn_always_enabled, its warnings follow Python's warnings filters.

    >>> import clgrad
    >>> clgrad.set_warn_always(True); clgrad.is_warn_always_enabled()
    True
    >>> clgrad.set_warn_always(False)
    """
    _settings["warn_always"] = bool(b)


def is_warn_always_enabled():
    """See set_warn_always.

    >>> import clgrad
    >>> clgrad.is_warn_always_enabled()
    False
    """
    return _settings["warn_always"]


def get_device(input):
    """-1 for a tensor on "cpu", else the index of its "cuda:K" (or "cl:N") device, as
    input.get_device().

    >>> import clgrad
    >>> clgrad.get_device(clgrad.zeros(1, device="cpu"))
    -1
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"get_device(): argument 'input' must be Tensor, not "
                        f"{type(input).__name__}")
    return input.get_device()


def compiled_with_cxx11_abi():
    """False: clgrad is pure Python (its kernels are OpenCL C built by the driver); nothing of it
    is compiled against libstdc++'s C++11 ABI.

    >>> import clgrad
    >>> clgrad.compiled_with_cxx11_abi()
    False
    """
    return False


def set_flush_denormal(mode):
    """False: clgrad cannot switch how devices treat subnormal floats (an OpenCL device flushes
    them or not by its own rules; torch returns False where it cannot either).

    >>> import clgrad
    >>> clgrad.set_flush_denormal(True)
    False
    """
    return False


def is_vulkan_available():
    """False: clgrad runs on OpenCL devices only.

    >>> import clgrad
    >>> clgrad.is_vulkan_available()
    False
    """
    return False


# ---- autocast state (the regions themselves: clgrad.autocast / clgrad.amp) ----------------------
def _amp():
    from .amp import autocast_mode
    return autocast_mode


def _set_state(device_type, enabled=None, dtype=None):
    """Change the innermost autocast state of device_type in place, as torch's setters do (an
    enclosing autocast region restores its own on exit); outside any region, the base state."""
    amp = _amp()
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
    return _amp().is_autocast_enabled(device_type)


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
    return _amp().get_autocast_dtype(device_type)


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
    stack = _amp()._state.stack
    return stack[-1][3] if stack else _amp()._cache_default


def set_autocast_cache_enabled(enabled):
    """Turn the cast cache of the innermost autocast region on or off (outside any region: the
    default of the regions that follow).

    >>> import clgrad
    >>> clgrad.set_autocast_cache_enabled(True)
    """
    stack = _amp()._state.stack
    if stack:
        dev, dt, on, _ = stack[-1]
        stack[-1] = (dev, dt, on, bool(enabled))
    else:
        _amp()._cache_default = bool(enabled)


def clear_autocast_cache():
    """Drop the weights' casts autocast has cached.

    >>> import clgrad
    >>> clgrad.clear_autocast_cache()
    """
    _amp()._state.cache.clear()


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
