"""The activations of clgrad.nn.functional beyond the fused ones (the piecewise ones, the shrinks
and thresholds, prelu/rrelu, softmin, glu) against numpy formulas, gradients by finite
differences (kinks avoided, and torch's kink rule checked), and the modules that hold them;
gumbel_softmax; the in-place activations and torch's dispatch helpers."""
import numpy as np
import pytest

import clgrad
import clgrad.nn.functional as F
from clgrad import nn
from clgrad.autograd import gradcheck, gradgradcheck


SELU_A, SELU_S = 1.6732632423543772, 1.0507009873554805


def _sp(x):
    return np.log1p(np.exp(-np.abs(x))) + np.maximum(x, 0)


def _sig(x):
    return 1 / (1 + np.exp(-x))


ACTS = {
    "hardtanh": (F.hardtanh, lambda x: np.clip(x, -1, 1)),
    "relu6": (F.relu6, lambda x: np.clip(x, 0, 6)),
    "hardsigmoid": (F.hardsigmoid, lambda x: np.clip(x / 6 + 0.5, 0, 1)),
    "hardswish": (F.hardswish, lambda x: x * np.clip(x + 3, 0, 6) / 6),
    "selu": (F.selu, lambda x: SELU_S * np.where(x > 0, x, SELU_A * np.expm1(x))),
    "celu": (lambda x: F.celu(x, 2.0), lambda x: np.where(x > 0, x, 2 * np.expm1(x / 2))),
    "mish": (F.mish, lambda x: x * np.tanh(_sp(x))),
    "softsign": (F.softsign, lambda x: x / (1 + np.abs(x))),
    "softshrink": (F.softshrink, lambda x: np.where(x > .5, x - .5, np.where(x < -.5, x + .5, 0))),
    "hardshrink": (F.hardshrink, lambda x: np.where(np.abs(x) > .5, x, 0)),
    "tanhshrink": (F.tanhshrink, lambda x: x - np.tanh(x)),
    "threshold": (lambda x: F.threshold(x, 0.2, -3.0), lambda x: np.where(x > 0.2, x, -3.0)),
    "glu": (lambda x: F.glu(x, 0), lambda x: x[:2] * _sig(x[2:])),
    "softmin": (lambda x: F.softmin(x, 1),
                lambda x: np.exp(-x) / np.exp(-x).sum(1, keepdims=True)),
    "rrelu_eval": (F.rrelu, lambda x: np.where(x >= 0, x, x * (1 / 8 + 1 / 3) / 2)),
}


@pytest.mark.parametrize("name", sorted(ACTS))
def test_activations_match_numpy_and_gradcheck(device, name):
    fn, ref = ACTS[name]
    rng = np.random.default_rng(0)
    # values away from the kinks (+-0.5, +-1, +-3, 0, 0.2, 6) for the finite differences
    x = rng.uniform(-7, 7, (4, 5))
    x = np.where(np.min(np.abs(x[..., None] - np.array([-3, -1, -.5, 0, .2, .5, 1, 3, 6])),
                        -1) < 0.05, 2.5, x)
    X = clgrad.tensor(x, requires_grad=True)
    np.testing.assert_allclose(fn(X).detach().numpy(), ref(x), rtol=1e-10, atol=1e-12)
    assert gradcheck(fn, (X,))
    np.testing.assert_allclose(fn(clgrad.tensor(x.astype(np.float32))).numpy(), ref(x),
                               rtol=1e-5, atol=1e-6)


def test_kink_gradients_follow_torch():
    """At the ends of their linear range the clamp-like activations pass no gradient (torch's
    hardtanh_backward uses strict inequalities), and hardswish switches at -3 and 3 the same
    way."""
    for fn, pts, want in ((F.hardtanh, [-1.0, 1.0, 0.0], [0, 0, 1]),
                          (F.relu6, [0.0, 6.0, 3.0], [0, 0, 1]),
                          (F.hardswish, [-3.0, 3.0, 0.0], [0, 1, 0.5])):
        x = clgrad.tensor(pts, dtype=clgrad.float64, requires_grad=True)
        fn(x).sum().backward()
        assert x.grad.tolist() == want


def test_prelu_and_modules(device):
    m = nn.PReLU(3)
    assert m.weight.tolist() == [0.25] * 3 and repr(m) == "PReLU(num_parameters=3)"
    x = clgrad.tensor([[-4.0, 2.0, -1.0]], dtype=clgrad.float64, requires_grad=True)
    w = clgrad.tensor([0.1, 0.2, 0.3], dtype=clgrad.float64, requires_grad=True)
    np.testing.assert_allclose(F.prelu(x, w).detach().numpy(), [[-4.0 * 0.1, 2.0, -1.0 * 0.3]])
    assert gradcheck(F.prelu, (x, w)) and gradgradcheck(F.prelu, (x, w))
    assert repr(nn.Hardtanh(-2.0, 2.0)) == "Hardtanh(min_val=-2.0, max_val=2.0)"
    assert nn.Softmax2d()(clgrad.zeros(2, 4, 1, 1)).sum().item() == 2.0
    with pytest.raises(RuntimeError, match="Halving dimension must be even"):
        F.glu(clgrad.ones(3))
    with pytest.raises(RuntimeError, match="channel size = 2"):
        F.prelu(clgrad.ones(1, 2), clgrad.ones(3))
    # in place inside a model: autograd records it
    seq = nn.Sequential(nn.Linear(3, 4), nn.ReLU6(inplace=True), nn.Hardswish(inplace=True))
    seq(clgrad.randn(2, 3)).sum().backward()
    assert seq[0].weight.grad is not None
    rr = nn.RReLU(0.1, 0.3)
    y = rr(-clgrad.ones(1000))                              # training: slopes in [0.1, 0.3]
    assert -0.3 <= y.min().item() and y.max().item() <= -0.1 and y.std().item() > 0.03


def test_gumbel_softmax(device):
    clgrad.manual_seed(0)
    logits = clgrad.tensor([[0.0, 1.0, 2.0]], device=device).expand(4000, 3)
    soft = F.gumbel_softmax(logits, tau=0.5)
    np.testing.assert_allclose(soft.sum(-1).numpy(), 1.0, rtol=1e-5)
    hard = F.gumbel_softmax(logits, hard=True)
    assert set(hard.reshape(-1).tolist()) == {0.0, 1.0} and hard.sum(-1).eq(1).all()
    # the argmax of logits + Gumbel noise is a draw from softmax(logits)
    freq = hard.mean(0).numpy()
    p = np.exp([0.0, 1.0, 2.0]) / np.exp([0.0, 1.0, 2.0]).sum()
    np.testing.assert_allclose(freq, p, atol=0.03)
    # straight-through: the hard sample's gradient is the soft one's
    x = clgrad.zeros(2, 3, device=device, requires_grad=True)
    clgrad.manual_seed(1)
    (F.gumbel_softmax(x, hard=True) * clgrad.tensor([1.0, 2.0, 3.0], device=device)).sum().backward()
    g_hard = x.grad.clone()
    x.grad = None
    clgrad.manual_seed(1)
    (F.gumbel_softmax(x) * clgrad.tensor([1.0, 2.0, 3.0], device=device)).sum().backward()
    np.testing.assert_allclose(g_hard.numpy(), x.grad.numpy(), rtol=1e-6)


def test_inplace_activations_and_dispatch_helpers(device):
    for f, ref in ((F.elu_, F.elu), (F.selu_, F.selu), (F.celu_, F.celu)):
        x = clgrad.tensor([-1.0, 0.5], device=device)
        want = ref(x).tolist()
        assert f(x) is x and x.tolist() == want
    x = clgrad.tensor([-1.0, 2.0], device=device)
    F.rrelu_(x)
    np.testing.assert_allclose(x.numpy(), [-(1 / 8 + 1 / 3) / 2, 2.0], rtol=1e-6)
    assert not F.has_torch_function((x,)) and not F.has_torch_function_variadic(x, x)
    assert F.handle_torch_function(F.relu, (x,), x).tolist() == [0.0, 2.0]
    assert F.native_channel_shuffle(clgrad.arange(4.0, device=device).reshape(1, 4, 1, 1),
                                    2).reshape(-1).tolist() == [0.0, 2.0, 1.0, 3.0]
