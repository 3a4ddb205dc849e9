"""The backward graph: `Node` and its kinds (`AccumulateGrad` for leaves, `BackwardCFunction`,
the node and `ctx` each `Function.apply` makes), saved tensors with their version checks, the
hook slots the optional tools plug into (`hooks`), the ops the core borrows from the ops layer
(`ops`, filled in by the face), and running one node (`run_node`).

The rest of the autograd core builds on this module: autograd.views (views and in-place changes),
autograd.function (`Function`), autograd.op (`Op`, the built-in ops' path), autograd.engine.
"""
import itertools
import weakref
from collections import OrderedDict
from typing import NamedTuple

from ..tensor import Tensor, alias
from .grad_mode import state as _state

_sequence = itertools.count()
_handle_ids = itertools.count()


class _OpsHook:
    """Ops the engine and this module need (add, zeros, as_strided views ...); the ops layer fills
    this in at import, so imports keep pointing down."""


ops = _OpsHook()


class RemovableHandle:
    """Returned by hook registrations; `remove()` unregisters the hook (from `table` and from
    each of `extra_dict`, a dict or a list of them, as torch.utils.hooks.RemovableHandle)."""

    def __init__(self, table, *, extra_dict=None):
        self.id = next(_handle_ids)
        self._table = table
        self._extra = () if extra_dict is None else \
            tuple(extra_dict) if isinstance(extra_dict, (list, tuple)) else (extra_dict,)

    def remove(self):
        if self._table is not None:
            self._table.pop(self.id, None)
        for d in self._extra:
            d.pop(self.id, None)

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
