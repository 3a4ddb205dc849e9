"""In-place ops (add_, mul_, copy_, fill_, clamp_, index_put_, ...): one mechanism for all.

When nothing is recorded the kernel writes straight into the tensor. When autograd records, the
op runs out of place as usual, the result is copied in, and the tensor's history becomes the op's
node (its base's, through CopySlices, when it is a view). The version counter goes up either way,
which is what lets backward catch a saved tensor that was changed afterwards."""
from .. import dtypes
from ..autograd.node import SavedTensor, hooks
from ..autograd.views import _check_inplace, check_inplace_allowed, rebase_history
from ..autograd.grad_mode import state as _state
from ..tensor import Tensor, alias, empty_tensor
from ._base import (
    check_inplace_overlap, copy_into, full_raw, size_repr, fill_raw, broadcast_shapes, check_fits)
from ..autograd.op import _null_ctx
from .copies import Clone, warn_discard_imag
from .views import expand
from .reduce import sum_to


def _records(self, args):
    """Whether the change must run as an op: autograd records it, or forward AD has tangents to
    carry through it."""
    return _grad_records(self, args) or _has_tangents(self, args)


def _grad_records(self, args):
    if not _state.grad_enabled:
        return False
    if self._requires_grad:
        return True
    for a in args:
        if getattr(a, "_requires_grad", False):
            return True
    return False


def _has_tangents(self, args):
    fw = hooks.forward_ad
    return fw is not None and fw.has_tangents((self,) + args)


def raw_inplace(t, write):
    """Run `write()` (which changes t's data) as an in-place op that autograd does not see."""
    check_inplace_allowed(t)
    if _state.grad_enabled and (t._requires_grad or (t._base is not None and
                                                     t._base._requires_grad)):
        _check_inplace(t, "")
    write()
    t._vc[0] += 1
    if t._grad_fn is not None and _state.grad_enabled:
        # the data no longer depends on the old history
        t._grad_fn = None
    if t._fw is not None and hooks.forward_ad is not None:
        fill_raw(t._fw, 0)          # nor on the old tangent
    return t


def check_result(op, self, result_dtype, result_shape):
    if not dtypes.can_cast(result_dtype, self._dtype):
        raise RuntimeError(f"result type {result_dtype.name.capitalize()} can't be cast to the "
                           f"desired output type {self._dtype.name.capitalize()}")
    if result_shape != self._shape:
        raise RuntimeError(f"output with shape {size_repr(self._shape)} doesn't match the "
                           f"broadcast shape {size_repr(result_shape)}")


def apply_inplace(op_cls, self, *args, fast=None, name=None):
    """self <- op_cls(self, *args), in place. `fast(self)` writes straight into self when
    autograd does not record (it returns False if it cannot)."""
    check_inplace_allowed(self)
    if not _records(self, args):
        if fast is None or fast() is False:
            result = op_cls.forward(_null_ctx, self, *args)
            check_result(name or op_cls.__name__.lower(), self, result._dtype, result._shape)
            copy_into(self, result)
        self._vc[0] += 1
        return self
    if _grad_records(self, args):
        _check_inplace(self, op_cls.__name__)
    result = op_cls.apply(self, *args)        # out of place; forward AD gives it its tangent
    check_result(name or op_cls.__name__.lower(), self, result._dtype, result._shape)
    node = result._grad_fn
    if node is not None and node._saved:
        # the op saved self's old value: keep a copy of it, since self is about to change
        for i, s in enumerate(node._saved):
            if s is not None and not s.is_output and s.data is self:
                node._saved[i] = SavedTensor(Clone.apply(self))
    if hooks.mutate is not None:
        hooks.mutate(self)          # the op may just have saved self through a pack hook
    copy_into(self, result)
    self._vc[0] += 1
    if node is not None:
        if node._saved:
            for s in node._saved:
                if s is not None and s.is_output and s.data is not None:
                    s.data = alias(self)
                    s.version = self._vc[0]
        rebase_history(self, node, 0)
    if hooks.forward_ad is not None and (result._fw is not None or self._fw is not None):
        hooks.forward_ad.inplace(self, result)
    return self


def copy_(self, src, non_blocking=False):
    """Copy src's values (broadcast, cast) into self, in place.

    >>> import clgrad
    >>> clgrad.zeros(2, 2).copy_(clgrad.tensor([1, 2])).tolist()
    [[1.0, 2.0], [1.0, 2.0]]
    """
    if not isinstance(src, Tensor):
        # function-level: import cycle: creation imports inplace
        from .creation import tensor
        src = tensor(src, device=self.device)
    elif src._storage.device is not self._storage.device:
        src = src.to(self.device)         # torch's copy_ takes its source from any device
    if src._shape != self._shape:
        try:
            if broadcast_shapes(self._shape, src._shape) != self._shape:
                raise RuntimeError
        except RuntimeError:
            raise RuntimeError(f"The size of tensor a ({self._shape[-1] if self._shape else 1}) "
                               f"must match the size of tensor b "
                               f"({src._shape[-1] if src._shape else 1}): copy_ of "
                               f"{size_repr(src._shape)} into {size_repr(self._shape)}") from None
    check_inplace_allowed(self)
    check_inplace_overlap(self, (src,))
    if src._dtype.kind == "c" and self._dtype.kind != "c":
        warn_discard_imag()
    if not _records(self, (src,)):
        copy_into(self, src)
        self._vc[0] += 1
        return self
    return apply_inplace(CopyFrom, self, src)


from ..autograd.op import Op  # noqa: E402


class CopyFrom(Op):
    """self.copy_(src) as an op: the result is src (broadcast, cast to self's dtype)."""

    _node_name = "CopyBackwards"

    @staticmethod
    def forward(ctx, self, src):
        out = empty_tensor(self._shape, self._dtype, self._storage.device)
        return copy_into(out, src)

    @staticmethod
    def backward(ctx, g):
        meta = ctx._in_meta
        gs = sum_to(g, meta[1][0]).to(meta[1][1]) if len(meta) > 1 else None
        return g * 0, gs

    @staticmethod
    def jvp(args, tangents, out):
        self, src = args
        t = tangents[1]
        if t is None:                   # self's old tangent is overwritten with src's: none
            return full_raw(self._shape, 0, self._dtype, self._storage.device)
        return CopyFrom.apply(self, t)


class Fill(Op):
    _node_name = "FillBackward0"

    @staticmethod
    def forward(ctx, self, value):
        if isinstance(value, Tensor):
            out = empty_tensor(self._shape, self._dtype, self._storage.device)
            return copy_into(out, value)
        return full_raw(self._shape, value, self._dtype, self._storage.device)

    @staticmethod
    def backward(ctx, g):
        gv = None
        if len(ctx._in_meta) > 1:
            gv = g.sum().reshape(ctx._in_meta[1][0])
        return g * 0, gv

    @staticmethod
    def jvp(args, tangents, out):
        self, value = args
        t = tangents[1]
        if t is None:
            return full_raw(self._shape, 0, self._dtype, self._storage.device)
        return Fill.apply(self, t)


def fill_(self, value):
    """Set every element of self to value, in place.

    >>> import clgrad
    >>> clgrad.zeros(2).fill_(3).tolist()
    [3.0, 3.0]
    """
    if isinstance(value, Tensor) and value.numel() != 1:
        raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with "
                           f"{len(value._shape)} dimensions.")
    if isinstance(value, Tensor) and not value._requires_grad and \
            not _has_tangents(value, ()):
        value = value.item()
    if not isinstance(value, Tensor):
        check_fits(value, self._dtype)

    def fast():
        fill_raw(self, value)
    return apply_inplace(Fill, self, value, fast=None if isinstance(value, Tensor) else fast,
                         name="fill_")


def zero_(self):
    """Set self to zeros, in place.

    >>> import clgrad
    >>> clgrad.ones(2).zero_().tolist()
    [0.0, 0.0]
    """
    return fill_(self, 0)
