"""autocast: per-op casting at dispatch, with torch's op lists per device type.

The op lists name functions of clgrad's namespace, Tensor's methods and nn.functional; `install`
wraps each listed function with a check of the autocast state the first time a region is
entered, so a program that never uses autocast pays nothing on those ops.
"""
import functools
import threading
import warnings

from .. import dtypes
from ..tensor import Tensor
from ..runtime.device import gpus
import clgrad.nn.functional as F

# torch's autocast lists (torch/csrc/autograd/autocast_mode / aten/src/ATen/autocast_mode.cpp),
# restricted to the ops clgrad has.
LOWER = {
    "cuda": {"matmul", "mm", "mv", "bmm", "baddbmm", "addmm", "addmv", "addr", "addbmm", "linear",
             "chain_matmul", "conv1d", "conv2d", "conv_transpose2d", "prelu",
             "scaled_dot_product_attention", "__matmul__", "__rmatmul__"},
    "cpu": {"matmul", "mm", "bmm", "baddbmm", "addmm", "addbmm", "linear", "conv1d", "conv2d",
            "conv_transpose2d", "prelu", "scaled_dot_product_attention", "__matmul__",
            "__rmatmul__"},
}
FLOAT32 = {
    "cuda": {"acos", "asin", "cosh", "erfinv", "exp", "expm1", "log", "log10", "log2", "log1p",
             "reciprocal", "rsqrt", "sinh", "tan", "pow", "softplus", "layer_norm", "group_norm",
             "norm", "nll_loss", "cross_entropy", "binary_cross_entropy_with_logits",
             "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "kl_div", "softmax",
             "log_softmax", "cumsum", "cumprod", "sum", "prod", "dist", "cdist", "renorm",
             "logsumexp", "cosine_similarity", "poisson_nll_loss", "margin_ranking_loss",
             "soft_margin_loss", "triplet_margin_loss", "multi_margin_loss"},
    "cpu": {"prod", "quantile", "nanquantile", "cdist", "trace", "mse_loss",
            "cosine_embedding_loss", "nll_loss", "hinge_embedding_loss", "poisson_nll_loss",
            "smooth_l1_loss", "cross_entropy", "l1_loss", "huber_loss", "margin_ranking_loss",
            "soft_margin_loss", "triplet_margin_loss", "multi_margin_loss", "kl_div",
            "binary_cross_entropy_with_logits", "binary_cross_entropy"},
}
PROMOTE = {
    "cuda": {"addcdiv", "addcmul", "atan2", "cross", "dot", "index_put", "scatter_add",
             "tensordot", "cat", "stack"},
    "cpu": {"stack", "cat", "index_copy"},
}
DEFAULT_DTYPE = {"cuda": dtypes.float16, "cpu": dtypes.bfloat16}


class _State(threading.local):
    def __init__(self):
        self.stack = []           # (device_type, dtype, enabled, cache_enabled), innermost last
        self.cache = {}           # id(tensor) -> (tensor, its cast), for the outermost region


_state = _State()
_cache_default = True     # clgrad.set_autocast_cache_enabled outside any region sets it


def _current(device_type=None):
    for entry in reversed(_state.stack):
        if device_type is None or entry[0] == device_type:
            return entry
    return None


def is_autocast_enabled(device_type=None):
    """Whether autocast is on (for device_type, default "cuda" as torch's)."""
    e = _current(device_type or "cuda")
    return bool(e and e[2])


def get_autocast_dtype(device_type):
    e = _current(device_type)
    return e[1] if e else DEFAULT_DTYPE[device_type]


def is_autocast_available(device_type):
    return device_type in ("cuda", "cpu")


class autocast:
    """Context manager and decorator: ops on the autocast lists run in `dtype` (float16 or
    bfloat16; default float16 for "cuda", bfloat16 for "cpu"), those on the float32 list in
    float32. Nests; enabled=False turns it off inside an enclosing region."""

    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        if device_type not in ("cuda", "cpu"):
            raise RuntimeError(f"User specified an unsupported autocast device_type "
                               f"'{device_type}'")
        dtype = DEFAULT_DTYPE[device_type] if dtype is None else dtype
        if dtype not in (dtypes.float16, dtypes.bfloat16):
            warnings.warn(f"In {device_type} autocast, but the target dtype is not supported. "
                          f"Disabling autocast.")
            enabled = False
        if enabled and device_type == "cuda":
            if not gpus():
                warnings.warn("User provided device_type of 'cuda', but CUDA is not available. "
                              "Disabling")
                enabled = False
        self.device_type, self.fast_dtype = device_type, dtype
        self._enabled = enabled
        self._cache_enabled = _cache_default if cache_enabled is None else cache_enabled

    def __enter__(self):
        if not _installed:
            install()
        _state.stack.append((self.device_type, self.fast_dtype, self._enabled,
                             self._cache_enabled))
        return self

    def __exit__(self, *exc):
        _state.stack.pop()
        if not any(e[2] for e in _state.stack):
            _state.cache.clear()
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def run(*args, **kwargs):
            with autocast(self.device_type, self.fast_dtype, self._enabled,
                          self._cache_enabled):
                return fn(*args, **kwargs)
        return run


def _eligible(t):
    """torch's is_eligible: a float tensor that is not float64 (float64 is never cast, on any
    list: a float64 argument of a float32-list op stays float64)."""
    return isinstance(t, Tensor) and t.is_floating_point() and t.dtype is not dtypes.float64


def _cast(t, dt, cache):
    if not _eligible(t) or t.dtype is dt:
        return t
    # a leaf that requires grad (a parameter) is cast once per region
    if cache and t.requires_grad and t.grad_fn is None:
        hit = _state.cache.get(id(t))
        if hit is not None and hit[0] is t and hit[1].dtype is dt:
            return hit[1]
        c = t.to(dt)
        _state.cache[id(t)] = (t, c)
        return c
    return t.to(dt)


def _map(x, f):
    if isinstance(x, Tensor):
        return f(x)
    if isinstance(x, (list, tuple)):
        return type(x)(_map(v, f) for v in x)
    return x


def _tensors(x):
    if isinstance(x, Tensor):
        yield x
    elif isinstance(x, (list, tuple)):
        for v in x:
            yield from _tensors(v)


def _wrap(fn, name):
    @functools.wraps(fn)
    def with_autocast(*args, **kwargs):
        if not _state.stack:
            return fn(*args, **kwargs)
        ts = [t for a in list(args) + list(kwargs.values()) for t in _tensors(a)]
        if not ts:
            return fn(*args, **kwargs)
        e = _current(ts[0].device.type)
        if e is None or not e[2]:
            return fn(*args, **kwargs)
        device_type, low, _on, cache = e
        if name in LOWER[device_type]:
            dt = low
        elif name in FLOAT32[device_type]:
            dt = dtypes.float32
        elif name in PROMOTE[device_type]:
            # torch's prioritize, from the region's dtype over the eligible arguments: float32
            # once any is float32, else all must be of the region's dtype
            dt = low
            for t in ts:
                if not _eligible(t) or dt is dtypes.float32:
                    continue
                if t.dtype is dtypes.float32:
                    dt = dtypes.float32
                elif t.dtype is not dt:
                    raise RuntimeError(f"Unexpected floating ScalarType in "
                                       f"at::autocast::prioritize ({name} under autocast to "
                                       f"{dtypes.TORCH_NAMES[low]}: an argument of dtype "
                                       f"{dtypes.TORCH_NAMES[t.dtype]})")
        else:
            return fn(*args, **kwargs)
        f = functools.partial(_cast, dt=dt, cache=cache)
        args = tuple(_map(a, f) for a in args)
        kwargs = {k: _map(v, f) for k, v in kwargs.items()}
        # the op itself runs with autocast off: what it calls inside keeps the chosen dtype
        _state.stack.append((device_type, low, False, cache))
        try:
            return fn(*args, **kwargs)
        finally:
            _state.stack.pop()
    with_autocast._autocast_wrapped = True
    return with_autocast


_installed = False


def install():
    """Wrap every listed op of the clgrad namespace, Tensor and nn.functional (once)."""
    global _installed
    _installed = True
    from ..ops import lstm_stack        # its wavefront keeps out of autocast regions
    lstm_stack.autocast_on = lambda: is_autocast_enabled("cpu") or is_autocast_enabled("cuda")
    # function-level: the clgrad namespace, which imports this module
    import clgrad
    names = set()
    for table in (LOWER, FLOAT32, PROMOTE):
        for s in table.values():
            names |= s
    for owner in (clgrad, F, Tensor):
        for name in names:
            fn = owner.__dict__.get(name) if isinstance(owner, type) else getattr(owner, name,
                                                                                    None)
            if fn is None or not callable(fn) or getattr(fn, "_autocast_wrapped", False):
                continue
            setattr(owner, name, _wrap(fn, name))


def custom_fwd(fwd=None, *, device_type="cuda", cast_inputs=None):
    """For a custom Function's forward: with cast_inputs, inside an autocast region the forward
    runs with autocast off and its floating-point tensors cast to cast_inputs; the autocast
    state is recorded for custom_bwd."""
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def run(*args, **kwargs):
        ctx = args[0]
        e = _current(device_type)
        ctx._autocast = e
        if cast_inputs is not None and e is not None and e[2]:
            f = functools.partial(_cast, dt=cast_inputs, cache=False)
            args = (ctx,) + tuple(_map(a, f) for a in args[1:])
            kwargs = {k: _map(v, f) for k, v in kwargs.items()}
            with autocast(device_type, enabled=False):
                return fwd(*args, **kwargs)
        return fwd(*args, **kwargs)
    return run


def custom_bwd(bwd=None, *, device_type="cuda"):
    """For a custom Function's backward: runs with the autocast state its forward had."""
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def run(ctx, *args):
        e = getattr(ctx, "_autocast", None)
        if e is None:
            return bwd(ctx, *args)
        _state.stack.append(e)
        try:
            return bwd(ctx, *args)
        finally:
            _state.stack.pop()
    return run
