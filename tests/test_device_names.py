"""torch's device vocabulary over OpenCL: the CPU OpenCL device is "cpu", GPU OpenCL devices are
"cuda:0", "cuda:1", ...; clgrad's "cl:N" indexes every device; clgrad.cuda mirrors torch.cuda."""
import os

import numpy as np
import pytest

import clgrad
from helpers import run_python
from clgrad.runtime import device as _device

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HAS_GPU = bool(_device.gpus())



def _run(code, env=None):
    return run_python(code, env)


def test_device_objects_as_torch_makes_them():
    assert repr(clgrad.device("cuda:1")) == "device(type='cuda', index=1)"
    assert clgrad.device("cuda", 2) == clgrad.device("cuda:2")
    assert clgrad.device(0) == clgrad.device("cuda:0")            # an int is a GPU index
    assert clgrad.device("cpu").type == "cpu" and clgrad.device("cpu").index is None
    assert clgrad.device("cuda") != clgrad.device("cuda:0")       # as torch: no index != 0
    assert clgrad.device(clgrad.device("cuda:3")) == clgrad.device("cuda:3")
    assert {clgrad.device("cpu"), clgrad.device("cpu")} == {clgrad.device("cpu")}
    with pytest.raises(RuntimeError, match="Invalid device string"):
        clgrad.device("cuda:one")
    with pytest.raises(RuntimeError, match="must not be negative"):
        clgrad.device("cuda", -1)
    with pytest.raises(RuntimeError, match="index was passed explicitly"):
        clgrad.device("cuda:0", 1)
    with pytest.raises(TypeError):
        clgrad.device(1.5)


def test_device_compared_with_a_string_or_made_from_an_unknown_name_as_torch(monkeypatch):
    """As torch's: a device never equals a string (cleanrl compares one with "auto"), and an
    unknown name is torch's RuntimeError; neither looks for OpenCL devices (issue 22)."""
    def no_search(*a, **k):
        raise AssertionError("device discovery")
    monkeypatch.setattr(_device, "devices", no_search)
    monkeypatch.setattr(_device, "default_device", no_search)
    cpu = clgrad.device("cpu")
    for other in ("auto", "cpu", "cuda:0", "xyz:1", "", None, 3):
        assert not cpu == other and cpu != other
        assert not clgrad.device("cuda:0") == other
    assert not "auto" == cpu
    for name in ("auto", "xyz", "CPU", "xyz:1"):
        with pytest.raises(RuntimeError, match="Expected one of cpu, cuda, .* device type at "
                                               f"start of device string: {name}"):
            clgrad.device(name)
    assert clgrad.device("mps") == clgrad.device("mps") != cpu     # made as torch makes it


def test_every_device_has_one_name_and_cl_n_resolves_to_it(device):
    name = clgrad.device(device)
    assert clgrad.device(f"cl:{device.index}") == name
    assert _device.get_device(name) is device
    assert _device.get_device(str(name)) is device
    if device.is_gpu and not device.is_simulator:
        assert name.type == "cuda" and _device.gpus()[name.index] is device
    elif device is _device.cpu_device():
        assert name == clgrad.device("cpu")
    else:
        assert name == clgrad.device("cl", device.index) and name.type == "cl"
    x = clgrad.ones(2, device=device)
    assert x.device == name
    assert x.is_cuda == (name.type == "cuda") and x.is_cpu == (name.type == "cpu")


@pytest.mark.host
def test_the_cpu_device_is_pocl_unless_clgrad_device_names_another():
    cpus = [d for d in clgrad.cl.devices() if d.is_cpu and not d.is_simulator and not d.unusable]
    assert cpus, "the test machine has a CPU device"
    assert _device.cpu_device() is (next((d for d in cpus if d.is_pocl), cpus[0])
                                    if "CLGRAD_DEVICE" not in os.environ else
                                    _device.cpu_device())
    for d in cpus:
        r = _run("""
            import clgrad
            x = clgrad.zeros(1, device="cpu")
            print(x._storage.device.index, x.device, clgrad.zeros(1).device)
        """, {"CLGRAD_DEVICE": f"cl:{d.index}"})
        assert r.returncode == 0, r.stderr
        assert r.stdout.split() == [str(d.index), "cpu", "cpu"], r.stdout


def test_moving_between_names(device):
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    x = clgrad.tensor(a, device=device, requires_grad=True)
    y = x.cpu()
    assert y.device == clgrad.device("cpu") and y.is_cpu
    assert y._storage.device is _device.cpu_device()
    np.testing.assert_array_equal(y.detach().numpy(), a)
    assert x.to("cpu").device == x.to(device="cpu").device == clgrad.device("cpu")
    back = y.to(f"cl:{device.index}")
    assert back._storage.device is device and back.device == x.device
    m = clgrad.nn.Linear(3, 2).to(device)
    assert m.cpu() is m and m.weight.device == clgrad.device("cpu")
    assert m.to(x.device).weight.device == x.device


def test_copy_takes_its_source_from_another_device(device):
    """dst.copy_(src) with src on another device copies it over, as torch's copy_ does (a CPU
    checkpoint loaded into a GPU model), and the gradient goes back to src's device: never a
    kernel handed another context's buffer (found on NVIDIA, with PoCL as "cpu")."""
    others = sorted((d for d in clgrad.cl.devices() if d is not device and not d.unusable),
                    key=lambda d: d.is_simulator)
    if not others:
        pytest.skip("needs a second OpenCL device")
    other = others[0]
    src = clgrad.tensor([1.0, 2.0, 3.0], device=f"cl:{other.index}", requires_grad=True)
    dst = clgrad.zeros(2, 3, device=device)
    dst.copy_(src)                                  # broadcast too
    assert dst._storage.device is device and dst.tolist() == [[1.0, 2.0, 3.0]] * 2
    (dst * 2).sum().backward()
    assert src.grad._storage.device is other and src.grad.tolist() == [4.0, 4.0, 4.0]
    back = clgrad.zeros(3, device=f"cl:{other.index}")
    back.copy_(dst[1] + 1)
    assert back._storage.device is other and back.tolist() == [2.0, 3.0, 4.0]
    # every dtype travels as its bits (bfloat16 as uint16, complex32 as float16 pairs)
    for dt in (clgrad.bfloat16, clgrad.float16, clgrad.complex32, clgrad.complex64, clgrad.int8,
               clgrad.bool):
        vals = [1 + 2j, 3 - 1j] if dt.is_complex else [1, 0] if dt is clgrad.bool else [1, 3]
        moved = clgrad.tensor(vals, dtype=dt, device=f"cl:{other.index}").to(device)
        assert moved._storage.device is device and moved.dtype is dt
        assert moved.tolist() == clgrad.tensor(vals, dtype=dt).tolist()
    m = clgrad.nn.Linear(3, 2).to(device)
    sd = {k: v.to(f"cl:{other.index}") * 0 + 1 for k, v in m.state_dict().items()}
    m.load_state_dict(sd)
    assert m.weight._storage.device is device and m.weight.sum().item() == 6.0


def test_index_tensors_from_another_device(device):
    """x[idx] with idx on another device moves idx to x's device (torch takes CPU indices for a
    CUDA tensor; a ported program's LongTensor([...]) is on the default device, x.cpu() not)."""
    others = sorted((d for d in clgrad.cl.devices() if d is not device and not d.unusable),
                    key=lambda d: d.is_simulator)
    if not others:
        pytest.skip("needs a second OpenCL device")
    on_other = f"cl:{others[0].index}"
    a = np.arange(12, dtype=np.float32).reshape(4, 3)
    x = clgrad.tensor(a, device=device)
    idx = clgrad.tensor([0, 2], device=on_other)
    np.testing.assert_array_equal(x[idx].numpy(), a[[0, 2]])
    np.testing.assert_array_equal(x[idx, 1].numpy(), a[[0, 2], 1])
    x[idx] = 0.0
    assert x._storage.device is device and x.sum().item() == a[[1, 3]].sum()


def test_cuda_names_gpus_and_errors_like_torch_without_one():
    assert clgrad.cuda.is_available() is HAS_GPU
    assert clgrad.cuda.device_count() == len(_device.gpus())
    x = clgrad.ones(2, device="cpu")
    if HAS_GPU:
        y = x.cuda()
        assert y.is_cuda and y.device == clgrad.device("cuda:0") and y.tolist() == [1.0, 1.0]
        assert x.to(0).device == clgrad.device("cuda:0")
        assert clgrad.cuda.get_device_name(0) == _device.gpus()[0].name
        with pytest.raises(RuntimeError, match="invalid device ordinal"):
            x.to(f"cuda:{clgrad.cuda.device_count()}")
    else:
        for move in (lambda: x.cuda(), lambda: x.to("cuda"), lambda: x.to(0),
                     lambda: clgrad.zeros(1, device="cuda:0"), lambda: clgrad.cuda.synchronize()):
            with pytest.raises(RuntimeError, match="No CUDA GPUs are available"):
                move()
    with pytest.raises(RuntimeError, match="'mps'"):
        x.to("mps")


def test_the_torch_idiom_runs_unchanged():
    torch = clgrad
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = torch.nn.Linear(4, 1).to(device)
    xb = torch.randn(8, 4).to(device)
    loss = model(xb).pow(2).mean()
    loss.backward()
    assert model.weight.grad.device == torch.device(device) or \
        model.weight.grad.device == torch.device("cuda:0")
    assert loss.cpu().item() >= 0
    assert torch.device(device).type == device


def test_default_device_by_torch_name():
    was = _device._default_index
    try:
        clgrad.set_default_device("cpu")
        assert clgrad.zeros(1).device == clgrad.device("cpu")
        assert clgrad.get_default_device() == clgrad.device("cpu")
    finally:
        _device._default_index = was


def test_checkpoints_name_devices_by_torch_name(tmp_path):
    t = clgrad.arange(3).float().cpu()
    path = tmp_path / "t.pt"
    clgrad.save(t, path)
    assert clgrad.load(path).device == clgrad.device("cpu")
    out = clgrad.load(path, map_location={"cpu": "cl:%d" % _device.cpu_device().index})
    assert out.tolist() == [0.0, 1.0, 2.0]
    # a checkpoint from a machine with more devices: a missing one means the default device
    from clgrad.serialization import _Reader
    missing = f"cuda:{len(_device.gpus())}"
    assert _Reader._saved_device(missing) is _device.default_device()
    assert _Reader._saved_device("cl:999") is _device.default_device()


def test_streams_events_and_the_rest_of_cuda(device):
    """One in-order queue per device: a Stream is that queue, an Event a point in it."""
    s = clgrad.cl.Stream(device)
    assert s == clgrad.cl.current_stream(device) == clgrad.cl.default_stream(device)
    start, end = clgrad.cl.Event(enable_timing=True), clgrad.cl.Event(enable_timing=True)
    start.record(s)
    with clgrad.cl.stream(s):
        y = (clgrad.ones(256, 256, device=device) @ clgrad.ones(256, 256, device=device)).sum()
    end.record(s)
    end.synchronize()
    assert s.query() and end.query() and start.elapsed_time(end) >= 0
    assert y.item() == 256 ** 3
    with pytest.raises(RuntimeError, match="enable_timing=True"):
        clgrad.cl.Event().elapsed_time(end)
    with pytest.raises(RuntimeError, match="recorded"):
        clgrad.cl.Event(enable_timing=True).elapsed_time(end)
    calls = [clgrad.cuda.current_stream, clgrad.cuda.Stream, clgrad.cuda.mem_get_info,
             clgrad.cuda.get_rng_state]
    for call in calls:
        if HAS_GPU:
            call()
        else:
            with pytest.raises(RuntimeError, match="No CUDA GPUs are available"):
                call()
    if HAS_GPU:
        free, total = clgrad.cuda.mem_get_info()
        assert 0 <= free <= total == _device.gpus()[0].global_mem_size


def test_cuda_memory_statistics_without_a_gpu(monkeypatch):
    """Where there is no GPU, torch.cuda's counters read 0 and its stats are empty (llm.c prints
    max_memory_allocated unconditionally); resetting them or a summary needs a GPU, as in torch
    (issue 22)."""
    monkeypatch.setattr(_device, "gpus", lambda: [])
    cuda = clgrad.cuda
    for f in (cuda.memory_allocated, cuda.max_memory_allocated, cuda.memory_reserved,
              cuda.max_memory_reserved, cuda.memory_cached, cuda.max_memory_cached):
        assert f() == 0 and f(0) == 0 and f("cuda:1") == 0, f.__name__
        assert type(f()) is int
    assert cuda.memory_stats() == {} and cuda.memory_stats_as_nested_dict() == {}
    assert cuda.empty_cache() is None
    for f in (cuda.reset_peak_memory_stats, cuda.memory_summary, cuda.mem_get_info):
        with pytest.raises(RuntimeError, match="No CUDA GPUs are available"):
            f()
