"""clgrad.nn.parallel: DistributedDataParallel, defined in clgrad.distributed (the layer above
nn) and reached here lazily, so importing clgrad.nn does not import the distributed layer."""


def __getattr__(name):
    if name in ("DistributedDataParallel", "DDP"):
        from ...distributed.ddp import DistributedDataParallel
        return DistributedDataParallel
    raise AttributeError(f"module 'clgrad.nn.parallel' has no attribute {name!r}")
