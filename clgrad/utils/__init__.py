"""clgrad.utils: data loading (clgrad.utils.data), as torch.utils."""
from . import data

__all__ = ["data"]
