"""clgrad.nn.utils.prune (numpy facts: which entries and channels go) and
nn.utils.stateless.functional_call."""
import numpy as np
import pytest

import clgrad
from clgrad.nn.utils import prune


def _lin(w):
    m = clgrad.nn.Linear(len(w[0]), len(w))
    with clgrad.no_grad():
        m.weight.copy_(clgrad.tensor(w))
    return m


def test_reparametrisation_forward_and_grad(device):
    w = [[0.5, -0.1, 2.0, 0.3], [-1.0, 0.05, 0.7, -3.0]]
    m = _lin(w)
    prune.l1_unstructured(m, "weight", amount=0.5)
    names = sorted(n for n, _ in m.named_parameters())
    assert names == ["bias", "weight_orig"] and [n for n, _ in m.named_buffers()] == \
        ["weight_mask"]
    assert sorted(m.state_dict()) == ["bias", "weight_mask", "weight_orig"]
    mask = (np.abs(np.array(w)) > 0.6).astype(np.float32)
    np.testing.assert_array_equal(m.weight_mask.numpy(), mask)
    x = clgrad.randn(3, 4)
    y = m(x)
    np.testing.assert_allclose(y.detach().numpy(), x.numpy() @ (np.array(w) * mask).T +
                               m.bias.detach().numpy(), rtol=1e-5, atol=1e-6)
    y.sum().backward()
    np.testing.assert_allclose(m.weight_orig.grad.numpy(),
                               np.tile(x.numpy().sum(0), (2, 1)) * mask, rtol=1e-5, atol=1e-6)
    assert prune.is_pruned(m)
    prune.remove(m, "weight")
    assert not prune.is_pruned(m) and sorted(n for n, _ in m.named_parameters()) == \
        ["bias", "weight"]
    np.testing.assert_allclose(m.weight.detach().numpy(), np.array(w) * mask, rtol=1e-6)
    with pytest.raises(ValueError, match="has to be pruned before"):
        prune.remove(m, "weight")


def test_iterative_pruning_prunes_what_is_left(device):
    clgrad.manual_seed(0)
    m = clgrad.nn.Linear(10, 10)
    prune.l1_unstructured(m, "weight", amount=0.5)
    prune.l1_unstructured(m, "weight", amount=0.5)
    assert int(m.weight_mask.sum().item()) == 25
    hooks = [h for h in m._forward_pre_hooks.values() if isinstance(h, prune.BasePruningMethod)]
    assert len(hooks) == 1 and isinstance(hooks[0], prune.PruningContainer) and len(hooks[0]) == 2
    prune.random_unstructured(m, "weight", amount=5)
    assert int(m.weight_mask.sum().item()) == 20
    kept = np.abs(m.weight_orig.detach().numpy())[m.weight_mask.numpy() == 1]
    assert kept.size == 20


def test_structured(device):
    clgrad.manual_seed(0)
    conv = clgrad.nn.Conv2d(2, 6, 3)
    w = conv.weight.detach().numpy()
    prune.ln_structured(conv, "weight", amount=0.5, n=1, dim=0)
    norms = np.abs(w).reshape(6, -1).sum(1)
    keep = np.sort(np.argsort(-norms)[:3])
    per_channel = conv.weight_mask.numpy().reshape(6, -1)
    assert (per_channel[keep] == 1).all() and per_channel.sum() == 3 * per_channel.shape[1]
    prune.random_structured(conv, "weight", amount=1, dim=0)
    kept = conv.weight_mask.numpy().reshape(6, -1).max(1)
    assert kept.sum() == 2 and set(np.flatnonzero(kept)) <= set(keep)
    m = clgrad.nn.Linear(3, 4)
    with pytest.raises(ValueError, match="multidimensional"):
        prune.ln_structured(m, "bias", amount=1, n=2, dim=0)
    assert "bias_orig" not in dict(m.named_parameters())     # a failure leaves it unpruned


def test_global_identity_custom_and_errors(device):
    a, b = _lin([[0.1, 5.0]]), _lin([[-0.2, 3.0], [0.01, 4.0]])
    prune.global_unstructured([(a, "weight"), (b, "weight")],
                              pruning_method=prune.L1Unstructured, amount=3)
    assert a.weight_mask.tolist() == [[0.0, 1.0]]
    assert b.weight_mask.tolist() == [[0.0, 1.0], [0.0, 1.0]]
    m = prune.identity(clgrad.nn.Linear(2, 3), "bias")
    assert m.bias_mask.tolist() == [1.0, 1.0, 1.0]
    prune.custom_from_mask(m, "bias", clgrad.tensor([1.0, 0.0, 1.0]))
    assert m.bias_mask.tolist() == [1.0, 0.0, 1.0] and m.bias.tolist()[1] == 0.0
    with pytest.raises(ValueError, match="should either be a float in the range"):
        prune.l1_unstructured(clgrad.nn.Linear(2, 2), "weight", amount=1.5)
    with pytest.raises(TypeError, match="Invalid type for amount"):
        prune.l1_unstructured(clgrad.nn.Linear(2, 2), "weight", amount="x")
    with pytest.raises(ValueError, match="should be smaller than the number of parameters"):
        prune.l1_unstructured(clgrad.nn.Linear(2, 2), "weight", amount=10)


def test_random_methods_reproducible(device):
    masks = []
    for _ in range(2):
        clgrad.manual_seed(3)
        masks.append(prune.random_unstructured(clgrad.nn.Linear(8, 8), "weight", 0.3)
                     .weight_mask.tolist())
    assert masks[0] == masks[1] and np.sum(masks[0]) == 64 - round(0.3 * 64)


def test_stateless_functional_call(device):
    from clgrad.nn.utils.stateless import functional_call
    m = clgrad.nn.Linear(2, 1, bias=False)
    with pytest.warns(FutureWarning, match="torch.func.functional_call"):
        out = functional_call(m, {"weight": clgrad.tensor([[2.0, 3.0]])}, (clgrad.ones(1, 2),))
    assert out.item() == 5.0
    assert clgrad.func.functional_call(m, {"weight": clgrad.ones(1, 2)},
                                       clgrad.ones(1, 2)).item() == 2.0
