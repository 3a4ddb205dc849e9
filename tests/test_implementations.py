"""Several OpenCL implementations side by side: pip-installed drivers found without a hand-written
.icd, the rule that picks the default device, simulators used only when named, and the switch
that puts any device on the GPU code paths."""
import math
import os
import subprocess
import sys
import types

import numpy as np
import pytest

import clgrad
from helpers import run_python
from clgrad.runtime import device as _device
from clgrad.runtime import icd

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))



def _run(code, env=None):
    return run_python(code, env)


# ---- the vendors folder for pip-installed drivers ------------------------------------------------

@pytest.mark.host
def test_vendors_folder_keeps_the_system_icds_and_adds_the_pip_driver(tmp_path):
    system = tmp_path / "vendors"
    system.mkdir()
    (system / "nvidia.icd").write_text("libnvidia-opencl.so.1\n")
    (system / "notes.txt").write_text("not an icd")
    lib = tmp_path / "lib" / "libintelocl.so"
    lib.parent.mkdir()
    lib.write_bytes(b"")
    folder = icd.vendors_folder({"clgrad-intel-cpu.icd": str(lib)}, str(system), tmp_path / "out")
    files = sorted(os.listdir(folder))
    assert files == ["clgrad-intel-cpu.icd", "nvidia.icd"]
    assert open(os.path.join(folder, "clgrad-intel-cpu.icd")).read().strip() == str(lib)
    assert open(os.path.join(folder, "nvidia.icd")).read().strip() == "libnvidia-opencl.so.1"
    # the same inputs give the same folder (processes share it), other inputs another one
    again = icd.vendors_folder({"clgrad-intel-cpu.icd": str(lib)}, str(system), tmp_path / "out")
    assert again == folder
    other = icd.vendors_folder({"clgrad-intel-cpu.icd": str(lib) + "x"}, str(system),
                               tmp_path / "out")
    assert other != folder


@pytest.mark.host
def test_a_driver_the_system_already_lists_is_not_added_twice(tmp_path):
    system = tmp_path / "vendors"
    system.mkdir()
    (system / "intel.icd").write_text("/opt/intel/lib/libintelocl.so\n")
    assert icd.vendors_folder({"clgrad-intel-cpu.icd": "/venv/lib/libintelocl.so"},
                              str(system), tmp_path) is None
    assert icd.vendors_folder({}, str(system), tmp_path) is None


@pytest.mark.host
def test_pip_drivers_are_found_in_the_environment(tmp_path, monkeypatch):
    lib = tmp_path / "lib"
    lib.mkdir()
    monkeypatch.setattr(sys, "prefix", str(tmp_path))
    assert "clgrad-intel-cpu.icd" not in icd.find_pip_drivers() or \
        not icd.find_pip_drivers()["clgrad-intel-cpu.icd"].startswith(str(tmp_path))
    (lib / "libintelocl.so").write_bytes(b"")
    assert icd.find_pip_drivers()["clgrad-intel-cpu.icd"] == str((lib / "libintelocl.so").resolve())


@pytest.mark.host
def test_the_intel_runtime_appears_exactly_when_it_is_installed():
    # In an environment with `clgrad[intel]` its device must be listed with no set-up at all;
    # without it, it must not be.
    r = _run("""
        import clgrad
        names = [d.platform_name for d in clgrad.cl.devices()]
        print("INTEL" if any("Intel(R) OpenCL" in n for n in names) else "NONE")
    """, {"OCL_ICD_VENDORS": ""})
    assert r.returncode == 0, r.stderr
    installed = bool(icd.find_pip_drivers())
    assert r.stdout.strip() == ("INTEL" if installed else "NONE"), r.stdout + r.stderr
    r = _run("""
        import clgrad
        print(any("Intel(R) OpenCL" in d.platform_name for d in clgrad.cl.devices()))
    """, {"OCL_ICD_VENDORS": "", "CLGRAD_PIP_DRIVERS": "0"})
    assert r.stdout.strip() == "False", r.stdout + r.stderr


# ---- which device is the default -----------------------------------------------------------------

def _fake(index, gpu=False, pocl=False, simulator=False, unusable=None):
    return types.SimpleNamespace(index=index, is_gpu=gpu, is_pocl=pocl, is_simulator=simulator,
                                 unusable=unusable)


@pytest.mark.host
def test_default_device_rule():
    grind = _fake(0, gpu=True, simulator=True)        # Oclgrind calls itself a GPU
    intel = _fake(1)
    pocl = _fake(2, pocl=True)
    gpu = _fake(3, gpu=True)
    assert _device.preferred([grind, intel, pocl, gpu]) is gpu
    assert _device.preferred([grind, intel, pocl]) is pocl
    assert _device.preferred([grind, intel]) is intel
    assert _device.preferred([grind]) is grind
    # a PoCL that cannot compile for this CPU (LLVM 14 on AMD Zen 5) is passed over
    broken = _fake(2, pocl=True, unusable="PoCL cannot compile for this CPU")
    assert _device.preferred([grind, intel, broken]) is intel
    # and with nothing else but the simulator, an error saying why rather than the simulator
    with pytest.raises(_device.NoDeviceError, match="PoCL cannot compile for this CPU"):
        _device.preferred([grind, broken])


@pytest.mark.host
def test_pocl_on_a_cpu_its_llvm_does_not_know_is_unusable():
    def dev(version, pocl=True, cpu=True):
        return types.SimpleNamespace(is_pocl=pocl, is_cpu=cpu, version=version, name="AMD EPYC",
                                     platform_name="Portable Computing Language")
    hstr = "OpenCL 3.0 PoCL HSTR: pthread-x86_64-unknown-linux-gnu-"
    assert "target CPU 'generic'" in _device.unusable_reason(dev(hstr + "generic"))
    assert _device.unusable_reason(dev(hstr + "znver3")) is None
    assert _device.unusable_reason(dev(hstr + "generic", pocl=False)) is None
    assert _device.unusable_reason(dev("OpenCL 3.0 PoCL HSTR: pthread-aarch64-linux-generic")) \
        is None


@pytest.mark.host
def test_pocl_names_the_pocl_that_builds_here():
    """pip's PoCL and Debian's side by side on a CPU the first cannot compile for: "pocl" (as
    CLGRAD_DEVICE or CLGRAD_TEST_DEVICES takes it) names the one that can build."""
    def dev(index, unusable):
        return types.SimpleNamespace(index=index, is_pocl=True, is_simulator=False, name="EPYC",
                                     unusable=unusable, platform_name="Portable Computing "
                                     "Language", vendor="AMD", kind="cpu")
    pip_pocl, debian_pocl = dev(0, "cannot compile for this CPU"), dev(1, None)
    assert _device._match("pocl", [pip_pocl, debian_pocl]) is debian_pocl
    assert _device._match("cl:0", [pip_pocl, debian_pocl]) is pip_pocl


@pytest.mark.host
def test_a_word_names_implementations_before_devices():
    """On an Intel CPU PoCL's device is named after the CPU ("pthread-Intel(R) Xeon(R) ..."):
    "intel" names Intel's runtime only, as CLGRAD_DEVICE, CLGRAD_TEST_DEVICES and get_device
    take it (CI's Intel stage once ran PoCL as well, on a Xeon); a word no platform holds still
    names devices by their own names."""
    def dev(index, platform, name, pocl=False):
        return types.SimpleNamespace(index=index, is_pocl=pocl, is_simulator=False, name=name,
                                     unusable=None, platform_name=platform, vendor="Intel",
                                     kind="cpu")
    pocl = dev(0, "Portable Computing Language", "pthread-Intel(R) Xeon(R) Processor", True)
    intel = dev(1, "Intel(R) OpenCL", "Intel(R) Xeon(R) Processor")
    both = [pocl, intel]
    assert _device.named("intel", both) == [intel]
    assert _device.named("Intel", both) == [intel]
    assert _device._match("intel", both) is intel
    assert _device.named("pocl", both) == [pocl]
    assert _device.named("xeon", both) == both
    assert _device.named("nvidia", both) == []


@pytest.mark.host
def test_simulators_only_when_named():
    r = _run("""
        import clgrad
        from clgrad.runtime import device
        print(device.default_device().is_simulator)
        sims = [d for d in clgrad.cl.devices() if d.is_simulator]
        if sims:
            print(device.get_device("oclgrind").is_simulator)
            print(device.get_device(f"cl:{sims[0].index}").is_simulator)
        else:
            print(True); print(True)
    """, {"CLGRAD_DEVICE": ""})
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["False", "True", "True"], r.stdout


# ---- the GPU code paths on any device ------------------------------------------------------------

@pytest.mark.host
def test_clgrad_gpu_paths_puts_every_device_on_the_gpu_paths():
    r = _run("""
        import clgrad
        for d in clgrad.cl.devices():
            print(d.cpu_paths, d.vec, d.vec8)
    """, {"CLGRAD_GPU_PATHS": "1"})
    assert r.returncode == 0, r.stderr
    lines = r.stdout.split("\n")[:-1]
    assert lines and all(line == "False 4 2" for line in lines), r.stdout
    r = _run("""
        import clgrad
        print(all(d.cpu_paths == d.is_cpu for d in clgrad.cl.devices()))
    """, {"CLGRAD_GPU_PATHS": "0"})
    assert r.stdout.strip() == "True", r.stdout + r.stderr


@pytest.fixture
def both_paths(device):
    """Run the test body on both code paths of the device, restoring its own paths after."""
    was = device.cpu_paths
    yield lambda cpu: device.set_code_paths(cpu=cpu)
    device.set_code_paths(cpu=was)


def test_both_code_paths_give_the_same_numbers(device, both_paths):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((37, 53)).astype(np.float32)
    b = rng.standard_normal((53, 29)).astype(np.float32)
    img = rng.standard_normal((2, 3, 9, 11)).astype(np.float32)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    results = {}
    for cpu in (True, False):
        both_paths(cpu)
        assert device.cpu_paths is cpu
        assert (device.vec, device.vec8, device.native_vloads) == _device.vector_widths(device)
        assert device.vec >= 8 if cpu else device.vec == 4
        x, y = clgrad.tensor(a), clgrad.tensor(b)
        conv = clgrad.nn.functional.conv2d(clgrad.tensor(img), clgrad.tensor(w), padding=1)
        results[cpu] = [(x @ y).numpy(), x.sum(0).numpy(), x.amax(1).numpy(),
                        x.softmax(1).numpy(), (x * 2 + 1).exp().numpy(), conv.numpy()]
    ref = [a.astype(np.float64) @ b, a.sum(0), a.max(1), None, np.exp(a * 2 + 1), None]
    for cpu_r, gpu_r, r in zip(results[True], results[False], ref):
        np.testing.assert_allclose(cpu_r, gpu_r, rtol=1e-4, atol=1e-4)
        if r is not None:
            np.testing.assert_allclose(gpu_r, r, rtol=1e-4, atol=1e-4)


def test_switching_paths_drops_path_dependent_plans(device, both_paths):
    plans = _device.path_dependent({})
    plans[device] = "cpu plan"
    plans[(device, "float32")] = "cpu plan"
    plans["other"] = "kept"
    both_paths(not device.cpu_paths)
    assert plans == {"other": "kept"}
    _device.PATH_CACHES.remove(plans)


def test_python_dash_m_clgrad_checks_the_named_devices(device):
    path = ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")
    r = subprocess.run([sys.executable, "-m", "clgrad", f"cl:{device.index}"],
                       capture_output=True, text=True, timeout=600,
                       env=dict(os.environ, PYTHONPATH=path))
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count("self-check on") == 1
    assert f"self-check on cl:{device.index}" in r.stdout and "all good" in r.stdout
    for d in clgrad.cl.devices():              # every device is listed, checked or not
        assert f"cl:{d.index}  {d.name}" in r.stdout


@pytest.mark.host
def test_an_unusable_device_refuses_to_build_with_the_reason():
    from clgrad.runtime import kernels
    fake = types.SimpleNamespace(index=9, unusable="its compiler rejects this CPU")
    with pytest.raises(_device.NoDeviceError, match="cl:9 cannot build kernels here: its "
                                                    "compiler rejects this CPU"):
        kernels.build_unit(fake, None, "")


def _pocl_like(version, pocl=True, cpu=True):
    return types.SimpleNamespace(version=version, is_pocl=pocl, is_cpu=cpu,
                                 platform_name="Portable Computing Language" if pocl else "x")


@pytest.mark.host
def test_wide_vectors_follow_the_compile_target():
    """PoCL names the CPU it compiles for; 512-bit vectors only where that target has AVX-512
    (pip's PoCL 3.0 takes a Zen 4 for znver3 and built programs without kernels there)."""
    hstr = "OpenCL 3.0 PoCL HSTR: pthread-x86_64-{}-linux-gnu-{}"
    cases = {("pc", "skylake-avx512"): True, ("unknown", "znver3"): False,
             ("unknown", "znver4"): True, ("pc", "haswell"): False, ("pc", "icelake-server"): True,
             ("unknown", "x86-64-v3"): False}
    for (vendor, cpu), ok in cases.items():
        dev = _pocl_like(hstr.format(vendor, cpu))
        assert _device.compile_target(dev) == cpu
        assert _device.wide_vectors_ok(dev) is ok, cpu
    assert _device.compile_target(_pocl_like("OpenCL 3.1 (Build 0)", pocl=False)) is None
    assert _device.wide_vectors_ok(_pocl_like("OpenCL 3.1 (Build 0)", pocl=False))
    assert _device.wide_vectors_ok(_pocl_like("OpenCL 3.0 PoCL HSTR: pthread-aarch64-linux-gnu-a72"))


def test_vector_widths_follow_the_implementation(device):
    """PoCL assembles 8-wide vectors from scalar loads, but on an AVX-512 target gets 16 floats
    (4 doubles): with native vloadN from 3.1 on, assembled on 3.0; Intel's CPU runtime gets a
    SIMD register of floats with native vloadN; the GPU paths 4-wide loads. Every choice builds
    and computes (the elementwise, reduction and softmax tests run on whichever the device
    gets; test_every_vector_width_computes runs the others)."""
    was = device.cpu_paths
    try:
        device.set_code_paths(cpu=True)
        vec, vec8, native = _device.vector_widths(device)
        if device.is_pocl and _device.explicit_avx512(device):
            assert (vec, vec8, native) == (16, 4, True)
        elif device.is_pocl and _device.pocl_targets_avx512(device):
            assert (vec, vec8, native) == (16, 4, False)
        elif device.is_pocl:
            assert (vec, vec8, native) == (8, 4, False)
        elif "intel(r) opencl" in device.platform_name.lower() and device.is_cpu:
            assert native and vec == (16 if device.simd_floats >= 16 else 8)
        device.set_code_paths(cpu=False)
        assert _device.vector_widths(device) == (4, 2, False)
        with pytest.raises(ValueError, match="unsupported vector widths"):
            device.set_code_paths(cpu=True, vectors=(32, 4, False))
        assert not device.cpu_paths and device.vec == 4     # a refused choice changes nothing
        # an explicit choice holds until the next set_code_paths; 512-bit vectors only where the
        # compiler's target has them (see test_wide_vectors_follow_the_compile_target)
        wide = _device.wide_vectors_ok(device)
        device.set_code_paths(cpu=True, vectors=(16, 8, True) if wide else (8, 4, True))
        assert device.vec == (16 if wide else 8)
        if not wide:
            for native in (True, False):
                with pytest.raises(ValueError, match="512-bit"):
                    device.set_code_paths(cpu=True, vectors=(16, 4, native))
            device.set_code_paths(cpu=True, vectors=(8, 4, True))
        x = clgrad.arange(37, dtype=clgrad.float32)
        assert (x * 2 + 1).tolist() == [2.0 * i + 1 for i in range(37)]
        assert x.sum().item() == 666.0
    finally:
        device.set_code_paths(cpu=was)


@pytest.mark.parametrize("vectors", [(8, 4, False), (8, 4, True), (16, 4, False), (16, 4, True),
                                     (16, 8, True)])
def test_every_vector_width_computes(device, vectors):
    """Each choice of vector_widths, on any device that takes it (512-bit vectors where
    wide_vectors_ok), against numpy: contiguous elementwise kernels (a transcendental, a
    broadcast scalar, a bfloat16 cast, a ragged tail of 37), reductions, softmax rows and
    layer_norm, in float32 and float64 where the device has it."""
    if vectors[0] == 16 and not _device.wide_vectors_ok(device):
        before = (device.cpu_paths, device.vec, device.vec8, device.native_vloads)
        with pytest.raises(ValueError, match="512-bit"):
            device.set_code_paths(cpu=True, vectors=vectors)
        # refused: the device keeps its paths and widths (on the GPU paths too)
        assert (device.cpu_paths, device.vec, device.vec8, device.native_vloads) == before
        return
    was = device.cpu_paths
    rng = np.random.default_rng(1)
    a = rng.standard_normal((5, 37))
    try:
        device.set_code_paths(cpu=True, vectors=vectors)
        assert (device.vec, device.vec8, device.native_vloads) == vectors
        for dt, tol in ((np.float32, 2e-6), (np.float64, 1e-12)):
            if dt == np.float64 and not device.has_fp64:
                continue
            an = a.astype(dt)
            x = clgrad.tensor(an)
            np.testing.assert_allclose((x * 0.5).exp().numpy(), np.exp(an * 0.5), rtol=tol)
            np.testing.assert_allclose(clgrad.nn.functional.gelu(x).numpy(),
                                       0.5 * an * (1 + np.vectorize(math.erf)(an / math.sqrt(2))),
                                       rtol=tol * 10, atol=tol)
            np.testing.assert_allclose(x.sum(1).numpy(), an.sum(1), rtol=tol * 10)
            e = np.exp(an - an.max(1, keepdims=True))
            np.testing.assert_allclose(x.softmax(1).numpy(), e / e.sum(1, keepdims=True),
                                       rtol=tol * 10)
            m, v = an.mean(1, keepdims=True), an.var(1, keepdims=True)
            np.testing.assert_allclose(
                clgrad.nn.functional.layer_norm(x, (37,)).numpy(), (an - m) / np.sqrt(v + 1e-5),
                rtol=tol * 100, atol=tol * 100)
        bits = a.astype(np.float32).view(np.uint32).astype(np.uint64)  # round to nearest even
        bf16 = (((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16).astype(np.uint32)
        xb = clgrad.tensor(a.astype(np.float32)).to(clgrad.bfloat16)
        assert np.array_equal(xb.float().numpy(), bf16.view(np.float32))
        assert np.array_equal((xb * 2).float().numpy(), bf16.view(np.float32) * 2)
    finally:
        device.set_code_paths(cpu=was)
