"""Forward-mode automatic differentiation, as torch.autograd.forward_ad has it.

Inside a dual level, a tensor can carry a tangent (`make_dual`); every differentiable op then
computes the tangent of its result along with the result, so one pass gives the
Jacobian-vector product J·v of a whole computation (`unpack_dual`).

>>> import clgrad
>>> import clgrad.autograd.forward_ad as fwAD
>>> x = clgrad.tensor([1.0, 2.0])
>>> with fwAD.dual_level():
...     y = fwAD.make_dual(x, clgrad.tensor([1.0, 0.0])) ** 2
...     fwAD.unpack_dual(y).tangent.tolist()
[2.0, 0.0]

How tangents travel: a tensor's tangent lives in its `_fw` slot. While a level is entered, the
autograd core sends every op through `op` below (`function.hooks.op`; with no level that slot is
None and the op path pays one check). It runs the op, then its forward-mode rule:

- `Op.jvp(args, tangents, out)`, written beside the op's backward in clgrad.ops (elementwise ops
  derive theirs from the VJP table, view ops take the same view of the tangent);
- for ops that have none, J·v from the op's own backward, the double-vjp trick: u ↦ vjp(u) = uᵀJ
  is linear in u, so differentiating <vjp(u), v> with respect to u gives J·v. Because backward
  formulas are differentiable clgrad code, this works for every op that has a backward;
- custom Functions: `Function.jvp(ctx, *tangents)` (tensors kept by `ctx.save_for_forward` are
  `ctx.saved_tensors` there).

Rules run with forward AD paused (tangents of tangents are not tracked: one level, as in torch)
and with autograd on, so a tangent can itself be differentiated backwards. Backward formulas run
through the same ops, so the gradients they compute carry tangents too: forward-over-reverse
(Hessian-vector products) needs nothing more.
"""
import weakref
from typing import NamedTuple, Optional

from ..ops._base import copy_into, full_raw
from ..ops.copies import Clone
from ..ops.view_geometry import empty_with_layout, in_layout_of, same_layout
from ..ops.views import View
from ..tensor import Tensor, make_tensor
from . import function as F
from .grad_mode import _DecoratorContextManager
from .grad_mode import state as _grad_state
from .engine import grad

__all__ = ["UnpackedDualTensor", "enter_dual_level", "exit_dual_level", "make_dual",
           "unpack_dual", "dual_level"]

_current_level = -1
_state = None           # the _ForwardAD of the current level


# ---- tangents -------------------------------------------------------------------------------
def tangent_of(t):
    """t's tangent, or None. A view made before its base got a tangent (in place) sees the
    base's, as in torch."""
    tan = t._fw
    if tan is None and t._base is not None and _state is not None:
        base_tan = t._base._fw
        if base_tan is not None and same_layout(t._base, base_tan) and \
                id(t) not in _state.primals:
            tan = make_tensor(base_tan._storage, t._shape, t._strides, t._offset,
                              base_tan._dtype, t._contig, base_tan._vc)
            _state.set_tangent(t, tan)
    return tan


def _fit(tan, out):
    """A rule's tangent made to match its output: same shape (rules may return a broadcastable
    one, e.g. add's), same dtype."""
    if tan._shape != out._shape:
        tan = tan.expand(out._shape).contiguous()
    if tan._dtype is not out._dtype:
        tan = tan.to(out._dtype)
    return tan


# ---- the state of the current level ----------------------------------------------------------
class _ForwardAD:
    """Installed as `function.hooks.forward_ad` while a dual level is entered."""

    def __init__(self):
        self.paused = 0                     # > 0 while a rule runs: no tangents of tangents
        self.duals = weakref.WeakValueDictionary()   # id -> tensor with a tangent of this level
        self.primals = weakref.WeakValueDictionary()  # id -> unpack_dual's primals: no tangent

    def set_tangent(self, t, tangent):
        t._fw = tangent
        self.duals[id(t)] = t

    def clear(self):
        for t in list(self.duals.values()):
            t._fw = None
        self.duals.clear()

    def has_tangents(self, args):
        if self.paused:
            return False
        for a in args:
            if isinstance(a, Tensor) and tangent_of(a) is not None:
                return True
        return False

    # -- built-in ops --------------------------------------------------------------------------
    def op(self, cls, args):
        if self.paused:
            return cls._apply_op(args)
        tangents = None
        for i, a in enumerate(args):
            if isinstance(a, Tensor):
                tan = tangent_of(a)
                if tan is not None:
                    if tangents is None:
                        tangents = [None] * len(args)
                    tangents[i] = tan
        if tangents is None:
            return cls._apply_op(args)
        self.paused += 1
        try:
            if cls.jvp is not None:
                out = cls._apply_op(args)
                out_tangents = cls.jvp(args, tangents, out)
            else:
                out, out_tangents = _jvp_from_backward(cls, args, tangents)
            self._attach(out, out_tangents, None if cls._is_view else tangents)
        finally:
            self.paused -= 1
        return out

    def _attach(self, out, out_tangents, in_tangents):
        """Give the outputs their tangents. A rule may return an input's tangent itself (add's
        does): unless the op is a view, the output gets a copy, or changing it in place would
        change the input's tangent too."""
        outs = out if isinstance(out, (tuple, list)) else (out,)
        tans = out_tangents if isinstance(out_tangents, (tuple, list)) else (out_tangents,)
        shared = {id(t._storage) for t in in_tangents if t is not None} if in_tangents else ()
        node = None
        for o, tan in zip(outs, tans):
            if tan is None or not isinstance(o, Tensor) or o._dtype.kind not in "fc":
                continue
            tan = _fit(tan, o)
            if id(tan._storage) in shared:
                tan = Clone.apply(tan)
            self.set_tangent(o, tan)
            if o._grad_fn is not None:
                node = o._grad_fn
        # an output the node saved for backward is kept without history; give it the tangent
        # too, so that backward formulas that read it carry tangents (forward-over-reverse)
        if node is not None and node._saved:
            for s in node._saved:
                if s is not None and s.is_output and s.data is not None:
                    o = outs[s.output_nr]
                    if o._fw is not None:
                        self.set_tangent(s.data, o._fw)

    # -- custom Functions ------------------------------------------------------------------------
    def custom(self, cls, ctx, args, outs):
        """Tangents of a custom Function's outputs from its `jvp(ctx, *tangents)`."""
        tangents = []
        for a in args:
            tan = None
            if isinstance(a, Tensor):
                tan = tangent_of(a)
                if tan is None and ctx.materialize_grads:
                    tan = full_raw(a._shape, 0, a._dtype, a._storage.device)
            tangents.append(tan)
        ctx._jvp_saved = tuple(ctx.saved_for_forward) or None
        self.paused += 1
        try:
            res = cls.jvp(ctx, *tangents)
        finally:
            self.paused -= 1
            ctx._jvp_saved = None
            ctx.saved_for_forward = ()
        res = res if isinstance(res, tuple) else (res,)
        if len(res) != len(outs):
            raise RuntimeError(f"function {cls.__name__}.jvp returned an incorrect number of "
                               f"tangents (expected {len(outs)}, got {len(res)})")
        self.paused += 1
        try:
            self._attach(outs, res, tangents)
        finally:
            self.paused -= 1

    # -- in-place ops ------------------------------------------------------------------------------
    def inplace(self, t, result):
        """t was overwritten in place by `result`: its tangent (a view of its base's, where t is
        a view) is overwritten by result's, in place, so that every alias of t sees it."""
        self.paused += 1
        try:
            new = result._fw
            if new is None:
                new = full_raw(t._shape, 0, t._dtype, t._storage.device)
            cur = tangent_of(t)
            base = t._base
            if cur is None and base is not None and id(t) not in self.primals:
                # the base gets a tangent (zero where nothing was written) that t is a view of
                base_tan = base._fw
                if base_tan is None:
                    base_tan = copy_into(empty_with_layout(base),
                                         full_raw((), 0, base._dtype, base._storage.device))
                self.set_tangent(base, in_layout_of(base, base_tan))
                cur = tangent_of(t)
            if cur is None:
                cur = empty_with_layout(t)
                self.set_tangent(t, cur)
            copy_into(cur, new)
            cur._vc[0] += 1
        finally:
            self.paused -= 1


def _jvp_from_backward(cls, args, tangents):
    """(out, J·v) for an op without a jvp rule, from its backward.

    The op runs once, recorded, on inputs that require grad; its node's backward at a cotangent
    u that requires grad gives vjp(u) = uᵀJ as a function of u; the gradient of <vjp(u), v> with
    respect to u is J·v. Gradient formulas are linear in u, so any u will do: u = 1 rather than
    0, where formulas that go through log|u| (logcumsumexp's) would give 0 * inf."""
    grad_was = _grad_state.grad_enabled
    # the result keeps its normal history when autograd records it anyway
    keep_history = grad_was and any(isinstance(a, Tensor) and a._requires_grad for a in args)
    call_args = list(args)
    for i, tan in enumerate(tangents):
        if tan is not None and not (keep_history and args[i]._requires_grad):
            a = F._view_of_input(args[i])      # shares data, version and base; fresh history
            a._requires_grad = True
            call_args[i] = a
    _grad_state.grad_enabled = True
    try:
        out = cls._apply_op(call_args)
        outs = out if isinstance(out, (tuple, list)) else (out,)
        node = next((o._grad_fn for o in outs if isinstance(o, Tensor) and
                     o._grad_fn is not None), None)
        if node is None:
            return out, None
        us = [None] * len(outs)
        for k, o in enumerate(outs):
            if isinstance(o, Tensor) and o._grad_fn is node:
                us[k] = full_raw(o._shape, 1, o._dtype, o._storage.device)
                us[k]._requires_grad = True
        vjps = F.run_node(node, list(us))          # one per tensor argument
        pairs = []
        for vjp_k, pos in zip(vjps, node._tensor_positions):
            tan = tangents[pos]
            if tan is not None and vjp_k is not None and vjp_k._requires_grad:
                pairs.append((vjp_k, tan))
        wanted = [u for u in us if u is not None]
        if pairs:
            # differentiable (reverse over forward) when autograd records the op or a tangent
            create = grad_was and (keep_history or any(t._requires_grad for _, t in pairs))
            jv = grad([p for p, _ in pairs], wanted, [t for _, t in pairs],
                      create_graph=create, retain_graph=create, allow_unused=True)
        else:
            jv = [None] * len(wanted)
        jv = iter(jv)
        out_tangents = []
        for o, u in zip(outs, us):
            if u is None:
                out_tangents.append(None)
                continue
            j = next(jv)
            out_tangents.append(j if j is not None else full_raw(o._shape, 0, o._dtype,
                                                                 o._storage.device))
        if not keep_history:
            # nobody asked autograd to record this op: drop the history made for the rule
            for o in outs:
                if isinstance(o, Tensor) and o._grad_fn is node:
                    o._grad_fn = None
                    o._requires_grad = False
    finally:
        _grad_state.grad_enabled = grad_was
    return out, tuple(out_tangents) if isinstance(out, (tuple, list)) else out_tangents[0]


# ---- the public API ------------------------------------------------------------------------------
def enter_dual_level():
    """Enter the forward-AD level (clgrad has one at a time, like torch); returns its number.

    >>> import clgrad.autograd.forward_ad as fwAD
    >>> fwAD.enter_dual_level()
    0
    >>> fwAD.exit_dual_level()
    """
    global _current_level, _state
    if _current_level >= 0:
        raise RuntimeError("Nested forward mode AD is not supported at the moment")
    _state = _ForwardAD()
    F.hooks.forward_ad = _state
    F.hooks.refresh()
    _current_level = 0
    return _current_level


def exit_dual_level(*, level=None):
    """Leave the forward-AD level: every tangent made in it is dropped.

    >>> import clgrad.autograd.forward_ad as fwAD
    >>> lvl = fwAD.enter_dual_level()
    >>> fwAD.exit_dual_level(level=lvl)
    """
    global _current_level, _state
    if level is None:
        level = _current_level
    if level < 0:
        raise RuntimeError("Dual level must be a positive number.")
    if level != _current_level:
        raise RuntimeError("Trying to exit a forward AD level that was not the last one that was "
                           "created. This is not supported.")
    F.hooks.forward_ad = None
    F.hooks.refresh()
    state, _state = _state, None
    state.clear()
    _current_level = -1


def make_dual(tensor, tangent, *, level=None):
    """A new tensor aliasing `tensor` (and differentiable with respect to it) that carries
    `tangent`, copied if it is not laid out like `tensor`.

    >>> import clgrad
    >>> import clgrad.autograd.forward_ad as fwAD
    >>> with fwAD.dual_level():
    ...     d = fwAD.make_dual(clgrad.tensor([0.0]), clgrad.tensor([2.0]))
    ...     fwAD.unpack_dual(d.exp()).tangent.tolist()
    [2.0]
    """
    if level is None:
        level = _current_level
    if level < 0:
        raise RuntimeError("Trying to create a dual Tensor for forward AD but no level exists, "
                           "make sure to enter_dual_level() first.")
    if level != _current_level:
        raise RuntimeError(f"Invalid level {level}: the current dual level is {_current_level}")
    if not isinstance(tensor, Tensor) or not isinstance(tangent, Tensor):
        raise TypeError("make_dual(): expected Tensors for 'tensor' and 'tangent'")
    if tensor._dtype.kind not in "fc":
        raise ValueError(f"Expected primal to be floating point or complex, but got: "
                         f"{tensor._dtype}")
    if tangent._dtype.kind not in "fc":
        raise ValueError(f"Expected tangent to be floating point or complex, but got: "
                         f"{tangent._dtype}")
    if tangent._shape != tensor._shape:
        raise RuntimeError(f"Trying to set a forward gradient that has a different size than that "
                           f"of the original Tensor, this is not supported. Tensor is of size "
                           f"{list(tensor._shape)} while the given forward gradient is of size "
                           f"{list(tangent._shape)}.")
    if tangent._storage.device is not tensor._storage.device:
        raise RuntimeError(f"Expected tangent to be on the same device as the primal "
                           f"({tensor.device}), but got {tangent.device}")
    _state.paused += 1
    try:
        dual = View.apply(tensor, tensor._shape, tensor._strides)
    finally:
        _state.paused -= 1
    _state.set_tangent(dual, in_layout_of(dual, tangent))
    return dual


class UnpackedDualTensor(NamedTuple):
    """What unpack_dual returns: the primal (a view of the dual tensor without its tangent) and
    the tangent (None when there is none).

    >>> import clgrad
    >>> import clgrad.autograd.forward_ad as fwAD
    >>> fwAD.unpack_dual(clgrad.ones(1))
    UnpackedDualTensor(primal=tensor([1.]), tangent=None)
    """

    primal: Tensor
    tangent: Optional[Tensor]


def unpack_dual(tensor, *, level=None):
    """(primal, tangent) of a dual tensor; the primal is a view without the tangent.

    >>> import clgrad
    >>> import clgrad.autograd.forward_ad as fwAD
    >>> with fwAD.dual_level():
    ...     p, t = fwAD.unpack_dual(fwAD.make_dual(clgrad.ones(2), clgrad.zeros(2)))
    ...     p.tolist(), t.tolist()
    ([1.0, 1.0], [0.0, 0.0])
    """
    if level is None:
        level = _current_level
    if level < 0 or _state is None:
        return UnpackedDualTensor(tensor, None)
    tan = tangent_of(tensor)
    _state.paused += 1
    try:
        primal = View.apply(tensor, tensor._shape, tensor._strides)
    finally:
        _state.paused -= 1
    _state.primals[id(primal)] = primal     # a view of a dual tensor that must not inherit
    return UnpackedDualTensor(primal, tan)


class dual_level(_DecoratorContextManager):
    """Context manager (and decorator) for forward AD: enters a dual level and leaves it at the
    end, dropping its tangents.

    >>> import clgrad
    >>> import clgrad.autograd.forward_ad as fwAD
    >>> with fwAD.dual_level():
    ...     d = fwAD.make_dual(clgrad.tensor([3.0]), clgrad.tensor([1.0]))
    ...     fwAD.unpack_dual(d * d).tangent.item()
    6.0
    >>> fwAD.unpack_dual(d).tangent is None
    True
    """

    def __enter__(self):
        return enter_dual_level()

    def __exit__(self, *exc):
        exit_dual_level()
        return False
