"""clgrad.nn.parallel: DataParallel (one process; one device) and DistributedDataParallel,
defined in clgrad.distributed (the layer above nn) and reached here lazily, so importing
clgrad.nn does not import the distributed layer."""
from ..modules.module import Module


class DataParallel(Module):
    """torch's single-process DataParallel, on one device: the wrapped module runs on the whole
    batch (state_dict keys gain the "module." prefix, as torch's). Replicating a module over
    several OpenCL devices in one process is not built: with more than one device id it raises
    and points to DistributedDataParallel (one process per device), which torch itself
    recommends.

    >>> import clgrad
    >>> dp = clgrad.nn.DataParallel(clgrad.nn.Linear(2, 1))
    >>> dp(clgrad.ones(4, 2)).shape, list(dp.state_dict())
    (clgrad.Size([4, 1]), ['module.weight', 'module.bias'])
    """

    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        if device_ids is not None and len(device_ids) > 1:
            raise NotImplementedError(
                f"DataParallel over {len(device_ids)} devices: clgrad does not replicate a "
                f"module across devices in one process; use "
                f"nn.parallel.DistributedDataParallel with one process per device")
        self.module = module
        self.device_ids = list(device_ids) if device_ids is not None else []
        self.output_device = output_device
        self.dim = dim

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)


def __getattr__(name):
    if name in ("DistributedDataParallel", "DDP"):
        # function-level: points up the layer map on purpose: DDP is distributed's
        from ...distributed.ddp import DistributedDataParallel
        return DistributedDataParallel
    raise AttributeError(f"module 'clgrad.nn.parallel' has no attribute {name!r}")
