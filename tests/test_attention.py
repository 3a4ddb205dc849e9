"""F.scaled_dot_product_attention's fused kernels (cl_kernels/attention.mako): forward and the
three gradients against a float64 numpy reference (masks, causal, L != S, grouped-query heads,
odd head dims, tile and chunk edges), every float dtype, non-contiguous and empty inputs,
gradcheck / gradgradcheck, dropout (reproducible, its rate, the same mask in backward), fully
masked rows (torch 2.13 gives zeros) and errors. The fused kernels are put first here
(sdpa_kernel with priority); the composed MATH form runs the numpy comparisons too, and
test_backend_choice checks which form runs when."""
import numpy as np
import pytest

import clgrad
import clgrad.nn.functional as F
from clgrad.autograd import gradcheck, gradgradcheck
from clgrad.nn.attention import SDPBackend, sdpa_kernel
from clgrad.ops.attention import made_by_fused_kernels

from helpers import assert_close, float_dtypes, make, rounded, to_np


@pytest.fixture(autouse=True)
def fused_first():
    """The fused kernels wherever they apply (the CPU paths would otherwise pick MATH at these
    sizes), the composed form where they do not (empty inputs, a mask that requires grad)."""
    with sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.MATH], set_priority=True):
        yield


def np_attention(q, k, v, dout, mask=None, causal=False, scale=None, groups=1, z=None):
    """(out, dq, dk, dv) in float64: mask additive (broadcast to [..., L, S]), z dropout factors."""
    L, S, E = q.shape[-2], k.shape[-2], q.shape[-1]
    if scale is None:
        scale = 1 / np.sqrt(E) if E else 1.0     # torch's default; E = 0 gives scale 1
    kr, vr = np.repeat(k, groups, axis=-3), np.repeat(v, groups, axis=-3)
    s = q @ np.swapaxes(kr, -1, -2) * scale
    if mask is not None:
        s = s + mask
    if causal:
        s = s + np.triu(np.full((L, S), -np.inf), 1)
    dead = np.all(s == -np.inf, -1, keepdims=True)
    e = np.exp(s - np.where(dead, 0, s.max(-1, keepdims=True, initial=-np.inf)))
    p = np.where(dead, 0, e / np.where(dead, 1, e.sum(-1, keepdims=True)))
    w = p if z is None else p * z
    out = w @ vr
    dw = dout @ np.swapaxes(vr, -1, -2)
    dp = dw if z is None else dw * z
    ds = p * (dp - (p * dp).sum(-1, keepdims=True))
    dq = ds @ kr * scale
    dk = np.swapaxes(ds, -1, -2) @ q * scale
    dv = np.swapaxes(w, -1, -2) @ dout

    def fold(g):                  # the query heads that share a key/value head: summed
        return g.reshape(g.shape[:-3] + (g.shape[-3] // groups, groups) + g.shape[-2:]).sum(-3)
    return out, dq, fold(dk), fold(dv)


def _run(dev, dt, shapes, rng, mask=None, layout="contiguous", **kw):
    """clgrad's output and gradients and the numpy reference's, for q, k, v of `shapes`."""
    arrs = [rounded(rng.standard_normal(s), dt).astype(np.float64) for s in shapes]
    ts = [make(a, dt, dev, layout, requires_grad=True) for a in arrs]
    cm = None if mask is None else clgrad.tensor(mask, device=dev)
    out = F.scaled_dot_product_attention(*ts, attn_mask=cm, **kw)
    dout = rounded(rng.standard_normal(tuple(out.shape)), dt).astype(np.float64)
    out.backward(clgrad.tensor(dout, dtype=dt, device=dev))
    add = None
    if mask is not None:
        add = np.where(mask, 0.0, -np.inf) if mask.dtype == bool else mask.astype(np.float64)
    groups = shapes[0][-3] // shapes[1][-3] if kw.get("enable_gqa") else 1
    ref = np_attention(*arrs, dout, add, kw.get("is_causal", False), kw.get("scale"), groups)
    return [out] + [t.grad for t in ts], ref


# (q shape, k shape, v shape, keywords): crossing the 32-row tiles and the 64-column chunks
CASES = [
    (((2, 3, 5), (2, 7, 5), (2, 7, 3)), {}),
    (((1, 2, 33, 17), (1, 2, 40, 17), (1, 2, 40, 80)), dict(scale=0.3)),
    (((1, 1, 40, 3), (1, 1, 33, 3), (1, 1, 33, 1)), dict(is_causal=True)),
    (((1, 1, 6, 80), (1, 1, 35, 80), (1, 1, 35, 2)), dict(is_causal=True)),
    (((2, 4, 9, 8), (2, 2, 11, 8), (2, 2, 11, 8)), dict(enable_gqa=True)),
    (((1, 1, 130, 1), (1, 1, 3, 1), (1, 1, 3, 2)), {}),
]


@pytest.mark.parametrize("shapes,kw", CASES, ids=[str(i) for i in range(len(CASES))])
@pytest.mark.parametrize("backend", [SDPBackend.FLASH_ATTENTION, SDPBackend.MATH])
def test_matches_numpy(device, code_paths, shapes, kw, backend):
    dt = clgrad.float64 if device.has_fp64 else clgrad.float32
    with sdpa_kernel(backend):
        got, ref = _run(device, dt, shapes, np.random.default_rng(0), **kw)
    assert made_by_fused_kernels(got[0]) == (backend is SDPBackend.FLASH_ATTENTION)
    for g, r in zip(got, ref):
        assert_close(g, r, clgrad.float32)


def test_masks(device, code_paths):
    rng = np.random.default_rng(1)
    dt = clgrad.float32
    bm = rng.random((2, 1, 9, 35)) < 0.6
    bm[0, 0, 3] = False                                  # a row with nothing allowed
    fm = rng.standard_normal((3, 1, 35)).astype(np.float32)
    fm[1, 0, 5] = -np.inf
    for mask in (bm, fm, bm[0, 0]):
        got, ref = _run(device, dt, ((2, 3, 9, 6), (2, 3, 35, 6), (2, 3, 35, 4)), rng, mask)
        for g, r in zip(got, ref):
            assert_close(g, r, dt)
    out = got[0]                       # the fully masked row: zeros (torch 2.13 on CPU)
    assert not np.isnan(to_np(out)).any()


def test_fully_masked_rows_give_zeros_and_zero_gradients(device):
    q, k, v = (clgrad.randn(1, 3, 4, requires_grad=True) for _ in range(3))
    mask = clgrad.tensor([[True, False, True], [False, False, False], [True, True, True]])
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    out.sum().backward()
    assert to_np(out)[0, 1].tolist() == [0.0] * 4
    assert to_np(q.grad)[0, 1].tolist() == [0.0] * 4
    assert np.abs(to_np(q.grad)[0, 0]).sum() > 0


def test_dtypes(device):
    for dt in float_dtypes(device):
        got, ref = _run(device, dt, ((2, 5, 12), (2, 7, 12), (2, 7, 9)),
                        np.random.default_rng(2), is_causal=True)
        assert all(g.dtype is dt for g in got)
        tol = {clgrad.float16: 1e-2, clgrad.bfloat16: 6e-2}.get(dt)
        for g, r in zip(got, ref):
            assert_close(g, r, dt, rtol=tol, atol=tol)


@pytest.mark.parametrize("layout", ["transposed", "strided"])
def test_non_contiguous(device, layout):
    got, ref = _run(device, clgrad.float32, ((2, 2, 5, 4), (2, 2, 6, 4), (2, 2, 6, 4)),
                    np.random.default_rng(3), layout=layout)
    for g, r in zip(got, ref):
        assert_close(g, r, clgrad.float32)


def test_heads_from_a_batch_first_projection(device):
    """q [B, L, H, E] viewed as [B, H, L, E] (what attention layers pass); batch broadcast."""
    rng = np.random.default_rng(4)
    qn, kn, vn = rng.standard_normal((2, 5, 3, 4)), rng.standard_normal((1, 6, 3, 4)), \
        rng.standard_normal((1, 6, 3, 4))
    q, k, v = (clgrad.tensor(a, dtype=clgrad.float32).transpose(1, 2) for a in (qn, kn, vn))
    out = F.scaled_dot_product_attention(q, k, v)
    ref = np_attention(qn.transpose(0, 2, 1, 3), *(np.broadcast_to(a.transpose(0, 2, 1, 3),
                                                                   (2, 3, 6, 4)) for a in (kn, vn)),
                       np.zeros((2, 3, 5, 4)))[0]
    assert_close(out, ref, clgrad.float32)


@pytest.mark.parametrize("shapes", [((2, 0, 4), (2, 3, 4), (2, 3, 5)), ((2, 4, 4), (2, 0, 4),
                                    (2, 0, 5)), ((0, 4, 4), (0, 3, 4), (0, 3, 5)),
                                    ((2, 4, 3), (2, 3, 3), (2, 3, 0)), ((2, 4, 0), (2, 3, 0),
                                                                       (2, 3, 5))])
def test_empty(device, shapes):
    got, ref = _run(device, clgrad.float32, shapes, np.random.default_rng(5))
    for g, r in zip(got, ref):
        assert_close(g, r, clgrad.float32)


def test_gradcheck_and_double_backward(device):
    dt = clgrad.float64 if device.has_fp64 else clgrad.float32
    tol = {} if device.has_fp64 else dict(eps=1e-2, atol=5e-2, rtol=5e-2)
    clgrad.manual_seed(0)
    q = clgrad.randn(1, 2, 3, 2, dtype=dt, requires_grad=True)
    k, v = (clgrad.randn(1, 1, 4, 2, dtype=dt, requires_grad=True) for _ in range(2))
    mask = clgrad.tensor([[True, True, False, True], [False] * 4, [True, False, True, True]])

    def f(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)
    assert gradcheck(f, (q, k, v), **tol)
    assert gradgradcheck(f, (q, k, v), **tol)

    def causal_dropout(q, k, v):           # the same mask every call: reseeded
        clgrad.manual_seed(7)
        return F.scaled_dot_product_attention(q, k.expand(1, 2, 4, 2), v.expand(1, 2, 4, 2),
                                              dropout_p=0.4, is_causal=True)
    assert gradcheck(causal_dropout, (q, k, v), **tol)
    assert gradgradcheck(causal_dropout, (q, k, v), **tol)


def test_float_mask_that_requires_grad(device):
    rng = np.random.default_rng(6)
    q, k, v = (clgrad.tensor(rng.standard_normal((2, 3, 4)), dtype=clgrad.float32,
                             requires_grad=True) for _ in range(3))
    mask = clgrad.tensor(rng.standard_normal((3, 3)), dtype=clgrad.float32, requires_grad=True)
    F.scaled_dot_product_attention(q, k, v, attn_mask=mask).sum().backward()
    qn, kn, vn = (to_np(t) for t in (q, k, v))
    s = qn @ kn.transpose(0, 2, 1) / 2 + to_np(mask)
    p = np.exp(s - s.max(-1, keepdims=True, initial=-np.inf))
    p /= p.sum(-1, keepdims=True)
    dp = np.ones((2, 3, 4)) @ vn.transpose(0, 2, 1)
    assert_close(mask.grad, (p * (dp - (p * dp).sum(-1, keepdims=True))).sum(0), clgrad.float32)


def test_dropout(device, code_paths):
    """v = identity recovers the weights w = p * z: the dropped fraction is p_drop, the kept ones
    are scaled by 1 / (1 - p_drop), the same seed gives the same mask, and the gradients are
    those of the numpy reference with that mask."""
    rng = np.random.default_rng(7)
    L, S, pd = 40, 50, 0.3
    qn, kn = rng.standard_normal((2, L, 3)), rng.standard_normal((2, S, 3))
    vn = np.broadcast_to(np.eye(S), (2, S, S)).copy()
    q, k, v = (clgrad.tensor(a, dtype=clgrad.float32, requires_grad=True) for a in (qn, kn, vn))
    clgrad.manual_seed(3)
    out = F.scaled_dot_product_attention(q, k, v, dropout_p=pd)
    clgrad.manual_seed(3)
    again = F.scaled_dot_product_attention(q, k, v, dropout_p=pd)
    assert np.array_equal(to_np(out), to_np(again))
    p = np_attention(qn, kn, np.eye(S)[None], np.zeros((2, L, S)))[0]
    z = to_np(out) / p
    kept = z > 0
    assert abs(1 - kept.mean() - pd) < 0.03
    np.testing.assert_allclose(z[kept], 1 / (1 - pd), rtol=1e-4)
    z = np.where(kept, 1 / (1 - pd), 0.0)
    dout = rng.standard_normal((2, L, S))
    out.backward(clgrad.tensor(dout, dtype=clgrad.float32))
    ref = np_attention(qn, kn, vn, dout, z=z)
    for t, r in zip((q, k, v), ref[1:]):
        assert_close(t.grad, r, clgrad.float32, rtol=1e-4, atol=1e-5)
    # dropout_p=1 drops everything
    assert not to_np(F.scaled_dot_product_attention(q, k, v, dropout_p=1.0)).any()


@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_dropout_is_the_random_familys_philox_stream(device, code_paths, dt):
    """The fused kernels draw their dropout from the Philox stream of clgrad.rand
    (philox in cl_kernels/common.mako): after the same seed, the [N, L, S] weights take the
    N * L * S numbers rand(N, L, S) would give, and element (n, i, j) is dropped exactly where
    rand(N, L, S)[n, i, j] < p_drop (counter offset + (n * L + i) * S + j)."""
    if dt == "float64" and not device.has_fp64:
        pytest.skip("no fp64 on this device")
    dt = getattr(clgrad, dt)
    rng = np.random.default_rng(8)
    N, L, S, pd = 3, 17, 45, 0.35
    qn, kn = rng.standard_normal((N, L, 4)), rng.standard_normal((N, S, 4))
    q, k = clgrad.tensor(qn, dtype=dt), clgrad.tensor(kn, dtype=dt)
    v = clgrad.tensor(np.broadcast_to(np.eye(S), (N, S, S)).copy(), dtype=dt)
    for seed in (0, 11, 2**40 + 3):
        clgrad.manual_seed(seed)
        out = to_np(F.scaled_dot_product_attention(q, k, v, dropout_p=pd))
        clgrad.manual_seed(seed)
        u = to_np(clgrad.rand(N, L, S))
        assert np.array_equal(out == 0, u < pd)
        # the generator moved on by N * L * S numbers, as rand's draw does
        clgrad.manual_seed(seed)
        F.scaled_dot_product_attention(q, k, v, dropout_p=pd)
        after = to_np(clgrad.rand(5))
        clgrad.manual_seed(seed)
        clgrad.rand(N, L, S)
        assert np.array_equal(after, to_np(clgrad.rand(5)))


def test_errors():
    q, k = clgrad.randn(2, 3, 4), clgrad.randn(2, 5, 4)
    with pytest.raises(RuntimeError, match="same last dimension"):
        F.scaled_dot_product_attention(q, clgrad.randn(2, 5, 3), clgrad.randn(2, 5, 4))
    with pytest.raises(RuntimeError, match="same dtype"):
        F.scaled_dot_product_attention(q, k, k.double())
    with pytest.raises(RuntimeError, match="must match"):
        F.scaled_dot_product_attention(q, k, k, attn_mask=clgrad.ones(2, 4, dtype=clgrad.bool))
    with pytest.raises(RuntimeError, match="is_causal"):
        F.scaled_dot_product_attention(q, k, k, attn_mask=clgrad.ones(3, 5, dtype=clgrad.bool),
                                       is_causal=True)
    with pytest.raises(RuntimeError, match="multiple"):
        F.scaled_dot_product_attention(clgrad.randn(1, 3, 2, 4), clgrad.randn(1, 2, 2, 4),
                                       clgrad.randn(1, 2, 2, 4), enable_gqa=True)
    with pytest.raises(ValueError, match="dropout_p"):
        F.scaled_dot_product_attention(q, k, k, dropout_p=1.5)
    with pytest.raises(TypeError, match="query"):
        F.scaled_dot_product_attention(q.numpy(), k, k)


def test_backend_choice(device, monkeypatch):
    """Every backend enabled: GPU paths take the fused kernels; CPU paths the composed form until
    the score matrices reach CPU_FUSED_FROM elements, or where the rows kernels are faster. A
    backend that cannot run is an error."""
    from clgrad.ops import attention
    q = clgrad.randn(2, 3, 4, requires_grad=True)

    def form():
        with sdpa_kernel(list(SDPBackend)):
            out = F.scaled_dot_product_attention(q, q, q)
        return "fused" if made_by_fused_kernels(out) else "math"
    assert form() == ("math" if device.cpu_paths else "fused")
    # causal from 256 rows: PoCL's CPU paths take the rows kernels, the faster form there
    from clgrad.kernels import attention as ka
    big = clgrad.randn(1, 256, 16, requires_grad=True)
    with sdpa_kernel(list(SDPBackend)):
        out = F.scaled_dot_product_attention(big, big, big, is_causal=True)
    faster = ka.rows_faster(device, clgrad.float32, 256, 256, 16, 16, True)
    assert faster == (device.cpu_paths and device.is_pocl)
    assert made_by_fused_kernels(out) == (faster or not device.cpu_paths)
    monkeypatch.setattr(attention, "CPU_FUSED_FROM", 2 * 3 * 3)
    assert form() == "fused"
    with sdpa_kernel([SDPBackend.MATH, SDPBackend.FLASH_ATTENTION], set_priority=True):
        assert F.scaled_dot_product_attention(q, q, q).grad_fn is not None
        assert form() == "fused"           # the inner block's own choice
    mask = clgrad.zeros(3, 3, requires_grad=True)
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION), \
            pytest.raises(RuntimeError, match="No available kernel.*requires grad"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=mask)
    with sdpa_kernel(SDPBackend.CUDNN_ATTENTION), \
            pytest.raises(RuntimeError, match="No available kernel"):
        F.scaled_dot_product_attention(q, q, q)
    with pytest.raises(AssertionError, match="SDPBackend"):
        with sdpa_kernel("math"):
            pass


def test_causal_composed_form_masks_in_the_softmax(device, code_paths):
    """The composed causal form on CPU paths: the softmax kernel leaves out the keys after each
    query (softmax_causal_row), with no mask made and added; GPU paths add the -inf mask."""
    from clgrad.runtime import kernels
    q = clgrad.randn(2, 3, 9, 4, device=device, requires_grad=True)
    names = []
    kernels.launch_hooks.append(lambda d, k, *a: names.append(k.function_name))
    try:
        with sdpa_kernel(SDPBackend.MATH):
            F.scaled_dot_product_attention(q, q, q, is_causal=True)
    finally:
        kernels.launch_hooks.pop()
    assert ("softmax_causal_row" in names) == device.cpu_paths
    assert any(n.startswith("add_") for n in names) != device.cpu_paths


@pytest.mark.parametrize("L,S", [(13, 13), (17, 9), (9, 17)])
def test_causal_blocks_of_query_rows(device, monkeypatch, L, S):
    # the composed causal form over blocks of query rows (each block sees only its keys), here
    # with blocks of 4 rows so that small shapes cross several, top-left aligned as torch's
    from clgrad.ops import attention
    monkeypatch.setattr(attention, "CAUSAL_BLOCK_ROWS", 4)
    dt = clgrad.float64 if device.has_fp64 else clgrad.float32
    shapes = ((2, 4, L, 5), (2, 2, S, 5), (2, 2, S, 3))
    with sdpa_kernel(SDPBackend.MATH):
        got, ref = _run(device, dt, shapes, np.random.default_rng(1), is_causal=True,
                        enable_gqa=True)
        assert type(got[0].grad_fn).__name__.startswith("Cat")     # the blocked form ran
        for g, r in zip(got, ref):
            assert_close(g, r, clgrad.float32)
        q = clgrad.randn(1, 1, 6, 2, dtype=dt, requires_grad=True)
        k, v = (clgrad.randn(1, 1, 5, 2, dtype=dt, requires_grad=True) for _ in range(2))
        monkeypatch.setattr(attention, "CAUSAL_BLOCK_ROWS", 2)
        tol = {} if device.has_fp64 else dict(eps=1e-2, atol=5e-2, rtol=5e-2)
        assert gradcheck(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
                         (q, k, v), **tol)


# ---- the register-blocked kernels of the CPU paths (cl_kernels/attention_rows.mako) -----------
# head widths that are multiples of every device's vector width: on CPU paths these run the rows
# kernels; rows crossing MR blocks and key tiles (of 16, and of 32 past 256 rows), L > S causal,
# 80 columns (two launches of 64)
ROW_CASES = [
    (((2, 3, 37, 32), (2, 3, 45, 32), (2, 3, 45, 16)), dict(is_causal=True)),
    (((1, 4, 20, 16), (1, 2, 70, 16), (1, 2, 70, 80)), dict(enable_gqa=True, scale=0.3)),
    (((1, 1, 5, 96), (1, 1, 3, 96), (1, 1, 3, 32)), dict(is_causal=True)),
    (((2, 33, 16), (2, 1, 16), (2, 1, 16)), {}),
    (((1, 2, 300, 16), (1, 1, 270, 16), (1, 1, 270, 48)), dict(is_causal=True, enable_gqa=True)),
]


@pytest.fixture
def rows_everywhere(monkeypatch):
    """The rows kernels on every device's CPU paths (by default only PoCL's take them)."""
    from clgrad.kernels import attention as ka
    monkeypatch.setattr(ka, "rows_on", lambda dev: True)


def _launched(fn):
    """fn()'s result and the names of the kernels it launched."""
    from clgrad.runtime import kernels
    names = []
    kernels.launch_hooks.append(lambda dev, k, *rest: names.append(k.function_name))
    try:
        return fn(), names
    finally:
        kernels.launch_hooks.pop()


@pytest.mark.parametrize("shapes,kw", ROW_CASES, ids=[str(i) for i in range(len(ROW_CASES))])
def test_row_blocked_kernels_match_numpy(device, code_paths, rows_everywhere, shapes, kw):
    """The CPU paths' rows kernels, float32 and float64, against the numpy reference."""
    for dt in [clgrad.float32] + ([clgrad.float64] if device.has_fp64 else []):
        (got, ref), names = _launched(lambda: _run(device, dt, shapes, np.random.default_rng(9),
                                                   **kw))
        rows = {n for n in names if n.startswith("attn_rows")}
        assert rows == ({"attn_rows_t", "attn_rows_fwd", "attn_rows_dq", "attn_rows_dkdv"}
                        if device.cpu_paths else set())
        for g, r in zip(got, ref):       # (S = 1: dK is 0 up to rounding of dp - D)
            assert_close(g, r, dt, atol=1e-5 if dt is clgrad.float32 else None)


def test_row_blocked_kernels_agree_with_the_row_kernels(device, rows_everywhere, monkeypatch):
    """Masks (boolean with a fully masked row, float with -inf, broadcast), dropout and causal:
    the rows kernels give what attention.mako's kernels give on the same inputs and seed, with
    backward in one launch and in one launch per tile of rows (ROWS_CACHE: chunks that add)."""
    from clgrad.kernels import attention as ka
    rng = np.random.default_rng(10)
    bm = rng.random((2, 1, 9, 35)) < 0.6
    bm[0, 0, 3] = False
    fm = rng.standard_normal((3, 1, 35)).astype(np.float32)
    fm[1, 0, 5] = -np.inf
    arrs = [rng.standard_normal(s) for s in ((2, 3, 9, 16), (2, 3, 35, 16), (2, 3, 35, 32))]
    dout = rng.standard_normal((2, 3, 9, 32))
    runs = [dict(attn_mask=bm), dict(attn_mask=fm), dict(dropout_p=0.3, is_causal=True),
            dict(dropout_p=0.5, attn_mask=bm[0, 0])]

    def run(kw):
        ts = [clgrad.tensor(a, dtype=clgrad.float32, requires_grad=True) for a in arrs]
        if "attn_mask" in kw:
            kw = dict(kw, attn_mask=clgrad.tensor(kw["attn_mask"]))
        clgrad.manual_seed(5)
        out = F.scaled_dot_product_attention(*ts, **kw)
        out.backward(clgrad.tensor(dout, dtype=clgrad.float32))
        return [to_np(t) for t in [out] + [t.grad for t in ts]]
    # one dq launch per block of columns, and with no cache to fill, per tile of keys too (the
    # tiles are as wide as the device's vectors: 16 floats with AVX-512 code, 8 with AVX2)
    variant = ka.rows_variant(device, clgrad.float32, 9, 35, 16, 32)
    if variant is not None:
        _, vw, nb, no, _ = variant
        tiles, blocks = -(-35 // (nb * vw)), -(-16 // (no * vw))
    for kw, cache in zip(runs, (ka.ROWS_CACHE, 1, ka.ROWS_CACHE, 1)):
        with monkeypatch.context() as m:
            m.setattr(ka, "ROWS_CACHE", cache)
            rows, names = _launched(lambda: run(kw))
        assert (variant is None) == (not device.cpu_paths)
        want = 0 if variant is None else blocks * (1 if cache > 1 else tiles)
        assert names.count("attn_rows_dq") == want
        assert want == 0 or cache > 1 or want > blocks     # the chunks did split the keys
        with monkeypatch.context() as m:
            m.setattr(ka, "rows_variant", lambda *a: None)
            plain = run(kw)
        for a, b in zip(rows, plain):
            assert not np.isnan(a).any()
            np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-6)


def test_row_blocked_kernels_gradcheck(device, rows_everywhere):
    if not device.has_fp64:
        pytest.skip("gradcheck needs float64")
    clgrad.manual_seed(0)
    q = clgrad.randn(1, 2, 3, 16, dtype=clgrad.float64, requires_grad=True)
    k, v = (clgrad.randn(1, 1, 4, 16, dtype=clgrad.float64, requires_grad=True)
            for _ in range(2))
    mask = clgrad.tensor([[True, True, False, True], [False] * 4, [True, False, True, True]])

    def f(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)
    assert gradcheck(f, (q, k, v))

    def causal_dropout(q, k, v):
        clgrad.manual_seed(7)
        return F.scaled_dot_product_attention(q, k.expand(1, 2, 4, 16), v.expand(1, 2, 4, 16),
                                              dropout_p=0.4, is_causal=True)
    assert gradcheck(causal_dropout, (q, k, v))
