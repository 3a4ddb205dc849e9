"""softmax and log_softmax: forward against numpy on every float dtype, dim, layout and walk of the
kernel (rows, lanes, scalar lines, work-group rows), 0-d, empty and extreme inputs; gradients and
double gradients with gradcheck / gradgradcheck; errors as torch raises them."""
import numpy as np
import pytest

import clgrad
from clgrad.kernels import softmax as sm
from clgrad.ops.softmax import CausalSoftmax
from helpers import (LAYOUTS, assert_close, float_dtypes, grad_dtype, grad_tols, make, rounded,
                     to_np)


def np_softmax(a, dim, log):
    a = np.asarray(a, dtype=np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        m = a.max(axis=dim, keepdims=True) if a.ndim else a
        z = a - m
        lse = np.log(np.exp(z).sum(axis=dim, keepdims=True)) if a.ndim else np.log(np.exp(z))
        return z - lse if log else np.exp(z - lse)


def call(log, x, dim, **kw):
    return (clgrad.log_softmax if log else clgrad.softmax)(x, dim, **kw)


def tols(dt, log):
    """softmax values are in [0, 1]; log_softmax ones grow with the spread of the input, so they
    are compared relative to their size."""
    if dt is clgrad.float16:
        return dict(rtol=4e-3, atol=4e-3)
    if dt is clgrad.bfloat16:
        return dict(rtol=2e-2, atol=2e-2)
    return dict(rtol=1e-5, atol=1e-6 if not log else 1e-5)


# shape, dims: covers a contiguous row (ROW walk), lines with inner >= VEC (LANES), inner < VEC
# and strided lines (ONE), and odd lengths for the vector tails
CASES = [((7,), (0, -1)), ((3, 37), (0, 1, -1)), ((2, 5, 19), (0, 1, 2, -2)),
         ((4, 3, 2, 11), (1, 3)), ((64, 9), (0,))]


@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
def test_forward_matches_numpy(device, log):
    rng = np.random.default_rng(0)
    for dt in float_dtypes(device):
        for shape, dims in CASES:
            a = rounded(rng.uniform(-4, 4, shape), dt)
            for layout in (LAYOUTS if len(shape) >= 2 else ("contiguous",)):
                x = make(a, dt, device, layout)
                for d in dims:
                    y = call(log, x, d)
                    assert y.dtype is dt and y.shape == x.shape
                    assert_close(y, np_softmax(a, d, log), dt, **tols(dt, log))


@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
def test_group_kernel(device, log, monkeypatch):
    """The work-group-per-row kernel (GPUs, long rows), forced here."""
    monkeypatch.setattr(sm, "use_group", lambda dev, L, inner, sl: inner == 1 and sl == 1)
    rng = np.random.default_rng(1)
    # one exact and one 16-bit type: each local size of a kernel with barriers costs PoCL ~0.6 s
    for dt in (clgrad.float32, clgrad.bfloat16):
        for shape in [(3, 1000), (4, 257), (2, 5)]:
            a = rounded(rng.uniform(-6, 6, shape), dt)
            x = make(a, dt, device, requires_grad=True)
            y = call(log, x, 1)
            assert_close(y, np_softmax(a, 1, log), dt, **tols(dt, log))
            g = rounded(rng.uniform(-1, 1, shape), dt)
            y.backward(make(g, dt, device))
            yr = np_softmax(a, 1, log)
            p = np.exp(yr) if log else yr
            ref = g - p * g.sum(1, keepdims=True) if log else \
                yr * (g - (g * yr).sum(1, keepdims=True))
            assert_close(x.grad, ref, dt, **tols(dt, False))


def test_layout_that_needs_a_copy(device):
    # dims before `dim` that do not merge into one stride: the input is copied first
    rng = np.random.default_rng(2)
    a = rng.uniform(-2, 2, (3, 4, 5)).astype(np.float32)
    x = clgrad.tensor(a.transpose(1, 0, 2).copy(), device=device).permute(1, 0, 2)[:, ::2]
    assert_close(clgrad.softmax(x, 2), np_softmax(a[:, ::2], 2, False))
    x = clgrad.tensor(a, device=device).permute(2, 0, 1)
    assert_close(clgrad.log_softmax(x, 0), np_softmax(a.transpose(2, 0, 1), 0, True), rtol=1e-5,
                 atol=1e-5)


def test_zero_dim_and_empty(device):
    for log, one in ((False, 1.0), (True, 0.0)):
        for dt in float_dtypes(device):
            x = clgrad.tensor(3.5, dtype=dt, device=device)
            for d in (0, -1):
                y = call(log, x, d)
                assert y.shape == () and y.dtype is dt and y.item() == one
        for shape, d in [((0,), 0), ((2, 0), 1), ((0, 3), 1), ((0, 3), 0)]:
            y = call(log, clgrad.zeros(shape, device=device), d)
            assert y.shape == shape
    x = clgrad.tensor(2.0, device=device, requires_grad=True)
    clgrad.softmax(x, 0).backward()
    assert x.grad.item() == 0.0


def test_extreme_values(device):
    inf, nan = float("inf"), float("nan")
    x = clgrad.tensor([[1e4, 1e4 - 1, -1e4], [-inf, 0.0, -inf], [-inf, -inf, -inf],
                       [inf, 1.0, 2.0], [nan, 1.0, 2.0], [-3e38, 3e38, 0.0]], device=device)
    y = to_np(clgrad.softmax(x, 1))
    ly = to_np(clgrad.log_softmax(x, 1))
    np.testing.assert_allclose(y[0], [0.7310586, 0.26894143, 0.0], rtol=1e-6)
    np.testing.assert_allclose(ly[0], [-0.31326166, -1.3132616, -20000.313], rtol=1e-6)
    assert y[1].tolist() == [0.0, 1.0, 0.0] and ly[1].tolist() == [-inf, 0.0, -inf]
    for row in (2, 3, 4):                 # all -inf, +inf, NaN: NaN rows, as torch gives
        assert np.isnan(y[row]).all() and np.isnan(ly[row]).all()
    assert y[5].tolist() == [0.0, 1.0, 0.0] and ly[5][1] == 0.0
    # large magnitudes in 16-bit types are computed in float32
    for dt in (clgrad.float16, clgrad.bfloat16):
        h = clgrad.tensor([[6e4, 6e4, -6e4]], dtype=dt, device=device)
        assert to_np(clgrad.softmax(h, 1)).tolist() == [[0.5, 0.5, 0.0]]
    # a long row of large values: nothing overflows
    big = clgrad.full((2, 5000), 80.0, device=device)
    assert_close(clgrad.softmax(big, 1), np.full((2, 5000), 1 / 5000))


def test_dtype_argument_and_integer_inputs(device):
    i = clgrad.tensor([[1, 2, 3]], device=device)
    with pytest.raises(NotImplementedError, match="softmax"):
        clgrad.softmax(i, 1)
    with pytest.raises(RuntimeError):             # NotImplementedError is a RuntimeError
        i.log_softmax(1)
    y = clgrad.softmax(i, 1, dtype=clgrad.float32)
    assert y.dtype is clgrad.float32
    assert_close(y, np_softmax([[1, 2, 3]], 1, False))
    h = clgrad.tensor([1.0, 2.0], dtype=clgrad.float16, device=device, requires_grad=True)
    y = h.log_softmax(0, dtype=clgrad.float32)
    assert y.dtype is clgrad.float32
    y.sum().backward()
    assert h.grad.dtype is clgrad.float16


def test_errors(device):
    x = clgrad.zeros(2, 3, device=device)
    with pytest.raises(IndexError, match="Dimension out of range"):
        clgrad.softmax(x, 2)
    with pytest.raises(IndexError, match="Dimension out of range"):
        x.log_softmax(-3)
    with pytest.raises(IndexError):
        clgrad.softmax(clgrad.tensor(1.0, device=device), 1)
    with pytest.raises(TypeError):
        clgrad.softmax([1.0, 2.0], 0)
    with pytest.raises(TypeError):
        clgrad.softmax(x, None)


# ---- gradients ------------------------------------------------------------------------------
@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
def test_gradients(device, log):
    dt = grad_dtype(device)
    tol = grad_tols(device)
    rng = np.random.default_rng(3)
    for shape, d, layout in [((3, 5), 1, "contiguous"), ((3, 5), 0, "contiguous"),
                             ((2, 3, 9), 1, "contiguous"), ((4, 3), -1, "transposed"),
                             ((3, 4), 0, "strided"), ((), 0, "contiguous")]:
        x = make(rng.uniform(-2, 2, shape), dt, device, layout, requires_grad=True)
        assert clgrad.autograd.gradcheck(lambda t: call(log, t, d), (x,), **tol)
        assert clgrad.autograd.gradgradcheck(lambda t: call(log, t, d), (x,), **tol)


@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
def test_backward_data_ops(device, log):
    """The fused backward ops are differentiable in both their arguments."""
    dt = grad_dtype(device)
    tol = grad_tols(device)
    rng = np.random.default_rng(4)
    y = call(log, make(rng.uniform(-1, 1, (3, 4)), dt, device), 1).detach().requires_grad_()
    g = make(rng.uniform(-1, 1, (3, 4)), dt, device, requires_grad=True)
    f = clgrad._log_softmax_backward_data if log else clgrad._softmax_backward_data
    assert clgrad.autograd.gradcheck(lambda a, b: f(a, b, 1), (g, y), **tol)
    assert clgrad.autograd.gradgradcheck(lambda a, b: f(a, b, 1), (g, y), **tol)


def test_node_names_and_backward_values(device):
    x = clgrad.tensor([[1.0, 2.0, 4.0]], device=device, requires_grad=True)
    y = clgrad.softmax(x, 1)
    assert y.grad_fn.name() == "SoftmaxBackward0"
    assert clgrad.log_softmax(x, 1).grad_fn.name() == "LogSoftmaxBackward0"
    (y * clgrad.tensor([[1.0, 0.0, 0.0]], device=device)).sum().backward()
    p = np_softmax([[1.0, 2.0, 4.0]], 1, False)[0]
    assert_close(x.grad, [p[0] * (np.array([1.0, 0, 0]) - p)])
    gx, = clgrad.autograd.grad(clgrad.softmax(x, 1).sum(), x, create_graph=True)
    assert gx.grad_fn.name() == "SoftmaxBackwardDataBackward0"


@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
def test_forward_mode(device, log):
    import clgrad.autograd.forward_ad as fwAD
    dt = grad_dtype(device)
    rng = np.random.default_rng(5)
    a, v = rng.uniform(-2, 2, (3, 5)), rng.uniform(-1, 1, (3, 5))
    for d in (0, 1):
        with fwAD.dual_level():
            y = call(log, fwAD.make_dual(make(a, dt, device), make(v, dt, device)), d)
            jv = fwAD.unpack_dual(y).tangent
        eps = 1e-6 if dt is clgrad.float64 else 1e-3
        num = (np_softmax(a + eps * v, d, log) - np_softmax(a - eps * v, d, log)) / (2 * eps)
        assert_close(jv, num, dt, rtol=1e-5 if dt is clgrad.float64 else 1e-2,
                     atol=1e-7 if dt is clgrad.float64 else 1e-3)


@pytest.mark.parametrize("log", [False, True])
def test_softmax_on_both_paths_over_long_odd_rows(device, code_paths, log):
    """Rows long enough for a work-group per row on the GPU paths, of lengths that are not powers
    of two (the local-memory tree then folds odd counts), forward and backward, in float32."""
    rng = np.random.default_rng(5)
    for shape in [(3, 128), (2, 129), (4, 300), (1, 1000), (2, 5000)]:
        a = rng.standard_normal(shape).astype(np.float32) * 4
        x = clgrad.tensor(a, requires_grad=True)
        y = call(log, x, -1)
        assert_close(y, np_softmax(a, -1, log), rtol=1e-5, atol=1e-5)
        g = rng.standard_normal(shape).astype(np.float32)
        y.backward(clgrad.tensor(g))
        yn = np_softmax(a, -1, log)
        want = g - np.exp(yn) * g.sum(-1, keepdims=True) if log else \
            yn * (g - (g * yn).sum(-1, keepdims=True))
        assert_close(x.grad, want, rtol=1e-4, atol=1e-5)


def test_native_exp_only_where_the_probe_found_it_accurate(device):
    """softmax uses native_exp only on devices where it matched exp (PoCL's does, Intel's CPU one
    erred by 8e-5); either way float32 results stay within float32's rounding."""
    ok = sm.native_exp_ok(device)
    assert ok in (True, False)
    assert sm.softmax_family(device, clgrad.float32) is (sm.SOFTMAX_NATIVE if ok else sm.SOFTMAX)
    assert sm.softmax_family(device, clgrad.float64) is sm.SOFTMAX
    a = np.linspace(-80, 3, 4001, dtype=np.float32).reshape(1, -1)
    assert_close(clgrad.softmax(clgrad.tensor(a), -1), np_softmax(a, -1, False), rtol=1e-5,
                 atol=1e-7)


# ---- the softmax of causal attention scores (scaled_dot_product_attention's composed form) ----
def np_causal(a, first):
    """Row i of the last two dims sees columns 0 .. i + first; the rest are 0."""
    keep = np.tril(np.ones(a.shape[-2:], bool), first)
    if a.size == 0:
        return np.zeros(a.shape)
    with np.errstate(invalid="ignore"):
        return np.where(keep, np_softmax(np.where(keep, a, -np.inf), -1, False), 0.0)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_causal_scores_match_numpy(device, layout):
    """CausalSoftmax on every float dtype and layout (a transposed or strided input is copied
    first): rows shorter and longer than the vector width with tails, more queries than keys
    (late rows see them all), an offset (a block of query rows), empty inputs."""
    rng = np.random.default_rng(6)
    for dt in float_dtypes(device):
        for shape, first in [((1, 1), 0), ((5, 7), 0), ((2, 9, 8), 0), ((3, 20, 9), 0),
                             ((2, 4, 37), 3), ((3, 6, 17), 40), ((0, 5), 0), ((2, 3, 0), 0)]:
            a = rng.uniform(-3, 3, shape)
            y = CausalSoftmax.apply(make(a, dt, device, layout), first)
            assert y.shape == shape and y.dtype is dt
            assert_close(y, np_causal(rounded(a, dt), first), **tols(dt, False))


def test_causal_scores_gradients(device):
    dt, tol = grad_dtype(device), grad_tols(device)
    x = make(np.random.default_rng(7).uniform(-2, 2, (2, 5, 11)), dt, device, requires_grad=True)
    for first in (0, 3):
        y = CausalSoftmax.apply(x, first)
        assert y.grad_fn.name() == "CausalSoftmaxBackward0"
        assert clgrad.autograd.gradcheck(lambda t: CausalSoftmax.apply(t, first), (x,), **tol)
        assert clgrad.autograd.gradgradcheck(lambda t: CausalSoftmax.apply(t, first), (x,), **tol)
