"""torch.profiler's interface over clgrad's profiler (clgrad.autograd.profiler): `profile` with
activities, a step `schedule`, `on_trace_ready` (e.g. `tensorboard_trace_handler`), `step()`,
`record_function`, `key_averages().table(...)` and `export_chrome_trace`.

Activities: `ProfilerActivity.CPU` records host time per op, backward node and record_function
block; `ProfilerActivity.CUDA` (or XPU / PrivateUse1: clgrad's devices are all OpenCL devices)
adds the device time of every kernel, read from OpenCL profiling events through the launch
chokepoint (`clgrad.runtime.kernels.launch_hooks`) and charged to the op that launched it.
profile_memory, with_stack, with_flops and with_modules are accepted and record nothing more.

>>> import clgrad
>>> from clgrad.profiler import profile, record_function, ProfilerActivity
>>> x = clgrad.ones(64, requires_grad=True)
>>> with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
...     with record_function("model_inference"):
...         (x.exp() * 2).sum().backward()
>>> rows = {e.key: e for e in prof.key_averages()}
>>> rows["model_inference"].count, rows["clgrad::exp"].device_time_total > 0
(1, True)
"""
import enum
import gzip
import os
import socket
import time
import warnings

from .autograd import profiler as _autograd_profiler
from .autograd.profiler import EventList, record_function  # noqa: F401

__all__ = ["profile", "record_function", "schedule", "tensorboard_trace_handler", "DeviceType",
           "kineto_available",
           "ProfilerActivity", "ProfilerAction", "supported_activities", "ExecutionTraceObserver",
           "_KinetoProfile"]


class ProfilerActivity(enum.Enum):
    """What to record: CPU (host spans) and a device kind (kernels on clgrad's devices)."""
    CPU = 0
    XPU = 1
    MTIA = 2
    CUDA = 3
    HPU = 4
    PrivateUse1 = 5


_DEVICE_ACTIVITIES = (ProfilerActivity.CUDA, ProfilerActivity.XPU, ProfilerActivity.PrivateUse1)


class DeviceType(enum.Enum):
    """torch's device types, as profiler events name them."""
    CPU = 0
    CUDA = 1
    MKLDNN = 2
    OPENGL = 3
    OPENCL = 4
    IDEEP = 5
    HIP = 6
    FPGA = 7
    MAIA = 8
    XLA = 9
    Vulkan = 10
    Metal = 11
    XPU = 12
    MPS = 13
    MTIA = 14
    Meta = 15
    HPU = 16
    VE = 17
    Lazy = 18
    IPU = 19
    PrivateUse1 = 20


def kineto_available():
    """False: clgrad's profiler is its own (host spans and OpenCL events), not Kineto.

    >>> import clgrad
    >>> clgrad.profiler.kineto_available()
    False
    """
    return False


def supported_activities():
    """CPU and CUDA: clgrad's kernel times come from any OpenCL device.

    >>> from clgrad.profiler import supported_activities, ProfilerActivity
    >>> ProfilerActivity.CUDA in supported_activities()
    True
    """
    return {ProfilerActivity.CPU, ProfilerActivity.CUDA}


class ProfilerAction(enum.Enum):
    """What the profiler does at a step (a schedule's answer)."""
    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def schedule(*, wait, warmup, active, repeat=0, skip_first=0, skip_first_wait=0):
    """torch.profiler.schedule: skip `skip_first` steps, then cycles of `wait` idle steps,
    `warmup` steps and `active` recorded steps (the last one RECORD_AND_SAVE: on_trace_ready
    runs after it), `repeat` times (0: until the profile ends).

    >>> from clgrad.profiler import schedule
    >>> s = schedule(wait=1, warmup=1, active=2, repeat=1)
    >>> [s(i).name for i in range(5)]
    ['NONE', 'WARMUP', 'RECORD', 'RECORD_AND_SAVE', 'NONE']
    """
    def schedule_fn(step):
        if step < 0:
            raise AssertionError(f"Step must be non-negative. Got {step}.")
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if skip_first_wait != 0:
            step += wait
        num_steps = wait + warmup + active
        if repeat > 0 and step / num_steps >= repeat:
            return ProfilerAction.NONE
        mod_step = step % num_steps
        if mod_step < wait:
            return ProfilerAction.NONE
        if mod_step < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if mod_step < num_steps - 1 else \
            ProfilerAction.RECORD_AND_SAVE

    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise AssertionError(
            f"Invalid profiler schedule arguments. Got wait={wait} (need >= 0), warmup={warmup} "
            f"(need >= 0), active={active} (need > 0), repeat={repeat} (need >= 0), "
            f"skip_first={skip_first} (need >= 0).")
    if warmup == 0:
        warnings.warn("Profiler won't be using warmup, this can skew profiler results",
                      stacklevel=2)
    return schedule_fn


def _default_schedule_fn(_):
    return ProfilerAction.RECORD


def tensorboard_trace_handler(dir_name, worker_name=None, use_gzip=False,
                             use_python_export=False):
    """An on_trace_ready that writes each trace to `dir_name` as
    `<worker_name>.<time_ns>.pt.trace.json[.gz]` (worker_name: "<hostname>_<pid>"), the files
    TensorBoard's profiler plugin reads from a log dir.

    >>> import os, tempfile, clgrad
    >>> from clgrad.profiler import profile, tensorboard_trace_handler
    >>> logdir = tempfile.mkdtemp()
    >>> with profile(on_trace_ready=tensorboard_trace_handler(logdir, "w0")):
    ...     _ = clgrad.ones(3) + 1
    >>> [f.endswith(".pt.trace.json") and f.startswith("w0.") for f in os.listdir(logdir)]
    [True]
    """
    def handler_fn(prof):
        nonlocal worker_name
        if not os.path.isdir(dir_name):
            try:
                os.makedirs(dir_name, exist_ok=True)
            except Exception as e:
                raise RuntimeError("Can't create directory: " + dir_name) from e
        if not worker_name:
            worker_name = f"{socket.gethostname()}_{os.getpid()}"
        file_name = f"{worker_name}.{time.time_ns()}.pt.trace.json"
        if use_gzip:
            file_name += ".gz"
        prof.export_chrome_trace(os.path.join(dir_name, file_name))
    return handler_fn


class _KinetoProfile:
    """Recording windows over clgrad.autograd.profiler.profile: start_trace opens one,
    stop_trace closes it; the last closed window answers key_averages, events and exports."""

    def __init__(self, *, activities=None, record_shapes=False, profile_memory=False,
                 with_stack=False, with_flops=False, with_modules=False,
                 experimental_config=None, execution_trace_observer=None, acc_events=False,
                 custom_trace_id_callback=None):
        self.activities = set(activities) if activities else supported_activities()
        unknown = [a for a in self.activities if not isinstance(a, ProfilerActivity)]
        if unknown:
            raise ValueError(f"activities must be ProfilerActivity values, got {unknown}")
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_flops = with_flops
        self.with_modules = with_modules
        self.profiler = None          # the window now open, or the last one closed
        self._open = False

    def prepare_trace(self):
        device = any(a in _DEVICE_ACTIVITIES for a in self.activities)
        self.profiler = _autograd_profiler.profile(
            use_device="cl" if device else None, record_shapes=self.record_shapes,
            profile_memory=self.profile_memory, with_stack=self.with_stack)

    def start_trace(self):
        if self.profiler is None:
            self.prepare_trace()
        self.profiler.__enter__()
        self._open = True

    def stop_trace(self):
        if self._open:
            self.profiler.__exit__(None, None, None)
            self._open = False

    def start(self):
        self.prepare_trace()
        self.start_trace()

    def stop(self):
        self.stop_trace()

    def _finished(self):
        if self.profiler is None or self._open:
            raise RuntimeError("Profiler didn't finish running")
        return self.profiler

    def events(self):
        """The events of the last recording window (an EventList)."""
        return self._finished().function_events

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0,
                     group_by_overload_name=False):
        """One row per op name (and input shapes), with host and device totals."""
        return self._finished().key_averages(group_by_input_shape, group_by_stack_n)

    def export_chrome_trace(self, path):
        """Chrome trace-event JSON of the last window (a path ending in .gz is gzipped)."""
        prof = self._finished()
        if not str(path).endswith(".gz"):
            return prof.export_chrome_trace(path)
        tmp = f"{path}.tmp.json"
        prof.export_chrome_trace(tmp)
        with open(tmp, "rb") as src, gzip.open(path, "wb") as dst:
            dst.write(src.read())
        os.unlink(tmp)

    def export_stacks(self, path, metric="self_cpu_time_total"):
        raise NotImplementedError("clgrad's profiler does not record stacks (with_stack is "
                                  "accepted and records nothing more)")


class profile(_KinetoProfile):
    """torch.profiler.profile: a context manager (or start()/stop()) that records what runs,
    following `schedule` as `step()` is called (no schedule: everything from start to stop), and
    calls `on_trace_ready(prof)` at the end of each recorded cycle. With a schedule each step is
    a "ProfilerStep#N" span.

    >>> import clgrad
    >>> from clgrad.profiler import profile, schedule, ProfilerActivity
    >>> traces = []
    >>> with profile(activities=[ProfilerActivity.CPU],
    ...              schedule=schedule(wait=1, warmup=1, active=2, repeat=1),
    ...              on_trace_ready=lambda p: traces.append(p.key_averages())) as prof:
    ...     for step in range(5):
    ...         _ = clgrad.ones(2) * step
    ...         prof.step()
    >>> len(traces), sorted(e.key for e in traces[0] if e.key.startswith("Profiler"))
    (1, ['ProfilerStep#2', 'ProfilerStep#3'])
    >>> print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=2))  # doctest: +ELLIPSIS
    -...
    """

    def __init__(self, *, activities=None, schedule=None, on_trace_ready=None,
                 record_shapes=False, profile_memory=False, with_stack=False, with_flops=False,
                 with_modules=False, experimental_config=None, execution_trace_observer=None,
                 acc_events=False, use_cuda=None, custom_trace_id_callback=None):
        if use_cuda is not None:
            warnings.warn("The use_cuda parameter is deprecated, use activities instead",
                          FutureWarning, stacklevel=2)
            if use_cuda:
                activities = set(activities or {ProfilerActivity.CPU}) | {ProfilerActivity.CUDA}
        super().__init__(activities=activities, record_shapes=record_shapes,
                         profile_memory=profile_memory, with_stack=with_stack,
                         with_flops=with_flops, with_modules=with_modules)
        if schedule is not None:
            self.schedule, self.record_steps = schedule, True
        else:
            self.schedule, self.record_steps = _default_schedule_fn, False
        self.on_trace_ready = on_trace_ready
        self.step_num = 0
        self.current_action = self.schedule(self.step_num)
        self.step_rec_fn = None
        A = ProfilerAction
        self.action_map = {
            (A.NONE, A.NONE): [],
            (A.NONE, A.WARMUP): [self.prepare_trace],
            (A.NONE, A.RECORD): [self.prepare_trace, self.start_trace],
            (A.NONE, A.RECORD_AND_SAVE): [self.prepare_trace, self.start_trace],
            (A.WARMUP, A.NONE): [lambda: warnings.warn(
                "Incorrect schedule: WARMUP followed by NONE"), self.start_trace,
                self.stop_trace],
            (A.WARMUP, A.WARMUP): [],
            (A.WARMUP, A.RECORD): [self.start_trace],
            (A.WARMUP, A.RECORD_AND_SAVE): [self.start_trace],
            (A.RECORD, A.NONE): [lambda: warnings.warn(
                "Incorrect schedule: RECORD followed by NONE"), self.stop_trace],
            (A.RECORD, A.WARMUP): [lambda: warnings.warn(
                "Incorrect schedule: RECORD followed by WARMUP"), self.stop_trace],
            (A.RECORD, A.RECORD): [],
            (A.RECORD, A.RECORD_AND_SAVE): [],
            (A.RECORD_AND_SAVE, A.NONE): [self.stop_trace, self._trace_ready],
            (A.RECORD_AND_SAVE, A.WARMUP): [self.stop_trace, self._trace_ready,
                                            self.prepare_trace],
            (A.RECORD_AND_SAVE, A.RECORD): [self.stop_trace, self._trace_ready,
                                            self.prepare_trace, self.start_trace],
            (A.RECORD_AND_SAVE, A.RECORD_AND_SAVE): [self.stop_trace, self._trace_ready,
                                                     self.prepare_trace, self.start_trace],
            (A.WARMUP, None): [self.start_trace, self.stop_trace],
            (A.RECORD, None): [self.stop_trace, self._trace_ready],
            (A.RECORD_AND_SAVE, None): [self.stop_trace, self._trace_ready],
        }

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        self.stop()
        return False

    def start(self):
        self._transit_action(ProfilerAction.NONE, self.current_action)
        if self.record_steps:
            self.step_rec_fn = record_function("ProfilerStep#" + str(self.step_num))
            self.step_rec_fn.__enter__()

    def stop(self):
        if self.record_steps and self.step_rec_fn:
            self.step_rec_fn.__exit__(None, None, None)
            self.step_rec_fn = None
        self._transit_action(self.current_action, None)

    def step(self):
        """The next training step starts: follow the schedule."""
        if self.record_steps and self.step_rec_fn:
            self.step_rec_fn.__exit__(None, None, None)
            self.step_rec_fn = None
        prev_action = self.current_action
        self.step_num += 1
        self.current_action = self.schedule(self.step_num)
        self._transit_action(prev_action, self.current_action)
        if self.record_steps:
            self.step_rec_fn = record_function("ProfilerStep#" + str(self.step_num))
            self.step_rec_fn.__enter__()

    def _trace_ready(self):
        if self.on_trace_ready:
            self.on_trace_ready(self)

    def _transit_action(self, prev_action, current_action):
        for action in self.action_map.get((prev_action, current_action), []):
            action()


class ExecutionTraceObserver:
    """torch's execution-trace observer: clgrad records no execution graph."""

    def __init__(self, *args, **kwargs):
        raise NotImplementedError("clgrad.profiler has no execution trace observer; use "
                                  "export_chrome_trace for the op and kernel timeline")
