"""The runtime: devices, the memory pool and its statistics, out-of-memory, kernel templates,
program builds and the binary cache."""
import gc
import os
import subprocess
import sys

import numpy as np
import pytest

import clgrad
from helpers import run_python
from clgrad.runtime.kernels import KernelBuildError, Program, get_kernel, render

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))



def _run(code, env=None):
    return run_python(code, env)


@pytest.mark.host
def test_import_without_any_opencl_platform(tmp_path):
    # pyopencl's loader also looks in PYOPENCL_HOME (where its wheel ships PoCL): empty both, and
    # keep clgrad from adding a pip-installed Intel runtime
    r = _run("""
        import os, pyopencl
        os.environ["PYOPENCL_HOME"] = os.environ["OCL_ICD_VENDORS"]
        import clgrad
        assert not clgrad.cl.is_available()
        x = None
        try:
            clgrad.zeros(2)
        except RuntimeError as e:
            print("ERROR:", e)
    """, {"OCL_ICD_VENDORS": str(tmp_path), "CLGRAD_PIP_DRIVERS": "0"})   # nor pip's drivers
    assert r.returncode == 0, r.stderr
    assert "ERROR: clgrad found no OpenCL device" in r.stdout
    assert "pip install clgrad[pocl]" in r.stdout


def test_device_listing_and_capabilities(device):
    assert clgrad.cl.is_available()
    assert clgrad.cl.device_count() == len(clgrad.cl.devices()) >= 1
    assert clgrad.cl.get_device_name(device.index) == device.name
    caps = clgrad.cl.get_device_capability(device.index)
    for key in ("fp16", "fp64", "local_mem_bytes", "max_work_group_size", "vendor", "type"):
        assert key in caps
    assert clgrad.cl.current_device() == device.index
    x = clgrad.ones(3, device=f"cl:{device.index}")
    assert x.device == clgrad.device(f"cl:{device.index}") == clgrad.device(device)
    assert x._storage.device is device
    clgrad.cl.synchronize()


def test_clgrad_device_environment_variable(device):
    # the device under test, named by a fragment of its platform, vendor and name, and by index
    spec = "pocl" if device.is_pocl else f"{device.platform_name} {device.vendor} {device.name}"
    for env in (spec, f"cl:{device.index}"):
        r = _run("import clgrad; d = clgrad.runtime.default_device(); print(d.index, '|', d.name)",
                 {"CLGRAD_DEVICE": env})
        assert r.returncode == 0, r.stderr
        idx, name = r.stdout.strip().split(" | ")
        assert name == device.name
        if env.startswith("cl:"):
            assert idx == str(device.index)
    r = _run("import clgrad\ntry:\n  clgrad.zeros(1)\nexcept RuntimeError as e: print('ERR', e)",
             {"CLGRAD_DEVICE": "cl:99"})
    assert "ERR" in r.stdout and "cl:99" in r.stdout
    r = _run("import clgrad\ntry:\n  clgrad.zeros(1)\nexcept RuntimeError as e: print('ERR', e)",
             {"CLGRAD_DEVICE": "no-such-vendor"})
    assert "matches none of the OpenCL devices" in r.stdout


def test_bad_device_strings(device):
    with pytest.raises(RuntimeError, match="invalid device"):
        clgrad.zeros(2, device="cl:99")
    with pytest.raises(RuntimeError, match="'mps'"):
        clgrad.zeros(2, device="mps")
    with pytest.raises(RuntimeError, match="Invalid device string"):
        clgrad.zeros(2, device="cuda:x")


def test_memory_returns_to_baseline(device):
    gc.collect()
    base = clgrad.cl.memory_allocated()
    for _ in range(50):
        a = clgrad.randn(1000)
        b = (a * 2 + 1).exp()
        del a, b
    assert clgrad.cl.memory_allocated() == base
    stats = clgrad.cl.memory_stats()
    for key in ("num_alloc_calls", "num_cache_hits", "allocated_bytes", "cached_bytes",
                "reserved_bytes", "peak_allocated_bytes"):
        assert key in stats
    assert stats["num_cache_hits"] > 0
    assert clgrad.cl.memory_reserved() >= clgrad.cl.memory_allocated()


def test_views_keep_storage_alive(device):
    gc.collect()
    base = clgrad.cl.memory_allocated()
    x = clgrad.arange(1000, dtype=clgrad.float32)
    held = clgrad.cl.memory_allocated()
    assert held > base
    v = x[10:20].t() if x.dim() == 2 else x[10:20]
    del x
    assert clgrad.cl.memory_allocated() == held
    assert v.tolist() == list(range(10, 20))
    del v
    assert clgrad.cl.memory_allocated() == base


def test_peak_and_empty_cache(device):
    gc.collect()
    clgrad.cl.reset_peak_memory_stats()
    before = clgrad.cl.memory_allocated()
    x = clgrad.empty(1 << 20)
    assert clgrad.cl.max_memory_allocated() >= before + 4 * (1 << 20)
    del x
    assert clgrad.cl.memory_reserved() > clgrad.cl.memory_allocated()
    clgrad.cl.empty_cache()
    assert clgrad.cl.memory_reserved() == clgrad.cl.memory_allocated()


def test_out_of_memory_is_an_error_not_a_crash(device):
    keep = clgrad.arange(100, dtype=clgrad.float32)
    clgrad.cl.set_per_process_memory_fraction(64 * 2**20 / device.global_mem_size)
    try:
        with pytest.raises(clgrad.cl.OutOfMemoryError) as info:
            clgrad.empty(128 * 2**20 // 4)
        msg = str(info.value)
        assert "tried to allocate 128.00 MiB" in msg and "in use" in msg and "cached" in msg
        assert isinstance(info.value, RuntimeError)
        # what fits still works, existing tensors are intact
        y = clgrad.ones(1000)
        assert y.sum().item() == 1000
        assert keep.sum().item() == sum(range(100))
        # memory held by garbage is reclaimed before giving up
        for _ in range(4):
            z = clgrad.empty(40 * 2**20 // 4)
            del z
    finally:
        clgrad.cl.set_per_process_memory_fraction(1.0)
    assert clgrad.cl.memory_stats()["num_ooms"] >= 1


def test_allocation_larger_than_the_device_allows(device):
    with pytest.raises(clgrad.cl.OutOfMemoryError, match="largest single buffer"):
        clgrad.empty(device.max_alloc // 4 + 1024)


def test_build_error_carries_log_and_source(device):
    bad = Program("broken", "test", "__kernel void f(__global float *x) { x[0] = undefined_name; }")
    with pytest.raises(KernelBuildError) as info:
        get_kernel(device, bad, "f")
    assert "undefined_name" in info.value.source
    msg = str(info.value)
    for part in ("broken_test", device.name, "-DVEC=", "undefined_name", "build log"):
        assert part in msg
    # drivers need not say why (Intel's CPU runtime gives an empty log): the message says so
    if not info.value.log.strip():
        assert "(the driver gave no build log)" in msg


class _NoLog:
    def get_build_info(self, *args):
        raise OSError("no log")


def test_build_error_without_a_build_log(device, monkeypatch):
    """A driver whose build log is empty, or cannot be read, still gets a useful error."""
    from clgrad.runtime import kernels
    real = kernels.build_log
    assert real(_NoLog(), device) == ""                     # a driver that cannot give one
    for log in ("", "\n"):
        monkeypatch.setattr(kernels, "build_log", lambda prog, dev, _log=log: _log)
        bad = Program("broken", "nolog", "__kernel void f(__global float *x) { x[0] = nope; }")
        with pytest.raises(KernelBuildError) as info:
            get_kernel(device, bad, "f")
        msg = str(info.value)
        assert "(the driver gave no build log)" in msg
        for part in ("broken_nolog", device.name, "-DVEC=", "x[0] = nope"):
            assert part in msg


@pytest.mark.host
def test_templates_are_strict():
    with pytest.raises(NameError):
        render("copy.mako", dt=clgrad.float32)        # srcs missing


@pytest.mark.host
def test_every_program_renders_with_kernels():
    from clgrad.runtime.kernels import ALL_PROGRAMS
    families = {p.family for p in ALL_PROGRAMS}
    assert {"copy", "ew1", "ew2", "ew3", "reduce", "random"} <= families
    for p in ALL_PROGRAMS:
        if p.family != "broken":
            assert p.signatures, p.name


def test_second_process_loads_saved_binaries(tmp_path):
    code = """
        import clgrad
        from clgrad.runtime.kernels import BUILD_STATS, Program, get_kernel
        p = Program("cachetest", "f32", "__kernel void twice(__global float *x) { x[0] *= 2; }")
        x = clgrad.ones(1)
        get_kernel(x._device, p, "twice")(x._device.queue, (1,), (1,), x._storage.buf)
        assert x.item() == 2.0
        print(BUILD_STATS["built_from_source"], BUILD_STATS["loaded_binary"])
    """
    env = {"CLGRAD_CACHE_DIR": str(tmp_path), "CLGRAD_BINARY_CACHE": "always"}
    first = _run(code, env)
    assert first.returncode == 0, first.stderr
    built, loaded = map(int, first.stdout.split())
    assert built >= 1 and loaded == 0
    assert list(tmp_path.glob("*.bin"))
    second = _run(code, env)
    assert second.returncode == 0, second.stderr
    built2, loaded2 = map(int, second.stdout.split())
    assert loaded2 >= 1 and built2 == built - loaded2


def test_binary_cache_policy(device):
    from clgrad.runtime.kernels import keeps_binaries
    assert keeps_binaries(device) == (not (device.is_pocl or
                                           "nvidia" in device.platform_name.lower()))


def test_kernel_objects_are_memoised(device):
    from clgrad.ops._base import COPY
    k1 = get_kernel(device, COPY[clgrad.float32], "fill_c")
    k2 = get_kernel(device, COPY[clgrad.float32], "fill_c")
    assert k1 is k2


def test_host_interop(device):
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = clgrad.from_numpy(a)
    assert t.dtype is clgrad.float32 and t.tolist() == a.tolist()
    assert np.array_equal(np.asarray(t.t()), a.T)
    assert clgrad.tensor(3.5).item() == 3.5
    assert isinstance(clgrad.tensor(3).item(), int)
    assert float(clgrad.tensor([2.0])) == 2.0
    with pytest.raises(RuntimeError, match="cannot be converted to Scalar"):
        clgrad.zeros(2).item()
    with pytest.raises(RuntimeError, match="ambiguous"):
        bool(clgrad.zeros(2))
    with pytest.raises(RuntimeError, match="requires grad"):
        clgrad.zeros(2, requires_grad=True).numpy()
    assert clgrad.zeros(2, requires_grad=True).detach().numpy().tolist() == [0.0, 0.0]
    with pytest.raises(TypeError, match="BFloat16"):
        clgrad.zeros(2, dtype=clgrad.bfloat16).numpy()
    assert clgrad.tensor([1.5], dtype=clgrad.bfloat16).tolist() == [1.5]


def test_deferred_tiny_launches_keep_program_order(device):
    """Tiny launches wait and go to the queue in bursts; anything that touches the queue (a host
    write here) enqueues them first, so results are as if every launch went at once."""
    import numpy as np
    import pyopencl as cl
    x = clgrad.tensor([1.0, 2.0, 3.0])
    y = x * 10                                    # deferred: still waiting when x is rewritten
    assert device._deferred or y.tolist() == [10.0, 20.0, 30.0]
    cl.enqueue_copy(device.queue, x._storage.buf, np.array([7.0, 8.0, 9.0], np.float32),
                    is_blocking=True)
    assert y.tolist() == [10.0, 20.0, 30.0] and x.tolist() == [7.0, 8.0, 9.0]
    z = x
    for _ in range(100):                          # more than a burst: flushes on its own
        z = z + 1
    assert z.tolist() == [107.0, 108.0, 109.0]
    big = clgrad.ones(200_000)                    # a large launch enqueues the waiting ones first
    w = (x * 2).sum() + big.sum()
    assert w.item() == 48.0 + 200_000


def test_python_dash_m_clgrad_self_check():
    path = ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")
    r = subprocess.run([sys.executable, "-m", "clgrad"], capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=path), timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "OpenCL device" in r.stdout and "all good" in r.stdout
