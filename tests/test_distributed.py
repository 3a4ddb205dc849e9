"""clgrad.distributed: collectives, DistributedDataParallel and the sampler on 2 MPI ranks
started by the launcher (tests/distributed_checks.py holds the checks each rank makes)."""
import importlib.util
import os

import pytest

import clgrad
import clgrad.distributed as dist
from clgrad.distributed import run
from clgrad.utils.data.distributed import DistributedSampler
from helpers import run_on_two_ranks

HAS_MPI = importlib.util.find_spec("mpi4py") is not None


def test_two_ranks_collectives_and_ddp():
    run_on_two_ranks("distributed_checks.py")


def test_distributed_sampler_partitions_as_torch():
    parts = [list(DistributedSampler(range(5), num_replicas=2, rank=k, shuffle=False))
             for k in range(2)]
    assert parts == [[0, 2, 4], [1, 3, 0]]                      # padded from the start
    parts = [list(DistributedSampler(range(5), num_replicas=2, rank=k, shuffle=False,
                                     drop_last=True)) for k in range(2)]
    assert parts == [[0, 2], [1, 3]]
    s = [DistributedSampler(range(10), num_replicas=3, rank=k, seed=7) for k in range(3)]
    first = [list(x) for x in s]
    assert len(set(sum(first, []))) == 10 and all(len(p) == 4 for p in first)
    for x in s:
        x.set_epoch(1)
    assert [list(x) for x in s] != first                        # a new order each epoch
    again = [list(DistributedSampler(range(10), num_replicas=3, rank=k, seed=7)) for k in range(3)]
    assert again == first                                       # the same on every rank
    with pytest.raises(ValueError, match="Invalid rank"):
        DistributedSampler(range(4), num_replicas=2, rank=2)
    with pytest.raises(ValueError if HAS_MPI else RuntimeError,     # as torch's
                       match="has not been initialized" if HAS_MPI else "Requires distributed"):
        DistributedSampler(range(4))


def test_launcher_command_and_errors():
    if HAS_MPI:
        cmd = run.command(3, ["train.py", "--lr", "0.1"], python="py")
        assert cmd[1:4] == ["-n", "3", "--oversubscribe"]
        assert cmd[-5:] == ["-m", "clgrad.distributed._rank", "train.py", "--lr", "0.1"]
        assert os.path.basename(cmd[0]) == "mpiexec"
    from clgrad.distributed import _rank
    env = {"OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_SIZE": "2",
           "OMPI_COMM_WORLD_LOCAL_RANK": "1"}
    _rank.setup_env(env)
    assert (env["RANK"], env["WORLD_SIZE"], env["LOCAL_RANK"]) == ("1", "2", "1")
    assert not dist.is_initialized()
    with pytest.raises(RuntimeError, match="Default process group has not been initialized"):
        dist.get_rank()
    with pytest.raises(SystemExit):
        run.main(["--nnodes", "2", "x.py"])
    assert isinstance(clgrad.nn.parallel.DistributedDataParallel, type)
