"""Eager fusion of the tiny launches a device holds back (Device.defer, clgrad/kernels/fused.py):
a run of contiguous elementwise launches over one float dtype and size becomes one launch of a
kernel generated from the table's expressions, once its structure has been seen often enough to
have saved HOT_LAUNCHES launches. The fused run must leave memory exactly as the launches would: bit for bit against the
same ops with fusion off, on both code paths of every device, with numbers that change from
call to call (they are kernel arguments), in-place ops, one buffer seen at two offsets (not
element-wise: the run breaks there) and an operand used twice."""
import gc
import warnings

import numpy as np
import pytest

import clgrad
from clgrad.kernels import fused
from clgrad.runtime.device import Device


ROUNDS = 6


@pytest.fixture
def fusion(monkeypatch):
    """Fresh structure counts, fused from the second sighting on; returns a function that runs
    fn() with fusion on or off and reports how many launches fusion saved. The garbage
    collector is off meanwhile: a collection inside a run frees blocks of earlier tests into the
    pool, so that a result lands in another buffer and the run is another structure (which
    buffers the launches share), seen for the first time (the test of hot structures failed so
    in whole-suite runs)."""
    gc.collect()
    gc.disable()
    monkeypatch.setattr(fused, "_hot", {})
    monkeypatch.setattr(fused, "HOT_LAUNCHES", 4)

    bursts = []                               # the size of each burst fused, for messages

    def run(fn, on=True):
        saved = []

        def counting(dev, items):
            out = fused.fuse_deferred(dev, items)
            saved.append(len(items) - len(out))
            bursts.append(len(items))
            return out
        monkeypatch.setattr(Device, "deferred_fuser", counting if on else None)
        try:
            return fn(), sum(saved)
        finally:
            monkeypatch.setattr(Device, "deferred_fuser", fused.fuse_deferred)
    run.bursts = bursts
    yield run
    gc.enable()


def _dtypes(device):
    return [clgrad.float32] + ([clgrad.float64] if device.has_fp64 else [])


def _chain(x, w, c):
    a = x * c + w
    b = (a.sigmoid() - 0.5).abs().clamp(0.1, 0.3)
    b.mul_(a)
    return [(a.tanh() / (b * b + 1)).numpy(), b.numpy(), (a * a - c).exp().numpy()]


@pytest.mark.parametrize("n", [1, 37, 1000])
def test_fused_runs_compute_what_the_launches_compute(code_paths, device, fusion, n):
    rng = np.random.default_rng(n)
    for dt in _dtypes(device):
        xn, wn = rng.standard_normal(n), rng.standard_normal(n)
        x, w = clgrad.tensor(xn, dtype=dt), clgrad.tensor(wn, dtype=dt)
        numbers = [0.5 + 0.25 * k for k in range(ROUNDS)]
        want = [fusion(lambda c=c: _chain(x, w, c), on=False)[0] for c in numbers]
        total = 0
        for c, ref in zip(numbers, want):
            got, saved = fusion(lambda c=c: _chain(x, w, c))
            total += saved
            for g, r in zip(got, ref):
                assert g.dtype == r.dtype and np.array_equal(g, r), (dt, n, c)
        assert total > 0                       # the runs were fused, with new numbers each call
        a = xn * numbers[-1] + wn
        b = np.clip(np.abs(1 / (1 + np.exp(-a)) - 0.5), 0.1, 0.3) * a
        tol = 1e-5 if dt is clgrad.float32 else 1e-12
        np.testing.assert_allclose(got[0], np.tanh(a) / (b * b + 1), rtol=tol, atol=tol)
        np.testing.assert_allclose(got[1], b, rtol=tol, atol=tol)


def test_a_repeated_operand_joins_the_run(code_paths, device, fusion):
    """x * s + s with s a 0-d tensor (each element reads its one element): fused from the
    second sighting, bit for bit the launches' results, with s changing between calls."""
    x = clgrad.linspace(-2, 2, 37)
    for k in range(4):
        s = clgrad.tensor(0.5 + k)

        def run():
            clgrad.cl.synchronize()
            return ((x * s).tanh() + s).numpy()
        want, _ = fusion(run, on=False)
        got, saved = fusion(run)
        assert np.array_equal(got, want), k
    assert saved == 2                        # three launches, one kernel


def test_one_buffer_at_two_offsets_and_in_place_ops(device, fusion):
    """hi = base[2:] and lo = base[:-2] share a buffer: lo * 2 + hi reads, at element i, what
    hi.mul_ wrote two elements along, which no work-item of a fused kernel holds. The run breaks
    there; a launch reading both offsets stays alone."""
    def steps():
        base = clgrad.arange(40, dtype=clgrad.float32) / 7
        lo, hi = base[:-2], base[2:]
        for _ in range(3):
            hi.mul_(1.5)
            c = lo * 2 + hi
            c.sub_(c * c * 0.01)
            d = (hi - lo) * 3
        return base.numpy(), c.numpy(), d.numpy()
    want = fusion(steps, on=False)[0]
    for _ in range(ROUNDS):
        got, _ = fusion(steps)
        for g, w in zip(got, want):
            assert np.array_equal(g, w)
    ref = np.arange(40, dtype=np.float32) / np.float32(7)
    for _ in range(3):
        ref[2:] *= np.float32(1.5)
        c = ref[:-2] * np.float32(2) + ref[2:]
        c -= c * c * np.float32(0.01)
    np.testing.assert_allclose(want[0], ref, rtol=1e-5)
    np.testing.assert_allclose(want[1], c, rtol=1e-5)
    np.testing.assert_allclose(want[2], (ref[2:] - ref[:-2]) * 3, rtol=1e-5, atol=1e-6)


def test_other_dtypes_and_sizes_are_not_fused(device, fusion):
    """Integer and 16-bit runs, and broadcast operands, stay separate launches."""
    x = clgrad.arange(10)
    h = clgrad.ones(10, dtype=clgrad.float16)
    f = clgrad.ones(10)

    def steps():
        return ((x * 3 + 1) * 2).numpy(), ((h * 3 + 1) * 2).numpy(), (f * 2 + f[:5].sum()).numpy()
    for _ in range(ROUNDS):
        got, saved = fusion(steps)
        assert saved == 0
    assert got[0].tolist() == [(v * 3 + 1) * 2 for v in range(10)]
    assert got[1].tolist() == [8.0] * 10 and got[2].tolist() == [7.0] * 10


def test_a_build_that_fails_warns_and_loses_nothing(device, fusion, monkeypatch):
    def broken(*a, **k):
        raise RuntimeError("no compiler today")
    monkeypatch.setattr(fused, "get_kernel", broken)
    x = clgrad.linspace(0, 1, 16)

    def steps():
        return ((x * 2 + 1) * 3 - 1).numpy()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(ROUNDS):
            got, saved = fusion(steps)
            assert saved == 0
            np.testing.assert_allclose(got, (np.linspace(0, 1, 16) * 2 + 1) * 3 - 1, rtol=1e-6)
    assert sum("could not be fused" in str(w.message) for w in caught) == 1


def test_a_structure_is_fused_once_it_would_have_saved_hot_launches(device, fusion, monkeypatch):
    """A run of 51 launches saves 50 when fused: with HOT_LAUNCHES = 200 it is fused on its
    fourth sighting, not before."""
    monkeypatch.setattr(fused, "HOT_LAUNCHES", 200)
    x = clgrad.linspace(0, 1, 8)

    def steps():
        clgrad.cl.synchronize()                 # the run starts a burst of its own
        y = x
        for _ in range(51):
            y = y * 0.5
        return y.numpy()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        saved = [fusion(steps)[1] for _ in range(5)]
    assert saved[:3] == [0, 0, 0] and saved[3] == saved[4] == 50, \
        (saved, fusion.bursts, [str(w.message) for w in caught], dict(fused._hot))


def test_training_steps_that_never_wait_meet_the_same_runs_every_step(device, fusion):
    """Steps of 37 chained ops and their backward (not a multiple of a burst's 64 launches)
    with no read or sync between them: each backward pass starts a burst, so the steps' bursts,
    hence their runs, are the same from step to step, and no new fused kernel is built once the
    first steps' are (drifting along the launches, the runs were new for hundreds of steps)."""
    v = clgrad.linspace(0, 1, 16).requires_grad_()

    def step():
        v.grad = None
        y = v
        for _ in range(37):
            y = y * 1.0001 + 0.0001
        y.sum().backward()

    def built():
        return sum(type(p) is tuple for p in fused._hot.values())

    def steps(n):
        for _ in range(n):
            step()
    fusion(lambda: steps(12))
    first = built()
    fusion(lambda: steps(40))
    assert first > 0 and built() == first, (first, built(), fusion.bursts[-8:])
    np.testing.assert_allclose(v.grad.numpy(), np.full(16, 1.0001 ** 37), rtol=1e-5)


def test_a_collection_inside_a_run_makes_it_another_structure(device, fusion, monkeypatch):
    """Why the fixture turns the collector off: blocks freed by a collection in the middle of a
    run go to the top of the pool's bin, the next result lands in one of them, and the run's
    structure (which buffers its launches share) is one not seen before."""
    monkeypatch.setattr(fused, "HOT_LAUNCHES", 200)
    x = clgrad.linspace(0, 1, 8)

    class Cycle:
        pass

    def steps(collect):
        clgrad.cl.synchronize()
        for _ in range(4):                   # tensors only the collector frees
            c = Cycle()
            c.me, c.t = c, clgrad.ones(8)
        y = x
        for k in range(51):
            z = y * 0.5
            if collect and k == 20:
                gc.collect()
            y = z
        return y.numpy()
    saved = [fusion(lambda r=r: steps(r == 3))[1] for r in range(5)]
    assert saved == [0, 0, 0, 0, 50]


def test_a_fuser_that_fails_loses_no_launch_even_when_warnings_are_errors(device, monkeypatch):
    """The fuser's failure is reported after the burst is enqueued: a warnings filter that makes
    the warning an exception must not take the held-back launches with it."""
    def broken(dev, items):
        raise RuntimeError("fuser bug")
    monkeypatch.setattr(Device, "deferred_fuser", broken)
    x = clgrad.ones(8)
    clgrad.cl.synchronize()
    y = (x * 2 + 1) * 3
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(RuntimeWarning, match="fuser bug"):
            clgrad.cl.synchronize()
    monkeypatch.setattr(Device, "deferred_fuser", fused.fuse_deferred)
    assert y.tolist() == [9.0] * 8
