"""The attention family (cl_kernels/attention.mako): scaled dot-product attention fused
flash-attention style, tiled with an online softmax, so that memory grows with L + S and never
with L * S. One kernel forward (saving each row's logsumexp), two backward (dQ; dK and dV) that
recompute the probabilities tile by tile from it, and the dropout mask drawn from the same Philox
counters (for the composed double backward). Each work-item owns one query (or key) row; a
launch handles EC columns of the head, so heads wider than EC take several launches. Raw
launches on flat contiguous operands: q [N, L, E], k [Nk, S, E], v [Nk, S, Ev] with
N = Nk * groups, an optional additive mask viewed as (N / Hq, Hq, L, S); no autograd (the Op is
clgrad/ops/attention.py).

>>> import clgrad
>>> q = clgrad.ones(1, 2, 4); k = clgrad.ones(1, 3, 4); v = clgrad.arange(6.0).reshape(1, 3, 2)
>>> out, lse = attn_fwd_raw(q, k, v, None, False, 0.5, 1, 1, 0.0, (0, 0))
>>> out.tolist()
[[[2.0, 3.0], [2.0, 3.0]]]
"""
from .. import dtypes
from ..runtime.family import KernelFamily
from ..runtime.kernels import group_limit
from ..tensor import empty_tensor

ATTENTION = KernelFamily("attention", lambda dt: dict(dt=dt), dtypes.FLOATS)
EC = 64                       # columns of a head handled per launch (the template's EC)


def lse_dtype(dt):
    """The dtype of the saved logsumexp and of the backward's row sums D for inputs of dt."""
    return dtypes.float64 if dt is dtypes.float64 else dtypes.float32


def _rows_per_group(dev, kernel, rows):
    """Own rows (work-items) per work-group: enough to share each local tile widely (on PoCL 128
    rows a group ran the forward in 70 ms of CPU time, 32 in 88 ms), no more than there are rows,
    within the kernel's queried limit."""
    return max(1, min(group_limit(dev, kernel, 128 if dev.cpu_paths else 64), rows))


def _chunks(*widths):
    return max(-(-w // EC) for w in widths)


def _mask_args(q, mask):
    """The mask's arguments: (buffer, offset, its 4 strides, present); none passes q's buffer,
    never read."""
    if mask is None:
        return (q._storage.buf, 0, 0, 0, 0, 0, 0)
    return (mask, *mask._strides, 1)


def _dscale(p):
    return 1.0 / (1.0 - p) if p < 1.0 else 0.0


def dropout_mask_raw(dt, dev, N, L, S, p, rng):
    """The [N, L, S] dropout factors (0 or 1 / (1 - p)) the fused kernels used with Philox
    (seed, offset) rng."""
    z = empty_tensor((N, L, S), dt, dev)
    ATTENTION.launch(dev, dt, "attn_dropout_mask", N * L * S, z._storage.buf, N, L, S, p,
                     _dscale(p), *rng)
    return z


def attn_fwd_raw(q, k, v, mask, causal, scale, groups, Hq, p, rng):
    """(out [N, L, Ev], lse [N, L]) of contiguous q, k, v; dropout p with Philox rng."""
    dev, dt = q._storage.device, q._dtype
    N, L, E = q._shape
    S, Ev = v._shape[1], v._shape[2]
    out = empty_tensor((N, L, Ev), dt, dev)
    lse = empty_tensor((N, L), lse_dtype(dt), dev)
    ls = _rows_per_group(dev, ATTENTION.kernel(dev, dt, "attn_fwd"), L)
    gs = N * -(-L // ls) * ls
    for c in range(_chunks(Ev)):
        ATTENTION.launch(dev, dt, "attn_fwd", ((gs,), (ls,)), q, k, v, out, lse._storage.buf,
                         L, S, E, Ev, groups, Hq, *_mask_args(q, mask), int(causal), scale, p,
                         _dscale(p), *rng, c * EC)
    return out, lse


def attn_bwd_raw(q, k, v, dout, lse, dd, mask, causal, scale, groups, Hq, p, rng):
    """(dq, dk, dv) of the forward above from contiguous dout, the saved lse and dd = the row
    sums of dout * out (both contiguous, of lse_dtype)."""
    dev, dt = q._storage.device, q._dtype
    N, L, E = q._shape
    Nk, S, Ev = v._shape
    dq = empty_tensor((N, L, E), dt, dev)
    dk = empty_tensor((Nk, S, E), dt, dev)
    dv = empty_tensor((Nk, S, Ev), dt, dev)
    tail = (L, S, E, Ev, groups, Hq, *_mask_args(q, mask), int(causal), scale, p, _dscale(p),
            *rng)
    head = (q, k, v, dout, lse._storage.buf, dd._storage.buf)
    ls = _rows_per_group(dev, ATTENTION.kernel(dev, dt, "attn_bwd_dq"), L)
    for c in range(_chunks(E)):
        ATTENTION.launch(dev, dt, "attn_bwd_dq", ((N * -(-L // ls) * ls,), (ls,)), *head, dq,
                         *tail, c * EC)
    ls = _rows_per_group(dev, ATTENTION.kernel(dev, dt, "attn_bwd_dkdv"), S)
    for c in range(_chunks(E, Ev)):
        ATTENTION.launch(dev, dt, "attn_bwd_dkdv", ((Nk * -(-S // ls) * ls,), (ls,)), *head, dk,
                         dv, *tail, c * EC)
    return dq, dk, dv
