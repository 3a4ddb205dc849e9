"""Matrix products: forward against numpy on every dtype they claim, on empty, odd-sized (tile
edges), batched, broadcast, transposed and strided inputs, through each GEMM kernel (small,
packed, tiled); gradients with gradcheck and gradgradcheck; node names; torch's errors; the tuned
configuration file."""
import itertools
import json

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import clgrad
from clgrad.kernels import gemm as gemm_kernels
from clgrad.ops import linalg
from clgrad.runtime.device import wide_vectors_ok
from helpers import LAYOUTS, assert_close, grad_dtype, grad_tols, make, rounded, to_np

INTS = (clgrad.int32, clgrad.int64)


def gemm_dtypes(device):
    out = [clgrad.float32, clgrad.float16, clgrad.bfloat16, clgrad.int32, clgrad.int64]
    if device.has_fp64:
        out.append(clgrad.float64)
    return out


def data(shape, dt, rng):
    """Small integers for integer dtypes (exact), uniform [-1, 1) rounded to dt for floats."""
    if dt in INTS:
        return rng.integers(-4, 5, size=shape).astype(dt.np)
    return rounded(rng.uniform(-1, 1, size=shape), dt).astype(np.float64)


def mk(a, dt, device, layout="contiguous", requires_grad=False):
    """helpers.make, except that a transposed matrix with a dim of 1 (which is contiguous)
    comes strided instead."""
    if layout == "transposed" and 1 in np.shape(a):
        layout = "strided"
    return make(a, dt, device, layout, requires_grad)


def check(out, expected, dt):
    """Compare with a float64 (or exact integer) reference; sums of up to ~100 products."""
    assert out.dtype is dt
    if dt in INTS:
        assert_close(out, expected.astype(dt.np))
        return
    tol = {clgrad.float64: 1e-10, clgrad.float32: 2e-5, clgrad.float16: 4e-3,
           clgrad.bfloat16: 3e-2}[dt]
    assert_close(out, expected, rtol=tol, atol=tol)


@pytest.fixture(params=["default", "small", "packed", "packed_a", "packed_wide", "lanes", "tiled"])
def kernel(request, device, monkeypatch):
    """Run a test through one GEMM kernel: the device's configuration, gemm_small for every
    product, or a packed / lanes / tiled configuration with odd tile sizes (so that edges
    show). "packed" reads A in place (gemm_packed_da) at these sizes, "packed_a" packs it;
    "packed_wide" has 512-bit vectors (16 floats, 8 doubles) where the device takes them."""
    which = request.param
    if which == "small":
        monkeypatch.setattr(gemm_kernels, "SMALL_WORK", 1 << 62)
    elif which != "default":
        monkeypatch.setattr(gemm_kernels, "SMALL_WORK", 0)
        monkeypatch.setattr(gemm_kernels, "SMALL_ROWS_CPU", 0)
        if which == "packed_a":
            monkeypatch.setattr(gemm_kernels, "DIRECT_A_ROWS", 0)
            monkeypatch.setattr(gemm_kernels, "DIRECT_A_ELEMENTS", 0)
        cfg = {"packed": {"kind": "packed", "MR": 3, "NV": 2, "VW": 4, "LX": 2, "LY": 2},
               "packed_a": {"kind": "packed", "MR": 3, "NV": 2, "VW": 4, "LX": 2, "LY": 2},
               "packed_wide": {"kind": "packed", "MR": 3, "NV": 1, "LX": 2, "LY": 2,
                               "VW": 16 if wide_vectors_ok(device) else 8},
               "lanes": {"kind": "lanes", "MR": 3, "NJ": 2, "LX": 4, "LY": 2},
               "tiled": {"kind": "tiled", "TM": 16, "TN": 8, "TK": 4, "WM": 2, "WN": 2}}[which]
        prev = gemm_kernels.set_config(device, cfg)
        yield which
        gemm_kernels.set_config(device, prev)
        return
    yield which


# ---- forward ------------------------------------------------------------------------------------
MM_SHAPES = [(1, 1, 1), (3, 5, 7), (17, 9, 33), (2, 65, 3), (20, 1, 19), (1, 40, 17),
             (16, 12, 1)]


def test_mm_all_layouts(device, kernel):
    """Every dtype, every pair of layouts (contiguous, transposed, strided), odd sizes."""
    rng = np.random.default_rng(0)
    for dt in gemm_dtypes(device):
        for (m, k, n), (la, lb) in zip(itertools.cycle(MM_SHAPES),
                                       itertools.product(LAYOUTS, LAYOUTS)):
            a, b = data((m, k), dt, rng), data((k, n), dt, rng)
            out = clgrad.mm(mk(a, dt, device, la), mk(b, dt, device, lb))
            check(out, a.astype(np.float64) @ b, dt)


def test_mm_sizes_across_tiles(device, kernel):
    """Sizes around the block sizes of every kernel, contiguous and transposed."""
    rng = np.random.default_rng(1)
    dt = clgrad.float32
    for m, k, n in [(5, 7, 9), (6, 8, 16), (7, 17, 17), (33, 31, 47), (48, 16, 40), (65, 3, 66)]:
        a, b = data((m, k), dt, rng), data((k, n), dt, rng)
        for la, lb in (("contiguous", "contiguous"), ("transposed", "transposed")):
            out = clgrad.mm(mk(a, dt, device, la), mk(b, dt, device, lb))
            check(out, a @ b, dt)


@pytest.mark.parametrize("vw,direct", [(4, True), (4, False), (16, True)])
def test_half_products_round_as_float32_products(device, monkeypatch, vw, direct):
    """On the packed kernels, float16 / bfloat16 products accumulate in float32 in the order
    float32 products do and round once: bit for bit the float32 product of the same values
    (and bias), cast. Whole-vector tiles store through the vector conversion, edges through the
    scalar one; a NaN stays a NaN."""
    monkeypatch.setattr(gemm_kernels, "SMALL_WORK", 0)
    monkeypatch.setattr(gemm_kernels, "SMALL_ROWS_CPU", 0)
    if not direct:
        monkeypatch.setattr(gemm_kernels, "DIRECT_A_ROWS", 0)
        monkeypatch.setattr(gemm_kernels, "DIRECT_A_ELEMENTS", 0)
    vw = vw if vw < 16 or wide_vectors_ok(device) else 8
    prev = gemm_kernels.set_config(device, {"kind": "packed", "MR": 3, "NV": 2, "VW": vw,
                                            "LX": 2, "LY": 2})
    try:
        rng = np.random.default_rng(7)
        for dt in (clgrad.float16, clgrad.bfloat16):
            for m, k, n in [(17, 33, 40), (48, 16, 40), (5, 7, 64)]:
                a, b = data((m, k), dt, rng), data((k, n), dt, rng)
                c = data((m, n), dt, rng) * 8
                a[1, 2] = np.nan
                half = [clgrad.tensor(x, dtype=dt, device=device) for x in (a, b, c)]
                full = [x.float() for x in half]
                for got, ref in ((clgrad.mm(*half[:2]), clgrad.mm(*full[:2])),
                                 (clgrad.addmm(half[2], *half[:2], beta=0.5, alpha=2.0),
                                  clgrad.addmm(full[2], *full[:2], beta=0.5, alpha=2.0))):
                    got, ref = to_np(got.float()), to_np(ref.to(dt).float())
                    assert np.isnan(got[1]).all()
                    assert np.array_equal(got, ref, equal_nan=True), (dt, m, k, n)
    finally:
        gemm_kernels.set_config(device, prev)


def test_gemm_a_cache_packs_a_once(device, kernel):
    """gemm's a_cache: one a (column-major, as a recurrent layer's gate gradients transposed)
    times two b, the second product from the first one's packed a where a kernel packs it; both
    equal to numpy's and to the products made without the cache, bit for bit."""
    from clgrad.runtime import kernels as kernel_runtime
    rng = np.random.default_rng(8)
    dt = clgrad.float32
    a = data((70, 40), dt, rng)
    bs = [data((40, n), dt, rng) for n in (33, 16)]
    a3 = mk(a, dt, device, "transposed").unsqueeze(0)                  # column-major
    cache, packs = {}, []

    def hook(dev, k, *rest):
        if k.function_name.startswith("pack_a"):
            packs.append(k.function_name)
    kernel_runtime.launch_hooks.append(hook)
    try:
        outs = []
        for b in bs:
            b3 = mk(b, dt, device).unsqueeze(0)
            outs.append((gemm_kernels.gemm(a3, b3, a_cache=cache), gemm_kernels.gemm(a3, b3)))
            clgrad.cl.synchronize()
    finally:
        kernel_runtime.launch_hooks.remove(hook)
    for (cached, plain), b in zip(outs, bs):
        check(cached[0], a.astype(np.float64) @ b, dt)
        assert np.array_equal(to_np(cached), to_np(plain))
    # packed: by the first product with the cache and by each without it, not by the second
    assert len(packs) == (3 if cache else 0), packs


def test_empty_products(device):
    z = clgrad.mm(clgrad.ones(0, 3), clgrad.ones(3, 4))
    assert z.shape == (0, 4)
    assert clgrad.mm(clgrad.ones(2, 0), clgrad.ones(0, 3)).tolist() == [[0.0] * 3] * 2
    assert clgrad.bmm(clgrad.ones(0, 2, 3), clgrad.ones(0, 3, 4)).shape == (0, 2, 4)
    assert clgrad.dot(clgrad.ones(0), clgrad.ones(0)).item() == 0.0
    assert clgrad.mv(clgrad.ones(3, 0), clgrad.ones(0)).tolist() == [0.0] * 3
    out = clgrad.addmm(clgrad.ones(2, 2), clgrad.ones(2, 0), clgrad.ones(0, 2), beta=2)
    assert out.tolist() == [[2.0, 2.0], [2.0, 2.0]]
    assert clgrad.matmul(clgrad.ones(3, 0, 2), clgrad.ones(2, 5)).shape == (3, 0, 5)


def test_bmm(device, kernel):
    rng = np.random.default_rng(2)
    for dt in gemm_dtypes(device):
        for bs, m, k, n in [(1, 3, 4, 5), (3, 17, 5, 9), (2, 1, 7, 1)]:
            a, b = data((bs, m, k), dt, rng), data((bs, k, n), dt, rng)
            for la, lb in (("contiguous", "transposed"), ("strided", "contiguous")):
                out = clgrad.bmm(mk(a, dt, device, la), mk(b, dt, device, lb))
                check(out, np.matmul(a.astype(np.float64), b), dt)


def test_bmm_broadcast_batch_operand(device, kernel):
    """An operand expanded over the batch (batch stride 0) is read, not copied."""
    rng = np.random.default_rng(3)
    a, b = data((4, 6, 5), clgrad.float32, rng), data((1, 5, 7), clgrad.float32, rng)
    F = clgrad.float32
    tb = clgrad.tensor(b, dtype=F).expand(4, 5, 7)
    check(clgrad.bmm(clgrad.tensor(a, dtype=F), tb), np.matmul(a, b), F)
    ta = clgrad.tensor(a[:1], dtype=F).expand(4, 6, 5)
    b4 = np.repeat(b, 4, 0)
    check(clgrad.bmm(ta, clgrad.tensor(b4, dtype=F)), np.matmul(a[:1], b4), F)


def test_addmm_family(device, kernel):
    rng = np.random.default_rng(4)
    for dt in gemm_dtypes(device):
        m1, m2 = data((5, 3), dt, rng), data((3, 6), dt, rng)
        f1, f2 = m1.astype(np.float64), m2.astype(np.float64)
        alpha, beta = (2, 3) if dt in INTS else (0.5, -1.5)
        for ishape in [(), (6,), (5, 1), (1, 6), (5, 6)]:
            inp = data(ishape, dt, rng)
            out = clgrad.addmm(mk(inp, dt, device), mk(m1, dt, device, "transposed"),
                               mk(m2, dt, device), beta=beta, alpha=alpha)
            check(out, beta * inp.astype(np.float64) + alpha * (f1 @ f2), dt)
        b1, b2 = data((2, 5, 3), dt, rng), data((2, 3, 4), dt, rng)
        for ishape in [(), (4,), (2, 1, 4), (2, 5, 4)]:
            inp = data(ishape, dt, rng)
            out = clgrad.baddbmm(mk(inp, dt, device), mk(b1, dt, device),
                                 mk(b2, dt, device, "strided"), beta=beta, alpha=alpha)
            check(out, beta * inp.astype(np.float64) + alpha * np.matmul(b1.astype(np.float64), b2),
                  dt)
        mat, vec = data((7, 3), dt, rng), data((3,), dt, rng)
        for ishape in [(), (1,), (7,)]:
            inp = data(ishape, dt, rng)
            out = clgrad.addmv(mk(inp, dt, device), mk(mat, dt, device, "transposed"),
                               mk(vec, dt, device), beta=beta, alpha=alpha)
            check(out, beta * inp.astype(np.float64) + alpha * (mat.astype(np.float64) @ vec), dt)


def test_addmm_beta_zero_ignores_input(device):
    nan = clgrad.full((2, 2), float("nan"))
    out = clgrad.addmm(nan, clgrad.ones(2, 1), clgrad.ones(1, 2), beta=0)
    assert out.tolist() == [[1.0, 1.0], [1.0, 1.0]]


def test_addmm_int_scales_truncate(device):
    """As in torch, alpha and beta are truncated for integer products."""
    one = clgrad.ones(2, 2, dtype=clgrad.int32)
    out = clgrad.addmm(one, clgrad.ones(2, 3, dtype=clgrad.int32),
                       clgrad.ones(3, 2, dtype=clgrad.int32), alpha=0.5, beta=1.5)
    assert out.tolist() == [[1, 1], [1, 1]]


def test_mv_dot_outer(device, kernel):
    rng = np.random.default_rng(5)
    for dt in gemm_dtypes(device):
        mat, vec = data((9, 70), dt, rng), data((70,), dt, rng)
        for layout in LAYOUTS:
            out = clgrad.mv(mk(mat, dt, device, layout), mk(vec, dt, device))
            check(out, mat.astype(np.float64) @ vec, dt)
        strided = clgrad.tensor(np.repeat(rounded(vec, dt), 2), dtype=dt, device=device)[::2]
        check(clgrad.dot(mk(vec, dt, device), strided), np.dot(vec.astype(np.float64), vec), dt)
        x, y = data((4,), dt, rng), data((3,), dt, rng)
        for f in (clgrad.outer, clgrad.ger):
            out = f(mk(x, dt, device), mk(y, dt, device))
            check(out, np.outer(x.astype(np.float64), y), dt)


def test_long_dot_reduces(device, monkeypatch):
    """Long dot products on GPUs run as a reduction; force that path here."""
    rng = np.random.default_rng(6)
    monkeypatch.setattr(linalg, "_dot_limit", lambda dev: 100)
    for dt in gemm_dtypes(device):
        x, y = data((1000,), dt, rng), data((1000,), dt, rng)
        out = clgrad.dot(mk(x, dt, device), mk(y, dt, device))
        assert out.shape == ()
        check(out, np.dot(x.astype(np.float64), y), dt)


MATMUL_SHAPES = [
    ((4,), (4,)), ((3, 4), (4,)), ((4,), (4, 2)), ((3, 4), (4, 2)), ((5, 3, 4), (4, 2)),
    ((5, 3, 4), (4,)), ((4,), (5, 4, 2)), ((3, 4), (5, 4, 2)), ((5, 3, 4), (5, 4, 2)),
    ((2, 1, 3, 4), (5, 4, 2)), ((1, 3, 4), (2, 1, 4, 2)), ((2, 3, 4), (1, 4, 2)),
    ((6, 1, 4), (6, 4, 1)), ((0, 3, 4), (4, 2)), ((2, 3, 0), (2, 0, 5)), ((2, 0, 4), (4,)),
]


@pytest.mark.parametrize("requires_grad", [False, True])
def test_matmul_shapes(device, requires_grad):
    """Every branch of torch's matmul (dot, mv, vector-matrix, mm, folded, batched and
    broadcast); requires_grad changes which branch folds."""
    rng = np.random.default_rng(7)
    dt = grad_dtype(device) if requires_grad else clgrad.float32
    for s1, s2 in MATMUL_SHAPES:
        a, b = data(s1, dt, rng), data(s2, dt, rng)
        ta = mk(a, dt, device, "transposed" if len(s1) == 3 else "contiguous", requires_grad)
        tb = mk(b, dt, device, requires_grad=requires_grad)
        out = clgrad.matmul(ta, tb)
        assert out.shape == np.matmul(a, b).shape, (s1, s2)
        check(out, np.matmul(a, b), dt)
        check(ta @ tb, np.matmul(a, b), dt)
        if requires_grad and out.numel():
            out.sum().backward()
            assert ta.grad.shape == ta.shape and tb.grad.shape == tb.shape


@settings(max_examples=25, deadline=None)
@given(st.lists(st.sampled_from([1, 2, 3]), max_size=2),
       st.lists(st.sampled_from([1, 2, 3]), max_size=2),
       st.integers(1, 3), st.integers(1, 4), st.integers(1, 3), st.booleans(), st.booleans())
def test_matmul_broadcasting(batch1, batch2, n, k, p, vec1, vec2):
    """Batch dims broadcast as numpy's matmul does (hypothesis draws shapes)."""
    try:
        np.broadcast_shapes(tuple(batch1), tuple(batch2))
    except ValueError:
        return
    s1 = (k,) if vec1 else tuple(batch1) + (n, k)
    s2 = (k,) if vec2 else tuple(batch2) + (k, p)
    rng = np.random.default_rng(8)
    a, b = data(s1, clgrad.float32, rng), data(s2, clgrad.float32, rng)
    F = clgrad.float32
    check(clgrad.matmul(clgrad.tensor(a, dtype=F), clgrad.tensor(b, dtype=F)), np.matmul(a, b), F)


def test_operators(device):
    a, b = clgrad.tensor([[1.0, 2.0], [3.0, 4.0]]), clgrad.tensor([1.0, -1.0])
    assert (a @ b).tolist() == [-1.0, -1.0]
    assert b.__rmatmul__(a).tolist() == [-1.0, -1.0]
    assert a.matmul(a).tolist() == (a.numpy() @ a.numpy()).tolist()
    assert a.mm(a).tolist() == a.matmul(a).tolist()
    assert a.mv(b).tolist() == [-1.0, -1.0]
    assert b.dot(b).item() == 2.0 and b.outer(b).tolist() == [[1.0, -1.0], [-1.0, 1.0]]
    with pytest.raises(TypeError):
        a @ [1.0, 2.0]
    with pytest.raises(TypeError):
        [1.0, 2.0] @ a


# ---- autograd -----------------------------------------------------------------------------------
def _g(device, shape, rng, layout="contiguous"):
    dt = grad_dtype(device)
    return mk(rng.uniform(-1, 1, shape), dt, device, layout, requires_grad=True)


def test_grads_mm_bmm(device):
    rng = np.random.default_rng(9)
    tol = grad_tols(device)
    a, b = _g(device, (3, 4), rng, "transposed"), _g(device, (4, 2), rng)
    assert clgrad.autograd.gradcheck(clgrad.mm, (a, b), **tol)
    assert clgrad.autograd.gradgradcheck(clgrad.mm, (a, b), **tol)
    a, b = _g(device, (2, 3, 2), rng), _g(device, (2, 2, 3), rng, "strided")
    assert clgrad.autograd.gradcheck(clgrad.bmm, (a, b), **tol)
    assert clgrad.autograd.gradgradcheck(clgrad.bmm, (a, b), **tol)


def test_grads_addmm_family(device):
    rng = np.random.default_rng(10)
    tol = grad_tols(device)
    inp, a, b = _g(device, (1, 2), rng), _g(device, (3, 4), rng), _g(device, (4, 2), rng)
    f = lambda i, x, y: clgrad.addmm(i, x, y, beta=0.5, alpha=-2)  # noqa: E731
    assert clgrad.autograd.gradcheck(f, (inp, a, b), **tol)
    assert clgrad.autograd.gradgradcheck(f, (inp, a, b), **tol)
    inp, a, b = _g(device, (3, 1), rng), _g(device, (2, 3, 2), rng), _g(device, (2, 2, 2), rng)
    f = lambda i, x, y: clgrad.baddbmm(i, x, y, beta=2, alpha=0.5)  # noqa: E731
    assert clgrad.autograd.gradcheck(f, (inp, a, b), **tol)
    assert clgrad.autograd.gradgradcheck(f, (inp, a, b), **tol)
    inp, m, v = _g(device, (), rng), _g(device, (3, 4), rng, "transposed"), _g(device, (4,), rng)
    f = lambda i, x, y: clgrad.addmv(i, x, y, beta=3, alpha=0.5)  # noqa: E731
    assert clgrad.autograd.gradcheck(f, (inp, m, v), **tol)
    assert clgrad.autograd.gradgradcheck(f, (inp, m, v), **tol)


def test_grads_vector_products(device):
    rng = np.random.default_rng(11)
    tol = grad_tols(device)
    m, v, w = _g(device, (3, 4), rng), _g(device, (4,), rng), _g(device, (4,), rng)
    for f, args in ((clgrad.mv, (m, v)), (clgrad.dot, (v, w)), (clgrad.outer, (v, w))):
        assert clgrad.autograd.gradcheck(f, args, **tol)
        assert clgrad.autograd.gradgradcheck(f, args, **tol)


@pytest.mark.parametrize("s1,s2", [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 2)),
                                   ((2, 2, 3), (3, 2)), ((2, 2, 3), (3,)), ((3,), (2, 3, 2)),
                                   ((2, 3), (2, 3, 2)), ((2, 1, 2, 3), (3, 3, 1)),
                                   ((1, 2, 3), (2, 3, 2))])
def test_grads_matmul(device, s1, s2):
    """Folded and broadcast batches: gradients of broadcast dims are summed back."""
    rng = np.random.default_rng(12)
    tol = grad_tols(device)
    a, b = _g(device, s1, rng), _g(device, s2, rng)
    assert clgrad.autograd.gradcheck(clgrad.matmul, (a, b), **tol)
    assert clgrad.autograd.gradgradcheck(clgrad.matmul, (a, b), **tol)


def test_broadcast_batch_grad_values(device):
    rng = np.random.default_rng(13)
    a, b = _g(device, (2, 1, 3, 4), rng), _g(device, (5, 4, 2), rng)
    (a @ b).sum().backward()
    an, bn = to_np(a), to_np(b)
    ones = np.ones((2, 5, 3, 2))
    assert_close(a.grad, (ones @ bn.swapaxes(-1, -2)).sum(1, keepdims=True), rtol=1e-6,
                 atol=1e-6)
    assert_close(b.grad, (an.swapaxes(-1, -2) @ ones).sum(0), rtol=1e-6, atol=1e-6)


def test_node_names(device):
    x = clgrad.ones(2, 3, requires_grad=True)
    y = clgrad.ones(3, 2, requires_grad=True)
    v = clgrad.ones(3, requires_grad=True)
    b = clgrad.ones(4, 2, 3, requires_grad=True)
    names = {
        "MmBackward0": clgrad.mm(x, y), "BmmBackward0": clgrad.bmm(b, b.transpose(1, 2)),
        "AddmmBackward0": clgrad.addmm(clgrad.ones(2), x, y),
        "BaddbmmBackward0": clgrad.baddbmm(clgrad.ones(1), b, b.transpose(1, 2)),
        "MvBackward0": clgrad.mv(x, v), "AddmvBackward0": clgrad.addmv(clgrad.ones(2), x, v),
        "DotBackward0": clgrad.dot(v, v), "MulBackward0": clgrad.outer(v, v),
        "UnsafeViewBackward0": b @ y,
    }
    for name, out in names.items():
        assert out.grad_fn.name() == name
    assert (b @ y).grad_fn.next_functions[0][0].name() == "MmBackward0"   # folded into one mm
    assert (x @ v).grad_fn.name() == "MvBackward0" and (v @ v).grad_fn.name() == "DotBackward0"


def test_transposed_operands_are_not_copied(device, monkeypatch):
    """mm reads .t() views through strides: forward and backward make no contiguous copies."""
    from clgrad.ops import _base, views
    copies = []
    real = _base.copy_into

    def spy(dst, src):
        copies.append(src.shape)
        return real(dst, src)
    monkeypatch.setattr(_base, "copy_into", spy)
    monkeypatch.setattr(views, "copy_into", spy)
    for rows in (3, 30):                 # gemm_small (few rows) and packed / tiled
        x = clgrad.ones(rows, 20, requires_grad=True)
        w = clgrad.ones(10, 20, requires_grad=True)
        out = x @ w.t()
        gx, gw = clgrad.autograd.grad(out, (x, w), clgrad.ones(rows, 10))
        assert not copies
        assert to_np(gx)[0, 0] == 10.0 and to_np(gw)[0, 0] == rows


def test_saves_only_what_backward_needs(device):
    """Only W requires grad in x @ W: x is saved, W is not, so changing W in place afterwards
    is fine (as in torch), while changing x is caught."""
    x = clgrad.ones(2, 3)
    w0 = clgrad.ones(3, 4, requires_grad=True)
    w = w0 * 1
    y = x @ w
    w.add_(1)
    y.sum().backward()
    assert w0.grad.tolist() == [[2.0] * 4] * 3
    y = x @ (w0 * 1)
    x.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def _jvp_cases(device, rng):
    g = lambda *shape: _g(device, shape, rng).detach()  # noqa: E731
    return [(linalg.Mm, (g(3, 4), g(4, 2))), (linalg.Bmm, (g(2, 3, 4), g(2, 4, 2))),
            (linalg.Addmm, (g(1, 2), g(3, 4), g(4, 2), 0.5, -2)),
            (linalg.Baddbmm, (g(3, 1), g(2, 3, 2), g(2, 2, 2), 2, 0.5)),
            (linalg.Mv, (g(3, 4), g(4))), (linalg.Addmv, (g(), g(3, 4), g(4), 3, 0.5)),
            (linalg.Dot, (g(4), g(4)))]


def test_forward_mode_rules(device):
    """Each op's jvp(args, tangents, out) against central differences (exact for these
    bilinear maps), with every tangent and with one tangent missing."""
    rng = np.random.default_rng(14)
    for cls, args in _jvp_cases(device, rng):
        full = [_g(device, a.shape, rng).detach() if isinstance(a, clgrad.Tensor) else None
                for a in args]
        for k in range(-1, len(args)):
            tans = [None if i == k else t for i, t in enumerate(full)]
            shifted = [[a + s * 1e-3 * t if t is not None else a for a, t in zip(args, tans)]
                       for s in (1, -1)]
            fd = (cls.apply(*shifted[0]) - cls.apply(*shifted[1])) / 2e-3
            tangent = cls.jvp(tuple(args), tans, cls.apply(*args))
            expected = np.broadcast_to(to_np(fd), fd.shape)
            assert_close(tangent.expand(fd.shape), expected, rtol=1e-6, atol=1e-6)


def test_forward_mode_through_matmul(device):
    fwAD = pytest.importorskip("clgrad.autograd.forward_ad")
    rng = np.random.default_rng(15)
    a, b, ta, tb = (_g(device, s, rng).detach() for s in ((2, 3, 4), (4, 2), (2, 3, 4), (4, 2)))
    with fwAD.dual_level():
        out = fwAD.make_dual(a, ta) @ fwAD.make_dual(b, tb)
        tangent = fwAD.unpack_dual(out).tangent
    assert_close(tangent, to_np(ta) @ to_np(b) + to_np(a) @ to_np(tb), rtol=1e-6, atol=1e-6)


def test_integer_products_do_not_require_grad(device):
    a = clgrad.ones(2, 2, dtype=clgrad.int64)
    assert not (a @ a).requires_grad and (a @ a).dtype is clgrad.int64


# ---- errors -------------------------------------------------------------------------------------
def _z(*shape, dtype=clgrad.float32):
    return clgrad.zeros(*shape, dtype=dtype) if shape else clgrad.tensor(0.0, dtype=dtype)


F64 = clgrad.float64
ERRORS = [
    (lambda: clgrad.mm(_z(2, 3), _z(4, 5)),
     "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)"),
    (lambda: clgrad.mm(_z(2, 3), _z(3, 5, dtype=F64)),
     "expected m1 and m2 to have the same dtype, but got: float != double"),
    (lambda: clgrad.mm(_z(2, 3, 1), _z(3, 5)), "self must be a matrix"),
    (lambda: clgrad.mm(_z(2, 3), _z(3)), "mat2 must be a matrix"),
    (lambda: clgrad.bmm(_z(2, 3), _z(2, 3, 5)), "batch1 must be a 3D tensor"),
    (lambda: clgrad.bmm(_z(2, 2, 3), _z(3, 5)), "batch2 must be a 3D tensor"),
    (lambda: clgrad.bmm(_z(2, 2, 3), _z(3, 3, 5)),
     "Expected size for first two dimensions of batch2 tensor to be: [2, 3] but got: [3, 3]."),
    (lambda: clgrad.bmm(_z(2, 2, 3), _z(2, 3, 5, dtype=F64)),
     "expected scalar type Float but found Double"),
    (lambda: clgrad.mv(_z(2, 3), _z(4)), "size mismatch, got input (2), mat (2x3), vec (4)"),
    (lambda: clgrad.mv(_z(2, 3), _z(3, 1)), "vector + matrix @ vector expected, got 1, 2, 2"),
    (lambda: clgrad.mv(_z(2, 3), _z(3, dtype=F64)),
     "addmv input tensors must have the same dtype, but got Double, Float, and Double"),
    (lambda: clgrad.dot(_z(3), _z(4)),
     "inconsistent tensor size, expected tensor [3] and src [4] to have the same number of "
     "elements, but got 3 and 4 elements respectively"),
    (lambda: clgrad.dot(_z(3, 1), _z(3)), "1D tensors expected, but got 2D and 1D tensors"),
    (lambda: clgrad.dot(_z(3), _z(3, dtype=F64)),
     "dot : expected both vectors to have same dtype, but found Float and Double"),
    (lambda: clgrad.matmul(_z(), _z(3)),
     "both arguments to matmul need to be at least 1D, but they are 0D and 1D"),
    (lambda: clgrad.matmul(_z(2, 2, 3), _z(4, 2)),
     "mat1 and mat2 shapes cannot be multiplied (4x3 and 4x2)"),
    (lambda: clgrad.matmul(_z(2, 2, 3), _z(3, 3, 2)),
     "The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 0"),
    (lambda: clgrad.matmul(_z(2, 1, 2, 3), _z(5, 4, 2)),
     "Expected size for first two dimensions of batch2 tensor to be: [10, 3] but got: [10, 4]."),
    (lambda: clgrad.addmm(_z(3, 5), _z(2, 3), _z(3, 5)),
     "The expanded size of the tensor (2) must match the existing size (3) at non-singleton "
     "dimension 0.  Target sizes: [2, 5].  Tensor sizes: [3, 5]"),
    (lambda: clgrad.addmm(_z(2, 5, dtype=F64), _z(2, 3), _z(3, 5)),
     "self and mat2 must have the same dtype, but got Double and Float"),
    (lambda: clgrad.addmm(_z(2, 5), _z(2, 3, dtype=F64), _z(3, 5)),
     "mat1 and mat2 must have the same dtype, but got Double and Float"),
    (lambda: clgrad.addmm(_z(2, 5), _z(2, 3, 1), _z(3, 5)),
     "mat1 must be a matrix, got 3-D tensor"),
    (lambda: clgrad.baddbmm(_z(2, 2, 5, dtype=F64), _z(2, 2, 3), _z(2, 3, 5)),
     "Input dtypes must be the same, got: input double, batch1: float, batch2: float"),
    (lambda: clgrad.addmv(_z(3), _z(2, 3), _z(3)),
     "size mismatch, got input (3), mat (2x3), vec (3)"),
    (lambda: clgrad.outer(_z(2, 3), _z(3)), "outer: Expected 1-D argument self, but got 2-D"),
    (lambda: clgrad.outer(_z(3), _z()), "outer: Expected 1-D argument vec2, but got 0-D"),
]


@pytest.mark.parametrize("fn,message", ERRORS, ids=[m[:40] for _, m in ERRORS])
def test_errors(device, fn, message):
    with pytest.raises(RuntimeError) as e:
        fn()
    assert str(e.value) == message


def test_error_types(device):
    with pytest.raises(TypeError, match=r"mm\(\): argument 'mat2' \(position 2\) must be Tensor"):
        clgrad.mm(_z(2, 2), [[1.0]])
    with pytest.raises(NotImplementedError, match="\"mm\" not implemented for 'Bool'"):
        clgrad.mm(_z(2, 2, dtype=clgrad.bool), _z(2, 2, dtype=clgrad.bool))


# ---- configuration -----------------------------------------------------------------------------
def test_mixed_dtypes_and_products_without_terms(device):
    # torch's behaviour, checked against torch 2.13 on its CPU: mm refuses mixed dtypes even for
    # an empty result, also after basic indexing; a product with no terms (an empty result, or
    # K = 0: zeros) is made for any dtype, bool too; bmm returns those before its dtype check,
    # in mat2's dtype
    def T(shape, dt=clgrad.float32):
        return clgrad.ones(shape, dtype=dt, device=device)
    f64 = clgrad.float64 if device.has_fp64 else clgrad.int32
    with pytest.raises(RuntimeError, match="expected m1 and m2 to have the same dtype, but got: "
                                           "float != long int"):
        T((0, 3)) @ T((3, 2), clgrad.int64)
    with pytest.raises(RuntimeError, match="expected m1 and m2 to have the same dtype"):
        T((2, 3), f64)[...] @ T((3, 2))
    with pytest.raises(RuntimeError, match="expected m1 and m2 to have the same dtype"):
        T((2, 3))[:, 1:] @ T((3, 2), f64)[1:]
    b = clgrad.bool
    assert clgrad.mm(T((2, 0), b), T((0, 3), b)).tolist() == [[False] * 3] * 2
    assert clgrad.mm(T((0, 3), b), T((3, 2), b)).shape == (0, 2)
    assert clgrad.mv(T((2, 0), b), T((0,), b)).tolist() == [False, False]
    assert clgrad.addmm(T((2, 0), b), T((2, 3), b), T((3, 0), b)).shape == (2, 0)
    r = clgrad.bmm(T((2, 2, 0)), T((2, 0, 2), clgrad.int64))
    assert r.dtype is clgrad.int64 and r.tolist() == [[[0, 0], [0, 0]]] * 2
    r = clgrad.bmm(T((2, 0, 3), clgrad.int64), T((2, 3, 2), b))
    assert r.dtype is b and r.shape == (2, 0, 2)
    with pytest.raises(NotImplementedError, match="\"mm\" not implemented for 'Bool'"):
        clgrad.mm(T((2, 3), b), T((3, 2), b))
    with pytest.raises(NotImplementedError, match="\"bmm\" not implemented for 'Bool'"):
        clgrad.bmm(T((2, 2, 3), b), T((2, 3, 2)))
    with pytest.raises(RuntimeError, match="expected scalar type Float but found Long"):
        clgrad.bmm(T((2, 2, 3)), T((2, 3, 2), clgrad.int64))
    with pytest.raises(RuntimeError, match="Input dtypes must be the same, got: input long int, "
                                           "batch1: float, batch2: long int"):
        clgrad.baddbmm(T((1, 2, 2), clgrad.int64), T((1, 2, 3)), T((1, 3, 2), clgrad.int64))
    with pytest.raises(RuntimeError, match="expected scalar type Float but found Long"):
        clgrad.baddbmm(T((1, 2, 2)), T((1, 2, 3)), T((1, 3, 2), clgrad.int64))
    with pytest.raises(RuntimeError, match="both inputs should have same dtype"):
        clgrad.tensordot(T((2, 3)), T((3, 2), clgrad.int64), dims=1)
    with pytest.raises(RuntimeError, match="both inputs should have same dtype"):
        clgrad.inner(T((2, 3), clgrad.int64), T((2, 3)))


def test_config_checks(device):
    assert gemm_kernels.config(device)["kind"] in ("packed", "lanes", "tiled")
    with pytest.raises(ValueError, match="kind"):
        gemm_kernels.check_config({"kind": "magic"}, device)
    with pytest.raises(ValueError, match="VW"):
        gemm_kernels.check_config({"kind": "packed", "MR": 4, "NV": 1, "VW": 32, "LX": 1, "LY": 1},
                                  device)
    wide = {"kind": "packed", "MR": 4, "NV": 1, "VW": 16, "LX": 1, "LY": 1}
    if wide_vectors_ok(device):
        assert gemm_kernels.check_config(wide, device)["VW"] == 16
    else:
        with pytest.raises(ValueError, match="VW=16"):
            gemm_kernels.check_config(wide, device)
    # 256x256 work-items, on (256 + 256 + 2) x 8 bytes of local memory, which every device has
    with pytest.raises(ValueError, match="work-groups"):
        gemm_kernels.check_config({"kind": "tiled", "TM": 256, "TN": 256, "TK": 1, "WM": 1, "WN": 1},
                                  device)
    with pytest.raises(ValueError, match="local memory"):
        gemm_kernels.check_config({"kind": "tiled", "TM": 1 << 20, "TN": 8, "TK": 8, "WM": 1 << 20,
                                   "WN": 8}, device)
    with pytest.raises(ValueError, match="work-groups"):
        gemm_kernels.check_config({"kind": "lanes", "MR": 4, "NJ": 1, "LX": 1 << 20, "LY": 1}, device)
    with pytest.raises(ValueError, match="NJ"):
        gemm_kernels.check_config({"kind": "lanes", "MR": 4, "NJ": 0, "LX": 8, "LY": 1}, device)


def test_tuned_config_file(device, tmp_path, monkeypatch):
    """tools/tune_gemm.py's result is stored per device, driver and code path in the tuning
    database and picked up at first use."""
    monkeypatch.setenv("CLGRAD_CACHE_DIR", str(tmp_path))
    cfg = {"kind": "packed", "MR": 2, "NV": 1, "VW": 4, "LX": 1, "LY": 4}
    path = gemm_kernels.save_tuned(device, cfg)
    table = json.loads(path.read_text())
    path_key = "cpu" if device.cpu_paths else "gpu"
    assert table[device.platform_name][device.name][device.driver_version][path_key]["gemm"] \
        == cfg
    prev = gemm_kernels.set_config(device, None)          # forget: the next use reads the file
    try:
        assert gemm_kernels.config(device) == cfg
        a = np.arange(35.0).reshape(5, 7)
        t = clgrad.tensor(a, dtype=clgrad.float32)
        check(t @ t.t(), a @ a.T, clgrad.float32)
        path.write_text("{not json")
        gemm_kernels.set_config(device, None)
        assert gemm_kernels.config(device) != cfg
    finally:
        gemm_kernels.set_config(device, prev)
