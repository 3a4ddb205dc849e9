"""Nodes of the backward graph, `Function` and its `ctx`, saved tensors, and the bookkeeping that
links outputs to their node: views, in-place changes (`mark_dirty`) and version checks.

Built-in ops are Functions too (`clgrad.ops`): one mechanism, one place where saving, hooks and
version checks happen. `Op.apply` is a leaner path through the same steps for them.
"""
import functools
import inspect
import itertools
import weakref
from collections import OrderedDict
from typing import NamedTuple

from ..tensor import Tensor, alias, is_contiguous_layout
from . import grad_mode
from .grad_mode import state as _state

_sequence = itertools.count()
_handle_ids = itertools.count()


class _OpsHook:
    """Ops the engine and this module need (add, zeros, as_strided views ...); the ops layer fills
    this in at import, so imports keep pointing down."""


ops = _OpsHook()


class RemovableHandle:
    """Returned by hook registrations; `remove()` unregisters the hook."""

    def __init__(self, table):
        self.id = next(_handle_ids)
        self._table = table

    def remove(self):
        if self._table is not None:
            self._table.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def _add_hook(table, fn):
    h = RemovableHandle(table)
    table[h.id] = fn
    return h


class _Freed:
    pass


FREED = _Freed()        # a node's saved tensors after a backward without retain_graph

_FREED_MSG = ("Trying to backward through the graph a second time (or directly access saved "
              "tensors after they have already been freed). Saved intermediate values of the graph "
              "are freed when you call .backward() or autograd.grad(). Specify retain_graph=True if "
              "you need to backward through the graph a second time or if you need to access "
              "saved tensors after calling backward.")


def _type_desc(t):
    return f"[clgrad.cl.{t._dtype.name.capitalize()}Tensor [{', '.join(map(str, t._shape))}]]"


class SavedTensor:
    """A tensor saved for backward with the version it had, so that an in-place change made
    afterwards is caught. An output saved by its own node is kept as a plain alias (no grad_fn,
    hence no reference cycle) and gets its history back when unpacked."""

    __slots__ = ("data", "version", "is_output", "output_nr", "packed", "unpack_hook",
                 "had_grad")

    def __init__(self, t, output_nr=None):
        self.is_output = output_nr is not None
        self.output_nr = output_nr
        self.version = t._vc[0]
        self.had_grad = t._requires_grad
        self.unpack_hook = None
        if t._inference and not _state.inference:
            raise RuntimeError("Inference tensors cannot be saved for backward. To work around you "
                               "can make a clone to get a normal tensor and use it in autograd.")
        if saved_hooks_stack:                   # graph.saved_tensors_hooks: the innermost pair
            pack, unpack = saved_hooks_stack[-1]
            self.data = None
            self.packed = pack(t)
            self.unpack_hook = unpack
            return
        self.packed = None
        self.data = alias(t) if self.is_output else t

    def unpack(self, node):
        if self.unpack_hook is not None:
            t = self.unpack_hook(self.packed)
            if not isinstance(t, Tensor):
                raise TypeError(f"Output of saved tensor unpack_hook expected to be a Tensor but "
                                f"got result of type {type(t).__name__}")
            if self.is_output and self.had_grad and node is not None and t._grad_fn is None:
                t = alias(t)
                t._grad_fn, t._output_nr, t._requires_grad = node, self.output_nr, True
            return t
        t = self.data
        if t._vc[0] != self.version:
            where = f"output {self.output_nr} of {node.name()}" if self.is_output else \
                (f"output {t._output_nr} of {t._grad_fn.name()}" if t._grad_fn is not None
                 else "a leaf")
            raise RuntimeError(
                f"one of the variables needed for gradient computation has been modified by an "
                f"inplace operation: {_type_desc(t)}, which is {where}, is at version "
                f"{t._vc[0]}; expected version {self.version} instead. Hint: the backtrace further "
                f"above can show the operation that failed to compute its gradient (enable it "
                f"with clgrad.autograd.set_detect_anomaly(True)).")
        if self.is_output and self.had_grad and node is not None:
            tangent = t._fw
            t = alias(t)
            t._grad_fn, t._output_nr, t._requires_grad = node, self.output_nr, True
            if tangent is not None and hooks.forward_ad is not None:
                hooks.forward_ad.set_tangent(t, tangent)    # forward-over-reverse needs it
        return t


saved_hooks_stack = []          # [(pack, unpack)] managed by graph.saved_tensors_hooks


class Node:
    """A function of the backward graph: takes the gradients of its forward outputs and returns
    those of its forward inputs, along `next_functions`.

    >>> import clgrad
    >>> x = clgrad.ones(2, requires_grad=True)
    >>> y = (x * 2).sum()
    >>> y.grad_fn.name(), y.grad_fn.next_functions[0][0].name()
    ('SumBackward0', 'MulBackward0')
    """

    _pre_hooks = None
    _post_hooks = None
    _tensor_pre_hooks = None      # {output_nr: {handle id: fn}}
    _retain = None                # {output_nr: weakref to a tensor that retains its grad}
    _saved = None                 # [SavedTensor] | FREED | None
    _metadata = None
    _anomaly_trace = None         # anomaly mode: the forward call's stack
    _anomaly_parent = None        # anomaly mode: the node whose backward made this one
    _num_outputs = 1
    _out_meta = None              # ((shape, dtype, device) per forward output)
    _in_meta = None               # ((shape, dtype, device) per tensor input)
    materialize_grads = True
    _handles_none = False
    # direct(node, grad) -> gradients along next_functions, for single-output built-in nodes
    # whose gradients need no checking (elementwise ops on operands of one shape and dtype); the
    # engine calls it instead of the general path when the node has no hooks
    _direct_backward = None

    def __init__(self):
        self._sequence_nr = next(_sequence)
        self.next_functions = ()
        if hooks.anomaly is not None:
            hooks.anomaly.record(self)

    def name(self):
        return type(self).__name__

    def __repr__(self):
        return f"<{self.name()} object at {id(self):#x}>"

    @property
    def metadata(self):
        if self._metadata is None:
            self._metadata = {}
        return self._metadata

    def _sequence_nr_(self):
        return self._sequence_nr

    def register_hook(self, fn):
        """fn(grad_inputs, grad_outputs) runs after this node; a non-None result replaces
        grad_inputs."""
        if self._post_hooks is None:
            self._post_hooks = OrderedDict()
        return _add_hook(self._post_hooks, fn)

    def register_prehook(self, fn):
        """fn(grad_outputs) runs before this node; a non-None result replaces grad_outputs."""
        if self._pre_hooks is None:
            self._pre_hooks = OrderedDict()
        return _add_hook(self._pre_hooks, fn)

    def _register_tensor_pre_hook(self, output_nr, fn):
        if self._tensor_pre_hooks is None:
            self._tensor_pre_hooks = {}
        return _add_hook(self._tensor_pre_hooks.setdefault(output_nr, OrderedDict()), fn)

    def _apply(self, grads):
        raise NotImplementedError

    def __call__(self, *grads):
        return self._apply(list(grads))

    def _release(self):
        if self._saved is not None:
            self._saved = FREED

    def _unpack_saved(self):
        saved = self._saved
        if saved is FREED:
            raise RuntimeError(_FREED_MSG)
        if not saved:
            return ()
        return tuple(None if s is None else s.unpack(self) for s in saved)

    # torch exposes saved values of built-in nodes as _saved_<name> / _raw_saved_<name>
    def __getattr__(self, name):
        names = type(self).__dict__.get("_saved_names") or getattr(type(self), "_saved_names", None)
        if names and name.startswith("_saved_") and name[7:] in names:
            return self._unpack_saved()[names.index(name[7:])]
        if names and name.startswith("_raw_saved_") and name[11:] in names:
            return self._saved[names.index(name[11:])]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")


class FunctionCtx:
    """What `forward` can tell `backward` through `ctx`."""

    to_save = ()
    dirty_tensors = ()
    non_differentiable = ()
    saved_for_forward = ()
    _jvp_saved = None

    def save_for_backward(self, *tensors):
        """Keep tensors for backward; read them back with `ctx.saved_tensors`."""
        for t in tensors:
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(f"save_for_backward can only save variables, but argument "
                                f"{tensors.index(t)} is of type {type(t).__name__}")
        self.to_save = tensors

    def save_for_forward(self, *tensors):
        """Keep tensors for `jvp` (forward-mode AD); inside jvp, `ctx.saved_tensors` returns
        them."""
        self.saved_for_forward = tensors

    def mark_dirty(self, *tensors):
        """Declare the inputs that forward modified in place (and returns)."""
        self.dirty_tensors = tensors

    def mark_non_differentiable(self, *tensors):
        """Declare outputs that have no gradient (indices, masks ...)."""
        self.non_differentiable = tensors

    def set_materialize_grads(self, value):
        """Whether backward receives zeros (True, the default) or None for outputs that got no
        gradient."""
        self.materialize_grads = bool(value)

    @property
    def saved_tensors(self):
        if self._jvp_saved is not None:         # inside jvp: what save_for_forward kept
            return self._jvp_saved
        return self._unpack_saved()

    saved_variables = saved_tensors


class BackwardCFunction(FunctionCtx, Node):
    """The node (and ctx) made by each `Function.apply`."""

    _forward_cls = None
    needs_input_grad = ()
    _tensor_positions = ()          # positions of tensor arguments among forward's arguments

    def _apply(self, grads):
        cls = self._forward_cls
        backward = cls.backward
        if getattr(cls, "_is_vjp_override", False):
            backward = cls.vjp
        out = backward(self, *grads)
        return out

    def apply(self, *grads):
        return self._apply(list(grads))


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


def _edge(t):
    """The (node, input number) a gradient for tensor t flows into."""
    if t._base is not None:
        refresh_view_grad_fn(t)
    fn = t._grad_fn
    if fn is not None:
        return (fn, t._output_nr)
    if t._requires_grad:
        return (accumulate_node(t), 0)
    return (None, 0)


gradient_edge = _edge


class GradientEdge(NamedTuple):
    """Where the gradient of a tensor is computed: (node, input number of that node). Accepted
    as `inputs` by grad and backward in place of the tensor (see graph.get_gradient_edge)."""

    node: Node
    output_nr: int
    ownership_token: object = None


def accumulate_node(t):
    ref = t._acc
    node = ref() if ref is not None else None
    if node is None:
        node = AccumulateGrad(t)
        t._acc = weakref.ref(node)
    return node


class AccumulateGrad(Node):
    """The node of a leaf: adds the incoming gradient into `.grad`."""

    _sequence_nr_max = True

    def __init__(self, variable):
        self._sequence_nr = float("inf")      # runs as soon as it is ready, as in torch
        self.next_functions = ()
        self.variable = variable
        self._out_meta = ((variable._shape, variable._dtype, variable._storage.device),)

    def _apply(self, grads):
        raise RuntimeError("AccumulateGrad is run by the engine")


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


class _Hooks:
    """Where the optional tools plug into the op path and the engine. Each slot is None while its
    tool is off, so that the hot paths pay one check for it.

    - op(cls, args): runs a built-in op instead of Op.apply's plain path (set while the profiler
      or forward AD is on; calls `cls._apply_op(args)` for the plain path).
    - node(node, grads): runs a backward node for the engine (profiler, anomaly mode).
    - profiler: the running profiler (autograd.profiler).
    - forward_ad: the forward-AD state while a dual level is entered (autograd.forward_ad).
    - anomaly: anomaly mode; `record(node)` when a node is made (autograd.anomaly_mode).
    - mutate(tensor): a tensor is about to change in place (allow_mutation_on_saved_tensors).
    """

    op = None
    node = None
    profiler = None
    forward_ad = None
    anomaly = None
    mutate = None

    def refresh(self):
        """Recompute the composed slots after a tool turned on or off."""
        self.op = _hooked_op if (self.profiler is not None or self.forward_ad is not None) \
            else None
        self.node = _hooked_node if (self.profiler is not None or self.anomaly is not None) \
            else None


hooks = _Hooks()


def _hooked_op(cls, args):
    prof = hooks.profiler
    if prof is not None:
        return prof.op(cls, args, _op_forward_ad)
    return _op_forward_ad(cls, args)


def _op_forward_ad(cls, args):
    fw = hooks.forward_ad
    if fw is not None:
        return fw.op(cls, args)
    return cls._apply_op(args)


def _hooked_node(node, grads):
    prof = hooks.profiler
    if prof is not None:
        return prof.node(node, grads, _node_anomaly)
    return _node_anomaly(node, grads)


def _node_anomaly(node, grads):
    if hooks.anomaly is not None:
        return hooks.anomaly.run(node, grads)
    return run_node(node, grads)


def _check_inplace(t, node_name):
    """The errors torch raises before an in-place change recorded by autograd."""
    if t._grad_fn is None and t._base is None and t._requires_grad:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                           "operation.")
    base = t._base
    if base is not None:
        if base._grad_fn is None and base._base is None and base._requires_grad:
            raise RuntimeError("a view of a leaf Variable that requires grad is being used in an "
                               "in-place operation.")
        if t._view_multi:
            raise RuntimeError(f"Output {t._output_nr} of {t._grad_fn.name() if t._grad_fn else 'a view op'} "
                               f"is a view and is being modified inplace. This view is the output "
                               f"of a function that returns multiple views. Such functions do not "
                               f"allow the output views to be modified inplace. You should replace "
                               f"the inplace operation by an out-of-place one.")
        if t._view_no_grad:
            raise RuntimeError("A view was created in no_grad mode and is being modified inplace "
                               "with grad mode enabled. This view is the output of a function "
                               "that returns multiple views. Given that this use case is ambiguous "
                               "and error-prone, it is forbidden. You can clarify your code by "
                               "moving both the view and the inplace either both inside the "
                               "no_grad block (if you don't want the inplace to be tracked) or "
                               "both outside (if you want the inplace to be tracked).")


def check_inplace_allowed(t):
    """Errors for an in-place change of t that autograd would not record. Every in-place change
    calls this first, so it is also where allow_mutation_on_saved_tensors hears of them."""
    if t._inference and not _state.inference:
        raise RuntimeError("Inplace update to inference tensor outside InferenceMode is not "
                           "allowed. You can make a clone to get a normal tensor before doing "
                           "inplace update.")
    if hooks.mutate is not None:
        hooks.mutate(t)


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
            if id(o) in nondiff or o._dtype.kind != "f":
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


def _view_of_input(t):
    v = alias(t)
    v._base = t._base if t._base is not None else t
    v._view_vc_at = t._vc[0]
    v._requires_grad = t._requires_grad
    return v


def rebase_history(t, node, output_nr):
    """t was modified in place by `node`: its history becomes node. If t is a view, its base's
    history becomes a CopySlices over node, and t's own grad_fn is remade from the base."""
    base = t._base
    if base is None:
        t._grad_fn = node
        t._output_nr = output_nr
        t._requires_grad = True
        return
    if not base._contig:
        raise NotImplementedError("in-place changes to a view of a non-contiguous base are not "
                                  "supported by autograd; call .contiguous() on the base first")
    # node's input slot for the view: the dirty input's position among its tensor inputs
    cs = CopySlices(base, t, node, output_nr)
    base._grad_fn = cs
    base._output_nr = 0
    base._requires_grad = True
    t._view_vc_at = -1            # stale: grad_fn is remade from the base on next access
    t._requires_grad = True


class CopySlices(Node):
    """History of a base whose view was modified in place: the gradient of the base is the
    incoming gradient, except in the view's region, where it goes through the in-place op."""

    def __init__(self, base, view, fn, fn_output_nr):
        super().__init__()
        self.fn = fn
        self.fn_output_nr = fn_output_nr
        self.base_shape = base._shape
        self.base_meta = (base._shape, base._dtype, base._storage.device)
        self.view_geom = (view._shape, view._strides, view._offset - base._offset)
        # which of fn's inputs is the view (the dirty input): the edge that pointed at the view's
        # history is replaced by the base's old history
        dirty_slot = 0
        self.dirty_slot = dirty_slot
        base_edge = _edge(base) if base._grad_fn is not None or base._requires_grad else (None, 0)
        nf = list(fn.next_functions)
        if nf:
            nf[dirty_slot] = base_edge
        else:
            nf = [base_edge]
        self.next_functions = tuple(nf)
        self._out_meta = (self.base_meta,)
        self._in_meta = (self.base_meta,) + tuple(fn._in_meta[1:] if fn._in_meta else ())
        self._sequence_nr = fn._sequence_nr

    def _apply(self, grads):
        g = grads[0]
        shape, strides, offset = self.view_geom
        g = g.contiguous()
        grad_slice = ops.as_strided(g, shape, strides, offset)
        fn_grads = [None] * max(1, self.fn._num_outputs)
        fn_grads[self.fn_output_nr] = grad_slice
        res = run_node(self.fn, fn_grads)
        res = list(res) if res is not None else [None]
        r0 = res[self.dirty_slot] if res else None
        base_grad = ops.view_scatter(g, r0 if r0 is not None else ops.zeros_like(grad_slice),
                                     shape, strides, offset)
        res[self.dirty_slot] = base_grad
        return res

    def _release(self):
        self.fn._release()

    def name(self):
        return "CopySlices"


class AsStridedBackward0(Node):
    """History of a view regenerated after its base changed in place."""

    def __init__(self, base, view):
        super().__init__()
        self.next_functions = (_edge(base),)
        self.base_meta = (base._shape, base._dtype, base._storage.device)
        self._in_meta = (self.base_meta,)
        self._out_meta = ((view._shape, view._dtype, view._storage.device),)
        self.view_geom = (view._shape, view._strides, view._offset - base._offset)

    def _apply(self, grads):
        shape, strides, offset = self.view_geom
        base_shape, dt, dev = self.base_meta
        zeros = ops.zeros(base_shape, dt, dev)
        return (ops.view_scatter(zeros, grads[0], shape, strides, offset),)


def refresh_view_grad_fn(t):
    """Remake a view's grad_fn when its base was modified in place after the view was made."""
    if t._view_vc_at == t._vc[0]:
        return
    base = t._base
    if base._grad_fn is None and not base._requires_grad:
        t._view_vc_at = t._vc[0]
        return
    if not _state.grad_enabled and t._view_vc_at != -1:
        return
    if not base._contig:
        t._view_vc_at = t._vc[0]
        return
    t._grad_fn = AsStridedBackward0(base, t)
    t._output_nr = 0
    t._requires_grad = True
    t._view_vc_at = t._vc[0]


def run_node(node, grads):
    """Call a node on its incoming gradients (materialising zeros where it wants them) and
    check what it returns against its inputs."""
    if None in grads and not node._handles_none and node.materialize_grads:
        meta = node._out_meta
        if meta is not None:
            for i, g in enumerate(grads):
                if g is None and i < len(meta) and meta[i] is not None:
                    shape, dt, dev = meta[i]
                    grads[i] = ops.zeros(shape, dt, dev)
    out = node._apply(grads)
    if not isinstance(out, (tuple, list)):
        out = (out,)
    if isinstance(node, BackwardCFunction):
        # backward returns one gradient per forward argument; keep those of tensor arguments
        n_args = len(node.needs_input_grad)
        if len(out) != n_args:
            if len(out) > n_args and all(o is None for o in out[n_args:]):
                out = out[:n_args]
            else:
                raise RuntimeError(f"function {node.name()} returned an incorrect number of "
                                   f"gradients (expected {n_args}, got {len(out)})")
        positions = node._tensor_positions
        if len(positions) != n_args:
            if node._forward_cls._is_custom:
                pos = set(positions)
                for i, o in enumerate(out):
                    if i not in pos and o is not None:
                        raise RuntimeError(f"function {node.name()} returned a gradient "
                                           f"different than None at position {i + 1}, but the "
                                           f"corresponding forward input was not a Variable")
            out = [out[p] for p in positions]
    return _validate(node, out)


def _validate(node, out):
    meta = node._in_meta
    if meta is None:
        return out
    if len(out) != len(meta):
        raise RuntimeError(f"function {node.name()} returned an incorrect number of gradients "
                           f"(expected {len(meta)}, got {len(out)})")
    fixed = None
    for i, g in enumerate(out):
        if g is None:
            continue
        if type(g) is Tensor:
            shape, dt, dev = meta[i]
            if g._shape == shape and g._dtype is dt and g._storage.device is dev:
                continue
        if not isinstance(g, Tensor):
            raise TypeError(f"function {node.name()} returned a gradient of type "
                            f"{type(g).__name__} at index {i}; expected a Tensor or None")
        shape, dt, dev = meta[i]
        if g._shape != shape or g._dtype is not dt:
            g2 = g
            if g2._shape != shape:
                try:
                    g2 = ops.sum_to(g2, shape)
                except RuntimeError:
                    raise RuntimeError(f"Function {node.name()} returned an invalid gradient at "
                                       f"index {i} - got {list(g._shape)} but expected shape "
                                       f"compatible with {list(shape)}") from None
            if g2._dtype is not dt:
                g2 = ops.cast(g2, dt)
            if fixed is None:
                fixed = list(out)
            fixed[i] = g2
        if g._storage.device is not dev:
            raise RuntimeError(f"Function {node.name()} returned an invalid gradient at index {i} "
                               f"- expected device {dev} but got {g._storage.device}")
    return out if fixed is None else tuple(fixed)


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
            if isinstance(o, Tensor) and o._dtype.kind == "f":
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


# ---- built-in ops ----------------------------------------------------------------------------

class OpNode(BackwardCFunction):
    """Node class of built-in ops (named like torch's: MulBackward0 ...)."""

    def _apply(self, grads):
        return self._forward_cls.backward(self, *grads)


_NO_CTX = None


class _NullCtx(FunctionCtx):
    """The ctx built-in forwards get when nothing is recorded: saving is a no-op."""

    needs_input_grad = ()

    def save_for_backward(self, *tensors):
        pass

    def mark_non_differentiable(self, *tensors):
        pass

    def __setattr__(self, name, value):
        pass


_null_ctx = _NullCtx()


class Op(Function):
    """Base of built-in ops. Same contract as a custom Function (forward(ctx, ...), backward(ctx,
    *grads) returning one gradient per forward argument), with a leaner `apply`: forward never
    returns its inputs, outputs are fresh tensors or views made by view ops."""

    _node_base = OpNode
    _is_custom = False
    _builtin = True
    _is_view = False              # outputs are views of the first argument
    _saved_names = None
    _forward_uses_ops = True      # False: forward only launches kernels (no recording to stop)

    # Forward mode: `jvp(args, tangents, out)` gets forward's arguments, one tangent per argument
    # (None for non-tensors and for tensors without one) and forward's result, and returns the
    # tangent of the result (a tuple for several outputs; None: no tangent), written in clgrad
    # ops. An op without one gets J·v from its own backward (see autograd.forward_ad).
    jvp = None

    @classmethod
    def apply(cls, *args):
        if hooks.op is not None:                # profiler or forward AD
            return hooks.op(cls, args)
        # the plain path, as in _apply_op (kept inline: this is the hottest path of all)
        if _state.grad_enabled:
            for a in args:
                if isinstance(a, Tensor) and a._requires_grad:
                    return cls._apply_recorded(args)
        out = cls.forward(_null_ctx, *args)
        if cls._is_view:
            _mark_views(args[0], out, False)
        return out

    @classmethod
    def _apply_op(cls, args):
        """Op.apply without the hooks."""
        if _state.grad_enabled:
            for a in args:
                if isinstance(a, Tensor) and a._requires_grad:
                    return cls._apply_recorded(args)
        out = cls.forward(_null_ctx, *args)
        if cls._is_view:
            _mark_views(args[0], out, False)
        return out

    @classmethod
    def _apply_recorded(cls, args):
        node = cls._backward_cls()
        positions = []
        needs = []
        edges = []
        in_meta = []
        i = 0
        for a in args:
            if isinstance(a, Tensor):
                positions.append(i)
                rg = a._requires_grad
                needs.append(rg)
                if a._base is None:
                    fn = a._grad_fn
                    edges.append((fn, a._output_nr) if fn is not None else
                                 (accumulate_node(a), 0) if rg else (None, 0))
                else:
                    edges.append(_edge(a))
                in_meta.append((a._shape, a._dtype, a._storage.device))
            else:
                needs.append(False)
            i += 1
        node.needs_input_grad = tuple(needs)
        node._tensor_positions = tuple(positions)
        node.next_functions = tuple(edges)
        node._in_meta = tuple(in_meta)
        if cls._forward_uses_ops:
            _state.grad_enabled = False
            try:
                out = cls.forward(node, *args)
            finally:
                _state.grad_enabled = True
        else:                                   # kernels only: nothing to keep from recording
            out = cls.forward(node, *args)
        if type(out) is Tensor:
            outs = (out,)
            if out._dtype.kind == "f" and not node.non_differentiable:
                out._grad_fn = node
                out._output_nr = 0
                out._requires_grad = True
            node._out_meta = ((out._shape, out._dtype, out._storage.device),)
        else:
            outs = (out,) if isinstance(out, Tensor) else out
            nondiff = node.non_differentiable
            meta = []
            for i, o in enumerate(outs):
                if isinstance(o, Tensor):
                    if o._dtype.kind == "f" and not (nondiff and any(o is t for t in nondiff)):
                        o._grad_fn = node
                        o._output_nr = i
                        o._requires_grad = True
                    meta.append((o._shape, o._dtype, o._storage.device))
                else:
                    meta.append(None)
            node._out_meta = tuple(meta)
            node._num_outputs = len(outs)
        if cls._is_view:
            _mark_views(args[0], out, True)
        to_save = node.to_save
        if to_save:
            saved = []
            for t in to_save:
                if t is None:
                    saved.append(None)
                    continue
                nr = None
                for i, o in enumerate(outs):
                    if o is t:
                        nr = i
                        break
                saved.append(SavedTensor(t, nr))
            node._saved = saved
            node.to_save = ()
        return out

    @staticmethod
    def backward(ctx, *grads):
        raise RuntimeError("this op is not differentiable")


def _mark_views(base, out, recorded):
    root = base._base if base._base is not None else base
    multi = not isinstance(out, Tensor)
    outs = out if multi else (out,)
    v = root._vc[0]
    no_grad_view = not recorded and root._requires_grad and _state.grad_enabled is False
    for o in outs:
        o._base = root
        o._view_vc_at = v
        if multi:
            o._view_multi = True
        if no_grad_view:
            o._view_no_grad = True
