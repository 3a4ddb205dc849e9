"""clgrad.utils.data: datasets, samplers and DataLoader with torch.utils.data's API. Samples
are loaded in the calling process, or in worker processes with num_workers > 0; batches are
collated into tensors on the default device.

>>> import clgrad
>>> from clgrad.utils.data import DataLoader, TensorDataset
>>> ds = TensorDataset(clgrad.arange(10).float(), clgrad.arange(10))
>>> [y.tolist() for _, y in DataLoader(ds, batch_size=4)]
[[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
"""
from .dataset import ConcatDataset, Dataset, IterableDataset, Subset, TensorDataset, random_split
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler
from .distributed import DistributedSampler
from .dataloader import DataLoader, default_collate, default_convert
from ._worker import WorkerInfo, get_worker_info

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "ConcatDataset", "Subset",
           "random_split", "Sampler", "SequentialSampler", "RandomSampler", "BatchSampler",
           "DistributedSampler",
           "DataLoader", "default_collate", "default_convert", "get_worker_info", "WorkerInfo"]
