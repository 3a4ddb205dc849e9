"""L-BFGS: the limited-memory quasi-Newton method of minFunc as torch.optim.LBFGS runs it (the
two-loop recursion over the last history_size steps, the initial Hessian scale y.s / y.y, the
first step min(1, 1/|g|_1) * lr), optionally with a strong-Wolfe line search. The parameters are
handled as one flat vector; dot products are read to the host (the method is sequential)."""
from ..autograd.grad_mode import enable_grad, no_grad
from ..ops.join import cat
from .optimizer import Optimizer

__all__ = ["LBFGS"]


def _cubic_min(x1, f1, g1, x2, f2, g2, lo, hi):
    """The minimiser of the cubic through (x1, f1, g1) and (x2, f2, g2), clamped to [lo, hi];
    the middle of [lo, hi] when the cubic has none."""
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    disc = d1 * d1 - g1 * g2
    if disc < 0:
        return (lo + hi) / 2
    d2 = disc ** 0.5 * (1 if x2 > x1 else -1)
    x = x2 - (x2 - x1) * (g2 + d2 - d1) / (g2 - g1 + 2 * d2)
    return min(max(x, lo), hi)


def _strong_wolfe(evaluate, f0, g0, d, t, c1=1e-4, c2=0.9, tolerance_change=1e-9, max_ls=25):
    """A step length t along d satisfying the strong Wolfe conditions (Nocedal & Wright,
    algorithms 3.5 and 3.6): bracket, then zoom with cubic interpolation. evaluate(t) returns
    (loss, flat gradient) at x + t d. Returns (loss, gradient, t, evaluations)."""
    gtd0 = g0.dot(d).item()
    d_max = d.abs().max().item()
    t_prev, f_prev, g_prev, gtd_prev = 0.0, f0, g0, gtd0
    evals = 0
    bracket = None
    f, g = f0, g0
    for i in range(max_ls):
        f, g = evaluate(t)
        evals += 1
        gtd = g.dot(d).item()
        if f > f0 + c1 * t * gtd0 or (i > 0 and f >= f_prev):
            bracket = [(t_prev, f_prev, g_prev, gtd_prev), (t, f, g, gtd)]
            break
        if abs(gtd) <= -c2 * gtd0:
            return f, g, t, evals
        if gtd >= 0:
            bracket = [(t, f, g, gtd), (t_prev, f_prev, g_prev, gtd_prev)]
            break
        # extrapolate: a longer step, by the cubic through the last two points
        t_new = _cubic_min(t_prev, f_prev, gtd_prev, t, f, gtd, t + 0.01 * (t - t_prev), t * 10)
        t_prev, f_prev, g_prev, gtd_prev = t, f, g, gtd
        t = t_new
    if bracket is None:
        return f, g, t, evals
    # zoom: bracket[0] is the lower-loss end
    if bracket[0][1] > bracket[1][1]:
        bracket.reverse()
    while evals < max_ls:
        (ta, fa, ga, gtda), (tb, fb, gb, gtdb) = bracket
        if abs(tb - ta) * d_max < tolerance_change:
            break
        lo, hi = min(ta, tb), max(ta, tb)
        t = _cubic_min(ta, fa, gtda, tb, fb, gtdb, lo, hi)
        margin = 0.1 * (hi - lo)
        t = min(max(t, lo + margin), hi - margin)           # stay inside the bracket
        f, g = evaluate(t)
        evals += 1
        gtd = g.dot(d).item()
        if f > f0 + c1 * t * gtd0 or f >= fa:
            bracket[1] = (t, f, g, gtd)
        else:
            if abs(gtd) <= -c2 * gtd0:
                return f, g, t, evals
            if gtd * (tb - ta) >= 0:
                bracket[1] = bracket[0]
            bracket[0] = (t, f, g, gtd)
        if bracket[0][1] > bracket[1][1]:
            bracket.reverse()
    ta, fa, ga, _ = bracket[0]
    return fa, ga, ta, evals


class LBFGS(Optimizer):
    """L-BFGS, torch's arguments and state: step(closure) runs up to max_iter iterations (at
    most max_eval evaluations of the closure, which must recompute the loss and its gradients)
    and returns the first loss.

    >>> import clgrad
    >>> x = clgrad.nn.Parameter(clgrad.tensor([3.0, -2.0]))
    >>> opt = clgrad.optim.LBFGS([x], line_search_fn="strong_wolfe")
    >>> def closure():
    ...     opt.zero_grad()
    ...     loss = ((x - 1) ** 2).sum()
    ...     loss.backward()
    ...     return loss
    >>> _ = opt.step(closure)
    >>> [round(v, 4) for v in x.tolist()]
    [1.0, 1.0]
    """

    def __init__(self, params, lr=1, max_iter=20, max_eval=None, tolerance_grad=1e-7,
                 tolerance_change=1e-9, history_size=100, line_search_fn=None):
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        if line_search_fn not in (None, "strong_wolfe"):
            raise RuntimeError("only 'strong_wolfe' is supported")
        defaults = dict(lr=lr, max_iter=max_iter, max_eval=max_eval,
                        tolerance_grad=tolerance_grad, tolerance_change=tolerance_change,
                        history_size=history_size, line_search_fn=line_search_fn)
        super().__init__(params, defaults)
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]

    def _flat_grad(self):
        return cat([p.grad.reshape(-1) if p.grad is not None else p.new_zeros(p.numel())
                    for p in self._params])

    def _add(self, step, direction):
        """x += step * direction, direction flat over all parameters."""
        offset = 0
        for p in self._params:
            n = p.numel()
            p.add_(direction[offset:offset + n].view_as(p), alpha=step)
            offset += n

    def _evaluate(self, closure, x0, t, d):
        self._set(x0)
        self._add(t, d)
        with enable_grad():
            loss = float(closure())
        return loss, self._flat_grad()

    def _set(self, flat):
        offset = 0
        for p in self._params:
            n = p.numel()
            p.copy_(flat[offset:offset + n].view_as(p))
            offset += n

    @no_grad()
    def step(self, closure):
        """Run the iterations; closure re-evaluates the model and returns the loss."""
        if closure is None:
            raise RuntimeError("LBFGS needs a closure that reevaluates the model and returns "
                               "the loss")
        group = self.param_groups[0]
        lr, max_iter, max_eval = group["lr"], group["max_iter"], group["max_eval"]
        tol_grad, tol_change = group["tolerance_grad"], group["tolerance_change"]
        history = group["history_size"]
        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)

        with enable_grad():
            orig_loss = closure()
        loss = float(orig_loss)
        evals = 1
        state["func_evals"] += 1
        g = self._flat_grad()
        if g.abs().max().item() <= tol_grad:
            return orig_loss

        d, t = state.get("d"), state.get("t")
        old_dirs, old_stps, ro = state.get("old_dirs", []), state.get("old_stps", []), \
            state.get("ro", [])
        h_diag = state.get("H_diag", 1.0)
        prev_g, prev_loss = state.get("prev_flat_grad"), state.get("prev_loss")
        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1
            if state["n_iter"] == 1:
                d = -g
                old_dirs, old_stps, ro, h_diag = [], [], [], 1.0
            else:
                y = g - prev_g
                s = d * t
                ys = y.dot(s).item()
                if ys > 1e-10:                       # keep the pair only with positive curvature
                    if len(old_dirs) == history:
                        old_dirs.pop(0), old_stps.pop(0), ro.pop(0)
                    old_dirs.append(y)
                    old_stps.append(s)
                    ro.append(1.0 / ys)
                    h_diag = ys / y.dot(y).item()
                # two-loop recursion: d = -H g with the stored pairs
                q = -g
                alphas = [0.0] * len(old_dirs)
                for i in range(len(old_dirs) - 1, -1, -1):
                    alphas[i] = old_stps[i].dot(q).item() * ro[i]
                    q = q - alphas[i] * old_dirs[i]
                d = q * h_diag
                for i in range(len(old_dirs)):
                    beta = old_dirs[i].dot(d).item() * ro[i]
                    d = d + old_stps[i] * (alphas[i] - beta)
            prev_g, prev_loss = g.clone(), loss
            t = min(1.0, 1.0 / g.abs().sum().item()) * lr if state["n_iter"] == 1 else lr
            gtd = g.dot(d).item()
            if gtd > -tol_change:                    # not a descent direction any more
                break
            ls_evals = 0
            if group["line_search_fn"] == "strong_wolfe":
                x0 = cat([p.reshape(-1) for p in self._params]).clone()
                loss, g, t, ls_evals = _strong_wolfe(
                    lambda step: self._evaluate(closure, x0, step, d), loss, g, d, t,
                    tolerance_change=tol_change)
                self._set(x0)
                self._add(t, d)
            else:
                self._add(t, d)
                if n_iter != max_iter:
                    with enable_grad():
                        loss = float(closure())
                    g = self._flat_grad()
                    ls_evals = 1
            evals += ls_evals
            state["func_evals"] += ls_evals
            if n_iter == max_iter or evals >= max_eval:
                break
            if g.abs().max().item() <= tol_grad:
                break
            if (d * t).abs().max().item() <= tol_change or abs(loss - prev_loss) < tol_change:
                break
        state.update(d=d, t=t, old_dirs=old_dirs, old_stps=old_stps, ro=ro, H_diag=h_diag,
                     prev_flat_grad=prev_g, prev_loss=prev_loss)
        return orig_loss
