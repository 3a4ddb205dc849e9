"""clgrad.profiler: torch.profiler's interface (activities, schedule, on_trace_ready,
tensorboard_trace_handler, step, record_function, key_averages().table, export_chrome_trace),
driven by a program written for torch.profiler."""
import gzip
import json
import os

import pytest

import clgrad
from clgrad import profiler

PROGRAM = '''
import torch
import torch.nn as nn
from torch.profiler import profile, record_function, ProfilerActivity

model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 6 * 6, 10))
inputs = torch.randn(5, 3, 8, 8)

with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
    with record_function("model_inference"):
        model(inputs)
table = prof.key_averages().table(sort_by="cpu_time_total", row_limit=10)
shapes_table = prof.key_averages(group_by_input_shape=True).table(sort_by="cpu_time_total",
                                                                  row_limit=10)

opt = torch.optim.SGD(model.parameters(), lr=0.01)


def train(batch):
    loss = model(batch).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()


with torch.profiler.profile(
        activities=[torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA],
        schedule=torch.profiler.schedule(wait=1, warmup=1, active=3, repeat=1),
        on_trace_ready=torch.profiler.tensorboard_trace_handler(LOGDIR),
        record_shapes=True, profile_memory=True, with_stack=True) as prof:
    for step in range(8):
        if step >= 1 + 1 + 3:
            break
        train(inputs)
        prof.step()
device_table = prof.key_averages().table(sort_by="self_cuda_time_total", row_limit=8)
prof.export_chrome_trace(TRACE)
'''


def test_a_torch_profiler_program(device, tmp_path):
    env = {"LOGDIR": str(tmp_path / "tb"), "TRACE": str(tmp_path / "trace.json")}
    exec(compile(PROGRAM.replace("import torch\n", "import clgrad as torch\n").replace(
        "import torch.nn as nn", "import clgrad.nn as nn").replace(
        "from torch.profiler", "from clgrad.profiler"), "program", "exec"), env)
    table = env["table"]
    assert "model_inference" in table and "clgrad::convolution" in table
    assert "clgrad::addmm" in table and "clgrad::relu" in table
    assert "Self CPU" in table and "Input Shapes" in env["shapes_table"]
    assert "[5, 3, 8, 8]" in env["shapes_table"]
    # one TensorBoard trace for the one active cycle: steps 2, 3 and 4
    files = os.listdir(tmp_path / "tb")
    assert len(files) == 1 and files[0].endswith(".pt.trace.json")
    trace = json.load(open(tmp_path / "tb" / files[0]))["traceEvents"]
    names = {e["name"] for e in trace if e["ph"] == "X"}
    assert {"ProfilerStep#2", "ProfilerStep#3", "ProfilerStep#4"} <= names
    assert "ProfilerStep#1" not in names and "ProfilerStep#5" not in names
    kernels = [e for e in trace if e.get("cat") == "kernel"]
    assert kernels and all(e["dur"] >= 0 for e in kernels)
    rows = {e.key: e for e in env["prof"].key_averages()}
    assert rows["ProfilerStep#3"].count == 1
    assert rows["clgrad::mean"].count == 3                  # one per recorded step
    assert sum(e.self_device_time_total for e in rows.values()) > 0
    assert json.load(open(env["TRACE"]))["traceEvents"]


def test_schedule_is_torchs():
    s = profiler.schedule(skip_first=2, wait=1, warmup=1, active=2, repeat=2)
    A = profiler.ProfilerAction
    assert [s(i) for i in range(12)] == [A.NONE, A.NONE, A.NONE, A.WARMUP, A.RECORD,
                                         A.RECORD_AND_SAVE, A.NONE, A.WARMUP, A.RECORD,
                                         A.RECORD_AND_SAVE, A.NONE, A.NONE]
    s = profiler.schedule(skip_first=2, skip_first_wait=1, wait=3, warmup=1, active=1)
    assert [s(i).name for i in range(4)] == ["NONE", "NONE", "WARMUP", "RECORD_AND_SAVE"]
    with pytest.raises(AssertionError, match="active=0"):
        profiler.schedule(wait=0, warmup=0, active=0)
    with pytest.warns(UserWarning, match="won't be using warmup"):
        profiler.schedule(wait=0, warmup=0, active=1)


def test_cycles_start_stop_and_gzip(tmp_path):
    seen = []
    prof = profiler.profile(activities=[profiler.ProfilerActivity.CPU],
                            schedule=profiler.schedule(wait=0, warmup=1, active=1, repeat=2),
                            on_trace_ready=lambda p: seen.append(
                                sorted(e.key for e in p.key_averages())))
    prof.start()
    for step in range(6):
        clgrad.ones(2).exp() if step % 2 else clgrad.ones(2).sin()
        prof.step()
    prof.stop()
    assert seen == [["ProfilerStep#1", "clgrad::exp"], ["ProfilerStep#3", "clgrad::exp"]]
    with pytest.raises(RuntimeError, match="didn't finish"):
        p = profiler.profile()
        p.start()
        try:
            p.key_averages()
        finally:
            p.stop()
    path = tmp_path / "t.json.gz"
    with profiler.profile() as p:
        clgrad.ones(3).cos()
    p.export_chrome_trace(str(path))
    assert any(e.get("name") == "clgrad::cos" for e in
               json.loads(gzip.open(path).read())["traceEvents"])
    assert profiler.ProfilerActivity.CPU in profiler.supported_activities()
