"""`clgrad.compile`: a function's device work recorded once and replayed (runtime/recording.py).

A compiled function keeps variants, one per *signature* of a call: the layout of its tensor
arguments (shape, strides, offset, dtype, device, requires_grad and which of them share storage),
its other arguments by value, grad and autocast modes, the default dtype and the training flags
of the modules it uses. A variant's first call runs eagerly (it creates lazily made state:
optimizer moments, gradients); its second records; later calls replay while the *state* the
recording assumed still holds: the identity of the parameters, buffers and gradients of the
modules and optimizers the function uses, a GradScaler's scale, and the plain Python values of
the globals and closure variables the function reads, of its modules' attributes and of the
attributes its code reads from other objects it holds. When the
state changed, the variant records again; after `config.cache_size_limit` recordings the
function runs eagerly, with one warning that says why. The state itself is found again when
what it was found from is given another object (a parameter, a layer, a hook, a global tensor).
A call whose recording breaks (a host read) runs eagerly from then on, with the modules it calls
compiled on their own (`_split_call`). A `.item()` whose value goes straight into the return value
(`return loss.item()`) does not break it: it is recorded as a read, which every replay makes again
(`_reads.py`).
"""
import copy
import dis
import operator
import types
import warnings
import weakref
from itertools import chain, count

from .. import _grad_state, dtypes
from ..autograd import engine
from ..autograd.engine import backward as autograd_backward, grad as autograd_grad
from ..autograd import node as _node
from ..autograd.function import Function
from ..amp import autocast_mode
from ..amp.grad_scaler import GradScaler
from ..nn.modules.module import Module
from ..optim.optimizer import Optimizer
from ..runtime.recording import Recording, active_recording
from ..tensor import Tensor, alias, empty_tensor
from ..utils._pytree import tree_flatten, tree_unflatten
from ..kernels.copy import copy_into, fill_raw
from . import config
from ._reads import item_places, returned_reads

_ALL = weakref.WeakSet()            # every CompiledFunction, for reset()
_disabled = [0]                     # > 0 inside clgrad.compiler.disable


class CompileError(RuntimeError):
    """A function compiled with fullgraph=True did something a recording cannot replay."""


_PLAIN = (int, float, bool, str, bytes, type(None), complex)
MAX_WATCHED = 1024


def _plain(value):
    """Whether a value is guarded by value (a number, a string, a tuple of them)."""
    return isinstance(value, _PLAIN) or type(value) is tuple and \
        all(isinstance(e, _PLAIN) for e in value)


def _items(container):
    """A list's items, or a dict's keys and values, in order; of a container of more than
    MAX_WATCHED items (a vocabulary), only its length (a check per call must stay cheap)."""
    if len(container) > MAX_WATCHED:
        return [len(container)]
    if type(container) is list:
        return list(container)
    return [x for item in container.items() for x in item]


def _same(a, b):
    """Whether b stands for a: the same object, or a plain value equal to it."""
    return a is b or (type(a) is type(b) and _plain(a) and a == b)


def _bindable(t):
    """Whether a replay can pass t's buffer where the recording passed another: a contiguous
    tensor at the start of its storage (a batch the loader made), or one autograd must see.
    Others (a slice of a larger tensor) are copied into a staging tensor of the recording."""
    return (t._contig and t._offset == 0) or t.requires_grad


def _tensor_key(t, storages):
    s = t._storage
    share = storages.setdefault(id(s), len(storages))      # which arguments share memory
    if not _bindable(t):
        return (t._shape, t._dtype, s.device, "staged", share)
    return (t._shape, t._strides, t._offset, t._dtype, s.device, t.requires_grad, share)


def _substitute(obj, new):
    """obj (a pytree) with the tensors whose id is in `new` replaced."""
    flat, spec = tree_flatten(obj)
    return tree_unflatten([new.get(id(x), x) if isinstance(x, Tensor) else x for x in flat], spec)


def _signature(args, kwargs):
    """The tensor arguments, and the key of a call: the structure of its arguments (a pytree),
    its other arguments by value (numbers, strings) or identity (modules, optimizers), its
    tensors' layouts, and the modes it runs under."""
    flat, spec = tree_flatten((args, kwargs))
    leaves = [x for x in flat if isinstance(x, Tensor)]
    values = tuple(None if isinstance(x, Tensor) else (type(x), x) if isinstance(x, _PLAIN)
                   else id(x) for x in flat)
    storages = {}
    ids = {}                # which arguments are the same tensor (its gradient is one)
    tkeys = tuple((_tensor_key(t, storages), ids.setdefault(id(t), len(ids))) for t in leaves)
    modes = (_grad_state.state.grad_enabled, _grad_state.state.inference,
             tuple(autocast_mode._state.stack), dtypes.get_default_dtype())
    return leaves, (spec, values, tkeys, modes)


def _codes(code):
    """A code object and those nested in it (a nested function's, a comprehension's)."""
    yield code
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            yield from _codes(c)


def _global_names(code):
    """The globals a code object reads (co_names also holds attribute names: `opt.step` must not
    make a global `step` a guarded value), nested functions' included."""
    return sorted({i.argval for c in _codes(code) for i in dis.get_instructions(c)
                   if i.opname in ("LOAD_GLOBAL", "LOAD_NAME")})


def _all_names(code):
    """Every name a code object and its nested ones use (globals and attributes alike)."""
    return set().union(*(c.co_names for c in _codes(code)))


_SERIALS = count()


class _State:
    """What a function uses besides its arguments (found from its code): the modules,
    optimizers, scalers and tensors it names, and the plain values of the globals and closure
    variables it reads and of its modules' attributes. `key()` is what a replay must find
    unchanged; `changed()` says when the state must be found again."""

    def __init__(self, fn, args, kwargs):
        self.modules, self.optimizers, self.scalers, self.tensors = [], [], [], []
        self.names = []             # (namespace dict or cell, name) of plain values
        self.holders = []           # (namespace dict or cell, name) of the tensors, modules,
        #                             optimizers and scalers found there: guarded by identity
        self.containers = []        # lists and dicts it reaches: their items, plain ones by
        #                             value, others by identity
        seen = set()

        def visit(obj, depth, arg=False):
            # arg: reached from an argument, whose tensors are the call's (its leaves), not state
            if id(obj) in seen or depth > 2:
                return
            seen.add(id(obj))
            if isinstance(obj, Module):
                self.modules.extend(obj.modules())
            elif isinstance(obj, Optimizer):
                self.optimizers.append(obj)
            elif isinstance(obj, GradScaler):
                self.scalers.append(obj)
            elif isinstance(obj, Tensor):
                if not arg:
                    self.tensors.append(obj)
            elif isinstance(obj, types.MethodType):
                visit(obj.__self__, depth)
                visit(obj.__func__, depth)
            elif isinstance(obj, types.FunctionType):
                g = obj.__globals__
                for name in _global_names(obj.__code__):
                    if name in g:
                        v = g[name]
                        if isinstance(v, _PLAIN):
                            self.names.append((g, name))
                        else:
                            held(g, name, v)
                            visit(v, depth + 1)
                for cell in obj.__closure__ or ():
                    try:
                        v = cell.cell_contents
                    except ValueError:
                        continue
                    if isinstance(v, _PLAIN):
                        self.names.append((cell, None))
                    else:
                        held(cell, None, v)
                        visit(v, depth + 1)
            elif isinstance(obj, (list, tuple)):
                if type(obj) is list and not arg:
                    self.containers.append(obj)     # layers in a list, scales[0]
                for v in obj:
                    visit(v, depth + 1, arg)
            elif type(obj) is dict and not arg:
                self.containers.append(obj)         # config["lr"]
                for v in obj.values():
                    visit(v, depth + 1)
            elif hasattr(obj, "__dict__") and not isinstance(obj, type) and depth < 2:
                attrs = vars(obj)
                for name, v in list(attrs.items()):     # a trainer object holding the model
                    if isinstance(v, (Module, Optimizer, GradScaler, Tensor)):
                        held(attrs, name, v)
                        visit(v, depth + 1)
                    elif name in attr_names and _plain(v) and \
                            not isinstance(obj, types.ModuleType):
                        self.names.append((attrs, name))    # a config's value, a scale

        # the attribute names the function's own code reads (`self.scale`, `cfg.lr`): those of
        # the other objects it holds are guarded by value (a counter it never reads is not)
        code = getattr(getattr(fn, "__func__", fn), "__code__", None)
        attr_names = _all_names(code) if code is not None else set()

        def held(ns, name, v):
            if isinstance(v, (Module, Optimizer, GradScaler, Tensor)):
                self.holders.append((ns, name))

        visit(fn, 0)
        for a in list(args) + list(kwargs.values()):
            if not isinstance(a, Tensor):
                visit(a, 1, True)
        mods, seen = [], set()
        for m in self.modules:
            if id(m) not in seen:
                seen.add(id(m))
                mods.append(m)
        self.modules = mods
        for m in mods:          # a dropout's p, a layer's scale: what its forward may read
            attrs = vars(m)
            self.names.extend((attrs, name) for name, value in attrs.items()
                              if name != "training" and _plain(value))
            # a tensor kept as a plain attribute (not a buffer): a mask, a table
            self.holders.extend((attrs, name) for name, value in attrs.items()
                                if isinstance(value, Tensor))
            self.tensors.extend(value for value in attrs.values() if isinstance(value, Tensor))
        tensors = []
        for m in mods:
            tensors.extend(m._parameters.values())
            tensors.extend(m._buffers.values())
        for opt in self.optimizers:
            for group in opt.param_groups:
                tensors.extend(group["params"])
        self.tensors = [t for t in dict.fromkeys(tensors + self.tensors) if t is not None]
        self.serial = next(_SERIALS)       # a state found again invalidates the recordings
        self.dicts = [d for m in mods for d in (m._parameters, m._buffers, m._modules,
                                                m._forward_pre_hooks, m._forward_hooks,
                                                m._backward_pre_hooks, m._backward_hooks)]
        self.layout = self.structure()
        self.contents = [_items(c) for c in self.containers]

    def structure(self):
        """What this state was found from: the objects the function's globals, closures and held
        objects name, each module's parameters, buffers, children and hooks, each optimizer's
        parameters. When one of them is another object (a parameter or a layer replaced, a
        global tensor assigned anew), the state is found again (`changed`)."""
        s = []
        for ns, name in self.holders:
            try:
                s.append(ns.cell_contents if name is None else ns.get(name))
            except ValueError:                  # an emptied cell
                s.append(None)
        s.extend(chain.from_iterable(map(dict.values, self.dicts)))
        for opt in self.optimizers:
            for group in opt.param_groups:
                s.extend(group["params"])
        return s

    def changed(self):
        now = self.structure()
        if len(now) != len(self.layout) or not all(map(operator.is_, now, self.layout)):
            return True
        for c, was in zip(self.containers, self.contents):
            items = _items(c)
            if len(items) != len(was) or not all(map(_same, items, was)):
                return True
        return False

    def grads_used(self, rec):
        """Indices of the tensors whose gradient's buffer the recording uses (a step that runs
        backward inside writes them): their .grad must stay the same tensor."""
        return frozenset(i for i, t in enumerate(self.tensors)
                         if t.grad is not None and rec.uses(t.grad._storage.buf))

    def key(self, grads=frozenset()):
        k = [self.serial]
        k.extend(m.training for m in self.modules)
        for i, t in enumerate(self.tensors):
            g = t.grad if i in grads else None
            k.append((id(t), id(t._storage), t._offset, t._shape, t.requires_grad,
                      None if g is None else (id(g), id(g._storage))))
        for s in self.scalers:
            k.append((s._enabled, s._scale))
        for ns, name in self.names:
            k.append(ns.cell_contents if name is None else ns.get(name))
        return tuple(k)


class _Variant:
    """One signature's recording and what a replay needs around it."""

    def __init__(self):
        self.calls = 0
        self.recordings = 0
        self.rec = None
        self.state = None
        self.why_eager = None       # set when this variant runs eagerly from now on
        self.split = False          # ... with the modules it calls compiled on their own
        self.inputs = []            # per tensor argument: (slots, buffer bound last)
        self.outputs = None         # how to build the return value
        self.read_args = []         # (ItemRead, argument index): returned reads of arguments
        self.staged = []            # per tensor argument: its staging tensor, or None
        self.written = []           # arguments whose staging tensor the function changes
        self.made_grads = []        # (tensor, the .grad the recorded call gave it from none)
        self.grads = frozenset()    # state tensors whose .grad the recording uses
        # outputs differentiated outside (a module's forward): see _Call
        self.joint = None           # (output positions, differentiable inputs' places)
        self.brec = None            # the recording of their backward
        self.bstage = []            # staging tensors of the output gradients it reads
        self.bouts = []             # the gradients it writes (aliases), None where unused
        self.captured = []          # the recorded call's argument buffers
        self.bslots = []            # where the backward recording passes them
        self.epoch = 0              # forward calls so far (a backward must match its own)
        self.last = None            # weak reference to the latest _Call


def _name(fn):
    """What warnings call a compiled function: its name, or its module's class name."""
    owner = getattr(fn, "__self__", None)
    if isinstance(fn, Module) or isinstance(owner, Module) and \
            getattr(fn, "__name__", "") == "_call_uncompiled":
        return type(owner if owner is not None else fn).__name__
    return getattr(fn, "__name__", type(fn).__name__)


class CompiledFunction:
    """What `clgrad.compile(fn)` returns: call it as fn (see the module text)."""

    def __init__(self, fn, fullgraph=False, mode=None):
        self._fn = fn
        self.fullgraph = fullgraph
        self.mode = mode
        self._variants = {}
        self._state = None
        self._why_eager = None
        self._parts = {}            # id(module) -> (module, its calls compiled): _split_call
        self._split = None          # (state, the parts of its modules) last found
        self.stats = {"eager_calls": 0, "recordings": 0, "replays": 0}
        _ALL.add(self)
        try:
            self.__wrapped__ = fn
            self.__name__ = _name(fn)
            self.__doc__ = getattr(fn, "__doc__", None)
        except AttributeError:
            pass

    def reset(self):
        """Drop every recording (they give their buffers back)."""
        for v in self._variants.values():
            if v.rec is not None:
                v.rec.release()
        for _, part in self._parts.values():
            part.reset()
        self._variants = {}
        self._parts, self._split = {}, None
        self._state = None
        self._why_eager = None

    def _eager(self, args, kwargs):
        self.stats["eager_calls"] += 1
        return self._fn(*args, **kwargs)

    def _split_parts(self):
        """The modules a call runs that are not inside another it runs (a compiled module's
        children, not itself), each with a CompiledFunction of its calls, made once."""
        if self._split is not None and self._split[0] is self._state:
            return self._split[1]
        fn = self._fn
        own = fn if isinstance(fn, Module) else getattr(fn, "__self__", None)
        mods = self._state.modules if self._state is not None else []
        inner = {id(s) for m in mods for s in m.modules() if s is not m}
        parts = {}              # (a module no longer used lets its recordings go)
        for m in chain.from_iterable(m.children() if m is own else [m]
                                     for m in mods if id(m) not in inner):
            if id(m) in parts:
                continue
            part = self._parts.get(id(m))
            if part is None or part[0] is not m:
                part = (m, CompiledFunction(m._call_uncompiled, mode=self.mode))
            parts[id(m)] = part
        self._parts = parts
        self._split = (self._state, list(parts.values()))     # found again with the state
        return self._split[1]

    def _split_call(self, args, kwargs):
        # A call whose recording broke (a host read): it runs eagerly, but each module it calls
        # goes through a compiled function of its own, so the work on either side of the read
        # still replays (torch's graph break, made at module boundaries: clgrad records device
        # work and cannot resume Python in the middle of a function). A module compiled on its
        # own already (Module.compile) keeps its own.
        self.stats["eager_calls"] += 1
        installed = []
        for m, compiled in self._split_parts():
            if "_compiled_call" not in m.__dict__:
                m.__dict__["_compiled_call"] = compiled
                installed.append(m)
        try:
            return self._fn(*args, **kwargs)
        finally:
            for m in installed:
                m.__dict__.pop("_compiled_call", None)

    def _warm_up(self, v, args, kwargs, leaves):
        # An argument with a history enters a recording as a leaf of its own (see _record): a
        # function that changes one in place (an in-place activation on its input) would fail
        # there, and its result could not take the argument's history along; it stays eager.
        versions = [t._vc[0] for t in leaves]
        out = self._eager(args, kwargs)
        changed = [t for t, version in zip(leaves, versions) if t._vc[0] != version]
        with_history = [t for t in changed if t.requires_grad and t.grad_fn is not None]
        if with_history:
            self._give_up(v, f"it changes in place an argument that requires grad "
                             f"(shape {list(with_history[0]._shape)}) and has a history")
        # A replay copies a slice argument into a staging tensor (see _bindable): another
        # argument on the same memory would no longer see what is written through it.
        for t in changed:
            shared = [u for u in leaves if u._storage is t._storage and u is not t]
            if shared and not all(map(_bindable, shared + [t])):
                self._give_up(v, f"it changes in place an argument that shares memory with "
                                 f"another (shapes {list(t._shape)} and "
                                 f"{list(shared[0]._shape)}), and a replay copies slices")
                break
        return out

    def _give_up(self, variant, why):
        variant.why_eager = why
        if self.fullgraph:
            raise CompileError(f"clgrad.compile(fullgraph=True) of {self.__name__}: {why}")
        warnings.warn(f"clgrad.compile: {self.__name__} runs eagerly from now on for these "
                      f"arguments: {why}", RuntimeWarning, stacklevel=3)

    def __reduce__(self):          # pickled and deep-copied without its recordings
        return (CompiledFunction, (self._fn, self.fullgraph, self.mode))

    def __deepcopy__(self, memo):
        return CompiledFunction(copy.deepcopy(self._fn, memo), self.fullgraph, self.mode)

    def __get__(self, obj, objtype=None):       # a compiled method binds as a function does
        return self if obj is None else types.MethodType(self, obj)

    def __call__(self, *args, **kwargs):
        if _disabled[0] or self._why_eager or active_recording() is not None or \
                _node.saved_hooks_stack:
            # inside another function's capture, the work is that capture's to record; saved-
            # tensor hooks (non-reentrant checkpointing) must see every tensor a call saves
            return self._fn(*args, **kwargs)
        leaves, key = _signature(args, kwargs)
        if self._state is None or self._state.changed():
            self._state = _State(self._fn, args, kwargs)
        # train and eval are variants of their own: a loop that alternates them replays both
        # (as one recording they would record again at every switch, then give up)
        key = (key, tuple(m.training for m in self._state.modules))
        v = self._variants.get(key)
        if v is None:
            if len(self._variants) >= config.cache_size_limit:
                self._why_eager = (f"{len(self._variants)} different argument signatures "
                                   f"(config.cache_size_limit)")
                self._give_up(_Variant(), self._why_eager)
                return self._eager(args, kwargs)
            v = self._variants[key] = _Variant()
        if v.why_eager:
            return self._split_call(args, kwargs) if v.split else self._eager(args, kwargs)
        if v.rec is not None and v.state == self._state.key(v.grads) and v.rec.valid() and \
                all(t.grad is None for t, _ in v.made_grads):
            if v.joint is None:
                return self._replay(v, leaves)
            last = v.last() if v.last is not None else None
            if last is not None and not last.done:
                # the last call's backward has not run: a replay would overwrite what it reads
                return self._eager(args, kwargs)
            if v.brec is not None:
                return self._replay(v, leaves)
            # the recorded call's outputs were dropped before their backward: record again
        v.calls += 1
        if v.calls == 1:                             # warm-up: lazily made state appears
            return self._warm_up(v, args, kwargs, leaves)
        if v.recordings >= config.cache_size_limit:
            self._give_up(v, f"recorded {v.recordings} times: what it uses keeps changing "
                             f"between calls (parameters, gradients, globals)")
            return self._eager(args, kwargs)
        return self._record(v, args, kwargs, leaves)

    # -- recording ------------------------------------------------------------------------------
    def _record(self, v, args, kwargs, leaves):
        if v.rec is not None:
            v.rec.release()
            v.rec = None
        v.recordings += 1
        self.stats["recordings"] += 1
        staged = {}
        for t in leaves:
            if not _bindable(t) and id(t) not in staged:
                c = empty_tensor(t._shape, t._dtype, t._storage.device)
                copy_into(c, t)
                staged[id(t)] = c
        # An argument with a history (a hidden state from an earlier call) enters as a leaf of
        # its own: the recorded backward then stops at this call's arguments, as a node's must
        # (through the history it would reach the parameters a second time).
        cut = {}
        for t in leaves:
            if t.requires_grad and t.grad_fn is not None and id(t) not in cut:
                cut[id(t)] = alias(t).requires_grad_(True)
        if staged or cut:
            args, kwargs = _substitute((args, kwargs), {**staged, **cut})
        v.staged = [staged.get(id(t)) for t in leaves]
        versions = [None if st is None else st._vc[0] for st in v.staged]
        no_grad_yet = [i for i, t in enumerate(self._state.tensors) if t.grad is None]
        runs = engine.RUNS[0]
        rec = Recording()
        rec.item_reads = returned_reads(self._fn)
        with rec:
            out = self._fn(*args, **kwargs)
        # a slice argument the function changes in place gets its staging tensor's values back
        # after the call and after every replay
        v.written = [i for i, st in enumerate(v.staged)
                     if st is not None and st._vc[0] != versions[i]]
        for i in v.written:
            copy_into(leaves[i], v.staged[i])
        backward_ran = engine.RUNS[0] != runs
        if cut and backward_ran:
            # a backward inside the function reached an argument: finish it into the history
            # as eager would have, and run this signature eagerly from now on
            for t in leaves:
                leaf = cut.get(id(t))
                if leaf is not None and leaf.grad is not None:
                    autograd_backward([t], [leaf.grad])
                    cut[id(t)] = None
            rec.release()
            self._give_up(v, "a backward inside the function reached an argument's history")
            return out
        v.joint, v.brec = None, None
        if rec.broken:
            v.split = bool(self._split_parts())
            self._give_up(v, rec.broken + " (return the tensor and read it outside the "
                             "compiled function, or return the value read as it is: "
                             "`return loss.item()` replays)" +
                          ("; the modules it calls are compiled on their own" if v.split
                           else ""))
            return out
        flat, spec = tree_flatten(out)
        reads = item_places(flat, rec.items) if rec.items else []
        if reads is None:
            rec.release()
            v.split = bool(self._split_parts())
            self._give_up(v, "a value read with .item() that the function changes or keeps "
                             "before it returns (return the read value itself, or the tensor)" +
                          ("; the modules it calls are compiled on their own" if v.split
                           else ""))
            return out
        read_at = {i for i, _ in reads}
        out_leaves = [x for x in flat if isinstance(x, Tensor)]
        spec = (spec, [None if isinstance(x, Tensor) or i in read_at else x
                       for i, x in enumerate(flat)],
                [i for i, x in enumerate(flat) if isinstance(x, Tensor)], reads)
        state = {id(t) for t in self._state.tensors}
        # an output that is an argument, or a view of one, is made from the next call's
        # argument (the recording never writes it; a replay re-binds the argument)
        ident, viewed = {}, {}
        for i, (st, t) in enumerate(zip(v.staged, leaves)):
            if st is None:
                ident.setdefault(id(t), i)
                if id(t) in cut:
                    ident.setdefault(id(cut[id(t)]), i)
                viewed.setdefault(id(t._storage), i)
        orig = leaves
        leaves = [st if st is not None else cut.get(id(t), t) for st, t in zip(v.staged, leaves)]
        outs = []
        joint = []
        for k, t in enumerate(out_leaves):
            if id(t) in ident:
                outs.append(("arg", ident[id(t)]))
            elif id(t._storage) in viewed:
                outs.append(("view", (viewed[id(t._storage)], t._shape, t._strides, t._offset)))
            elif t.requires_grad and t.grad_fn is not None and not backward_ran:
                joint.append(k)      # differentiated outside: its copy gets a _Call's node
                outs.append(("copy", (alias(t), False)))
            elif id(t) in state:
                outs.append(("same", t))
            else:
                # a step's loss: its graph was used inside, the copy has none (as detach())
                outs.append(("copy", (alias(t), t.requires_grad and t.grad_fn is None)))
        v.outputs = (spec, outs)
        v.inputs = [(rec.slots_of(t._storage.buf), t._storage.buf) for t in leaves]
        # a returned read of an argument (x.item()) reads the next call's argument
        arg_of = {id(t._storage.buf): i for i, (st, t) in enumerate(zip(v.staged, leaves))
                  if st is None}
        v.read_args = [(read, arg_of[id(read.buf)]) for _, read in reads
                       if id(read.buf) in arg_of]
        v.captured = [t._storage.buf for t in leaves]
        v.rec = rec
        # Gradients the call made (none at its start: a zero_grad(set_to_none=True) before
        # it): a replay needs them absent at its start too, and gives them back after it. Others
        # it writes must stay the same tensors.
        used = self._state.grads_used(rec)
        tensors = self._state.tensors
        v.made_grads = [(tensors[i], tensors[i].grad) for i in no_grad_yet if i in used]
        v.grads = used.difference(no_grad_yet)
        v.state = self._state.key(v.grads)
        if not joint:
            return _outputs(v, orig)     # copies: each replay overwrites the recording's buffers
        # a tensor passed more than once is one input of the joint node (its gradient counted
        # once); the signature holds which arguments are the same tensor
        first = {}
        for i, t in enumerate(leaves):
            first.setdefault(id(t), i)
        places = [("arg", i) for i, t in enumerate(leaves)
                  if t.requires_grad and first[id(t)] == i] + \
            [("state", j) for j, t in enumerate(self._state.tensors) if t.requires_grad]
        v.joint = (joint, places)
        eager = ([out_leaves[k] for k in joint], self._diff_inputs(v, leaves))
        # the backward is recorded now, with zeros for the outputs' gradients: the replays need
        # it whether or not these outputs are ever differentiated (an evaluation without
        # no_grad would otherwise record again at every call)
        got = self._record_backward(v, *eager, retain_graph=True)
        return self._joined(v, orig, eager if got is None else None)

    def _record_backward(self, v, outs, inputs, grads=None, retain_graph=False):
        """Record the backward of the recorded call's differentiated outputs from their eager
        graph (`grads`, else zeros, as their gradients). Returns what it computed, or None when
        the recording broke (v.bwhy says why, v.bgot holds what it computed)."""
        v.bstage = [empty_tensor(o._shape, o._dtype, o._storage.device) for o in outs]
        for i, st in enumerate(v.bstage):
            g = grads[i] if grads is not None else None
            if g is None:
                fill_raw(st, 0)
            else:
                copy_into(st, g)
        with Recording() as rec:
            got = autograd_grad(outs, inputs, v.bstage, allow_unused=True,
                                retain_graph=retain_graph)
        if not rec.broken and not rec.follow(v.rec):
            rec._break("a random op's counter offset came from neither this capture nor the "
                       "forward's")
            rec.release()
        if rec.broken:
            v.bwhy, v.bgot = rec.broken + " (in the backward of a compiled call)", got
            return None
        v.brec = rec            # (a dropout it draws again follows the forward's replays)
        v.bouts = [None if g is None else alias(g) for g in got]
        # the backward reads the arguments too (a weight's gradient reads the input)
        v.bslots = [rec.slots_of(b) for b in v.captured]
        return got

    def _diff_inputs(self, v, leaves):
        return [leaves[i] if where == "arg" else self._state.tensors[i]
                for where, i in v.joint[1]]

    def _joined(self, v, leaves, eager=None):
        """The outputs, those differentiated outside linked to one node whose backward replays
        (or, the first time, records) the backward of the recorded call."""
        made = _outputs(v, leaves, flat=True)
        v.epoch += 1
        call = _Call(self, v, v.epoch, eager)
        call.leaves = [st if st is not None else t for st, t in zip(v.staged, leaves)]
        joint = v.joint[0]
        call.outs = [made[k] for k in joint]
        linked = _Joint.apply(call, *self._diff_inputs(v, leaves))
        for k, t in zip(joint, linked):
            made[k] = t
        v.last = weakref.ref(call)
        return _rebuild(v.outputs[0], made)
    def _replay(self, v, leaves):
        self.stats["replays"] += 1
        bindings = []
        for i, t in enumerate(leaves):
            st = v.staged[i]
            if st is not None:
                copy_into(st, t)
                continue
            slots, bound = v.inputs[i]
            buf = t._storage.buf
            if buf is not bound and slots:
                bindings.append((slots, buf))
                v.inputs[i] = (slots, buf)
        for read, i in v.read_args:
            read.buf = leaves[i]._storage.buf
        v.rec.replay(bindings)
        for i in v.written:
            copy_into(leaves[i], v.staged[i])
        for t, g in v.made_grads:
            t.grad = g
        if v.joint is not None:
            return self._joined(v, leaves)
        return _outputs(v, leaves)


class _Call:
    """One call of a compiled function whose outputs are differentiated outside it: its
    backward replays the variant's backward recording, made from the eager graph of the
    recorded call the first time."""

    def __init__(self, fn, v, epoch, eager):
        self.fn, self.v, self.epoch, self.eager = fn, v, epoch, eager
        self.outs = []
        self.leaves = []            # the call's tensor arguments (staged ones' copies)
        self.done = False

    def backward(self, grads):
        v = self.v
        if _grad_state.state.grad_enabled:
            raise RuntimeError("clgrad.compile: a compiled call cannot be differentiated twice "
                               "(create_graph=True through its outputs)")
        if self.epoch != v.epoch:
            raise RuntimeError("clgrad.compile: this call's saved values were overwritten by a "
                               "later call of the same compiled function; call backward before "
                               "calling it again")
        if self.eager is None and v.brec is None:
            raise RuntimeError("clgrad.compile: the backward of this call was not recorded")
        if self.eager is not None:
            # the recorded call, whose backward could not be recorded with zeros for gradients:
            # once more with these, then eagerly from now on
            outs, inputs = self.eager
            self.eager = None
            got = self.fn._record_backward(v, outs, inputs, grads)
            if got is None:
                v.rec.release()
                v.rec = None
                self.fn._give_up(v, v.bwhy)
                self.done = True
                return tuple(v.bgot)
        else:
            for st, g in zip(v.bstage, grads):
                if g is None:
                    fill_raw(st, 0)
                else:
                    copy_into(st, g)
            v.brec.replay([(slots, t._storage.buf)
                           for slots, t in zip(v.bslots, self.leaves) if slots])
        self.done = True        # (leaves kept: a retained graph may run this backward again)
        result = []
        for g in v.bouts:
            if g is None:
                result.append(None)
            else:
                t = empty_tensor(g._shape, g._dtype, g._storage.device)
                copy_into(t, g)
                result.append(t)
        return tuple(result)


class _Joint(Function):
    """The node of a compiled call's differentiated outputs (see _Call)."""

    @staticmethod
    def forward(ctx, call, *inputs):
        ctx.call = call
        # handed over, not kept: outputs -> node -> call -> outputs would be a cycle, and a call
        # alive until a collection keeps its function eager (its backward looks pending)
        outs, call.outs = call.outs, []
        return tuple(outs)

    @staticmethod
    def backward(ctx, *grads):
        return (None,) + ctx.call.backward(grads)


def _outputs(v, leaves, flat=False):
    """The return value of a replay: tensors that are the recording's copied out, arguments and
    their views made from this call's arguments, others as they are."""
    spec, outs = v.outputs
    made = []
    for how, what in outs:
        if how == "same":
            made.append(what)
        elif how == "arg":
            made.append(leaves[what])
        elif how == "view":
            i, shape, strides, offset = what
            made.append(leaves[i].as_strided(shape, strides, offset))
        else:
            src, rg = what
            t = empty_tensor(src._shape, src._dtype, src._storage.device)
            copy_into(t, src)
            if rg:
                t.requires_grad_(True)
            made.append(t)
    return made if flat else _rebuild(spec, made)


def _rebuild(spec, made):
    """The return value from its recorded structure and this call's tensors, in order."""
    tree, flat, positions, reads = spec
    flat = list(flat)
    for i, t in zip(positions, made):
        flat[i] = t
    for i, read in reads:           # the values the replay read (Recording.read_item)
        flat[i] = read.value
    return tree_unflatten(flat, tree)
