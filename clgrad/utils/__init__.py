"""clgrad.utils: data loading (clgrad.utils.data), activation checkpointing
(clgrad.utils.checkpoint), hooks' handles (clgrad.utils.hooks) and pytrees
(clgrad.utils._pytree), as torch.utils."""
from . import _pytree, checkpoint, data, hooks

__all__ = ["data", "checkpoint", "hooks"]
