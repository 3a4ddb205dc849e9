"""RMSprop (smoothing constant alpha, momentum, centered, weight decay, maximize)."""
from ..ops.creation import zeros_like
from ..kernels import optim as _fused
from .optimizer import Optimizer, _no_grad_step, _scalar

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
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

    @_no_grad_step
    def step(self):
        """One update of every parameter that has a gradient; step(closure) re-evaluates the
        loss first and returns it."""
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if not state:
                    state["step"] = 0.0
                    state["square_avg"] = zeros_like(p)
                    if group["momentum"] > 0:
                        state["momentum_buffer"] = zeros_like(p)
                    if group["centered"]:
                        state["grad_avg"] = zeros_like(p)
                state["step"] += 1
                _fused.rmsprop(p, p.grad, state["square_avg"],
                               state.get("grad_avg") if group["centered"] else None,
                               state.get("momentum_buffer") if group["momentum"] > 0 else None,
                               lr=float(_scalar(group["lr"])), alpha=group["alpha"],
                               eps=group["eps"], weight_decay=group["weight_decay"],
                               momentum=group["momentum"], centered=group["centered"],
                               maximize=group["maximize"])
