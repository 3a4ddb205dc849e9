"""Scaled dot-product attention, torch.nn.functional.scaled_dot_product_attention's semantics.

softmax(q @ k^T * scale + mask) @ v over the last two dimensions, any leading batch dimensions.
This is the composed form: matmul, softmax and dropout ops, so it differentiates to any order.
It materialises the [L, S] attention matrix.
"""
import math

from .. import dtypes
from ..tensor import Tensor


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
    from .creation import ones, zeros
    from .pointwise import where

    if is_causal:
        attn_mask = ones(L, S, dtype=dtypes.bool_, device=device).tril()
    if attn_mask is None:
        return None
    if attn_mask.dtype == dtypes.bool_:
        z = zeros((), dtype=dtype, device=device)
        return where(attn_mask, z, z - math.inf)
    return attn_mask.to(dtype)


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
    from . import softmax as _softmax
    from .linalg import matmul

    _check(query, key, value, attn_mask, dropout_p, is_causal, enable_gqa)
    L, S, E = query.shape[-2], key.shape[-2], query.shape[-1]
    if scale is None:
        scale = 1.0 / math.sqrt(E) if E else 1.0
    if enable_gqa and query.dim() >= 3 and key.dim() >= 3:
        groups = query.shape[-3] // key.shape[-3]
        key, value = _repeat_heads(key, groups), _repeat_heads(value, groups)
    scores = matmul(query, key.transpose(-2, -1)) * scale
    mask = additive_mask(attn_mask, is_causal, L, S, scores.dtype, query.device)
    if mask is not None:
        scores = scores + mask
    weights = _softmax.softmax(scores, -1)
    if dropout_p > 0.0:
        from ..nn.functional import dropout
        weights = dropout(weights, dropout_p)
    return matmul(weights, value)
