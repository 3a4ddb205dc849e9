"""clgrad.utils.checkpoint: gradients equal to the un-checkpointed ones in both modes (dropout
reproduced with preserve_rng_state), finite differences, torch's warnings and errors, and lower
peak pool memory."""
import warnings

import numpy as np
import pytest

import clgrad
from clgrad.utils.checkpoint import CheckpointError, checkpoint, checkpoint_sequential


def _net(depth=4, width=6, p=0.4):
    clgrad.manual_seed(1)
    layers = []
    for _ in range(depth):
        layers += [clgrad.nn.Linear(width, width), clgrad.nn.Tanh(), clgrad.nn.Dropout(p)]
    return clgrad.nn.Sequential(*layers)


def _grads(net, x, run, seed=0):
    for p in net.parameters():
        p.grad = None
    x.grad = None
    clgrad.manual_seed(seed)
    run(net, x).pow(2).sum().backward()
    return [x.grad.numpy()] + [p.grad.numpy() for p in net.parameters()]


@pytest.mark.parametrize("reentrant", [True, False])
def test_gradients_equal_with_dropout(device, reentrant):
    net = _net()
    x = clgrad.randn(5, 6, requires_grad=True)
    plain = _grads(net, x, lambda n, v: n(v))
    seq = _grads(net, x, lambda n, v: checkpoint_sequential(n, 2, v, use_reentrant=reentrant))
    one = _grads(net, x, lambda n, v: checkpoint(n, v, use_reentrant=reentrant))
    for a, b, c in zip(plain, seq, one):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(a, c)
    # without preserve_rng_state the rerun draws other dropout masks
    other = _grads(net, x, lambda n, v: checkpoint(n, v, use_reentrant=reentrant,
                                                   preserve_rng_state=False))
    assert any(not np.array_equal(a, b) for a, b in zip(plain, other))


@pytest.mark.parametrize("reentrant", [True, False])
def test_finite_differences(device, reentrant):
    if not device.has_fp64:
        pytest.skip("the device has no float64")
    w = clgrad.randn(3, 3, dtype=clgrad.float64)
    x = clgrad.randn(2, 3, dtype=clgrad.float64, requires_grad=True)

    def f(v):
        return checkpoint(lambda a: (a @ w).sin() * a, v, use_reentrant=reentrant)
    assert clgrad.autograd.gradcheck(f, (x,))


def test_use_reentrant_warning_and_errors(device):
    x = clgrad.ones(2, requires_grad=True)
    with pytest.warns(UserWarning, match="use_reentrant parameter should be passed"):
        y = checkpoint(lambda a: a * 2, x)
    assert y.grad_fn is not None
    with pytest.warns(UserWarning, match="use_reentrant parameter should be passed"):
        checkpoint_sequential([lambda a: a * 2], 1, x)
    with pytest.raises(ValueError, match="Unexpected keyword arguments: k"):
        checkpoint(lambda a, k=1: a * k, x, use_reentrant=True, k=2)
    with pytest.raises(ValueError, match="Unexpected keyword arguments"):
        checkpoint_sequential([lambda a: a], 1, x, use_reentrant=False, bad=1)
    with pytest.warns(UserWarning, match="None of the inputs have requires_grad"):
        checkpoint(lambda a: a * 2, clgrad.ones(2), use_reentrant=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert not checkpoint(lambda a: a * 2, clgrad.ones(2), use_reentrant=False).requires_grad


def test_non_reentrant_kwargs_outputs_and_grad(device):
    x = clgrad.tensor([1.0, 2.0], requires_grad=True)
    y, k = checkpoint(lambda a, scale=1.0: ((a.exp() * scale).sum(), 3), x, use_reentrant=False,
                      scale=2.0)
    assert k == 3
    g, = clgrad.autograd.grad(y, x)
    np.testing.assert_allclose(g.numpy(), 2 * np.exp([1.0, 2.0]), rtol=1e-6)
    with clgrad.no_grad():
        assert checkpoint(lambda a: a * 2, x, use_reentrant=False).grad_fn is None


def test_non_deterministic_function_is_caught(device):
    calls = []

    def f(a):
        calls.append(1)
        return a.exp() if len(calls) == 1 else a.exp().exp()
    x = clgrad.ones(2, requires_grad=True)
    y = checkpoint(f, x, use_reentrant=False)
    with pytest.raises(CheckpointError, match="different number of tensors"):
        y.sum().backward()


def test_peak_memory_lower(device):
    clgrad.manual_seed(0)
    net = clgrad.nn.Sequential(*[m for _ in range(16)
                                 for m in (clgrad.nn.Linear(128, 128), clgrad.nn.GELU())])
    x = clgrad.randn(256, 128, requires_grad=True)
    dev = x.device
    peaks = []
    for reentrant in (None, True, False):
        for _ in range(2):
            net.zero_grad(set_to_none=False)
            x.grad = None
            clgrad.cl.synchronize(dev)
            before = clgrad.cl.memory_allocated(dev)
            clgrad.cl.reset_peak_memory_stats(dev)
            out = net(x) if reentrant is None else \
                checkpoint_sequential(net, 4, x, use_reentrant=reentrant)
            out.sum().backward()
            del out
            peak = clgrad.cl.max_memory_allocated(dev) - before
        peaks.append(peak)
    assert peaks[1] < 0.6 * peaks[0] and peaks[2] < 0.6 * peaks[0], peaks
