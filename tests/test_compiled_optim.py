"""An optimizer's step inside a compiled step (FusedOptimizer in optim/optimizer.py over
recording.refreshed): the update's launches are replayed, with their scalars (learning rate, bias
corrections, SGD's first-step flag) set from the host state at each replay; the step's Python does
not run; results and optimizer state equal eager's; a replaced state falls back to the host."""
import gc

import numpy as np
import pytest

import clgrad
import clgrad.nn as nn
import clgrad.nn.functional as F
from clgrad.runtime.recording import Recording
from helpers import classifier_step

OPTIMIZERS = {
    "sgd": lambda ps: clgrad.optim.SGD(ps, lr=0.1),
    "sgd momentum": lambda ps: clgrad.optim.SGD(ps, lr=0.1, momentum=0.9, dampening=0.3,
                                                weight_decay=0.01),
    "sgd nesterov": lambda ps: clgrad.optim.SGD(ps, lr=0.05, momentum=0.8, nesterov=True,
                                                maximize=True),
    "adam": lambda ps: clgrad.optim.Adam(ps, lr=0.01, weight_decay=0.02),
    "adam amsgrad": lambda ps: clgrad.optim.Adam(ps, lr=0.01, amsgrad=True),
    "adamw": lambda ps: clgrad.optim.AdamW(ps, lr=0.01),
    "rmsprop": lambda ps: clgrad.optim.RMSprop(ps, lr=0.01, momentum=0.5, centered=True),
}


def _mlp():
    clgrad.manual_seed(0)
    return nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, 4))


def _data(n, seed=0):
    rng = np.random.default_rng(seed)
    return [(clgrad.tensor(rng.standard_normal((16, 12)).astype(np.float32)),
             clgrad.tensor(rng.integers(0, 4, 16))) for _ in range(n)]


def _counted(opt):
    """Count the runs of the optimizer's update Python (eager steps and captures, not replays)."""
    calls = [0]
    update = opt._update

    def counting(capturing):
        calls[0] += 1
        return update(capturing)
    opt._update = counting
    return calls


def _state(opt):
    return {i: {k: v.numpy() if isinstance(v, clgrad.Tensor) else v for k, v in s.items()}
            for i, s in opt.state_dict()["state"].items()}


def _assert_same(a, b):
    (la, pa, sa), (lb, pb, sb) = a, b
    assert la == lb
    for x, y in zip(pa, pb):
        np.testing.assert_array_equal(x, y)
    assert sa.keys() == sb.keys()
    for i in sa:
        assert sa[i].keys() == sb[i].keys()
        for k in sa[i]:
            np.testing.assert_array_equal(sa[i][k], sb[i][k])


def _run(name, compiled, between=None, n=6):
    model = _mlp()
    opt = OPTIMIZERS[name](model.parameters())
    calls = _counted(opt)
    step = classifier_step(model, opt)
    run = clgrad.compile(step) if compiled else step
    losses = []
    for i, (x, y) in enumerate(_data(n)):
        if between is not None:
            between(i, opt)
        losses.append(run(x, y).item())
    return (losses, [p.detach().numpy() for p in model.parameters()], _state(opt)), run, calls


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_replayed_updates_match_eager_and_skip_the_python(device, name):
    eager, _, _ = _run(name, False)
    compiled, run, calls = _run(name, True)
    _assert_same(eager, compiled)          # bit for bit, the step counts in the state too
    assert run.stats == {"eager_calls": 1, "recordings": 1, "replays": 4}
    assert calls[0] == 2                   # the warm-up and the capture; no replay runs it
    rec = next(iter(run._variants.values())).rec
    kernel = OPTIMIZERS[name]([nn.Parameter(clgrad.ones(1))])._kernel
    names = [k.function_name for _, k, _, _, _ in rec.kernels]
    # one launch for the four parameters (their scalars are the same), in the replay
    assert names.count(kernel + "_x8") == 1 and names.count(kernel) == 0


@pytest.mark.parametrize("name", ["sgd momentum", "adam", "rmsprop"])
def test_options_changed_between_replays_reach_the_kernels(device, name):
    def between(i, opt):
        g = opt.param_groups[0]
        g["lr"] *= 0.7                     # what a scheduler does
        if "betas" in g and i == 3:
            g["betas"] = (0.8, 0.99)
        if "alpha" in g and i == 4:
            g["alpha"] = 0.9
        if "momentum" in g and i == 4:
            g["momentum"] = 0.6
    eager, _, _ = _run(name, False, between)
    compiled, run, _ = _run(name, True, between)
    _assert_same(eager, compiled)
    assert run.stats["replays"] == 4


def test_a_tensor_learning_rate_is_read_at_every_replay(device):
    results = []
    for compiled in (False, True):
        model = _mlp()
        lr = clgrad.tensor(0.05)
        opt = clgrad.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
        step = classifier_step(model, opt)
        run = clgrad.compile(step) if compiled else step
        losses = []
        for i, (x, y) in enumerate(_data(6)):
            lr.fill_(0.05 / (i + 1))
            losses.append(run(x, y).item())
        results.append((losses, [p.detach().numpy() for p in model.parameters()], _state(opt)))
    _assert_same(*results)


def test_refreshes_run_with_the_queue_open_where_bursts_are_gated(device, monkeypatch):
    """Where a replay holds its bursts behind a user event (pip's PoCL 3.0, gates_bursts), the
    optimizer's refresh runs with no gate held: it may read (a tensor learning rate), and a read
    behind a gate would wait for the gate, which the replay releases only after it. (A float
    learning rate here: the check must fail, not hang, should a gate be held.)"""
    from clgrad.runtime import recording
    monkeypatch.setattr(device, "gate_bursts", True)
    held, taken = [], [0]
    gates, release = recording.gate_queues, recording.open_gates

    def counting_gates(gated, n):
        made = gates(gated, n)
        held.extend(made)
        taken[0] += len(made)
        return made

    def counting_release(made):
        for gate in made:
            held.remove(gate)
        release(made)
    monkeypatch.setattr(recording, "gate_queues", counting_gates)
    monkeypatch.setattr(recording, "open_gates", counting_release)
    model = _mlp()
    opt = clgrad.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    refresh, at_refresh = opt._refresh, []
    opt._refresh = lambda made: at_refresh.append(len(held)) or refresh(made)
    run = clgrad.compile(classifier_step(model, opt))
    for x, y in _data(5):
        run(x, y)
    clgrad.cl.synchronize()
    assert run.stats["replays"] == 3
    assert at_refresh == [0, 0, 0]
    assert held == [] and taken[0] >= 3        # each replay's forward and backward was gated


def test_an_error_in_a_gated_refresh_is_the_one_raised(device, monkeypatch):
    """A refresh that raises inside a gated burst: its exception reaches the caller (the gate it
    opened is not released a second time, which the driver would refuse), and the queue still
    runs."""
    monkeypatch.setattr(device, "gate_bursts", True)
    model = _mlp()
    opt = clgrad.optim.SGD(model.parameters(), lr=0.05)
    refresh, calls = opt._refresh, [0]

    def failing(made):
        calls[0] += 1
        if calls[0] == 2:
            raise ValueError("refresh failed on purpose")
        return refresh(made)
    opt._refresh = failing
    run = clgrad.compile(classifier_step(model, opt))
    data = _data(4)
    for x, y in data[:3]:                  # eager, record, replay (refresh call 1)
        run(x, y)
    with pytest.raises(ValueError, match="on purpose"):
        run(*data[3])
    clgrad.cl.synchronize()
    assert np.isfinite(model[0].weight.detach().numpy()).all()


def test_a_replaced_state_runs_the_step_on_the_host_then_records_again(device):
    def between(i, opt):
        if i == 4:                         # state tensors replaced: the recorded ones are stale
            model = _mlp()
            other = clgrad.optim.Adam(model.parameters(), lr=0.02)
            step = classifier_step(model, other)
            for x, y in _data(2, seed=1):
                step(x, y)
            opt.load_state_dict(other.state_dict())
    eager, _, _ = _run("adam", False, between, n=8)
    compiled, run, calls = _run("adam", True, between, n=8)
    _assert_same(eager, compiled)
    # calls 0-3: eager, record, replay, replay; call 4 replays with the step on the host (the
    # refresh found new state) and marks the recording stale; call 5 records again; 6-7 replay
    assert run.stats == {"eager_calls": 1, "recordings": 2, "replays": 5}
    assert calls[0] == 4


@pytest.mark.parametrize("name", ["adam", "rmsprop"])
def test_parameters_sharing_a_launch_whose_step_counts_part(device, name):
    """The recorded step updates the four parameters in one launch with one set of scalars.
    When one parameter's step count leads the others' at a later call (set between calls here),
    Adam's replay runs the step on the host, as eager computes it (the bias corrections now
    differ), and the next call records again; RMSprop's scalars do not follow the count, and
    its replays go on."""
    def between(i, opt):
        if i == 3:
            p = opt.param_groups[0]["params"][1]
            opt.state[p]["step"] += 5
    eager, _, _ = _run(name, False, between)
    compiled, run, calls = _run(name, True, between)
    _assert_same(eager, compiled)
    if name == "adam":
        # calls 0-2: eager, record, replay; call 3 replays with the step on the host and marks
        # the recording stale; call 4 records again (one launch for three parameters, one for
        # the fourth); call 5 replays
        assert run.stats == {"eager_calls": 1, "recordings": 2, "replays": 3}
        assert calls[0] == 4
    else:
        assert run.stats == {"eager_calls": 1, "recordings": 1, "replays": 4}


def test_a_replaced_param_group_runs_the_step_on_the_host(device):
    def between(i, opt):
        if i == 3:                         # a new group dict, a new learning rate
            opt.param_groups[0] = dict(opt.param_groups[0], lr=0.002)
    eager, _, _ = _run("adam", False, between)
    compiled, run, _ = _run("adam", True, between)
    _assert_same(eager, compiled)
    assert run.stats["recordings"] == 2


def test_first_step_captured_without_warm_up(device):
    """A graph capture may hold an optimizer's first step: its state is made outside the
    recording, and SGD's first-step flag is cleared for the replays."""
    results = []
    for captured in (False, True):
        p = nn.Parameter(clgrad.tensor([1.0, -2.0, 3.0]))
        p.grad = clgrad.tensor([0.5, 0.25, -1.0])
        opt = clgrad.optim.SGD([p], lr=0.1, momentum=0.9, dampening=0.5)
        if captured:
            with Recording() as rec:
                opt.step()
            for _ in range(3):
                rec.replay()
        else:
            for _ in range(4):
                opt.step()
        results.append((p.tolist(), opt.state[p]["momentum_buffer"].tolist()))
    assert results[0] == results[1]


def test_a_step_with_a_closure_stays_host_work(device):
    model = _mlp()
    opt = clgrad.optim.SGD(model.parameters(), lr=0.1)
    calls = _counted(opt)
    x, y = _data(1)[0]

    def step():
        def closure():
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            return loss
        return opt.step(closure)
    run = clgrad.compile(step)
    gc.collect()
    for _ in range(4):
        run()
    assert calls[0] == 4                   # the closure's step runs as itself every time
