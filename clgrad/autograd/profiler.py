"""The profiler, as torch.autograd.profiler has it: host time per op (and per backward node and
`record_function` block), device time per kernel from OpenCL profiling events, each kernel
charged to the op that launched it.

>>> import clgrad
>>> from clgrad.autograd import profiler
>>> x = clgrad.ones(64, requires_grad=True)
>>> with profiler.profile(use_device="cl") as prof:
...     with profiler.record_function("step"):
...         (x.exp() * 2).sum().backward()
>>> rows = {e.key: e for e in prof.key_averages()}
>>> rows["clgrad::exp"].count, rows["step"].count, "MulBackward0" in rows
(1, 1, True)
>>> print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=5))  # doctest: +ELLIPSIS
-...
                                     Name    Self CPU %      Self CPU ...
...

While the profiler is on, built-in ops run through `function.hooks.op` (it is None otherwise, so
the op path pays one check), backward nodes through `hooks.node`, and every kernel launch calls
`runtime.kernels.launch_hooks` with its event. Device timestamps are moved onto the host clock
with the offset between each kernel's enqueue on the host and its QUEUED timestamp on the device.
"""
import functools
import json
import os
import re
import threading
import time
from collections import OrderedDict

from ..runtime import device as _device
from ..runtime import kernels as _kernels
from ..tensor import Tensor
from . import function as F

__all__ = ["profile", "record_function", "EventList", "FunctionEvent", "FunctionEventAvg"]

_now = time.perf_counter_ns


# ---- events --------------------------------------------------------------------------------------
class FunctionEvent:
    """One op, backward node, record_function block (host spans) or kernel (a device span).
    Times are in microseconds, as torch reports them."""

    def __init__(self, name, start_ns, parent=None, input_shapes=None, thread=0,
                 device_type="cpu", is_user_annotation=False):
        self.name = self.key = name
        self.start_ns = start_ns
        self.end_ns = start_ns
        self.cpu_parent = parent
        self.cpu_children = []
        self.kernels = []               # kernels this span launched itself
        self.input_shapes = input_shapes if input_shapes is not None else []
        self.thread = thread
        self.device_type = device_type
        self.is_user_annotation = is_user_annotation
        self.count = 1
        self.id = None

    @property
    def cpu_time_total(self):
        return 0.0 if self.device_type != "cpu" else (self.end_ns - self.start_ns) / 1e3

    @property
    def self_cpu_time_total(self):
        return self.cpu_time_total - sum(c.cpu_time_total for c in self.cpu_children)

    @property
    def device_time_total(self):
        if self.device_type != "cpu":
            return (self.end_ns - self.start_ns) / 1e3
        return sum(k.device_time_total for k in self.kernels) + \
            sum(c.device_time_total for c in self.cpu_children)

    @property
    def self_device_time_total(self):
        return self.device_time_total if self.device_type != "cpu" else 0.0

    cpu_time = cpu_time_total
    device_time = device_time_total
    cuda_time = device_time_total
    cuda_time_total = device_time_total
    self_cuda_time_total = self_device_time_total

    def __repr__(self):
        return (f"<FunctionEvent {self.name} cpu_time_total={_format_time(self.cpu_time_total)} "
                f"device_time_total={_format_time(self.device_time_total)}>")


class FunctionEventAvg:
    """The events of one key (name, and input shapes when grouped by them) added up."""

    def __init__(self, key, input_shapes=None):
        self.key = key
        self.input_shapes = input_shapes
        self.count = 0
        self.cpu_time_total = 0.0
        self.self_cpu_time_total = 0.0
        self.device_time_total = 0.0
        self.self_device_time_total = 0.0
        self.is_top_level = False
        self.device_type = "cpu"

    def add(self, evt):
        self.count += evt.count
        self.cpu_time_total += evt.cpu_time_total
        self.self_cpu_time_total += evt.self_cpu_time_total
        self.device_time_total += evt.device_time_total
        self.self_device_time_total += evt.self_device_time_total
        self.device_type = evt.device_type
        if getattr(evt, "cpu_parent", None) is None:
            self.is_top_level = True
        return self

    @property
    def cpu_time(self):
        return self.cpu_time_total / self.count if self.count else 0.0

    @property
    def device_time(self):
        return self.device_time_total / self.count if self.count else 0.0

    cuda_time = device_time

    @property
    def cuda_time_total(self):
        return self.device_time_total

    @property
    def self_cuda_time_total(self):
        return self.self_device_time_total

    def __repr__(self):
        return (f"<FunctionEventAvg key={self.key} count={self.count} "
                f"cpu_time_total={_format_time(self.cpu_time_total)} "
                f"self_cpu_time_total={_format_time(self.self_cpu_time_total)} "
                f"device_time_total={_format_time(self.device_time_total)}>")


def _format_time(us):
    if us >= 1e6:
        return f"{us / 1e6:.3f}s"
    if us >= 1e3:
        return f"{us / 1e3:.3f}ms"
    return f"{us:.3f}us"


class EventList(list):
    """A list of events (or of averages) with torch's table and export.

    >>> import clgrad
    >>> from clgrad.autograd import profiler
    >>> with profiler.profile() as prof:
    ...     _ = clgrad.ones(3) * 2
    >>> events = prof.function_events
    >>> [e.key for e in events.key_averages()], events.total_average().count
    (['clgrad::mul'], 1)
    """

    def __init__(self, events=(), use_device=None, profiler=None):
        super().__init__(events)
        self._use_device = use_device
        self._profiler = profiler

    @property
    def self_cpu_time_total(self):
        return sum(e.self_cpu_time_total for e in self)

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0,
                     group_by_overload_name=False):
        """One FunctionEventAvg per name (and per input shapes, if asked)."""
        avgs = OrderedDict()
        for e in self:
            key = (e.key, str(e.input_shapes)) if group_by_input_shape else e.key
            if key not in avgs:
                avgs[key] = FunctionEventAvg(e.key, e.input_shapes if group_by_input_shape
                                             else None)
            avgs[key].add(e)
        return EventList(avgs.values(), self._use_device, self._profiler)

    def total_average(self):
        """All events added up, as one FunctionEventAvg keyed "Total"."""
        total = FunctionEventAvg("Total")
        for e in self:
            total.add(e)
        total.key = "Total"
        return total

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75,
              max_name_column_width=55, max_shapes_column_width=80, header=None,
              top_level_events_only=False):
        """The events as text, sorted by an attribute (descending): "self_cpu_time_total",
        "cpu_time_total", "device_time_total", "self_device_time_total", "cpu_time",
        "device_time", "count" (torch's "cuda_*" names work too)."""
        return _table(self, sort_by, row_limit, max_name_column_width, max_shapes_column_width,
                      header, top_level_events_only, self._use_device)

    def export_chrome_trace(self, path):
        if self._profiler is None:
            raise RuntimeError("export_chrome_trace needs the profiler's own event list")
        self._profiler.export_chrome_trace(path)


def _table(events, sort_by, row_limit, name_width, shapes_width, header, top_level_only,
           use_device):
    rows = list(events)
    if top_level_only:
        rows = [e for e in rows if getattr(e, "is_top_level", getattr(e, "cpu_parent", 1) is None)]
    if sort_by is not None:
        attr = sort_by.replace("cuda", "device")
        rows.sort(key=lambda e: getattr(e, attr), reverse=True)
    if row_limit is not None and row_limit > 0:
        rows = rows[:row_limit]
    total_self_cpu = sum(e.self_cpu_time_total for e in events) or 1.0
    total_self_dev = sum(e.self_device_time_total for e in events) or 1.0
    dev = (use_device or "cl").split(":")[0].upper()
    show_shapes = any(getattr(e, "input_shapes", None) for e in rows)
    nw = min(max([len(e.key) for e in rows] + [4]) + 4, name_width)
    cols = [("Name", nw)]
    num = ["Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg"]
    if use_device:
        num += [f"Self {dev}", f"Self {dev} %", f"{dev} total", f"{dev} time avg"]
    num += ["# of Calls"]
    cols += [(c, 12) for c in num]
    if show_shapes:
        widest = max(len(str(getattr(e, "input_shapes", None) or [])) for e in rows)
        cols.append(("Input Shapes", max(12, min(widest, shapes_width))))
    line = "  ".join("-" * w for _, w in cols) + "  "
    out = [line, "  ".join(name.rjust(w) for name, w in cols) + "  ", line]
    for e in rows:
        name = e.key if len(e.key) <= nw else e.key[:nw - 3] + "..."
        vals = [name.rjust(nw),
                f"{100 * e.self_cpu_time_total / total_self_cpu:.2f}%",
                _format_time(e.self_cpu_time_total),
                f"{100 * e.cpu_time_total / total_self_cpu:.2f}%",
                _format_time(e.cpu_time_total),
                _format_time(e.cpu_time_total / e.count if e.count else 0.0)]
        if use_device:
            vals += [_format_time(e.self_device_time_total),
                     f"{100 * e.self_device_time_total / total_self_dev:.2f}%",
                     _format_time(e.device_time_total),
                     _format_time(e.device_time_total / e.count if e.count else 0.0)]
        vals.append(str(e.count))
        if show_shapes:
            vals.append(str(e.input_shapes or [])[:cols[-1][1]])
        out.append("  ".join(v.rjust(w) for v, (_, w) in zip(vals, cols)) + "  ")
    out.append(line)
    if header is not None:
        out.insert(0, header)
    out.append(f"Self CPU time total: {_format_time(sum(e.self_cpu_time_total for e in events))}")
    if use_device:
        out.append(f"Self {dev} time total: "
                   f"{_format_time(sum(e.self_device_time_total for e in events))}")
    return "\n".join(out) + "\n"


# ---- recording -----------------------------------------------------------------------------------
# where a class name's words meet: LSTMStack -> lstm_stack, FusedAttention -> fused_attention
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_op_names = {}


def _op_name(cls):
    """clgrad::<op>: the elementwise table's name, else the class name in snake case."""
    name = _op_names.get(cls)
    if name is None:
        entry = getattr(cls, "_entry", None)
        base = entry.name if entry is not None else _CAMEL.sub("_", cls.__name__).lower()
        name = _op_names[cls] = f"clgrad::{base}"
    return name


class _Recorder:
    """What the hooks call while a profile is on: it keeps the events and, per thread, the stack
    of open spans that kernels are charged to."""

    def __init__(self, record_shapes, use_device):
        self.record_shapes = record_shapes
        self.use_device = use_device
        self.events = []
        self.kernel_events = []
        self.local = threading.local()
        self.kernel_names = {}

    def _stack(self):
        st = getattr(self.local, "stack", None)
        if st is None:
            st = self.local.stack = []
        return st

    def begin(self, name, args=None, user=False):
        st = self._stack()
        parent = st[-1] if st else None
        shapes = None
        if self.record_shapes and args is not None:
            shapes = [list(a._shape) if isinstance(a, Tensor) else [] for a in args]
        e = FunctionEvent(name, _now(), parent, shapes, threading.get_ident(),
                          is_user_annotation=user)
        if parent is not None:
            parent.cpu_children.append(e)
        self.events.append(e)
        st.append(e)
        return e

    def end(self, e):
        e.end_ns = _now()
        st = self._stack()
        if st and st[-1] is e:
            st.pop()

    # -- called by the hooks --
    def op(self, cls, args, run):
        e = self.begin(_op_name(cls), args)
        try:
            return run(cls, args)
        finally:
            self.end(e)

    def function(self, cls, args):
        e = self.begin(cls.__name__, args)
        try:
            return cls._apply_function(args)
        finally:
            self.end(e)

    def node(self, node, grads, run):
        e = self.begin(node.name(), grads)
        try:
            return run(node, grads)
        finally:
            self.end(e)

    def kernel(self, device, kernel, gsize, lsize, args, evt):
        host_ns = _now()
        name = self.kernel_names.get(id(kernel))
        if name is None:
            name = self.kernel_names[id(kernel)] = kernel.function_name
        st = self._stack()
        parent = st[-1] if st else None
        k = FunctionEvent(name, 0, parent, device_type=self.use_device)
        k.cl_event, k.launch_ns, k.queue = evt, host_ns, evt.command_queue
        if parent is not None:
            parent.kernels.append(k)
        self.kernel_events.append(k)

    def finish(self):
        """Read the kernels' device times, moved onto the host clock per queue."""
        offsets = {}
        for k in self.kernel_events:
            k.cl_event.wait()
            p = k.cl_event.profile
            k.queued, k.start_ns, k.end_ns = p.queued, p.start, p.end
            # the host read its clock after the enqueue returned: launch_ns >= queued + offset
            off = k.launch_ns - k.queued
            key = k.queue.int_ptr
            offsets[key] = min(off, offsets.get(key, off))
        for k in self.kernel_events:
            off = offsets[k.queue.int_ptr]
            k.start_ns += off
            k.end_ns += off
            k.device = k.queue.device
            del k.cl_event, k.queue


# ---- the user API --------------------------------------------------------------------------------
class profile:
    """Context manager that records what runs inside: host time per op, backward node and
    record_function block; with use_device="cl", device time per kernel too. Then
    `key_averages().table(...)`, `total_average()`, `self_cpu_time_total`, and
    `export_chrome_trace(path)` (JSON for chrome://tracing or ui.perfetto.dev).

    >>> import clgrad
    >>> from clgrad.autograd import profiler
    >>> with profiler.profile(record_shapes=True) as prof:
    ...     y = clgrad.ones(2, 3).sum(0)
    >>> [e.input_shapes for e in prof.function_events if e.name == "clgrad::sum"]
    [[[2, 3], [], [], []]]
    """

    def __init__(self, enabled=True, *, use_cuda=False, use_device=None, record_shapes=False,
                 with_flops=False, profile_memory=False, with_stack=False, with_modules=False,
                 use_kineto=True, use_cpu=True, experimental_config=None, acc_events=False,
                 custom_trace_id_callback=None):
        if use_cuda and use_device is None:
            use_device = "cl"
        if use_device is not None and str(use_device).split(":")[0] != "cl":
            raise ValueError(f"use_device must be None or 'cl' (clgrad's devices), got "
                             f"{use_device!r}")
        self.enabled = enabled
        self.use_device = "cl" if use_device is not None else None
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.entered = False
        self._recorder = None
        self._events = None
        self._profiled = ()           # devices whose queues record device times for this profile

    def __enter__(self):
        if not self.enabled:
            return self
        if self.entered:
            raise RuntimeError("Profiler context manager is not reentrant")
        if F.hooks.profiler is not None:
            raise RuntimeError("Profiler is already enabled on this thread")
        self.entered = True
        rec = self._recorder = _Recorder(self.record_shapes, self.use_device)
        self.profiling_start_time_ns = _now()
        F.hooks.profiler = rec
        F.hooks.refresh()
        if self.use_device:
            self._profiled = list(_device.devices())     # their queues record device times
            for dev in self._profiled:
                dev.set_profiling(True)
            _kernels.launch_hooks.append(rec.kernel)
        return self

    def __exit__(self, *exc):
        if not self.enabled:
            return False
        rec = self._recorder
        F.hooks.profiler = None
        F.hooks.refresh()
        if rec.kernel in _kernels.launch_hooks:
            _kernels.launch_hooks.remove(rec.kernel)
        self.profiling_end_time_ns = _now()
        rec.finish()
        for dev in self._profiled:
            dev.set_profiling(False)
        self._profiled = ()
        self._events = EventList(rec.events + rec.kernel_events, self.use_device, self)
        return False

    def _check_finished(self):
        if self._events is None:
            raise RuntimeError("Profiler didn't finish running")

    @property
    def function_events(self):
        """Every event, in the order they started (kernels after the host spans)."""
        self._check_finished()
        return self._events

    def events(self):
        return self.function_events

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0,
                     group_by_overload_name=False):
        """One row per op name (and input shapes, with group_by_input_shape=True).

        >>> import clgrad
        >>> from clgrad.autograd import profiler
        >>> with profiler.profile() as prof:
        ...     for _ in range(3):
        ...         _ = clgrad.ones(2).exp()
        >>> [(e.key, e.count) for e in prof.key_averages()]
        [('clgrad::exp', 3)]
        """
        self._check_finished()
        return self._events.key_averages(group_by_input_shape)

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75,
              max_name_column_width=55, max_shapes_column_width=80, header=None,
              top_level_events_only=False):
        """Every event as a row (key_averages().table() for one row per op).

        >>> import clgrad
        >>> from clgrad.autograd import profiler
        >>> with profiler.profile() as prof:
        ...     _ = clgrad.ones(2) + 1
        >>> prof.table().splitlines()[3].split()[0]
        'clgrad::add'
        """
        self._check_finished()
        return self._events.table(sort_by, row_limit, max_src_column_width,
                                  max_name_column_width, max_shapes_column_width, header,
                                  top_level_events_only)

    def total_average(self):
        """Every event added up, as one FunctionEventAvg keyed "Total".

        >>> import clgrad
        >>> from clgrad.autograd import profiler
        >>> with profiler.profile() as prof:
        ...     _ = clgrad.ones(2) * 3
        >>> prof.total_average().count
        1
        """
        self._check_finished()
        return self._events.total_average()

    @property
    def self_cpu_time_total(self):
        """Host time of everything recorded, in microseconds."""
        self._check_finished()
        return self._events.self_cpu_time_total

    def export_chrome_trace(self, path):
        """Write the trace as Chrome trace-event JSON (chrome://tracing, ui.perfetto.dev): host
        spans on one track per thread, kernels on one track per device, arrows from each op to
        the kernels it launched.

        >>> import json, os, tempfile
        >>> import clgrad
        >>> from clgrad.autograd import profiler
        >>> with profiler.profile(use_device="cl") as prof:
        ...     _ = clgrad.ones(8).sin()
        >>> path = os.path.join(tempfile.mkdtemp(), "trace.json")
        >>> prof.export_chrome_trace(path)
        >>> sorted({e["cat"] for e in json.load(open(path))["traceEvents"] if e["ph"] == "X"})
        ['cpu_op', 'kernel']
        """
        self._check_finished()
        t0 = self.profiling_start_time_ns
        pid = os.getpid()
        trace = [{"name": "process_name", "ph": "M", "pid": pid, "tid": 0,
                  "args": {"name": "clgrad (host)"}}]
        tids = {}
        for e in self._recorder.events:
            tid = tids.setdefault(e.thread, len(tids))
            args = {"Input Dims": e.input_shapes} if e.input_shapes else {}
            trace.append({"name": e.name, "ph": "X",
                          "cat": "user_annotation" if e.is_user_annotation else "cpu_op",
                          "ts": (e.start_ns - t0) / 1e3, "dur": (e.end_ns - e.start_ns) / 1e3,
                          "pid": pid, "tid": tid, "args": args})
        for thread, tid in tids.items():
            trace.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid,
                          "args": {"name": f"thread {thread}"}})
        dev_pids = {}
        for n, k in enumerate(self._recorder.kernel_events):
            dpid = dev_pids.get(k.device.int_ptr)
            if dpid is None:
                dpid = dev_pids[k.device.int_ptr] = 0x7FFF0000 + len(dev_pids)
                trace.append({"name": "process_name", "ph": "M", "pid": dpid, "tid": 0,
                              "args": {"name": f"{k.device.name.strip()} (kernels)"}})
            ts = (k.start_ns - t0) / 1e3
            trace.append({"name": k.name, "ph": "X", "cat": "kernel", "ts": ts,
                          "dur": (k.end_ns - k.start_ns) / 1e3, "pid": dpid, "tid": 0,
                          "args": {"op": k.cpu_parent.name if k.cpu_parent else None}})
            if k.cpu_parent is not None:      # an arrow from the launch to the kernel
                tid = tids[k.cpu_parent.thread]
                trace.append({"name": "launch", "ph": "s", "cat": "ac2g", "id": n, "pid": pid,
                              "tid": tid, "ts": (k.launch_ns - t0) / 1e3})
                trace.append({"name": "launch", "ph": "f", "bp": "e", "cat": "ac2g", "id": n,
                              "pid": dpid, "tid": 0, "ts": ts})
        with open(path, "w") as f:
            json.dump({"traceEvents": trace, "displayTimeUnit": "ms"}, f)


class record_function:
    """Context manager and decorator: a named span in the profile (a no-op when no profiler
    runs).

    >>> import clgrad
    >>> from clgrad.autograd import profiler
    >>> @profiler.record_function("double")
    ... def double(t):
    ...     return t * 2
    >>> with profiler.profile() as prof:
    ...     _ = double(clgrad.ones(2))
    >>> [e.name for e in prof.function_events]
    ['double', 'clgrad::mul']
    """

    def __init__(self, name, args=None):
        self.name = name
        self.args = args
        self.record = None

    def __enter__(self):
        rec = F.hooks.profiler
        if rec is not None:
            self._rec = rec
            self.record = rec.begin(self.name, user=True)
        return self

    def __exit__(self, *exc):
        if self.record is not None:
            self._rec.end(self.record)
            self.record = None
        return False

    def __call__(self, func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with record_function(self.name, self.args):
                return func(*args, **kwargs)
        return wrapper
