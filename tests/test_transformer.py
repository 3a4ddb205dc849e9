"""MultiheadAttention and the transformer layers against numpy references with the same weights,
scaled_dot_product_attention against numpy, gradients by finite differences, and errors."""
import numpy as np
import pytest

import clgrad
import clgrad.nn.functional as F
from clgrad import nn
from clgrad.autograd import gradcheck, gradgradcheck


def _softmax(s):
    s = s - s.max(-1, keepdims=True)
    e = np.exp(s)
    return e / e.sum(-1, keepdims=True)


def _np(t):
    return None if t is None else t.detach().numpy()


def _np_mha(m, q, k, v, attn_mask=None, key_padding_mask=None):
    """torch's documented MultiheadAttention on time-first inputs, in numpy: bool masks are
    True where attention is not allowed, float masks are added to the scores."""
    E, H = m.embed_dim, m.num_heads
    hd = E // H
    if m._qkv_same_embed_dim:
        wq, wk, wv = np.split(_np(m.in_proj_weight), 3)
    else:
        wq, wk, wv = _np(m.q_proj_weight), _np(m.k_proj_weight), _np(m.v_proj_weight)
    bq = bk = bv = 0
    if m.in_proj_bias is not None:
        bq, bk, bv = np.split(_np(m.in_proj_bias), 3)
    Q, K, V = q @ wq.T + bq, k @ wk.T + bk, v @ wv.T + bv          # [L, N, E], [S, N, E]
    L, N, _ = Q.shape
    if m.bias_k is not None:
        K = np.concatenate([K, np.broadcast_to(_np(m.bias_k), (1, N, E))])
        V = np.concatenate([V, np.broadcast_to(_np(m.bias_v), (1, N, E))])
    S = K.shape[0]
    mask = np.zeros((N, 1, L, S))
    if attn_mask is not None:
        am = np.where(attn_mask, -np.inf, 0) if attn_mask.dtype == bool else attn_mask
        mask = mask + np.pad(am, ((0, 0), (0, S - am.shape[1])))
    if key_padding_mask is not None:
        kp = np.where(key_padding_mask, -np.inf, 0)
        mask = mask + np.pad(kp, ((0, 0), (0, S - kp.shape[1])))[:, None, None, :]
    heads = lambda X: X.reshape(X.shape[0], N, H, hd).transpose(1, 2, 0, 3)  # noqa: E731
    Qh, Kh, Vh = heads(Q), heads(K), heads(V)                       # [N, H, L|S, hd]
    if m.add_zero_attn:
        Kh = np.concatenate([Kh, np.zeros((N, H, 1, hd))], 2)
        Vh = np.concatenate([Vh, np.zeros((N, H, 1, hd))], 2)
        mask = np.pad(mask, ((0, 0), (0, 0), (0, 0), (0, 1)))
    w = _softmax(Qh @ Kh.transpose(0, 1, 3, 2) / np.sqrt(hd) + mask)
    out = (w @ Vh).transpose(2, 0, 1, 3).reshape(L, N, E)
    out = out @ _np(m.out_proj.weight).T + (0 if m.out_proj.bias is None else
                                            _np(m.out_proj.bias))
    return out, w


MHA_CASES = [{}, dict(batch_first=True), dict(kdim=3, vdim=5),
             dict(add_bias_kv=True, add_zero_attn=True), dict(bias=False)]


@pytest.mark.parametrize("kw", MHA_CASES, ids=["-".join(k) or "plain" for k in MHA_CASES])
def test_multihead_attention_matches_numpy(device, kw):
    clgrad.manual_seed(0)
    m = nn.MultiheadAttention(8, 2, **kw).double().eval()
    if m.bias_k is not None:
        assert [n for n, _ in m.named_parameters()][:4] == ["in_proj_weight", "in_proj_bias",
                                                            "bias_k", "bias_v"]
    rng = np.random.default_rng(0)
    L, S, N = 3, 4, 2
    q = rng.standard_normal((L, N, 8))
    k = rng.standard_normal((S, N, m.kdim))
    v = rng.standard_normal((S, N, m.vdim))
    am = rng.random((L, S)) < 0.3
    am[:, 0] = False
    kpm = np.zeros((N, S), bool)
    kpm[1, 2:] = True
    fm = rng.standard_normal((L, S))
    bf = m.batch_first
    args = [clgrad.tensor(t.transpose(1, 0, 2) if bf else t) for t in (q, k, v)]
    for masks in ({}, dict(attn_mask=am), dict(key_padding_mask=kpm),
                  dict(attn_mask=fm, key_padding_mask=kpm)):
        ref, w = _np_mha(m, q, k, v, **masks)
        cm = {n: clgrad.tensor(a) for n, a in masks.items()}
        out, weights = m(*args, **cm)
        out = _np(out).transpose(1, 0, 2) if bf else _np(out)
        np.testing.assert_allclose(out, ref, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(_np(weights), w.mean(1), rtol=1e-9, atol=1e-12)
        per_head = m(*args, **cm, average_attn_weights=False)[1]
        np.testing.assert_allclose(_np(per_head), w, rtol=1e-9, atol=1e-12)
        out2, none = m(*args, **cm, need_weights=False)            # through SDPA
        assert none is None
        out2 = _np(out2).transpose(1, 0, 2) if bf else _np(out2)
        np.testing.assert_allclose(out2, ref, rtol=1e-9, atol=1e-12)


def _np_layer_norm(x, ln):
    mu = x.mean(-1, keepdims=True)
    var = x.var(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + ln.eps) * _np(ln.weight) + _np(ln.bias)


@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_layer_matches_numpy(device, norm_first):
    clgrad.manual_seed(0)
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, norm_first=norm_first,
                                       activation="relu").double().eval()
    x = np.random.default_rng(1).standard_normal((5, 2, 8))
    mask = np.triu(np.full((5, 5), -np.inf), 1)

    def sa(y):
        return _np_mha(layer.self_attn, y, y, y, attn_mask=mask)[0]

    def ff(y):
        h = np.maximum(y @ _np(layer.linear1.weight).T + _np(layer.linear1.bias), 0)
        return h @ _np(layer.linear2.weight).T + _np(layer.linear2.bias)
    if norm_first:
        ref = x + sa(_np_layer_norm(x, layer.norm1))
        ref = ref + ff(_np_layer_norm(ref, layer.norm2))
    else:
        ref = _np_layer_norm(x + sa(x), layer.norm1)
        ref = _np_layer_norm(ref + ff(ref), layer.norm2)
    out = layer(clgrad.tensor(x), src_mask=nn.Transformer.generate_square_subsequent_mask(
        5, dtype=clgrad.float64), is_causal=True)
    np.testing.assert_allclose(_np(out), ref, rtol=1e-9, atol=1e-12)
    # a stack of copies: the same as applying the layer twice (copies start equal)
    enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False).eval()
    once = layer(clgrad.tensor(x))
    np.testing.assert_allclose(_np(enc(clgrad.tensor(x))), _np(layer(once)), rtol=1e-9,
                               atol=1e-12)


def test_decoder_and_transformer_shapes_and_parameter_names(device):
    clgrad.manual_seed(0)
    model = nn.Transformer(8, 2, 1, 1, 16, dropout=0.0, batch_first=True).eval()
    names = list(model.state_dict())
    assert "encoder.layers.0.self_attn.in_proj_weight" in names
    assert "decoder.layers.0.multihead_attn.out_proj.bias" in names
    assert "decoder.layers.0.norm3.weight" in names and "decoder.norm.bias" in names
    src, tgt = clgrad.randn(2, 6, 8), clgrad.randn(2, 4, 8)
    out = model(src, tgt, tgt_mask=model.generate_square_subsequent_mask(4))
    assert out.shape == (2, 4, 8)
    # causality: the first target position does not see the later ones
    tgt2 = tgt.clone()
    tgt2[:, 3] = 5.0
    out2 = model(src, tgt2, tgt_mask=model.generate_square_subsequent_mask(4))
    np.testing.assert_allclose(_np(out2[:, :3]), _np(out[:, :3]), rtol=1e-5, atol=1e-5)
    assert not np.allclose(_np(out2[:, 3]), _np(out[:, 3]))
    with pytest.raises(RuntimeError, match="batch number of src and tgt"):
        model(src, clgrad.randn(3, 4, 8))


def test_sdpa_matches_numpy(device):
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal(s) for s in ((2, 3, 4, 5), (2, 3, 6, 5), (2, 3, 6, 7)))
    scores = q @ k.transpose(0, 1, 3, 2)
    am = rng.random((4, 6)) < 0.7
    am[:, 0] = True
    for kw, s in ((dict(), scores / np.sqrt(5)),
                  (dict(scale=0.5), scores * 0.5),
                  (dict(is_causal=True), scores / np.sqrt(5) + np.triu(np.full((4, 6), -np.inf),
                                                                        1)),
                  (dict(attn_mask=am), scores / np.sqrt(5) + np.where(am, 0, -np.inf))):
        ckw = {n: clgrad.tensor(a) if isinstance(a, np.ndarray) else a for n, a in kw.items()}
        out = F.scaled_dot_product_attention(*(clgrad.tensor(t) for t in (q, k, v)), **ckw)
        np.testing.assert_allclose(_np(out), _softmax(s) @ v, rtol=1e-9, atol=1e-12)
    with pytest.raises(RuntimeError, match="is_causal"):
        F.scaled_dot_product_attention(clgrad.tensor(q), clgrad.tensor(k), clgrad.tensor(v),
                                       attn_mask=clgrad.tensor(am), is_causal=True)


def test_attention_gradients(device):
    clgrad.manual_seed(0)
    q, k, v = (clgrad.randn(1, 2, 3, 2, dtype=clgrad.float64, requires_grad=True)
               for _ in range(3))
    assert gradcheck(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
                     (q, k, v))
    assert gradgradcheck(lambda q, k, v: F.scaled_dot_product_attention(q, k, v), (q, k, v))
    m = nn.MultiheadAttention(4, 2).double()
    x = clgrad.randn(3, 1, 4, dtype=clgrad.float64, requires_grad=True)
    assert gradcheck(lambda x, *w: m(x, x, x)[0], (x,) + tuple(m.parameters()))


def test_mha_errors():
    m = nn.MultiheadAttention(8, 2)
    x = clgrad.randn(3, 2, 8)
    with pytest.raises(RuntimeError, match=r"2D attn_mask is \(2, 2\), but should be \(3, 3\)"):
        m(x, x, x, attn_mask=clgrad.zeros(2, 2))
    with pytest.raises(AssertionError, match="divisible"):
        nn.MultiheadAttention(6, 4)
    with pytest.raises(RuntimeError, match="Need attn_mask"):
        m(x, x, x, is_causal=True)
