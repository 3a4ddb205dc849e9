"""The piecewise activations, similarities, distances and margin/likelihood losses against numpy
formulas, gradients by finite differences (kinks avoided, and torch's kink rule checked), and the
modules that hold them."""
import math

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


def test_similarities_and_losses_match_numpy(device):
    rng = np.random.default_rng(1)
    a, b, c = (rng.standard_normal((4, 3)) for _ in range(3))
    y = np.array([1.0, -1.0, 1.0, -1.0])
    T = lambda v: clgrad.tensor(v)  # noqa: E731
    cos = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    np.testing.assert_allclose(F.cosine_similarity(T(a), T(b)).numpy(), cos, rtol=1e-10)
    d = lambda u, v: np.linalg.norm(u - v + 1e-6, axis=-1)  # noqa: E731
    np.testing.assert_allclose(F.pairwise_distance(T(a), T(b)).numpy(), d(a, b), rtol=1e-10)
    checks = [
        (F.margin_ranking_loss(T(a[:, 0]), T(b[:, 0]), T(y), margin=0.3),
         np.maximum(0, -y * (a[:, 0] - b[:, 0]) + 0.3).mean()),
        (F.hinge_embedding_loss(T(a), T(np.sign(b)), reduction="sum"),
         np.where(np.sign(b) == 1, a, np.maximum(0, 1 - a)).sum()),
        (F.soft_margin_loss(T(a), T(np.sign(b))), np.log1p(np.exp(-np.sign(b) * a)).mean()),
        (F.cosine_embedding_loss(T(a), T(b), T(y), margin=0.1),
         np.where(y == 1, 1 - cos, np.maximum(0, cos - 0.1)).mean()),
        (F.triplet_margin_loss(T(a), T(b), T(c)), np.maximum(d(a, b) - d(a, c) + 1, 0).mean()),
        (F.poisson_nll_loss(T(a), T(np.abs(b))), (np.exp(a) - np.abs(b) * a).mean()),
        (F.gaussian_nll_loss(T(a), T(b), T(np.abs(c) + 0.1)),
         (0.5 * (np.log(np.abs(c) + 0.1) + (a - b) ** 2 / (np.abs(c) + 0.1))).mean()),
        (F.multilabel_soft_margin_loss(T(a), T((b > 0) * 1.0)),
         (-((b > 0) * np.log(_sig(a)) + (b <= 0) * np.log(_sig(-a)))).mean(1).mean()),
    ]
    p = np.exp(a) / np.exp(a).sum(1, keepdims=True)
    q = np.exp(b) / np.exp(b).sum(1, keepdims=True)
    checks.append((F.kl_div(T(np.log(p)), T(q), reduction="batchmean"),
                   (q * (np.log(q) - np.log(p))).sum() / 4))
    checks.append((F.kl_div(T(np.log(p)), T(np.log(q)), reduction="sum", log_target=True),
                   (q * (np.log(q) - np.log(p))).sum()))
    for got, want in checks:
        np.testing.assert_allclose(got.item(), want, rtol=1e-9)
    # zero targets contribute nothing (x log x -> 0), with a finite gradient
    x = clgrad.tensor(np.log(p), requires_grad=True)
    zq = q.copy()
    zq[0, 0] = 0
    F.kl_div(x, T(zq), reduction="sum").backward()
    assert np.isfinite(x.grad.numpy()).all()


def test_loss_gradients(device):
    rng = np.random.default_rng(2)
    a, b, c = (clgrad.tensor(rng.standard_normal((3, 4)), requires_grad=True) for _ in range(3))
    y = clgrad.tensor([1.0, -1.0, 1.0])
    assert gradcheck(lambda a, b: F.cosine_embedding_loss(a, b, y, margin=-0.5), (a, b))
    assert gradcheck(lambda a, b, c: F.triplet_margin_loss(a, b, c, margin=5.0), (a, b, c))
    assert gradcheck(lambda a: F.poisson_nll_loss(a, b.detach().abs(), full=True), (a,))
    v = clgrad.tensor(rng.uniform(0.5, 1.5, (3, 4)), requires_grad=True)
    assert gradcheck(lambda a, v: F.gaussian_nll_loss(a, b.detach(), v), (a, v))
    assert gradcheck(lambda a: F.kl_div(F.log_softmax(a, 1), F.softmax(b.detach(), 1),
                                        reduction="batchmean"), (a,))
    assert gradcheck(lambda a, b: F.cosine_similarity(a, b), (a, b))


def test_loss_modules_pass_their_options():
    rng = np.random.default_rng(3)
    a, b = clgrad.tensor(rng.standard_normal((2, 3))), clgrad.tensor(rng.standard_normal((2, 3)))
    assert nn.TripletMarginLoss(margin=2.0, p=1)(a, a, b).item() == \
        F.triplet_margin_loss(a, a, b, margin=2.0, p=1).item()
    assert nn.KLDivLoss(reduction="sum", log_target=True)(a, b).item() == \
        F.kl_div(a, b, reduction="sum", log_target=True).item()
    assert nn.PoissonNLLLoss(log_input=False)(a.abs(), b.abs()).item() == \
        F.poisson_nll_loss(a.abs(), b.abs(), log_input=False).item()
    assert nn.CosineSimilarity(dim=0)(a, b).shape == (3,)
    assert nn.PairwiseDistance(keepdim=True)(a, b).shape == (2, 1)
    with pytest.raises(ValueError, match="var has negative"):
        F.gaussian_nll_loss(a, b, -a.abs())
    with pytest.warns(UserWarning, match="batchmean"):
        F.kl_div(a, b.softmax(1))
    assert math.isclose(nn.SoftMarginLoss(reduction="sum")(a, b.sign()).item(),
                        F.soft_margin_loss(a, b.sign(), reduction="sum").item())
