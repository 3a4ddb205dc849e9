"""Adafactor (torch.optim.Adafactor, torch 2.5+ semantics): second moments of matrices kept as
row and column means only (sublinear memory), relative step sizes and update clipping."""
import math

import numpy as np

from .. import dtypes
from ..ops.creation import zeros_like
from .optimizer import Optimizer, _no_grad_step, _scalar

__all__ = ["Adafactor"]


def _eps_of(dtype):
    if dtype == dtypes.bfloat16:
        return 2.0 ** -7
    return float(np.finfo(dtype.np).eps)


class Adafactor(Optimizer):
    """Adafactor as torch implements it. With t the step, beta2_t = 1 - t^beta2_decay,
    rho_t = min(lr, 1/sqrt(t)) and alpha_t = max(eps2, RMS(p)) * rho_t: p *= 1 - lr *
    weight_decay; for a matrix (the last two dims) the row and column means of g^2 move towards
    the new ones by 1 - beta2_t and V = R C / max(mean(R), eps1), for a vector V is the running
    average of g^2 itself; U = g / max(sqrt(V), eps1), and p -= alpha_t U / max(1, RMS(U) / d).
    eps = (eps1, eps2), eps1 None meaning the dtype's machine epsilon. No host read per step:
    the norms stay on the device.

    >>> import clgrad
    >>> p = clgrad.nn.Parameter(clgrad.tensor([[1.0, 2.0], [3.0, 4.0]]))
    >>> opt = clgrad.optim.Adafactor([p], lr=0.01)
    >>> p.grad = clgrad.ones(2, 2); opt.step()
    >>> [round(v, 5) for v in p.flatten().tolist()]
    [0.97261, 1.97261, 2.97261, 3.97261]
    """

    def __init__(self, params, lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0,
                 weight_decay=0.0, *, foreach=None, maximize=False):
        if not 0.0 <= _scalar(lr):
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 >= beta2_decay:
            raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if eps[0] is not None and not 0.0 <= eps[0]:
            raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not 0.0 <= eps[1]:
            raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not 1.0 <= d:
            raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight_decay should be >= 0 but is: {weight_decay}")
        defaults = dict(lr=lr, beta2_decay=beta2_decay, eps=eps, d=d, weight_decay=weight_decay,
                        foreach=foreach, maximize=maximize)
        super().__init__(params, defaults)

    @_no_grad_step
    def step(self):
        """One update of every parameter that has a gradient; step(closure) re-evaluates the
        loss first and returns it."""
        for group in self.param_groups:
            lr = float(_scalar(group["lr"]))
            eps1, eps2 = group["eps"]
            d, wd = group["d"], group["weight_decay"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                if p.is_complex():
                    raise RuntimeError("Adafactor does not support complex parameters")
                grad = -p.grad if group["maximize"] else p.grad
                state = self.state[p]
                if not state:
                    # the step count stays on the host: beta2_t and rho_t are host numbers
                    state["step"] = 0.0
                    if grad.dim() > 1:
                        state["row_var"] = grad.new_zeros(tuple(grad.shape[:-1]) + (1,))
                        state["col_var"] = grad.new_zeros(tuple(grad.shape[:-2]) +
                                                          (1, grad.shape[-1]))
                    else:
                        state["variance"] = zeros_like(grad)
                e1 = _eps_of(p.dtype) if eps1 is None else eps1
                state["step"] += 1
                step = state["step"]
                one_minus_beta2_t = step ** group["beta2_decay"]
                rho_t = min(lr, 1 / step ** 0.5)
                n = max(p.numel(), 1)
                alpha = (p.norm(2) / math.sqrt(n)).clamp_min(eps2) * rho_t
                if wd != 0:
                    p.mul_(1 - lr * wd)
                if grad.dim() > 1:
                    row_var, col_var = state["row_var"], state["col_var"]
                    row_var.lerp_(grad.square().mean(-1, keepdim=True), one_minus_beta2_t)
                    col_var.lerp_(grad.square().mean(-2, keepdim=True), one_minus_beta2_t)
                    var_estimate = (row_var @ col_var) / \
                        row_var.mean(-2, keepdim=True).clamp_min(e1)
                else:
                    variance = state["variance"]
                    variance.lerp_(grad * grad, one_minus_beta2_t)
                    var_estimate = variance
                update = var_estimate.clamp_min(e1 * e1).rsqrt() * grad
                denom = (update.norm(2) / (math.sqrt(max(update.numel(), 1)) * d)).clamp_min(1.0)
                p.sub_(update * (alpha / denom))
