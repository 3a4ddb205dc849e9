"""ASGD (averaged SGD) and Rprop (resilient backpropagation) with torch's arguments, defaults,
state names and update rules, as in-place clgrad ops under no_grad."""
from ..ops.creation import full_like, zeros_like
from ..ops.pointwise import where
from .adaptive import _check
from .optimizer import Optimizer, _no_grad_step, _scalar

__all__ = ["ASGD", "Rprop"]


class ASGD(Optimizer):
    """Averaged SGD: p = p (1 - lambd eta) - eta g, and ax, the average of the iterates from
    step t0 on; eta = lr / (1 + lambd lr step)^alpha.

    >>> import clgrad
    >>> p = clgrad.nn.Parameter(clgrad.tensor([1.0]))
    >>> opt = clgrad.optim.ASGD([p], lr=0.1)
    >>> p.grad = clgrad.tensor([2.0]); opt.step(); round(p.item(), 4)
    0.8
    """

    def __init__(self, params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0,
                 foreach=None, maximize=False, differentiable=False, capturable=False):
        _check(lr, weight_decay=weight_decay)
        defaults = dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay,
                        foreach=foreach, maximize=maximize, capturable=capturable,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    @_no_grad_step
    def step(self):
        """One update of every parameter that has a gradient."""
        for group in self.param_groups:
            lr, lambd = _scalar(group["lr"]), group["lambd"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                g = -p.grad if group["maximize"] else p.grad
                state = self.state[p]
                if not state:
                    state["step"] = 0.0
                    state["eta"] = lr
                    state["mu"] = 1.0
                    state["ax"] = zeros_like(p)
                state["step"] += 1
                if group["weight_decay"]:
                    g = g + group["weight_decay"] * p
                eta = state["eta"]
                p.mul_(1 - lambd * eta)
                p.add_(g, alpha=-eta)
                if state["mu"] != 1:
                    state["ax"].add_((p - state["ax"]) * state["mu"])
                else:
                    state["ax"].copy_(p)
                step = state["step"]
                state["eta"] = lr / ((1 + lambd * lr * step) ** group["alpha"])
                state["mu"] = 1 / max(1, step - group["t0"])


class Rprop(Optimizer):
    """Resilient backpropagation: each element's step size grows by etas[1] while its gradient
    keeps its sign and shrinks by etas[0] when it flips (that step then skipped), clamped to
    step_sizes; p -= sign(g) * step_size.

    >>> import clgrad
    >>> p = clgrad.nn.Parameter(clgrad.tensor([1.0]))
    >>> opt = clgrad.optim.Rprop([p], lr=0.1)
    >>> p.grad = clgrad.tensor([2.0]); opt.step(); round(p.item(), 4)
    0.9
    """

    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *,
                 capturable=False, foreach=None, maximize=False, differentiable=False):
        _check(lr)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        defaults = dict(lr=lr, etas=etas, step_sizes=step_sizes, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    @_no_grad_step
    def step(self):
        """One update of every parameter that has a gradient."""
        for group in self.param_groups:
            etaminus, etaplus = group["etas"]
            lo, hi = group["step_sizes"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                g = -p.grad if group["maximize"] else p.grad
                state = self.state[p]
                if not state:
                    state["step"] = 0.0
                    state["prev"] = zeros_like(p)
                    state["step_size"] = full_like(g, _scalar(group["lr"]))
                state["step"] += 1
                s = (g * state["prev"]).sign()
                factor = where(s > 0, s * 0 + etaplus, where(s < 0, s * 0 + etaminus, s * 0 + 1))
                state["step_size"].mul_(factor).clamp_(lo, hi)
                g = where(s < 0, g * 0, g)              # after a sign flip: no step this time
                p.addcmul_(g.sign(), state["step_size"], value=-1)
                state["prev"].copy_(g)
