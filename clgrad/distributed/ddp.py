"""DistributedDataParallel: data-parallel training over the ranks of a process group.

At construction the parameters and buffers are broadcast from rank 0 (one coalesced message),
so every rank starts from the same model. Gradients are averaged in buckets of about
`bucket_cap_mb` (torch's 25 MiB; the first bucket 1 MiB, so communication starts early), filled
in reverse parameter order, which is roughly the order backward produces them. A hook on each
parameter's gradient accumulation marks it ready; when a bucket is complete (and every bucket
before it has started), its gradients are flattened on the device, copied to the host and handed
to a non-blocking MPI all-reduce, which proceeds while backward goes on. When the last bucket
has started, the hook waits for all of them and writes the averaged gradients back.
"""
import contextlib

import numpy as np

from ..autograd.grad_mode import no_grad
from ..nn.modules.module import Module
from . import _group, _host, _mpi, _write
from ..ops.join import cat
from ..tensor import Tensor

FIRST_BUCKET_BYTES = 1 << 20


def _broadcast_coalesced(tensors, group, src=0):
    """Broadcast many tensors from src in one message (grouped by dtype)."""
    by_dtype = {}
    for t in tensors:
        by_dtype.setdefault(t.dtype, []).append(t)
    root = group.ranks.index(src)
    for _dt, ts in by_dtype.items():
        hosts = [_host(t).reshape(-1) for t in ts]
        flat = np.concatenate(hosts) if hosts else np.zeros(0)
        group.comm.Bcast(flat, root=root)
        start = 0
        for t, h in zip(ts, hosts):
            _write(t, flat[start:start + h.size])
            start += h.size


class DistributedDataParallel(Module):
    """Wrap a module for data-parallel training: each rank runs it on its share of the batch and
    the gradients are averaged over the ranks during backward. `module` is the wrapped module
    (so state_dict keys start with "module.", as in torch).

    Arguments as torch's; `device_ids` and `output_device` are accepted (each rank already runs
    on its own device), `gradient_as_bucket_view` and `static_graph` are accepted and change
    nothing.
    """

    def __init__(self, module, device_ids=None, output_device=None, dim=0,
                 broadcast_buffers=True, process_group=None, bucket_cap_mb=None,
                 find_unused_parameters=False, check_reduction=False,
                 gradient_as_bucket_view=False, static_graph=False, **kwargs):
        super().__init__()
        self.module = module
        self.process_group = _group(process_group)
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.require_backward_grad_sync = True
        cap = int((25 if bucket_cap_mb is None else bucket_cap_mb) * (1 << 20))
        self._params = [p for p in module.parameters() if p.requires_grad]
        if not self._params:
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't "
                               "have any parameter that requires a gradient.")
        with no_grad():
            _broadcast_coalesced(list(module.parameters()) + list(module.buffers()),
                                 self.process_group)
        self._buckets = self._make_buckets(cap)
        self._bucket_of = {}
        for b, bucket in enumerate(self._buckets):
            for i in bucket:
                self._bucket_of[i] = b
        self._hooks = [p.register_post_accumulate_grad_hook(self._make_hook(i))
                       for i, p in enumerate(self._params)]
        self._reset()
        self._expect_reduction = False

    # ---- buckets --------------------------------------------------------------------------
    def _make_buckets(self, cap):
        buckets, current, size = [], [], 0
        limit = min(FIRST_BUCKET_BYTES, cap)
        for i in reversed(range(len(self._params))):
            p = self._params[i]
            nbytes = p.numel() * p.dtype.itemsize
            if current and (size + nbytes > limit or p.dtype is not self._params[current[0]].dtype):
                buckets.append(current)
                current, size, limit = [], 0, cap
            current.append(i)
            size += nbytes
        if current:
            buckets.append(current)
        return buckets

    def _reset(self):
        self._ready = [0] * len(self._buckets)
        self._seen = set()
        self._next = 0                 # the next bucket to start: all ranks start them in order
        self._pending = []             # (bucket, MPI request, host result, host source)

    def _make_hook(self, i):
        def hook(param):
            if not self.require_backward_grad_sync or i in self._seen:
                return
            self._seen.add(i)
            self._ready[self._bucket_of[i]] += 1
            self._launch_ready()
        return hook

    def _launch_ready(self):
        while self._next < len(self._buckets) and \
                self._ready[self._next] == len(self._buckets[self._next]):
            self._launch(self._next)
            self._next += 1
        for _b, req, _out, _host_buf in self._pending:   # let MPI progress the ones in flight
            req.Test()
        if self._next == len(self._buckets):
            self._finish()

    def _launch(self, b):
        ps = [self._params[i] for i in self._buckets[b]]
        with no_grad():
            parts = [(p.grad if p.grad is not None else p.new_zeros(p.shape)).reshape(-1)
                     for p in ps]
            flat = parts[0] if len(parts) == 1 else _cat(parts)
        host = _host(flat)
        out = np.empty_like(host)
        req = self.process_group.comm.Iallreduce(host, out, op=_mpi().SUM)
        # host is read by MPI until the request completes: keep it alive with the request
        self._pending.append((b, req, out, host))

    def _finish(self):
        n = self.process_group.size()
        for b, req, out, _host_buf in self._pending:
            req.Wait()
            out /= n
            start = 0
            with no_grad():
                for i in self._buckets[b]:
                    p = self._params[i]
                    k = p.numel()
                    vals = out[start:start + k]
                    start += k
                    if p.grad is None:
                        p.grad = p.new_zeros(p.shape)
                    _write(p.grad, vals)
        self._reset()
        self._expect_reduction = False

    # ---- forward --------------------------------------------------------------------------
    def forward(self, *inputs, **kwargs):
        if self._expect_reduction and self._seen:
            raise RuntimeError(
                "Expected to have finished reduction in the prior iteration before starting a new "
                "one. This error indicates that your module has parameters that were not used in "
                "producing loss. You can enable unused parameter detection by passing the keyword "
                "argument `find_unused_parameters=True` to `DistributedDataParallel`.")
        self._reset()
        if self.broadcast_buffers:
            bufs = list(self.module.buffers())
            if bufs:
                with no_grad():
                    _broadcast_coalesced(bufs, self.process_group)
        out = self.module(*inputs, **kwargs)
        self._expect_reduction = self.require_backward_grad_sync
        if self.find_unused_parameters and self.require_backward_grad_sync:
            used = _reachable_params(out)
            for i, p in enumerate(self._params):
                if id(p) not in used:                    # contributes zeros, like torch
                    self._seen.add(i)
                    self._ready[self._bucket_of[i]] += 1
        return out

    @contextlib.contextmanager
    def no_sync(self):
        """Within this block gradients accumulate locally, without communication; the first
        backward after it averages the accumulated gradients."""
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old


def _cat(parts):
    return cat(parts)


def _reachable_params(out):
    """ids of the leaf tensors that the graph of `out` (tensors in any nesting) reaches."""
    roots, stack, seen, leaves = [], [], set(), set()

    def collect(o):
        if isinstance(o, Tensor):
            roots.append(o)
        elif isinstance(o, (list, tuple)):
            for x in o:
                collect(x)
        elif isinstance(o, dict):
            for x in o.values():
                collect(x)
    collect(out)
    for t in roots:
        if t.grad_fn is not None:
            stack.append(t.grad_fn)
        elif t.requires_grad:
            leaves.add(id(t))
    while stack:
        fn = stack.pop()
        if fn is None or id(fn) in seen:
            continue
        seen.add(id(fn))
        var = getattr(fn, "variable", None)
        if var is not None:
            leaves.add(id(var))
        for nxt, _ in getattr(fn, "next_functions", ()):
            if nxt is not None:
                stack.append(nxt)
    return leaves

