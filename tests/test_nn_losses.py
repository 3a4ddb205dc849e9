"""Losses (modules and functional forms) against numpy references of torch's definitions, for
every reduction, class weights, ignore_index, label smoothing, probability targets and
pos_weight; gradients with gradcheck; numerical stability; torch's errors."""
import numpy as np
import pytest

import clgrad
import clgrad.nn.functional as F
from clgrad import nn
from helpers import grad_dtype, grad_tols, to_np

REDUCTIONS = ("mean", "sum", "none")


@pytest.fixture
def dt(device):
    clgrad.set_default_dtype(grad_dtype(device))
    return grad_dtype(device)


def T(a, dtype=None):
    a = np.asarray(a)
    if dtype is None:
        dtype = clgrad.get_default_dtype() if a.dtype.kind == "f" else clgrad.int64
    return clgrad.tensor(a, dtype=dtype)


def close(t, expected):
    tol = dict(rtol=1e-10, atol=1e-12) if t.dtype is clgrad.float64 else dict(rtol=2e-5, atol=2e-6)
    np.testing.assert_allclose(to_np(t).astype(np.float64), np.asarray(expected, np.float64), **tol)


def reduce(loss, reduction):
    return {"mean": np.mean, "sum": np.sum, "none": lambda v: v}[reduction](loss)


def gradcheck(fn, *inputs, device):
    assert clgrad.autograd.gradcheck(fn, inputs, **grad_tols(device))


def log_softmax(a, axis):
    m = a.max(axis, keepdims=True)
    return a - m - np.log(np.exp(a - m).sum(axis, keepdims=True))


# ---- regression losses -------------------------------------------------------------------------
def test_regression_losses(device, dt):
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(4, 5)) * 2, rng.normal(size=(4, 5))
    d = a - b
    for red in REDUCTIONS:
        close(F.mse_loss(T(a), T(b), reduction=red), reduce(d ** 2, red))
        close(nn.MSELoss(reduction=red)(T(a), T(b)), reduce(d ** 2, red))
        close(F.l1_loss(T(a), T(b), reduction=red), reduce(np.abs(d), red))
        close(nn.L1Loss(reduction=red)(T(a), T(b)), reduce(np.abs(d), red))
        for beta in (0.0, 0.5, 1.0, 3.0):
            ref = np.abs(d) if beta == 0 else np.where(np.abs(d) < beta, 0.5 * d ** 2 / beta,
                                                       np.abs(d) - 0.5 * beta)
            close(nn.SmoothL1Loss(reduction=red, beta=beta)(T(a), T(b)), reduce(ref, red))
        for delta in (0.5, 2.0):
            ref = np.where(np.abs(d) < delta, 0.5 * d ** 2, delta * (np.abs(d) - 0.5 * delta))
            close(nn.HuberLoss(reduction=red, delta=delta)(T(a), T(b)), reduce(ref, red))
    x = clgrad.tensor(a[:2], dtype=dt, requires_grad=True)
    y = clgrad.tensor(b[:2], dtype=dt)
    for fn in (F.mse_loss, F.l1_loss, lambda p, q: F.smooth_l1_loss(p, q, beta=0.7),
               lambda p, q: F.huber_loss(p, q, delta=0.7)):
        gradcheck(lambda p: fn(p, y), x, device=device)
    with pytest.raises(RuntimeError, match="smooth_l1_loss does not support negative values"):
        F.smooth_l1_loss(T(a), T(b), beta=-1.0)
    with pytest.raises(ValueError, match="meanish is not a valid value for reduction"):
        F.mse_loss(T(a), T(b), reduction="meanish")
    with pytest.warns(UserWarning, match="Using a target size"):
        F.mse_loss(T(a), T(b[0]))
    with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated"):
        loss = nn.MSELoss(size_average=False)
    assert loss.reduction == "sum"


# ---- nll and cross entropy ---------------------------------------------------------------------
def np_nll(logp, target, weight, ignore_index, reduction):
    """logp (N, C, ...) and target (N, ...), torch's definition."""
    C = logp.shape[1]
    w = np.ones(C) if weight is None else weight
    keep = target != ignore_index
    safe = np.where(keep, target, 0)
    picked = np.take_along_axis(logp, safe[:, None], 1)[:, 0]
    wt = np.where(keep, w[safe], 0.0)
    loss = -picked * wt
    if reduction == "none":
        return loss
    return loss.sum() if reduction == "sum" else loss.sum() / wt.sum()


def np_cross_entropy(x, target, weight, ignore_index, reduction, smoothing):
    C = x.shape[1]
    logp = log_softmax(x, 1)
    wshape = (1, C) + (1,) * (x.ndim - 2)
    w = np.ones(C) if weight is None else weight
    if target.shape == x.shape:                        # probabilities
        t = target * (1 - smoothing) + smoothing / C
        term = -(logp * t * w.reshape(wshape)).sum(1)
        if reduction == "none":
            return term
        return term.sum() if reduction == "sum" else term.sum() / (x.size / C)
    nll = np_nll(logp, target, weight, ignore_index, reduction)
    keep = target != ignore_index
    smooth = np.where(keep, -(logp * w.reshape(wshape)).sum(1), 0.0)
    if reduction == "sum":
        smooth = smooth.sum()
    elif reduction == "mean":
        smooth = smooth.sum() / np.where(keep, w[np.where(keep, target, 0)], 0).sum()
    return (1 - smoothing) * nll + smoothing / C * smooth


@pytest.mark.parametrize("shape", [(6, 5), (3, 4, 2, 3)], ids=["2d", "4d"])
def test_cross_entropy_and_nll(device, dt, shape):
    rng = np.random.default_rng(1)
    x = rng.normal(size=shape) * 3
    C = shape[1]
    tshape = (shape[0],) + shape[2:]
    classes = rng.integers(0, C, size=tshape)
    classes.flat[2] = 2
    weight = rng.uniform(0.5, 2, size=C)
    probs = rng.dirichlet(np.ones(C), size=int(np.prod(tshape))).reshape(tshape + (C,))
    probs = np.moveaxis(probs, -1, 1)
    for red in REDUCTIONS:
        for w in (None, weight):
            wt = None if w is None else T(w)
            for ignore in (-100, 2):
                target = classes.copy()
                target.flat[1] = ignore
                close(F.nll_loss(T(log_softmax(x, 1)), T(target), weight=wt, ignore_index=ignore,
                                 reduction=red),
                      np_nll(log_softmax(x, 1), target, w, ignore, red))
                for ls in (0.0, 0.25):
                    crit = nn.CrossEntropyLoss(weight=wt, ignore_index=ignore, reduction=red,
                                               label_smoothing=ls)
                    close(crit(T(x), T(target)), np_cross_entropy(x, target, w, ignore, red, ls))
            for ls in (0.0, 0.25):
                close(F.cross_entropy(T(x), T(probs), weight=wt, reduction=red,
                                      label_smoothing=ls),
                      np_cross_entropy(x, probs, w, -100, red, ls))
    close(nn.NLLLoss(weight=T(weight))(T(log_softmax(x, 1)), T(classes)),
          np_nll(log_softmax(x, 1), classes, weight, -100, "mean"))
    assert list(nn.CrossEntropyLoss(weight=T(weight)).state_dict()) == ["weight"]


def test_cross_entropy_details(device, dt):
    # a single sample: input (C,), target 0-d
    x = np.array([1.0, 2.0, 0.5])
    close(F.cross_entropy(T(x), T(np.int64(1))), -log_softmax(x[None], 1)[0, 1])
    # large logits stay finite (log_softmax based)
    big = T([[1000.0, -1000.0, 0.0], [0.0, 0.0, 0.0]])
    close(F.cross_entropy(big, T([0, 2])), np.mean([0.0, np.log(3.0)]))
    # every target ignored: the mean is 0/0 = nan, as in torch
    assert np.isnan(F.cross_entropy(T([[1.0, 2.0]]), T([-100])).item())
    # class indices are int64 or uint8 (torch 2.13 refuses int32 ones)
    close(F.cross_entropy(T([[1.0, 2.0]]), T([1], dtype=clgrad.uint8)),
          -log_softmax(np.array([[1.0, 2.0]]), 1)[0, 1])
    with pytest.raises(RuntimeError, match="expected target dtype to be Long or Byte, but got "
                                           "Int"):
        F.cross_entropy(T([[1.0, 2.0]]), T([1], dtype=clgrad.int32))
    with pytest.raises(RuntimeError, match="expected target dtype to be Long or Byte, but got "
                                           "Float"):
        F.nll_loss(T([[0.0, 0.0]]), T([0.0], dtype=clgrad.float32))
    with pytest.raises(ValueError, match=r"Expected input batch_size \(2\) to match target "
                                         r"batch_size \(3\)"):
        F.cross_entropy(T(np.zeros((2, 3))), T([0, 1, 2]))
    with pytest.raises(RuntimeError, match="weight tensor should be defined either for all 3 "
                                           "classes or no classes"):
        F.cross_entropy(T(np.zeros((2, 3))), T([0, 1]), weight=T([1.0, 2.0]))
    with pytest.raises(RuntimeError, match="label_smoothing must be between 0.0 and 1.0"):
        F.cross_entropy(T(np.zeros((2, 3))), T([0, 1]), label_smoothing=1.5)
    with pytest.raises(RuntimeError, match="Expected floating point type for target with class "
                                           "probabilities, got Long"):
        F.cross_entropy(T(np.zeros((2, 3))), T(np.zeros((2, 3), dtype=np.int64)))
    with pytest.raises(IndexError, match="out of"):
        F.cross_entropy(T(np.zeros((2, 3))), T([0, 3])).item()   # a class that does not exist


@pytest.mark.parametrize("loss", ["cross_entropy", "nll_loss"])
def test_target_out_of_range_is_torchs_index_error(device, dt, loss):
    """A class index outside [0, C) is torch's IndexError "Target N is out of bounds." (issue
    22: it was gather's RuntimeError), on every path (int64, other integer targets, class
    weights, label smoothing, a single sample, (N, C, d) inputs); ignore_index stays allowed
    wherever it lies. The rows path raises at the next wait (here the read of the result)."""
    fn = getattr(F, loss)
    x = T(np.log(np.full((3, 4), 0.25)))
    kw = [{}, {"weight": T([1.0, 2.0, 1.0, 1.0])}, {"reduction": "none"}]
    if loss == "cross_entropy":
        kw.append({"label_smoothing": 0.1})
    for k in kw:
        for bad, target in ((4, [0, 4, 1]), (-1, [0, -1, 1]), (9, [9, 0, 5]), (-5, [0, 2, -5])):
            with pytest.raises(IndexError, match=rf"^Target {bad} is out of bounds\. \({loss}: "
                                                  r"input of shape \[3, 4\]"):
                fn(x, T(target), **k).tolist()
        with pytest.raises(IndexError, match="Target 4 is out of bounds"):
            fn(x, T([0, 4, 1], dtype=clgrad.uint8), **k).tolist()
        with pytest.raises(IndexError, match="Target -7 is out of bounds"):
            fn(x, T([0, 4, -7]), ignore_index=4, **k).tolist()
        # ignored targets may lie anywhere: the default -100, one past the classes, negative
        for ignore, target in ((-100, [0, -100, 3]), (4, [4, 1, 4]), (-7, [-7, -7, 2])):
            out = fn(x, T(target), ignore_index=ignore, **k)
            assert np.all(np.isfinite(to_np(out))), (k, ignore)
    with pytest.raises(IndexError, match=r"Target 3 is out of bounds\. .*\[3\]"):
        fn(T([0.0, 0.0, 0.0]), T(np.int64(3))).tolist()           # one sample: (C,) and 0-d
    with pytest.raises(IndexError, match=r"Target 3 is out of bounds\. .*\[2, 3, 2\]"):
        fn(T(np.zeros((2, 3, 2))), T([[0, 1], [3, 0]])).tolist()
    with pytest.raises(IndexError, match="Target 3 is out of bounds"):
        getattr(nn, "CrossEntropyLoss" if loss == "cross_entropy" else "NLLLoss")()(
            T(np.zeros((2, 3))), T([0, 3])).tolist()


def test_target_out_of_range_reports_at_the_next_wait(device, dt):
    """The rows path (cross_entropy and nll_loss of (n, C) scores, int64 targets, no weights)
    checks its targets without a host sync, as a GPU does: the call returns, and torch's
    IndexError arrives at the device's next wait (a read to the host, synchronize, the next
    check), once; then work goes on."""
    x = T(np.log(np.full((3, 4), 0.25)))
    good = T([0, 1, 3])
    for fn in (F.cross_entropy, F.nll_loss):
        name = fn.__name__
        for wait in (lambda: clgrad.cl.synchronize(), lambda: T([1.0]).item(),
                     lambda: fn(x, good)):
            fn(x, T([0, 9, 1]))                                # no error yet
            with pytest.raises(IndexError, match=rf"^Target 9 is out of bounds\. \({name}: "):
                wait()
            clgrad.cl.synchronize()                            # raised once
            assert to_np(fn(x, good)) == pytest.approx(np.log(4.0), rel=1e-5)
        bad = T([0, 9, 1])
        fn(x, bad)
        bad.fill_(2)                     # the culprit overwritten before the wait: still raised
        with pytest.raises(IndexError, match=rf"Target out of bounds \({name}: .*changed since"):
            clgrad.cl.synchronize()


def test_cross_entropy_gradients(device, dt):
    rng = np.random.default_rng(2)
    x = clgrad.tensor(rng.normal(size=(4, 3)), dtype=dt, requires_grad=True)
    target = T([0, 2, -100, 1])
    w = T([0.5, 2.0, 1.0])
    gradcheck(lambda v: F.cross_entropy(v, target, weight=w, label_smoothing=0.2), x,
              device=device)
    gradcheck(lambda v: F.cross_entropy(v, target, reduction="none"), x, device=device)
    probs = T(rng.dirichlet(np.ones(3), size=4))
    gradcheck(lambda v: F.cross_entropy(v, probs, label_smoothing=0.1), x, device=device)
    gradcheck(lambda v: F.nll_loss(v, target, weight=w, reduction="sum"), x, device=device)
    # the gradient of the mean cross entropy: (softmax - onehot) / N
    xx = clgrad.tensor([[0.0, 0.0]], requires_grad=True)
    F.cross_entropy(xx, T([1])).backward()
    close(xx.grad, [[0.5, -0.5]])


def test_cross_entropy_of_rows_in_few_launches(device, dt):
    """The usual classification loss (scores (N, C), int64 targets, no class weights or
    smoothing, mean or sum) takes the loss family's kernels: five launches forward and backward
    instead of about twenty; strided scores and targets; second derivatives; every target
    ignored gives nan and zero gradients, as torch does."""
    from clgrad.runtime import kernels
    rng = np.random.default_rng(3)
    x = clgrad.tensor(rng.normal(size=(5, 7)) * 3, dtype=dt).t().requires_grad_()     # (7, 5)
    raw = T(rng.integers(0, 5, size=14))
    target = raw[::2]                                                                  # stride 2
    target_np = to_np(target).copy()
    target[3] = -100
    target_np[3] = -100
    names = []
    hook = lambda dev, k, *a: names.append(k.function_name)
    for red in ("mean", "sum"):
        x.grad = None
        kernels.launch_hooks.append(hook)
        try:
            loss = F.cross_entropy(x, target, reduction=red)
            loss.backward()
        finally:
            kernels.launch_hooks.remove(hook)
        xn = to_np(x).astype(np.float64)
        close(loss, np_cross_entropy(xn, target_np, None, -100, red, 0.0))
        lp = log_softmax(xn, 1)
        want = np.exp(lp) - np.eye(5)[np.where(target_np == -100, 0, target_np)]
        want[target_np == -100] = 0
        close(x.grad, want / (6 if red == "mean" else 1))
    assert names.count("nll_rows") == 2 and names.count("ce_backward") == 2
    assert len(names) <= 2 * 6, names
    assert clgrad.autograd.gradgradcheck(lambda v: F.cross_entropy(v, target), (x,),
                                         **grad_tols(device))
    y = clgrad.tensor([[1.0, 2.0], [0.5, 0.0]], dtype=dt, requires_grad=True)
    loss = F.cross_entropy(y, T([-100, -100]))
    loss.backward()
    assert np.isnan(loss.item()) and to_np(y.grad).tolist() == [[0.0, 0.0], [0.0, 0.0]]
    # nll_loss of log-probabilities (a strided view), one kernel each way; an ignore_index that
    # is also a class (its rows count nothing)
    lp = clgrad.tensor(log_softmax(rng.normal(size=(5, 7)), 1), dtype=dt).t().requires_grad_()
    tn = np.array([0, 2, 4, 2, 1, 3, 2])
    for red in ("mean", "sum"):
        lp.grad = None
        names.clear()
        kernels.launch_hooks.append(hook)
        try:
            loss = F.nll_loss(lp, T(tn), ignore_index=2, reduction=red)
            loss.backward()
        finally:
            kernels.launch_hooks.remove(hook)
        close(loss, np_nll(to_np(lp).astype(np.float64), tn, None, 2, red))
        want = -np.eye(5)[tn] * (tn != 2)[:, None]
        close(lp.grad, want / (4 if red == "mean" else 1))
        assert "nll_rows" in names and "nll_backward" in names and len(names) <= 5, names
    assert clgrad.autograd.gradgradcheck(lambda v: F.nll_loss(v, T(tn), ignore_index=2), (lp,),
                                         **grad_tols(device))


# ---- binary cross entropy ----------------------------------------------------------------------
def np_bce(p, y, w):
    loss = -(y * np.maximum(np.log(p), -100) + (1 - y) * np.maximum(np.log1p(-p), -100))
    return loss if w is None else loss * w


def np_bce_logits(x, y, w, pw):
    lw = 1 if pw is None else 1 + (pw - 1) * y
    loss = (1 - y) * x + lw * (np.log1p(np.exp(-np.abs(x))) + np.maximum(-x, 0))
    return loss if w is None else loss * w


def test_binary_cross_entropy(device, dt):
    rng = np.random.default_rng(3)
    p = rng.uniform(0.01, 0.99, size=(5, 3))
    y = rng.uniform(0, 1, size=(5, 3))
    w = rng.uniform(0.5, 2, size=3)
    for red in REDUCTIONS:
        for weight in (None, w):
            wt = None if weight is None else T(weight)
            close(nn.BCELoss(weight=wt, reduction=red)(T(p), T(y)),
                  reduce(np_bce(p, y, weight), red))
    # probabilities of exactly 0 and 1: logs clamped at -100, finite gradients, as torch
    edge = clgrad.tensor([0.0, 1.0, 0.5], dtype=dt, requires_grad=True)
    out = F.binary_cross_entropy(edge, T([1.0, 0.0, 1.0]), reduction="none")
    close(out, [100.0, 100.0, np.log(2)])
    out.sum().backward()
    close(edge.grad, [-1e12, 1e12, -2.0])
    x = clgrad.tensor(rng.uniform(0.1, 0.9, size=(3, 2)), dtype=dt, requires_grad=True)
    tgt = clgrad.tensor(rng.uniform(0, 1, size=(3, 2)), dtype=dt, requires_grad=True)
    gradcheck(lambda a, b: F.binary_cross_entropy(a, b), x, tgt, device=device)
    with pytest.raises(ValueError, match="Using a target size .* that is different to the input "
                                         "size"):
        F.binary_cross_entropy(T(p), T(y[:, :1]))


def test_binary_cross_entropy_with_logits(device, dt):
    rng = np.random.default_rng(4)
    x = rng.normal(size=(5, 3)) * 4
    y = (rng.uniform(size=(5, 3)) > 0.5).astype(np.float64)
    w, pw = rng.uniform(0.5, 2, size=3), rng.uniform(0.5, 3, size=3)
    for red in REDUCTIONS:
        for weight in (None, w):
            for pos in (None, pw):
                crit = nn.BCEWithLogitsLoss(weight=None if weight is None else T(weight),
                                            pos_weight=None if pos is None else T(pos),
                                            reduction=red)
                close(crit(T(x), T(y)), reduce(np_bce_logits(x, y, weight, pos), red))
    # extreme logits do not overflow
    close(F.binary_cross_entropy_with_logits(T([200.0, -200.0, 200.0]), T([1.0, 0.0, 0.0]),
                                             reduction="none"), [0.0, 0.0, 200.0])
    xx = clgrad.tensor(x[:2], dtype=dt, requires_grad=True)
    gradcheck(lambda v: F.binary_cross_entropy_with_logits(v, T(y[:2]), pos_weight=T(pw)), xx,
              device=device)
    assert list(nn.BCEWithLogitsLoss(pos_weight=T(pw)).state_dict()) == ["pos_weight"]
    with pytest.raises(ValueError, match=r"Target size \(clgrad.Size\(\[5\]\)\) must be the same "
                                         r"as input size"):
        F.binary_cross_entropy_with_logits(T(x), T(y[:, 0]))


def test_training_a_classifier_lowers_the_loss():
    """The pieces together: a small MLP fits a separable problem."""
    clgrad.manual_seed(0)
    rng = np.random.default_rng(5)
    x = rng.normal(size=(64, 2))
    y = (x[:, 0] * x[:, 1] > 0).astype(np.int64)
    model = nn.Sequential(nn.Linear(2, 16), nn.Tanh(), nn.Linear(16, 2))
    opt = clgrad.optim.Adam(model.parameters(), lr=0.05)
    crit = nn.CrossEntropyLoss()
    xs, ys = clgrad.tensor(x, dtype=clgrad.float32), clgrad.tensor(y)
    losses = []
    for _ in range(60):
        opt.zero_grad()
        loss = crit(model(xs), ys)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.3 * losses[0]


def test_regression_losses_of_bool_and_integer_operands(device):
    # torch computes mse / smooth_l1 / huber in one kernel over the promoted operands: a float
    # input with a bool or integer target works (input - target alone refuses a bool); a
    # promoted type that is not floating has no kernel; huber's result has input's dtype. l1_loss
    # is composed of - and abs: integers work (but for 'mean'), bools do not.
    x = clgrad.tensor([1.0, 0.0, 1.0], device=device)
    b = clgrad.tensor([False, False, True], device=device)
    i = clgrad.tensor([0, 0, 1], device=device)
    for loss, want in ((F.mse_loss, [1.0, 0.0, 0.0]), (F.smooth_l1_loss, [0.5, 0.0, 0.0]),
                       (F.huber_loss, [0.5, 0.0, 0.0])):
        for target in (b, i):
            r = loss(x, target, reduction="none")
            assert r.dtype is clgrad.float32 and r.tolist() == want
            if loss is not F.huber_loss:            # its result would be the target's
                assert loss(target, x, reduction="sum").item() == sum(want)
        assert abs(loss(x, b).item() - sum(want) / 3) < 1e-7
    for loss in (F.mse_loss, F.smooth_l1_loss, F.huber_loss):
        with pytest.raises(NotImplementedError, match="not implemented for 'Bool'"):
            loss(b, b)
        with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
            loss(i, b)
    if device.has_fp64:
        x64 = x.double()
        assert F.huber_loss(x, x64).dtype is clgrad.float32
        assert F.mse_loss(x, x64).dtype is clgrad.float64
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired "
                                           "output type Long"):
        F.huber_loss(i, x)
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        F.huber_loss(i.to(clgrad.uint8), i)        # int64 -> uint8 is a legal cast in torch
    assert clgrad.can_cast(clgrad.int64, clgrad.uint8) and \
        not clgrad.can_cast(clgrad.int8, clgrad.bool)
    assert F.l1_loss(i, i.flip(0), reduction="sum").item() == 2
    with pytest.raises(RuntimeError, match="Subtraction, the `-` operator, with a bool tensor"):
        F.l1_loss(x, b)
    # gradients reach the float operand
    w = clgrad.tensor([1.0, 0.0, 3.0], device=device, requires_grad=True)
    F.mse_loss(w, b, reduction="sum").backward()
    assert w.grad.tolist() == [2.0, 0.0, 4.0]


def test_loss_dtype_and_range_rules_are_torchs(device):
    """Checked against torch 2.13: binary_cross_entropy takes one float dtype and checks that
    input and target lie in [0, 1] (NaN does not); with logits, the loss is made in the target's
    dtype (a non-float input has no log_sigmoid, a non-float target no in-place product); huber
    needs delta > 0; nll_loss / cross_entropy refuse non-float inputs (NotImplementedError) and
    class weights of another dtype; mse / l1 / smooth_l1 broadcast their operands first, so a
    0-d operand promotes as a dimensioned one; the weights of bce are multiplied into the loss
    (its shape and dtype)."""
    p = clgrad.tensor([0.2, 0.7], device=device)
    y = clgrad.tensor([1.0, 0.0], device=device)
    i2 = clgrad.tensor([0, 1], device=device)
    for x, t, what in (([1.5, 0.5], [1.0, 0.0], "input"), ([-0.5, 0.5], [1.0, 0.0], "input"),
                      ([float("nan"), 0.5], [1.0, 0.0], "input"),
                      ([0.5, 0.5], [1.5, 0.0], "target"),
                      ([0.5, 0.5], [float("nan"), 0.0], "target"),
                      ([1.5, 0.5], [1.5, 0.0], "input")):
        with pytest.raises(RuntimeError, match=f"all elements of {what} should be between 0 and 1"):
            F.binary_cross_entropy(clgrad.tensor(x, device=device),
                                   clgrad.tensor(t, device=device))
    with pytest.raises(RuntimeError, match="Found dtype Long but expected Float"):
        F.binary_cross_entropy(p, i2)
    for v, name in ((i2, "Long"), (i2 > 0, "Bool")):
        with pytest.raises(NotImplementedError, match=f"\"binary_cross_entropy\" not implemented "
                                                      f"for '{name}'"):
            F.binary_cross_entropy(v, v)
    want = -(np.log([0.2, 0.3]) * [1.0, 3.0])
    r = F.binary_cross_entropy(p, y, clgrad.tensor([1, 3], device=device), reduction="none")
    assert r.dtype is clgrad.float32 and np.allclose(r.numpy(), want, rtol=1e-6)
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        F.binary_cross_entropy(p, y, clgrad.ones(2, 2, device=device))
    # with logits: the target's dtype
    bl = F.binary_cross_entropy_with_logits
    xv = np.array([0.2, 0.7])
    want = np.maximum(xv, 0) - xv * [1.0, 0.0] + np.log1p(np.exp(-np.abs(xv)))
    r = bl(p, y.to(clgrad.bfloat16), reduction="none")
    assert r.dtype is clgrad.bfloat16 and np.allclose(r.float().numpy(), want, atol=1e-2)
    r = bl(p.to(clgrad.bfloat16), y, reduction="none")
    assert r.dtype is clgrad.float32 and np.allclose(r.numpy(), want, atol=1e-2)
    with pytest.raises(NotImplementedError, match="\"log_sigmoid_cpu\" not implemented for 'Long'"):
        bl(i2, y)
    with pytest.raises(NotImplementedError, match="not implemented for 'Bool'"):
        bl(i2 > 0, y)
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired "
                                           "output type Long"):
        bl(p, i2)
    with pytest.raises(RuntimeError, match="Subtraction, the `-` operator, with two bool"):
        bl(p, i2 > 0)
    # huber: delta > 0, after the shapes
    for d in (0.0, -1.0):
        with pytest.raises(RuntimeError, match="huber_loss does not support non-positive values "
                                               "for delta"):
            F.huber_loss(p, y, delta=d)
        with pytest.raises(RuntimeError, match="huber_loss does not support non-positive"):
            F.huber_loss(i2, i2, delta=d)
    with pytest.raises(RuntimeError, match="The size of tensor a"), pytest.warns(UserWarning):
        F.huber_loss(p, clgrad.ones(3, device=device), delta=0.0)
    # nll / cross_entropy
    L = clgrad.tensor([[-1.0, -2.0], [-3.0, -4.0]], device=device)
    for x, frame in ((L.long(), "nll_loss_out_frame"), (L > -2, "nll_loss_out_frame"),
                     (clgrad.ones(2, 2, 2, dtype=clgrad.int64, device=device),
                      "nll_loss2d_forward_out_frame")):
        with pytest.raises(NotImplementedError, match=f"\"{frame}\" not implemented for"):
            F.nll_loss(x, clgrad.zeros(x.shape[:1] + x.shape[2:], dtype=clgrad.int64,
                                        device=device), reduction="none")
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        F.nll_loss(L.long(), clgrad.tensor([0, 5], device=device))   # before the range
    for f in (F.nll_loss, F.cross_entropy):
        with pytest.raises(RuntimeError, match="expected scalar type Float but found Long"):
            f(L, i2, clgrad.ones(2, dtype=clgrad.int64, device=device))
    if device.has_fp64:
        s64 = clgrad.tensor(0.5, dtype=clgrad.float64, device=device)
        for f in (F.mse_loss, F.l1_loss, F.smooth_l1_loss):
            with pytest.warns(UserWarning):
                assert f(s64, p).dtype is clgrad.float64
                assert f(p, s64, reduction="none").dtype is clgrad.float64
        assert bl(p, y.double()).dtype is clgrad.float64
        assert bl(p.double(), y).dtype is clgrad.float32
