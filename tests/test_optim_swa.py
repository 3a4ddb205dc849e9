"""optim.swa_utils (AveragedModel, the averaging functions, SWALR, update_bn) and
optim.Adafactor against numpy references of torch's rules."""
import math

import numpy as np
import pytest

import clgrad
from clgrad import nn
from clgrad.optim.swa_utils import (SWALR, AveragedModel, get_ema_avg_fn, get_ema_multi_avg_fn,
                                    get_swa_avg_fn, get_swa_multi_avg_fn, update_bn)


def _set_weights(model, rs):
    with clgrad.no_grad():
        for p in model.parameters():
            p.copy_(clgrad.tensor(rs.randn(*p.shape).astype(np.float32)))
    return [p.detach().numpy().copy() for p in model.parameters()]


@pytest.mark.parametrize("kind", ["swa", "swa_fn", "ema_multi", "ema_fn"])
def test_averaged_model(device, kind):
    rs = np.random.RandomState(0)
    model = nn.Sequential(nn.Linear(3, 2), nn.BatchNorm1d(2))
    kw = {"swa": {}, "swa_fn": {"avg_fn": get_swa_avg_fn()},
          "ema_multi": {"multi_avg_fn": get_ema_multi_avg_fn(0.8)},
          "ema_fn": {"avg_fn": get_ema_avg_fn(0.8)}}[kind]
    avg = AveragedModel(model, **kw)
    assert list(avg.state_dict())[0] == "n_averaged"
    snaps = []
    for _ in range(3):
        snaps.append(_set_weights(model, rs))
        model(clgrad.randn(4, 3))                     # moves BatchNorm's running statistics
        avg.update_parameters(model)
    assert int(avg.n_averaged) == 3
    for i, p in enumerate(avg.module.parameters()):
        if kind.startswith("swa"):
            ref = np.mean([s[i] for s in snaps], axis=0)
        else:
            ref = snaps[0][i]
            for s in snaps[1:]:
                ref = 0.8 * ref + 0.2 * s[i]
        np.testing.assert_allclose(p.detach().numpy(), ref, rtol=1e-5, atol=1e-6)
    # without use_buffers the buffers are the model's latest
    np.testing.assert_array_equal(avg.module[1].running_mean.numpy(),
                                  model[1].running_mean.numpy())
    x = clgrad.randn(2, 3)
    avg.eval()
    np.testing.assert_array_equal(avg(x).detach().numpy(), avg.module(x).detach().numpy())


def test_averaged_model_use_buffers_and_errors(device):
    rs = np.random.RandomState(1)
    model = nn.BatchNorm1d(2)
    avg = AveragedModel(model, use_buffers=True)
    means = []
    for _ in range(2):
        model(clgrad.tensor(rs.randn(5, 2).astype(np.float32)))
        means.append(model.running_mean.numpy().copy())
        avg.update_parameters(model)
    np.testing.assert_allclose(avg.module.running_mean.numpy(), np.mean(means, 0), rtol=1e-5)
    with pytest.raises(AssertionError, match="Only one of avg_fn and multi_avg_fn"):
        AveragedModel(model, avg_fn=get_swa_avg_fn(), multi_avg_fn=get_swa_multi_avg_fn())
    with pytest.raises(ValueError, match="Invalid decay value 1.5"):
        get_ema_multi_avg_fn(1.5)
    with pytest.raises(ValueError, match="Invalid decay value -0.1"):
        get_ema_avg_fn(-0.1)


@pytest.mark.parametrize("strategy", ["cos", "linear"])
def test_swalr(device, strategy):
    p = nn.Parameter(clgrad.zeros(1))
    opt = clgrad.optim.SGD([{"params": [p]}, {"params": [nn.Parameter(clgrad.zeros(1))],
                                              "lr": 0.5}], lr=1.0)
    sched = SWALR(opt, swa_lr=[0.1, 0.2], anneal_epochs=3, anneal_strategy=strategy)
    anneal = (lambda t: (1 - math.cos(math.pi * t)) / 2) if strategy == "cos" else (lambda t: t)
    got = [[g["lr"] for g in opt.param_groups]]
    for _ in range(5):
        opt.step()
        sched.step()
        got.append(sched.get_last_lr())
    for step, lrs in enumerate(got):
        a = anneal(min(1, step / 3))
        np.testing.assert_allclose(lrs, [0.1 * a + 1.0 * (1 - a), 0.2 * a + 0.5 * (1 - a)],
                                   rtol=1e-12)
    sd = sched.state_dict()
    assert "anneal_func" not in sd and sd["_anneal_strategy"] == strategy
    other = SWALR(clgrad.optim.SGD([nn.Parameter(clgrad.zeros(1))], lr=1.0), 0.3)
    other.load_state_dict(sd)
    assert other.anneal_epochs == 3 and other.anneal_func(1.0) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="anneal_strategy must be one of 'cos' or 'linear'"):
        SWALR(opt, 0.1, anneal_strategy="step")
    with pytest.raises(ValueError, match="anneal_epochs must be equal or greater than 0"):
        SWALR(opt, 0.1, anneal_epochs=-1)


def test_update_bn(device):
    rs = np.random.RandomState(2)
    model = nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2, momentum=0.3))
    model.eval()
    batches = [rs.randn(6, 2).astype(np.float32) * 3 + 1 for _ in range(3)]
    loader = [(clgrad.tensor(b), clgrad.zeros(6)) for b in batches]      # (input, target) pairs
    update_bn(loader, model)
    assert not model.training and model[1].momentum == 0.3
    W, b = model[0].weight.detach().numpy(), model[0].bias.detach().numpy()
    hs = [x @ W.T + b for x in batches]
    np.testing.assert_allclose(model[1].running_mean.numpy(),
                               np.mean([h.mean(0) for h in hs], 0), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(model[1].running_var.numpy(),
                               np.mean([h.var(0, ddof=1) for h in hs], 0), rtol=1e-4)
    assert int(model[1].num_batches_tracked) == 3
    update_bn(loader, nn.Linear(2, 2))                 # no BatchNorm: nothing to do


# ---- Adafactor -----------------------------------------------------------------------------------
def _adafactor_ref(p, grads, lr, beta2_decay, eps1, eps2, d, wd, maximize):
    # torch's _single_tensor_adafactor in numpy (float64)
    p = p.astype(np.float64).copy()
    eps1 = np.finfo(np.float32).eps if eps1 is None else eps1
    row = col = var = None
    for t, g in enumerate(grads, 1):
        g = -g if maximize else g
        beta = t ** beta2_decay
        rho = min(lr, 1 / math.sqrt(t))
        alpha = max(eps2, np.sqrt((p ** 2).mean())) * rho
        p *= 1 - lr * wd
        if g.ndim > 1:
            rm, cm = (g ** 2).mean(-1, keepdims=True), (g ** 2).mean(-2, keepdims=True)
            row = rm * beta if row is None else row + beta * (rm - row)
            col = cm * beta if col is None else col + beta * (cm - col)
            v = (row @ col) / np.maximum(row.mean(-2, keepdims=True), eps1)
        else:
            var = g * g * beta if var is None else var + beta * (g * g - var)
            v = var
        u = g / np.sqrt(np.maximum(v, eps1 * eps1))
        p -= alpha / max(1.0, np.sqrt((u ** 2).mean()) / d) * u
    return p


@pytest.mark.parametrize("shape,kw", [((3, 4), {}),
                                      ((2, 2, 3), {"weight_decay": 0.1, "maximize": True}),
                                      ((5,), {"lr": 0.5, "eps": (1e-3, 1e-2), "d": 2.0,
                                              "beta2_decay": -0.5})])
def test_adafactor(device, shape, kw):
    rs = np.random.RandomState(3)
    p0 = rs.randn(*shape).astype(np.float32)
    grads = [rs.randn(*shape).astype(np.float32) for _ in range(4)]
    p = nn.Parameter(clgrad.tensor(p0))
    opt = clgrad.optim.Adafactor([p], **kw)
    for g in grads:
        p.grad = clgrad.tensor(g)
        opt.step()
    args = dict(lr=0.01, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0, weight_decay=0.0,
                maximize=False)
    args.update(kw)
    ref = _adafactor_ref(p0, grads, args["lr"], args["beta2_decay"], args["eps"][0],
                         args["eps"][1], args["d"], args["weight_decay"], args["maximize"])
    np.testing.assert_allclose(p.detach().numpy(), ref, rtol=1e-5, atol=1e-6)
    st = opt.state[p]
    assert st["step"] == 4
    if len(shape) > 1:
        assert st["row_var"].shape == shape[:-1] + (1,)
        assert st["col_var"].shape == shape[:-2] + (1, shape[-1])
    else:
        assert st["variance"].shape == shape


def test_adafactor_errors_and_state_dict(device):
    p = nn.Parameter(clgrad.zeros(2))
    for kw, msg in [({"lr": -1.0}, "Learning rate should be >= 0"),
                    ({"beta2_decay": 0.5}, "beta2_decay should be <= 0"),
                    ({"eps": (-1.0, 1e-3)}, "epsilon1 should be >= 0"),
                    ({"eps": (None, -1.0)}, "epsilon2 should be >= 0"),
                    ({"d": 0.5}, "Clipping threshold d should be >= 1"),
                    ({"weight_decay": -1.0}, "weight_decay should be >= 0")]:
        with pytest.raises(ValueError, match=msg):
            clgrad.optim.Adafactor([p], **kw)
    opt = clgrad.optim.Adafactor([p])
    p.grad = clgrad.ones(2)
    opt.step()
    opt2 = clgrad.optim.Adafactor([nn.Parameter(clgrad.zeros(2))])
    opt2.load_state_dict(opt.state_dict())
    assert opt2.param_groups[0]["beta2_decay"] == -0.8 and opt2.param_groups[0]["eps"] == \
        (None, 1e-3)
