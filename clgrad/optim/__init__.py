"""clgrad.optim: optimizers with torch.optim's names, defaults and update rules, each update a
single fused OpenCL kernel (up to 8 parameters per launch); learning-rate schedulers in
clgrad.optim.lr_scheduler.

>>> import clgrad
>>> model = clgrad.nn.Linear(3, 1)
>>> opt = clgrad.optim.AdamW(model.parameters(), lr=1e-2)
>>> loss = model(clgrad.randn(16, 3)).square().mean()
>>> loss.backward(); opt.step(); opt.zero_grad()
>>> model.weight.grad is None
True
"""
from . import lr_scheduler, swa_utils
from .adafactor import Adafactor
from .muon import Muon
from .adam import Adam, AdamW
from .adaptive import Adadelta, Adagrad, Adamax, NAdam, RAdam
from .classic import ASGD, Rprop
from .lbfgs import LBFGS
from .optimizer import Optimizer
from .rmsprop import RMSprop
from .sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax",
           "NAdam", "RAdam", "ASGD", "Rprop", "LBFGS", "Adafactor", "Muon", "lr_scheduler", "swa_utils"]
