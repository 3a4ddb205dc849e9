"""Compiled steps (clgrad.compile over runtime/recording.py): replays give eager's results bit for
bit (dropout and Adam included), guards record again when what the recording assumed changes,
host reads fall back to eager with a warning (an error under fullgraph) and the modules around
them compiled on their own, outputs are never overwritten by later replays, and launches are
replayed, not dispatched."""
import copy
import gc
import math
import warnings

import numpy as np
import pytest

import clgrad
import clgrad.nn as nn
import clgrad.nn.functional as F
from clgrad.runtime import kernels
from clgrad.runtime.recording import Recording


def _mlp(p=0.2):
    clgrad.manual_seed(0)
    return nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Dropout(p), nn.Linear(32, 4))


def _data(n=6, batch=16, seed=0):
    rng = np.random.default_rng(seed)
    return [(clgrad.tensor(rng.standard_normal((batch, 12)).astype(np.float32)),
             clgrad.tensor(rng.integers(0, 4, batch))) for _ in range(n)]


def _train(model, opt, data, compiled, sched=None):
    def step(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        if sched is not None:
            sched.step()
        return loss
    run = clgrad.compile(step) if compiled else step
    clgrad.manual_seed(7)
    losses = [run(x, y) for x, y in data]
    return [l.item() for l in losses], run


@pytest.mark.parametrize("optim", ["sgd", "adam"])
def test_training_step_replays_bit_for_bit(device, optim):
    results = []
    for compiled in (False, True):
        model = _mlp()
        if optim == "sgd":
            opt = clgrad.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        else:
            opt = clgrad.optim.Adam(model.parameters(), lr=0.01)
        sched = clgrad.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
        losses, run = _train(model, opt, _data(), compiled, sched)
        results.append((losses, [p.detach().numpy() for p in model.parameters()], opt.param_groups[0]["lr"]))
    (le, pe, lre), (lc, pc, lrc) = results
    assert le == lc                      # dropout draws and Adam's bias corrections advance
    for a, b in zip(pe, pc):
        np.testing.assert_array_equal(a, b)
    assert lre == lrc                    # the scheduler ran at every replay
    assert run.stats["replays"] == 4 and run.stats["recordings"] == 1


def test_replay_launches_without_dispatch(device):
    x = clgrad.randn(64)
    f = clgrad.compile(lambda t: (t * 2 + 1).tanh().sum())
    f(x), f(x)
    seen = []
    kernels.launch_hooks.append(lambda *a: seen.append(a[1]))
    try:
        out = f(x)
    finally:
        kernels.launch_hooks.pop()
    # the replayed kernels (reported to the hooks too) and the copy of the output: nothing else
    v = next(iter(f._variants.values()))
    assert [k.function_name for k in seen[:-1]] == \
        [k.function_name for _, k, _, _, _ in v.rec.kernels]
    assert len(seen) == v.rec.launches + 1
    np.testing.assert_allclose(out.item(), np.tanh(x.numpy() * 2 + 1).sum(), rtol=1e-5)


def test_outputs_are_not_overwritten(device):
    f = clgrad.compile(lambda t: t * 3)
    outs = [f(clgrad.full((4,), float(i))) for i in range(5)]
    assert [o.tolist() for o in outs] == [[3.0 * i] * 4 for i in range(5)]
    assert f.stats["replays"] == 3


def test_new_batches_are_bound_and_slices_staged(device):
    data = clgrad.arange(40.0).view(10, 4)
    f = clgrad.compile(lambda t: (t + 1).sum(1))
    got = [f(data[i:i + 2]).tolist() for i in range(0, 10, 2)]      # views at offsets
    want = [(data.numpy()[i:i + 2] + 1).sum(1).tolist() for i in range(0, 10, 2)]
    assert got == want
    fresh = [f(clgrad.full((2, 4), float(i))).tolist() for i in range(4)]
    assert fresh == [[4.0 * (i + 1)] * 2 for i in range(4)]


def test_new_shape_records_a_variant(device):
    f = clgrad.compile(lambda t: t.exp())
    for n in (3, 5, 3, 5, 3, 5):
        x = clgrad.linspace(0, 1, n)
        np.testing.assert_allclose(f(x).numpy(), np.exp(x.numpy()), rtol=1e-6)
    assert len(f._variants) == 2 and f.stats["replays"] == 2


def test_guards_on_globals_and_parameters(device):
    global SCALE
    SCALE = 2.0
    w = nn.Parameter(clgrad.ones(3))

    def f(x):
        return x * w * SCALE
    cf = clgrad.compile(f)
    x = clgrad.ones(3)
    with clgrad.no_grad():
        for _ in range(3):
            assert cf(x).tolist() == [2.0] * 3
        SCALE = 5.0                       # a baked Python value changed: recorded again
        assert cf(x).tolist() == [5.0] * 3
        w.mul_(2)                         # same parameter, new values: replayed as is
        assert cf(x).tolist() == [10.0] * 3
    assert cf.stats == {"eager_calls": 1, "recordings": 2, "replays": 2}


def test_host_read_falls_back_with_a_warning(device):
    def f(x):
        if x.sum().item() > 0:            # control flow on a value
            return x * 2
        return x * 3
    cf = clgrad.compile(f)
    cf(clgrad.ones(2))
    with pytest.warns(RuntimeWarning, match="read of device values to the host"):
        cf(clgrad.ones(2))
    assert cf(-clgrad.ones(2)).tolist() == [-3.0, -3.0]        # eager: right either way
    with pytest.raises(clgrad.compiler.CompileError, match="test_compile.py"):
        g = clgrad.compile(f, fullgraph=True)
        g(clgrad.ones(2)), g(clgrad.ones(2))


class _ReadsInForward(nn.Module):
    """Two submodules with a host read between them that steers Python."""

    def __init__(self):
        super().__init__()
        self.encode = nn.Sequential(nn.Linear(4, 8), nn.Tanh())
        self.head = nn.Linear(8, 2)

    def forward(self, x):
        h = self.encode(x)
        if h.sum().item() > 0:
            h = h * 2
        else:
            h = h * 3
        return self.head(h)


def test_host_read_splits_a_module_into_its_submodules(device):
    """A module whose forward reads the host runs eagerly, but its submodules' calls are
    compiled on their own: they replay, forward and backward, and the Python between them
    (the branch on the read value) runs at every call."""
    clgrad.manual_seed(0)
    net = _ReadsInForward()
    cnet = clgrad.compile(net)
    x = clgrad.randn(3, 4)
    with pytest.warns(RuntimeWarning, match="read of device values.*compiled on their own"):
        for k in range(8):
            xk = x if k % 2 else -x                 # the branch alternates between calls
            net.zero_grad()
            e = net(xk)
            e.sum().backward()
            want = [e.tolist(), [p.grad.tolist() for p in net.parameters()]]
            net.zero_grad()
            c = cnet(xk)
            c.sum().backward()
            got = [c.tolist(), [p.grad.tolist() for p in net.parameters()]]
            np.testing.assert_allclose(np.array(got[0]), np.array(want[0]), rtol=1e-6,
                                       atol=1e-6)
            for g, w in zip(got[1], want[1]):
                np.testing.assert_allclose(np.array(g), np.array(w), rtol=1e-6, atol=1e-6)
    parts = {type(m).__name__: c.stats for m, c in cnet._compiled._split_parts()}
    assert set(parts) == {"Sequential", "Linear"}
    assert all(st["replays"] >= 3 for st in parts.values()), parts
    assert cnet._compiled.stats["replays"] == 0
    assert "_compiled_call" not in net.encode.__dict__     # eager outside the compiled call
    old_head, net.head = net.head, nn.Linear(8, 2)          # a part replaced: found again
    for xk in (x, -x, x):
        np.testing.assert_allclose(np.array(cnet(xk).tolist()), np.array(net(xk).tolist()),
                                   rtol=1e-6, atol=1e-6)
    heads = [m for m, _ in cnet._compiled._split_parts() if isinstance(m, nn.Linear)]
    assert heads == [net.head] and old_head is not net.head


def _reading_steps():
    """Training steps that read values with .item(), each with a fresh model and optimizer."""
    def make():
        clgrad.manual_seed(1)
        model = nn.Sequential(nn.Linear(5, 16), nn.ReLU(), nn.Linear(16, 3))
        return model, clgrad.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

    def returns_reads(model, opt, history):
        def step(x, y):
            opt.zero_grad()
            out = model(x)
            loss = F.cross_entropy(out, y)
            loss.backward()
            opt.step()
            hit = (out.argmax(1) == y)
            right, share = hit.sum(), hit.float().mean()
            value = loss.item()                 # kept in a local until it is returned
            return value, {"right": right.item(), "share": float(share)}
        return step

    def keeps_a_read(model, opt, history):
        def step(x, y):
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            history.append(loss.item())      # kept: a replay would not append
            return history[-1]
        return step
    return make, {"returns": returns_reads, "keeps": keeps_a_read}


@pytest.mark.parametrize("kind", ["returns", "keeps"])
def test_a_step_that_reads_its_loss(device, kind):
    """A training step whose return value is made of reads (`return loss.item(), {...}`) is
    recorded whole: each replay reads the values again, and training follows eager training bit
    for bit. A step that keeps a read value elsewhere (a list it appends to) cannot be replayed:
    it runs eagerly with its model compiled on its own (forward and backward replay)."""
    make, steps = _reading_steps()
    x, y = clgrad.randn(8, 5), clgrad.tensor([0, 1, 2, 0, 1, 2, 0, 1])
    results, histories = {}, {}
    for compiled in (False, True):
        model, opt = make()
        histories[compiled] = []
        step = steps[kind](model, opt, histories[compiled])
        run = clgrad.compile(step) if compiled else step
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always", RuntimeWarning)
            results[compiled] = [run(x, y) for _ in range(8)]
    assert results[True] == results[False]
    assert histories[True] == histories[False]
    if kind == "returns":
        assert not [str(w.message) for w in seen if issubclass(w.category, RuntimeWarning)]
        assert run.stats == {"eager_calls": 1, "recordings": 1, "replays": 6}
        losses = [r[0] for r in results[True]]
        assert losses[-1] < losses[0] and type(results[True][0][1]["right"]) is int
    else:
        assert [w for w in seen if "read of device values" in str(w.message)]
        (m, part), = run._split_parts()
        assert m is model and part.stats["replays"] >= 3 and run.stats["replays"] == 0


def test_reads_returned_through_a_conditional_or_a_conversion_replay(device):
    """`return s.item() if flag else s` (a jump to the return) and float(t) / int(t) / bool(t)
    (Python 3.11 calls a builtin type from its PRECALL) are reads that are the return value."""
    def f(x, flag=True):
        s = (x * x).sum()
        si, big = s.int(), s > 5
        return (float(s), int(si), bool(big)) if flag else s
    cf = clgrad.compile(f)
    x = clgrad.arange(0.0, 3.0)
    seen = set()
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        for k in range(12):                         # float() gets specialised on the way
            got = cf(x * (k % 3))                   # sums 0, 5, 20: s > 5 changes
            assert got == f(x * (k % 3))
            seen.add(got[2])
    assert cf.stats["replays"] == 10 and seen == {True, False}


def test_a_returned_read_of_an_argument_reads_the_next_calls_argument(device):
    """x.item() of an argument: each replay reads the argument it is given (its buffer is
    another one at each call), not the recorded call's."""
    def f(x, w):
        s, head = (x * 2 + w).sum(), x[0]        # head: a view of the argument
        return head.item(), s.item(), w.item()
    cf = clgrad.compile(f)
    w = clgrad.ones(1)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        for k in range(6):
            x = clgrad.tensor([float(k), 2.0 * k])
            assert cf(x, w) == f(x, w)
    assert cf.stats["replays"] == 4


@pytest.mark.parametrize("ret", ["scaled", "sqrt", "shared_int", "constant_true", "in_with",
                                 "stored", "int_of_float", "called_after", "method_after"])
def test_reads_that_do_not_reach_the_return_value_as_read(device, ret):
    """Only a read whose value reaches the caller as it was read replays: one that the function
    changes, stores or could confuse with another value of its result runs eagerly (with a
    warning), and its results stay right."""
    def f(x):
        s = (x * 2).sum()
        if ret == "scaled":
            return s.item() * 2
        if ret == "sqrt":
            return math.sqrt(s.item())
        if ret == "shared_int":                  # equal small ints are one object
            return s.int().item(), s.int().item()
        if ret == "constant_true":
            return (s > 0).item(), True
        if ret == "in_with":
            with clgrad.no_grad():
                return s.item()
        if ret == "stored":
            v = s.item()
            kept.append(v)
            return v
        if ret == "called_after":               # a call after the read, beside a builtin
            return s.item(), (float, kept.append(1))
        if ret == "method_after":
            return s.item(), float(kept.count(1))
        return int(s)                            # a float read made an int
    kept = []
    cf = clgrad.compile(f)
    x = clgrad.arange(1.0, 4.0)
    with pytest.warns(RuntimeWarning, match="runs eagerly"):
        for k in range(4):
            assert cf(x + k) == f(x + k)
    assert cf.stats["replays"] == 0


def test_cache_limit_then_eager(device, monkeypatch):
    monkeypatch.setattr(clgrad.compiler.config, "cache_size_limit", 2)
    f = clgrad.compile(lambda t: t + 1)
    with pytest.warns(RuntimeWarning, match="cache_size_limit"):
        for n in range(1, 5):
            assert f(clgrad.zeros(n)).tolist() == [1.0] * n
    assert f(clgrad.zeros(7)).tolist() == [1.0] * 7


def test_a_slice_argument_changed_in_place_keeps_the_change(device):
    """A slice of a bigger tensor reaches a replay through a staging copy: what the function
    writes into it in place goes back to the slice, at the recorded call and at every replay."""
    def f(part, other):
        part.mul_(2.0).add_(other)
        return part.sum()
    cf = clgrad.compile(f)
    for k in range(5):
        want, got = clgrad.arange(10.0), clgrad.arange(10.0)
        other = clgrad.full((4,), float(k))
        e, c = f(want[3:7], other), cf(got[3:7], other)
        assert c.item() == e.item() and got.tolist() == want.tolist(), k
    assert cf.stats["replays"] >= 3


def test_arguments_sharing_memory_changed_in_place_run_eagerly(device):
    """Two arguments on one memory, one of them a slice (a replay would copy it, and a write
    through the other would not reach that copy): the function runs eagerly, with a warning."""
    def f(whole, part):
        whole.mul_(2.0)
        return part + 1.0
    cf = clgrad.compile(f)
    with pytest.warns(RuntimeWarning, match="shares memory with another"):
        for _ in range(4):
            want, got = clgrad.arange(6.0), clgrad.arange(6.0)
            assert cf(got, got[1:]).tolist() == f(want, want[1:]).tolist()
            assert got.tolist() == want.tolist()
    assert cf.stats["replays"] == 0
    # the same layouts on separate memory are another signature, which replays
    for _ in range(4):
        a, b = clgrad.arange(6.0), clgrad.arange(6.0)
        assert cf(a, b[1:]).tolist() == [2.0, 3.0, 4.0, 5.0, 6.0]
    assert cf.stats["replays"] >= 2


def test_index_check_reports_on_the_next_replay(device):
    emb = nn.Embedding(5, 3)
    f = clgrad.compile(lambda i: emb(i).sum())
    good = clgrad.tensor([0, 4])
    with clgrad.no_grad():
        f(good), f(good), f(good)
        f(clgrad.tensor([1, 9]))          # replayed: the check's flag is read without waiting
        with pytest.raises(IndexError, match="index out of range"):
            f(good)                       # raises here when the read is done, else at the next
            f(good)                       # call, which waits for it
    with clgrad.no_grad():                # nothing left over: replays go on, on the new input
        f(good)
        assert f(good).item() == pytest.approx(emb(good).sum().item(), rel=1e-6)
    assert f.stats["replays"] >= 2


def test_a_replayed_index_out_of_range_stays_inside_the_tensor(device):
    """A replay reads its index checks' flags after its launches, so the index kernels clamp an
    index out of range into the tensor meanwhile: a replayed index_add and gather at +-10^8
    (the index_add crashed PoCL before) touch no other memory, the next call raises IndexError,
    and the calls after it match eager."""
    f = clgrad.compile(lambda x, i, v: (x.index_add(0, i, v), x[i].sum(0)))
    x, v = clgrad.arange(15.0).reshape(5, 3), clgrad.ones(2, 3)
    good = clgrad.tensor([0, 4])
    sentinel = clgrad.full((4096,), 7.0)
    with clgrad.no_grad():
        for _ in range(4):
            f(x, good, v)
        assert f.stats["replays"] >= 2
        for bad in (10 ** 8, -10 ** 8):
            f(x, clgrad.tensor([1, bad]), v)
            with pytest.raises(IndexError, match="index out of range"):
                f(x, good, v)
                f(x, good, v)
        got = f(x, good, v)
        want = (x.index_add(0, good, v), x[good].sum(0))
    for g, w in zip(got, want):
        assert g.tolist() == w.tolist()
    assert x.tolist() == np.arange(15.0).reshape(5, 3).tolist()
    assert bool((sentinel == 7.0).all())


def test_each_check_of_a_replay_reports_its_own_message(device):
    """A replay reads the flags of all its checks at once (one read): the error names the check
    whose flag was set, whichever it is."""
    emb = nn.Embedding(5, 4)
    f = clgrad.compile(lambda i, t: nn.functional.cross_entropy(emb(i), t))
    i, t = clgrad.tensor([0, 4, 2]), clgrad.tensor([1, 3, 0])
    with clgrad.no_grad():
        want = f(i, t).item()
        f(i, t), f(i, t)
        assert f.stats["replays"] >= 1
        for bad_i, bad_t, message in ((clgrad.tensor([0, 7, 2]), t, "index out of range"),
                                      (i, clgrad.tensor([1, 3, 4]), "Target out of bounds")):
            f(bad_i, bad_t)
            with pytest.raises(IndexError, match=message):
                f(i, t)
                f(i, t)
            f(i, t)
        assert f(i, t).item() == pytest.approx(want, rel=1e-6)


def test_replays_follow_a_queue_replaced_by_the_profiler(device):
    """A profiler with device times gives the device a new queue: a recording made before
    enqueues its copies and reads there too, so that they keep their order with its launches."""
    from clgrad.autograd import profiler
    emb = nn.Embedding(5, 3)
    f = clgrad.compile(lambda i: emb(i).sum())     # an upload (the check's flag) and a read
    good = clgrad.tensor([0, 4])
    want = emb(good).sum().item()
    with clgrad.no_grad():
        f(good), f(good), f(good)
        rec = next(iter(f._variants.values())).rec
        with profiler.profile(use_device="cl"):
            assert f(good).item() == pytest.approx(want, rel=1e-6)
            assert rec._check_events[-1][1].command_queue.int_ptr == device._queue.int_ptr
        assert f(good).item() == pytest.approx(want, rel=1e-6)
        assert rec._check_events[-1][1].command_queue.int_ptr == device._queue.int_ptr


def test_a_replaced_parameter_or_layer_is_used(device):
    """Assigning a new Parameter or a new layer to a compiled model makes its next call use
    them (the recording held the old ones: it is made again)."""
    x = clgrad.ones(2, 3)
    lin = nn.Linear(3, 1, bias=False)
    seq = nn.Sequential(nn.Linear(3, 2), nn.ReLU())
    clin, cseq = clgrad.compile(lin), clgrad.compile(seq)
    with clgrad.no_grad():
        for k in range(5):
            lin.weight = nn.Parameter(clgrad.full((1, 3), float(k)))
            assert clin(x).tolist() == [[3.0 * k]] * 2
            if k % 2:
                seq[0] = nn.Linear(3, 2)
            assert cseq(x).tolist() == seq(x).tolist()
        for _ in range(3):                          # unchanged from here: replays
            assert cseq(x).tolist() == seq(x).tolist()
    assert clin._compiled.stats["recordings"] == 4
    assert cseq._compiled.stats["replays"] >= 3


def test_attention_dropout_drawn_again_in_backward_follows_each_replay(code_paths, device):
    """A compiled model whose backward runs outside it, with attention dropout: the fused
    attention (GPU paths) draws the mask again in backward, from the forward's counter offset;
    each backward replay draws the mask of its own forward replay (it drew the recorded call's
    mask at every replay, so the gradients went wrong from the first replay on)."""
    class Attend(nn.Module):
        def __init__(self):
            super().__init__()
            self.attn = nn.MultiheadAttention(4, 2, dropout=0.3, batch_first=True)
            self.head = nn.Linear(8, 3)

        def forward(self, x):
            return self.head(self.attn(x, x, x, need_weights=False)[0].reshape(x.shape[0], 8))

    rng = np.random.default_rng(0)
    data = [(clgrad.tensor(rng.standard_normal((6, 2, 4)).astype(np.float32)),
             clgrad.tensor(rng.integers(0, 3, 6))) for _ in range(6)]
    runs = []
    for compiled in (False, True):
        clgrad.manual_seed(0)
        net = Attend()
        model = clgrad.compile(net) if compiled else net
        opt = clgrad.optim.SGD(net.parameters(), lr=0.2)
        clgrad.manual_seed(5)
        seen = []
        for x, y in data:
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            seen.append(loss.item())
        runs.append(seen + [p.detach().numpy().ravel() for p in net.parameters()])
    np.testing.assert_allclose(np.hstack(runs[1]), np.hstack(runs[0]), rtol=1e-5, atol=1e-6)
    assert model._compiled.stats["replays"] >= 3


def test_zero_grad_to_none_outside_the_compiled_step_replays(device):
    """The usual loop: optimizer.zero_grad() (set_to_none) outside, forward, backward and step
    inside the compiled function. The gradients the recorded call made from none are given back
    after each replay; a call that finds gradients there (accumulating) records again."""
    data = _data(n=8)
    runs = []
    for compiled in (False, True):
        clgrad.manual_seed(0)
        net = nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Linear(16, 4))
        opt = clgrad.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)

        def step(x, y):
            loss = F.cross_entropy(net(x), y)
            loss.backward()
            opt.step()
            return loss
        run = clgrad.compile(step) if compiled else step
        seen = []
        for k, (x, y) in enumerate(data):
            if k != 5:                      # call 5 accumulates onto call 4's gradients
                opt.zero_grad()
            seen.append(run(x, y).item())
        seen += [p.grad.numpy().ravel() for p in net.parameters()]
        runs.append(np.hstack(seen))
    np.testing.assert_allclose(runs[1], runs[0], rtol=1e-5, atol=1e-6)
    assert run.stats["replays"] >= 4, run.stats


def test_a_module_setting_changed_between_calls_counts(device):
    """A plain attribute of a module (a dropout's p, a scale its forward reads) given another
    value between calls, or a tensor kept as a plain attribute (not a buffer) given another
    tensor, is a new state: the next call records again with it."""
    class Scaled(nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = 1.0
            self.mask = clgrad.ones(2)
            self.lin = nn.Linear(2, 2)
            self.drop = nn.Dropout(0.0)

        def forward(self, x):
            return self.drop(self.lin(x) * self.scale * self.mask)

    m = Scaled()
    model = clgrad.compile(m)
    x = clgrad.ones(4, 2)
    with clgrad.no_grad():
        for k in range(6):
            m.scale = float(k // 2)
            m.drop.p = 0.0 if k < 4 else 0.5
            if k == 3:
                m.mask = clgrad.tensor([2.0, -1.0])
            clgrad.manual_seed(0)
            got = model(x).tolist()
            clgrad.manual_seed(0)
            assert got == m(x).tolist(), k
    assert model._compiled.stats["replays"] >= 1


def test_attributes_the_function_reads_from_held_objects_count(device):
    """A compiled method reading `self.scale`, a function reading a config object's value: a
    new value makes the next call record again with it; an attribute the code never reads (a
    step counter) changing at every call does not stop the replays."""
    class Trainer:
        def __init__(self):
            self.model = nn.Linear(2, 2)
            self.scale = 1.0
            self.calls = 0

        @clgrad.compile
        def run(self, x):
            return self.model(x) * self.scale

    config = type("Config", (), {})()
    config.mult = 1.0
    scaled = clgrad.compile(lambda x: x * config.mult)
    trainer, x = Trainer(), clgrad.ones(1, 2)
    with clgrad.no_grad():
        plain = trainer.model(x)
        for k in range(8):
            trainer.calls += 1
            trainer.scale = config.mult = float(k // 3)
            assert trainer.run(x).tolist() == (plain * float(k // 3)).tolist()
            assert scaled(x).tolist() == [[float(k // 3)] * 2]
    assert Trainer.run.stats["replays"] >= 3 and scaled.stats["replays"] >= 3


def test_lists_and_dicts_the_function_names_count(device):
    """Layers kept in a plain list, a scale in a list, a config dict's value and tensor: a new
    item makes the next call record again with it; unchanged, the calls replay."""
    layers = [nn.Linear(2, 2), nn.Linear(2, 2)]
    scales = [1.0]
    config = {"shift": clgrad.tensor(0.0), "mult": 1.0}

    def f(x):
        for layer in layers:
            x = layer(x)
        return x * scales[0] * config["mult"] + config["shift"]

    cf = clgrad.compile(f)
    x = clgrad.ones(1, 2)
    with clgrad.no_grad():
        for k in range(12):
            if k == 3:
                layers[0] = nn.Linear(2, 2)
            if k == 6:
                scales[0] = 2.0
                config["mult"] = 3.0
            if k == 9:
                config["shift"] = clgrad.tensor(5.0)
            assert cf(x).tolist() == f(x).tolist(), k
    assert cf.stats["replays"] >= 4, cf.stats


def test_a_hook_added_or_removed_after_compiling_counts(device):
    """A forward hook registered on a compiled model after its calls were recorded changes what
    the next calls return, and its removal too (the device work it adds is recorded; its
    Python side effects run only when a call records, as docs/compile.md says)."""
    lin = nn.Linear(3, 2)
    model = clgrad.compile(lin)
    x = clgrad.ones(1, 3)
    with clgrad.no_grad():
        plain = lin(x).tolist()
        for _ in range(3):
            assert model(x).tolist() == plain
        handle = lin.register_forward_hook(lambda mod, args, out: out * 2.0)
        for _ in range(3):
            assert model(x).tolist() == [[2.0 * v for v in plain[0]]]
        handle.remove()
        for _ in range(3):
            assert model(x).tolist() == plain
    assert model._compiled.stats["replays"] >= 5


_SCALE = clgrad.tensor(2.0)


def _scaled(x):
    return x * _SCALE


def test_a_global_closure_or_attribute_tensor_assigned_anew_is_used(device):
    """A tensor that a global, a closure variable or an attribute of an object the function
    uses names is found again when the name is given another tensor."""
    global _SCALE
    holder = type("Holder", (), {})()
    holder.t = clgrad.tensor(1.0)
    box = [clgrad.tensor(1.0)]
    shift = box[0]

    def through_closure_and_attribute(x):
        return x * holder.t + shift

    cg, cc = clgrad.compile(_scaled), clgrad.compile(through_closure_and_attribute)
    x = clgrad.ones(3)
    for k in range(5):
        _SCALE = clgrad.tensor(float(k))
        holder.t = clgrad.tensor(float(k))
        shift = clgrad.tensor(float(-k))
        assert cg(x).tolist() == [float(k)] * 3
        assert cc(x).tolist() == [0.0] * 3
    _SCALE = clgrad.tensor(2.0)


def test_train_and_eval_alternating_replay_both(device):
    """A training loop that evaluates after every epoch: train and eval are two variants, each
    recorded once and replayed from then on (not recorded again at every switch, until the
    recording limit made the model eager), with eager's results in both modes."""
    data = _data(n=3)
    runs = []
    for compiled in (False, True):
        clgrad.manual_seed(0)
        net = nn.Sequential(nn.Linear(12, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Dropout(0.3),
                            nn.Linear(16, 4))
        model = clgrad.compile(net) if compiled else net
        opt = clgrad.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
        clgrad.manual_seed(3)
        seen = []
        for epoch in range(10):
            model.train()
            for x, y in data:
                opt.zero_grad()
                loss = F.cross_entropy(model(x), y)
                loss.backward()
                opt.step()
                seen.append(loss.item())
            model.eval()                # (evaluated without no_grad: grad mode alone would
            for x, _ in data[:1]:       # make it another signature)
                seen.extend(model(x).detach().reshape(-1).tolist())
        runs.append(seen)
    np.testing.assert_allclose(np.hstack(runs[1]), np.hstack(runs[0]), rtol=1e-5, atol=1e-6)
    stats = model._compiled.stats
    assert stats["recordings"] == 2 and stats["replays"] >= 35, stats


def test_module_compile_and_optimized_module(device):
    net = _mlp(p=0.0).eval()
    ref = copy.deepcopy(net)
    opt_mod = clgrad.compile(net)
    assert isinstance(opt_mod, clgrad.compiler.OptimizedModule)
    assert all(k.startswith("_orig_mod.") for k in opt_mod.state_dict())
    x = clgrad.randn(5, 12)
    with clgrad.no_grad():
        for _ in range(3):
            np.testing.assert_array_equal(opt_mod(x).numpy(), ref(x).numpy())
    assert opt_mod._compiled.stats["replays"] == 1
    net.compile()
    with clgrad.no_grad():
        for _ in range(3):
            np.testing.assert_array_equal(net(x).numpy(), ref(x).numpy())


def test_compile_arguments(device):
    f = lambda t: t + 1  # noqa: E731
    assert clgrad.compile(f, backend="eager") is f
    assert clgrad.compile(f, disable=True) is f
    deco = clgrad.compile(mode="reduce-overhead")
    assert deco(f)(clgrad.zeros(1)).tolist() == [1.0]
    with pytest.raises(RuntimeError, match="Unrecognized mode"):
        clgrad.compile(f, mode="fastest")
    with pytest.raises(RuntimeError, match="Either mode or options"):
        clgrad.compile(f, mode="default", options={})
    clgrad.compiler.reset()
    assert not clgrad.compiler.is_compiling()


def test_disable_runs_as_host_work(device):
    calls = []

    @clgrad.compiler.disable
    def log(t):
        calls.append(1)

    f = clgrad.compile(lambda t: (log(t), t * 2)[1])
    for _ in range(4):
        f(clgrad.ones(2))
    assert len(calls) == 4 and f.stats["replays"] == 2


def test_a_function_changing_an_argument_with_history_in_place_stays_eager(device):
    """torch.compile(nn.ReLU(inplace=True)) on a hidden activation: the warm-up sees the argument
    changed in place and the function stays eager (a recording takes such an argument as a leaf
    of its own, which an in-place op may not change), with one warning; gradients as eager's."""
    act = clgrad.compile(nn.ReLU(inplace=True))
    w = nn.Parameter(clgrad.tensor([[1.0, -2.0], [0.5, 1.5]]))
    x = clgrad.tensor([[1.0, 1.0], [-1.0, 2.0]])
    with pytest.warns(RuntimeWarning, match="changes in place an argument"):
        act(x @ w)
    for _ in range(3):
        w.grad = None
        y = act(x @ w)
        y.sum().backward()
        h = x.numpy() @ w.detach().numpy()
        np.testing.assert_allclose(y.detach().numpy(), np.maximum(h, 0))
        np.testing.assert_allclose(w.grad.numpy(), x.numpy().T @ (h > 0).astype(np.float32))
    assert act._compiled.stats == {"eager_calls": 4, "recordings": 0, "replays": 0}


def test_functions_with_comprehensions_and_nested_functions(device):
    """A list comprehension is a nested code object in Python 3.11, as a nested def is: the
    globals they read are found too (their search once failed on any such function)."""
    def f(x):
        def twice(t):
            return t * SCALE_2
        return sum([twice(x) * i for i in range(3)])
    global SCALE_2
    SCALE_2 = 2.0
    cf = clgrad.compile(f)
    x = clgrad.ones(2)
    for _ in range(3):
        assert cf(x).tolist() == [6.0, 6.0]
    SCALE_2 = 3.0                 # read inside the nested function: a guard, recorded again
    assert cf(x).tolist() == [9.0, 9.0]
    assert cf.stats == {"eager_calls": 1, "recordings": 2, "replays": 1}


SCALE_2 = 2.0


def test_a_storage_without_a_buffer_does_not_break_a_recording(device):
    """A Storage whose allocation raised lives on in the frames of a traceback still held; the
    search of the live storages at the end of a capture passes over it."""
    from clgrad.runtime.memory import Storage
    half = Storage.__new__(Storage)        # what the failed __init__ leaves
    x = clgrad.ones(4)
    with Recording() as rec:
        y = x * 2
    assert rec.broken is None
    x.fill_(3.0)
    rec.replay()
    assert y.tolist() == [6.0] * 4
    del half


def test_recording_gives_buffers_back(device):
    pool = device.pool
    gc.collect()            # garbage of earlier tests would be freed during the test
    pool.settle()
    before = pool.allocated
    x = clgrad.randn(1000)
    with Recording() as rec:
        y = (x * 2).exp() + 1
    del y
    rec.release()
    del rec
    pool.settle()
    assert pool.allocated == before + x._storage._block


def test_compiled_module_differentiated_outside(device):
    """torch.compile(model) in a training loop: forward replayed, its backward recorded on the
    first backward and replayed after, gradients equal to eager bit for bit."""
    model = _mlp()
    ref = copy.deepcopy(model)
    cm = clgrad.compile(model)
    opts = [clgrad.optim.Adam(m.parameters(), lr=0.01) for m in (model, ref)]
    data = _data()
    out = []
    for net, opt in zip((cm, ref), opts):
        clgrad.manual_seed(3)
        losses = []
        for x, y in data:
            opt.zero_grad()
            loss = F.cross_entropy(net(x), y)
            loss.backward()
            opt.step()
            losses.append(loss.item())
        out.append(losses)
    assert out[0] == out[1]
    for a, b in zip(model.parameters(), ref.parameters()):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    assert cm._compiled.stats["replays"] == 4


def test_compiled_call_input_gradients_and_overlap(device):
    w = nn.Parameter(clgrad.randn(4, 3, dtype=clgrad.float64))
    f = clgrad.compile(lambda x: (x @ w).tanh())
    xs = [clgrad.randn(2, 4, dtype=clgrad.float64, requires_grad=True) for _ in range(5)]
    for x in xs:
        f(x).sum().backward()
    for x in xs:
        want = (1 - np.tanh(x.detach().numpy() @ w.detach().numpy()) ** 2) @ \
            w.detach().numpy().T
        np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-12)
    # two calls before one backward: the second runs eagerly, both gradients right
    a, b = clgrad.randn(2, 4, dtype=clgrad.float64, requires_grad=True), \
        clgrad.randn(2, 4, dtype=clgrad.float64, requires_grad=True)
    (f(a).sum() + f(b).sum()).backward()
    for x in (a, b):
        want = (1 - np.tanh(x.detach().numpy() @ w.detach().numpy()) ** 2) @ \
            w.detach().numpy().T
        np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-12)
    with pytest.raises(RuntimeError, match="differentiated twice"):
        x = clgrad.randn(2, 4, dtype=clgrad.float64, requires_grad=True)
        clgrad.autograd.grad(f(x).sum(), x, create_graph=True)


def test_outputs_never_differentiated_are_replayed(device):
    """A compiled model evaluated with grad on and its outputs never differentiated: the backward
    was recorded with the forward, so calls replay; an output dies with its last reference (no
    reference cycle keeps the call pending until a collection)."""
    import weakref
    model = _mlp(p=0.0)
    cm = clgrad.compile(model)
    x = _data(1)[0][0]
    want = model(x).detach().numpy()
    gc.collect()
    gc.disable()
    try:
        for _ in range(5):
            y = cm(x)
            np.testing.assert_allclose(y.detach().numpy(), want, rtol=1e-6)
            ref = weakref.ref(y)
            del y
            assert ref() is None
    finally:
        gc.enable()
    assert cm._compiled.stats == {"eager_calls": 1, "recordings": 1, "replays": 3}
    loss = cm(x).sum()                     # and a later backward still gets eager's gradients
    loss.backward()
    got = [p.grad.numpy() for p in model.parameters()]
    model.zero_grad()
    model(x).sum().backward()
    for g, p in zip(got, model.parameters()):
        np.testing.assert_allclose(g, p.grad.numpy(), rtol=1e-6)


def test_argument_gradients_in_pytrees_repeated_and_retained(device):
    """Gradients of a compiled call's arguments equal eager's when a tensor sits in a tuple
    argument (not taken for state, which counted its gradient twice), when one tensor is passed
    twice (one input of the call's node), and when a retained graph runs backward twice."""
    clgrad.manual_seed(0)
    cell = nn.LSTMCell(3, 2).double()
    x, h, c = (clgrad.randn(2, n, dtype=clgrad.float64, requires_grad=True) for n in (3, 2, 2))

    def grads(f, twice=False):
        out = f(x, (h, c))
        loss = out[0].sum() + 0.5 * out[1].sum()
        got = clgrad.autograd.grad(loss, [x, h, c], retain_graph=twice)
        if twice:
            again = clgrad.autograd.grad(loss, [x, h, c])
            for a, b in zip(got, again):
                np.testing.assert_array_equal(a.numpy(), b.numpy())
        return [g.numpy() for g in got]
    want = grads(cell)
    compiled = clgrad.compile(cell)
    for i in range(4):
        for g, w in zip(grads(compiled, twice=i % 2 == 1), want):
            np.testing.assert_allclose(g, w, rtol=1e-12)
    assert compiled._compiled.stats["replays"] == 2

    f = clgrad.compile(lambda a, b: (a * b).sin())
    for _ in range(4):
        a = clgrad.randn(5, dtype=clgrad.float64, requires_grad=True)
        f(a, a).sum().backward()
        np.testing.assert_allclose(a.grad.numpy(), 2 * a.detach().numpy() *
                                   np.cos(a.detach().numpy() ** 2), rtol=1e-12)
    assert f.stats["replays"] == 2


def _run_tool(module, argv, capsys):
    assert module.main(argv) == 0
    return capsys.readouterr().out


def test_examples_compiled_reach_eager_losses(device, tmp_path, capsys):
    """tools/train.py --compile (torch.compile(model)) and tools/train_gpt.py --compile (the
    whole step compiled) print the same losses as eager."""
    import os
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "tools"))
    import train
    import train_gpt
    common = ["--model", "mlp", "--epochs", "2", "--train-size", "600", "--test-size", "200",
              "--batch-size", "50", "--checkpoint", str(tmp_path / "a"),
              "--device", f"cl:{device.index}"]
    eager = _run_tool(train, common, capsys)
    compiled = _run_tool(train, common + ["--compile"], capsys)
    losses = [[line.split("|")[0] for line in out.splitlines() if line.startswith("epoch ")]
              for out in (eager, compiled)]
    assert len(losses[0]) == 2 and losses[0] == losses[1]
    gpt = ["--steps", "6", "--layers", "1", "--d-model", "32", "--heads", "2", "--context", "16",
           "--batch", "4", "--sample", "0", "--device", f"cl:{device.index}",
           "--checkpoint", str(tmp_path / "g")]
    finals = [_run_tool(train_gpt, gpt + extra, capsys).split("held-out loss after training:")[1]
              .split()[0] for extra in ([], ["--compile"])]
    assert finals[0] == finals[1]


@pytest.mark.parametrize("ns", ["cuda", "cl"])
def test_graph_capture_and_replay(device, ns):
    mod = getattr(clgrad, ns)
    clgrad.manual_seed(0)
    static_x = clgrad.zeros(64)
    g = mod.CUDAGraph()
    with mod.graph(g):
        assert mod.is_current_stream_capturing()
        static_y = F.dropout(static_x + 1, 0.5) * 3
    draws = []
    for i in range(3):
        static_x.copy_(clgrad.full((64,), float(i)))
        g.replay()
        y = static_y.numpy()
        assert set(np.unique(y)) <= {0.0, 6.0 * (i + 1)}
        draws.append(y != 0)
    assert not (draws[0] == draws[1]).all()          # each replay draws a new mask
    g2 = mod.CUDAGraph()
    with pytest.raises(RuntimeError, match="not permitted when stream is capturing"):
        with mod.graph(g2):
            static_x.sum().item()


def test_make_graphed_callables(device):
    lin = nn.Linear(4, 3)
    ref = copy.deepcopy(lin)
    x = clgrad.randn(5, 4)
    graphed = clgrad.cuda.make_graphed_callables(lin, (x,))
    assert graphed is lin and lin.weight.grad is None
    for _ in range(3):
        xb = clgrad.randn(5, 4)
        lin.zero_grad()
        ref.zero_grad()
        lin(xb).pow(2).sum().backward()
        ref(xb).pow(2).sum().backward()
        np.testing.assert_array_equal(lin.weight.grad.numpy(), ref.weight.grad.numpy())


def test_elementwise_chains_fuse(device):
    """A chain of table ops becomes one kernel; intermediates that nothing reads later are not
    stored; one that a live tensor holds is; results match eager."""
    x = clgrad.linspace(-2, 2, 777)
    keep = {}

    def f(t):
        a = t * 1.5 + 0.25
        keep["a"] = a                       # held after the call: must be stored
        return (a.sigmoid() - 0.5).abs().clamp(0.1, 0.3) * a
    cf = clgrad.compile(f)
    cf(x), cf(x)
    v = next(iter(cf._variants.values()))
    assert v.rec.launches == 1              # one kernel: the whole chain
    xs = np.linspace(-1, 3, 777, dtype=np.float32)
    got = cf(clgrad.tensor(xs)).numpy()
    a = xs * np.float32(1.5) + np.float32(0.25)
    want = np.clip(np.abs(1 / (1 + np.exp(-a)) - 0.5), 0.1, 0.3) * a
    # fused, t * 1.5 + 0.25 may become one fma (NVIDIA contracts it: one rounding, not two),
    # which near a's zero differs by an ulp of 0.25, not of a: hence atol
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(keep["a"].numpy(), a, rtol=1e-6, atol=3e-8)


def test_fusion_takes_repeated_operands(code_paths, device):
    """An operand that repeats one element (a 0-d tensor, a loss scale; here v[0]) joins a
    chain; the chain stops before a launch that writes that buffer, whose element 0 would be
    another work-item's. Results are bit for bit those of the unfused launches, after replays
    with new values in both inputs."""
    for dt in (clgrad.float32,) + ((clgrad.float64,) if device.has_fp64 else ()):
        x, v = clgrad.empty(1001, dtype=dt), clgrad.empty(1001, dtype=dt)

        def inputs(a, b):
            x.copy_(clgrad.linspace(-1, 1, 1001, dtype=dt) * a)
            v.copy_(clgrad.linspace(0.5, 1, 1001, dtype=dt) * b)

        def f():
            y = ((x * v[0]) + 1).tanh() * v[0]
            v.mul_(2)                          # writes v: the chain stops before it
            return y, y * v
        recs = []
        for fuse in (True, False):
            inputs(1, 1)
            with Recording(fuse=fuse) as rec:
                out = f()
            recs.append((rec, out))
        (fused, (y1, z1)), (plain, (y0, z0)) = recs
        assert fused.launches == 2, [k.function_name for _, k, *_ in fused.kernels]
        for rec in (fused, plain):
            inputs(2, 3)
            rec.replay()
        np.testing.assert_array_equal(y1.numpy(), y0.numpy())
        np.testing.assert_array_equal(z1.numpy(), z0.numpy())
        xs = (np.linspace(-1, 1, 1001) * 2).astype(dt.np)
        vs = (np.linspace(0.5, 1, 1001) * 3).astype(dt.np)
        np.testing.assert_allclose(y1.numpy(), np.tanh(xs * vs[0] + 1) * vs[0], rtol=1e-5,
                                   atol=1e-6)
        np.testing.assert_allclose(z1.numpy(), y1.numpy() * vs * 2, rtol=1e-6, atol=1e-7)


def test_blocks_freed_while_a_recording_finishes_are_not_noted(device, monkeypatch):
    """The fusion passes read where the capture freed its tensors (Recording._frees); a
    collection while the recording finishes frees more blocks into its pool, and once made the
    dict change under the passes ("dictionary changed size during iteration")."""
    real = Recording.fuser

    def collecting(ops, dead, frees):
        class Cycle:
            pass
        c = Cycle()
        c.me, c.t = c, clgrad.ones(4)          # a tensor only the collector frees
        del c
        before = {b: list(ps) for b, ps in frees.items()}
        gc.collect()
        assert frees == before
        return real(ops, dead, frees)
    monkeypatch.setattr(Recording, "fuser", staticmethod(collecting))
    x = clgrad.ones(8)
    with Recording() as rec:
        y = (x * 2).relu_() + 1
    rec.replay()
    assert y.tolist() == [3.0] * 8


def test_blocks_of_new_sizes_freed_by_collections_while_a_recording_finishes(device):
    """A collection while a recording finishes can free blocks of sizes its private bins have
    not seen into those bins (tensors in reference cycles): taking the bins as they are must
    not fail with "dictionary changed size during iteration". Here a collection runs wherever
    the collector could run on its own while the bins are read, and each one leaves garbage
    holding a tensor of a new size behind."""
    made = [0]

    class Regrowing:
        def __init__(self):
            made[0] += 1
            self.me, self.t = self, clgrad.empty(1024 * (made[0] + 1))

        def __del__(self):
            if made[0] < 64:
                Regrowing()

    class Bins(dict):
        def items(self):
            for kv in super().items():
                yield kv
                if gc.isenabled():          # an allocation here may start a collection
                    gc.collect()
    x = clgrad.ones(8)
    with Recording() as rec:
        y = (x * 2).relu_() + 1
        rec._bins = Bins(rec._bins)
        Regrowing()
    gc.collect()
    assert made[0] >= 2 and rec.valid()
    rec.replay()
    assert y.tolist() == [3.0] * 8


def test_fusion_stops_at_different_offsets_and_sizes(device):
    base = clgrad.arange(20.0)
    with Recording() as rec:
        lo = base[:10] * 2                  # offsets 0 and 10 of one buffer: not one element
        hi = base[10:] + lo                 # per work-item, so no fusion across them
        hi.mul_(3)
        small = hi[:5].contiguous() - 1     # another size
    assert rec.launches >= 3
    _ = base.copy_(clgrad.arange(20.0) + 1)
    rec.replay()
    b = np.arange(20.0) + 1
    np.testing.assert_array_equal(hi.numpy(), (b[10:] + b[:10] * 2) * 3)
    np.testing.assert_array_equal(small.numpy(), ((b[10:] + b[:10] * 2) * 3)[:5] - 1)


def test_fusion_stops_at_one_launch_reading_a_buffer_at_two_offsets(device):
    """x[2:] - x[:-2] reads one buffer at offsets 2 and 0 in one launch: its result cannot join a
    fused chain (the chain's loads would read both at one offset)."""
    x = clgrad.arange(40.0) / 7
    with Recording() as rec:
        z = ((x[2:] - x[:-2]) * 3 + 1).exp()
    _ = x.copy_(clgrad.arange(40.0) / 5)
    rec.replay()
    b = np.arange(40.0, dtype=np.float32) / np.float32(5)
    np.testing.assert_allclose(z.numpy(), np.exp((b[2:] - b[:-2]) * 3 + 1), rtol=1e-6)


def test_outputs_that_are_arguments_or_their_views(device):
    """Identity and view outputs come from this call's argument, not the recorded one's."""
    flat = clgrad.compile(nn.Flatten())
    ident = clgrad.compile(nn.Identity())
    for i in range(4):
        x = clgrad.full((2, 3, 2), float(i))
        assert flat(x).tolist() == [[float(i)] * 6] * 2
        assert ident(x) is x


def test_compiled_cell_chained_through_its_outputs(device):
    """A compiled cell called in a loop on its own outputs (a recurrent state with a history):
    gradients equal eager's, each step's backward stopping at its own arguments."""
    clgrad.manual_seed(0)
    cell = nn.LSTMCell(3, 4).double()
    ref = copy.deepcopy(cell)
    ccell = clgrad.compile(cell)
    xs = [clgrad.randn(2, 3, dtype=clgrad.float64) for _ in range(6)]
    for net in (ccell, ref):
        h = c = clgrad.zeros(2, 4, dtype=clgrad.float64)
        loss = 0
        for x in xs:
            h, c = net(x, (h, c))
            loss = loss + h.pow(2).sum()
        loss.backward()
    for a, b in zip(cell.parameters(), ref.parameters()):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-12)


@pytest.mark.parametrize("amp", ["bf16", "fp16"])
def test_autocast_and_grad_scaler_inside_a_compiled_step(device, amp):
    """autocast regions and a GradScaler (scale, step and update on the host at each replay)
    inside the compiled step: the losses and weights of eager."""
    dt = clgrad.bfloat16 if amp == "bf16" else clgrad.float16
    results = []
    for compiled in (False, True):
        model = _mlp(p=0.0)
        opt = clgrad.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
        scaler = clgrad.amp.GradScaler("cpu", init_scale=256.0, enabled=amp == "fp16")

        def step(x, y):
            opt.zero_grad()
            with clgrad.autocast("cpu", dtype=dt):
                loss = F.cross_entropy(model(x), y)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            return loss
        run = clgrad.compile(step) if compiled else step
        losses = [run(x, y).float().item() for x, y in _data()]
        results.append((losses, [p.detach().numpy() for p in model.parameters()]))
        if compiled:
            assert run.stats["replays"] == 4
    assert results[0][0] == results[1][0]
    for a, b in zip(results[0][1], results[1][1]):
        np.testing.assert_array_equal(a, b)


def test_replayed_launches_reach_the_launch_hooks(device):
    """The chokepoint's observers (the profiler) see a replay's kernels, with their events."""
    f = clgrad.compile(lambda t: ((t * 2).exp() + t).sum(0))
    x = clgrad.randn(64, 8)
    f(x), f(x)
    seen = []
    kernels.launch_hooks.append(lambda dev, k, g, l, args, evt: seen.append((k.function_name,
                                                                             evt is not None)))
    try:
        f(x)
    finally:
        kernels.launch_hooks.pop()
    v = next(iter(f._variants.values()))
    replayed = [name for name, _ in seen][:v.rec.launches]
    assert replayed == [k.function_name for _, k, _, _, _ in v.rec.kernels]
    assert all(has_event for _, has_event in seen)
    with clgrad.autograd.profiler.profile(use_device="cl") as prof:
        f(x)
        clgrad.cl.synchronize()
    names = {e.key for e in prof.key_averages()}
    assert any(n.startswith("fused_") for n in names), names


def test_arguments_and_outputs_in_any_pytree(device):
    """Namedtuples and dicts of tensors, in and out (clgrad.utils._pytree's nodes): each call's
    own tensors go in and fresh ones come out."""
    import collections
    Pair = collections.namedtuple("Pair", "a b")
    f = clgrad.compile(lambda p, d: Pair(p.a * d["s"], {"b": p.b + 1}))
    for i in range(4):
        r = f(Pair(clgrad.full((3,), float(i)), clgrad.zeros(2)), {"s": clgrad.full((3,), 2.0)})
        assert isinstance(r, Pair)
        assert r.a.tolist() == [2.0 * i] * 3 and r.b["b"].tolist() == [1.0, 1.0]
    assert f.stats["replays"] == 2
