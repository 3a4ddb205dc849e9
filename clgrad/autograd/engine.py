"""The backward engine, like torch's: count dependencies from the roots, run nodes from a ready
heap in reverse creation order, sum gradients per node input as they arrive, hooks in torch's
order, saved tensors freed after use unless retain_graph."""
import heapq
import itertools
import sys
import threading

from ..tensor import Tensor
from . import function as F
from .function import AccumulateGrad, GradientEdge, run_node
from .grad_mode import state as _state


def _as_tuple(x):
    if x is None:
        return ()
    if isinstance(x, (Tensor, GradientEdge)):
        return (x,)
    return tuple(x)


def _root_grads(tensors, grads, create_graph, what):
    if len(grads) != len(tensors):
        raise RuntimeError(f"{what}: got {len(grads)} gradients for {len(tensors)} tensors")
    out = []
    for i, (t, g) in enumerate(zip(tensors, grads)):
        if g is None:
            if t._requires_grad:
                if t.numel() != 1:
                    raise RuntimeError("grad can be implicitly created only for scalar outputs")
                if t._dtype.kind != "f":
                    raise RuntimeError(f"grad can be implicitly created only for real scalar "
                                       f"outputs but got {t._dtype}")
                g = F.ops.ones(t._shape, t._dtype, t._storage.device)
        else:
            if not isinstance(g, Tensor):
                raise TypeError(f"gradients can be either Tensors or None, but got "
                                f"{type(g).__name__}")
            if g._shape != t._shape:
                raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of "
                                   f"{F.ops.size_repr(g._shape)} and output[{i}] has a shape of "
                                   f"{F.ops.size_repr(t._shape)}.")
            if g._dtype is not t._dtype:
                g = F.ops.cast(g, t._dtype)      # as torch: the gradient takes the output's dtype
        out.append(g)
    return out


def _check_roots(tensors):
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"backward expects Tensors, got {type(t).__name__} at position {i}")
        if not t._requires_grad:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have a "
                               f"grad_fn")


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False,
             grad_variables=None, inputs=None):
    """Compute the gradients of `tensors` with respect to the graph's leaves and add them into
    their `.grad` (only into `inputs`' when given).

    >>> import clgrad
    >>> x = clgrad.tensor([1.0, 2.0], requires_grad=True)
    >>> clgrad.autograd.backward([(x * x).sum()])
    >>> x.grad.tolist()
    [2.0, 4.0]
    """
    if grad_variables is not None:
        grad_tensors = grad_variables
    tensors = _as_tuple(tensors)
    if not tensors:
        raise RuntimeError("backward() got no tensors to differentiate")
    grads = _as_tuple(grad_tensors) if grad_tensors is not None else (None,) * len(tensors)
    if retain_graph is None:
        retain_graph = create_graph
    inputs = _as_tuple(inputs)
    _check_roots(tensors)
    grads = _root_grads(tensors, grads, create_graph, "backward")
    targets = None
    if inputs:
        _check_inputs(inputs, "backward")
        targets = inputs
    _run(tensors, grads, retain_graph, create_graph, targets, accumulate=True)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         only_inputs=True, allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """Return the gradients of `outputs` with respect to `inputs` (without touching `.grad`).

    >>> import clgrad
    >>> x = clgrad.tensor([3.0], requires_grad=True)
    >>> (g,) = clgrad.autograd.grad((x ** 2).sum(), x)
    >>> g.item()
    6.0
    """
    if is_grads_batched:
        raise NotImplementedError("is_grads_batched needs vmap, which clgrad does not have")
    if materialize_grads and allow_unused is False:
        raise ValueError("Expected allow_unused to be True or not passed when materialize_grads="
                         "True, but got: allow_unused=False.")
    if allow_unused is None:
        allow_unused = materialize_grads
    single_input = isinstance(inputs, Tensor)
    outputs = _as_tuple(outputs)
    inputs = _as_tuple(inputs)
    _check_inputs(inputs, "grad")
    grads = _as_tuple(grad_outputs) if grad_outputs is not None else (None,) * len(outputs)
    if retain_graph is None:
        retain_graph = create_graph
    _check_roots(outputs)
    grads = _root_grads(outputs, grads, create_graph, "grad")
    result = _run(outputs, grads, retain_graph, create_graph, inputs, accumulate=False)
    out = []
    for i, (t, g) in enumerate(zip(inputs, result)):
        if g is None:
            if materialize_grads:
                g = F.ops.zeros(*(t.node._out_meta[t.output_nr] if isinstance(t, GradientEdge)
                                  else (t._shape, t._dtype, t._storage.device)))
            elif not allow_unused:
                raise RuntimeError("One of the differentiated Tensors appears to not have been used "
                                   "in the graph. Set allow_unused=True if this is the desired "
                                   "behavior.")
        out.append(g)
    del single_input
    return tuple(out)


def _check_inputs(inputs, what):
    for t in inputs:
        if isinstance(t, GradientEdge):
            continue
        if not isinstance(t, Tensor):
            raise TypeError(f"{what}() expects Tensors or GradientEdges as inputs, got "
                            f"{type(t).__name__}")
        if not t._requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")


def _target_edge(t):
    return (t.node, t.output_nr) if isinstance(t, GradientEdge) else F._edge(t)


def _add(a, b):
    if a is None:
        return b
    if b is None:
        return a
    return F.ops.add(a, b)


class _Run:
    """What hooks may ask about the backward pass under way (graph.register_multi_grad_hook):
    its id, the nodes it reaches and, when only some inputs are wanted, those it runs."""

    def __init__(self, seen, needed, capture):
        self.id = next(_task_ids)
        self.seen, self.needed, self.capture = seen, needed, capture

    def will_execute(self, node):
        if node not in self.seen:
            return False
        if self.needed is None or node in self.needed:
            return True
        return any(n is node for n, _ in self.capture)


_task_ids = itertools.count()
_tasks = threading.local()          # .stack: the _Runs under way in this thread (reentrant)


def current_graph_task():
    """The innermost backward pass under way in this thread, or None."""
    stack = getattr(_tasks, "stack", None)
    return stack[-1] if stack else None


# How many backward passes have run (a compiled function asks whether its call ran one).
RUNS = [0]


def _run(roots, root_grads, keep_graph, create_graph, targets, accumulate):
    RUNS[0] += 1
    # A burst of held-back launches ends where a backward pass starts, so that the bursts of a
    # training step that never waits for its device (no .item(), no new batch copied in) fall
    # alike in every step: else they drift along its launches from step to step, and eager
    # fusion (clgrad/kernels/fused.py) meets new runs and builds their kernels, at ~100 ms each,
    # for hundreds of steps (the W4 loop without a sync: 93 builds in 800 steps, against 7)
    for t in roots:
        dev = t._storage.device
        if dev._deferred:
            dev.flush()
    root_edges = [F._edge(t) for t in roots]
    # -- dependencies -------------------------------------------------------------------------
    deps = {}
    seen = set()
    stack = []
    for node, _ in root_edges:
        if node is not None and node not in seen:
            seen.add(node)
            stack.append(node)
    while stack:
        node = stack.pop()
        for nxt, _ in node.next_functions:
            if nxt is None:
                continue
            deps[nxt] = deps.get(nxt, 0) + 1
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    # -- what to run when only some inputs are wanted -------------------------------------------
    capture = None          # {(node, nr): index into targets}
    needed = None
    if targets is not None:
        capture = {}
        target_nodes = set()
        for i, t in enumerate(targets):
            node, nr = _target_edge(t)
            capture.setdefault((node, nr), []).append(i)
            target_nodes.add(node)
        needed = _needed(seen, target_nodes, capture, accumulate)
    captured = [None] * (len(targets) if targets is not None else 0)
    # -- run -----------------------------------------------------------------------------------
    buffers = {}
    ready = []
    counter = 0
    for (node, nr), g in zip(root_edges, root_grads):
        if node is None:
            continue
        buf = buffers.get(node)
        if buf is None:
            buf = buffers[node] = [None] * max(node._num_outputs, nr + 1)
        buf[nr] = _add(buf[nr], g)
    for node in list(buffers):
        if deps.get(node, 0) == 0:
            heapq.heappush(ready, (-node._sequence_nr, counter, node))
            counter += 1
    stack = getattr(_tasks, "stack", None)
    if stack is None:
        stack = _tasks.stack = []
    stack.append(_Run(seen, needed, capture))
    prev_mode = _state.grad_enabled
    _state.grad_enabled = create_graph
    # nodes with a direct backward (see Node._direct_backward) skip _call when nothing could
    # intervene: no inputs= to capture, no profiler or anomaly mode, no hooks on the node
    plain = capture is None and F.hooks.node is None
    heappop, heappush = heapq.heappop, heapq.heappush
    node = None                 # the next node when it is the only one ready (a chain)
    try:
        while node is not None or ready:
            if node is None:
                _, _, node = heappop(ready)
            grads = buffers.pop(node, None)
            if grads is None:
                grads = [None] * node._num_outputs
            direct = node._direct_backward
            if direct is not None and plain and grads[0] is not None and \
                    node._tensor_pre_hooks is None and node._retain is None and \
                    node._pre_hooks is None and node._post_hooks is None:
                outs = direct(node, grads[0])
                if not keep_graph:
                    node._release()
            else:
                outs = _call(node, grads, keep_graph, create_graph, capture, captured, needed,
                             accumulate, targets)
            nf = node.next_functions
            node = None
            for i, (nxt, nr) in enumerate(nf):
                if nxt is None:
                    continue
                g = outs[i] if outs is not None and i < len(outs) else None
                if g is not None:
                    buf = buffers.get(nxt)
                    if buf is None:
                        buf = buffers[nxt] = [None] * max(nxt._num_outputs, nr + 1)
                    if len(buf) <= nr:
                        buf.extend([None] * (nr + 1 - len(buf)))
                    buf[nr] = g if buf[nr] is None else F.ops.add(buf[nr], g)
                d = deps[nxt] - 1
                deps[nxt] = d
                if d == 0:
                    if node is not None:
                        heappush(ready, (-node._sequence_nr, counter, node))
                        counter += 1
                    node = nxt
            if node is not None and ready:
                # a chain skips the heap only while it is the one node ready: otherwise the
                # order is the sequence numbers'
                heappush(ready, (-node._sequence_nr, counter, node))
                counter += 1
                node = None
            outs = grads = g = None     # so that AccumulateGrad can tell whether it owns them
    finally:
        _state.grad_enabled = prev_mode
        stack.pop()
    return captured


def _needed(nodes, target_nodes, capture, accumulate):
    """Nodes whose execution leads to a wanted gradient."""
    memo = {}

    def visit(start):
        # iterative post-order DFS
        stack = [(start, iter(start.next_functions))]
        on_path = {start}
        while stack:
            node, it = stack[-1]
            advanced = False
            for nxt, _ in it:
                if nxt is None:
                    continue
                if nxt in memo:
                    continue
                if nxt in on_path:
                    continue
                on_path.add(nxt)
                stack.append((nxt, iter(nxt.next_functions)))
                advanced = True
                break
            if advanced:
                continue
            stack.pop()
            res = any(memo.get(n, False) for n, _ in node.next_functions if n is not None)
            if node in target_nodes and isinstance(node, AccumulateGrad):
                res = True
            memo[node] = res or any(
                (n, nr) in capture for n, nr in node.next_functions if n is not None)
        return memo[start]

    for n in nodes:
        if n not in memo:
            visit(n)
    return {n for n, v in memo.items() if v}


def _call(node, grads, keep_graph, create_graph, capture, captured, needed, accumulate, targets):
    if needed is not None and node not in needed and \
            not any((node, nr) in capture for nr in range(len(grads))):
        return None         # off the path to the wanted inputs: not run, no hooks either
    # 1. tensor pre-hooks (hooks registered on the tensors this node produced)
    if node._tensor_pre_hooks:
        for nr, hooks in node._tensor_pre_hooks.items():
            if nr < len(grads) and grads[nr] is not None:
                for h in list(hooks.values()):
                    r = h(grads[nr])
                    if r is not None:
                        grads[nr] = r
    if isinstance(node, AccumulateGrad):
        var = node.variable
        if var._hooks:
            g = grads[0]
            if g is not None:
                for h in list(var._hooks.values()):
                    r = h(g)
                    if r is not None:
                        g = r
                grads[0] = g
    # 2. retain_grad, as torch runs it: after the tensor hooks, before the node's pre-hooks
    if node._retain:
        for nr, ref in node._retain.items():
            t = ref()
            if t is not None and nr < len(grads) and grads[nr] is not None:
                g = grads[nr]
                if t._grad is None:
                    t._grad = g if create_graph else _detached_copy(g)
                else:
                    t._grad = F.ops.add(t._grad, g)
    # capture for grad() / backward(inputs=...)
    if capture is not None:
        for nr in range(len(grads)):
            idx = capture.get((node, nr))
            if idx is not None:
                for i in idx:
                    g = grads[nr]
                    if accumulate:
                        t = targets[i]
                        if isinstance(t, GradientEdge):
                            continue            # a leaf's edge accumulates when its node runs
                        if t._grad_fn is not None and g is not None:   # non-leaf input
                            _accumulate_into(t, g, create_graph)
                    else:
                        captured[i] = g
        if node not in needed:
            return None
        if not accumulate and isinstance(node, AccumulateGrad):
            return None
    if grads.count(None) == len(grads) and not node._handles_none:
        return None
    # 3. node pre-hooks
    if node._pre_hooks:
        for h in list(node._pre_hooks.values()):
            r = h(tuple(grads))
            if r is not None:
                grads = list(r)
    # 4. the node
    if isinstance(node, AccumulateGrad):
        var = node.variable
        if grads[0] is not None:
            _accumulate_into(var, grads[0], create_graph)
            if var._post_acc_hooks:
                for h in list(var._post_acc_hooks.values()):
                    h(var)
        outs = ()
    else:
        if F.hooks.node is None:
            outs = run_node(node, grads)
        else:                               # profiler, anomaly mode
            outs = F.hooks.node(node, grads)
        if not keep_graph:
            node._release()
    # 5. node post-hooks
    if node._post_hooks:
        for h in list(node._post_hooks.values()):
            r = h(tuple(outs) if outs is not None else (), tuple(grads))
            if r is not None:
                outs = tuple(r)
    return outs


def _detached_copy(g):
    """A gradient fit to be stored in .grad: contiguous, owning its memory."""
    if g._grad_fn is not None:
        g = F.ops.detach(g)
    return F.ops.clone(g)


# references to a gradient the engine itself holds when it reaches AccumulateGrad (the node's
# input list, this function's argument, getrefcount's argument); one more means someone else
# (the caller, a saved tensor) holds it too, and .grad must get a copy
_STEAL_REFS = 3


def _accumulate_into(var, g, create_graph):
    old = var._grad
    if old is None:
        if create_graph:
            var._grad = g
        elif g._grad_fn is None and g._base is None and g._contig and \
                sys.getrefcount(g._storage) <= 2 and sys.getrefcount(g) <= _STEAL_REFS and \
                g._storage.nbytes == g.numel() * g._dtype.itemsize:
            var._grad = g                     # a fresh buffer nobody else holds: keep it
        else:
            var._grad = _detached_copy(g)
    elif create_graph or _state.grad_enabled:
        var._grad = F.ops.add(old, g)
    else:
        F.ops.add_inplace_raw(old, g)
