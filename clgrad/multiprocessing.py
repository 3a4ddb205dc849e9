"""torch.multiprocessing's interface: Python's multiprocessing, with clgrad tensors passed
between processes, and `spawn` / `start_processes`.

What is shared and when copies happen. OpenCL buffers belong to one process's context and cannot
be shared with another process, so nothing of a tensor is shared: a tensor that crosses a process
boundary (an argument of `Process` / `spawn`, an item put on a `Queue` or sent through a `Pipe`)
is copied to the host at the moment it is pickled (at `start()`, at `put()`), sent by value, and
rebuilt in the receiving process on that process's default device, with its dtype, requires_grad
and Parameter class. `spawn()` does this for the tensors in `args` (also inside lists, tuples and
dicts) with every start method; a `Process` started with "fork" inherits its arguments instead,
and a device tensor inherited that way cannot be read in the child: pass it through a Queue. `Tensor.share_memory_()` and `Module.share_memory()` are accepted and change
nothing (`is_shared()` stays False): an in-place update made in one process is not seen by the
others, so Hogwild-style training (workers updating one shared model) trains separate copies;
send state dicts or gradients through a Queue to combine them.

Start methods. A process started with "spawn" or "forkserver" is new and uses OpenCL devices
like any program. A process forked from one that has already used OpenCL cannot use it (the
driver's state does not survive fork): such a child runs in clgrad's host mode (clgrad/_host.py:
tensors live in host memory and support creation, views, casts, arithmetic and reading values;
other ops raise). `spawn()` uses "spawn" by default, as torch does.

>>> import clgrad.multiprocessing as mp
>>> mp.get_start_method(allow_none=True) in (None, "fork", "spawn", "forkserver")
True
"""
import multiprocessing
import multiprocessing.connection
import os
import signal
import sys
import traceback
from multiprocessing import (  # noqa: F401  (torch.multiprocessing re-exports multiprocessing)
    Array, Barrier, BoundedSemaphore, Condition, Event, JoinableQueue, Lock, Manager, Pipe, Pool,
    Process, Queue, RLock, Semaphore, SimpleQueue, Value, active_children, cpu_count,
    current_process, freeze_support, get_all_start_methods, get_context, get_start_method,
    parent_process, set_executable, set_forkserver_preload, set_start_method)
from multiprocessing import (  # noqa: F401
    AuthenticationError, BufferTooShort, ProcessError, RawArray, RawValue, TimeoutError,
    get_logger, log_to_stderr, reducer)
from multiprocessing.reduction import ForkingPickler

from . import _host
from .runtime import device as _dmod
from .tensor import Tensor
from .nn.parameter import Parameter

__all__ = ["spawn", "start_processes", "ProcessContext", "SpawnContext",
           "ProcessRaisedException", "ProcessExitedException", "get_sharing_strategy",
           "set_sharing_strategy", "get_all_sharing_strategies", "Process", "Queue",
           "SimpleQueue", "Pipe", "Pool", "get_context", "set_start_method",
           "get_start_method", "get_all_start_methods", "cpu_count", "current_process"]


# ---- tensors between processes -----------------------------------------------------------------
def _rebuild_tensor(packed):
    # a host tensor reaching a process that has not touched OpenCL stays on the host (a
    # DataLoader worker started with "spawn" receives its dataset's tensors so); any other
    # tensor goes to the receiving process's default device
    if packed.host and _dmod._devices is None:
        return packed.unpack(_host.HOST)
    return packed.unpack()


def _reduce_tensor(t):
    """How multiprocessing pickles a tensor: its values, by value (see the module docstring)."""
    return (_rebuild_tensor, (_host.Packed(t),))


ForkingPickler.register(Tensor, _reduce_tensor)
ForkingPickler.register(Parameter, _reduce_tensor)


def _after_fork_in_child():
    # a child forked from a process that has OpenCL contexts must not use them
    if _dmod._devices:
        _host.enter_host_mode()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def allow_connection_pickling():
    """Kept for torch's API: connections pickle already (Python 3's multiprocessing)."""


# ---- sharing strategies: accepted, as there is no shared memory to choose a way for ------------
_sharing_strategy = "file_descriptor"


def get_all_sharing_strategies():
    """torch's names; clgrad copies tensors between processes whatever is chosen.

    >>> import clgrad.multiprocessing as mp
    >>> sorted(mp.get_all_sharing_strategies())
    ['file_descriptor', 'file_system']
    """
    return {"file_descriptor", "file_system"}


def get_sharing_strategy():
    return _sharing_strategy


def set_sharing_strategy(new_strategy):
    global _sharing_strategy
    if new_strategy not in get_all_sharing_strategies():
        raise ValueError(f"Unsupported sharing strategy: {new_strategy}")
    _sharing_strategy = new_strategy


# ---- spawn -------------------------------------------------------------------------------------
class ProcessException(Exception):
    __slots__ = ["error_index", "error_pid"]

    def __init__(self, msg, error_index, pid):
        super().__init__(msg)
        self.msg, self.error_index, self.pid = msg, error_index, pid

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.pid)


class ProcessRaisedException(ProcessException):
    """A spawned process raised an exception: the message holds its traceback."""


class ProcessExitedException(ProcessException):
    """A spawned process exited with a non-zero code (or was killed by a signal)."""

    __slots__ = ["exit_code", "signal_name"]

    def __init__(self, msg, error_index, error_pid, exit_code, signal_name=None):
        super().__init__(msg, error_index, error_pid)
        self.exit_code, self.signal_name = exit_code, signal_name

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.pid, self.exit_code,
                            self.signal_name)


def _wrap(fn, i, args, error_queue):
    try:
        fn(i, *_host.unpack(args))
    except KeyboardInterrupt:
        pass
    except Exception:
        error_queue.put(traceback.format_exc())
        sys.exit(1)


class ProcessContext:
    """The processes `start_processes(join=False)` started; `join()` waits for them."""

    def __init__(self, processes, error_queues):
        self.processes, self.error_queues = processes, error_queues
        self.sentinels = {p.sentinel: i for i, p in enumerate(processes)}

    def pids(self):
        return [int(p.pid) for p in self.processes]

    def join(self, timeout=None):
        """Wait for one process to end; True when all have ended. A process that failed
        raises ProcessRaisedException (its traceback) or ProcessExitedException, after the
        others are terminated, as torch does."""
        if not self.sentinels:
            return True
        ready = multiprocessing.connection.wait(self.sentinels.keys(), timeout=timeout)
        error_index = None
        for sentinel in ready:
            index = self.sentinels.pop(sentinel)
            p = self.processes[index]
            p.join()
            if p.exitcode != 0:
                error_index = index
                break
        if error_index is None:
            return not self.sentinels
        for p in self.processes:
            if p.is_alive():
                p.terminate()
            p.join()
        q = self.error_queues[error_index]
        failed = self.processes[error_index]
        if q.empty():
            code = failed.exitcode
            if code < 0:
                name = signal.Signals(-code).name
                raise ProcessExitedException(
                    f"process {error_index} terminated with signal {name}", error_index,
                    failed.pid, code, name)
            raise ProcessExitedException(f"process {error_index} terminated with exit code "
                                         f"{code}", error_index, failed.pid, code)
        msg = f"\n\n-- Process {error_index} terminated with the following error:\n" + q.get()
        raise ProcessRaisedException(msg, error_index, failed.pid)


SpawnContext = ProcessContext


def start_processes(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """Start nprocs processes running fn(i, *args), i = 0 .. nprocs-1, with `start_method`;
    with join, wait for all of them (an exception in one is raised here, with its traceback),
    else return their ProcessContext."""
    ctx = multiprocessing.get_context(start_method)
    # tensors among the arguments go by value whatever the start method (a forked child cannot
    # read its parent's device memory)
    args = _host.pack(tuple(args))
    error_queues, processes = [], []
    for i in range(nprocs):
        q = ctx.SimpleQueue()
        p = ctx.Process(target=_wrap, args=(fn, i, args, q), daemon=daemon)
        p.start()
        error_queues.append(q)
        processes.append(p)
    context = ProcessContext(processes, error_queues)
    if not join:
        return context
    while not context.join():
        pass


def spawn(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """torch.multiprocessing.spawn: run fn(i, *args) in nprocs new processes.

    >>> import clgrad, clgrad.multiprocessing as mp
    >>> q = mp.get_context("fork").SimpleQueue()
    >>> def work(i, q):
    ...     q.put((i, clgrad.tensor([i]) * 10))
    >>> mp.spawn(work, args=(q,), nprocs=2, start_method="fork")
    >>> sorted((i, t.tolist()) for i, t in (q.get(), q.get()))
    [(0, [0]), (1, [10])]
    """
    return start_processes(fn, args, nprocs, join, daemon, start_method)
