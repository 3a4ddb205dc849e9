"""`Op`: the base of built-in ops. The same contract as a custom `Function`, with a leaner
`apply` (the hottest path of all): no keyword binding, no setup_context, forward never returns its
inputs. It belongs to the autograd core, not to the ops layer: it is recording machinery (edges,
saved tensors, views, the hooks' op slot) and knows no op; the ops layer subclasses it."""
from ..tensor import Tensor
from .function import Function
from .grad_mode import state as _state
from .node import BackwardCFunction, FunctionCtx, SavedTensor, accumulate_node, hooks
from .views import _edge, _mark_views

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
            if out._dtype.kind in "fc" and not node.non_differentiable:
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
                    if o._dtype.kind in "fc" and not (nondiff and any(o is t for t in nondiff)):
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
