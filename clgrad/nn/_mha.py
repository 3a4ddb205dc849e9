"""F.multi_head_attention_forward: the computation of nn.MultiheadAttention, as torch's.

Masks follow torch's MultiheadAttention convention (the opposite of scaled_dot_product_attention's
bool masks): True in a bool `attn_mask` or `key_padding_mask` means "do not attend"; a float mask
is added to the scores. Without `need_weights` the heads go through
F.scaled_dot_product_attention; with it the weights are computed explicitly and returned.
"""
import math

from .. import dtypes
from ..ops import dispatch
from ..ops.attention import scaled_dot_product_attention
from ..ops.creation import zeros
from ..ops.dropout import dropout
from ..ops.join import cat
from ..ops.linalg import baddbmm, bmm
from ..ops.pointwise import where
from ..ops.shape import pad
from ..ops.softmax import softmax


def _float_mask(mask, name, dtype):
    """A bool mask (True = masked) as 0 / -inf in dtype; a float mask as it is."""
    if mask is None:
        return None
    if mask.dtype == dtypes.bool_:
        z = zeros((), dtype=dtype, device=mask.device)
        return where(mask, z - math.inf, z)
    if not mask.dtype.is_floating_point:
        raise AssertionError(f"only bool and floating types of {name} are supported")
    return mask.to(dtype)


def _linear(x, w, b):
    # through nn.functional's namespace: an autocast region's wrapper of linear applies to the
    # projections (clgrad/ops/dispatch.py)
    return dispatch.F.linear(x, w, b)


def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads,
                                 in_proj_weight, in_proj_bias, bias_k, bias_v, add_zero_attn,
                                 dropout_p, out_proj_weight, out_proj_bias, training=True,
                                 key_padding_mask=None, need_weights=True, attn_mask=None,
                                 use_separate_proj_weight=False, q_proj_weight=None,
                                 k_proj_weight=None, v_proj_weight=None, static_k=None,
                                 static_v=None, average_attn_weights=True, is_causal=False):
    """Multi-head attention of query [L, N, E] over key [S, N, kdim] / value [S, N, vdim] (or
    unbatched [L, E] ...): (output [L, N, E], weights [N, L, S] or per head [N, H, L, S], or
    None without need_weights).

    >>> import clgrad, clgrad.nn.functional as F
    >>> E, H = 4, 2
    >>> x = clgrad.randn(3, 1, E)
    >>> out, w = F.multi_head_attention_forward(x, x, x, E, H, clgrad.randn(3 * E, E),
    ...     clgrad.zeros(3 * E), None, None, False, 0.0, clgrad.randn(E, E), clgrad.zeros(E))
    >>> out.shape, w.shape
    (clgrad.Size([3, 1, 4]), clgrad.Size([1, 3, 3]))
    """
    batched = query.dim() == 3
    if query.dim() not in (2, 3) or key.dim() != query.dim() or value.dim() != query.dim():
        raise AssertionError(f"query should be unbatched 2D or batched 3D tensor, key and value "
                             f"the same, but received query {tuple(query.shape)}, key "
                             f"{tuple(key.shape)} and value {tuple(value.shape)}")
    if not batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    L, N, E = query.shape
    S = key.shape[0]
    if E != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but "
                             f"got {E}")
    head_dim = E // num_heads
    if head_dim * num_heads != E:
        raise AssertionError(f"embed_dim {E} not divisible by num_heads {num_heads}")
    if key.shape[:2] != value.shape[:2]:
        raise AssertionError(f"key shape {tuple(key.shape)} does not match value shape "
                             f"{tuple(value.shape)}")
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the "
                           "Transformer module method `generate_square_subsequent_mask` to "
                           "create this mask.")
    if is_causal and key_padding_mask is None and not need_weights:
        attn_mask = None                    # the kernel's own causal masking replaces it
    else:
        is_causal = False
    dt = query.dtype
    attn_mask = _float_mask(attn_mask, "attn_mask", dt)
    key_padding_mask = _float_mask(key_padding_mask, "key_padding_mask", dt)

    # input projections
    if use_separate_proj_weight:
        bq = bk = bv = None
        if in_proj_bias is not None:
            bq, bk, bv = in_proj_bias.chunk(3)
        q = _linear(query, q_proj_weight, bq)
        k = _linear(key, k_proj_weight, bk)
        v = _linear(value, v_proj_weight, bv)
    else:
        wq, wk, wv = in_proj_weight.chunk(3)
        bq = bk = bv = None
        if in_proj_bias is not None:
            bq, bk, bv = in_proj_bias.chunk(3)
        q, k, v = _linear(query, wq, bq), _linear(key, wk, bk), _linear(value, wv, bv)

    if attn_mask is not None:
        if attn_mask.dim() == 2:
            if tuple(attn_mask.shape) != (L, S):
                raise RuntimeError(f"The shape of the 2D attn_mask is {tuple(attn_mask.shape)}, "
                                   f"but should be {(L, S)}.")
            attn_mask = attn_mask.unsqueeze(0)
        elif attn_mask.dim() == 3:
            if tuple(attn_mask.shape) != (N * num_heads, L, S):
                raise RuntimeError(f"The shape of the 3D attn_mask is {tuple(attn_mask.shape)}, "
                                   f"but should be {(N * num_heads, L, S)}.")
        else:
            raise RuntimeError(f"attn_mask's dimension {attn_mask.dim()} is not supported")

    if bias_k is not None and bias_v is not None:
        k = cat([k, bias_k.expand(1, N, E)])
        v = cat([v, bias_v.expand(1, N, E)])
        if attn_mask is not None:
            attn_mask = pad(attn_mask, (0, 1))
        if key_padding_mask is not None:
            key_padding_mask = pad(key_padding_mask, (0, 1))

    # heads: [L, N, E] -> [N * H, L, head_dim]
    q = q.reshape(L, N * num_heads, head_dim).transpose(0, 1)
    k = k.reshape(k.shape[0], N * num_heads, head_dim).transpose(0, 1)
    v = v.reshape(v.shape[0], N * num_heads, head_dim).transpose(0, 1)
    if add_zero_attn:
        k = cat([k, zeros((N * num_heads, 1, head_dim), dtype=dt, device=k.device)], 1)
        v = cat([v, zeros((N * num_heads, 1, head_dim), dtype=dt, device=v.device)], 1)
        if attn_mask is not None:
            attn_mask = pad(attn_mask, (0, 1))
        if key_padding_mask is not None:
            key_padding_mask = pad(key_padding_mask, (0, 1))
    S = k.shape[1]
    if key_padding_mask is not None:
        if tuple(key_padding_mask.shape) != (N, S):
            raise AssertionError(f"expecting key_padding_mask shape of {(N, S)}, but got "
                                 f"{tuple(key_padding_mask.shape)}")
        kpm = key_padding_mask.reshape(N, 1, 1, S).expand(N, num_heads, 1, S) \
            .reshape(N * num_heads, 1, S)
        attn_mask = kpm if attn_mask is None else attn_mask + kpm
    if not training:
        dropout_p = 0.0

    if need_weights:
        scores = q * math.sqrt(1.0 / head_dim)
        if attn_mask is not None:
            scores = baddbmm(attn_mask.expand(N * num_heads, L, S), scores, k.transpose(-2, -1))
        else:
            scores = bmm(scores, k.transpose(-2, -1))
        weights = softmax(scores, -1)
        if dropout_p > 0.0:
            weights = dropout(weights, p=dropout_p)
        out = bmm(weights, v)                                    # [N*H, L, hd]
        out = out.transpose(0, 1).reshape(L * N, E)
        out = _linear(out, out_proj_weight, out_proj_bias).reshape(L, N, E)
        weights = weights.reshape(N, num_heads, L, S)
        if average_attn_weights:
            weights = weights.mean(1)
        if not batched:
            out, weights = out.squeeze(1), weights.squeeze(0)
        return out, weights

    if attn_mask is not None:
        attn_mask = attn_mask.reshape(N, num_heads, -1, S) if attn_mask.shape[0] != 1 else \
            attn_mask.unsqueeze(0)
    q = q.reshape(N, num_heads, L, head_dim)
    k = k.reshape(N, num_heads, S, head_dim)
    v = v.reshape(N, num_heads, S, head_dim)
    out = scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal)
    out = out.permute(2, 0, 1, 3).reshape(L * N, E)
    out = _linear(out, out_proj_weight, out_proj_bias).reshape(L, N, E)
    if not batched:
        out = out.squeeze(1)
    return out, None
