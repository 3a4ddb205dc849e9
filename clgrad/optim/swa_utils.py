"""Stochastic weight averaging and exponential moving averages of a model's weights
(torch.optim.swa_utils): AveragedModel, the averaging functions, SWALR and update_bn.

>>> import clgrad
>>> from clgrad.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn
>>> model = clgrad.nn.Linear(2, 1)
>>> ema = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(0.9))
>>> ema.update_parameters(model)
>>> int(ema.n_averaged), clgrad.equal(ema.module.weight, model.weight)
(1, True)
"""
import itertools
import math
from copy import deepcopy

from ..autograd.grad_mode import no_grad
from ..ops.creation import tensor
from .. import dtypes
from ..nn.modules.batchnorm import _BatchNorm
from ..nn.modules.module import Module
from .lr_scheduler import LRScheduler, _format_param

__all__ = ["AveragedModel", "update_bn", "SWALR", "get_ema_multi_avg_fn",
           "get_swa_multi_avg_fn", "get_ema_avg_fn", "get_swa_avg_fn"]


def get_ema_multi_avg_fn(decay=0.999):
    """An in-place update of a list of averages: ema = decay * ema + (1 - decay) * current.

    >>> import clgrad
    >>> from clgrad.optim.swa_utils import get_ema_multi_avg_fn
    >>> ema = [clgrad.tensor([0.0])]
    >>> get_ema_multi_avg_fn(0.75)(ema, [clgrad.tensor([4.0])], 1)
    >>> ema[0].tolist()
    [1.0]
    """
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in [0,1] "
                         f"range.")

    def ema_update(ema_param_list, current_param_list, _):
        with no_grad():
            for p_ema, p_model in zip(ema_param_list, current_param_list):
                if p_ema.is_floating_point():
                    p_ema.lerp_(p_model, 1 - decay)
                else:
                    p_ema.copy_(p_ema * decay + p_model * (1 - decay))
    return ema_update


def get_swa_multi_avg_fn():
    """An in-place update of a list of running means: avg += (current - avg) / (n + 1).

    >>> import clgrad
    >>> from clgrad.optim.swa_utils import get_swa_multi_avg_fn
    >>> avg = [clgrad.tensor([1.0])]
    >>> get_swa_multi_avg_fn()(avg, [clgrad.tensor([4.0])], 2)
    >>> avg[0].tolist()
    [2.0]
    """
    def swa_update(averaged_param_list, current_param_list, num_averaged):
        with no_grad():
            for p_avg, p_model in zip(averaged_param_list, current_param_list):
                if p_avg.is_floating_point():
                    # a tensor count stays on the device: no host read per update
                    p_avg.add_((p_model - p_avg) / (num_averaged + 1))
                else:
                    p_avg.copy_(p_avg + (p_model - p_avg) / (num_averaged + 1))
    return swa_update


def get_ema_avg_fn(decay=0.999):
    """avg_fn(ema, current, n) = decay * ema + (1 - decay) * current.

    >>> import clgrad
    >>> from clgrad.optim.swa_utils import get_ema_avg_fn
    >>> get_ema_avg_fn(0.5)(clgrad.tensor([0.0]), clgrad.tensor([2.0]), 3).tolist()
    [1.0]
    """
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in [0,1] "
                         f"range.")

    def ema_update(ema_param, current_param, num_averaged):
        with no_grad():
            return decay * ema_param + (1 - decay) * current_param
    return ema_update


def get_swa_avg_fn():
    """avg_fn(avg, current, n) = avg + (current - avg) / (n + 1), the running mean.

    >>> import clgrad
    >>> from clgrad.optim.swa_utils import get_swa_avg_fn
    >>> get_swa_avg_fn()(clgrad.tensor([1.0]), clgrad.tensor([3.0]), 1).tolist()
    [2.0]
    """
    def swa_update(averaged_param, current_param, num_averaged):
        with no_grad():
            return averaged_param + (current_param - averaged_param) / (num_averaged + 1)
    return swa_update


class AveragedModel(Module):
    """A copy of `model` whose parameters (and buffers, with use_buffers=True) are averages of
    the model's over the calls to update_parameters(model): the running mean by default (SWA),
    or what avg_fn(avg, current, n) returns / multi_avg_fn(avg_list, current_list, n) does in
    place (e.g. get_ema_multi_avg_fn for an EMA). Without use_buffers the buffers are copied.
    `n_averaged` counts the updates (a buffer).

    >>> import clgrad
    >>> from clgrad.optim.swa_utils import AveragedModel
    >>> model = clgrad.nn.Linear(1, 1, bias=False)
    >>> swa = AveragedModel(model)
    >>> for w in (1.0, 2.0, 6.0):
    ...     with clgrad.no_grad():
    ...         _ = model.weight.fill_(w)
    ...     swa.update_parameters(model)
    >>> swa.module.weight.item(), swa(clgrad.ones(1, 1)).item()
    (3.0, 3.0)
    """

    def __init__(self, model, device=None, avg_fn=None, multi_avg_fn=None, use_buffers=False):
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", tensor(0, dtype=dtypes.int64, device=device))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def update_parameters(self, model):
        """Fold `model`'s current parameters into the averages (the first call copies them)."""
        self_param = itertools.chain(self.module.parameters(), self.module.buffers()) \
            if self.use_buffers else self.parameters()
        model_param = itertools.chain(model.parameters(), model.buffers()) \
            if self.use_buffers else model.parameters()
        self_detached, model_detached = [], []
        first = int(self.n_averaged.item()) == 0
        with no_grad():
            for p_averaged, p_model in zip(self_param, model_param):
                p_model_ = p_model.detach().to(p_averaged.device)
                self_detached.append(p_averaged.detach())
                model_detached.append(p_model_)
                if first:
                    p_averaged.detach().copy_(p_model_)
            if not first:
                if self.avg_fn is None:
                    multi = self.multi_avg_fn or get_swa_multi_avg_fn()
                    # one group per (device, dtype), as torch groups them for its foreach kernels
                    groups = {}
                    for a, m in zip(self_detached, model_detached):
                        groups.setdefault((a.device, a.dtype), ([], []))
                        groups[(a.device, a.dtype)][0].append(a)
                        groups[(a.device, a.dtype)][1].append(m)
                    for (device, _), (avgs, currents) in groups.items():
                        multi(avgs, currents, self.n_averaged.to(device))
                else:
                    for p_averaged, p_model in zip(self_detached, model_detached):
                        n = self.n_averaged.to(p_averaged.device)
                        p_averaged.copy_(self.avg_fn(p_averaged, p_model, n))
            if not self.use_buffers:
                # the averaged model keeps the latest buffers (e.g. BatchNorm's running stats)
                for b_swa, b_model in zip(self.module.buffers(), model.buffers()):
                    b_swa.detach().copy_(b_model.detach().to(b_swa.device))
            self.n_averaged += 1


def update_bn(loader, model, device=None):
    """Recompute the BatchNorm running statistics of `model` with one pass over `loader` (its
    items, or their first element, are the inputs): the statistics are reset and averaged
    cumulatively (momentum None) over the whole pass, then the momenta are restored.

    >>> import clgrad
    >>> from clgrad.optim.swa_utils import update_bn
    >>> model = clgrad.nn.Sequential(clgrad.nn.Linear(2, 2), clgrad.nn.BatchNorm1d(2))
    >>> update_bn([clgrad.randn(4, 2) for _ in range(3)], model)
    >>> int(model[1].num_batches_tracked), model[1].momentum
    (3, 0.1)
    """
    momenta = {}
    for module in model.modules():
        if isinstance(module, _BatchNorm):
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None
    with no_grad():
        for input in loader:
            if isinstance(input, (list, tuple)):
                input = input[0]
            if device is not None:
                input = input.to(device)
            model(input)
    for bn_module in momenta:
        bn_module.momentum = momenta[bn_module]
    model.train(was_training)


class SWALR(LRScheduler):
    """Anneal each group's learning rate to a constant swa_lr over anneal_epochs steps
    ("cos" or "linear" annealing), then hold it (the schedule of stochastic weight averaging).

    >>> import clgrad
    >>> from clgrad.optim.swa_utils import SWALR
    >>> opt = clgrad.optim.SGD([clgrad.nn.Parameter(clgrad.zeros(1))], lr=1.0)
    >>> sched = SWALR(opt, swa_lr=0.5, anneal_epochs=2, anneal_strategy="linear")
    >>> lrs = []
    >>> for _ in range(3):
    ...     opt.step(); sched.step(); lrs.append(sched.get_last_lr()[0])
    >>> lrs
    [0.75, 0.5, 0.5]
    """

    def __init__(self, optimizer, swa_lr, anneal_epochs=10, anneal_strategy="cos",
                 last_epoch=-1):
        swa_lrs = _format_param("swa_lr", optimizer, swa_lr)
        for lr, group in zip(swa_lrs, optimizer.param_groups):
            group["swa_lr"] = lr
        if anneal_strategy not in ["cos", "linear"]:
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got "
                             f"{anneal_strategy}")
        self._set_anneal_func(anneal_strategy)
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got "
                             f"{anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _linear_anneal(t):
        return t

    @staticmethod
    def _cosine_anneal(t):
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr, swa_lr, alpha):
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def get_lr(self):
        # recover the lr the annealing started from out of the current one, then step alpha
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_t = max(0, min(1, (step - 1) / max(1, self.anneal_epochs)))
        prev_alpha = self.anneal_func(prev_t)
        prev_lrs = [self._get_initial_lr(group["lr"], group["swa_lr"], prev_alpha)
                    for group in self.optimizer.param_groups]
        t = max(0, min(1, step / max(1, self.anneal_epochs)))
        alpha = self.anneal_func(t)
        return [group["swa_lr"] * alpha + lr * (1 - alpha)
                for group, lr in zip(self.optimizer.param_groups, prev_lrs)]

    def _set_anneal_func(self, anneal_strategy):
        self._anneal_strategy = anneal_strategy
        self.anneal_func = self._cosine_anneal if anneal_strategy == "cos" \
            else self._linear_anneal

    def state_dict(self):
        """Everything but the optimizer and the annealing function."""
        return {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "anneal_func")}

    def load_state_dict(self, state_dict):
        """Restore what state_dict returned."""
        self.__dict__.update(state_dict)
        self._set_anneal_func(self._anneal_strategy)
