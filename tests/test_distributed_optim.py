"""clgrad.distributed.optim: ZeroRedundancyOptimizer with DDP on 2 MPI ranks against Adam on one
process (tests/distributed_zero_checks.py holds each rank's checks), and its argument errors."""
import pytest

import clgrad
from clgrad.distributed.optim import ZeroRedundancyOptimizer
from helpers import run_on_two_ranks


def test_zero_with_ddp_matches_adam_on_one_process():
    run_on_two_ranks("distributed_zero_checks.py")


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
