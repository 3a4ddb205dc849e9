"""torch's process-wide settings and small utilities at top level: threads, print options,
typename, the legacy default tensor type, the determinism and warn-always flags, get_device,
flush-denormal and the build queries. (The autocast state functions are clgrad/amp/state.py.)

What each means on OpenCL is said in its docstring: where clgrad has nothing to switch (threads,
determinism), the setting is validated and kept, so that code that sets and reads it back runs,
and the docstring says what clgrad does instead.
"""
import os
import warnings

from . import _format, _legacy, dtypes
from .kernels import index as index_kernels
from .tensor import Tensor

__all__ = ["get_num_threads", "set_num_threads", "get_num_interop_threads",
           "set_num_interop_threads", "init_num_threads", "set_printoptions", "typename",
           "set_default_tensor_type", "use_deterministic_algorithms",
           "are_deterministic_algorithms_enabled", "is_deterministic_algorithms_warn_only_enabled",
           "set_deterministic_debug_mode", "get_deterministic_debug_mode", "set_warn_always",
           "is_warn_always_enabled", "get_device", "compiled_with_cxx11_abi",
           "set_flush_denormal", "is_vulkan_available"]

_settings = {"threads": os.cpu_count() or 1, "interop_threads": os.cpu_count() or 1,
             "deterministic": 0, "warn_always": False}


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
        # function-level: the clgrad namespace, which imports this module
        from . import set_default_device
        set_default_device("cuda")


# ---- determinism and warnings --------------------------------------------------------------------
_DEBUG_MODES = {"default": 0, "warn": 1, "error": 2}


def use_deterministic_algorithms(mode, *, warn_only=False):
    """torch's determinism setting (read back by are_deterministic_algorithms_enabled and
    get_deterministic_debug_mode). Reductions, GEMM and convolutions always run in one fixed
    order. When on, index_add of contiguous rows (an embedding's backward) sums in index order
    on every device, as it does on CPU code paths, where a GPU's would add atomically; other float
    accumulation (scatter_add, index_put(accumulate=True), bincount, the backward of gather and
    of other indexing) still uses atomic adds, whose order (and so the last bits) can vary
    between runs on a GPU.

    >>> import clgrad
    >>> clgrad.use_deterministic_algorithms(True); clgrad.are_deterministic_algorithms_enabled()
    True
    >>> clgrad.use_deterministic_algorithms(False)
    """
    if not isinstance(mode, bool):
        raise TypeError(f"use_deterministic_algorithms(): argument 'mode' must be bool, not "
                        f"{type(mode).__name__}")
    _set_deterministic(0 if not mode else 1 if warn_only else 2)


def _set_deterministic(level):
    _settings["deterministic"] = level
    index_kernels.deterministic = level != 0


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
    _set_deterministic(debug_mode)


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
