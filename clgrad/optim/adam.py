"""Adam and AdamW (amsgrad, weight decay coupled or decoupled, maximize)."""
import math

from ..ops.creation import zeros_like
from ..kernels import optim as _fused
from .optimizer import Optimizer, _no_grad_step, _scalar

__all__ = ["Adam", "AdamW"]


class Adam(Optimizer):
    """Adam, torch's update rule (one fused kernel per parameter): with t the step,
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

    @_no_grad_step
    def step(self):
        """One update of every parameter that has a gradient; step(closure) re-evaluates the
        loss first and returns it."""
        for group in self.param_groups:
            lr = float(_scalar(group["lr"]))
            beta1, beta2 = (float(_scalar(b)) for b in group["betas"])
            wd = group["weight_decay"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if not state:
                    # the step count stays on the host: the bias corrections are host numbers
                    state["step"] = 0.0
                    state["exp_avg"] = zeros_like(p)
                    state["exp_avg_sq"] = zeros_like(p)
                    if group["amsgrad"]:
                        state["max_exp_avg_sq"] = zeros_like(p)
                state["step"] += 1
                step = state["step"]
                bias_correction1 = 1 - beta1 ** step
                bias_correction2 = 1 - beta2 ** step
                _fused.adam(p, p.grad, state["exp_avg"], state["exp_avg_sq"],
                            state.get("max_exp_avg_sq") if group["amsgrad"] else None,
                            step_size=lr / bias_correction1, beta1=beta1, beta2=beta2,
                            bias_correction2_sqrt=math.sqrt(bias_correction2), eps=group["eps"],
                            weight_decay=wd, decay=1 - lr * wd,
                            decoupled=group["decoupled_weight_decay"],
                            amsgrad=group["amsgrad"], maximize=group["maximize"])


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
