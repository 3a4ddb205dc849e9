"""repr of tensors in torch's style: 4 decimals, scientific notation when the magnitudes call for
it, summarised with '...' past 1000 elements, and the suffixes torch prints."""
import numpy as np

from . import dtypes
from .runtime.device import default_device

PRECISION = 4
THRESHOLD = 1000
EDGEITEMS = 3
LINEWIDTH = 80
SCI_MODE = None          # set_printoptions(sci_mode=...): True / False force it, None decides


class _Formatter:
    def __init__(self, values, dt):
        self.floating = dt.kind == "f"
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        flat = values.ravel()
        if not self.floating:
            strs = [str(v) if dt.kind != "b" else str(bool(v)) for v in flat]
            self.max_width = max((len(s) for s in strs), default=1)
            return
        finite = flat[np.isfinite(flat)]
        if finite.size == 0:
            strs = [str(v) for v in flat]
            self.max_width = max((len(self._special(v)) for v in flat), default=1)
            return
        nonzero = np.abs(finite[finite != 0])
        self.int_mode = bool(np.all(finite == np.ceil(finite)))
        if self.int_mode:
            if nonzero.size and nonzero.max() > 1e8:
                self.sci_mode = True
        elif nonzero.size:
            hi, lo = nonzero.max(), nonzero.min()
            if hi / lo > 1000.0 or hi > 1e8 or lo < 1e-4:
                self.sci_mode = True
        if SCI_MODE is not None:
            self.sci_mode = SCI_MODE
        self.max_width = max(len(self.fmt(v)) for v in flat)

    @staticmethod
    def _special(v):
        if np.isnan(v):
            return "nan"
        return "inf" if v > 0 else "-inf"

    def fmt(self, v):
        if not self.floating:
            return str(bool(v)) if isinstance(v, (bool, np.bool_)) else str(v)
        if not np.isfinite(v):
            return self._special(v)
        if self.sci_mode:
            return f"{v:.{PRECISION}e}"
        if self.int_mode:
            return f"{v:.0f}."
        return f"{v:.{PRECISION}f}"

    def __call__(self, v):
        return self.fmt(v).rjust(self.max_width)


def _summarise(a, summarize):
    """The elements that get printed (edges only when summarising)."""
    if not summarize or a.ndim == 0:
        return a
    parts = []
    for axis in range(a.ndim):
        if a.shape[axis] > 2 * EDGEITEMS:
            a = np.concatenate([a.take(range(EDGEITEMS), axis),
                                a.take(range(a.shape[axis] - EDGEITEMS, a.shape[axis]), axis)],
                               axis)
    parts.append(a)
    return a


def _str(a, fmt, indent, summarize):
    if a.ndim == 0:
        return fmt(a.item())
    if a.ndim == 1:
        items = list(a)
        if summarize and len(items) > 2 * EDGEITEMS:
            strs = [fmt(v) for v in items[:EDGEITEMS]] + ["..."] + \
                [fmt(v) for v in items[-EDGEITEMS:]]
        else:
            strs = [fmt(v) for v in items]
        width = fmt.max_width + 2
        per_line = max(1, (LINEWIDTH - indent) // width)
        lines = [", ".join(strs[i:i + per_line]) for i in range(0, len(strs), per_line)]
        return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"
    n = a.shape[0]
    idx = list(range(n))
    if summarize and n > 2 * EDGEITEMS:
        idx = list(range(EDGEITEMS)) + [None] + list(range(n - EDGEITEMS, n))
    rows = [("..." if i is None else _str(a[i], fmt, indent + 1, summarize)) for i in idx]
    sep = "," + "\n" * (a.ndim - 1) + " " * (indent + 1)
    return "[" + sep.join(rows) + "]"


def format_tensor(t):
    dt = t._dtype
    suffixes = []
    shape = t._shape
    n = t.numel()
    if n == 0 and shape != (0,):
        body = "[]"
        suffixes.append(f"size={tuple(shape)}")
    elif n == 0:
        body = "[]"
    else:
        a = dtypes.from_host_bits(t._read_host(), dt)
        if dt.kind == "f":
            a = a.astype(np.float64)
        summarize = n > THRESHOLD
        shown = _summarise(a, summarize) if summarize else a
        fmt = _Formatter(shown, dt)
        body = _str(a, fmt, len("tensor("), summarize)
    try:
        if t._storage.device is not default_device():
            suffixes.append(f"device='{t.device}'")
    except Exception:
        pass
    if dt not in (dtypes.get_default_dtype(), dtypes.int64, dtypes.bool_) or \
            (n == 0 and dt is not dtypes.get_default_dtype()):
        suffixes.append(f"dtype=clgrad.{dt.name}")
    fn = t._grad_fn
    if fn is not None:
        suffixes.append(f"grad_fn=<{fn.name()}>")
    elif t._requires_grad:
        suffixes.append("requires_grad=True")
    return "tensor(" + ", ".join([body] + suffixes) + ")"
