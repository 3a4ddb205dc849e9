"""`Optimizer`: parameter groups, per-parameter state, zero_grad, and state_dict /
load_state_dict in torch's format."""
import functools
import operator
from collections import defaultdict
from copy import deepcopy
from itertools import chain

from ..autograd.grad_mode import enable_grad, no_grad
from ..kernels import optim as _kernels
from ..runtime.recording import active_recording, aside, host_call, refreshed
from ..tensor import Tensor

__all__ = ["Optimizer", "required"]


class _RequiredParameter:
    """Marks a hyper-parameter that has no default and must be given."""

    def __repr__(self):
        return "<required parameter>"


required = _RequiredParameter()


def _typename(obj):
    if isinstance(obj, Tensor):
        return f"clgrad.{obj.dtype.name.capitalize()}Tensor"
    return type(obj).__name__


def _scalar(v):
    """A hyper-parameter as a Python number (a tensor lr, say, is read once per step)."""
    return v.item() if isinstance(v, Tensor) else v


class Optimizer:
    """Base class of optimizers: `params` is an iterable of tensors or of dicts (parameter
    groups, each with its own options overriding `defaults`).

    >>> import clgrad
    >>> w, b = clgrad.nn.Parameter(clgrad.zeros(3)), clgrad.nn.Parameter(clgrad.zeros(1))
    >>> opt = clgrad.optim.SGD([{"params": [w]}, {"params": [b], "lr": 0.5}], lr=0.1)
    >>> [g["lr"] for g in opt.param_groups]
    [0.1, 0.5]
    """

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        # A compiled step (clgrad.compile) replays its kernels without running Python; a step
        # keeps its count and learning rate on the host, so it runs as itself in every replay
        # (a FusedOptimizer's step is recorded instead, see there).
        if "step" in cls.__dict__ and not getattr(cls.__dict__["step"], "recorded", False):
            cls.step = host_call(cls.step)

    def __init__(self, params, defaults):
        self.defaults = defaults
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of "
                            "Tensors or dicts, but got " + _typename(params))
        self.state = defaultdict(dict)
        self.param_groups = []
        groups = list(params)
        if len(groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)

    def __repr__(self):
        s = type(self).__name__ + " ("
        for i, group in enumerate(self.param_groups):
            s += f"\nParameter Group {i}\n"
            for key in sorted(group):
                if key != "params":
                    s += f"    {key}: {group[key]}\n"
        return s + ")"

    def add_param_group(self, param_group):
        """Add a group of parameters with its own options (defaults fill the rest).

        >>> import clgrad
        >>> opt = clgrad.optim.SGD([clgrad.nn.Parameter(clgrad.zeros(1))], lr=0.1)
        >>> opt.add_param_group({"params": clgrad.nn.Parameter(clgrad.zeros(2)), "lr": 0.01})
        >>> len(opt.param_groups), opt.param_groups[1]["momentum"]
        (2, 0)
        """
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, "
                            "but the ordering of tensors in sets will change between runs. "
                            "Please use a list instead.")
        else:
            param_group["params"] = list(params)
        names = [p[0] for p in param_group["params"] if isinstance(p, tuple)]
        param_group["params"] = [p[1] if isinstance(p, tuple) else p
                                 for p in param_group["params"]]
        if names:
            if len(names) != len(param_group["params"]):
                raise ValueError("all optimizer params should be with/without names. Some param "
                                 "names are missing")
            param_group["param_names"] = names
        for p in param_group["params"]:
            if not isinstance(p, Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is " +
                                _typename(p))
            if not (p.is_leaf or p.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(f"parameter group didn't specify a value of required "
                                 f"optimization parameter {name}")
            param_group.setdefault(name, default)
        seen = set()
        for group in self.param_groups:
            seen.update(id(p) for p in group["params"])
        if any(id(p) in seen for p in param_group["params"]):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    def zero_grad(self, set_to_none=True):
        """Reset the gradients of every optimized tensor: to None (default) or to zeros.

        >>> import clgrad
        >>> p = clgrad.nn.Parameter(clgrad.ones(2))
        >>> p.grad = clgrad.ones(2)
        >>> opt = clgrad.optim.SGD([p], lr=0.1)
        >>> opt.zero_grad(set_to_none=False); p.grad.tolist()
        [0.0, 0.0]
        """
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    if p.grad.grad_fn is not None:
                        p.grad.detach_()
                    else:
                        p.grad.requires_grad_(False)
                    p.grad.zero_()

    def step(self, closure=None):
        """Update the parameters from their gradients (closure: re-evaluates the loss)."""
        raise NotImplementedError

    def state_dict(self):
        """{"state": {index: per-parameter state}, "param_groups": [options and parameter
        indices]}: parameters are numbered in the order of the groups.

        >>> import clgrad
        >>> p = clgrad.nn.Parameter(clgrad.ones(2))
        >>> opt = clgrad.optim.SGD([p], lr=0.1, momentum=0.9)
        >>> p.grad = clgrad.ones(2); opt.step()
        >>> sd = opt.state_dict()
        >>> list(sd["state"][0]), sd["param_groups"][0]["params"]
        (['momentum_buffer'], [0])
        """
        mapping = {}
        start = 0

        def pack(group):
            nonlocal start
            packed = {k: v for k, v in group.items() if k != "params"}
            for i, p in enumerate(group["params"], start):
                mapping.setdefault(id(p), i)
            packed["params"] = [mapping[id(p)] for p in group["params"]]
            start += len(packed["params"])
            return packed

        groups = [pack(g) for g in self.param_groups]
        state = {(mapping[id(k)] if isinstance(k, Tensor) else k): v
                 for k, v in self.state.items()}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict):
        """Load the state and options saved by state_dict into this optimizer's parameters
        (matched by position); state tensors are cast to each parameter's dtype and device.

        >>> import clgrad
        >>> p = clgrad.nn.Parameter(clgrad.ones(2))
        >>> a = clgrad.optim.Adam([p], lr=0.01)
        >>> p.grad = clgrad.ones(2); a.step()
        >>> b = clgrad.optim.Adam([p])
        >>> b.load_state_dict(a.state_dict()); b.param_groups[0]["lr"], b.state[p]["step"]
        (0.01, 1.0)
        """
        groups = self.param_groups
        saved_groups = deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match "
                             "the size of optimizer's group")
        id_map = dict(zip(chain.from_iterable(g["params"] for g in saved_groups),
                          chain.from_iterable(g["params"] for g in groups)))

        def cast(param, value, key=None):
            if isinstance(value, Tensor):
                if key == "step":
                    return float(value.item())       # clgrad keeps the step count on the host
                dt = param.dtype if param.is_floating_point() and value.is_floating_point() \
                    else value.dtype
                return value.to(device=param.device, dtype=dt).contiguous()
            if isinstance(value, dict):
                return {k: cast(param, v, k) for k, v in value.items()}
            if isinstance(value, (list, tuple)):
                return type(value)(cast(param, v) for v in value)
            return value

        state = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k in id_map:
                param = id_map[k]
                state[param] = cast(param, v)
            else:
                state[k] = v
        for group, saved in zip(groups, saved_groups):
            saved["params"] = group["params"]
            if "param_names" in group and "param_names" not in saved:
                saved["param_names"] = group["param_names"]
        self.state = state
        self.param_groups = saved_groups


def _no_grad_step(fn):
    """Run a step under no_grad, the closure (if any) under enable_grad."""
    @functools.wraps(fn)
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        with no_grad():
            fn(self)
        return loss
    return step



class FusedOptimizer(Optimizer):
    """An optimizer whose update of a parameter is one kernel of cl_kernels/optim.mako (SGD,
    Adam, AdamW, RMSprop). A subclass names the kernel (`_kernel`) and says
    - `_init_state(group, p, state)`: fill a parameter's state at its first step; True if it did;
    - `_advance(state, fresh)`: change the host state a step changes (a step count); returns the
      key that, with the group's options, decides the scalars;
    - `_buffers(group, state)`: the state tensors the kernel takes, None where unused;
    - `_scalars(group, key)`: the kernel's scalar arguments, in its order.
    A compiled step keeps the launches of its update (recording.refreshed): every replay calls
    `_refresh`, which advances the host state and sets the scalars that changed (a learning rate a
    scheduler moved, a step count's bias corrections) instead of running this Python again.

    >>> import clgrad
    >>> p = clgrad.nn.Parameter(clgrad.ones(2))
    >>> opt = clgrad.optim.SGD([p], lr=0.5)
    >>> step = clgrad.compile(lambda: (p.sum().backward(), opt.step(), opt.zero_grad()))
    >>> for _ in range(3): _ = step()
    >>> p.tolist(), opt.param_groups[0]["lr"]
    ([-0.5, -0.5], 0.5)
    """
    _kernel = None

    def step(self, closure=None):
        """One update of every parameter that has a gradient; step(closure) re-evaluates the
        loss first and returns it."""
        rec = active_recording()
        if closure is not None or rec is None or rec.paused:
            return self._host_step(closure)
        with no_grad():
            refreshed(lambda: self._update(True), self._refresh, lambda: self._host_step())
    step.recorded = True

    @host_call
    @_no_grad_step
    def _host_step(self):
        self._update(False)

    def _update(self, capturing):
        """Launch the update of every parameter with a gradient; while capturing, what _refresh
        needs: [(group, parameter, state, its state tensors, the launch's LiveScalars)]."""
        made = []
        for group in self.param_groups:
            scalars, prepared = {}, []
            for p in group["params"]:
                if p.grad is None:
                    continue
                if capturing:
                    # host work: new state comes from the shared pool, a tensor lr is read once
                    with aside():
                        prepared.append((p, *self._prepare(group, p, scalars)))
                else:
                    prepared.append((p, *self._prepare(group, p, scalars)))
            # parameters whose scalars are the same tuple share launches (kernels.update_all)
            lives = _kernels.update_all(self._kernel, [(p, p.grad, buffers, values)
                                                       for p, _, values, buffers in prepared])
            made.extend((group, p, state, buffers, live)
                        for (p, state, _, buffers), live in zip(prepared, lives))
        return made

    def _prepare(self, group, p, scalars):
        """A parameter's state (made at its first step, then advanced), the kernel's scalars
        (memoised in `scalars` by key) and its state tensors."""
        state = self.state[p]
        key = self._advance(state, self._init_state(group, p, state))
        values = scalars.get(key)
        if values is None:
            values = scalars[key] = self._scalars(group, key)
        return state, values, self._buffers(group, state)

    def _refresh(self, made):
        """Ready the recorded launches of `made` (see _update) for a replay; False (the replay
        runs the step as host work) when a parameter's state or group is no longer the recorded
        one."""
        state_of, groups = self.state, {id(g) for g in self.param_groups}
        buffers_of, advance = self._buffers, self._advance
        # parameters that shared a launch must still share its scalars: their step counts could
        # have parted since, if something stepped some of them alone. The keys are asked of
        # copies of the states (plain host numbers), which advance only once all checks held.
        keys, shared = [], {}
        for group, p, state, buffers, live in made:
            if id(group) not in groups or state_of.get(p) is not state or \
                    any(map(operator.is_not, buffers_of(group, state), buffers)):
                return False
            key = (id(group), advance(dict(state), False))
            if live is not None and shared.setdefault(id(live), key) != key:
                return False
            keys.append(key)
        scalars, memo = {}, {}
        for (group, p, state, _, live), key in zip(made, keys):
            advance(state, False)
            if live is not None:
                values = scalars.get(key)
                if values is None:
                    values = scalars[key] = self._scalars(group, key[1])
                live.set(values, memo)
            p._vc[0] += 1                      # an in-place change, as autograd must see it
        return True

