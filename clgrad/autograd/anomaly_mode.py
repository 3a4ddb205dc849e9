"""Anomaly detection, as torch.autograd.anomaly_mode has it.

While it is on, every node of the backward graph remembers the traceback of the forward call that
made it. When a node then fails during backward, or (with check_nan) returns NaN, the traceback is
shown as a warning before the error is raised, so the line of the forward pass that is to blame
is known.

>>> import warnings
>>> import clgrad
>>> x = clgrad.tensor([-1.0, 4.0], requires_grad=True)
>>> with warnings.catch_warnings(record=True):
...     with clgrad.autograd.detect_anomaly():
...         try:
...             x.sqrt().sum().backward()
...         except RuntimeError as e:
...             print(e)
Function 'SqrtBackward0' returned nan values in its 0th output.
"""
import os
import traceback
import warnings

from ..tensor import Tensor
from . import function as F

__all__ = ["detect_anomaly", "set_detect_anomaly"]

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


class _Anomaly:
    """Installed as `function.hooks.anomaly` while anomaly mode is on."""

    def __init__(self, check_nan):
        self.check_nan = check_nan
        self.running = []           # nodes being run by the engine (reentrant backward)

    def record(self, node):
        """A node was just made: keep the user's part of the stack, and the node whose backward
        made it, if any (create_graph)."""
        stack = traceback.extract_stack()[:-1]
        while stack and stack[-1].filename.startswith(_PACKAGE):
            stack.pop()             # clgrad's own frames: the trace ends at the user's line
        node._anomaly_trace = stack
        if self.running:
            node._anomaly_parent = self.running[-1]

    def run(self, node, grads):
        self.running.append(node)
        try:
            outs = F.run_node(node, grads)
        except Exception:
            _warn_trace(node)
            raise
        finally:
            self.running.pop()
        if self.check_nan:
            for i, g in enumerate(outs):
                if isinstance(g, Tensor) and g._dtype.kind == "f" and g.numel() and \
                        bool(g.detach().isnan().any()):
                    _warn_trace(node)
                    raise RuntimeError(f"Function '{node.name()}' returned nan values in its "
                                       f"{i}th output.")
        return outs


def _warn_trace(node):
    trace = node._anomaly_trace
    if trace is None:
        warnings.warn("Error detected in {}. No forward pass information available. Enable "
                      "detect anomaly during forward pass for more information."
                      .format(node.name()), stacklevel=2)
        return
    msg = (f"Error detected in {node.name()}. Traceback of forward call that caused the error:\n"
           + "".join(traceback.format_list(trace)))
    parent = node._anomaly_parent
    while parent is not None:
        msg += (f"\nPrevious calculation was induced by {parent.name()}. Traceback of forward call "
                f"that induced the previous calculation:\n"
                + "".join(traceback.format_list(parent._anomaly_trace or [])))
        parent = parent._anomaly_parent
    warnings.warn(msg, stacklevel=2)


def is_anomaly_enabled():
    """Whether anomaly detection is on.

    >>> import clgrad
    >>> clgrad.is_anomaly_enabled()
    False
    """
    return F.hooks.anomaly is not None


def is_anomaly_check_nan_enabled():
    """Whether anomaly detection checks backward results for NaN (when it is on).

    >>> import clgrad
    >>> clgrad.is_anomaly_check_nan_enabled()
    True
    """
    return _check_nan


_check_nan = True


def set_anomaly_enabled(enabled, check_nan=True):
    """Turn anomaly detection on or off (what detect_anomaly and set_detect_anomaly call).

    >>> import clgrad
    >>> clgrad.set_anomaly_enabled(False)
    """
    global _check_nan
    _check_nan = bool(check_nan)
    F.hooks.anomaly = _Anomaly(_check_nan) if enabled else None
    F.hooks.refresh()


class detect_anomaly:
    """Context manager and decorator that turns anomaly detection on (it warns that it slows
    things down, as torch does).

    >>> import warnings
    >>> import clgrad
    >>> with warnings.catch_warnings(record=True):
    ...     @clgrad.autograd.detect_anomaly()
    ...     def f():
    ...         return clgrad.is_anomaly_enabled()
    ...     f()
    True
    """

    def __init__(self, check_nan=True):
        self.prev = is_anomaly_enabled()
        self.check_nan = check_nan
        self.prev_check_nan = is_anomaly_check_nan_enabled()
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime and "
                      "should only be enabled for debugging.", stacklevel=2)

    def __enter__(self):
        set_anomaly_enabled(True, self.check_nan)

    def __exit__(self, *exc):
        set_anomaly_enabled(self.prev, self.prev_check_nan)
        return False

    def __call__(self, func):
        import functools

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with self:
                return func(*args, **kwargs)
        return wrapper


class set_detect_anomaly:
    """Turn anomaly detection on or off: at once as a plain call, undone at the end of a `with`
    block.

    >>> import clgrad
    >>> with clgrad.autograd.set_detect_anomaly(True):
    ...     clgrad.is_anomaly_enabled()
    True
    >>> clgrad.is_anomaly_enabled()
    False
    """

    def __init__(self, mode, check_nan=True):
        self.prev = is_anomaly_enabled()
        self.prev_check_nan = is_anomaly_check_nan_enabled()
        set_anomaly_enabled(mode, check_nan)

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        set_anomaly_enabled(self.prev, self.prev_check_nan)
        return False
