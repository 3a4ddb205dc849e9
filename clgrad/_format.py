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


class _PartFormatter(_Formatter):
    """torch 2.13's float formatter, for the parts of complex numbers: the mode and the width come
    from the non-zero finite values alone, and a ratio above 1000 between the largest and the
    smallest magnitude means scientific notation in int mode too."""

    def __init__(self, values):
        self.floating = True
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        flat = values.ravel()
        vals = flat[np.isfinite(flat) & (flat != 0)]
        if vals.size == 0:
            return
        mags = np.abs(vals)
        hi, lo = mags.max(), mags.min()
        self.int_mode = bool(np.all(vals == np.ceil(vals)))
        self.sci_mode = bool(hi / lo > 1000.0 or hi > 1e8 or lo < 1e-4) if SCI_MODE is None \
            else SCI_MODE
        self.max_width = max(len(self.fmt(v)) for v in vals)


class _ComplexFormatter:
    """torch's complex printing: the real and imaginary parts each get a formatter of their own
    (decided over all real parts, and all imaginary parts), joined as re+imj."""

    def __init__(self, values):
        self.re = _PartFormatter(values.real)
        self.im = _PartFormatter(values.imag)
        self.max_width = self.re.max_width + self.im.max_width + 1

    def __call__(self, v):
        re = self.re(v.real)
        im = (self.im(v.imag) + "j").lstrip()
        return re + im if im[0] in "+-" else re + "+" + im


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
            strs = [fmt(v) for v in items[:EDGEITEMS]] + [" ..."] + \
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
        elif dt.kind == "c":
            a = a.astype(np.complex128)
        summarize = n > THRESHOLD
        shown = _summarise(a, summarize) if summarize else a
        fmt = _ComplexFormatter(shown) if dt.kind == "c" else _Formatter(shown, dt)
        body = _str(a, fmt, len("tensor("), summarize)
    try:
        if t._storage.device is not default_device():
            suffixes.append(f"device='{t.device}'")
    except Exception:
        pass
    if dt not in (dtypes.get_default_dtype(), dtypes.default_complex(), dtypes.int64,
                  dtypes.bool_) or \
            (n == 0 and dt is not dtypes.get_default_dtype()):
        suffixes.append(f"dtype=clgrad.{dt.name}")
    fn = t._grad_fn
    if fn is not None:
        suffixes.append(f"grad_fn=<{fn.name()}>")
    elif t._requires_grad:
        suffixes.append("requires_grad=True")
    return "tensor(" + _add_suffixes(body, suffixes, len("tensor(")) + ")"


def _add_suffixes(body, suffixes, indent):
    """torch's: a suffix that would take the last line past the line width goes on a line of its
    own."""
    parts = [body]
    last = len(body) - body.rfind("\n") + 1
    for suffix in suffixes:
        if last + len(suffix) + 2 > LINEWIDTH:
            parts.append(",\n" + " " * indent + suffix)
            last = indent + len(suffix)
        else:
            parts.append(", " + suffix)
            last += len(suffix) + 2
    return "".join(parts)
