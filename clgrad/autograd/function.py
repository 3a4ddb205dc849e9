"""`Function` (custom differentiable operations, torch.autograd.Function) and what it offers:
`FunctionCtx`, `once_differentiable`, `InplaceFunction`, `NestedIOFunction`; and the linking of a
Function's outputs to its node (`_process_outputs`).

The pieces it builds on live beside it, by subject: autograd.node (nodes, saved tensors, hooks),
autograd.views (views and in-place changes); built-in ops take the leaner path of autograd.op
(`Op`). Their names stay importable from here, as they were before the split.
"""
import functools
import inspect

from ..tensor import Tensor, alias
from . import grad_mode
from .grad_mode import state as _state
from .node import (FREED, AccumulateGrad, BackwardCFunction, FunctionCtx, GradientEdge, Node,  # noqa: F401
                   RemovableHandle, SavedTensor, _add_hook, _validate, accumulate_node, hooks, ops,
                   run_node, saved_hooks_stack)
from .views import (_check_inplace, _edge, _mark_views, _view_of_input, check_inplace_allowed,  # noqa: F401
                    gradient_edge, rebase_history, refresh_view_grad_fn)

class FunctionMeta(type):
    """Makes the node class `<Name>Backward` of every Function subclass."""

    def __init__(cls, name, bases, attrs):
        super().__init__(name, bases, attrs)
        suffix = "Backward0" if getattr(cls, "_builtin", False) else "Backward"
        node_name = attrs.get("_node_name") or f"{name}{suffix}"
        base = getattr(cls, "_node_base", None) or BackwardCFunction
        node_attrs = {"_forward_cls": cls}
        if getattr(cls, "_saved_names", None):
            node_attrs["_saved_names"] = cls._saved_names
        cls._backward_cls = type(node_name, (base,), node_attrs)


class Function(FunctionCtx, metaclass=FunctionMeta):
    """Base class of custom differentiable operations: subclass it with static `forward(ctx, ...)`
    and `backward(ctx, *grads)` and call `apply`.

    >>> import clgrad
    >>> class Square(clgrad.autograd.Function):
    ...     @staticmethod
    ...     def forward(ctx, x):
    ...         ctx.save_for_backward(x)
    ...         return x * x
    ...     @staticmethod
    ...     def backward(ctx, g):
    ...         x, = ctx.saved_tensors
    ...         return 2 * x * g
    >>> x = clgrad.tensor([3.0], requires_grad=True)
    >>> Square.apply(x).backward()
    >>> x.grad.item()
    6.0
    """

    generate_vmap_rule = False
    _is_custom = True
    _builtin = False
    _node_base = None

    def __init__(self, *args, **kwargs):
        pass

    def __call__(self, *args, **kwargs):
        return type(self).apply(*args, **kwargs)

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom "
                                  "autograd.Function.")

    @staticmethod
    def setup_context(ctx, inputs, output):
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for your "
                                  "custom autograd.Function to use it with backward mode AD.")

    @classmethod
    def vjp(cls, ctx, *grad_outputs):
        return cls.backward(ctx, *grad_outputs)

    @staticmethod
    def jvp(ctx, *grad_inputs):
        raise NotImplementedError("You must implement the jvp function for custom "
                                  "autograd.Function to use it with forward mode AD.")

    @classmethod
    def _uses_setup_context(cls):
        return cls.setup_context.__func__ is not Function.setup_context.__func__ \
            if hasattr(cls.setup_context, "__func__") else \
            cls.__dict__.get("setup_context") is not None or any(
                "setup_context" in k.__dict__ for k in cls.__mro__[:-1]
                if k not in (Function, FunctionCtx, object))

    @classmethod
    def apply(cls, *args, **kwargs):
        if kwargs:
            sig = inspect.signature(cls.forward)
            setup = _uses_setup(cls)
            bound = sig.bind(*args, **kwargs) if setup else sig.bind(None, *args, **kwargs)
            bound.apply_defaults()
            args = tuple(bound.arguments.values())[0 if setup else 1:]
        if hooks.profiler is not None:
            return hooks.profiler.function(cls, args)
        return cls._apply_function(args)

    @classmethod
    def _apply_function(cls, args):
        setup = _uses_setup(cls)
        grad_on = _state.grad_enabled
        positions = tuple(i for i, a in enumerate(args) if isinstance(a, Tensor))
        needs = tuple(isinstance(a, Tensor) and a._requires_grad for a in args)
        record = grad_on and any(needs)
        ctx = cls._backward_cls()
        ctx.needs_input_grad = needs if record else tuple(False for _ in args)
        ctx._tensor_positions = positions
        fw = hooks.forward_ad
        if fw is not None and not fw.has_tangents(args):
            fw = None
        _state.grad_enabled = False
        if fw is not None:
            fw.paused += 1              # forward runs on primals; jvp gives the tangents
        try:
            if setup:
                out = cls.forward(*args)
                cls.setup_context(ctx, args, out)
            else:
                out = cls.forward(ctx, *args)
        finally:
            _state.grad_enabled = grad_on
            if fw is not None:
                fw.paused -= 1
        is_tuple = isinstance(out, tuple)
        outs = out if is_tuple else (out,)
        outs = _process_outputs(ctx, args, positions, outs, record, custom=True)
        if fw is not None:
            fw.custom(cls, ctx, args, outs)
        return outs if is_tuple else outs[0]

    @staticmethod
    def vmap(info, in_dims, *args):
        raise NotImplementedError("clgrad has no vmap")


@functools.lru_cache(maxsize=None)
def _uses_setup(cls):
    for k in cls.__mro__:
        if k is Function:
            return False
        if "setup_context" in k.__dict__:
            return True
    return False


def _process_outputs(node, args, positions, outs, record, custom):
    """Link a Function's outputs to its node: history, views, dirty inputs, saved tensors."""
    dirty = node.dirty_tensors
    for o in outs:
        if o is not None and not isinstance(o, Tensor) and custom and record:
            pass
    if not record:
        if dirty:
            for d in dirty:
                check_inplace_allowed(d)
        if node.non_differentiable:
            for t in node.non_differentiable:
                t._requires_grad = False
        if custom:
            # Inputs returned as they are come back as new tensors, as in torch.
            ids = {id(args[p]) for p in positions}
            dirty_ids = {id(d) for d in dirty}
            outs = tuple(_view_of_input(o) if isinstance(o, Tensor) and id(o) in ids
                         and id(o) not in dirty_ids else o for o in outs)
        return outs
    node.next_functions = tuple(_edge(args[p]) for p in positions)
    node._in_meta = tuple((args[p]._shape, args[p]._dtype, args[p]._storage.device)
                          for p in positions)
    input_ids = {id(args[p]): p for p in positions}
    dirty_ids = {id(d) for d in dirty}
    nondiff = {id(t) for t in node.non_differentiable}
    result = []
    meta = []
    for i, o in enumerate(outs):
        if not isinstance(o, Tensor):
            result.append(o)
            meta.append(None)
            continue
        if id(o) in dirty_ids:
            check_inplace_allowed(o)
            _check_inplace(o, node.name())
            if id(o) not in input_ids:
                raise RuntimeError("mark_dirty was called on a tensor that is not an input")
            o._vc[0] += 0       # the in-place op inside forward bumped the version already
            rebase_history(o, node, i)
        else:
            if id(o) in input_ids:
                o = _view_of_input(o)
            if id(o) in nondiff or o._dtype.kind not in "fc":
                o._requires_grad = False
            else:
                o._grad_fn = node
                o._output_nr = i
                o._requires_grad = True
        result.append(o)
        meta.append((o._shape, o._dtype, o._storage.device))
    node._num_outputs = len(outs)
    node._out_meta = tuple(meta)
    to_save = node.to_save
    if to_save:
        out_pos = {id(o): i for i, o in enumerate(result) if isinstance(o, Tensor)}
        saved = []
        for t in to_save:
            if t is None:
                saved.append(None)
                continue
            nr = out_pos.get(id(t))
            saved.append(SavedTensor(t, nr))
        node._saved = saved
        node.to_save = ()
    return tuple(result)


def once_differentiable(fn):
    """Decorator for a backward that is not itself differentiable: it runs under no_grad, and
    its results carry a node that raises if anyone tries to differentiate them."""

    @functools.wraps(fn)
    def wrapper(ctx, *args):
        with grad_mode.no_grad():
            outputs = fn(ctx, *args)
        if not _state.grad_enabled:
            return outputs
        needs = any(isinstance(a, Tensor) and a._requires_grad for a in args)
        if not needs:
            return outputs
        single = not isinstance(outputs, tuple)
        outs = (outputs,) if single else outputs
        err = _OnceDifferentiableError()
        err.next_functions = tuple(_edge(a) for a in args if isinstance(a, Tensor))
        res = []
        for o in outs:
            if isinstance(o, Tensor) and o._dtype.kind in "fc":
                o = alias(o)
                o._grad_fn, o._requires_grad = err, True
            res.append(o)
        return res[0] if single else tuple(res)
    return wrapper


class _OnceDifferentiableError(Node):
    def name(self):
        return "Error"

    def _apply(self, grads):
        raise RuntimeError("trying to differentiate twice a function that was marked with "
                           "@once_differentiable")


class InplaceFunction(Function):
    """A Function that takes an `inplace` flag (kept for torch compatibility)."""

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace


class NestedIOFunction(Function):
    """Kept for torch compatibility; not used by clgrad."""


def __getattr__(name):
    # Op (the built-in ops' base) lives in autograd.op, which imports this module; code written
    # before the split that imports it from here still finds it
    if name in ("Op", "OpNode", "_null_ctx"):
        from . import op
        return getattr(op, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
