"""Adam and AdamW (amsgrad, weight decay coupled or decoupled, maximize)."""
import math

from ..ops.creation import zeros_like
from .optimizer import FusedOptimizer, _scalar

__all__ = ["Adam", "AdamW"]


class Adam(FusedOptimizer):
    """Adam, torch's update rule (one fused kernel, up to 8 parameters a launch): with t the step,
    m = lerp(m, g, 1 - beta1), v = beta2 v + (1 - beta2) g^2, and
    p -= lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps); amsgrad uses the running
    maximum of v. weight_decay adds wd * p to g (decoupled_weight_decay: p *= 1 - lr * wd, as
    AdamW does).

    >>> import clgrad
    >>> p = clgrad.nn.Parameter(clgrad.tensor([1.0, -1.0]))
    >>> opt = clgrad.optim.Adam([p], lr=0.1)
    >>> p.grad = clgrad.tensor([3.0, -0.5]); opt.step()
    >>> [round(v, 4) for v in p.tolist()]
    [0.9, -0.9]
    """

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 amsgrad=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False, fused=None, decoupled_weight_decay=False):
        if not 0.0 <= _scalar(lr):
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= _scalar(betas[0]) < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= _scalar(betas[1]) < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if differentiable:
            raise NotImplementedError("clgrad's optimizers are not differentiable")
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                        maximize=maximize, foreach=foreach, capturable=capturable,
                        differentiable=differentiable, fused=fused,
                        decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)

    _kernel = "adam"

    def _init_state(self, group, p, state):
        if state:
            return False
        # the step count stays on the host: the bias corrections are host numbers
        state["step"] = 0.0
        state["exp_avg"] = zeros_like(p)
        state["exp_avg_sq"] = zeros_like(p)
        if group["amsgrad"]:
            state["max_exp_avg_sq"] = zeros_like(p)
        return True

    def _advance(self, state, fresh):
        state["step"] += 1
        return state["step"]

    def _buffers(self, group, state):
        return [state["exp_avg"], state["exp_avg_sq"],
                state.get("max_exp_avg_sq") if group["amsgrad"] else None]

    def _scalars(self, group, step):
        lr = float(_scalar(group["lr"]))
        beta1, beta2 = (float(_scalar(b)) for b in group["betas"])
        wd = group["weight_decay"]
        return (lr / (1 - beta1 ** step), beta1, 1.0 - beta1, beta2, 1.0 - beta2,
                math.sqrt(1 - beta2 ** step), group["eps"], wd, 1 - lr * wd,
                int(group["decoupled_weight_decay"]), int(group["amsgrad"]),
                int(group["maximize"]))


class AdamW(Adam):
    """Adam with decoupled weight decay (p *= 1 - lr * weight_decay before the update);
    weight_decay defaults to 0.01.

    >>> import clgrad
    >>> p = clgrad.nn.Parameter(clgrad.tensor([1.0]))
    >>> opt = clgrad.optim.AdamW([p], lr=0.1, weight_decay=0.5)
    >>> p.grad = clgrad.tensor([0.0]); opt.step(); round(p.item(), 4)
    0.95
    """

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2,
                 amsgrad=False, *, maximize=False, foreach=None, capturable=False,
                 differentiable=False, fused=None):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach,
                         maximize=maximize, capturable=capturable, differentiable=differentiable,
                         fused=fused, decoupled_weight_decay=True)
