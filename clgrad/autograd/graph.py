"""Inspecting and hooking the backward graph, as torch.autograd.graph has it: nodes and gradient
edges, hooks on what is saved for backward (saved_tensors_hooks, save_on_cpu), multi-tensor
gradient hooks, allow_mutation_on_saved_tensors; and, beyond torch, `to_dot`, the graph as
Graphviz text.

>>> import clgrad
>>> x = clgrad.ones(3, requires_grad=True)
>>> y = (x * 2).sum()
>>> isinstance(y.grad_fn, clgrad.autograd.graph.Node)
True
"""
import contextlib
import functools
import weakref
from collections import defaultdict

import numpy as np
import pyopencl as cl

from ..tensor import Tensor, empty_tensor
from . import engine
from . import function as F
from .function import FREED, AccumulateGrad, GradientEdge, Node, RemovableHandle
from .op import _null_ctx
from ..ops.copies import Clone

__all__ = ["Node", "GradientEdge", "get_gradient_edge", "increment_version",
           "saved_tensors_hooks", "save_on_cpu", "disable_saved_tensors_hooks",
           "register_multi_grad_hook", "allow_mutation_on_saved_tensors", "to_dot"]


# ---- gradient edges ------------------------------------------------------------------------------
def get_gradient_edge(tensor):
    """The edge along which the gradient of `tensor` is computed; `grad(loss, edge)` is
    `grad(loss, tensor)`, and keeps working after the tensor itself is gone.

    >>> import clgrad
    >>> from clgrad.autograd.graph import get_gradient_edge
    >>> x = clgrad.ones(2, requires_grad=True)
    >>> h = x * 3
    >>> edge = get_gradient_edge(h)
    >>> edge.node.name(), edge.output_nr
    ('MulBackward0', 0)
    >>> clgrad.autograd.grad((h * h).sum(), edge)[0].tolist()
    [6.0, 6.0]
    """
    if not tensor.requires_grad:
        raise RuntimeError("It is not possible to get the gradient edge for a Tensor that does "
                           "not require gradients")
    node, nr = F._edge(tensor)
    return GradientEdge(node, nr)


def increment_version(tensor):
    """Tell autograd that `tensor` (or each tensor of an iterable) was changed in place behind its
    back, so that a backward that saved it raises instead of computing with the new values.

    >>> import clgrad
    >>> x = clgrad.ones(2)
    >>> clgrad.autograd.graph.increment_version(x)
    >>> x._version
    1
    """
    for t in (tensor,) if isinstance(tensor, Tensor) else tensor:
        if not t._inference:            # inference tensors have no version counter in torch
            t._vc[0] += 1


# ---- hooks on saved tensors ----------------------------------------------------------------------
_disabled = []          # messages of the disable_saved_tensors_hooks blocks entered


class saved_tensors_hooks:
    """Context manager: every tensor saved for backward inside is stored as `pack_hook(tensor)`,
    and `unpack_hook(packed)` gives it back when backward needs it. Nested, the innermost pair
    wins.

    >>> import clgrad
    >>> from clgrad.autograd.graph import saved_tensors_hooks
    >>> seen = []
    >>> a = clgrad.ones(3, requires_grad=True)
    >>> with saved_tensors_hooks(lambda t: seen.append("pack") or t.detach(),
    ...                          lambda t: seen.append("unpack") or t):
    ...     y = (a * a).sum()
    >>> y.backward()
    >>> seen
    ['pack', 'pack', 'unpack', 'unpack']
    """

    def __init__(self, pack_hook, unpack_hook):
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self):
        if _disabled:
            raise RuntimeError(_disabled[-1])
        F.saved_hooks_stack.append((self.pack_hook, self.unpack_hook))

    def __exit__(self, *exc):
        F.saved_hooks_stack.pop()
        return False


class save_on_cpu(saved_tensors_hooks):
    """Keep the tensors saved for backward in host memory (numpy arrays) between forward and
    backward, and copy them back to the device when backward needs them: device memory for host
    memory and copies. (clgrad has no CPU tensors; `pin_memory` and `device_type` are accepted
    for torch compatibility.)

    >>> import clgrad
    >>> from clgrad.autograd.graph import save_on_cpu
    >>> a = clgrad.ones(3, requires_grad=True)
    >>> with save_on_cpu():
    ...     y = (a.exp() * a).sum()
    >>> y.backward()
    >>> round(a.grad[0].item(), 4)
    5.4366
    """

    def __init__(self, pin_memory=False, device_type="cl"):
        super().__init__(_pack_to_host, _unpack_from_host)


def _pack_to_host(t):
    return (t._storage.device, t._dtype, t._read_host())        # waits for the device


def _unpack_from_host(packed):
    device, dt, host = packed
    t = empty_tensor(host.shape, dt, device)
    if host.size:
        cl.enqueue_copy(device.queue, t._storage.buf, np.ascontiguousarray(host),
                        is_blocking=True)
    return t


@contextlib.contextmanager
def disable_saved_tensors_hooks(error_message):
    """Context manager in which saved tensors hooks may not be used: entering
    saved_tensors_hooks (or this block while hooks are set) raises RuntimeError(error_message).

    >>> import clgrad
    >>> from clgrad.autograd import graph
    >>> with graph.disable_saved_tensors_hooks("no hooks in here"):
    ...     try:
    ...         with graph.save_on_cpu():
    ...             pass
    ...     except RuntimeError as e:
    ...         print(e)
    no hooks in here
    """
    if F.saved_hooks_stack:
        raise RuntimeError(error_message)
    _disabled.append(error_message)
    try:
        yield
    finally:
        _disabled.pop()


# ---- hooks on several tensors --------------------------------------------------------------------
class _MultiHandle(RemovableHandle):
    def __init__(self, handles):
        self.handles = tuple(handles)

    def remove(self):
        for h in self.handles:
            h.remove()


def register_multi_grad_hook(tensors, fn, *, mode="all"):
    """Call fn once per backward pass when the gradients of all `tensors` that take part in it
    have been computed (mode "all": fn(grads), None for those that got none), or with the first
    of them (mode "any": fn(grad)). Returns a handle with remove().

    >>> import clgrad
    >>> a = clgrad.ones(2, requires_grad=True)
    >>> b = clgrad.ones(2, requires_grad=True)
    >>> c, d = a * b, a * b
    >>> h = clgrad.autograd.graph.register_multi_grad_hook(
    ...     (a, b, c, d), lambda grads: print([g is not None for g in grads]))
    >>> c.sum().backward()
    [True, True, True, False]
    """
    if mode not in ("all", "any"):
        raise ValueError(f"Expects mode to be one of ('all', 'any') but got {mode}")
    tensors = tuple(tensors)
    if mode == "all":
        nodes = [F._edge(t)[0] for t in tensors]
        state = {}          # graph task id -> [calls so far, expected calls, grads]

        def inner(i):
            def hook(grad):
                task = engine.current_graph_task()
                if task is None:
                    raise AssertionError("expected this hook to be called inside a backward call")
                st = state.get(task.id)
                if st is None:
                    expected = sum(1 for n in nodes if n is not None and task.will_execute(n))
                    st = state[task.id] = [0, expected, [None] * len(tensors)]
                st[0] += 1
                st[2][i] = grad
                if st[0] == st[1]:
                    del state[task.id]
                    fn(st[2])
            return hook
        return _MultiHandle(t.register_hook(inner(i)) for i, t in enumerate(tensors))

    ran = set()

    @functools.wraps(fn)
    def once(grad):
        task = engine.current_graph_task()
        if task is None:
            raise AssertionError("expected this hook to be called inside a backward call")
        if task.id in ran:
            return
        ran.add(task.id)
        fn(grad)
    return _MultiHandle(t.register_hook(once) for t in tensors if t.requires_grad)


# ---- allow_mutation_on_saved_tensors -------------------------------------------------------------
_mutation_ctx = None


class _Handle:
    """What the graph holds in place of a saved tensor under allow_mutation_on_saved_tensors."""


class _AllowMutationOnSavedContext:
    """The state of one allow_mutation_on_saved_tensors block: the saved tensors, and the copies
    of those that were changed in place after being saved."""

    def __init__(self):
        self.original = weakref.WeakKeyDictionary()     # handle -> the tensor as saved
        self.cloned = weakref.WeakKeyDictionary()       # handle -> its copy from before a change
        self.saved = defaultdict(list)                  # (storage id, version) -> [weakref(handle)]

    def clear(self):
        self.original.clear()
        self.cloned.clear()
        self.saved.clear()

    def pack(self, t):
        h = _Handle()
        self.original[h] = t
        self.saved[(id(t._storage), t._vc[0])].append(weakref.ref(h))
        return h

    def unpack(self, h):
        if _mutation_ctx is not self:
            raise AssertionError("Trying to backward outside of the "
                                 "'allow_mutation_on_saved_tensors' context in which the graph "
                                 "was originally recorded.")
        return self.cloned[h] if h in self.cloned else self.original[h]

    def mutate(self, t):
        """t is about to change: copy every tensor saved from its memory at its current version."""
        for ref in self.saved.pop((id(t._storage), t._vc[0]), ()):
            h = ref()
            if h is not None and h not in self.cloned and h in self.original:
                orig = self.original.pop(h)
                self.cloned[h] = Clone.forward(_null_ctx, orig)   # raw copy, no history


@contextlib.contextmanager
def allow_mutation_on_saved_tensors():
    """Context manager under which tensors saved for backward may be changed in place: a saved
    tensor is copied just before it is changed, and backward uses the copy. Run forward and
    backward inside the same block.

    >>> import clgrad
    >>> with clgrad.autograd.graph.allow_mutation_on_saved_tensors():
    ...     a = clgrad.ones(3, requires_grad=True)
    ...     b = a.clone()
    ...     out = (b ** 2).sum()
    ...     _ = b.sin_()
    ...     out.backward()
    >>> a.grad.tolist()
    [2.0, 2.0, 2.0]
    """
    global _mutation_ctx
    if _mutation_ctx is not None:
        raise RuntimeError("allow_mutation_on_saved_tensors contexts cannot be nested")
    ctx = _AllowMutationOnSavedContext()
    with saved_tensors_hooks(ctx.pack, ctx.unpack):
        _mutation_ctx = ctx
        F.hooks.mutate = ctx.mutate
        try:
            yield ctx
        finally:
            F.hooks.mutate = None
            _mutation_ctx = None
            ctx.clear()


# ---- Graphviz ------------------------------------------------------------------------------------
def to_dot(tensors, params=None):
    """The backward graph behind `tensors` as Graphviz DOT text: one box per node with its name
    and the shapes of the tensors it saved, leaves (AccumulateGrad) filled and labelled with their
    shape (and name, from `params`: {name: tensor}), edges along next_functions. Render it with
    `dot -Tsvg`, or paste it into any Graphviz viewer.

    >>> import clgrad
    >>> w = clgrad.ones(3, requires_grad=True)
    >>> dot = clgrad.autograd.graph.to_dot((w.exp() * 2).sum(), params={"w": w})
    >>> print(dot)
    digraph backward {
      node [shape=box, style="rounded,filled", fillcolor=white, fontname="monospace"];
      out0 [label="()", shape=ellipse, fillcolor=darkolivegreen1];
      n0 [label="SumBackward0"];
      n1 [label="MulBackward0"];
      n2 [label="ExpBackward0\\nsaved: (3,)"];
      n3 [label="w\\n(3,)", fillcolor=lightblue];
      out0 -> n0;
      n0 -> n1;
      n1 -> n2;
      n2 -> n3;
    }
    """
    roots = (tensors,) if isinstance(tensors, Tensor) else tuple(tensors)
    names = {id(t): name for name, t in (params or {}).items()}
    ids = {}

    def nid(node):
        if node not in ids:
            ids[node] = f"n{len(ids)}"
        return ids[node]

    lines = ["digraph backward {",
             '  node [shape=box, style="rounded,filled", fillcolor=white, fontname="monospace"];']
    edges = []
    seen = set()
    stack = []
    for i, t in enumerate(roots):
        r = f"out{i}"
        lines.append(f'  {r} [label="{_shape(t)}", shape=ellipse, fillcolor=darkolivegreen1];')
        node = t.grad_fn
        if node is not None:
            edges.append(f"  {r} -> {nid(node)};")
            stack.append(node)
    order = []
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        order.append(node)
        for nxt, _ in node.next_functions:
            if nxt is not None:
                edges.append(f"  {nid(node)} -> {nid(nxt)};")
                stack.append(nxt)
    for node in sorted(order, key=lambda n: int(nid(n)[1:])):
        lines.append(f"  {nid(node)} [{_node_attrs(node, names)}];")
    lines.extend(edges)
    lines.append("}")
    return "\n".join(lines)


def _shape(t):
    shape = t._shape
    return "(" + ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"


def _node_attrs(node, names):
    if isinstance(node, AccumulateGrad):
        v = node.variable
        name = names.get(id(v))
        label = "\\n".join(p for p in (name, _shape(v)) if p)
        return f'label="{label}", fillcolor=lightblue'
    saved = node._saved
    label = node.name()
    if saved is FREED:
        label += "\\nsaved: freed"
    elif saved:
        shapes = [("packed" if s.data is None else _shape(s.data)) for s in saved if s is not None]
        label += "\\nsaved: " + ", ".join(shapes)
    return f'label="{label}"'
