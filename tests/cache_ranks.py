"""Run by tests/test_faults.py: four processes at once on one empty kernel cache
(CLGRAD_CACHE_DIR, CLGRAD_BINARY_CACHE=always). Under MPI (python -m clgrad.distributed.run) they
are ranks that meet at a barrier; without mpi4py they are plain processes that meet at a file
barrier in the folder given as argv[1]. Past the barrier every process builds the same kernels at
the same moment, so they race to write the same cache entries; each checks its results and
prints "RANK r OK" with its build counts, or exits non-zero: a result is wrong, or a cache entry
it found would not load (half written by another process)."""
import os
import sys
import time

import numpy as np

import clgrad
from clgrad.runtime import kernels


def meet():
    """Wait until every process has started (clgrad imported, device found); return its rank."""
    if "OMPI_COMM_WORLD_RANK" in os.environ:
        import clgrad.distributed as dist
        dist.init_process_group("mpi")
        assert dist.get_world_size() == 4
        dist.barrier()
        return dist.get_rank()
    folder, rank = sys.argv[1], int(sys.argv[2])
    open(os.path.join(folder, f"ready.{rank}"), "w").close()
    deadline = time.monotonic() + 120
    while sum(n.startswith("ready.") for n in os.listdir(folder)) < 4:
        assert time.monotonic() < deadline, "the other processes never started"
        time.sleep(0.005)
    return rank


def work():
    """A few kernel families: elementwise, reduction, matmul, softmax, a backward."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((16, 24)).astype(np.float32)
    b = rng.standard_normal((24, 8)).astype(np.float32)
    x = clgrad.tensor(a, requires_grad=True)
    y = clgrad.tensor(b)
    close = np.testing.assert_allclose
    close((x * 2 + 1).tanh().detach().numpy(), np.tanh(a * 2 + 1), rtol=1e-5, atol=1e-6)
    close(x.sum(1).detach().numpy(), a.sum(1), rtol=1e-5, atol=1e-5)
    m = x @ y
    close(m.detach().numpy(), a @ b, rtol=1e-4, atol=1e-4)
    s = clgrad.softmax(m, dim=1)
    e = np.exp(a @ b - (a @ b).max(1, keepdims=True))
    close(s.detach().numpy(), e / e.sum(1, keepdims=True), rtol=1e-4, atol=1e-6)
    (m * m).sum().backward()
    close(x.grad.numpy(), 2 * (a @ b) @ b.T, rtol=1e-4, atol=1e-3)


rank = meet()
work()
stats = kernels.BUILD_STATS
# an entry that exists but does not load is one another process had not finished writing
assert stats["rejected_binary"] == 0, f"rank {rank}: {stats['rejected_binary']} damaged entries"
print(f"RANK {rank} OK built={stats['built_from_source']} loaded={stats['loaded_binary']} "
      f"retried={stats['retried_builds']}",
      flush=True)
