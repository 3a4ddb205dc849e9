"""tools/check_kernels.py: its reading of Oclgrind's output, and Oclgrind catching a race, an
out-of-bounds write, a divergent barrier and a read past a tensor's end (its --self-test) where
the simulator is installed."""
import importlib.util
import os
import subprocess
import sys

import pytest

import clgrad

pytestmark = pytest.mark.host      # Oclgrind, whatever the devices under test are

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOOL = os.path.join(ROOT, "tools", "check_kernels.py")


def _tool():
    spec = importlib.util.spec_from_file_location("check_kernels", TOOL)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# What Oclgrind 19.10 writes (its log file and, for API errors, stderr), trimmed.
SAMPLE = """\
Write-write data race at global memory address 0x2000000000002
\tKernel: race
\t
\tFirst entity:  Global(1,0,0) Local(1,0,0) Group(0,0,0)
\t  store float %conv, float addrspace(1)* %a, align 4
\tAt line 1 (column 45) of input.cl:
\t  __kernel void race(__global float* a){ a[0] = get_global_id(0); }
\t
\tSecond entity: Global(0,0,0) Local(0,0,0) Group(0,0,0)
\tAt line 1 (column 45) of input.cl:

Write-write data race at global memory address 0x2000000000003
\tKernel: race
\t
\tFirst entity:  Global(2,0,0) Local(2,0,0) Group(0,0,0)
\tAt line 1 (column 45) of input.cl:

Invalid read of size 16 at global memory address 0x3000000000040
\tKernel: sum_c
\tEntity: Global(3,0,0) Local(3,0,0) Group(0,0,0)
\tAt line 88 (column 12) of input.cl:

Work-group divergence detected (barrier)
\tKernel:     softmax_group
\tWork-group: (0,0,0)
\tOnly 2 out of 4 work-items executed barrier
\tAt line 3 (column 61) of input.cl:

Oclgrind - OpenCL runtime error detected
\tFunction: clGetDeviceInfo
\tError:    CL_INVALID_VALUE
\tFor argument 'param_name'

Oclgrind - OpenCL runtime error detected
\tFunction: clEnqueueNDRangeKernel
\tError:    CL_INVALID_WORK_GROUP_SIZE
\tFor argument 'local_work_size'

Undefined external function: llvm.abs.i32
When creating kernel 'abs_c_t'
"""


def test_parse_log_classifies_oclgrind_messages():
    ck = _tool()
    found = {(f["what"], f["kernel"], f["line"]): f for f in ck.parse_log(SAMPLE)}
    # the two race blocks are one finding (same kind, kernel and line), counted twice
    race = found[("Write-write data race", "race", "1")]
    assert race["count"] == 2 and "Second entity" in race["text"]
    assert found[("Invalid read", "sum_c", "88")]["count"] == 1
    assert ("Work-group divergence", "softmax_group", "3") in found
    assert ("Undefined external function: llvm.abs.i32", "abs_c_t", "?") in found
    api = [f for f in found.values() if f["what"].startswith("Oclgrind - OpenCL runtime error")]
    assert sorted(f["kernel"] for f in api) == ["clEnqueueNDRangeKernel", "clGetDeviceInfo"]
    assert len(found) == 6
    # pyopencl's probing of optional properties is ignored, a real API error is not
    reasons = {f["kernel"]: ck.ignored(f) for f in api}
    assert reasons["clGetDeviceInfo"] and reasons["clEnqueueNDRangeKernel"] is None
    assert all(ck.ignored(f) is None for f in found.values() if f not in api)
    assert ck.parse_log("") == [] and ck.parse_log("\n\n") == []


def test_expected_kernels_names_what_is_left_out():
    ck = _tool()
    from clgrad.kernels.softmax import SOFTMAX
    from clgrad.runtime.kernels import ALL_PROGRAMS
    prog = SOFTMAX[clgrad.float32]
    gpu, gpu_why = ck.expected_kernels(prog, "gpu")
    cpu, why = ck.expected_kernels(prog, "cpu")
    assert gpu | cpu == set(prog.signatures)
    assert gpu - cpu == {"softmax_group", "softmax_bwd_group"}
    assert cpu - gpu == {"softmax_causal_row"}
    assert "GPU path" in why["softmax_group"] and "CPU path" in gpu_why["softmax_causal_row"]
    rnd = [p for p in ALL_PROGRAMS if p.family == "random"]
    assert all(("random_bits" in ck.expected_kernels(p)[0]) == (p.variant == "i32") for p in rnd)


def test_self_test_catches_planted_defects():
    """With Oclgrind installed the simulator must report all three planted defects; without it the
    tool must say how to install it and exit with status 2."""
    have = any(d.is_simulator for d in clgrad.cl.devices())
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, TOOL, "--self-test"], capture_output=True, text=True,
                       env=env, timeout=300)
    if have:
        assert r.returncode == 0, r.stdout + r.stderr
        for what in ("Write-write data race in race", "Invalid write in oob",
                     "Work-group divergence in diverge", "Invalid read in past_end"):
            assert what in r.stdout
    else:
        assert r.returncode == 2 and "pip install clgrad[oclgrind]" in r.stdout
