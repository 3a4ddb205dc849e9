"""What every op family shares: shapes and broadcasting, memory-overlap rules, views without
bookkeeping, and argument checks with torch's messages."""
import math

import numpy as np

from .. import dtypes
# the layout helpers and the copy family live in the kernels layer; ops import them from here
from ..kernels._layout import (MAX_DIMS, broadcast_shapes, check_dims,  # noqa: F401
                               collapse, expand_strides, launch_walk, pack8, pack8_right,
                               same_device, view_raw)
from ..kernels.copy import (COPY, cast_raw, check_fp64, contiguous_raw, copy_into,  # noqa: F401
                            fill_raw, full_raw, scalar_for)
from ..tensor import Tensor, contiguous_strides, empty_tensor, numel_of
from ..autograd.engine import grad



def size_repr(shape):
    return f"[{', '.join(str(s) for s in shape)}]"


# ---- memory overlap of in-place writes (torch's rules) -------------------------------------------
INTERNAL_OVERLAP = ("unsupported operation: more than one element of the written-to tensor refers "
                    "to a single memory location. Please clone() the tensor before performing the "
                    "operation.")
PARTIAL_OVERLAP = ("unsupported operation: some elements of the input tensor and the written-to "
                   "tensor refer to a single memory location. Please clone() the tensor before "
                   "performing the operation.")


def check_no_internal_overlap(t):
    """Raise torch's error when writing into t would write some memory more than once: a zero
    stride over a dim of size > 1 (an expanded tensor), or any other layout whose elements share
    memory (as_strided, unfold). torch lets the latter through as too hard to tell, and its result
    then depends on the order the elements are visited; clgrad raises where it can prove the
    overlap. A contiguous tensor cannot overlap itself, so the common case costs one attribute
    read."""
    if t._contig or 0 in t._shape:         # an empty tensor writes nothing
        return
    dims = sorted((abs(st), n) for n, st in zip(t._shape, t._strides) if n != 1)
    reach = 0                   # the largest offset the dims of smaller strides can reach
    for st, n in dims:
        if st == 0:
            raise RuntimeError(INTERNAL_OVERLAP)
        if st <= reach:
            break
        reach += (n - 1) * st
    else:
        return                  # each stride steps past everything below it: no overlap
    n = numel_of(t._shape)
    if n <= 1 << 16:            # prove it by listing the offsets (rare layouts, small sizes)
        offsets = np.zeros((), dtype=np.int64)
        for st, m in dims:
            offsets = np.add.outer(offsets, np.arange(m, dtype=np.int64) * st)
        if np.unique(offsets).size < n:
            raise RuntimeError(INTERNAL_OVERLAP)


def _dense(t):
    """Whether t's elements fill a block of its storage exactly once (torch's
    is_non_overlapping_and_dense): a permutation of a contiguous layout."""
    if t._contig:
        return True
    expected = 1
    for st, n in sorted((st, n) for n, st in zip(t._shape, t._strides) if n != 1):
        if st != expected:
            return False
        expected *= n
    return True


def check_no_partial_overlap(out, t):
    """Raise torch's error when input t and the written-to tensor out share some memory but not
    all of it in the same layout (writing out would change inputs still to be read). Same memory
    with the same strides (x.add_(x)) is fine. Where the layouts are not dense torch cannot tell,
    and lets it through; clgrad's in-place paths then go through a temporary."""
    if t is out or not isinstance(t, Tensor) or t._storage is not out._storage:
        return
    n, m = numel_of(out._shape), numel_of(t._shape)
    if n == 0 or m == 0 or not (_dense(out) and _dense(t)):
        return
    a0, b0 = out._offset, t._offset
    if a0 == b0 and n == m and out._strides == t._strides:
        return
    if a0 < b0 + m and b0 < a0 + n:
        raise RuntimeError(PARTIAL_OVERLAP)


def check_inplace_overlap(out, inputs, internal=True):
    """Both of torch's checks for an op that writes `out` reading `inputs` (in place or out=)."""
    if internal and not out._contig:
        check_no_internal_overlap(out)
    storage = out._storage
    for t in inputs:            # on the in-place hot path: the common case is two compares
        if type(t) is Tensor and t._storage is storage and t is not out:
            check_no_partial_overlap(out, t)


# torch's names for the types in its "cannot be converted" message; float64 and bfloat16 are not
# checked (a number too large for bfloat16 becomes inf there, as in torch)
_OVERFLOW_NAMES = {dtypes.int8: "int8_t", dtypes.uint8: "uint8_t", dtypes.int16: "int16_t",
                   dtypes.int32: "int", dtypes.int64: "int64_t", dtypes.float16: "c10::Half",
                   dtypes.float32: "float"}
_FLOAT_MAX = {dtypes.float16: 65504.0, dtypes.float32: 3.4028234663852886e38}
_REAL_NAMES = {dtypes.float64: "double", dtypes.bfloat16: "c10::BFloat16", dtypes.bool_: "bool"}


def check_fits(value, dt):
    """torch's check where a Python number fills a tensor (full, fill_, masked_fill): a value
    outside dt's range is a RuntimeError, not a silent wrap. Unsigned types take -max..max (a
    negative number wraps), as torch's c10::overflows allows.

    >>> import clgrad
    >>> clgrad.full((2,), 300, dtype=clgrad.int8)
    Traceback (most recent call last):
    RuntimeError: value cannot be converted to type int8_t without overflow
    """
    if isinstance(value, (complex, np.complexfloating)) and dt.kind != "c":
        # a complex number fits a real dtype only with no imaginary part, as in torch
        if value.imag != 0:
            raise RuntimeError(f"value cannot be converted to type "
                               f"{_OVERFLOW_NAMES.get(dt) or _REAL_NAMES[dt]} without overflow")
        value = value.real
    name = _OVERFLOW_NAMES.get(dt)
    if name is None or isinstance(value, (bool, np.bool_)):
        return
    v = float(value) if isinstance(value, (float, np.floating)) else int(value)
    if dt.kind == "f":
        bad = math.isfinite(v) and abs(v) > _FLOAT_MAX[dt]
    elif isinstance(v, float) and not math.isfinite(v):
        bad = True
    else:
        bits = 8 * dt.itemsize
        hi = (1 << bits) - 1 if dt.kind == "u" else (1 << (bits - 1)) - 1
        lo = -hi if dt.kind == "u" else -hi - 1
        bad = not lo <= int(v) <= hi
    if bad:
        raise RuntimeError(f"value cannot be converted to type {name} without overflow")


__all__ = ["size_repr", "broadcast_shapes", "expand_strides", "collapse", "pack8", "pack8_right",
           "launch_walk", "check_dims",
           "same_device", "copy_into", "check_no_internal_overlap", "check_no_partial_overlap",
           "check_inplace_overlap", "contiguous_raw", "cast_raw", "fill_raw", "full_raw",
           "scalar_for", "view_raw", "contiguous_strides", "empty_tensor", "numel_of",
           "recorded_grads"]


def recorded_grads(ins, outs, grads):
    """The gradients of ins (None where not required) through outs, recomputed by composed ops
    and differentiated with create_graph: what a fused op's backward returns when it is itself
    recorded (double backward), so that its gradient differentiates again. Entries of grads may
    be None (outputs without a gradient)."""
    pairs = [(o, g) for o, g in zip(outs, grads) if g is not None]
    want = [x for x in ins if x is not None and x.requires_grad]
    got = iter(grad([o for o, _ in pairs], want, [g for _, g in pairs], create_graph=True,
                    allow_unused=True))
    return [next(got) if x is not None and x.requires_grad else None for x in ins]
