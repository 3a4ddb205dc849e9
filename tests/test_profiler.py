"""clgrad.autograd.profiler: host spans per op, backward node and record_function block; device
time per kernel, charged to the op that launched it; tables and the Chrome trace."""
import json

import pyopencl as cl
import pytest

import clgrad
from clgrad.autograd import Function, profiler
from clgrad.autograd import function as F
from clgrad.runtime import kernels


class Twice(Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g * 2


@profiler.record_function("decorated")
def decorated(t):
    return t.exp()


def _profile(**kw):
    x = clgrad.ones(64, 64, requires_grad=True)
    with profiler.profile(**kw) as prof:
        with profiler.record_function("forward"):
            y = Twice.apply(decorated(x)).t().reshape(-1)       # reshape of a transpose copies
            loss = y.sum()
        loss.backward()
    return prof


def test_host_events_and_nesting(device):
    prof = _profile()
    events = prof.function_events
    names = [e.name for e in events]
    for want in ("forward", "decorated", "clgrad::exp", "Twice", "clgrad::mul", "clgrad::clone",
                 "clgrad::sum", "SumBackward0", "TwiceBackward", "ExpBackward0"):
        assert want in names, want
    by_name = {}
    for e in events:
        by_name.setdefault(e.name, e)                       # the first of each name
    assert by_name["clgrad::exp"].cpu_parent is by_name["decorated"]
    assert by_name["decorated"].cpu_parent is by_name["forward"]
    assert by_name["clgrad::mul"].cpu_parent.name == "Twice"            # inside the Function
    assert by_name["forward"].is_user_annotation
    for e in events:
        assert e.cpu_time_total >= e.self_cpu_time_total >= 0
        for c in e.cpu_children:
            assert e.start_ns <= c.start_ns <= c.end_ns <= e.end_ns
    assert prof.self_cpu_time_total == pytest.approx(sum(e.self_cpu_time_total for e in events))
    assert prof.total_average().count == len(events)
    # off again: the op path is back to its one check
    assert F.hooks.op is None and F.hooks.node is None and F.hooks.profiler is None
    assert kernels.launch_hooks == []


def test_key_averages_and_tables(device):
    x = clgrad.ones(4)
    with profiler.profile(record_shapes=True) as prof:
        for n in (2, 2, 3):
            clgrad.ones(n, 5).sum(0)
        x * x
    rows = {e.key: e for e in prof.key_averages()}
    assert rows["clgrad::sum"].count == 3 and rows["clgrad::mul"].count == 1
    s = rows["clgrad::sum"]
    assert s.cpu_time == pytest.approx(s.cpu_time_total / 3)
    shaped = [e for e in prof.key_averages(group_by_input_shape=True) if e.key == "clgrad::sum"]
    assert sorted(e.count for e in shaped) == [1, 2]
    assert sorted(str(e.input_shapes) for e in shaped) == ["[[2, 5], [], [], []]",
                                                            "[[3, 5], [], [], []]"]
    table = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=1)
    lines = table.splitlines()
    assert "Name" in lines[1] and "Self CPU %" in lines[1] and "# of Calls" in lines[1]
    assert "Self CL" not in table                         # no device columns without use_device
    assert len(lines) == 6 and lines[-1].startswith("Self CPU time total:")
    assert prof.table() == prof.function_events.table()    # every event, like torch's
    averages = prof.key_averages()
    ordered = averages.table(sort_by="cpu_time_total").splitlines()[3:-2]
    totals = sorted((e.cpu_time_total for e in averages), reverse=True)
    assert [ln.split()[0] for ln in ordered] == \
        [next(e.key for e in averages if e.cpu_time_total == t) for t in totals]
    with pytest.raises(AttributeError):
        averages.table(sort_by="no_such_column")
    assert "Input Shapes" in prof.key_averages(group_by_input_shape=True).table()


def test_device_time_per_kernel(device):
    prof = _profile(use_device="cl")
    events = prof.function_events
    kernel_events = [e for e in events if e.device_type == "cl"]
    assert kernel_events and all(e.device_time_total >= 0 for e in kernel_events)
    exp = next(e for e in events if e.name == "clgrad::exp")
    assert [k.name for k in exp.kernels] == ["exp_c_t"]   # charged to the op that launched it
    assert exp.device_time_total == pytest.approx(exp.kernels[0].device_time_total)
    assert exp.self_device_time_total == 0                # torch's convention: kernels own it
    outer = next(e for e in events if e.name == "forward")
    assert outer.device_time_total >= exp.device_time_total
    table = prof.key_averages().table(sort_by="device_time_total", row_limit=5)
    assert "Self CL" in table and "CL total" in table and "Self CL time total:" in table
    total_dev = sum(k.device_time_total for k in kernel_events)
    assert prof.total_average().self_device_time_total == pytest.approx(total_dev)
    # device spans are on the host clock: each kernel starts after its launch
    for k in kernel_events:
        assert k.start_ns >= k.launch_ns - 1e6 and k.end_ns >= k.start_ns


def _profiles(dev):
    return bool(dev._queue.properties & cl.command_queue_properties.PROFILING_ENABLE)


def test_queue_profiles_only_inside_a_device_profile(device):
    """Queues record device times only while a profiler with use_device runs (a profiling queue
    costs some drivers microseconds per launch); work queued before keeps its order."""
    x = clgrad.arange(1000, dtype=clgrad.float32)
    assert not _profiles(device)
    y = x * 2                                    # queued before the switch
    with profiler.profile(use_device="cl"):
        assert _profiles(device)
        z = y + 1
    assert not _profiles(device)
    assert z[-1].item() == 1999.0
    with profiler.profile():                     # host times only: the queue is left alone
        assert not _profiles(device)


def test_chrome_trace(device, tmp_path):
    prof = _profile(use_device="cl", record_shapes=True)
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    trace = json.loads(path.read_text())
    events = trace["traceEvents"]
    spans = [e for e in events if e["ph"] == "X"]
    host = [e for e in spans if e["cat"] in ("cpu_op", "user_annotation")]
    dev = [e for e in spans if e["cat"] == "kernel"]
    assert host and dev
    assert {e["pid"] for e in host}.isdisjoint({e["pid"] for e in dev})   # a separate track
    for e in spans:
        assert e["dur"] >= 0 and isinstance(e["ts"], float) and e["name"]
    exp = next(e for e in host if e["name"] == "clgrad::exp")
    assert exp["args"]["Input Dims"] == [[64, 64]]
    assert any(e["args"]["op"] == "clgrad::exp" for e in dev)
    names = {e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
    assert "clgrad (host)" in names and len(names) == 2
    flows = [e for e in events if e["ph"] in ("s", "f")]
    assert len(flows) % 2 == 0 and flows


def test_switches_and_errors(device):
    with profiler.profile(enabled=False) as prof:
        clgrad.ones(2) * 2
    assert F.hooks.profiler is None
    with profiler.profile() as prof:
        with pytest.raises(RuntimeError, match="already enabled"):
            with profiler.profile():
                pass
    with pytest.raises(RuntimeError, match="didn't finish"):
        profiler.profile().key_averages()
    with pytest.raises(ValueError, match="use_device"):
        profiler.profile(use_device="cuda")
    with profiler.profile(use_cuda=True) as prof:           # torch's old spelling: the device
        clgrad.ones(2) * 2
    assert any(e.device_type == "cl" for e in prof.function_events)
    with profiler.record_function("alone"):                 # no profiler: nothing happens
        pass
    assert clgrad.autograd.profiler.profile is profiler.profile
