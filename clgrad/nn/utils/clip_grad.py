"""Gradient clipping, without a host synchronisation: the scale factor stays on the device."""
from ...autograd.grad_mode import no_grad
from ...ops.creation import tensor as _tensor
from ...ops.join import stack
from ...tensor import Tensor


def _grads(parameters):
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    return [p.grad for p in parameters if p.grad is not None]


def get_total_norm(tensors, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """The norm of the norms of `tensors` (as if they were concatenated into one vector).

    >>> import clgrad
    >>> clgrad.nn.utils.get_total_norm([clgrad.tensor([3.0]), clgrad.tensor([4.0])]).item()
    5.0
    """
    if isinstance(tensors, Tensor):
        tensors = [tensors]
    tensors = list(tensors)
    norm_type = float(norm_type)
    if not tensors:
        return _tensor(0.0)
    with no_grad():
        norms = [t.norm(norm_type) for t in tensors]
        dt = norms[0].dtype
        norms = stack([n.to(dt) for n in norms])
        total = norms.norm(norm_type)
        if error_if_nonfinite and not bool(total.isfinite().item()):
            raise RuntimeError(f"The total norm of order {norm_type} for gradients from "
                               f"`parameters` is non-finite, so it cannot be clipped. To disable "
                               f"this error and scale the gradients by the non-finite norm "
                               f"anyway, set `error_if_nonfinite=False`")
    return total


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False,
                    foreach=None):
    """Scale the gradients in place so that their total norm is at most max_norm; returns the
    total norm before clipping.

    >>> import clgrad
    >>> p = clgrad.nn.Parameter(clgrad.zeros(2))
    >>> p.grad = clgrad.tensor([3.0, 4.0])
    >>> clgrad.nn.utils.clip_grad_norm_([p], 1.0).item(), [round(v, 4) for v in p.grad.tolist()]
    (5.0, [0.6, 0.8])
    """
    grads = _grads(parameters)
    total = get_total_norm(grads, norm_type, error_if_nonfinite)
    if not grads:
        return total
    with no_grad():
        # min(max_norm / (total + 1e-6), 1), applied on the device (no host read)
        coef = (max_norm / (total + 1e-6)).clamp(max=1.0)
        for g in grads:
            g.mul_(coef.to(g.dtype))
    return total


def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamp the gradients in place to [-clip_value, clip_value].

    >>> import clgrad
    >>> p = clgrad.nn.Parameter(clgrad.zeros(2))
    >>> p.grad = clgrad.tensor([-3.0, 0.5])
    >>> clgrad.nn.utils.clip_grad_value_([p], 1.0); p.grad.tolist()
    [-1.0, 0.5]
    """
    clip_value = float(clip_value)
    with no_grad():
        for g in _grads(parameters):
            g.clamp_(-clip_value, clip_value)
