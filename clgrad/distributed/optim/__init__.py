"""clgrad.distributed.optim: torch.distributed.optim's ZeroRedundancyOptimizer over clgrad's
MPI process groups.

torch's other names here are not built: `DistributedOptimizer` drives optimizers on remote
workers through torch.distributed.rpc, `PostLocalSGDOptimizer` takes a model averager from
torch.distributed.algorithms and `as_functional_optim` makes the functional optimizers that
DDP communication hooks run; clgrad has none of rpc, the algorithms package or communication
hooks (docs/torch_compat.md).

>>> from clgrad.distributed.optim import ZeroRedundancyOptimizer
>>> ZeroRedundancyOptimizer.__name__
'ZeroRedundancyOptimizer'
"""
from .zero_redundancy_optimizer import ZeroRedundancyOptimizer

__all__ = ["ZeroRedundancyOptimizer"]
