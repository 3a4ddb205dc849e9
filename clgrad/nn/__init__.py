"""clgrad.nn: modules, layers, losses, initialisers and helpers with torch.nn's names, arguments,
defaults and initialisation.

>>> import clgrad
>>> from clgrad import nn
>>> model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 3))
>>> loss = nn.CrossEntropyLoss()(model(clgrad.randn(8, 4)), clgrad.randint(0, 3, (8,)))
>>> loss.backward()
>>> all(p.grad is not None for p in model.parameters())
True
"""
from .parameter import Buffer, Parameter, UninitializedBuffer, UninitializedParameter
from .modules import *  # noqa: F401,F403
from .modules import __all__ as _modules_all
from . import attention, functional, init, parallel, utils
from .parallel import DataParallel

__all__ = ["Parameter", "Buffer", "UninitializedParameter", "UninitializedBuffer", "attention",
           "functional", "init", "utils", "DataParallel"] + _modules_all
