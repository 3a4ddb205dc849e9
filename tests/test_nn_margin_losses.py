"""The similarities and distances and the losses beyond the common ones (margin ranking, hinge
and cosine embedding, soft margin, triplet margin with and without a distance function, Poisson
and Gaussian NLL, multilabel soft margin, KL divergence, linear_cross_entropy) against numpy
formulas, gradients by finite differences, and the modules that hold them."""
import math

import numpy as np
import pytest

import clgrad
import clgrad.nn.functional as F
from clgrad import nn
from clgrad.autograd import gradcheck


def _sig(x):
    return 1 / (1 + np.exp(-x))


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


def test_triplet_with_distance_and_linear_cross_entropy(device):
    rng = np.random.default_rng(0)
    a, p, n = (rng.normal(size=(5, 3)) for _ in range(3))
    d = lambda u, v: np.sqrt(((u - v + 1e-6) ** 2).sum(-1))     # pairwise_distance's eps
    want = np.maximum(d(a, p) - np.minimum(d(a, n), d(p, n)) + 1.0, 0).mean()
    A, P, N = (clgrad.tensor(v, device=device, requires_grad=True) for v in (a, p, n))
    got = nn.TripletMarginWithDistanceLoss(swap=True)(A, P, N)
    np.testing.assert_allclose(got.item(), want, rtol=1e-10)
    l1 = lambda u, v: (u - v).abs().sum(-1)
    got = F.triplet_margin_with_distance_loss(A, P, N, distance_function=l1, margin=2.0,
                                              reduction="sum")
    want = np.maximum(np.abs(a - p).sum(-1) - np.abs(a - n).sum(-1) + 2.0, 0).sum()
    np.testing.assert_allclose(got.item(), want, rtol=1e-10)
    assert gradcheck(lambda a, p, n: F.triplet_margin_with_distance_loss(a, p, n), (A, P, N))
    with pytest.raises(ValueError, match="margin"):
        nn.TripletMarginWithDistanceLoss(margin=0)
    # linear_cross_entropy is cross_entropy of the linear map's logits
    x, W, b = rng.normal(size=(4, 3)), rng.normal(size=(5, 2, 3)), rng.normal(size=(5, 2))
    t = np.array([[0, 4], [2, 1], [1, 1], [3, 0]])
    logits = np.einsum("ni,cki->nck", x, W) + b
    logp = logits - np.log(np.exp(logits).sum(1, keepdims=True))
    want = -np.take_along_axis(logp, t[:, None, :], 1).mean()
    got = F.linear_cross_entropy(clgrad.tensor(x, device=device), clgrad.tensor(W, device=device),
                                 clgrad.tensor(t, device=device),
                                 linear_bias=clgrad.tensor(b, device=device))
    np.testing.assert_allclose(got.item(), want, rtol=1e-10)
    m = nn.LinearCrossEntropyLoss(3, 5, out_features=(2,), bias=True).double().to(device)
    m.linear.weight.data.copy_(clgrad.tensor(W.reshape(10, 3)))
    m.linear.bias.data.copy_(clgrad.tensor(b.reshape(10)))
    np.testing.assert_allclose(m(clgrad.tensor(x, device=device),
                                 clgrad.tensor(t, device=device)).item(), want, rtol=1e-10)
