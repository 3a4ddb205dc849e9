"""The attention family (cl_kernels/attention.mako): scaled dot-product attention fused
flash-attention style, tiled with an online softmax, so that memory grows with L + S and never
with L * S. One kernel forward (saving each row's logsumexp), two backward (dQ; dK and dV) that
recompute the probabilities tile by tile from it, and the dropout mask drawn from the same Philox
counters (for the composed double backward). Each work-item owns one query (or key) row; a
launch handles EC columns of the head, so heads wider than EC take several launches. Raw
launches on flat contiguous operands: q [N, L, E], k [Nk, S, E], v [Nk, S, Ev] with
N = Nk * groups, an optional additive mask viewed as (N / Hq, Hq, L, S); no autograd (the Op is
clgrad/ops/attention.py).

On the CPU code paths, float32 and float64 heads whose widths are multiples of the vector width
run the register-blocked kernels of cl_kernels/attention_rows.mako instead (same arguments, same
results up to rounding): several rows per work-item, scores as vectors over keys read from a
transposed copy of K (of Q and dO for dK / dV), no local memory and no barriers.

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

# attention_rows.mako, one program per (dtype, VW, NB, NO, (MR_F, MR_Q, MR_K)): scores NB * VW
# keys at a time, NO * VW output columns per launch, MR rows per work-item in the forward, dQ and
# dK / dV kernels. With 512-bit vectors MR is 4 for all three, measured on PoCL (2-core Zen 5,
# float32, causal, 16 heads, T = 512, d = 64): dQ 4.3 / 3.1 / 2.7 ms with MR 2 / 3 / 4, dK / dV
# 5.5 / 4.6 / 3.8 ms, 6 rows no faster; narrower vectors (16 registers on AVX2) take 2, a guess.
ROWS = KernelFamily("attention_rows", lambda v: dict(dt=v[0], vw=v[1], nb=v[2], no=v[3],
                                                      mr=v[4]),
                    # listed at import: the 256-bit widths every CPU builds (16 floats only
                    # build where PoCL targets AVX-512)
                    [(dt, 8 if dt is dtypes.float32 else 4, nb, 4, (2, 2, 2))
                     for dt in (dtypes.float32, dtypes.float64) for nb in (1, 2)],
                    tag=lambda v: f"{v[0].short}_v{v[1]}b{v[2]}o{v[3]}m{''.join(map(str, v[4]))}")
ROWS_LOCAL = 16               # work-items per group of the rows kernels
# Bytes of the other operand's rows a backward launch walks (about half a CPU core's L2): longer
# sequences take several launches, each over a range of keys (queries), adding to the gradient.
# PoCL, float32, 16 heads, d = 64, causal, T = 2048: dQ 71.9 ms in one launch, 55.6 in chunks of
# 512 KiB (55.5 / 59.1 with 256 / 128 KiB); dK / dV 93.7 -> 74.7 (79.2 / 87.0).
ROWS_CACHE = 1 << 19


def rows_variant(dev, dt, L, S, E, Ev):
    """The attention_rows program variant for L query and S key rows, heads of widths E, Ev of
    dtype dt on dev, or None where attention.mako's kernels run (GPU paths, half types, widths
    not a multiple of VW, drivers other than PoCL: Intel's CPU runtime builds poor code for
    explicit vectors, 113 ms against its 39 with attention.mako for a causal T = 512, 16 heads
    of 64, forward and backward).

    >>> import clgrad
    >>> d = clgrad.runtime.default_device()
    >>> rows_variant(d, clgrad.float32, 128, 128, 64, 64) is None or d.is_pocl
    True
    """
    if not dev.cpu_paths or not rows_on(dev) or dt not in (dtypes.float32, dtypes.float64):
        return None
    vw = dev.vec if dt is dtypes.float32 else dev.vec8
    if E % vw or Ev % vw:
        return None
    # tiles of 16 keys for short sequences (less of the causal diagonal computed in vain), as
    # many column vectors as the head has up to 4: PoCL, GPT-sized heads (8 x 4 x 128 x 32,
    # causal) 1.03-1.12 ms against 2.0 with 32 keys and 4 vectors; 16 x 512 x 64: 9.9-10.5
    # with 32 keys against 12.2-13.3 with 16
    nb = 2 if max(L, S) > 256 else 1
    no = max(1, min(4, max(E, Ev) // vw))
    wide = vw * dt.itemsize >= 64
    return dt, vw, nb, no, ((4, 4, 4) if wide else (2, 2, 2))


def rows_faster(dev, dt, L, S, E, Ev, causal):
    """Whether the rows kernels beat the composed form (clgrad/ops/attention.py) on this
    attention: causal, query and key rows from 256, heads of at most one launch's columns.
    Measured on PoCL (2-core Zen 5, float32, forward and backward, fused / composed, with
    tools/bench_attention.py): causal T = 256 0.81-0.91, T = 512 0.59-0.71, T = 1024 0.66-0.82,
    T = 128 0.66-1.19 (as close as the noise); without the causal mask 1.06-2.15 (no work saved,
    and the composed GEMMs run at twice the rows kernels' FLOP rate); heads of 128 1.31-1.33.

    >>> import clgrad
    >>> rows_faster(clgrad.runtime.default_device(), clgrad.float32, 64, 64, 64, 64, True)
    False
    """
    v = rows_variant(dev, dt, L, S, E, Ev)
    return bool(v and causal and min(L, S) >= 256 and max(E, Ev) <= v[1] * 4)


def rows_on(dev):
    """Whether `dev` runs the rows kernels (when they apply): PoCL, whose code for explicit
    vectors they are written for. The tests set it for every CPU-path device."""
    return dev.is_pocl


def _transposed(dev, variant, x, pad_to):
    """x [B, R, C] as [B, C, Rp] (Rp = R rounded up to pad_to, zeros past R)."""
    B, R, C = x._shape
    Rp = -(-R // pad_to) * pad_to
    t = empty_tensor((B, C, Rp), x._dtype, dev)
    if B and C and Rp:
        vw = variant[1]
        ROWS.launch(dev, variant, "attn_rows_t", ((Rp // vw, C // vw, B), (1, 1, 1)), t, x, R, C,
                    Rp)
    return t, Rp


def _rows_launch(dev, variant, name, total, *args):
    if total:
        ls = min(ROWS_LOCAL, dev.max_work_group_size)
        ROWS.launch(dev, variant, name, ((-(-total // ls) * ls,), (ls,)), *args, total)


def _rows_fwd(variant, q, k, v, out, lse, mask, causal, scale, groups, Hq, p, rng):
    dev = q._storage.device
    _, vw, nb, no, (mr, _, _) = variant
    N, L, E = q._shape
    S, Ev = v._shape[1], v._shape[2]
    kt, Sp = _transposed(dev, variant, k, nb * vw)
    for c0 in range(0, Ev, no * vw):
        _rows_launch(dev, variant, "attn_rows_fwd", N * -(-L // mr), q, kt, v, out,
                     lse._storage.buf, L, S, E, Ev, groups, Hq, *_mask_args(q, mask),
                     int(causal), scale, p, _dscale(p), *rng, c0, Sp)
    return out, lse


def _chunks_of(n, per_row_bytes, tile):
    """[(begin, end)] covering range(n) in pieces whose rows take about ROWS_CACHE bytes (each a
    multiple of `tile`): backward walks every key (query) row once per own block of rows, so the
    rows it walks should stay in the cache."""
    step = max(tile, ROWS_CACHE // max(1, per_row_bytes) // tile * tile)
    return [(b, min(n, b + step)) for b in range(0, n, step)] or [(0, 0)]


def _rows_bwd(variant, q, k, v, dout, lse, dd, dq, dk, dv, tail):
    dev = q._storage.device
    _, vw, nb, no, (_, mrq, mrk) = variant
    N, L, E = q._shape
    Nk, S, Ev = v._shape
    bk, ec, size = nb * vw, no * vw, q._dtype.itemsize
    kt, Sp = _transposed(dev, variant, k, bk)
    vt, _ = _transposed(dev, variant, v, bk)
    # dq: kt, vt and k's rows of each key; dk, dv: qt, dot, q and dout's of each query
    for c0 in range(0, E, ec):
        for n, (b, e) in enumerate(_chunks_of(S, (2 * E + Ev) * size, bk)):
            _rows_launch(dev, variant, "attn_rows_dq", N * -(-L // mrq), q, kt, vt, k, dout,
                         lse._storage.buf, dd._storage.buf, dq, *tail, c0, Sp, b, e, int(n > 0))
    del kt, vt
    qt, Lp = _transposed(dev, variant, q, bk)
    dot, _ = _transposed(dev, variant, dout, bk)
    for c0 in range(0, max(E, Ev), ec):
        for n, (b, e) in enumerate(_chunks_of(L, 2 * (E + Ev) * size, bk)):
            _rows_launch(dev, variant, "attn_rows_dkdv", Nk * -(-S // mrk), qt, dot, q, k, v,
                         dout, lse._storage.buf, dd._storage.buf, dk, dv, *tail, c0, Lp, b, e,
                         int(n > 0))
    return dq, dk, dv


def lse_dtype(dt):
    """The dtype of the saved logsumexp and of the backward's row sums D for inputs of dt."""
    return dtypes.float64 if dt is dtypes.float64 else dtypes.float32


def _rows_per_group(dev, kernel, rows):
    """Own rows (work-items) per work-group: enough to share each local tile widely (on PoCL 128
    rows a group ran the forward in 70 ms of CPU time, 32 in 88 ms), no more than there are rows,
    within the kernel's queried limit. PoCL takes the limit whatever the rows: it generates a
    kernel's code for each local size, and these kernels took 2-20 s each (2-core Xeon, pip's
    PoCL; a new sequence length cost 25-40 s of builds), while the idle rows of a short
    sequence only test their index (3.1-3.4 ms a causal step of 8 x 4 heads of 9 x 24 either
    way)."""
    most = group_limit(dev, kernel, 128 if dev.cpu_paths else 64)
    return most if dev.compiles_per_local_size else max(1, min(most, rows))


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
    variant = rows_variant(dev, dt, L, S, E, Ev)
    if variant is not None:
        return _rows_fwd(variant, q, k, v, out, lse, mask, causal, scale, groups, Hq, p, rng)
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
    variant = rows_variant(dev, dt, L, S, E, Ev)
    if variant is not None:
        return _rows_bwd(variant, q, k, v, dout, lse, dd, dq, dk, dv, tail)
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
