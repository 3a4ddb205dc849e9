"""ZeroRedundancyOptimizer: each rank keeps the optimizer state of its shard of the parameters
only (ZeRO stage 1, as torch.distributed.optim.ZeroRedundancyOptimizer).

The parameters are partitioned as torch does: per parameter group, largest first, each to the
rank whose shard has the fewest elements so far. `step()` runs the wrapped optimizer on this
rank's shard, then every rank broadcasts its updated shard (one message per rank and dtype, from
host buffers, as the collectives of clgrad.distributed), so all ranks end the step with the same
parameters. Used after DistributedDataParallel's backward, the gradients are already averaged,
and the result is that of the wrapped optimizer stepping every parameter on one process.
"""
import copy
from itertools import chain

import numpy as np

from ... import dtypes
from ...autograd.grad_mode import no_grad
from ...ops.creation import from_numpy
from ...optim.optimizer import Optimizer
from ...tensor import Tensor
from .. import _group, _host, _write

__all__ = ["ZeroRedundancyOptimizer"]


class ZeroRedundancyOptimizer(Optimizer):
    """Wrap `optimizer_class` so that each rank of `process_group` (the default group when None)
    keeps the state of about 1/world_size of the parameters; `**defaults` go to the wrapped
    optimizer. `param_groups` are the groups over all parameters (learning-rate schedulers work
    on them); `optim` is this rank's local optimizer.

    `parameters_as_bucket_view` is accepted and changes nothing visible: each rank's shard is
    always sent as one message, and the parameters keep their own storage.
    `overlap_with_ddp=True` needs DDP communication hooks, which clgrad does not have
    (NotImplementedError).

    Run it on every rank, after `init_process_group` (here a one-rank group, as a sketch):

    >>> import clgrad, clgrad.distributed as dist
    >>> from clgrad.distributed.optim import ZeroRedundancyOptimizer
    >>> def train():                             # under clgrad.distributed.run, on each rank
    ...     model = clgrad.nn.parallel.DistributedDataParallel(clgrad.nn.Linear(4, 2))
    ...     opt = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=clgrad.optim.Adam,
    ...                                   lr=0.01)
    ...     model(clgrad.randn(8, 4)).sum().backward()
    ...     opt.step()
    ...     opt.consolidate_state_dict(to=0)
    ...     return opt.state_dict() if dist.get_rank() == 0 else None
    """

    def __init__(self, params, optimizer_class, process_group=None,
                 parameters_as_bucket_view=False, overlap_with_ddp=False, **defaults):
        if isinstance(params, Tensor):
            raise TypeError("`params` argument should be an iterable of Tensors, but got "
                            "clgrad.Tensor")
        try:
            params = list(params)
        except TypeError as e:
            raise TypeError("`params` argument should be an iterable of Tensors or dicts, but "
                            f"got {type(params).__name__}") from e
        if not params:
            raise ValueError("ZeroRedundancyOptimizer got an empty parameter list")
        if all(isinstance(p, dict) for p in params):
            for g in params:
                if "params" not in g:
                    raise ValueError("Each parameter group passed-in via `params` must have a "
                                     "'params' key mapping to the parameters in the group")
        elif not all(isinstance(p, Tensor) for p in params):
            raise TypeError("`params` argument should be an iterable of Tensors or dicts")
        if overlap_with_ddp:
            raise NotImplementedError("ZeroRedundancyOptimizer(overlap_with_ddp=True) runs the "
                                      "step inside a DDP communication hook; clgrad's "
                                      "DistributedDataParallel has no communication hooks")
        self.initialized = False        # add_param_group repartitions only once initialized
        Optimizer.__init__(self, params, defaults)
        self._all_params = list(chain.from_iterable(g["params"] for g in self.param_groups))
        dts = {(p.dtype, p.device) for p in self._all_params}
        if len(dts) > 1:
            raise ValueError("ZeroRedundancyOptimizer only supports using the same dense type "
                             f"for all parameters but got {sorted(map(str, dts))}")
        self.process_group = _group(process_group)
        self.world_size = self.process_group.size()
        self.rank = self.process_group.rank()
        self.global_rank = self.process_group.ranks[self.rank]
        self.parameters_as_bucket_view = parameters_as_bucket_view
        self._overlap_with_ddp = False
        self._optim_defaults = defaults
        self._optim_constructor = optimizer_class
        self._partition_cache = []
        self._all_state_dicts = []
        self.optim = optimizer_class(self._partition_parameters()[self.rank], **defaults)
        self._sync_param_groups(self.optim.param_groups, self.param_groups)
        self.initialized = True

    # ---- the partition -------------------------------------------------------------------
    def _partition_parameters(self):
        """[rank][group] -> a copy of the group holding that rank's parameters (torch's
        sorted-greedy partition: largest first, to the rank with the fewest elements)."""
        if not self._partition_cache:
            self._partition_cache = [[] for _ in range(self.world_size)]
            sizes = [0] * self.world_size
            for group in self.param_groups:
                per_rank = [[] for _ in range(self.world_size)]
                for p in sorted(group["params"], key=lambda t: t.numel(), reverse=True):
                    r = sizes.index(min(sizes))
                    per_rank[r].append(p)
                    sizes[r] += p.numel()
                for r, ps in enumerate(per_rank):
                    g = copy.copy(group)
                    g["params"] = ps
                    self._partition_cache[r].append(g)
        return self._partition_cache

    def _param_to_rank(self):
        return {id(p): r for r, groups in enumerate(self._partition_parameters())
                for g in groups for p in g["params"]}

    def _index_to_param(self):
        return list(chain.from_iterable(g["params"] for g in self.param_groups))

    @staticmethod
    def _sync_param_groups(src, dst):
        """Copy the options (everything but "params") of each group in src to dst's."""
        for s, d in zip(src, dst):
            for k, v in s.items():
                if k != "params":
                    d[k] = v

    def add_param_group(self, param_group):
        """Add a parameter group on every rank (call it on all ranks alike); the parameters are
        partitioned again and this rank's share of the new group joins the local optimizer."""
        super().add_param_group(param_group)
        if getattr(self, "initialized", False):
            self._all_params = self._index_to_param()
            self._partition_cache = []
            mine = self._partition_parameters()[self.rank]
            if len(mine) == len(self.optim.param_groups) + 1:
                self.optim.add_param_group(mine[-1])

    # ---- the step ------------------------------------------------------------------------
    def step(self, closure=None, **kwargs):
        """Step this rank's shard with the local optimizer, then broadcast every shard from its
        owner; returns the closure's loss, if any."""
        self._sync_param_groups(self.param_groups, self.optim.param_groups)
        loss = self.optim.step(**kwargs) if closure is None else \
            self.optim.step(closure=closure, **kwargs)
        self._sync_param_groups(self.optim.param_groups, self.param_groups)
        self._sync_params()
        return loss

    def _sync_params(self):
        with no_grad():
            for r, groups in enumerate(self._partition_parameters()):
                _broadcast_shard([p for g in groups for p in g["params"]], self.process_group, r)

    # ---- state dicts ---------------------------------------------------------------------
    def consolidate_state_dict(self, to=0):
        """Gather every rank's local optimizer state on rank `to` (call it on all ranks); then
        `state_dict()` on that rank returns the whole state."""
        self._sync_param_groups(self.param_groups, self.optim.param_groups)
        local = self.optim.state_dict()
        # MPI pickles the state; clgrad tensors are not picklable, so they travel as numpy
        # arrays and become tensors again on rank `to`, on the parameters' device
        got = self.process_group.comm.gather(_pack(local), root=to)
        dev = self._all_params[0].device
        self._all_state_dicts = [_unpack(s, dev) for s in got] if self.rank == to else []

    def state_dict(self):
        """The whole optimizer state in torch's format (indices over all parameters), as last
        consolidated on this rank. RuntimeError when this rank has not consolidated."""
        if not self._all_state_dicts:
            raise RuntimeError("Optimizer state has not been consolidated on this rank. Please "
                               f"call `consolidate_state_dict(to={self.rank})` on all ranks "
                               "beforehand if you meant to save the global state.")
        sd = super().state_dict()
        index = {id(p): i for i, p in enumerate(self._index_to_param())}
        for r, local in enumerate(self._all_state_dicts):
            for lg, gg in zip(local["param_groups"], self._partition_parameters()[r]):
                for li, p in zip(lg["params"], gg["params"]):
                    if li in local["state"]:
                        sd["state"][index[id(p)]] = local["state"][li]
        sd["state"] = dict(sorted(sd["state"].items()))
        return sd

    def load_state_dict(self, state_dict):
        """Load a whole state (from `state_dict()`): each rank keeps the state of its own
        shard, and every group's options."""
        params = self._index_to_param()
        mine = self._partition_parameters()[self.rank]
        local_index = {id(p): i for i, p in
                       enumerate(chain.from_iterable(g["params"] for g in mine))}
        local_state = {}
        for i, v in state_dict["state"].items():
            p = params[i]
            if id(p) in local_index:
                local_state[local_index[id(p)]] = v
        groups = []
        start = 0
        for saved, g in zip(state_dict["param_groups"], mine):
            lg = {k: v for k, v in saved.items() if k != "params"}
            lg["params"] = list(range(start, start + len(g["params"])))
            start += len(g["params"])
            groups.append(lg)
        if len(state_dict["param_groups"]) != len(self.param_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        self.optim.load_state_dict({"state": local_state, "param_groups": groups})
        self._sync_param_groups(state_dict["param_groups"], self.param_groups)
        self._sync_param_groups(self.param_groups, self.optim.param_groups)


def _broadcast_shard(tensors, group, root):
    """Broadcast rank `root`'s tensors to the group, one message per dtype: the owner reads its
    tensors to the host and writes nothing back; the others receive into empty buffers."""
    by_dtype = {}
    for t in tensors:
        by_dtype.setdefault(t.dtype, []).append(t)
    mine = group.rank() == root
    for dt, ts in by_dtype.items():
        if mine:
            flat = np.concatenate([_host(t).reshape(-1) for t in ts])
        else:             # 16-bit floats travel as float32, as _host sends them
            host_dt = np.float32 if dt in (dtypes.float16, dtypes.bfloat16) else dt.np
            flat = np.empty(sum(t.numel() for t in ts), host_dt)
        group.comm.Bcast(flat, root=root)
        if not mine:
            start = 0
            for t in ts:
                _write(t, flat[start:start + t.numel()])
                start += t.numel()


class _Packed:
    """A tensor's values in transit: a numpy array and the tensor's dtype."""

    def __init__(self, t):
        t = t.detach()
        self.dtype = t.dtype.name
        self.array = (t.float() if t.dtype.itemsize == 2 and t.is_floating_point() else t).numpy()


def _pack(obj):
    if isinstance(obj, Tensor):
        return _Packed(obj)
    if isinstance(obj, dict):
        return {k: _pack(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(_pack(v) for v in obj)
    return obj


def _unpack(obj, device):
    if isinstance(obj, _Packed):
        return from_numpy(obj.array.copy()).to(device=device, dtype=dtypes.BY_NAME[obj.dtype])
    if isinstance(obj, dict):
        return {k: _unpack(v, device) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(_unpack(v, device) for v in obj)
    return obj
