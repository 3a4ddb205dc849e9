"""Muon (torch.optim.Muon): momentum SGD for 2-D weights whose update is orthogonalised by a
Newton-Schulz iteration, as torch computes it (in bfloat16, five quintic steps)."""
import math

from .. import dtypes
from ..ops.creation import zeros_like
from ..ops.linalg import addmm
from .optimizer import Optimizer, _no_grad_step, _scalar

__all__ = ["Muon"]

# torch's defaults: the quintic's coefficients, the norm floor and the number of steps
NS_COEFFICIENTS = (3.4445, -4.775, 2.0315)
EPS = 1e-7
NS_STEPS = 5


def zeropower_via_newtonschulz(grad, ns_coefficients=NS_COEFFICIENTS, ns_steps=NS_STEPS,
                               eps=EPS):
    """An approximate orthogonalisation U S' V^T of a matrix G = U S V^T (S' near 1) by the
    quintic Newton-Schulz iteration X <- a X + (b A + c A A) X with A = X X^T, on X = G / |G|
    in bfloat16 (the wide side last), as torch's Muon.

    >>> import clgrad
    >>> Q = zeropower_via_newtonschulz(clgrad.tensor([[3.0, 0.0], [0.0, 0.5]]))
    >>> [round(v, 1) for v in Q.float().diagonal().tolist()]
    [0.7, 1.0]
    """
    if ns_steps >= 100:
        raise ValueError("Number of steps must be less than 100 for computational efficiency")
    if grad.dim() != 2:
        raise ValueError("Input tensor gradient must be a 2D matrix")
    if len(ns_coefficients) != 3:
        raise ValueError("Coefficients must be a tuple of exactly 3 values")
    a, b, c = ns_coefficients
    X = grad.to(dtypes.bfloat16)
    tall = grad.shape[0] > grad.shape[1]
    if tall:
        X = X.T
    X = X / X.norm().clamp(min=eps)           # the spectral norm at most 1
    for _ in range(ns_steps):
        # addmm: each product and its added term rounded to bfloat16 once, as torch's
        A = X @ X.T
        B = addmm(A, A, A, beta=b, alpha=c)
        X = addmm(X, B, X, beta=a)
    return X.T if tall else X


def _adjusted_lr(lr, adjust_lr_fn, shape):
    A, B = shape[:2]
    if adjust_lr_fn is None or adjust_lr_fn == "original":
        return lr * math.sqrt(max(1, A / B))
    if adjust_lr_fn == "match_rms_adamw":
        return lr * 0.2 * math.sqrt(max(A, B))
    return lr


class Muon(Optimizer):
    """torch's Muon: B <- mu B + (1 - mu) g (a lerp), the update g + mu (B - g) with nesterov
    (else B), orthogonalised by zeropower_via_newtonschulz; then p *= 1 - lr * weight_decay and
    p -= lr' * update, with lr' = lr * sqrt(max(1, rows / cols)) ("original") or
    0.2 * lr * sqrt(max(rows, cols)) ("match_rms_adamw"). 2-D parameters only.

    >>> import clgrad
    >>> p = clgrad.nn.Parameter(clgrad.eye(2))
    >>> opt = clgrad.optim.Muon([p], lr=0.1, weight_decay=0.0)
    >>> p.grad = clgrad.tensor([[1.0, 0.0], [0.0, 1.0]]); opt.step()
    >>> [round(v, 2) for v in p.flatten().tolist()]
    [0.89, 0.0, 0.0, 0.89]
    """

    def __init__(self, params, lr=1e-3, weight_decay=0.1, momentum=0.95, nesterov=True,
                 ns_coefficients=NS_COEFFICIENTS, eps=EPS, ns_steps=NS_STEPS, adjust_lr_fn=None):
        if not 0.0 <= _scalar(lr):
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 <= momentum:
            raise ValueError(f"momentum should be >= 0 but is: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight decay should be >= 0 but is: {weight_decay}")
        if adjust_lr_fn not in (None, "original", "match_rms_adamw"):
            raise ValueError(f"Adjust learning rate function {adjust_lr_fn} is not supported")
        defaults = dict(lr=lr, weight_decay=weight_decay, momentum=momentum, nesterov=nesterov,
                        ns_coefficients=ns_coefficients, eps=eps, ns_steps=ns_steps,
                        adjust_lr_fn=adjust_lr_fn)
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                if p.dim() != 2:
                    raise ValueError(f"Muon only supports 2D parameters whereas we found a "
                                     f"parameter with size: {p.size()}")

    @_no_grad_step
    def step(self):
        """One update of every parameter that has a gradient; step(closure) re-evaluates the
        loss first and returns it."""
        for group in self.param_groups:
            lr = float(_scalar(group["lr"]))
            mu = group["momentum"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                g = p.grad
                if g.dim() != 2:
                    raise ValueError("Param gradient must be a 2D matrix")
                state = self.state[p]
                if "momentum_buffer" not in state:
                    state["momentum_buffer"] = zeros_like(g)
                buf = state["momentum_buffer"]
                buf.lerp_(g, 1 - mu)
                update = g.lerp(buf, mu) if group["nesterov"] else buf
                update = zeropower_via_newtonschulz(update, group["ns_coefficients"],
                                                    group["ns_steps"], group["eps"])
                p.mul_(1 - lr * group["weight_decay"])
                p.add_(update.to(p.dtype), alpha=-_adjusted_lr(lr, group["adjust_lr_fn"],
                                                                p.shape))
