"""Views and in-place changes in the backward graph: the edge a tensor's gradient flows into
(`_edge`, remaking a view's history after its base changed), the checks before an in-place change,
moving a tensor's history onto the node that modified it (`rebase_history`, `CopySlices` for a
view's base) and marking the outputs of view ops (`_mark_views`)."""
from ..tensor import Tensor, alias
from .grad_mode import state as _state
from .node import Node, accumulate_node, hooks, ops, run_node

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


def _geometry(base, view):
    """The view's geometry relative to its base, in the units of the base's storage as the
    gradient sees it, and how to cross between dtypes: None (same dtype), "real" (a real view of
    a complex base: view_as_real, real, imag; the geometry is in units of the base's real view),
    "complex" (a complex view of a real base: view_as_complex; the geometry is the view's own
    real view's)."""
    if view._dtype is base._dtype:
        return (view._shape, view._strides, view._offset - base._offset), None
    if base._dtype.kind == "c":
        return (view._shape, view._strides, view._offset - 2 * base._offset), "real"
    return ((view._shape + (2,), tuple(2 * st for st in view._strides) + (1,),
             2 * view._offset - base._offset), "complex")


def _slice_of(g, geom, mode):
    """The view's part of gradient g of the base (the view's dtype)."""
    shape, strides, offset = geom
    if mode == "real":
        g = ops.view_as_real(g)
    out = ops.as_strided(g, shape, strides, offset)
    return ops.view_as_complex(out) if mode == "complex" else out


def _scatter_into(g, src, geom, mode):
    """A copy of base gradient g whose view region holds src (of the view's dtype)."""
    shape, strides, offset = geom
    if mode == "real":
        return ops.view_as_complex(ops.view_scatter(ops.view_as_real(g), src, shape, strides,
                                                    offset))
    if mode == "complex":
        src = ops.view_as_real(src)
    return ops.view_scatter(g, src, shape, strides, offset)


class CopySlices(Node):
    """History of a base whose view was modified in place: the gradient of the base is the
    incoming gradient, except in the view's region, where it goes through the in-place op."""

    def __init__(self, base, view, fn, fn_output_nr):
        super().__init__()
        self.fn = fn
        self.fn_output_nr = fn_output_nr
        self.base_shape = base._shape
        self.base_meta = (base._shape, base._dtype, base._storage.device)
        self.view_geom, self.mode = _geometry(base, view)
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
        g = g.contiguous()
        grad_slice = _slice_of(g, self.view_geom, self.mode)
        fn_grads = [None] * max(1, self.fn._num_outputs)
        fn_grads[self.fn_output_nr] = grad_slice
        res = run_node(self.fn, fn_grads)
        res = list(res) if res is not None else [None]
        r0 = res[self.dirty_slot] if res else None
        base_grad = _scatter_into(g, r0 if r0 is not None else ops.zeros_like(grad_slice),
                                  self.view_geom, self.mode)
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
        self.view_geom, self.mode = _geometry(base, view)

    def _apply(self, grads):
        base_shape, dt, dev = self.base_meta
        zeros = ops.zeros(base_shape, dt, dev)
        return (_scatter_into(zeros, grads[0], self.view_geom, self.mode),)


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
