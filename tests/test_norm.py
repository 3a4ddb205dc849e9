"""The fused layer_norm (clgrad/ops/norm.py, cl_kernels/norm.mako): forward and every gradient
against a float64 numpy reference with the same weights, on every float dtype, both code paths
(a work-item per row with vector loads; a work-group per row), rows shorter and longer than the
vector width and the work-group, non-contiguous inputs, with and without weight and bias;
gradcheck, gradgradcheck and forward-mode AD; and the kernel count that makes it worth having.
Then RMSNorm, InstanceNorm, LocalResponseNorm and CrossMapLRN2d against numpy formulas (Lua
Torch's sliding sum for the last), their running statistics, and gradients by finite
differences."""
import numpy as np
import pytest

import clgrad
import clgrad.nn.functional as F
from clgrad import nn
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
    # torch's mixed rule: a float32 weight on a bfloat16 input, the result in bfloat16
    y = F.layer_norm(clgrad.tensor([[1.0, 3.0]], dtype=clgrad.bfloat16), (2,), clgrad.ones(2))
    assert y.dtype is clgrad.bfloat16 and y.float().tolist() == [[-1.0, 1.0]]


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


def test_parameters_of_another_dtype_follow_torchs_mixed_rule(device):
    """torch's CPU rule for layer_norm, group_norm and batch_norm: where the first parameter
    given has another dtype than the input, all must be float32 and the input bfloat16 or
    float16; otherwise every parameter has the input's dtype; a non-float input is refused with
    NotImplementedError (batch_norm: before the mixed check; layer_norm: the mixed check before
    the shapes'). Messages as torch's (checked in torch 2.13)."""
    x = clgrad.tensor([1.0, 0.07])
    x3 = clgrad.tensor([[[1.0, 2.0, 4.0], [0.5, -1.0, 3.0]]])            # (1, 2, 3)
    i2, i3 = clgrad.tensor([1, 2]), x3.long()
    expect_float = "mixed dtype \\(CPU\\): expect parameter to have scalar type of Float"
    share = "mixed dtype \\(CPU\\): all inputs must share same datatype"
    for f in (lambda w, b=None: F.layer_norm(x, (2,), w, b),
              lambda w, b=None: F.group_norm(x3, 1, w, b),
              lambda w, b=None: F.batch_norm(x3, clgrad.zeros(2), clgrad.ones(2), w, b)):
        with pytest.raises(RuntimeError, match=expect_float):
            f(i2)
        with pytest.raises(RuntimeError, match=expect_float):
            f(None, clgrad.tensor([True, False]))
        with pytest.raises(RuntimeError, match="expected scalar type Float but found Long"):
            f(clgrad.ones(2), i2)
    with pytest.raises(RuntimeError, match=share):
        F.layer_norm(i2, (2,), clgrad.ones(2))
    with pytest.raises(RuntimeError, match=share):
        F.group_norm(i3, 1, clgrad.ones(2))
    with pytest.raises(RuntimeError, match=expect_float):       # before the shapes, as torch
        F.layer_norm(x3, (3,), clgrad.ones(2).long())
    with pytest.raises(RuntimeError, match="Expected weight to be of same shape as "
                                           "normalized_shape"):
        F.layer_norm(x3, (3,), clgrad.ones(2))
    with pytest.raises(RuntimeError, match="Expected weight to be a vector of size equal to the "
                                           "number of channels"):
        F.group_norm(x3, 1, clgrad.ones(3))
    with pytest.raises(RuntimeError, match="running_mean should contain 2 elements not 3"):
        F.batch_norm(x3, clgrad.zeros(3), clgrad.ones(2))
    with pytest.raises(RuntimeError, match="expected scalar type Float but found Long"):
        F.batch_norm(x3, clgrad.zeros(2), clgrad.ones(2).long())     # first given: running_mean
    if device.has_fp64:
        w64 = clgrad.tensor([-0.22, -0.38], dtype=clgrad.float64)
        with pytest.raises(RuntimeError, match=expect_float):
            F.layer_norm(x, (2,), w64)
        with pytest.raises(RuntimeError, match=share):
            F.batch_norm(x3.double(), clgrad.zeros(2), clgrad.ones(2))
    # non-float inputs
    with pytest.raises(NotImplementedError, match="\"GroupNormKernelImpl\" not implemented for "
                                                  "'Long'"):
        F.group_norm(i3, 1)
    for v in (i3, x3 > 1):
        for training in (False, True):
            with pytest.raises(NotImplementedError, match="\"batch_norm\" not implemented for"):
                F.batch_norm(v, clgrad.zeros(2), clgrad.ones(2), clgrad.ones(2),
                             training=training)
    # the mixed form that torch takes: a bfloat16 input with float32 parameters, in bfloat16
    xb = x3.to(clgrad.bfloat16)
    w, b = clgrad.tensor([2.0, 0.5]), clgrad.tensor([1.0, -1.0])
    a = to_np(xb.float()).astype(np.float64)
    mu = a.mean((0, 2), keepdims=True)
    ref = (a - mu) / np.sqrt(a.var((0, 2), keepdims=True) + 1e-5) * [[[2.0], [0.5]]] + \
        [[[1.0], [-1.0]]]
    y = F.batch_norm(xb, clgrad.zeros(2), clgrad.ones(2), w, b, training=True)
    assert y.dtype is clgrad.bfloat16
    assert np.allclose(to_np(y.float()), ref, atol=0.05)
    y = F.group_norm(xb, 2, w, b)
    assert y.dtype is clgrad.bfloat16
    assert np.allclose(to_np(y.float()), ref, atol=0.05)


def test_norm_edge_sizes_as_torch(device):
    """group_norm of one value per group raises torch's ValueError (its _verify_batch_size
    over (N*C/G, G, *rest)); empty inputs give empty results (batch_norm: the input's dtype,
    unchecked)."""
    for shape, g in (((1, 1), 1), ((1, 1, 1), 1), ((1, 2), 2)):
        with pytest.raises(ValueError, match="Expected more than 1 value per channel when "
                                             f"training, got input size \\{list(shape)}"):
            F.group_norm(clgrad.full(shape, 1.49), g)
    assert F.group_norm(clgrad.ones(2, 1), 1).tolist() == [[0.0], [0.0]]
    assert F.group_norm(clgrad.ones(0, 2), 1).shape == (0, 2)
    e = F.batch_norm(clgrad.ones(0, 2, dtype=clgrad.int64), clgrad.zeros(3), clgrad.ones(2))
    assert e.dtype is clgrad.int64 and e.shape == (0, 2)
    assert F.batch_norm(clgrad.ones(0, 2), None, None, training=True).shape == (0, 2)


def test_rms_norm(device):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 4))
    m = nn.RMSNorm((3, 4)).double()
    with clgrad.no_grad():
        m.weight.copy_(clgrad.tensor(rng.standard_normal((3, 4))))
    want = x / np.sqrt((x ** 2).mean((1, 2), keepdims=True) + np.finfo(np.float64).eps) * \
        m.weight.detach().numpy()
    np.testing.assert_allclose(m(clgrad.tensor(x)).detach().numpy(), want, rtol=1e-12)
    X = clgrad.tensor(x, requires_grad=True)
    assert gradcheck(lambda X, w: F.rms_norm(X, (4,), w, eps=1e-3),
                     (X, clgrad.ones(4, dtype=clgrad.float64, requires_grad=True)))
    with pytest.raises(RuntimeError, match="normalized_shape"):
        F.rms_norm(X, (5,))


def test_instance_norm_and_running_stats(device):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 3, 4, 5))
    m = nn.InstanceNorm2d(3, affine=True, track_running_stats=True, momentum=0.5).double()
    out = m(clgrad.tensor(x)).detach().numpy()
    mu = x.mean((2, 3), keepdims=True)
    var = x.var((2, 3), keepdims=True)
    np.testing.assert_allclose(out, (x - mu) / np.sqrt(var + 1e-5), rtol=1e-10, atol=1e-12)
    # running statistics: the batch mean of the per-instance mean and unbiased variance
    n = 20
    np.testing.assert_allclose(m.running_mean.numpy(), 0.5 * mu.reshape(2, 3).mean(0),
                               rtol=1e-12)
    np.testing.assert_allclose(m.running_var.numpy(),
                               0.5 + 0.5 * (var * n / (n - 1)).reshape(2, 3).mean(0),
                               rtol=1e-12)
    assert m.num_batches_tracked.item() == 1
    m.eval()                                                      # now uses the running ones
    rm, rv = m.running_mean.numpy(), m.running_var.numpy()
    np.testing.assert_allclose(m(clgrad.tensor(x)).detach().numpy(),
                               (x - rm.reshape(1, 3, 1, 1)) / np.sqrt(rv.reshape(1, 3, 1, 1)
                                                                      + 1e-5),
                               rtol=1e-10, atol=1e-12)
    X = clgrad.tensor(x[:, :, :2, :3], requires_grad=True)
    assert gradcheck(lambda X: F.instance_norm(X), (X,))
    assert nn.InstanceNorm1d(3)(clgrad.randn(3, 6)).shape == (3, 6)      # unbatched
    with pytest.raises(ValueError, match="expected 2D or 3D input"):
        nn.InstanceNorm1d(3)(clgrad.randn(3))


def test_local_response_norm(device):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 5, 3))
    size, alpha, beta, k = 3, 0.1, 0.7, 2.0
    sq = np.pad(x ** 2, ((0, 0), (size // 2, (size - 1) // 2), (0, 0)))
    div = sum(sq[:, i:i + 5] for i in range(size)) / size
    want = x / (k + alpha * div) ** beta
    got = nn.LocalResponseNorm(size, alpha, beta, k)(clgrad.tensor(x)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-12)
    X = clgrad.tensor(x, requires_grad=True)
    assert gradcheck(lambda X: F.local_response_norm(X, 2, 0.5, 0.75, 1.0), (X,))


def _lua_cross_map_lrn(x, size, alpha, beta, k):
    """Lua Torch's sliding sum, step by step (it never removes channel 0)."""
    C = x.shape[1]
    sq = x * x
    pre = int((size - 1) / 2 + 1)
    scale = np.zeros_like(x)
    scale[:, 0] = sq[:, :min(pre, C)].sum(1)
    for c in range(1, C):
        scale[:, c] = scale[:, c - 1]
        if c < C - pre + 1:
            scale[:, c] += sq[:, c + pre - 1]
        if c > pre:
            scale[:, c] -= sq[:, c - pre]
    return x * (scale * alpha / size + k) ** -beta


@pytest.mark.parametrize("C,size", [(7, 3), (8, 4), (3, 7)])
def test_cross_map_lrn2d(device, C, size):
    x = np.random.default_rng(C).normal(size=(2, C, 3, 2))
    X = clgrad.tensor(x, device=device, requires_grad=True)
    got = nn.CrossMapLRN2d(size, 0.3, 0.75, 1.5)(X)
    np.testing.assert_allclose(got.detach().numpy(), _lua_cross_map_lrn(x, size, 0.3, 0.75, 1.5),
                               rtol=1e-12)
    assert gradcheck(lambda t: nn.CrossMapLRN2d(size, 0.3, 0.75, 1.5)(t), (X,))
    with pytest.raises(ValueError, match="Expected input to be 4D"):
        nn.CrossMapLRN2d(3)(clgrad.ones(2, 3, device=device))
