"""Module's hooks: registering forward (pre-)hooks and full backward (pre-)hooks, running a call
with them, and the relays through which the backward hooks see grad_output and grad_input.
Module (module.py) takes the registration functions and the hooked call as its methods."""
from ...autograd.function import Function, RemovableHandle
from ...autograd.grad_mode import is_grad_enabled
from ...tensor import Tensor


def _add_hook(table, hook, prepend):
    handle = RemovableHandle(table)
    table[handle.id] = hook
    if prepend:
        table.move_to_end(handle.id, last=False)
    return handle


# ---- registration -------------------------------------------------------------------------------
def register_forward_pre_hook(self, hook, *, prepend=False, with_kwargs=False):
    """hook(module, args) runs before forward and may return new args (a tuple, or a single
    value); with_kwargs: hook(module, args, kwargs) returns None or (args, kwargs).

    >>> import clgrad
    >>> m = clgrad.nn.Identity()
    >>> h = m.register_forward_pre_hook(lambda mod, args: (args[0] * 2,))
    >>> m(clgrad.tensor([1.0])).tolist()
    [2.0]
    >>> h.remove(); m(clgrad.tensor([1.0])).tolist()
    [1.0]
    """
    handle = _add_hook(self._forward_pre_hooks, hook, prepend)
    if with_kwargs:
        self._forward_pre_hooks_with_kwargs.add(handle.id)
    return handle


def register_forward_hook(self, hook, *, prepend=False, with_kwargs=False,
                          always_call=False):
    """hook(module, args, output) runs after forward and may return a new output;
    with_kwargs: hook(module, args, kwargs, output). always_call: run it even when forward
    raises.

    >>> import clgrad
    >>> seen = []
    >>> m = clgrad.nn.ReLU()
    >>> _ = m.register_forward_hook(lambda mod, args, out: seen.append(out.shape))
    >>> _ = m(clgrad.zeros(2, 3)); seen
    [clgrad.Size([2, 3])]
    """
    handle = _add_hook(self._forward_hooks, hook, prepend)
    if with_kwargs:
        self._forward_hooks_with_kwargs.add(handle.id)
    if always_call:
        self._forward_hooks_always_called.add(handle.id)
    return handle


def register_full_backward_pre_hook(self, hook, prepend=False):
    """hook(module, grad_output) runs when the gradients of the module's outputs are known,
    before those of its inputs are computed; it may return a new grad_output.

    >>> import clgrad
    >>> lin = clgrad.nn.Linear(2, 1)
    >>> _ = lin.register_full_backward_pre_hook(lambda m, go: (go[0] * 0,))
    >>> lin(clgrad.ones(1, 2)).sum().backward(); lin.weight.grad.tolist()
    [[0.0, 0.0]]
    """
    return _add_hook(self._backward_pre_hooks, hook, prepend)


def register_full_backward_hook(self, hook, prepend=False):
    """hook(module, grad_input, grad_output) runs once the gradients w.r.t. the module's
    inputs are computed (one entry per positional argument, None where there is none); it
    may return a new grad_input.

    >>> import clgrad
    >>> lin = clgrad.nn.Linear(2, 1)
    >>> got = []
    >>> def hook(module, grad_input, grad_output):
    ...     got.append((grad_input[0].shape, grad_output[0].shape))
    >>> _ = lin.register_full_backward_hook(hook)
    >>> lin(clgrad.ones(3, 2, requires_grad=True)).sum().backward()
    >>> got
    [(clgrad.Size([3, 2]), clgrad.Size([3, 1]))]
    """
    return _add_hook(self._backward_hooks, hook, prepend)


# ---- a call with hooks -------------------------------------------------------------------------
def _call_with_hooks(self, args, kwargs):
    for hook_id, hook in list(self._forward_pre_hooks.items()):
        if hook_id in self._forward_pre_hooks_with_kwargs:
            res = hook(self, args, kwargs)
            if res is not None:
                if not (isinstance(res, tuple) and len(res) == 2):
                    raise RuntimeError(f"forward pre-hook must return None or a tuple of "
                                       f"(new_args, new_kwargs), but got {res}.")
                args, kwargs = res
        else:
            res = hook(self, args)
            if res is not None:
                args = res if isinstance(res, tuple) else (res,)
    relay = None
    if self._backward_hooks or self._backward_pre_hooks:
        relay = _BackwardHooks(self)
        args = relay.wrap_inputs(args)
    try:
        result = self.forward(*args, **kwargs)
    except Exception:
        for hook_id, hook in list(self._forward_hooks.items()):
            if hook_id in self._forward_hooks_always_called:
                try:
                    if hook_id in self._forward_hooks_with_kwargs:
                        hook(self, args, kwargs, None)
                    else:
                        hook(self, args, None)
                except Exception:
                    pass
        raise
    for hook_id, hook in list(self._forward_hooks.items()):
        if hook_id in self._forward_hooks_with_kwargs:
            res = hook(self, args, kwargs, result)
        else:
            res = hook(self, args, result)
        if res is not None:
            result = res
    if relay is not None:
        result = relay.wrap_outputs(result)
    return result


# ---- full backward hooks ---------------------------------------------------------------------
class _GradientRelay(Function):
    """Identity on a group of tensors. Its backward hands their gradients to `relay`, which may
    replace them: the module's backward hooks see grad_output and grad_input through it."""

    @staticmethod
    def forward(ctx, relay, *tensors):
        ctx.relay = relay
        ctx.set_materialize_grads(False)          # outputs without a gradient get None
        return tensors

    @staticmethod
    def backward(ctx, *grads):
        return (None,) + tuple(ctx.relay(grads))


class _BackwardHooks:
    """One module call's backward hooks: a relay after the outputs catches grad_output (and runs
    the pre-hooks); a relay before the inputs catches grad_input and runs the full hooks."""

    def __init__(self, module):
        self.module = module
        self.n_args = 0
        self.in_pos = None
        self.n_outputs = 0
        self.out_pos = None
        self.grad_outputs = None

    @staticmethod
    def _pack(positions, grads, n):
        full = [None] * n
        for i, g in zip(positions, grads):
            full[i] = g
        return tuple(full)

    @staticmethod
    def _check(res, expected, what):
        res = tuple(res) if isinstance(res, (tuple, list)) else (res,)
        if len(res) != expected:
            raise RuntimeError(f"Backward {what} returned an invalid number of "
                               f"{'grad_output' if 'pre' in what else 'grad_input'}, got "
                               f"{len(res)}, but expected {expected}")
        return res

    def wrap_inputs(self, args):
        self.n_args = len(args)
        pos = [i for i, a in enumerate(args) if isinstance(a, Tensor) and a.requires_grad]
        if not pos or not is_grad_enabled():
            return args
        self.in_pos = pos
        wrapped = _GradientRelay.apply(self._on_grad_input, *[args[i] for i in pos])
        args = list(args)
        for i, t in zip(pos, wrapped):
            args[i] = t
        return tuple(args)

    def wrap_outputs(self, result):
        single = isinstance(result, Tensor)
        outs = (result,) if single else result
        if not isinstance(outs, tuple):
            return result
        pos = [i for i, o in enumerate(outs) if isinstance(o, Tensor) and o.requires_grad]
        if not pos or not is_grad_enabled():
            return result
        self.n_outputs, self.out_pos = len(outs), pos
        wrapped = _GradientRelay.apply(self._on_grad_output, *[outs[i] for i in pos])
        if single:
            return wrapped[0]
        outs = list(outs)
        for i, t in zip(pos, wrapped):
            outs[i] = t
        return tuple(outs)

    def _on_grad_output(self, grads):
        module = self.module
        grad_outputs = self._pack(self.out_pos, grads, self.n_outputs)
        for hook in list(module._backward_pre_hooks.values()):
            res = hook(module, grad_outputs)
            if res is not None:
                grad_outputs = self._check(res, len(grad_outputs), "pre hook")
        self.grad_outputs = grad_outputs
        if self.in_pos is None:
            # nothing that went in needs a gradient: the hooks run now, with grad_input all None
            grad_inputs = (None,) * self.n_args
            for hook in list(module._backward_hooks.values()):
                res = hook(module, grad_inputs, grad_outputs)
                if res is not None and not all(r is None for r in res):
                    raise RuntimeError("Backward hook for Modules where no input requires "
                                       "gradient should always return None or None for all "
                                       "gradients.")
        return [grad_outputs[i] for i in self.out_pos]

    def _on_grad_input(self, grads):
        module = self.module
        grad_inputs = self._pack(self.in_pos, grads, self.n_args)
        grad_outputs = self.grad_outputs if self.grad_outputs is not None else \
            (None,) * max(self.n_outputs, 1)
        for hook in list(module._backward_hooks.values()):
            res = hook(module, grad_inputs, grad_outputs)
            if res is not None:
                grad_inputs = self._check(res, len(grad_inputs), "hook")
        self.grad_outputs = None
        return [grad_inputs[i] for i in self.in_pos]
