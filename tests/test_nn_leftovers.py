"""The last of torch.nn: gumbel_softmax, triplet_margin_with_distance_loss, linear_cross_entropy
and LinearCrossEntropyLoss, CrossMapLRN2d, NLLLoss2d, Container, DataParallel, SyncBatchNorm
in one process (tests/distributed_checks.py runs it on 2 ranks), the in-place activations."""
import numpy as np
import pytest

import clgrad
import clgrad.nn as nn
import clgrad.nn.functional as F
from clgrad.autograd import gradcheck


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


def _lua_cross_map_lrn(x, size, alpha, beta, k):
    """Lua Torch's sliding sum, step by step (it never removes channel 0)."""
    C = x.shape[1]
    sq = x * x
    pre = int((size - 1) / 2 + 1)
    scale = np.zeros_like(x)
    scale[:, 0] = sq[:, :min(pre, C)].sum(1)
    for c in range(1, C):
        scale[:, c] = scale[:, c - 1]
        if c < C - pre + 1:
            scale[:, c] += sq[:, c + pre - 1]
        if c > pre:
            scale[:, c] -= sq[:, c - pre]
    return x * (scale * alpha / size + k) ** -beta


@pytest.mark.parametrize("C,size", [(7, 3), (8, 4), (3, 7)])
def test_cross_map_lrn2d(device, C, size):
    x = np.random.default_rng(C).normal(size=(2, C, 3, 2))
    X = clgrad.tensor(x, device=device, requires_grad=True)
    got = nn.CrossMapLRN2d(size, 0.3, 0.75, 1.5)(X)
    np.testing.assert_allclose(got.detach().numpy(), _lua_cross_map_lrn(x, size, 0.3, 0.75, 1.5),
                               rtol=1e-12)
    assert gradcheck(lambda t: nn.CrossMapLRN2d(size, 0.3, 0.75, 1.5)(t), (X,))
    with pytest.raises(ValueError, match="Expected input to be 4D"):
        nn.CrossMapLRN2d(3)(clgrad.ones(2, 3, device=device))


def test_containers_parallel_and_sync_batchnorm(device):
    lin = nn.Linear(2, 1).to(device)
    with pytest.warns(UserWarning, match="deprecated"):
        c = nn.Container(fc=lin)
    assert c.fc is lin
    dp = nn.DataParallel(lin)
    x = clgrad.ones(4, 2, device=device)
    np.testing.assert_array_equal(dp(x).detach().numpy(), lin(x).detach().numpy())
    assert list(dp.state_dict()) == ["module.weight", "module.bias"]
    with pytest.raises(NotImplementedError, match="DistributedDataParallel"):
        nn.DataParallel(lin, device_ids=[0, 1])
    assert nn.NLLLoss2d()(F.log_softmax(clgrad.zeros(1, 2, 2, 2, device=device), 1),
                          clgrad.zeros(1, 2, 2, dtype=clgrad.int64, device=device)).item() > 0
    # without a process group SyncBatchNorm is a batch norm, statistics included
    x = clgrad.randn(4, 3, 5, device=device)
    sbn, bn = nn.SyncBatchNorm(3).to(device), nn.BatchNorm1d(3).to(device)
    np.testing.assert_allclose(sbn(x).detach().numpy(), bn(x).detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(sbn.running_var.numpy(), bn.running_var.numpy(), rtol=1e-6)
    net = nn.SyncBatchNorm.convert_sync_batchnorm(nn.Sequential(nn.Conv2d(1, 2, 1), bn))
    assert type(net[1]) is nn.SyncBatchNorm and net[1].weight is bn.weight
    assert net[1].running_mean is bn.running_mean


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
