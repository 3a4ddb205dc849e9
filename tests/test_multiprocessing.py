"""clgrad.multiprocessing: torch.multiprocessing's interface; tensors cross process boundaries
by value and are rebuilt on the receiving process's device (forked children of a process that
uses OpenCL work in host mode)."""
import pytest

import clgrad
import clgrad.multiprocessing as mp
from clgrad import nn


def _square(i, q, t):
    q.put((i, t * t + i, nn.Parameter(clgrad.ones(2) * i)))


def test_spawn_fork_passes_tensors_both_ways(device):
    ctx = mp.get_context("fork")
    q = ctx.SimpleQueue()
    t = clgrad.tensor([1.0, 2.0, 3.0], dtype=clgrad.float16)
    mp.spawn(_square, args=(q, t), nprocs=2, start_method="fork")
    got = sorted((q.get() for _ in range(2)), key=lambda r: r[0])
    for i, v, p in got:
        assert v.device == device.torch_device and v.dtype is clgrad.float16
        assert v.tolist() == [1.0 + i, 4.0 + i, 9.0 + i]
        assert type(p) is nn.Parameter and p.requires_grad and p.tolist() == [i, i]
        (v.float().sin() * 0).sum().item()           # device work here, in the parent


def _fail(i):
    if i == 1:
        raise ValueError("rank one failed")


def _exit(i):
    import os
    os._exit(3)


def test_spawn_raises_a_childs_error():
    with pytest.raises(mp.ProcessRaisedException, match="ValueError: rank one failed") as e:
        mp.spawn(_fail, nprocs=2, start_method="fork")
    assert e.value.error_index == 1
    with pytest.raises(mp.ProcessExitedException, match="exit code 3"):
        mp.spawn(_exit, nprocs=1, start_method="fork")
    ctx = mp.spawn(_fail, nprocs=1, join=False, start_method="fork")
    assert len(ctx.pids()) == 1
    while not ctx.join():
        pass


def _train(rank, model, q):
    # a spawned process is new: it uses the OpenCL device like any program
    opt = clgrad.optim.SGD(model.parameters(), lr=0.1)
    x = clgrad.ones(4, 2)
    for _ in range(3):
        opt.zero_grad()
        loss = (model(x) - 1).pow(2).mean()
        loss.backward()
        opt.step()
    q.put((rank, {k: v.detach() for k, v in model.state_dict().items()}, loss.detach().sin()))


def test_a_spawned_process_trains_on_the_device_and_sends_its_state_back():
    """The Hogwild pattern, by value: each process trains its own copy of the model it was
    given and sends its state dict back (OpenCL memory cannot be shared between processes)."""
    clgrad.manual_seed(0)
    model = nn.Linear(2, 1).share_memory()
    before = model.weight.detach().clone()
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    p = ctx.Process(target=_train, args=(0, model, q))
    p.start()
    rank, state, loss = q.get(timeout=120)
    p.join()
    assert p.exitcode == 0 and rank == 0
    assert clgrad.equal(model.weight, before)                  # the parent's copy is untouched
    assert not clgrad.equal(state["weight"], before) and state["weight"].shape == (1, 2)
    model.load_state_dict(state)
    assert 0 <= loss.item() < 1
    assert mp.get_sharing_strategy() in mp.get_all_sharing_strategies()
