"""Adagrad, Adadelta, Adamax, NAdam and RAdam with torch's arguments, defaults, state names and
single-tensor update rules, written as in-place clgrad ops under no_grad. The scalar
hyper-parameter arithmetic (bias corrections, NAdam's momentum schedule) is done on the host in
double precision, as torch does it for a float step."""
import math

from ..ops.creation import full_like, zeros_like
from ..ops.pointwise import maximum
from .optimizer import Optimizer, _no_grad_step, _scalar

__all__ = ["Adagrad", "Adadelta", "Adamax", "NAdam", "RAdam"]


def _check(lr=0.0, eps=0.0, weight_decay=0.0, betas=None):
    if not 0.0 <= _scalar(lr):
        raise ValueError(f"Invalid learning rate: {lr}")
    if not 0.0 <= eps:
        raise ValueError(f"Invalid epsilon value: {eps}")
    if not 0.0 <= weight_decay:
        raise ValueError(f"Invalid weight_decay value: {weight_decay}")
    if betas is not None:
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")


def _grads(group, optimizer):
    """(param, gradient with maximize applied, state) for each parameter with a gradient."""
    for p in group["params"]:
        if p.grad is None:
            continue
        g = -p.grad if group.get("maximize") else p.grad
        yield p, g, optimizer.state[p]


def _adam_moments_start(group, p, g, state, lr, wd, **extra):
    """The shared start of NAdam's and RAdam's step: state on first use, the step count, weight
    decay (decoupled or into the gradient), and the two moments; returns the gradient."""
    if not state:
        state["step"] = 0.0
        state.update(extra)
        state["exp_avg"] = zeros_like(p)
        state["exp_avg_sq"] = zeros_like(p)
    state["step"] += 1
    if wd:
        if group["decoupled_weight_decay"]:
            p.mul_(1 - lr * wd)
        else:
            g = g + wd * p
    beta1, beta2 = group["betas"]
    state["exp_avg"].lerp_(g, 1 - beta1)
    state["exp_avg_sq"].mul_(beta2).addcmul_(g, g, value=1 - beta2)
    return g


class Adagrad(Optimizer):
    """Adagrad: sum += g^2; p -= lr / (1 + (step - 1) lr_decay) * g / (sqrt(sum) + eps).

    >>> import clgrad
    >>> p = clgrad.nn.Parameter(clgrad.tensor([1.0]))
    >>> opt = clgrad.optim.Adagrad([p], lr=0.1)
    >>> p.grad = clgrad.tensor([2.0]); opt.step(); round(p.item(), 4)
    0.9
    """

    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0,
                 eps=1e-10, foreach=None, *, maximize=False, differentiable=False, fused=None):
        _check(lr, eps, weight_decay)
        if not 0.0 <= lr_decay:
            raise ValueError(f"Invalid lr_decay value: {lr_decay}")
        if not 0.0 <= initial_accumulator_value:
            raise ValueError(f"Invalid initial_accumulator_value value: "
                             f"{initial_accumulator_value}")
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)
        # torch makes Adagrad's state at construction
        for group in self.param_groups:
            for p in group["params"]:
                self.state[p]["step"] = 0.0
                self.state[p]["sum"] = full_like(p, group["initial_accumulator_value"])

    @_no_grad_step
    def step(self):
        """One update of every parameter that has a gradient."""
        for group in self.param_groups:
            for p, g, state in _grads(group, self):
                if not state:
                    state["step"] = 0.0
                    state["sum"] = full_like(p, group["initial_accumulator_value"])
                state["step"] += 1
                if group["weight_decay"]:
                    g = g + group["weight_decay"] * p
                clr = _scalar(group["lr"]) / (1 + (state["step"] - 1) * group["lr_decay"])
                state["sum"].addcmul_(g, g, value=1)
                p.addcdiv_(g, state["sum"].sqrt() + group["eps"], value=-clr)


class Adadelta(Optimizer):
    """Adadelta: square_avg and acc_delta as running averages (rho); the update is
    sqrt(acc_delta + eps) / sqrt(square_avg + eps) * g, scaled by lr.

    >>> import clgrad
    >>> p = clgrad.nn.Parameter(clgrad.tensor([1.0]))
    >>> opt = clgrad.optim.Adadelta([p])
    >>> p.grad = clgrad.tensor([2.0]); opt.step(); round(p.item(), 5)
    0.99684
    """

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *,
                 capturable=False, maximize=False, differentiable=False):
        _check(lr, eps, weight_decay)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize,
                        capturable=capturable, foreach=foreach, differentiable=differentiable)
        super().__init__(params, defaults)

    @_no_grad_step
    def step(self):
        """One update of every parameter that has a gradient."""
        for group in self.param_groups:
            rho, eps = group["rho"], group["eps"]
            for p, g, state in _grads(group, self):
                if not state:
                    state["step"] = 0.0
                    state["square_avg"] = zeros_like(p)
                    state["acc_delta"] = zeros_like(p)
                state["step"] += 1
                if group["weight_decay"]:
                    g = g + group["weight_decay"] * p
                sq, acc = state["square_avg"], state["acc_delta"]
                sq.mul_(rho).addcmul_(g, g, value=1 - rho)
                delta = (acc + eps).sqrt() / (sq + eps).sqrt() * g
                acc.mul_(rho).addcmul_(delta, delta, value=1 - rho)
                p.add_(delta, alpha=-_scalar(group["lr"]))


class Adamax(Optimizer):
    """Adamax (Adam with the infinity norm): exp_inf = max(beta2 exp_inf, |g| + eps);
    p -= lr / (1 - beta1^step) * exp_avg / exp_inf.

    >>> import clgrad
    >>> p = clgrad.nn.Parameter(clgrad.tensor([1.0]))
    >>> opt = clgrad.optim.Adamax([p], lr=0.1)
    >>> p.grad = clgrad.tensor([2.0]); opt.step(); round(p.item(), 4)
    0.9
    """

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 foreach=None, *, maximize=False, differentiable=False, capturable=False):
        _check(lr, eps, weight_decay, betas)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    @_no_grad_step
    def step(self):
        """One update of every parameter that has a gradient."""
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for p, g, state in _grads(group, self):
                if not state:
                    state["step"] = 0.0
                    state["exp_avg"] = zeros_like(p)
                    state["exp_inf"] = zeros_like(p)
                state["step"] += 1
                if group["weight_decay"]:
                    g = g + group["weight_decay"] * p
                state["exp_avg"].lerp_(g, 1 - beta1)
                state["exp_inf"].copy_(maximum(state["exp_inf"] * beta2, g.abs() + group["eps"]))
                clr = _scalar(group["lr"]) / (1 - beta1 ** state["step"])
                p.addcdiv_(state["exp_avg"], state["exp_inf"], value=-clr)


class NAdam(Optimizer):
    """Adam with Nesterov momentum and torch's momentum schedule
    mu_t = beta1 (1 - 0.5 * 0.96^(t * momentum_decay)); decoupled_weight_decay gives NAdamW.

    >>> import clgrad
    >>> p = clgrad.nn.Parameter(clgrad.tensor([1.0]))
    >>> opt = clgrad.optim.NAdam([p], lr=0.1)
    >>> p.grad = clgrad.tensor([2.0]); opt.step(); round(p.item(), 4)
    0.8944
    """

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 momentum_decay=4e-3, decoupled_weight_decay=False, *, foreach=None,
                 maximize=False, capturable=False, differentiable=False):
        _check(lr, eps, weight_decay, betas)
        if not 0.0 <= momentum_decay:
            raise ValueError(f"Invalid momentum_decay value: {momentum_decay}")
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        momentum_decay=momentum_decay,
                        decoupled_weight_decay=decoupled_weight_decay, maximize=maximize,
                        foreach=foreach, capturable=capturable, differentiable=differentiable)
        super().__init__(params, defaults)

    @_no_grad_step
    def step(self):
        """One update of every parameter that has a gradient."""
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            lr, wd, md = _scalar(group["lr"]), group["weight_decay"], group["momentum_decay"]
            for p, g, state in _grads(group, self):
                g = _adam_moments_start(group, p, g, state, lr, wd, mu_product=1.0)
                step = state["step"]
                bias_correction2 = 1 - beta2 ** step
                mu = beta1 * (1.0 - 0.5 * 0.96 ** (step * md))
                mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((step + 1) * md))
                state["mu_product"] *= mu
                mu_product_next = state["mu_product"] * mu_next
                denom = (state["exp_avg_sq"] / bias_correction2).sqrt() + group["eps"]
                p.addcdiv_(g, denom, value=-lr * (1.0 - mu) / (1.0 - state["mu_product"]))
                p.addcdiv_(state["exp_avg"], denom, value=-lr * mu_next / (1.0 - mu_product_next))


class RAdam(Optimizer):
    """Rectified Adam: the adaptive step only once the variance of the adaptive learning rate is
    tractable (rho_t > 5), plain momentum before; decoupled_weight_decay gives RAdamW.

    >>> import clgrad
    >>> p = clgrad.nn.Parameter(clgrad.tensor([1.0]))
    >>> opt = clgrad.optim.RAdam([p], lr=0.1)
    >>> p.grad = clgrad.tensor([2.0]); opt.step(); round(p.item(), 4)
    0.8
    """

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False,
                 capturable=False, differentiable=False):
        _check(lr, eps, weight_decay, betas)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        decoupled_weight_decay=decoupled_weight_decay, maximize=maximize,
                        foreach=foreach, capturable=capturable, differentiable=differentiable)
        super().__init__(params, defaults)

    @_no_grad_step
    def step(self):
        """One update of every parameter that has a gradient."""
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            lr, wd = _scalar(group["lr"]), group["weight_decay"]
            rho_inf = 2 / (1 - beta2) - 1
            for p, g, state in _grads(group, self):
                _adam_moments_start(group, p, g, state, lr, wd)
                step = state["step"]
                bias_correction1 = 1 - beta1 ** step
                bias_correction2 = 1 - beta2 ** step
                corrected = state["exp_avg"] / bias_correction1
                rho_t = rho_inf - 2 * step * (beta2 ** step) / bias_correction2
                if rho_t > 5.0:
                    rect = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf /
                                     ((rho_inf - 4) * (rho_inf - 2) * rho_t))
                    adaptive = math.sqrt(bias_correction2) / (state["exp_avg_sq"].sqrt()
                                                              + group["eps"])
                    p.add_(corrected * adaptive * (lr * rect), alpha=-1.0)
                else:
                    p.add_(corrected * lr, alpha=-1.0)
