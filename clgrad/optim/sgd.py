"""SGD with momentum, dampening, Nesterov momentum, weight decay and maximize."""
from ..ops.creation import empty_like
from .optimizer import FusedOptimizer, _scalar

__all__ = ["SGD"]


class SGD(FusedOptimizer):
    """Stochastic gradient descent, torch's update rule (one fused kernel per parameter):
    g = grad (+ weight_decay * p); with momentum, b = momentum * b + (1 - dampening) * g
    (b = g at the first step) and g = b, or g + momentum * b with nesterov; p -= lr * g.

    >>> import clgrad
    >>> p = clgrad.nn.Parameter(clgrad.tensor([1.0, 2.0]))
    >>> opt = clgrad.optim.SGD([p], lr=0.1, momentum=0.9)
    >>> p.grad = clgrad.tensor([1.0, 1.0])
    >>> opt.step(); opt.step()
    >>> [round(v, 4) for v in p.tolist()]
    [0.71, 1.71]
    """

    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False,
                 *, maximize=False, foreach=None, differentiable=False, fused=None):
        if _scalar(lr) < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        if differentiable:
            raise NotImplementedError("clgrad's optimizers are not differentiable")
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                        nesterov=nesterov, maximize=maximize, foreach=foreach,
                        differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)

    _kernel = "sgd"

    def _init_state(self, group, p, state):
        if group["momentum"] == 0 or "momentum_buffer" in state:
            return False
        state["momentum_buffer"] = empty_like(p)   # the kernel writes it: b = g at first
        return True

    def _advance(self, state, fresh):
        return fresh

    def _buffers(self, group, state):
        return [state["momentum_buffer"] if group["momentum"] != 0 else None]

    def _scalars(self, group, first):
        return (float(_scalar(group["lr"])), group["weight_decay"], group["momentum"],
                1.0 - group["dampening"], int(group["momentum"] != 0), int(group["nesterov"]),
                int(group["maximize"]), int(first))
