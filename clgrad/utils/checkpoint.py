"""clgrad.utils.checkpoint: activation checkpointing as torch.utils.checkpoint. A checkpointed
function keeps none of the tensors its ops save for backward; backward runs it again to get
them, so peak memory falls by the activations of the checkpointed part (tools/bench_checkpoint.py
measures it) for the cost of a second forward.

- use_reentrant=True (torch's default when the argument is left out, with torch's warning): a
  custom autograd Function that runs the function under no_grad and, in backward, reruns it with
  grad on inputs detached from the graph and backpropagates through that rerun.
- use_reentrant=False: the function runs with grad under saved-tensor hooks that keep only an
  index for each saved tensor; the first backward use reruns it (under hooks that collect what
  it saves) and hands each op the tensor it saved, so the graph is the ordinary one (keyword
  arguments, outputs that are not tensors and `torch.autograd.grad` work).

With preserve_rng_state (default) the rerun draws the same random numbers (dropout) as the first
run: clgrad's one Philox generator serves every device, so its state is the whole of it.
"""
import warnings

from ..autograd import graph as _graph
from ..autograd.engine import backward as _backward
from ..autograd.function import Function
from ..autograd.grad_mode import enable_grad, is_grad_enabled, no_grad
from ..ops.creation import get_rng_state, set_rng_state
from ..tensor import Tensor
from ..nn.modules.module import Module

__all__ = ["checkpoint", "checkpoint_sequential", "CheckpointError", "CheckpointFunction",
           "detach_variable", "noop_context_fn", "check_backward_validity", "get_device_states",
           "set_device_states", "set_checkpoint_early_stop", "set_checkpoint_debug_enabled",
           "DefaultDeviceType"]


class CheckpointError(RuntimeError):
    """The rerun in backward did not save what the first run saved (the function is not
    deterministic in its ops, or its inputs changed)."""


def noop_context_fn():
    import contextlib
    return contextlib.nullcontext(), contextlib.nullcontext()


def detach_variable(inputs):
    """Detached copies of the tensors of a tuple, with their requires_grad (torch's helper).

    >>> import clgrad
    >>> from clgrad.utils.checkpoint import detach_variable
    >>> x = clgrad.ones(2, requires_grad=True) * 2
    >>> y, = detach_variable((x,)); y.grad_fn is None and y.requires_grad
    True
    """
    if not isinstance(inputs, tuple):
        raise RuntimeError(f"Only tuple of tensors is supported. Got Unsupported input type: "
                           f"{type(inputs).__name__}")
    out = []
    for x in inputs:
        if isinstance(x, Tensor):
            d = x.detach()
            d.requires_grad = x.requires_grad
            out.append(d)
        else:
            out.append(x)
    return tuple(out)


def check_backward_validity(inputs):
    """Warn, as torch, when no tensor of `inputs` requires grad.

    >>> import clgrad, warnings
    >>> from clgrad.utils.checkpoint import check_backward_validity
    >>> check_backward_validity((clgrad.ones(1, requires_grad=True),))
    """
    if not any(isinstance(a, Tensor) and a.requires_grad for a in inputs):
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None",
                      stacklevel=2)


def get_device_states(*args):
    """(devices, states) of the generators of the devices of the tensors in args. clgrad has
    one generator for every device: the devices, and its state once for each.

    >>> import clgrad
    >>> from clgrad.utils.checkpoint import get_device_states
    >>> devices, states = get_device_states(clgrad.ones(1)); len(devices) == len(states) == 1
    True
    """
    devices = []
    for a in args:
        if isinstance(a, Tensor) and a.device not in devices:
            devices.append(a.device)
    return devices, [get_rng_state() for _ in devices]


def set_device_states(devices, states, *, device_type=None):
    """Put back what get_device_states gave (the one generator's state).

    >>> import clgrad
    >>> from clgrad.utils.checkpoint import get_device_states, set_device_states
    >>> set_device_states(*get_device_states(clgrad.ones(1)))
    """
    for state in states:
        set_rng_state(state)


class DefaultDeviceType:
    """The device type whose generator checkpoint saves (torch's; clgrad's one generator serves
    every device).

    >>> from clgrad.utils.checkpoint import DefaultDeviceType
    >>> DefaultDeviceType.get_device_type()
    'cuda'
    """
    _default_device_type = "cuda"

    @staticmethod
    def set_device_type(device="cuda"):
        DefaultDeviceType._default_device_type = device

    @staticmethod
    def get_device_type():
        return DefaultDeviceType._default_device_type


class _flag_context:
    """A global flag that is set for the duration of a with block, or for good when called."""

    def __init__(self, name, enabled):
        self.name, self.enabled = name, enabled
        self.prev = _FLAGS[name]
        _FLAGS[name] = enabled

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _FLAGS[self.name] = self.prev
        return False


_FLAGS = {"early_stop": True, "debug": False}


def set_checkpoint_early_stop(enable):
    """Accepted as torch's (a context manager or a call): clgrad's non-reentrant rerun always
    runs the whole function.

    >>> from clgrad.utils.checkpoint import set_checkpoint_early_stop
    >>> with set_checkpoint_early_stop(False):
    ...     pass
    """
    return _flag_context("early_stop", enable)


def set_checkpoint_debug_enabled(enabled):
    """Accepted as torch's (a context manager or a call); clgrad records no debug trace.

    >>> from clgrad.utils.checkpoint import set_checkpoint_debug_enabled
    >>> with set_checkpoint_debug_enabled(True):
    ...     pass
    """
    return _flag_context("debug", enabled)


class _rng_as(object):
    """Run a block with the generator at `state` and put the outer state back afterwards."""

    def __init__(self, state):
        self.state = state

    def __enter__(self):
        if self.state is not None:
            self.outer = get_rng_state()
            set_rng_state(self.state)

    def __exit__(self, *exc):
        if self.state is not None:
            set_rng_state(self.outer)
        return False


class CheckpointFunction(Function):
    """The reentrant checkpoint: forward under no_grad, backward reruns the function."""

    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, *args):
        ctx.run_function = run_function
        ctx.rng_state = get_rng_state() if preserve_rng_state else None
        ctx.inputs = [None if isinstance(a, Tensor) else a for a in args]
        ctx.tensor_indices = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        ctx.save_for_backward(*[a for a in args if isinstance(a, Tensor)])
        with no_grad():
            return run_function(*args)

    @staticmethod
    def backward(ctx, *grads):
        inputs = list(ctx.inputs)
        for i, t in zip(ctx.tensor_indices, ctx.saved_tensors):
            inputs[i] = t
        detached = detach_variable(tuple(inputs))
        with _rng_as(ctx.rng_state), enable_grad():
            outputs = ctx.run_function(*detached)
        if isinstance(outputs, Tensor):
            outputs = (outputs,)
        pairs = [(o, g) for o, g in zip(outputs, grads)
                 if isinstance(o, Tensor) and o.requires_grad and g is not None]
        if not pairs:
            raise RuntimeError("none of output has requires_grad=True, this checkpoint() is not "
                               "necessary")
        _backward([o for o, _ in pairs], [g for _, g in pairs])
        return (None, None) + tuple(d.grad if isinstance(d, Tensor) else None for d in detached)


class _Frame:
    """One non-reentrant checkpoint: what the rerun saved, in the order the first run saved."""

    def __init__(self, fn, args, kwargs, rng_state):
        self.fn, self.args, self.kwargs, self.rng_state = fn, args, kwargs, rng_state
        self.count = 0
        self.recomputed = None

    def pack(self, t):
        i = self.count
        self.count += 1
        return i

    def unpack(self, i):
        if self.recomputed is None:
            saved = []

            def keep(t):
                saved.append(t.detach())
                return len(saved) - 1
            with _rng_as(self.rng_state), enable_grad(), \
                    _graph.saved_tensors_hooks(keep, lambda j: saved[j]):
                self.fn(*self.args, **self.kwargs)
            if len(saved) != self.count:
                raise CheckpointError(
                    f"torch.utils.checkpoint: A different number of tensors was saved during "
                    f"the original forward and recomputation.\nNumber of tensors saved during "
                    f"forward: {self.count}\nNumber of tensors saved during recomputation: "
                    f"{len(saved)}")
            self.recomputed = saved
            self.fn = self.args = self.kwargs = None     # the rerun is done: drop the inputs
        return self.recomputed[i]


def _non_reentrant(function, preserve_rng_state, args, kwargs):
    frame = _Frame(function, args, kwargs, get_rng_state() if preserve_rng_state else None)
    with _graph.saved_tensors_hooks(frame.pack, frame.unpack):
        return function(*args, **kwargs)


def checkpoint(function, *args, use_reentrant=None, context_fn=noop_context_fn,
               determinism_check="default", debug=False, preserve_rng_state=True, **kwargs):
    """`function(*args, **kwargs)` without keeping its saved tensors: backward runs it again.
    use_reentrant as torch's (left out: torch's warning, and True). context_fn,
    determinism_check and debug are accepted for torch compatibility.

    >>> import clgrad
    >>> from clgrad.utils.checkpoint import checkpoint
    >>> x = clgrad.tensor([1.0, 2.0], requires_grad=True)
    >>> y = checkpoint(lambda a: (a.exp() * a).sum(), x, use_reentrant=False)
    >>> y.backward(); [round(v, 4) for v in x.grad.tolist()]
    [5.4366, 22.1672]
    """
    if use_reentrant is None:
        warnings.warn("torch.utils.checkpoint: the use_reentrant parameter should be passed "
                      "explicitly. use_reentrant=False is recommended, but if you need to "
                      "preserve the current default behavior, you can pass use_reentrant=True. "
                      "Refer to docs for more details on the differences between the two "
                      "variants.", stacklevel=2)
        use_reentrant = True
    if use_reentrant:
        if context_fn is not noop_context_fn or debug:
            raise ValueError("Passing `context_fn` or `debug` is only supported when "
                             "use_reentrant=False.")
        if kwargs:
            raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
        if is_grad_enabled() and not any(isinstance(a, Tensor) and a.requires_grad
                                         for a in args):
            warnings.warn("None of the inputs have requires_grad=True. Gradients will be None",
                          stacklevel=2)
        return CheckpointFunction.apply(function, preserve_rng_state, *args)
    if not is_grad_enabled():
        return function(*args, **kwargs)
    return _non_reentrant(function, preserve_rng_state, args, kwargs)


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    """Run `functions` (a list of modules/functions or an nn.Sequential) in `segments` parts,
    checkpointing all but the last, as torch's (preserve_rng_state may be passed).

    >>> import clgrad
    >>> from clgrad.utils.checkpoint import checkpoint_sequential
    >>> net = clgrad.nn.Sequential(*[clgrad.nn.Linear(3, 3) for _ in range(4)])
    >>> x = clgrad.ones(2, 3, requires_grad=True)
    >>> out = checkpoint_sequential(net, 2, x, use_reentrant=False)
    >>> out.sum().backward(); x.grad.shape
    clgrad.Size([2, 3])
    """
    if use_reentrant is None:
        warnings.warn("torch.utils.checkpoint.checkpoint_sequential: the use_reentrant parameter "
                      "should be passed explicitly. use_reentrant=False is recommended, but if "
                      "you need to preserve the current default behavior, you can pass "
                      "use_reentrant=True. Refer to docs for more details on the differences "
                      "between the two variants.", stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))

    def run_function(start, end, functions):
        def forward(input):
            for j in range(start, end + 1):
                input = functions[j](input)
            return input
        return forward

    if isinstance(functions, Module) and hasattr(functions, "children"):
        functions = list(functions.children())
    segment_size = len(functions) // segments
    end = -1
    for start in range(0, segment_size * (segments - 1), segment_size):
        end = start + segment_size - 1
        input = checkpoint(run_function(start, end, functions), input,
                           use_reentrant=use_reentrant, preserve_rng_state=preserve)
    return run_function(end + 1, len(functions) - 1, functions)(input)
