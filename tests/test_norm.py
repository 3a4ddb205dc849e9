"""The fused layer_norm (clgrad/ops/norm.py, cl_kernels/norm.mako): forward and every gradient
against a float64 numpy reference with the same weights, on every float dtype, both code paths
(a work-item per row with vector loads; a work-group per row), rows shorter and longer than the
vector width and the work-group, non-contiguous inputs, with and without weight and bias;
gradcheck, gradgradcheck and forward-mode AD; and the kernel count that makes it worth having."""
import numpy as np
import pytest

import clgrad
import clgrad.nn.functional as F
from clgrad.autograd import gradcheck, gradgradcheck, profiler
from helpers import assert_close, float_dtypes, grad_dtype, grad_tols, make, rounded, to_np

# gradients of a normalisation lose a few digits to the subtraction of the mean
GRAD_TOL = {clgrad.float64: (1e-9, 1e-9), clgrad.float32: (2e-4, 2e-4),
            clgrad.float16: (2e-2, 2e-2), clgrad.bfloat16: (1.5e-1, 1.5e-1)}


def reference(x, w, b, k, g, eps=1e-5):
    """(y, dx, dw, db) of layer_norm over the last k dims, in float64."""
    axes = tuple(range(x.ndim - k, x.ndim))
    n = int(np.prod(x.shape[x.ndim - k:]))
    mu = x.mean(axes, keepdims=True)
    r = 1 / np.sqrt(x.var(axes, keepdims=True) + eps)
    xhat = (x - mu) * r
    wv = np.ones(x.shape[x.ndim - k:]) if w is None else w
    y = xhat * wv + (0 if b is None else b)
    gw = g * wv
    dx = r * (gw - gw.sum(axes, keepdims=True) / n
              - xhat * (gw * xhat).sum(axes, keepdims=True) / n)
    lead = tuple(range(x.ndim - k))
    return y, dx, (g * xhat).sum(lead), g.sum(lead)


@pytest.mark.parametrize("shape,k", [((6, 7), 1), ((4, 300), 1), ((2, 3, 40), 2), ((5, 1), 1),
                                     ((3, 32), 1), ((1, 2, 3, 17), 3)])
@pytest.mark.parametrize("affine", ["both", "weight", "bias", "none"])
def test_matches_numpy(device, code_paths, shape, k, affine):
    rng = np.random.default_rng(len(shape) * 100 + shape[-1])
    ns = shape[len(shape) - k:]
    a = rng.normal(size=shape) * 3 + 1
    wa, ba = rng.uniform(0.5, 2, ns), rng.normal(size=ns)
    ga = rng.normal(size=shape)
    for dt in float_dtypes(device):
        layout = "strided" if shape[-1] > 1 and dt is clgrad.float32 else "contiguous"
        x = make(a, dt, device, layout, requires_grad=True)
        w = make(wa, dt, device, requires_grad=True) if affine in ("both", "weight") else None
        b = make(ba, dt, device, requires_grad=True) if affine in ("both", "bias") else None
        y = F.layer_norm(x, ns, w, b)
        y.backward(make(ga, dt, device))
        ref = reference(rounded(a, dt).astype(np.float64),
                        None if w is None else rounded(wa, dt).astype(np.float64),
                        None if b is None else rounded(ba, dt).astype(np.float64), k,
                        rounded(ga, dt).astype(np.float64))
        assert y.dtype is dt and y.shape == x.shape
        assert_close(y, ref[0], dt, **({"rtol": 2e-5, "atol": 2e-5} if dt is clgrad.float32
                                      else {}))
        rtol, atol = GRAD_TOL[dt]
        scale = max(1.0, np.abs(ref[1]).max())
        assert_close(x.grad, ref[1], dt, rtol=rtol, atol=atol * scale)
        for t, r in ((w, ref[2]), (b, ref[3])):
            if t is not None:
                assert t.grad.shape == t.shape
                assert_close(t.grad, r, dt, rtol=rtol, atol=atol * max(1.0, np.abs(r).max()))


def test_constant_rows_are_exactly_zero(device, code_paths):
    for dt in float_dtypes(device):
        for v in (3.7, -1e4, 0.1):
            x = clgrad.full((5, 33), v, dtype=dt)
            assert np.abs(to_np(F.layer_norm(x, (33,)))).max() == 0


def test_gradcheck_and_gradgradcheck(device, code_paths):
    dt = grad_dtype(device)
    tol = grad_tols(device)
    rng = np.random.default_rng(3)
    x, w, b = (clgrad.tensor(rng.normal(size=s), dtype=dt, requires_grad=True)
               for s in ((3, 4, 5), (4, 5), (4, 5)))
    f = lambda x, w, b: F.layer_norm(x, (4, 5), w, b)          # noqa: E731
    assert gradcheck(f, (x, w, b), **tol)
    assert gradgradcheck(f, (x, w, b), **tol)
    assert gradcheck(lambda x: F.layer_norm(x, (5,)), (x,), **tol)
    assert gradgradcheck(lambda x, w: F.layer_norm(x, (5,), w[0]), (x, w), **tol)


def test_forward_mode_matches_the_reference_jvp(device):
    import clgrad.autograd.forward_ad as fwAD
    dt = grad_dtype(device)
    rng = np.random.default_rng(4)
    a, t, wa, ba = (rng.normal(size=s) for s in ((3, 6), (3, 6), (6,), (6,)))
    with fwAD.dual_level():
        d = fwAD.make_dual(clgrad.tensor(a, dtype=dt), clgrad.tensor(t, dtype=dt))
        tangent = fwAD.unpack_dual(F.layer_norm(d, (6,), clgrad.tensor(wa, dtype=dt),
                                                clgrad.tensor(ba, dtype=dt))).tangent
    h = 1e-6
    fd = (reference(a + h * t, wa, ba, 1, a)[0] - reference(a - h * t, wa, ba, 1, a)[0]) / (2 * h)
    np.testing.assert_allclose(to_np(tangent), fd, rtol=1e-4, atol=1e-5 if dt is
                               clgrad.float64 else 1e-3)


def test_empty_and_mixed_inputs_take_the_composed_form(device):
    x = clgrad.zeros(0, 4, requires_grad=True)
    y = F.layer_norm(x, (4,))
    assert y.shape == (0, 4)
    y.sum().backward()
    assert x.grad.shape == (0, 4)
    if device.has_fp64:
        # a float64 weight on a float32 input: promoted, as the composed ops do
        y = F.layer_norm(clgrad.ones(2, 3), (3,), clgrad.ones(3, dtype=clgrad.float64))
        assert y.dtype is clgrad.float64


def test_one_kernel_forward_and_four_backward(device):
    """A LayerNorm's forward is one kernel and its backward four (dx, the weight's and bias's
    partial sums, the sum of each), where the composed form launched about twenty."""
    ln = clgrad.nn.LayerNorm(64)
    x = clgrad.randn(16, 64, requires_grad=True)
    ln(x).sum().backward()                            # build everything first
    x.grad = None
    ln.zero_grad(set_to_none=True)
    with profiler.profile(use_device="cl") as prof:
        y = ln(x)
    fwd = [e for e in prof.key_averages() if e.device_type != "cpu"]
    g = clgrad.ones_like(y)
    with profiler.profile(use_device="cl") as prof:
        y.backward(g)
    bwd = [e for e in prof.key_averages() if e.device_type != "cpu"]
    assert [e.key for e in fwd] == ["ln_fwd_row" if device.cpu_paths else "ln_fwd_group"]
    assert sum(e.count for e in bwd) <= 4, [e.key for e in bwd]
