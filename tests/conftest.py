"""Every test that takes the `device` fixture runs on the default device, or once per device
CLGRAD_TEST_DEVICES names (comma-separated indices or words, e.g. "0", "pocl" or "intel"; a
word names the implementations whose platform name holds it, else devices by their names, as
runtime.device.named says; "all" for every device).
Simulators (Oclgrind) take part only when named: the whole suite would take hours on them.
CLGRAD_GPU_PATHS=1 runs the suite with every device on its GPU code paths.

Tests that take `code_paths` run on both families of code paths under CLGRAD_GPU_PATHS=1 (CI's
stages on the GPU paths, where the CPU paths of Intel's runtime are tested through them); in a
plain run each device takes its own paths only, as everything else does: on a CPU the GPU
paths' kernels are CI's to build (a cold run of the suite on pip's PoCL spent about a third of
its 17 minutes building them)."""
import os

import pytest

import clgrad
from clgrad.runtime import device as _device


def _selected():
    """The devices under test: those CLGRAD_TEST_DEVICES names ("all": every device but the
    simulators), else the default device. A device that cannot build kernels on this machine
    (Device.unusable, e.g. PoCL 3.0 on a CPU its LLVM does not know) is left out."""
    devs = clgrad.cl.devices()
    spec = os.environ.get("CLGRAD_TEST_DEVICES")
    if spec and spec.strip().lower() == "all":
        devs = [d for d in devs if not d.is_simulator]
    elif spec:
        words = [s.strip().lower() for s in spec.split(",")]
        keep = {d.index for s in words for d in devs if s in (str(d.index), f"cl:{d.index}")}
        keep |= {d.index for s in words for d in _device.named(s, devs)}
        devs = [d for d in devs if d.index in keep]
    else:
        try:
            devs = [_device.default_device()] if devs else []
        except _device.NoDeviceError:          # only devices that cannot build: said below
            devs = []
    return [d for d in devs if d.unusable is None]


DEVICES = _selected()
if len(DEVICES) == 1 and DEVICES[0].is_cpu and not os.environ.get("CLGRAD_DEVICE") and \
        DEVICES[0] is not _device.cpu_device():
    # One CPU device under test that is not the one "cpu" names (Intel's runtime beside PoCL):
    # make it "cpu" too, as CLGRAD_DEVICE would for a user of it, so that programs mixing
    # .cpu() / legacy types with default tensors meet one device (subprocesses inherit it)
    os.environ["CLGRAD_DEVICE"] = f"cl:{DEVICES[0].index}"
if not DEVICES:
    _broken = "; ".join(f"cl:{d.index}: {d.unusable}" for d in clgrad.cl.devices() if d.unusable)
    raise pytest.UsageError("no OpenCL device to test on: install one (pip install "
                            "clgrad[pocl]) or fix CLGRAD_TEST_DEVICES"
                            + (f" (unusable here: {_broken})" if _broken else ""))


@pytest.fixture(params=DEVICES, ids=[f"cl{d.index}" for d in DEVICES])
def device(request):
    """The device under test, made the default device for the duration of the test."""
    prev = _device._default_index
    _device.set_default_device(request.param)
    yield request.param
    _device._default_index = prev


@pytest.fixture(autouse=True)
def _reset_modes():
    """Tests must not leak grad mode, the default dtype or a device error they left pending (a
    loss's target check, raised at the next wait: here, as an error of the test that left it)
    into each other."""
    yield
    from clgrad._grad_state import state
    from clgrad.runtime import device
    state.grad_enabled = True
    state.inference = False
    clgrad.set_default_dtype(clgrad.float32)
    for dev in device._devices or ():
        dev.raise_pending_checks()


def pytest_collection_modifyitems(config, items):
    """Without CLGRAD_GPU_PATHS, deselect the code_paths variants that are not their device's
    own paths (see the module text)."""
    if os.environ.get("CLGRAD_GPU_PATHS"):
        return
    keep, drop = [], []
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        paths, dev = params.get("code_paths"), params.get("device")
        if paths is not None and dev is not None and (paths == "cpu-paths") != dev.cpu_paths:
            drop.append(item)
        else:
            keep.append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


@pytest.fixture(params=["cpu-paths", "gpu-paths"])
def code_paths(request, device):
    """Runs a test on both families of code paths of the device under test (set_code_paths),
    restoring the device's own afterwards: kernels of the GPU paths are then checked on CPUs.
    (In a run without CLGRAD_GPU_PATHS, only the device's own paths: see the module text.)"""
    was = device.cpu_paths
    device.set_code_paths(cpu=request.param == "cpu-paths")
    yield request.param
    device.set_code_paths(cpu=was)


if os.environ.get("CLGRAD_TEST_COMPILED"):
    # CLGRAD_TEST_COMPILED=1: every call of a module from a test goes through clgrad.compile
    # (submodules called inside it are part of its recording), so that the model tests run
    # recorded and replayed as well as eagerly (docs/compile.md)
    from clgrad.nn.modules.module import Module as _Module

    def _compiled_call(self, *args, **kwargs):
        fn = self.__dict__.get("_test_compiled")
        if fn is None:
            fn = clgrad.compile(self._call_uncompiled)
            object.__setattr__(self, "_test_compiled", fn)
        return fn(*args, **kwargs)

    _Module._compiled_call = property(lambda self: self.__dict__.get("_compiled_call") or
                                      _compiled_call.__get__(self))
