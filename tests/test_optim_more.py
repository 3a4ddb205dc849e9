"""Adagrad, Adadelta, Adamax, NAdam, RAdam, ASGD and Rprop against numpy versions of the update
rules torch documents; the added schedulers against their formulas; state_dict round trips."""
import copy
import math

import numpy as np
import pytest

import clgrad
from clgrad.optim import lr_scheduler as S


def _grad(w):
    return w + np.cos(w)                      # the gradient of 0.5 w^2 + sin(w)


def _np_run(name, kw, w, steps):
    """numpy versions of torch's single-tensor update rules (float64 scalars)."""
    lr = kw.get("lr")
    wd = kw.get("weight_decay", 0.0)
    st = {}
    for t in range(1, steps + 1):
        g = _grad(w)
        if name == "Adagrad":
            s = st.setdefault("sum", np.full_like(w, kw.get("initial_accumulator_value", 0.0)))
            g = g + wd * w
            clr = lr / (1 + (t - 1) * kw.get("lr_decay", 0.0))
            s += g * g
            w = w - clr * g / (np.sqrt(s) + 1e-10)
        elif name == "Adadelta":
            sq = st.setdefault("sq", np.zeros_like(w))
            acc = st.setdefault("acc", np.zeros_like(w))
            g = g + wd * w
            sq[:] = 0.9 * sq + 0.1 * g * g
            delta = np.sqrt(acc + 1e-6) / np.sqrt(sq + 1e-6) * g
            acc[:] = 0.9 * acc + 0.1 * delta * delta
            w = w - lr * delta
        elif name == "Adamax":
            m = st.setdefault("m", np.zeros_like(w))
            u = st.setdefault("u", np.zeros_like(w))
            g = g + wd * w
            m[:] = 0.9 * m + 0.1 * g
            u[:] = np.maximum(0.999 * u, np.abs(g) + 1e-8)
            w = w - lr / (1 - 0.9 ** t) * m / u
        elif name in ("NAdam", "RAdam"):
            m = st.setdefault("m", np.zeros_like(w))
            v = st.setdefault("v", np.zeros_like(w))
            if kw.get("decoupled_weight_decay"):
                w = w * (1 - lr * wd)
            else:
                g = g + wd * w
            m[:] = 0.9 * m + 0.1 * g
            v[:] = 0.999 * v + 0.001 * g * g
            if name == "NAdam":
                mu = 0.9 * (1 - 0.5 * 0.96 ** (t * 4e-3))
                mu_next = 0.9 * (1 - 0.5 * 0.96 ** ((t + 1) * 4e-3))
                st["prod"] = st.get("prod", 1.0) * mu
                denom = np.sqrt(v / (1 - 0.999 ** t)) + 1e-8
                w = w - lr * (1 - mu) / (1 - st["prod"]) * g / denom \
                    - lr * mu_next / (1 - st["prod"] * mu_next) * m / denom
            else:
                rho_inf = 2 / (1 - 0.999) - 1
                rho = rho_inf - 2 * t * 0.999 ** t / (1 - 0.999 ** t)
                mhat = m / (1 - 0.9 ** t)
                if rho > 5:
                    r = math.sqrt((rho - 4) * (rho - 2) * rho_inf / ((rho_inf - 4) *
                                                                     (rho_inf - 2) * rho))
                    w = w - lr * mhat * r * math.sqrt(1 - 0.999 ** t) / (np.sqrt(v) + 1e-8)
                else:
                    w = w - lr * mhat
        elif name == "ASGD":
            eta, mu = st.get("eta", lr), st.get("mu", 1.0)
            ax = st.setdefault("ax", np.zeros_like(w))
            g = g + wd * w
            w = w * (1 - 1e-4 * eta) - eta * g
            ax[:] = ax + (w - ax) * mu if mu != 1 else w
            st["eta"] = lr / (1 + 1e-4 * lr * t) ** 0.75
            st["mu"] = 1 / max(1, t - kw.get("t0", 1e6))
        elif name == "Rprop":
            prev = st.setdefault("prev", np.zeros_like(w))
            size = st.setdefault("size", np.full_like(w, lr))
            s = np.sign(g * prev)
            size[:] = np.clip(size * np.where(s > 0, 1.2, np.where(s < 0, 0.5, 1.0)), 1e-6, 50)
            g = np.where(s < 0, 0.0, g)
            w = w - np.sign(g) * size
            prev[:] = g
    return w


CASES = [("Adagrad", dict(lr=0.1, lr_decay=0.01, weight_decay=0.1,
                          initial_accumulator_value=0.1)),
         ("Adadelta", dict(lr=0.5, weight_decay=0.1)),
         ("Adamax", dict(lr=0.05, weight_decay=0.1)),
         ("NAdam", dict(lr=0.05, weight_decay=0.1)),
         ("NAdam", dict(lr=0.05, weight_decay=0.1, decoupled_weight_decay=True)),
         ("RAdam", dict(lr=0.05, weight_decay=0.1)),
         ("RAdam", dict(lr=0.05, weight_decay=0.1, decoupled_weight_decay=True)),
         ("ASGD", dict(lr=0.05, t0=3)), ("Rprop", dict(lr=0.05))]


@pytest.mark.parametrize("name,kw", CASES, ids=[f"{n}-{len(k)}" for n, k in CASES])
def test_optimizers_follow_the_documented_rules(device, name, kw):
    w0 = np.random.default_rng(0).standard_normal((3, 4))
    p = clgrad.nn.Parameter(clgrad.tensor(w0))
    opt = getattr(clgrad.optim, name)([p], **kw)
    for _ in range(12):                       # 12 steps: RAdam's rectified phase starts at 6
        opt.zero_grad()
        (0.5 * (p * p).sum() + p.sin().sum()).backward()
        opt.step()
    np.testing.assert_allclose(p.detach().numpy(), _np_run(name, kw, w0, 12), rtol=1e-9,
                               atol=1e-12)
    # state_dict round trip: a fresh optimizer continues identically (a copy: as torch's, the
    # loaded state would otherwise share opt's state tensors)
    sd = copy.deepcopy(opt.state_dict())
    q = clgrad.nn.Parameter(p.detach().clone())
    opt2 = getattr(clgrad.optim, name)([q], **kw)
    opt2.load_state_dict(sd)
    for o, t in ((opt, p), (opt2, q)):
        o.zero_grad()
        (0.5 * (t * t).sum() + t.sin().sum()).backward()
        o.step()
    np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())


def test_maximize_and_errors():
    w = clgrad.nn.Parameter(clgrad.tensor([1.0], dtype=clgrad.float64))
    opt = clgrad.optim.Adagrad([w], lr=0.5, maximize=True)
    w.grad = clgrad.tensor([2.0], dtype=clgrad.float64)
    opt.step()
    assert w.item() == pytest.approx(1.5)
    with pytest.raises(ValueError, match="Invalid eta values"):
        clgrad.optim.Rprop([w], etas=(1.5, 1.2))
    with pytest.raises(ValueError, match="Invalid beta parameter at index 1"):
        clgrad.optim.NAdam([w], betas=(0.9, 1.0))


def _lrs(make, n=20, metrics=None):
    p = clgrad.nn.Parameter(clgrad.zeros(1))
    opt = clgrad.optim.SGD([p], lr=0.5, momentum=0.9)
    sched = make(opt)
    out = [opt.param_groups[0]["lr"]]
    for i in range(n):
        opt.step()
        sched.step(metrics[i]) if metrics else sched.step()
        out.append(opt.param_groups[0]["lr"])
    return out, opt


def test_schedulers_follow_their_formulas():
    close = lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-15)  # noqa: E731
    lrs, _ = _lrs(lambda o: S.MultiplicativeLR(o, lambda e: 0.9))
    close(lrs, [0.5 * 0.9 ** e for e in range(21)])
    lrs, _ = _lrs(lambda o: S.ConstantLR(o, factor=0.3, total_iters=4))
    close(lrs, [0.5 * (0.3 if e < 4 else 1.0) for e in range(21)])
    lrs, _ = _lrs(lambda o: S.LinearLR(o, start_factor=0.2, end_factor=0.9, total_iters=7))
    close(lrs, [0.5 * (0.2 + 0.7 * min(e, 7) / 7) for e in range(21)])
    lrs, _ = _lrs(lambda o: S.PolynomialLR(o, total_iters=10, power=2.0))
    close(lrs, [0.5 * (1 - min(e, 10) / 10) ** 2 for e in range(21)])
    lrs, _ = _lrs(lambda o: S.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2, eta_min=0.01))
    # periods of 3, 6, 12 epochs: T_cur restarts at 3 and 9
    want = []
    for e in range(21):
        t_cur, t_i = (e, 3) if e < 3 else (e - 3, 6) if e < 9 else (e - 9, 12)
        want.append(0.01 + 0.49 * (1 + math.cos(math.pi * t_cur / t_i)) / 2)
    close(lrs, want)
    lrs, opt = _lrs(lambda o: S.CyclicLR(o, 0.01, 0.5, step_size_up=4))
    close(lrs, [0.01 + 0.49 * (1 - abs(e % 8 - 4) / 4) for e in range(21)])
    assert opt.param_groups[0]["momentum"] == pytest.approx(0.9 - 0.1 * (1 - abs(20 % 8 - 4) / 4))
    lrs, _ = _lrs(lambda o: S.SequentialLR(o, [S.ConstantLR(o, 0.1, total_iters=10),
                                               S.ExponentialLR(o, 0.5)], milestones=[3]))
    close(lrs, [0.05] * 3 + [0.5 * 0.5 ** (e - 3) for e in range(3, 21)])
    lrs, _ = _lrs(lambda o: S.ChainedScheduler([S.ConstantLR(o, 0.5, total_iters=2),
                                                S.ExponentialLR(o, 0.9)]))
    close(lrs, [0.5 * 0.9 ** e * (0.5 if e < 2 else 1.0) for e in range(21)])


def test_reduce_lr_on_plateau():
    metrics = [1.0, 0.9, 0.9, 0.9, 0.9, 0.8, 0.8, 0.8, 0.8, 0.8, 0.8, 0.8]
    lrs, _ = _lrs(lambda o: S.ReduceLROnPlateau(o, patience=2, cooldown=1, factor=0.5,
                                                min_lr=0.1), len(metrics), metrics)
    # 3 epochs without improvement after 0.9 (epochs 3..5) -> halve at epoch 5's step; the
    # 0.8 improves; then 3 bad epochs -> halve again (cooldown 1 delays counting by one)
    assert lrs[0] == 0.5 and min(lrs) == 0.125 and lrs[-1] == 0.125
    assert lrs.index(0.25) == 5
    s = S.ReduceLROnPlateau(clgrad.optim.SGD([clgrad.nn.Parameter(clgrad.zeros(1))], lr=1.0),
                            mode="max", patience=0, min_lr=0.5)
    for m in (1.0, 0.5, 0.4):
        s.step(m)
    assert s.get_last_lr() == [0.5]                                  # min_lr holds
    with pytest.raises(ValueError, match="Factor should be < 1.0"):
        S.ReduceLROnPlateau(s.optimizer, factor=1.0)


def test_lbfgs_minimises(device):
    # a convex quadratic: the minimiser is A^-1 b, in closed form
    rng = np.random.default_rng(4)
    M = rng.standard_normal((5, 5))
    A, b = M @ M.T + 5 * np.eye(5), rng.standard_normal(5)
    At, bt = clgrad.tensor(A), clgrad.tensor(b)
    for ls in (None, "strong_wolfe"):
        x = clgrad.nn.Parameter(clgrad.zeros(5, dtype=clgrad.float64))
        opt = clgrad.optim.LBFGS([x], lr=1 if ls else 0.2, max_iter=200,
                                 line_search_fn=ls, tolerance_grad=1e-10, tolerance_change=1e-15)

        def closure():
            opt.zero_grad()
            loss = 0.5 * (x * (At @ x)).sum() - (bt * x).sum()
            loss.backward()
            return loss
        first = opt.step(closure)
        np.testing.assert_allclose(x.detach().numpy(), np.linalg.solve(A, b), rtol=1e-6)
        state = opt.state[x]
        assert first.item() == 0.0 and state["n_iter"] >= 1 and state["func_evals"] >= 2
    # Rosenbrock from (-1.5, 2) with the line search
    y = clgrad.nn.Parameter(clgrad.tensor([-1.5, 2.0], dtype=clgrad.float64))
    opt = clgrad.optim.LBFGS([y], line_search_fn="strong_wolfe", max_iter=100)

    def rosen():
        opt.zero_grad()
        loss = 100 * (y[1] - y[0] ** 2) ** 2 + (1 - y[0]) ** 2
        loss.backward()
        return loss
    opt.step(rosen)
    np.testing.assert_allclose(y.detach().numpy(), [1.0, 1.0], rtol=1e-5)
    with pytest.raises(ValueError, match="parameter groups"):
        clgrad.optim.LBFGS([{"params": [y]}, {"params": [x]}])
    with pytest.raises(RuntimeError, match="needs a closure"):
        opt.step(None)
