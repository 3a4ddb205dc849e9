"""RMSprop (smoothing constant alpha, momentum, centered, weight decay, maximize)."""
from ..ops.creation import zeros_like
from .optimizer import FusedOptimizer, _scalar

__all__ = ["RMSprop"]


class RMSprop(FusedOptimizer):
    """RMSprop, torch's update rule (one fused kernel per parameter): s = alpha s +
    (1 - alpha) g^2; centered subtracts the square of the running mean gradient; with
    a = sqrt(s) + eps, p -= lr * g / a, or through a momentum buffer b = momentum b + g / a.

    >>> import clgrad
    >>> p = clgrad.nn.Parameter(clgrad.tensor([1.0]))
    >>> opt = clgrad.optim.RMSprop([p], lr=0.01)
    >>> p.grad = clgrad.tensor([2.0]); opt.step(); round(p.item(), 4)
    0.9
    """

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0,
                 centered=False, capturable=False, foreach=None, maximize=False,
                 differentiable=False):
        if not 0.0 <= _scalar(lr):
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= momentum:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= alpha:
            raise ValueError(f"Invalid alpha value: {alpha}")
        if differentiable:
            raise NotImplementedError("clgrad's optimizers are not differentiable")
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered,
                        weight_decay=weight_decay, capturable=capturable, foreach=foreach,
                        maximize=maximize, differentiable=differentiable)
        super().__init__(params, defaults)

    _kernel = "rmsprop"

    def _init_state(self, group, p, state):
        if state:
            return False
        state["step"] = 0.0
        state["square_avg"] = zeros_like(p)
        if group["momentum"] > 0:
            state["momentum_buffer"] = zeros_like(p)
        if group["centered"]:
            state["grad_avg"] = zeros_like(p)
        return True

    def _advance(self, state, fresh):
        state["step"] += 1               # kept for state_dict; the update does not use it

    def _buffers(self, group, state):
        return [state["square_avg"], state.get("grad_avg") if group["centered"] else None,
                state.get("momentum_buffer") if group["momentum"] > 0 else None]

    def _scalars(self, group, _):
        return (float(_scalar(group["lr"])), group["alpha"], 1.0 - group["alpha"], group["eps"],
                group["weight_decay"], group["momentum"], int(group["centered"]),
                int(group["momentum"] > 0), int(group["maximize"]))
