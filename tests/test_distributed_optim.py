"""clgrad.distributed.optim: ZeroRedundancyOptimizer with DDP on 2 MPI ranks against Adam on one
process (tests/distributed_zero_checks.py holds each rank's checks), and its argument errors."""
import importlib.util
import os
import subprocess
import sys

import pytest

import clgrad
import clgrad.distributed as dist
from clgrad.distributed.optim import ZeroRedundancyOptimizer

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HAS_MPI = importlib.util.find_spec("mpi4py") is not None


def test_zero_with_ddp_matches_adam_on_one_process():
    if not HAS_MPI:
        assert not dist.is_available()
        with pytest.raises(RuntimeError, match=r"pip install clgrad\[mpi\]"):
            dist._mpi()
        return
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("CLGRAD_TEST_DEVICES", None)
    r = subprocess.run([sys.executable, "-m", "clgrad.distributed.run", "--nproc-per-node", "2",
                        os.path.join(ROOT, "tests", "distributed_zero_checks.py")],
                       capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "RANK 0 OK" in r.stdout and "RANK 1 OK" in r.stdout


def test_zero_argument_errors():
    p = clgrad.nn.Parameter(clgrad.zeros(2))
    with pytest.raises(TypeError, match="iterable of Tensors"):
        ZeroRedundancyOptimizer(p, clgrad.optim.SGD, lr=0.1)
    with pytest.raises(ValueError, match="empty parameter list"):
        ZeroRedundancyOptimizer([], clgrad.optim.SGD, lr=0.1)
    with pytest.raises(TypeError, match="Tensors or dicts"):
        ZeroRedundancyOptimizer([p, {"params": [p]}], clgrad.optim.SGD, lr=0.1)
    with pytest.raises(ValueError, match="'params' key"):
        ZeroRedundancyOptimizer([{"lr": 0.1}], clgrad.optim.SGD, lr=0.1)
    with pytest.raises(NotImplementedError, match="communication hooks"):
        ZeroRedundancyOptimizer([p], clgrad.optim.SGD, overlap_with_ddp=True, lr=0.1)
    with pytest.raises(RuntimeError, match="Default process group has not been initialized"):
        ZeroRedundancyOptimizer([p], clgrad.optim.SGD, lr=0.1)
    assert clgrad.distributed.optim.ZeroRedundancyOptimizer is ZeroRedundancyOptimizer
