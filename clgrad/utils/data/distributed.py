"""DistributedSampler: each rank's share of a dataset, as torch partitions it."""
import math

from .sampler import Sampler
from ...ops.creation import Generator, randperm


class DistributedSampler(Sampler):
    """The indices rank `rank` of `num_replicas` reads: the (shuffled, per `seed` and the epoch
    set by set_epoch) index list padded by repeating its start to a multiple of num_replicas
    (or cut, with drop_last), then every num_replicas-th index from `rank` on. num_replicas and
    rank default to the default process group's (clgrad.distributed.init_process_group); as
    torch's, that is a RuntimeError where clgrad.distributed is unavailable (no MPI) and a
    ValueError before the group is initialised. Also `clgrad.utils.data.DistributedSampler`.

    >>> from clgrad.utils.data.distributed import DistributedSampler
    >>> list(DistributedSampler(range(5), num_replicas=2, rank=1, shuffle=False))
    [1, 3, 0]
    """

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0,
                 drop_last=False):
        if num_replicas is None or rank is None:
            # the process group lives in the distributed layer, above this one: asked lazily
            from ... import distributed as dist
            if not dist.is_available():
                raise RuntimeError("Requires distributed package to be available")
            if not dist.is_initialized():
                raise ValueError("Default process group has not been initialized, please make "
                                 "sure to call init_process_group.")
            num_replicas = dist.get_world_size() if num_replicas is None else num_replicas
            rank = dist.get_rank() if rank is None else rank
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval "
                             f"[0, {num_replicas - 1}]")
        self.dataset, self.num_replicas, self.rank = dataset, num_replicas, rank
        self.epoch, self.shuffle, self.seed, self.drop_last = 0, shuffle, seed, drop_last
        n = len(dataset)
        if drop_last and n % num_replicas:
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas

    def __iter__(self):
        n = len(self.dataset)
        if self.shuffle:
            g = Generator().manual_seed(self.seed + self.epoch)
            indices = randperm(n, generator=g).tolist()
        else:
            indices = list(range(n))
        if not self.drop_last:
            pad = self.total_size - len(indices)
            if pad <= len(indices):
                indices += indices[:pad]
            else:
                indices += (indices * math.ceil(pad / len(indices)))[:pad]
        else:
            indices = indices[:self.total_size]
        return iter(indices[self.rank:self.total_size:self.num_replicas])

    def __len__(self):
        return self.num_samples

    def set_epoch(self, epoch):
        """Make the next epoch's shuffle differ (the same on every rank)."""
        self.epoch = epoch
