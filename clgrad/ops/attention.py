"""Scaled dot-product attention, torch.nn.functional.scaled_dot_product_attention's semantics.

softmax(q @ k^T * scale + mask) @ v over the last two dimensions, any leading batch dimensions.

Two forms:
- fused (cl_kernels/attention.mako): one kernel forward, two backward (dQ; dK and dV), tiled with
  an online softmax, so memory grows with L + S, never L * S. Forward saves each row's
  logsumexp; backward recomputes the probabilities tile by tile from it and regenerates the
  dropout mask from the same Philox counters. Used whenever the output has elements and the
  mask (if any) does not require grad.
- composed: matmul, softmax and dropout ops (it materialises the [L, S] matrix). Used for a mask
  that requires grad and for empty outputs.
Double backward: when the fused op's backward is itself recorded (create_graph=True), it gives
its gradients by recomputing the composed form from the saved inputs (with the dropout mask the
forward drew), so gradients of gradients exist; a plain backward runs the fused kernels.
Rows whose every key is masked give zeros and zero gradients, as torch 2.13 on CPU.
"""
import math

from .. import dtypes
from ..autograd.op import Op
from ..autograd.grad_mode import enable_grad, is_grad_enabled, no_grad
from ..kernels.softmax import causal_rows
from ..kernels.attention import (attn_bwd_raw, attn_fwd_raw, dropout_mask_raw, lse_dtype,
                                 rows_faster)
from ..tensor import Tensor
from ._base import broadcast_shapes, contiguous_raw, recorded_grads
from .creation import ones, zeros
from .pointwise import where
from .join import cat
from .linalg import matmul
from . import softmax as _softmax, creation
from .dropout import dropout


# The forms F.scaled_dot_product_attention may take, set by clgrad.nn.attention.sdpa_kernel as
# torch's context manager sets its backends: "fused" (torch's FLASH_ATTENTION and
# EFFICIENT_ATTENTION) and "math" (the composed form); with `priority`, the first usable one.
BACKENDS = {"enabled": ("fused", "math"), "priority": False}

# On the CPU code paths the composed form was faster than attention.mako's kernels at every size
# measured (PoCL on 2 cores: 61 vs 88 ms at T=512 causal: its GEMMs are register-blocked, those
# kernels keep one row per work-item). The CPU paths use it until its [N, L, S] score matrices
# would reach CPU_FUSED_FROM elements (128 MiB in float32), from where memory decides, or where
# the register-blocked kernels (clgrad.kernels.attention.rows_faster) beat it. GPU paths use the
# fused kernels: they never write the score matrices to global memory.
CPU_FUSED_FROM = 1 << 25


def _form(device, n_scores, why_not_fused, faster=False):
    """'fused' or 'math' for an attention of n_scores scores on `device` (a runtime Device),
    within the enabled backends; `faster`: the fused kernels are the faster form there."""
    usable = [f for f in BACKENDS["enabled"] if f == "math" or why_not_fused is None]
    if not usable:
        reason = f"the fused kernels do not take {why_not_fused}" if why_not_fused else \
            "no backend clgrad has (MATH, FLASH_ATTENTION, EFFICIENT_ATTENTION) is enabled"
        raise RuntimeError(f"scaled_dot_product_attention: No available kernel: {reason} "
                           f"(see clgrad.nn.attention.sdpa_kernel)")
    if BACKENDS["priority"] or len(usable) == 1:
        return usable[0]
    fused = not device.cpu_paths or faster or n_scores >= CPU_FUSED_FROM
    return "fused" if fused else "math"


def _check(query, key, value, attn_mask, dropout_p, is_causal, enable_gqa):
    for name, t in (("query", query), ("key", key), ("value", value)):
        if not isinstance(t, Tensor):
            raise TypeError(f"scaled_dot_product_attention(): argument '{name}' must be Tensor, "
                            f"not {type(t).__name__}")
    shapes = f"query {tuple(query.shape)}, key {tuple(key.shape)}, value {tuple(value.shape)}"
    if query.dim() < 2 or key.dim() < 2 or value.dim() < 2:
        raise RuntimeError(f"scaled_dot_product_attention(): query, key and value need at least "
                           f"2 dimensions, got {shapes}")
    if query.shape[-1] != key.shape[-1] or key.shape[-2] != value.shape[-2]:
        raise RuntimeError(f"scaled_dot_product_attention(): query and key need the same last "
                           f"dimension and key and value the same sequence length, got {shapes}")
    if not (query.dtype == key.dtype == value.dtype):
        raise RuntimeError(f"scaled_dot_product_attention(): expected query, key and value to "
                           f"have the same dtype, but got query.dtype: {query.dtype} key.dtype: "
                           f"{key.dtype} and value.dtype: {value.dtype} instead.")
    if not query.dtype.is_floating_point:
        raise RuntimeError(f"scaled_dot_product_attention(): expected a floating-point query, "
                           f"got {query.dtype}")
    if not 0.0 <= dropout_p <= 1.0:
        raise ValueError(f"scaled_dot_product_attention(): dropout_p must be in [0, 1], "
                         f"got {dropout_p}")
    if is_causal and attn_mask is not None:
        raise RuntimeError("scaled_dot_product_attention(): _scaled_dot_product_attention: "
                           "Explicit attn_mask should not be set when is_causal=True")
    if enable_gqa and query.dim() >= 3 and key.dim() >= 3:
        hq, hk = query.shape[-3], key.shape[-3]
        if hk == 0 or hq % hk or value.shape[-3] != hk:
            raise RuntimeError(f"scaled_dot_product_attention(): with enable_gqa the query heads "
                               f"must be a multiple of the key/value heads, got {shapes}")


def _repeat_heads(t, groups):
    """[..., H, S, E] -> [..., H*groups, S, E], each head repeated `groups` times in a row."""
    if groups == 1:
        return t
    return t.repeat_interleave(groups, dim=-3)


def additive_mask(attn_mask, is_causal, L, S, dtype, device):
    """The float mask that is added to the scores: 0 where attention is allowed, -inf where not
    (a bool mask says True = attend; a float mask is used as given). None when there is none."""

    if is_causal:
        attn_mask = ones(L, S, dtype=dtypes.bool_, device=device).tril()
    if attn_mask is None:
        return None
    if attn_mask.dtype == dtypes.bool_:
        z = zeros((), dtype=dtype, device=device)
        return where(attn_mask, z, z - math.inf)
    return attn_mask.to(dtype)


# The composed causal form in blocks of query rows: rows r0..r1 see keys 0..r1 only (the causal
# mask is top-left aligned), so block i multiplies with i + 1 key blocks and the scores above the
# diagonal blocks are never formed: n blocks do (n + 1) / 2n of the full GEMM and softmax work.
CAUSAL_BLOCK_ROWS = 256


def _causal_blocked(query, key, value, scale, dropout_p):
    """The composed causal attention over blocks of CAUSAL_BLOCK_ROWS query rows (L >= 2 blocks,
    no attn_mask)."""
    L, S = query.shape[-2], key.shape[-2]
    n = L // CAUSAL_BLOCK_ROWS
    bounds = [L * i // n for i in range(n + 1)]
    q = query * scale
    outs = []
    for r0, r1 in zip(bounds, bounds[1:]):
        keys = min(r1, S)            # rows below S see every key
        scores = matmul(q[..., r0:r1, :], key[..., :keys, :].transpose(-2, -1))
        weights = _causal_softmax(scores, r0)
        if dropout_p > 0.0:
            weights = dropout(weights, dropout_p)
        outs.append(matmul(weights, value[..., :keys, :]))
    return cat(outs, -2)


def _softmax_last(scores):
    return _softmax.softmax(scores, -1)


def _causal_softmax(scores, first=0):
    """softmax of causal attention scores (..., L, S) whose query i is i + first: the keys after
    it get 0. One pass where the kernel takes the scores (CPU code paths), else the -inf mask is
    added first."""
    if causal_rows(scores._storage.device, scores):
        return _softmax.CausalSoftmax.apply(scores, first)
    L, S = scores.shape[-2], scores.shape[-1]
    mask = additive_mask(None, True, first + L, S, scores.dtype, scores.device)
    return _softmax_last(scores + (mask[first:] if first else mask))


def _safe_softmax(scores):
    """softmax over the last dim, with zeros for rows whose every score is -inf (torch's
    _safe_softmax: a fully masked row attends to nothing)."""
    dead = (scores == -math.inf).all(-1, keepdim=True)
    zero = scores.new_zeros(())
    # The dead rows' scores are replaced before the softmax too: a softmax of all -inf is NaN,
    # and its backward would carry that NaN into the gradients even where the output is masked.
    w = _softmax.softmax(where(dead, zero, scores), -1)
    return where(dead, zero, w)


def _composed_flat(q, k, v, mask, causal, scale, groups, z):
    """The fused op's result in clgrad ops on its flat operands (what double backward
    differentiates): q [N, L, E], k and v [N / groups, S, *], mask (No, Hq, L, S) or None, z the
    dropout factors or None."""
    N, L, S = q.shape[0], q.shape[1], k.shape[1]
    if groups > 1:
        k, v = k.repeat_interleave(groups, dim=0), v.repeat_interleave(groups, dim=0)
    scores = matmul(q, k.transpose(-2, -1)) * scale
    if mask is not None:
        w = _safe_softmax(scores + mask.reshape(N, L, S))
    else:
        w = _causal_softmax(scores) if causal else _softmax_last(scores)
    if z is not None:
        w = w * z
    return matmul(w, v)


class FusedAttention(Op):
    """out [N, L, Ev] of q [N, L, E], k [Nk, S, E], v [Nk, S, Ev] (N = Nk * groups) with an
    optional additive mask viewed as (N / Hq, Hq, L, S), in the fused kernels."""

    _forward_uses_ops = False

    @staticmethod
    def forward(ctx, q, k, v, mask, causal, scale, groups, Hq, p):
        # The inputs themselves are saved (double backward differentiates through them); the
        # kernels read contiguous copies where an input is a strided view.
        given = (q, k, v)
        q, k, v = contiguous_raw(q), contiguous_raw(k), contiguous_raw(v)
        N, L, _ = q._shape
        S = v._shape[1]
        rng = creation.default_generator.take(N * L * S) if p > 0 else (0, 0)
        out, lse = attn_fwd_raw(q, k, v, mask, causal, scale, groups, Hq, p, rng)
        ctx.save_for_backward(*given, out)
        ctx.raw = (q, k, v)
        ctx.lse, ctx.mask, ctx.rng = lse, mask, rng
        ctx.args = (causal, scale, groups, Hq, p)
        return out

    @staticmethod
    def backward(ctx, dout):
        causal, scale, groups, Hq, p = ctx.args
        q, k, v = ctx.raw
        dev, dt = q._storage.device, q._dtype
        N, L, E = q._shape
        Nk, S, Ev = v._shape
        if is_grad_enabled():            # create_graph: the composed form, differentiable again
            z = dropout_mask_raw(dt, dev, N, L, S, p, ctx.rng) if p > 0 else None
            q, k, v, _ = ctx.saved_tensors
            with enable_grad():
                o = _composed_flat(q, k, v, ctx.mask, causal, scale, groups, z)
            return (*recorded_grads((q, k, v), (o,), (dout,)), None, None, None, None, None, None)
        out = ctx.saved_tensors[3]
        dout = contiguous_raw(dout)
        lt = lse_dtype(dt)
        with no_grad():                  # D = rowsum(dO * out), in the compute type
            dd = contiguous_raw((dout.to(lt) * out.to(lt)).sum(-1))
        dq, dk, dv = attn_bwd_raw(q, k, v, dout, ctx.lse, dd, ctx.mask, causal, scale, groups,
                                  Hq, p, ctx.rng)
        return dq, dk, dv, None, None, None, None, None, None


def _fused(query, key, value, attn_mask, dropout_p, is_causal, scale, gqa):
    """Flatten the batch dims (broadcast, heads last), run FusedAttention, shape the result."""
    L, S, E, Ev = query.shape[-2], key.shape[-2], query.shape[-1], value.shape[-1]
    bq, bk, bv = tuple(query.shape[:-2]), tuple(key.shape[:-2]), tuple(value.shape[:-2])
    if gqa:
        outer = broadcast_shapes(bq[:-1], bk[:-1], bv[:-1])
        Hq, Hk = bq[-1], bk[-1]
        qb, kb = outer + (Hq,), outer + (Hk,)
    else:
        qb = kb = broadcast_shapes(bq, bk, bv)
        Hq = Hk = qb[-1] if qb else 1
    N = math.prod(qb)
    Nk = math.prod(kb)
    q = query.expand(qb + (L, E)).reshape(N, L, E)
    k = key.expand(kb + (S, E)).reshape(Nk, S, E)
    v = value.expand(kb + (S, Ev)).reshape(Nk, S, Ev)
    mask = None
    if attn_mask is not None:
        with no_grad():
            m = additive_mask(attn_mask, False, L, S, query.dtype, query.device)
            mask = m.expand(qb + (L, S)).reshape(N // Hq, Hq, L, S)
    out = FusedAttention.apply(q, k, v, mask, bool(is_causal), float(scale), Hq // Hk, Hq,
                               float(dropout_p))
    return out.reshape(qb + (L, Ev))


def made_by_fused_kernels(out):
    """Whether the fused kernels made `out` (a result of scaled_dot_product_attention that
    requires grad): a FusedAttention node in its graph. For tests and benchmarks.

    >>> import clgrad, clgrad.nn.functional as F
    >>> from clgrad.nn.attention import SDPBackend, sdpa_kernel
    >>> q = clgrad.randn(1, 4, 8, requires_grad=True)
    >>> with sdpa_kernel(SDPBackend.MATH):
    ...     made_by_fused_kernels(F.scaled_dot_product_attention(q, q, q))
    False
    """
    todo = [out.grad_fn]
    while todo:
        fn = todo.pop()
        if fn is not None:
            if type(fn).__name__.startswith("FusedAttention"):
                return True
            todo.extend(nxt for nxt, _ in fn.next_functions)
    return False


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, scale=None, enable_gqa=False):
    """softmax(query @ key^T * scale + mask) @ value, as torch's.

    query [..., L, E], key [..., S, E], value [..., S, Ev] -> [..., L, Ev]. `attn_mask`
    broadcasts to [..., L, S]: bool (True = take part) or float (added to the scores).
    `is_causal` masks the upper triangle; `scale` defaults to 1/sqrt(E); `dropout_p` drops
    attention weights (training code passes 0.0 at evaluation, as with torch).

    >>> import clgrad, clgrad.nn.functional as F
    >>> q = k = v = clgrad.ones(1, 2, 3, 4)
    >>> F.scaled_dot_product_attention(q, k, v, is_causal=True).shape
    clgrad.Size([1, 2, 3, 4])
    """

    _check(query, key, value, attn_mask, dropout_p, is_causal, enable_gqa)
    L, S, E = query.shape[-2], key.shape[-2], query.shape[-1]
    if scale is None:
        scale = 1.0 / math.sqrt(E) if E else 1.0
    gqa = enable_gqa and query.dim() >= 3 and key.dim() >= 3
    empty = L * S * value.shape[-1] == 0 or 0 in query.shape[:-2] or 0 in key.shape[:-2]
    mask_grad = attn_mask is not None and attn_mask.requires_grad and is_grad_enabled()
    why_not = "an empty input" if empty else "an attn_mask that requires grad" if mask_grad \
        else None
    dev = query._storage.device
    faster = rows_faster(dev, query.dtype, L, S, E, value.shape[-1], is_causal)
    if _form(dev, math.prod(query.shape[:-2]) * L * S, why_not, faster) == "fused":
        return _fused(query, key, value, attn_mask, dropout_p, is_causal, scale, gqa)
    if gqa:
        groups = query.shape[-3] // key.shape[-3]
        key, value = _repeat_heads(key, groups), _repeat_heads(value, groups)
    if is_causal and attn_mask is None and L >= 2 * CAUSAL_BLOCK_ROWS:
        return _causal_blocked(query, key, value, scale, dropout_p)
    # the scale goes on the query (L x E) rather than on the scores (L x S): one pass less over
    # the largest tensor, forward and backward
    scores = matmul(query * scale, key.transpose(-2, -1))
    # only a mask can leave a row with nothing to attend to (a causal row always has its first
    # key): the plain softmax spares the safe one's three extra passes
    if is_causal:
        weights = _causal_softmax(scores)
    elif attn_mask is not None:
        weights = _safe_softmax(scores + additive_mask(attn_mask, False, L, S, scores.dtype,
                                                       query.device))
    else:
        weights = _softmax_last(scores)
    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p)
    return matmul(weights, value)
