"""Compiled steps: `clgrad.compile` (torch.compile's interface) and `clgrad.compiler`
(torch.compiler's names). A compiled function or module runs eagerly once, records its device
work on the second call and replays it on later calls without Python dispatch, graph building or
allocation (clgrad/runtime/recording.py; docs/compile.md says what is captured and what is not).

>>> import clgrad
>>> w = clgrad.ones(3)
>>> @clgrad.compile
... def f(x):
...     return (x * w).tanh() + 1
>>> [round(v, 4) for v in f(clgrad.full((3,), 0.5)).tolist()]
[1.4621, 1.4621, 1.4621]
>>> out = [f(clgrad.full((3,), float(i))) for i in range(3)]     # recorded, replayed twice
>>> [round(o[0].item(), 4) for o in out], f.stats["replays"]
([1.0, 1.7616, 1.964], 2)
"""
import functools

from ..nn.modules.module import Module
from ..runtime.recording import active_recording, host_call
from . import config
from ._compiled import _ALL, CompileError, CompiledFunction, _disabled
from ._module import OptimizedModule

__all__ = ["compile", "reset", "disable", "is_compiling", "is_dynamo_compiling",
           "cudagraph_mark_step_begin", "CompileError", "config"]

_MODES = (None, "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
_EAGER_BACKENDS = ("eager", "aot_eager")


def compile(model=None, *, fullgraph=False, dynamic=None, backend="inductor", mode=None,
            options=None, disable=False):
    """torch.compile: `compile(fn)`, `compile(module)` or `@compile(...)`. The result records
    the device work of a call and replays it on later calls with the same argument layout (see
    the module text). mode: any of torch's ("default", "reduce-overhead", "max-autotune"): all
    record and replay. backend "eager" / "aot_eager" runs the function as it is; any other name
    records. fullgraph=True raises CompileError where a recording cannot replay (a host read)
    instead of running eagerly. dynamic and options are accepted: a new shape is a new
    recording.

    >>> import clgrad
    >>> net = clgrad.compile(clgrad.nn.Linear(2, 1))
    >>> type(net).__name__, sorted(net.state_dict())[:1]
    ('OptimizedModule', ['_orig_mod.bias'])
    """
    if mode not in _MODES:
        raise RuntimeError(f"Unrecognized mode={mode}, should be one of: "
                           f"{', '.join(m for m in _MODES if m)}")
    if mode is not None and options is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be "
                           "specified at the same time.")
    if model is None:
        return functools.partial(compile, fullgraph=fullgraph, dynamic=dynamic, backend=backend,
                                 mode=mode, options=options, disable=disable)
    if not callable(model):
        raise RuntimeError(f"compile: {type(model).__name__} is not callable")
    if disable or backend in _EAGER_BACKENDS:
        return model
    if isinstance(model, Module):
        return OptimizedModule(model, CompiledFunction(model, fullgraph=fullgraph, mode=mode))
    if isinstance(model, CompiledFunction):
        return model
    return CompiledFunction(model, fullgraph=fullgraph, mode=mode)


def reset():
    """Forget every recording of every compiled function (torch.compiler.reset).

    >>> import clgrad
    >>> clgrad.compiler.reset()
    """
    for f in list(_ALL):
        f.reset()


def disable(fn=None, recursive=True):
    """Run fn (or, as a decorator, the decorated function) uncompiled, also when called from a
    compiled function (torch.compiler.disable): its work is not recorded, and it runs as itself
    at its place in every replay.

    >>> import clgrad
    >>> @clgrad.compiler.disable
    ... def log(x):
    ...     return x
    >>> log(3)
    3
    """
    if fn is None:
        return functools.partial(disable, recursive=recursive)

    @host_call
    def run(*args, **kwargs):
        _disabled[0] += 1
        try:
            return fn(*args, **kwargs)
        finally:
            _disabled[0] -= 1
    return functools.wraps(fn)(run)


def is_compiling():
    """True while a compiled function records (torch.compiler.is_compiling).

    >>> import clgrad
    >>> clgrad.compiler.is_compiling()
    False
    """
    return active_recording() is not None


is_dynamo_compiling = is_compiling


def cudagraph_mark_step_begin():
    """torch's marker between steps of cudagraph-compiled code: each replay's outputs are
    already copies here, so there is nothing to mark."""
