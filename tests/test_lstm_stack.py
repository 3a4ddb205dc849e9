"""A stacked LSTM as a wavefront over two queues (ops/lstm_stack.py) and the side queue under it
(runtime/side_queue.py): against the numpy reference and the layer-by-layer path with the same
weights, gradients by finite differences in float64, a compiled step's replays against eager,
and the pool holding back what is freed while the side queue may still use it."""
import os
import sys

import numpy as np
import pytest

import clgrad
from clgrad import nn
from clgrad.autograd import gradcheck, gradgradcheck
from clgrad.ops import lstm_stack as stack_mod
from clgrad.ops.lstm_stack import lstm_stack
from clgrad.runtime.recording import Recording, _enqueue_burst
from clgrad.runtime.side_queue import (SideQueue, join_side_queue, mark, on_side_queue,
                                       queue_wait, side_queue)
from test_rnn import _np_layer


@pytest.fixture
def wavefront(monkeypatch):
    """Sets stack_mod.WAVEFRONT (the path nn.LSTM takes) for the test."""
    return lambda on: monkeypatch.setattr(stack_mod, "WAVEFRONT", on)


def _run(m, x, hx, loss_weights=(1.0, 0.5, 0.25)):
    """Outputs and every gradient of a loss over out, h_n and c_n, as numpy arrays."""
    x = x.detach().requires_grad_()
    m.zero_grad()
    out, (h, c) = m(x, hx)
    a, b, w = loss_weights
    (out.square().sum() * a + h.sum() * b + (c * c).sum() * w).backward()
    return [t.detach().numpy() for t in (out, h, c, x.grad)] + \
        [p.grad.numpy() for p in m.parameters()]


@pytest.mark.parametrize("layers,T,B,batch_first", [(2, 19, 3, False), (3, 8, 2, True),
                                                    (2, 1, 1, False), (4, 17, 2, False)])
@pytest.mark.parametrize("dtype", [clgrad.float32, clgrad.float64])
def test_wavefront_matches_layer_by_layer_and_numpy(device, wavefront, layers, T, B,
                                                    batch_first, dtype):
    """19 steps are chunks of 8, 8 and 3; 17 steps with four layers keep both queues busy with
    two layers each. hx is given (non-contiguous: a transposed view)."""
    if dtype == clgrad.float64 and not device.has_fp64:
        pytest.skip("no fp64 on this device")
    clgrad.manual_seed(3)
    m = nn.LSTM(5, 6, num_layers=layers, batch_first=batch_first).to(device=device, dtype=dtype)
    rng = np.random.default_rng(0)
    shape = (B, T, 5) if batch_first else (T, B, 5)
    x = clgrad.tensor(rng.standard_normal(shape), dtype=dtype, device=device)
    h0 = clgrad.tensor(rng.standard_normal((B, layers, 6)), dtype=dtype, device=device)
    c0 = clgrad.tensor(rng.standard_normal((layers, B, 6)), dtype=dtype, device=device)
    hx = (h0.transpose(0, 1), c0)
    got = {}
    for on in (True, False):
        wavefront(on)
        assert m._stacks(x) == on
        got[on] = _run(m, x, hx)
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == clgrad.float32 else dict(rtol=1e-10,
                                                                          atol=1e-10)
    for a, b in zip(got[True], got[False]):
        np.testing.assert_allclose(a, b, **tol)
    xt = x.numpy().transpose(1, 0, 2) if batch_first else x.numpy()
    out, finals = _np_layer(m, xt, [h0.numpy().transpose(1, 0, 2), c0.numpy()])
    np.testing.assert_allclose(got[True][0], out.transpose(1, 0, 2) if batch_first else out,
                               **tol)
    np.testing.assert_allclose(got[True][1], finals[0], **tol)
    np.testing.assert_allclose(got[True][2], finals[1], **tol)


def test_wavefront_gradients_by_finite_differences(device):
    """Every input of lstm_stack in float64: 10 steps are two chunks; and again with create_graph
    (the composed layers), which differentiates twice."""
    if not device.has_fp64:
        pytest.skip("no fp64 on this device")
    rng = np.random.default_rng(1)
    L, T, B, F, H = 2, 10, 2, 3, 2

    def t(*s):
        return clgrad.tensor(rng.standard_normal(s) * 0.5, dtype=clgrad.float64, device=device,
                             requires_grad=True)
    args = [t(T, B, F), t(L, B, H), t(L, B, H)] + \
        [w for l in range(L) for w in (t(4 * H, F if l == 0 else H), t(4 * H, H), t(4 * H),
                                       t(4 * H))]

    def fn(*a):
        return lstm_stack(a[0], a[1], a[2], list(a[3:]))
    assert gradcheck(fn, args)
    small = [a.detach()[:3].requires_grad_() if i == 0 else a for i, a in enumerate(args)]
    assert gradgradcheck(fn, small)


def test_wavefront_on_empty_batch(device, wavefront):
    wavefront(True)
    m = nn.LSTM(3, 4, num_layers=2).to(device)
    x = clgrad.zeros(6, 0, 3, device=device, requires_grad=True)
    out, (h, c) = m(x)
    assert out.shape == (6, 0, 4) and h.shape == (2, 0, 4) and c.shape == (2, 0, 4)
    out.sum().backward()
    assert x.grad.shape == (6, 0, 3)
    assert all(p.grad is not None and not p.grad.abs().sum().item() for p in m.parameters())


def test_nn_lstm_takes_the_wavefront_only_where_it_applies(device, monkeypatch):
    """One direction, two layers or more, both biases, no proj_size, no dropout in training; by
    default only on a device whose small kernels run on one core."""
    x = clgrad.zeros(4, 2, 3, device=device)
    monkeypatch.setattr(device, "small_kernels_use_one_core", True)
    assert nn.LSTM(3, 4, num_layers=2).to(device)._stacks(x)
    for m in (nn.LSTM(3, 4), nn.LSTM(3, 4, num_layers=2, bidirectional=True),
              nn.LSTM(3, 4, num_layers=2, proj_size=2), nn.LSTM(3, 4, num_layers=2, bias=False),
              nn.LSTM(3, 4, num_layers=2, dropout=0.5), nn.GRU(3, 4, num_layers=2)):
        assert not m.to(device)._stacks(x), m
    assert nn.LSTM(3, 4, num_layers=2, dropout=0.5).to(device).eval()._stacks(x)
    with clgrad.autocast("cpu", dtype=clgrad.bfloat16):        # torch's casts: layer by layer
        m = nn.LSTM(3, 4, num_layers=2).to(device)
        assert not m._stacks(x) and m(x)[0].dtype == clgrad.bfloat16
    monkeypatch.setattr(device, "small_kernels_use_one_core", False)
    assert not nn.LSTM(3, 4, num_layers=2).to(device)._stacks(x)


def test_compiled_step_replays_both_queues_as_eager_runs(device, wavefront):
    """A compiled training step with a 2-layer LSTM: its recording holds launches on the side
    queue and waits, and three replays give what three eager steps give, bit for bit."""
    wavefront(True)
    rng = np.random.default_rng(2)
    x = clgrad.tensor(rng.standard_normal((4, 19, 5)).astype(np.float32), device=device)
    y = clgrad.tensor(rng.integers(0, 3, 4), device=device)

    def make():
        clgrad.manual_seed(0)
        rnn = nn.LSTM(5, 8, num_layers=2, batch_first=True).to(device)
        head = nn.Linear(8, 3).to(device)
        opt = clgrad.optim.Adam(list(rnn.parameters()) + list(head.parameters()), lr=0.01)

        def step():
            opt.zero_grad()
            loss = nn.functional.cross_entropy(head(rnn(x)[0][:, -1]), y)
            loss.backward()
            opt.step()
            return loss
        return step, rnn
    eager, rnn_e = make()
    compiled_fn, rnn_c = make()
    compiled = clgrad.compile(compiled_fn)
    losses = [(eager().item(), compiled().item()) for _ in range(4)]
    rec = next(iter(compiled._variants.values())).rec
    assert rec is not None and rec.two_queues
    items = [it for fn, a in rec._plan if fn is _enqueue_burst for it in a[1]]
    assert any(it[0].__class__ is SideQueue for it in items)
    assert all(a == b for a, b in losses), losses
    for p, q in zip(rnn_e.parameters(), rnn_c.parameters()):
        assert np.array_equal(p.detach().numpy(), q.detach().numpy())


def test_side_queue_work_in_a_recording_replays_there(device):
    """Launches inside on_side_queue are recorded with the side queue and replayed on it, the
    waits with them; the results are those of the capture."""
    x = clgrad.arange(6, dtype=clgrad.float32, device=device)
    y = clgrad.zeros(6, device=device)
    side = side_queue(device)
    z = clgrad.zeros(6, device=device)
    with Recording() as rec:
        queue_wait(side, device)
        with on_side_queue(device):
            y.copy_(x * 2 + 1)
        done = mark(side)                  # the side queue's work so far, and no more
        with on_side_queue(device):
            z.copy_(x - 1)
        queue_wait(device, done)
        y.mul_(3)
        join_side_queue(device)
        z.add_(y)
    assert rec.two_queues and y.tolist() == [3.0, 9.0, 15.0, 21.0, 27.0, 33.0]
    assert z.tolist() == [2.0, 9.0, 16.0, 23.0, 30.0, 37.0]
    x.add_(1)
    rec.replay()
    assert y.tolist() == [9.0, 15.0, 21.0, 27.0, 33.0, 39.0]
    assert z.tolist() == [9.0, 16.0, 23.0, 30.0, 37.0, 44.0]
    items = [it for fn, a in rec._plan if fn is _enqueue_burst for it in a[1]]
    assert any(it[0] is side for it in items)
    # tools/bench_replay.py enqueues a recording's launches in a bare loop: side-queue ones too
    # (it asked the SideQueue for the device's gate_bursts before)
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "tools"))
    import bench_replay
    launches = bench_replay.launches_of(rec._plan)
    assert any(dev is side for dev, *_ in launches)
    assert bench_replay.bare_loop(launches) >= 0
    clgrad.cl.synchronize()


def test_pool_holds_back_frees_until_the_side_queue_joins(device):
    """A buffer freed while either queue may still use it is not handed out again before
    join_side_queue, a plain wait between the queues included."""
    side = side_queue(device)
    queue_wait(side, device)
    with on_side_queue(device):
        t = clgrad.ones(1 << 14, device=device) * 2
        buf = t._storage.buf
        del t
    queue_wait(device, side)
    again = [clgrad.empty(1 << 14, device=device) for _ in range(4)]
    assert all(a._storage.buf is not buf for a in again)
    assert not any(b is buf for bins in device.pool._bins.values() for b in bins)
    join_side_queue(device)
    assert device.pool.holding is None
    device.pool.settle()
    assert any(b is buf for bins in device.pool._bins.values() for b in bins)
    with pytest.raises(RuntimeError, match="outside on_side_queue"):
        with on_side_queue(device):
            queue_wait(device, side)
    join_side_queue(device)
