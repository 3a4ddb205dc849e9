"""torch._dynamo's names that programs touch around torch.compile (its settings, reset,
disable, marking dimensions dynamic), over clgrad.compiler.

>>> import clgrad
>>> clgrad._dynamo.config.cache_size_limit
8
>>> clgrad._dynamo.reset()
"""
from .compiler import config, disable, reset  # noqa: F401

__all__ = ["config", "disable", "reset", "mark_dynamic", "mark_static", "maybe_mark_dynamic",
           "allow_in_graph", "is_compiling"]
from .compiler import is_compiling  # noqa: E402,F401


def mark_dynamic(t, index, *, min=None, max=None):
    """Accepted: a recording is made per shape, so a dimension needs no marking."""


mark_static = maybe_mark_dynamic = mark_dynamic


def allow_in_graph(fn):
    """Accepted: every clgrad function can be recorded; returns fn."""
    return fn
