"""Optimizers against numpy implementations of torch's update rules (same hyper-parameters and
starting weights give the same trajectories to float32 rounding, for every option), their
bookkeeping and state dicts, and the learning-rate schedulers against their formulas. Then
Adagrad, Adadelta, Adamax, NAdam, RAdam, ASGD and Rprop against numpy versions of the update
rules torch documents, the other schedulers against their formulas, and LBFGS."""
import copy
import io
import itertools
import math
from bisect import bisect_right

import numpy as np
import pytest

import clgrad
from clgrad import nn, optim
from clgrad.optim import lr_scheduler
from clgrad.optim import lr_scheduler as S
from clgrad.runtime import kernels
from helpers import float_dtypes, to_np

f32 = np.float32


# ---- numpy references (float32, torch's order of operations) -----------------------------------
def ref_sgd(p, grads, lr, momentum=0, dampening=0, weight_decay=0, nesterov=False,
            maximize=False):
    s = p.dtype.type                     # hyper-parameters in the parameters' precision
    p, buf, out = p.copy(), None, []
    for g in grads:
        g = -g if maximize else g
        if weight_decay:
            g = g + s(weight_decay) * p
        if momentum:
            buf = g.copy() if buf is None else buf * s(momentum) + s(1 - dampening) * g
            g = g + s(momentum) * buf if nesterov else buf
        p = p - s(lr) * g
        out.append(p)
    return out


def ref_adam(p, grads, lr, betas, eps, weight_decay=0, amsgrad=False, maximize=False,
             decoupled=False):
    b1, b2 = betas
    p = p.copy()
    m, v, vmax, out = np.zeros_like(p), np.zeros_like(p), np.zeros_like(p), []
    for t, g in enumerate(grads, 1):
        g = -g if maximize else g
        if weight_decay:
            if decoupled:
                p = p * f32(1 - lr * weight_decay)
            else:
                g = g + f32(weight_decay) * p
        m = m + f32(1 - b1) * (g - m)
        v = v * f32(b2) + f32(1 - b2) * g * g
        step_size, bc2_sqrt = lr / (1 - b1 ** t), math.sqrt(1 - b2 ** t)
        if amsgrad:
            vmax = np.maximum(vmax, v)
            denom = np.sqrt(vmax) / f32(bc2_sqrt) + f32(eps)
        else:
            denom = np.sqrt(v) / f32(bc2_sqrt) + f32(eps)
        p = p - f32(step_size) * m / denom
        out.append(p)
    return out


def ref_rmsprop(p, grads, lr, alpha, eps, weight_decay=0, momentum=0, centered=False,
                maximize=False):
    p = p.copy()
    sq, ga, buf, out = np.zeros_like(p), np.zeros_like(p), np.zeros_like(p), []
    for g in grads:
        g = -g if maximize else g
        if weight_decay:
            g = g + f32(weight_decay) * p
        sq = sq * f32(alpha) + f32(1 - alpha) * g * g
        if centered:
            ga = ga + f32(1 - alpha) * (g - ga)
            avg = np.sqrt(sq - ga * ga) + f32(eps)
        else:
            avg = np.sqrt(sq) + f32(eps)
        if momentum:
            buf = buf * f32(momentum) + g / avg
            p = p - f32(lr) * buf
        else:
            p = p - f32(lr) * g / avg
        out.append(p)
    return out


def trajectory(cls, p0, grads, dt=clgrad.float32, **kw):
    """The parameter after each step of optimizer cls fed the given gradients."""
    p = nn.Parameter(clgrad.tensor(p0, dtype=dt))
    opt = cls([p], **kw)
    out = []
    for g in grads:
        p.grad = clgrad.tensor(g, dtype=dt)
        opt.step()
        out.append(to_np(p).astype(np.float64))
    return out, opt, p


def problem(shape=(5, 7), steps=5, seed=0):
    rng = np.random.default_rng(seed)
    p0 = rng.normal(size=shape).astype(np.float32)
    return p0, [rng.normal(size=shape).astype(np.float32) for _ in range(steps)]


def assert_same_path(got, want, rtol=1e-5, atol=1e-6):
    for step, (a, b) in enumerate(zip(got, want)):
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, err_msg=f"step {step + 1}")


def case_id(kw):
    return ",".join(f"{k}={v}" for k, v in kw.items())


SGD_CASES = [dict(momentum=m, dampening=d, nesterov=n, weight_decay=w, maximize=x)
             for m, d, n, w, x in itertools.product((0, 0.9), (0, 0.3), (False, True), (0, 0.1),
                                                    (False, True))
             if not (n and (m == 0 or d != 0))]
ADAM_CASES = [dict(amsgrad=a, weight_decay=w, maximize=x)
              for a, w, x in itertools.product((False, True), (0, 0.1), (False, True))]
RMSPROP_CASES = [dict(momentum=m, centered=c, weight_decay=w, maximize=x)
                 for m, c, w, x in itertools.product((0, 0.9), (False, True), (0, 0.1),
                                                     (False, True))]


@pytest.mark.parametrize("kw", SGD_CASES, ids=case_id)
def test_sgd_matches_reference(device, kw):
    p0, grads = problem()
    got, _, _ = trajectory(optim.SGD, p0, grads, lr=0.1, **kw)
    assert_same_path(got, ref_sgd(p0, grads, 0.1, **kw))


@pytest.mark.parametrize("cls", ["Adam", "AdamW"])
@pytest.mark.parametrize("kw", ADAM_CASES, ids=case_id)
def test_adam_matches_reference(device, cls, kw):
    p0, grads = problem(seed=1)
    got, _, _ = trajectory(getattr(optim, cls), p0, grads, lr=0.01, betas=(0.8, 0.95), eps=1e-6,
                           **kw)
    assert_same_path(got, ref_adam(p0, grads, 0.01, (0.8, 0.95), 1e-6,
                                   decoupled=cls == "AdamW", **kw))


@pytest.mark.parametrize("kw", RMSPROP_CASES, ids=case_id)
def test_rmsprop_matches_reference(device, kw):
    p0, grads = problem(seed=2)
    got, _, _ = trajectory(optim.RMSprop, p0, grads, lr=0.01, alpha=0.9, eps=1e-6, **kw)
    assert_same_path(got, ref_rmsprop(p0, grads, 0.01, 0.9, 1e-6, **kw))


def test_defaults_match_torch():
    p = [nn.Parameter(clgrad.zeros(1))]
    assert optim.SGD(p).defaults["lr"] == 1e-3
    a = optim.Adam(p).defaults
    assert (a["lr"], a["betas"], a["eps"], a["weight_decay"], a["amsgrad"]) == \
        (1e-3, (0.9, 0.999), 1e-8, 0, False)
    assert optim.AdamW(p).defaults["weight_decay"] == 1e-2
    assert optim.AdamW(p).defaults["decoupled_weight_decay"] is True
    r = optim.RMSprop(p).defaults
    assert (r["lr"], r["alpha"], r["eps"], r["momentum"], r["centered"]) == \
        (1e-2, 0.99, 1e-8, 0, False)
    # the default betas and eps over many steps, float32 to float32 rounding
    p0, grads = problem(shape=(33,), steps=20, seed=3)
    got, _, _ = trajectory(optim.Adam, p0, grads)
    assert_same_path(got, ref_adam(p0, grads, 1e-3, (0.9, 0.999), 1e-8))


def test_other_dtypes_and_layouts(device):
    p0, grads = problem(shape=(3, 11), steps=4, seed=4)
    want = ref_adam(p0, grads, 0.01, (0.9, 0.999), 1e-8, weight_decay=0.1)
    for dt in float_dtypes(device):
        got, _, p = trajectory(optim.Adam, p0, grads, dt=dt, lr=0.01, weight_decay=0.1)
        assert p.dtype is dt
        tol = {clgrad.float16: 5e-3, clgrad.bfloat16: 4e-2}.get(dt, 1e-5)
        assert_same_path(got, want, rtol=tol, atol=tol)
    if device.has_fp64:                    # float64: the reference in float64 agrees closely
        p064 = p0.astype(np.float64)
        g64 = [g.astype(np.float64) for g in grads]
        got, _, _ = trajectory(optim.SGD, p064, g64, dt=clgrad.float64, lr=0.1, momentum=0.9)
        ref = ref_sgd(p064, g64, 0.1, momentum=0.9)
        assert_same_path(got, ref, rtol=1e-12, atol=1e-13)
    # a parameter that is a non-contiguous view, and a non-contiguous gradient
    base = clgrad.tensor(p0.T.copy())
    p = nn.Parameter(base.t())
    assert not p.is_contiguous()
    opt = optim.SGD([p], lr=0.1, momentum=0.9)
    for g in grads:
        p.grad = clgrad.tensor(g.T.copy()).t()
        opt.step()
    assert_same_path([to_np(p)], [ref_sgd(p0, grads, 0.1, momentum=0.9)[-1]])
    np.testing.assert_allclose(to_np(base), to_np(p).T)       # written through the view
    # a contiguous parameter that starts inside its storage (an element offset)
    big = clgrad.zeros(40)
    q = nn.Parameter(big[3:36])
    with clgrad.no_grad():
        q.copy_(clgrad.tensor(p0.ravel()))
    opt = optim.Adam([q], lr=0.01)
    for g in grads:
        q.grad = clgrad.tensor(g.ravel())
        opt.step()
    assert_same_path([to_np(q)], [ref_adam(p0, grads, 0.01, (0.9, 0.999), 1e-8)[-1].ravel()])
    assert to_np(big)[:3].tolist() == [0.0] * 3 and to_np(big)[36:].tolist() == [0.0] * 4


MULTI_CASES = {
    "sgd momentum": lambda groups: optim.SGD(groups, lr=0.1, momentum=0.9, nesterov=True),
    "adam amsgrad": lambda groups: optim.Adam(groups, lr=0.01, amsgrad=True, weight_decay=0.1),
    "adamw": lambda groups: optim.AdamW(groups, lr=0.01),
    "rmsprop": lambda groups: optim.RMSprop(groups, lr=0.01, momentum=0.5, centered=True),
}


@pytest.mark.parametrize("name", sorted(MULTI_CASES))
def test_parameters_with_the_same_scalars_share_launches(device, name, monkeypatch):
    """Up to 8 parameters whose update has the same scalars (one group, one step count) go
    through one launch of the multi-tensor kernel: every size (0-d, tails that are not a vector's
    multiple, an element offset), bit for bit what one launch per parameter gives; a
    non-contiguous parameter or gradient, an empty parameter and a second group go on their own
    or in launches of their own."""
    from clgrad.kernels import optim as kopt
    dts = [clgrad.float32] + ([clgrad.float64] if device.has_fp64 else [])

    def run(multi):
        monkeypatch.setattr(kopt, "MULTI", multi)
        out, launched = [], []
        for dt in dts:
            shapes = [(), (1,), (17,), (33, 5), (1000,), (3,), (0,), (7, 3), (2,), (9,),
                      (40,), (5,)] + [(4,)] * 8
            arrays = [np.random.default_rng(1).standard_normal(s) for s in shapes]
            ps = [nn.Parameter(clgrad.tensor(a, dtype=dt)) for a in arrays]
            big = clgrad.zeros(50, dtype=dt)
            ps[10] = nn.Parameter(big[4:44])                 # an element offset
            ps[7] = nn.Parameter(clgrad.tensor(arrays[7].T.copy(), dtype=dt).t())  # strided
            opt = MULTI_CASES[name]([{"params": ps[:10]}, {"params": ps[10:], "lr": 0.02}])
            rng = np.random.default_rng(5)
            grads = [[rng.standard_normal(s) for s in shapes] for _ in range(3)]
            names = []
            kernels.launch_hooks.append(lambda d, k, *a: names.append(k.function_name))
            try:
                for step, gs in enumerate(grads):
                    for i, (p, g) in enumerate(zip(ps, gs)):
                        p.grad = None if (i == 2 and step == 1) else clgrad.tensor(g, dtype=dt)
                    ps[3].grad = clgrad.tensor(gs[3].T.copy(), dtype=dt).t()  # strided
                    opt.step()
            finally:
                kernels.launch_hooks.pop()
            out.append([to_np(p) for p in ps] + [to_np(v) for st in opt.state.values()
                                                 for v in st.values()
                                                 if isinstance(v, clgrad.Tensor)])
            launched.append([n for n in names if n.startswith(opt._kernel)])
        return out, launched
    one, one_names = run(1)
    many, many_names = run(8)
    for a, b in zip(one, many):
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x, y)
    kernel = MULTI_CASES[name]([nn.Parameter(clgrad.ones(1))])._kernel
    for ones, names in zip(one_names, many_names):
        # 19 parameters with gradients at steps 1 and 3, 18 at step 2 (the empty one launches
        # nothing)
        assert set(ones) == {kernel} and len(ones) == 56
        # per step, group 1: the strided parameter and the strided gradient alone, the other
        # seven (six at step 2) in one launch; group 2's ten: 8 in one launch, 2 in another.
        # At step 3, Adam's (17,) has taken a step fewer than the rest: its bias corrections
        # differ, and it goes alone
        alone = 3 * 2 + (kernel == "adam")
        assert names.count(kernel + "_x8") == 3 * 3 and names.count(kernel) == alone
        assert all(n in (kernel, kernel + "_x8") for n in names)


def test_step_details():
    a = nn.Parameter(clgrad.ones(3))
    b = nn.Parameter(clgrad.ones(2))
    opt = optim.SGD([a, b], lr=0.5)
    a.grad = clgrad.ones(3)
    v = a._version
    opt.step()                                    # b has no gradient: skipped, no state
    assert a.tolist() == [0.5] * 3 and b.tolist() == [1.0, 1.0] and a._version == v + 1
    calls = []

    def closure():
        calls.append(clgrad.is_grad_enabled())
        opt.zero_grad()
        loss = (a * a).sum()
        loss.backward()
        return loss
    loss = opt.step(closure)
    assert calls == [True] and loss.item() == 0.75
    np.testing.assert_allclose(to_np(a), [0.0] * 3, atol=1e-7)
    # an update between forward and backward is caught like any in-place change
    c = nn.Parameter(clgrad.ones(2))
    opt = optim.SGD([c], lr=0.1)
    y = (c * c).sum()
    c.grad = clgrad.ones(2)
    opt.step()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()
    # a tensor learning rate
    d = nn.Parameter(clgrad.zeros(1))
    opt = optim.Adam([d], lr=clgrad.tensor(0.5))
    d.grad = clgrad.tensor([-1.0])
    opt.step()
    assert d.item() == pytest.approx(0.5, rel=1e-5)


def test_param_groups_and_zero_grad():
    w, b, extra = (nn.Parameter(clgrad.ones(2)) for _ in range(3))
    opt = optim.SGD([{"params": [w]}, {"params": b, "lr": 1.0}], lr=0.1, momentum=0.5)
    assert [g["lr"] for g in opt.param_groups] == [0.1, 1.0]
    assert opt.param_groups[1]["momentum"] == 0.5 and opt.param_groups[1]["params"] == [b]
    w.grad, b.grad = clgrad.ones(2), clgrad.ones(2)
    opt.step()
    assert w.tolist() == pytest.approx([0.9, 0.9]) and b.tolist() == [0.0, 0.0]
    opt.add_param_group({"params": [extra], "momentum": 0})
    assert len(opt.param_groups) == 3 and opt.param_groups[2]["lr"] == 0.1
    with pytest.raises(ValueError, match="some parameters appear in more than one parameter group"):
        opt.add_param_group({"params": [w]})
    opt.zero_grad(set_to_none=False)
    assert w.grad.tolist() == [0.0, 0.0]
    opt.zero_grad()
    assert w.grad is None and b.grad is None
    named = optim.SGD([("weight", w), ("bias", b)], lr=0.1)
    assert named.param_groups[0]["param_names"] == ["weight", "bias"]
    assert "lr: 0.1" in repr(named) and repr(named).startswith("SGD (\nParameter Group 0\n")


def test_errors():
    p = [nn.Parameter(clgrad.zeros(1))]
    with pytest.raises(TypeError, match="should be an iterable of Tensors or dicts, but got "
                                        "clgrad.Float32Tensor"):
        optim.SGD(p[0], lr=0.1)
    with pytest.raises(ValueError, match="optimizer got an empty parameter list"):
        optim.Adam([])
    with pytest.raises(ValueError, match="can't optimize a non-leaf Tensor"):
        optim.SGD([p[0] * 2], lr=0.1)
    with pytest.raises(TypeError, match="ordering of tensors in sets will change"):
        optim.SGD(p, lr=0.1).add_param_group({"params": {nn.Parameter(clgrad.zeros(1))}})
    with pytest.raises(TypeError, match="optimizer can only optimize Tensors"):
        optim.SGD([1.0], lr=0.1)
    with pytest.raises(ValueError, match="Invalid learning rate: -1"):
        optim.SGD(p, lr=-1)
    with pytest.raises(ValueError, match="Invalid momentum value: -0.1"):
        optim.SGD(p, momentum=-0.1)
    with pytest.raises(ValueError, match="Nesterov momentum requires a momentum and zero "
                                         "dampening"):
        optim.SGD(p, momentum=0.9, dampening=0.1, nesterov=True)
    with pytest.raises(ValueError, match="Invalid beta parameter at index 1: 1.0"):
        optim.Adam(p, betas=(0.9, 1.0))
    with pytest.raises(ValueError, match="Invalid epsilon value: -1e-08"):
        optim.AdamW(p, eps=-1e-8)
    with pytest.raises(ValueError, match="Invalid weight_decay value: -1"):
        optim.Adam(p, weight_decay=-1)
    with pytest.raises(ValueError, match="Invalid alpha value: -0.5"):
        optim.RMSprop(p, alpha=-0.5)


@pytest.mark.parametrize("cls,kw", [(optim.SGD, dict(lr=0.1, momentum=0.9, nesterov=True)),
                                    (optim.Adam, dict(lr=0.01, amsgrad=True)),
                                    (optim.AdamW, dict(lr=0.01)),
                                    (optim.RMSprop, dict(lr=0.01, momentum=0.5, centered=True))])
def test_state_dict_resumes_exactly(cls, kw):
    p0, grads = problem(shape=(9,), steps=6, seed=5)
    a = nn.Parameter(clgrad.tensor(p0))
    opt_a = cls([a], **kw)
    for g in grads[:3]:
        a.grad = clgrad.tensor(g)
        opt_a.step()
    sd = opt_a.state_dict()
    assert sd["param_groups"][0]["params"] == [0] and set(sd["state"]) == {0}
    buf = io.BytesIO()                               # through a checkpoint, as in real use
    clgrad.save(sd, buf)
    buf.seek(0)
    sd = clgrad.load(buf)
    b = nn.Parameter(a.detach().clone())
    opt_b = cls([b])                                 # other options: the state dict sets them
    opt_b.load_state_dict(sd)
    assert opt_b.param_groups[0]["lr"] == kw["lr"] and opt_b.param_groups[0]["params"][0] is b
    for k, v in opt_a.state[a].items():
        w = opt_b.state[b][k]
        if isinstance(v, clgrad.Tensor):
            assert w is not v and w.tolist() == v.tolist()
        else:
            assert w == v
    for g in grads[3:]:
        a.grad, b.grad = clgrad.tensor(g), clgrad.tensor(g)
        opt_a.step()
        opt_b.step()
    assert a.tolist() == b.tolist()


def test_load_state_dict_errors_and_casts(device):
    p, q = nn.Parameter(clgrad.ones(2)), nn.Parameter(clgrad.ones(3))
    opt = optim.Adam([p, q], lr=0.1)
    p.grad, q.grad = clgrad.ones(2), clgrad.ones(3)
    opt.step()
    sd = opt.state_dict()
    with pytest.raises(ValueError, match="different number of parameter groups"):
        optim.Adam([{"params": [p]}, {"params": [q]}]).load_state_dict(sd)
    with pytest.raises(ValueError, match="doesn't match the size of optimizer's group"):
        optim.Adam([p]).load_state_dict(sd)
    if device.has_fp64:
        p64 = nn.Parameter(clgrad.ones(2, dtype=clgrad.float64))
        q64 = nn.Parameter(clgrad.ones(3, dtype=clgrad.float64))
        other = optim.Adam([p64, q64])
        other.load_state_dict(sd)                       # state follows the parameters' dtype
        assert other.state[p64]["exp_avg"].dtype is clgrad.float64
        p64.grad, q64.grad = clgrad.ones(2, dtype=clgrad.float64), clgrad.ones(3,
                                                                               dtype=clgrad.float64)
        other.step()
        assert other.state[q64]["step"] == 2.0
    tensor_step = dict(sd, state={0: dict(sd["state"][0], step=clgrad.tensor(1.0)),
                                  1: sd["state"][1]})
    fresh = optim.Adam([p, q])
    fresh.load_state_dict(tensor_step)                # torch's tensor step counts are accepted
    assert fresh.state[p]["step"] == 1.0


# ---- learning-rate schedulers ------------------------------------------------------------------
def lrs_of(make, steps, lr=1.0, opt_cls=optim.SGD, **opt_kw):
    opt = opt_cls([nn.Parameter(clgrad.zeros(1))], lr=lr, **opt_kw)
    sched = make(opt)
    out = [sched.get_last_lr()[0]]
    for _ in range(steps):
        opt.step()
        sched.step()
        out.append(sched.get_last_lr()[0])
        assert opt.param_groups[0]["lr"] == out[-1]
    return out, opt, sched


def test_step_multistep_exponential_lambda():
    got, _, _ = lrs_of(lambda o: lr_scheduler.StepLR(o, step_size=3, gamma=0.5), 10, lr=0.8)
    assert got == pytest.approx([0.8 * 0.5 ** (e // 3) for e in range(11)], rel=1e-12)
    ms = [2, 5, 5]
    got, _, _ = lrs_of(lambda o: lr_scheduler.MultiStepLR(o, milestones=ms, gamma=0.1), 8)
    assert got == pytest.approx([0.1 ** bisect_right(sorted(ms), e) for e in range(9)],
                                rel=1e-12)
    got, _, _ = lrs_of(lambda o: lr_scheduler.ExponentialLR(o, gamma=0.9), 6, lr=0.3)
    assert got == pytest.approx([0.3 * 0.9 ** e for e in range(7)], rel=1e-12)
    got, _, _ = lrs_of(lambda o: lr_scheduler.LambdaLR(o, lambda e: 1 / (e + 1)), 5, lr=0.6)
    assert got == pytest.approx([0.6 / (e + 1) for e in range(6)], rel=1e-12)
    with pytest.raises(ValueError, match="Expected 1 lr_lambdas, but got 2"):
        lr_scheduler.LambdaLR(optim.SGD([nn.Parameter(clgrad.zeros(1))]), [abs, abs])
    with pytest.raises(TypeError, match="is not an Optimizer"):
        lr_scheduler.StepLR(object(), 1)


@pytest.mark.parametrize("eta_min", [0.0, 0.05])
def test_cosine_annealing(eta_min):
    T = 7
    got, _, _ = lrs_of(lambda o: lr_scheduler.CosineAnnealingLR(o, T_max=T, eta_min=eta_min),
                       3 * T, lr=0.5)
    want = [eta_min + (0.5 - eta_min) * (1 + math.cos(math.pi * e / T)) / 2
            for e in range(3 * T + 1)]
    assert got == pytest.approx(want, rel=1e-9, abs=1e-12)


def np_one_cycle(step, total, max_lr, pct, div, final_div, strategy, three_phase, lo_m, hi_m):
    """lr and momentum of the 1cycle policy at a step, from its definition."""
    init, low = max_lr / div, max_lr / div / final_div

    def anneal(a, b, t):
        return b + (a - b) / 2 * (math.cos(math.pi * t) + 1) if strategy == "cos" else \
            (b - a) * t + a
    up = float(pct * total) - 1
    if three_phase:
        phases = [(up, init, max_lr, hi_m, lo_m), (2 * up, max_lr, init, lo_m, hi_m),
                  (total - 1, init, low, hi_m, hi_m)]
    else:
        phases = [(up, init, max_lr, hi_m, lo_m), (total - 1, max_lr, low, lo_m, hi_m)]
    start = 0.0
    for i, (end, a, b, ma, mb) in enumerate(phases):
        if step <= end or i == len(phases) - 1:
            t = (step - start) / (end - start)
            return anneal(a, b, t), anneal(ma, mb, t)
        start = end


@pytest.mark.parametrize("strategy,three_phase", [("cos", False), ("linear", False),
                                                  ("cos", True)])
def test_one_cycle(strategy, three_phase):
    total = 20
    opt = optim.SGD([nn.Parameter(clgrad.zeros(1))], lr=0.1, momentum=0.9)
    sched = lr_scheduler.OneCycleLR(opt, max_lr=2.0, total_steps=total, pct_start=0.25,
                                    anneal_strategy=strategy, three_phase=three_phase)
    for step in range(total):
        lr, mom = np_one_cycle(step, total, 2.0, 0.25, 25.0, 1e4, strategy, three_phase, 0.85,
                               0.95)
        assert sched.get_last_lr()[0] == pytest.approx(lr, rel=1e-12)
        assert opt.param_groups[0]["momentum"] == pytest.approx(mom, rel=1e-12)
        opt.step()
        if step < total - 1:
            sched.step()
    with pytest.raises(ValueError, match="Tried to step 21 times"):
        sched.step()
        sched.step()
    # Adam: beta1 cycles instead of momentum; epochs * steps_per_epoch gives the total
    adam = optim.Adam([nn.Parameter(clgrad.zeros(1))])
    lr_scheduler.OneCycleLR(adam, max_lr=0.01, epochs=2, steps_per_epoch=5)
    assert adam.param_groups[0]["betas"] == (0.95, 0.999)
    with pytest.raises(ValueError, match="You must define either total_steps OR"):
        lr_scheduler.OneCycleLR(adam, max_lr=0.01)
    with pytest.raises(ValueError, match="optimizer must support momentum or beta1"):
        class Plain(optim.Optimizer):
            pass
        lr_scheduler.OneCycleLR(Plain([nn.Parameter(clgrad.zeros(1))], {"lr": 0.1}), 1.0,
                                total_steps=3)


def test_scheduler_state_dict():
    def make(o):
        return lr_scheduler.CosineAnnealingLR(o, T_max=10, eta_min=0.01)
    lrs, opt, sched = lrs_of(make, 4, lr=0.5)
    sd = sched.state_dict()
    assert "optimizer" not in sd and sd["last_epoch"] == 4 and sd["base_lrs"] == [0.5]
    opt2 = optim.SGD([nn.Parameter(clgrad.zeros(1))], lr=0.5)
    sched2 = make(opt2)
    sched2.load_state_dict(sd)
    opt2.load_state_dict(opt.state_dict())
    for _ in range(3):
        sched.step()
        sched2.step()
    assert sched.get_last_lr() == sched2.get_last_lr()
    lam = lr_scheduler.LambdaLR(optim.SGD([nn.Parameter(clgrad.zeros(1))], lr=1.0),
                                lambda e: 0.5)
    assert lam.state_dict()["lr_lambdas"] == [None]
    ms = lr_scheduler.MultiStepLR(optim.SGD([nn.Parameter(clgrad.zeros(1))], lr=1.0), [1, 2])
    assert dict(ms.state_dict()["milestones"]) == {1: 1, 2: 1}


def test_scheduler_drives_training():
    """SGD + StepLR on a quadratic: every step uses the scheduled learning rate."""
    p0, grads = problem(shape=(4,), steps=6, seed=6)
    p = nn.Parameter(clgrad.tensor(p0))
    opt = optim.SGD([p], lr=0.2)
    sched = lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    want = p0.copy()
    for k, g in enumerate(grads):
        p.grad = clgrad.tensor(g)
        opt.step()
        want = want - f32(0.2 * 0.5 ** (k // 2)) * g
        sched.step()
    np.testing.assert_allclose(to_np(p), want, rtol=1e-6, atol=1e-7)


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
