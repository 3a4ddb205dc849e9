"""Mixed precision: autocast's op lists, nesting, the cast cache, custom_fwd/custom_bwd, and
GradScaler's rules."""
import warnings

import numpy as np
import pytest

import clgrad
import clgrad.nn.functional as F
from clgrad.amp import GradScaler, autocast, custom_bwd, custom_fwd
from clgrad.amp import autocast_mode
from clgrad.runtime import device as _device
from helpers import rounded


def _cpu_tensor(a, **kw):
    return clgrad.tensor(a, device="cpu", **kw)


def test_cpu_lists():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 4)).astype(np.float32)
    w = rng.standard_normal((2, 4)).astype(np.float32)
    x, W = _cpu_tensor(a), _cpu_tensor(w, requires_grad=True)
    with autocast("cpu"):                                      # bfloat16 by default on "cpu"
        y = F.linear(x, W)
        mm = x @ x.t()
        cat = clgrad.cat([y, x.double()[:, :2]])
        loss = F.mse_loss(y, clgrad.zeros(3, 2, device="cpu"))
        d = x.double() @ x.double().t()                        # float64 is left alone
    assert y.dtype is mm.dtype is clgrad.bfloat16
    assert cat.dtype is clgrad.float64 and loss.dtype is clgrad.float32
    assert d.dtype is clgrad.float64
    ref = rounded(a, clgrad.bfloat16).astype(np.float64) @ rounded(w, clgrad.bfloat16).T
    np.testing.assert_allclose(y.detach().float().numpy(), ref, rtol=2e-2, atol=2e-2)
    loss.backward()
    assert W.grad.dtype is clgrad.float32                      # gradients of float32 params
    assert (x @ x.t()).dtype is clgrad.float32                 # off outside the region


def test_nesting_disable_and_decorator():
    x = clgrad.ones(2, 2, device="cpu")
    with autocast("cpu"):
        with autocast("cpu", enabled=False):
            assert (x @ x).dtype is clgrad.float32
        assert (x @ x).dtype is clgrad.bfloat16
        with autocast("cpu", dtype=clgrad.float16):
            assert (x @ x).dtype is clgrad.float16
    assert not clgrad.amp.is_autocast_enabled("cpu")

    @autocast("cpu")
    def f(t):
        return t @ t
    assert f(x).dtype is clgrad.bfloat16
    with pytest.raises(RuntimeError, match="unsupported autocast device_type"):
        autocast("mps")


def test_cuda_autocast_needs_a_gpu():
    x = clgrad.ones(2, 2, device="cpu")
    if _device.gpus():
        with autocast("cuda"):
            g = x.cuda()
            assert (g @ g).dtype is clgrad.float16
            assert (x @ x).dtype is clgrad.float32             # only cuda tensors are cast
    else:
        with pytest.warns(UserWarning, match="CUDA is not available"):
            ctx = autocast("cuda")
        with ctx:
            assert not clgrad.amp.is_autocast_enabled("cuda")
            assert (x @ x).dtype is clgrad.float32


def test_parameters_are_cast_once_per_region():
    lin = clgrad.nn.Linear(4, 4).to("cpu")
    x = clgrad.ones(2, 4, device="cpu")
    with autocast("cpu"):
        lin(x); lin(x)
        cached = [v for v in autocast_mode._state.cache.values() if v[0] is lin.weight]
        assert len(cached) == 1 and cached[0][1].dtype is clgrad.bfloat16
    assert not autocast_mode._state.cache                      # dropped at the region's end
    with autocast("cpu", cache_enabled=False):
        lin(x)
        assert not autocast_mode._state.cache


class _Scaled(clgrad.autograd.Function):
    @staticmethod
    @custom_fwd(device_type="cpu", cast_inputs=clgrad.float32)
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a @ b

    @staticmethod
    @custom_bwd(device_type="cpu")
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        assert clgrad.amp.is_autocast_enabled("cpu") is True    # the state around forward
        return g @ b.t(), a.t() @ g


def test_custom_fwd_and_bwd():
    a = clgrad.ones(2, 3, device="cpu", dtype=clgrad.bfloat16, requires_grad=True)
    b = clgrad.ones(3, 2, device="cpu", requires_grad=True)
    with autocast("cpu"):
        out = _Scaled.apply(a, b)
    assert out.dtype is clgrad.float32                         # inputs cast, autocast off inside
    out.sum().backward()
    assert a.grad.dtype is clgrad.bfloat16 and b.grad.tolist() == [[2.0, 2.0]] * 3


def test_grad_scaler_rules():
    w = clgrad.nn.Parameter(clgrad.ones(3, device="cpu"))
    opt = clgrad.optim.SGD([w], lr=0.1)
    s = GradScaler("cpu", init_scale=8.0, growth_interval=2)
    assert s.get_scale() == 8.0
    loss = (w * clgrad.tensor([1.0, 2.0, 3.0], device="cpu")).sum()
    s.scale(loss).backward()
    assert w.grad.tolist() == [8.0, 16.0, 24.0]
    s.unscale_(opt)
    assert w.grad.tolist() == [1.0, 2.0, 3.0]
    with pytest.raises(RuntimeError, match="already been called"):
        s.unscale_(opt)
    s.step(opt)
    s.update()
    np.testing.assert_allclose(w.detach().numpy(), [0.9, 0.8, 0.7], rtol=1e-6)
    opt.zero_grad()
    s.scale((w * float("inf")).sum()).backward()               # overflow: step skipped
    before = w.tolist()
    assert s.step(opt) is None and w.tolist() == before
    s.update()
    assert s.get_scale() == 4.0                                # backoff
    for _ in range(2):
        opt.zero_grad()
        s.scale(w.sum()).backward()
        s.step(opt)
        s.update()
    assert s.get_scale() == 8.0                                # grown after 2 clean steps
    sd = s.state_dict()
    t = GradScaler("cpu")
    t.load_state_dict(sd)
    assert t.state_dict() == sd and sd["_growth_tracker"] == 0
    off = GradScaler("cpu", enabled=False)
    assert off.scale(loss) is loss and off.state_dict() == {}
    with pytest.raises(ValueError):
        GradScaler(growth_factor=1.0)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
def test_unscale_kernel_every_float_dtype(device, dtype):
    """The fused unscale: values times 1/scale in place on contiguous, strided and empty
    gradients of any size (vector body and tail), and one inf or NaN anywhere is found."""
    from clgrad.amp.grad_scaler import _unscale_and_check
    dt = getattr(clgrad, dtype)
    if dt is clgrad.float64 and not device.has_fp64:
        pytest.skip("the device has no float64")      # a device property, not a missing feature
    rng = np.random.default_rng(0)
    grads = [clgrad.tensor(rng.standard_normal(n).astype(np.float32) * 64).to(dt)
             for n in (1, 7, 33, 0)]
    grads.append(clgrad.tensor(rng.standard_normal((6, 5)).astype(np.float32)).to(dt).t())
    before = [g.float().numpy().copy() for g in grads]
    assert _unscale_and_check(grads, 0.25) is False
    for g, b in zip(grads, before):
        np.testing.assert_allclose(g.float().numpy(), b * 0.25, rtol=1e-2 if dt.itemsize == 2
                                   else 1e-6)
    for bad in (float("inf"), float("-inf"), float("nan")):
        for where in (0, 32):
            gs = [clgrad.zeros(3, dtype=dt), clgrad.zeros(33, dtype=dt)]
            gs[where // 32][where % 32 if where < 32 else 32] = bad
            assert _unscale_and_check(gs, 0.5) is True


def test_autocast_training_reduces_the_loss():
    clgrad.manual_seed(0)
    model = clgrad.nn.Sequential(clgrad.nn.Linear(8, 16), clgrad.nn.ReLU(),
                                 clgrad.nn.Linear(16, 3)).to("cpu")
    opt = clgrad.optim.Adam(model.parameters(), lr=1e-2)
    scaler = GradScaler("cpu")
    x = clgrad.randn(64, 8, device="cpu")
    y = (x[:, 0] > 0).long() + (x[:, 1] > 0).long()
    losses = []
    for _ in range(30):
        opt.zero_grad()
        with autocast("cpu"):
            loss = F.cross_entropy(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        losses.append(loss.item())
    assert loss.dtype is clgrad.float32
    assert all(p.dtype is clgrad.float32 for p in model.parameters())
    assert losses[-1] < 0.6 * losses[0]


def test_float64_is_never_cast_and_linear_checks_as_torch():
    """torch's autocast casts only the eligible tensors, floats that are not float64, on every
    list (checked in torch 2.13): a float64 product under a bfloat16 region stays float64, and
    so does a float32-list loss of it; the promote list follows torch's prioritize (float32 once
    any argument is float32, else every argument must be of the region's dtype). F.linear
    dispatches as torch: a 1-d weight cannot take the fused addmm with a bias."""
    a = np.array([[0.5, -1.25], [2.0, 0.75]])
    x = _cpu_tensor(a, dtype=clgrad.float64)
    with autocast("cpu", dtype=clgrad.bfloat16):
        loss = F.mse_loss(x @ x.mT, x)
        low = F.mse_loss(x.float() @ x.float().mT, x)          # bfloat16 product, float64 c
        ce = F.cross_entropy(x, _cpu_tensor([0, 1]))
        with pytest.raises(RuntimeError, match="Unexpected floating ScalarType in "
                                               "at::autocast::prioritize"):
            clgrad.cat([x.to(clgrad.bfloat16), x.to(clgrad.float16)])
        assert clgrad.cat([x.to(clgrad.bfloat16), x.float()]).dtype is clgrad.float32
        with pytest.raises(NotImplementedError, match="not implemented for 'Bool'"):
            F.conv1d((x > 0)[None], x.float()[..., None])
        with pytest.raises(RuntimeError, match="channels"):        # the shapes come first
            F.conv1d((x > 0)[None], x.float()[:, :1, None])
    assert loss.dtype is clgrad.float64
    assert abs(loss.item() - ((a @ a.T - a) ** 2).mean()) < 1e-12
    assert low.dtype is clgrad.float64
    b = rounded(a, clgrad.bfloat16)
    assert abs(low.item() - ((rounded(b @ b.T, clgrad.bfloat16) - a) ** 2).mean()) < 1e-6
    assert ce.dtype is clgrad.float64
    v = _cpu_tensor([1.0, 2.0])
    for region in (False, True):
        with autocast("cpu", dtype=clgrad.bfloat16, enabled=region):
            with pytest.raises(RuntimeError, match="mat2 must be a matrix, got 1-D tensor"):
                F.linear(v, v, v)
            with pytest.raises(RuntimeError, match="mat2 must be a matrix, got 1-D tensor"):
                F.linear(v[None], v, v)
            with pytest.raises(RuntimeError, match="both arguments to linear need to be at "
                                                   "least 1D, but they are 1D and 0D"):
                F.linear(v, v[0])
            assert F.linear(v, v).float().item() == 5.0
            assert F.linear(v, v, _cpu_tensor(1.0)).float().item() == 6.0   # matmul, add_


def test_composite_ops_cast_their_inner_calls():
    """An op composed of nn.functional's functions reaches the autocast-wrapped ones through
    nn.functional's namespace (clgrad/ops/dispatch.py), as torch's dispatcher casts the inner
    calls: multi-head attention's projections, an RNN step's GEMMs and conv_tbc's convolution run
    in the region's dtype, linear_cross_entropy's loss in float32."""
    clgrad.manual_seed(0)
    mha = clgrad.nn.MultiheadAttention(4, 2)
    q = clgrad.randn(3, 1, 4)
    with autocast(q.device.type, dtype=clgrad.bfloat16):     # "cuda" where the default is a GPU
        assert mha(q, q, q)[0].dtype is clgrad.bfloat16
        assert clgrad.rnn_tanh_cell(clgrad.randn(1, 3), clgrad.randn(1, 2), clgrad.randn(2, 3),
                                    clgrad.randn(2, 2)).dtype is clgrad.bfloat16
        assert clgrad.conv_tbc(clgrad.randn(3, 1, 1), clgrad.randn(2, 1, 1),
                               clgrad.zeros(1)).dtype is clgrad.bfloat16
        loss = F.linear_cross_entropy(clgrad.randn(4, 3), clgrad.randn(5, 3),
                                      clgrad.tensor([0, 1, 2, 3]))
        assert loss.dtype is clgrad.float32
